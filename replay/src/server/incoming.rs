//! What a request claims to be: case and run from the URL, call key, role
//! and attempt from the harness's wire headers. Everything an answer
//! depends on is here, which is what lets one server answer many cases and
//! runs at once in any order; a request that cannot say it is a miss, with
//! a message naming what was missing.

use wiremock::Request;

use super::{HEADER_ATTEMPT, HEADER_CALL_KEY, HEADER_CALL_ROLE};
use model::types::CallRole;

/// What the request claims to be.
pub(super) struct Incoming<'a> {
    pub(super) case: &'a str,
    pub(super) run: u32,
    pub(super) endpoint: &'a str,
    pub(super) call_key: &'a str,
    pub(super) role: CallRole,
    pub(super) attempt: u32,
}

fn parse_role(s: &str) -> Option<CallRole> {
    match s {
        "plan" => Some(CallRole::Plan),
        "execute" => Some(CallRole::Execute),
        "judge" => Some(CallRole::Judge),
        "replan" => Some(CallRole::Replan),
        "compact" => Some(CallRole::Compact),
        "lesson" => Some(CallRole::Lesson),
        _ => None,
    }
}

fn header<'r>(req: &'r Request, name: &str) -> Option<&'r str> {
    req.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

pub(super) fn parse_incoming(req: &Request) -> Result<Incoming<'_>, String> {
    let path = req.url.path();
    let Some(rest) = path.strip_prefix("/replay/") else {
        return Err(format!(
            "\"{path}\" is not a replay URL; expected /replay/<case>/<run>/<endpoint path>"
        ));
    };
    let mut parts = rest.splitn(3, '/');
    let case = parts.next().unwrap_or("");
    let run_s = parts.next().unwrap_or("");
    let endpoint_rest = parts.next().unwrap_or("");
    if case.is_empty() || run_s.is_empty() || endpoint_rest.is_empty() {
        return Err(format!(
            "\"{path}\" is not a replay URL; expected /replay/<case>/<run>/<endpoint path>"
        ));
    }
    let run = run_s.parse::<u32>().map_err(|_| {
        format!("case \"{case}\": run index \"{run_s}\" in the URL is not a non-negative integer")
    })?;
    // `endpoint` keeps its leading slash: it is the tail of `path` from the '/' before endpoint_rest.
    let endpoint = &path[path.len() - endpoint_rest.len() - 1..];
    let call_key = header(req, HEADER_CALL_KEY)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            format!("case \"{case}\" run {run}: request has no {HEADER_CALL_KEY} header")
        })?;
    let role_s = header(req, HEADER_CALL_ROLE).ok_or_else(|| {
        format!("case \"{case}\" run {run} call_key \"{call_key}\": request has no {HEADER_CALL_ROLE} header")
    })?;
    let role = parse_role(role_s).ok_or_else(|| {
        format!("case \"{case}\" run {run} call_key \"{call_key}\": {HEADER_CALL_ROLE} \"{role_s}\" is not plan|execute|judge|replan")
    })?;
    let attempt = match header(req, HEADER_ATTEMPT) {
        None => 0,
        Some(s) => s.parse::<u32>().map_err(|_| {
            format!("case \"{case}\" run {run} call_key \"{call_key}\": {HEADER_ATTEMPT} \"{s}\" is not a non-negative integer")
        })?,
    };
    Ok(Incoming {
        case,
        run,
        endpoint,
        call_key,
        role,
        attempt,
    })
}
