//! What a cassette says a run did, read back from its traffic with the
//! harness's own parsers (`model::parse_response` for a reply,
//! `agent::parse_plan` for a plan), so a reply means here what it meant to the
//! harness that received it.
//!
//! Per run variant:
//! - tasks planned: the ids of every plan/replan reply that parses as a plan
//!   (as the model proposed them, before admission: admission's verdicts are
//!   not in the traffic);
//! - tasks started: the task part of every execute call key
//!   (`execute/<task>/a<n>/<turn>`), in first-seen order;
//! - steps: one per execute reply, in the cassette's order (the recorder
//!   writes interactions in the order of their first request). A step is the
//!   reply's first tool call as `tool(canonical args)`: the harness runs only
//!   the first (`run_loop`: `reply.tool_calls.first()`) and ignores the rest,
//!   so the trajectory is what ran. A reply with no tool call is the step
//!   `(no tool call)`, and a reply the harness could not read is
//!   `(unreadable reply, status N)`: both are behaviour, and a model that
//!   stops calling tools must show in the sequence;
//! - the outcome (ending, exit code, predicate, calls, tokens) from
//!   `runs[i].outcome`, None when the cassette has none (scripted ones).
//!
//! Not in the traffic, so never invented: which tasks were verified or
//! parked (the harness's verify runs outside the model traffic) and the
//! spend in dollars (cassettes carry no price table); `NOT_RECORDED` says so.

use harness::model::{CallRole, Protocol};
use harness::replay::{Cassette, CassetteError, RunRecording};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Cassette files one set may hold (one per case; the live suite has 13).
pub const CASSETTES_PER_SET_MAX: usize = 10_000;
/// Steps of one variant that are compared; beyond it the trajectory is cut
/// (and says so), so the O(n·m) LCS stays at most 4 million cells.
pub const STEPS_COMPARED_MAX: usize = 2_000;
/// Characters of a tool call's canonical arguments kept in a step (the rest
/// is replaced by its SHA-256): a 1 MB write_file content does not make every
/// comparison and report line 1 MB.
pub const STEP_ARGS_CHARS_MAX: usize = 4_000;

/// Fields the comparison would like to show that no cassette holds.
pub const NOT_RECORDED: &[(&str, &str)] = &[
    (
        "verified_ids",
        "which tasks the harness verified is decided by its verify, outside the model traffic; cassettes carry only the traffic and the ending",
    ),
    (
        "parked_ids",
        "which tasks were parked is decided by the harness's verify, outside the model traffic",
    ),
    (
        "spend_usd",
        "cassettes carry token usage but no price table; tokens (runs[i].outcome.tokens) stand in for spend",
    ),
];

/// The token for a reply with no tool call.
pub const NO_TOOL_CALL: &str = "(no tool call)";

/// One execute reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub call_key: String,
    /// `tool(canonical args)`, `(no tool call)` or `(unreadable reply, ...)`:
    /// what the similarity compares.
    pub token: String,
}

/// How one run variant ended, as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub ending: String,
    pub exit_code: i32,
    pub predicate_met: bool,
    pub calls: u64,
    pub tokens: u64,
}

/// What one run variant did.
#[derive(Debug, Clone, PartialEq)]
pub struct Trajectory {
    pub run: u32,
    pub tasks_planned: Vec<String>,
    pub tasks_started: Vec<String>,
    pub steps: Vec<Step>,
    /// Steps past `STEPS_COMPARED_MAX` that were left out.
    pub steps_cut: usize,
    /// Plan/replan replies that did not parse as a plan, with the reason.
    pub malformed_plans: Vec<String>,
    pub outcome: Option<Outcome>,
    /// Tokens summed over the replies' usage (when there is no outcome).
    pub reply_tokens: u64,
    pub interactions: usize,
}

/// One cassette, as trajectories.
#[derive(Debug, Clone)]
pub struct CaseTrajectories {
    pub file: PathBuf,
    pub model: String,
    pub temperature: Option<f64>,
    pub seed: Option<u64>,
    pub runs: Vec<Trajectory>,
}

/// A set: every `*.json` directly in a directory, by case id.
#[derive(Debug, Clone)]
pub struct Set {
    pub dir: PathBuf,
    pub cases: BTreeMap<String, CaseTrajectories>,
}

/// A set that cannot be read: the file (or directory) and what is wrong.
#[derive(Debug, Clone)]
pub struct SetError(pub String);

impl std::fmt::Display for SetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<CassetteError> for SetError {
    fn from(e: CassetteError) -> SetError {
        SetError(e.to_string())
    }
}

/// Canonical arguments: keys sorted, no insignificant whitespace (the
/// replay crate's canonical JSON, the one the body hash uses). Arguments the
/// model sent that are not a JSON object arrive from the protocol adapter as
/// `{"__unparsed": raw}`: they compare as their raw string.
pub fn canonical_args(input: &Value) -> String {
    if let Some(Value::String(raw)) = input.get("__unparsed") {
        if input.as_object().is_some_and(|o| o.len() == 1) {
            return raw.clone();
        }
    }
    harness::replay::canonical_json(input)
}

/// Arguments longer than `STEP_ARGS_CHARS_MAX` keep their head and the
/// SHA-256 of the whole, so two calls still compare equal only when their
/// arguments are.
fn bounded(args: String) -> String {
    if args.chars().count() <= STEP_ARGS_CHARS_MAX {
        return args;
    }
    let sha = harness::replay::body_sha256(&Value::String(args.clone()));
    format!(
        "{} sha256:{sha}",
        harness::text::clip_chars(&args, STEP_ARGS_CHARS_MAX)
    )
}

/// The step token of one execute reply.
pub fn step_token(protocol: Protocol, status: u16, body: &[u8]) -> String {
    if !(200..300).contains(&status) {
        return format!("(unreadable reply, status {status})");
    }
    match harness::model::parse_response(protocol, body) {
        Ok(r) => match r.tool_calls.first() {
            Some(c) => format!("{}({})", c.name, bounded(canonical_args(&c.input))),
            None => NO_TOOL_CALL.to_string(),
        },
        Err(_) => format!("(unreadable reply, status {status})"),
    }
}

/// The task id of an execute call key `execute/<task>/a<n>/<turn>` (a task
/// id may itself hold `/`, so it is cut from the right).
pub fn task_of(call_key: &str) -> Option<&str> {
    let rest = call_key.strip_prefix("execute/")?;
    let mut parts = rest.rsplitn(3, '/');
    let _turn = parts.next()?;
    let attempt = parts.next()?;
    let task = parts.next()?;
    attempt.starts_with('a').then_some(task)
}

/// One run variant's trajectory.
pub fn trajectory(protocol: Protocol, run: &RunRecording) -> Trajectory {
    let mut t = Trajectory {
        run: run.run,
        tasks_planned: vec![],
        tasks_started: vec![],
        steps: vec![],
        steps_cut: 0,
        malformed_plans: vec![],
        outcome: run.outcome.as_ref().map(|o| Outcome {
            ending: o.ending.clone(),
            exit_code: o.exit_code,
            predicate_met: o.predicate_met,
            calls: o.calls,
            tokens: o.tokens,
        }),
        reply_tokens: 0,
        interactions: run
            .interactions
            .iter()
            .filter(|i| i.when_request_contains.is_none())
            .count(),
    };
    for it in &run.interactions {
        // A conditional reply is a branch a scripted model takes only for
        // some prompts; the trajectory is the one path a request that meets
        // no condition gets (recorded live traffic has no conditions).
        if it.when_request_contains.is_some() {
            continue;
        }
        let body = it.response.body_bytes();
        let parsed = harness::model::parse_response(protocol, &body);
        if let Ok(r) = &parsed {
            t.reply_tokens = t.reply_tokens.saturating_add(r.usage.total());
        }
        match it.role {
            CallRole::Plan | CallRole::Replan => {
                let plan = parsed
                    .map_err(|e| format!("reply not readable: {e}"))
                    .and_then(|r| harness::agent::parse_plan(&r.text));
                match plan {
                    Ok(tasks) => t.tasks_planned.extend(tasks.into_iter().map(|x| x.id)),
                    Err(e) => t.malformed_plans.push(format!(
                        "{}: {}",
                        it.call_key,
                        harness::text::clip_chars(&e, 200)
                    )),
                }
            }
            CallRole::Execute => {
                if let Some(task) = task_of(&it.call_key) {
                    if !t.tasks_started.iter().any(|x| x == task) {
                        t.tasks_started.push(task.to_string());
                    }
                }
                if t.steps.len() >= STEPS_COMPARED_MAX {
                    t.steps_cut += 1;
                    continue;
                }
                t.steps.push(Step {
                    call_key: it.call_key.clone(),
                    token: step_token(protocol, it.response.status, &body),
                });
            }
            CallRole::Judge | CallRole::Compact | CallRole::Lesson => {}
        }
    }
    t
}

impl CaseTrajectories {
    pub fn from_cassette(c: &Cassette, file: &Path) -> CaseTrajectories {
        CaseTrajectories {
            file: file.to_path_buf(),
            model: c.model.clone(),
            temperature: c.made.temperature,
            seed: c.made.seed,
            runs: c.runs.iter().map(|r| trajectory(c.protocol, r)).collect(),
        }
    }
}

/// Read a set: every `*.json` file directly in `dir` (hidden files and other
/// files, like a README, skipped), each loaded and checked by
/// `Cassette::load` (which refuses a file over the format's
/// `MAX_CASSETTE_BYTES`, 16 MiB, before reading it, and whose errors name the
/// file and the field). Two files for one case id are refused.
pub fn load_set(dir: &Path) -> Result<Set, SetError> {
    let shown = dir.display();
    let meta = std::fs::metadata(dir).map_err(|e| SetError(format!("{shown}: {e}")))?;
    if !meta.is_dir() {
        return Err(SetError(format!("{shown}: not a directory")));
    }
    let mut files = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| SetError(format!("{shown}: {e}")))?;
    for e in entries {
        let e = e.map_err(|e| SetError(format!("{shown}: {e}")))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !name.ends_with(".json") {
            continue;
        }
        if e.file_type().map(|t| t.is_file()).unwrap_or(false) {
            files.push(e.path());
        }
        if files.len() > CASSETTES_PER_SET_MAX {
            return Err(SetError(format!(
                "{shown}: more than {CASSETTES_PER_SET_MAX} cassette files"
            )));
        }
    }
    if files.is_empty() {
        return Err(SetError(format!(
            "{shown}: no *.json cassettes in this directory"
        )));
    }
    files.sort();
    let mut cases = BTreeMap::new();
    for f in files {
        let c = Cassette::load(&f)?;
        let t = CaseTrajectories::from_cassette(&c, &f);
        if let Some(prev) = cases.get(&c.case) {
            let prev: &CaseTrajectories = prev;
            return Err(SetError(format!(
                "{}: field `case`: case id {:?} is already in {}; one cassette per case",
                f.display(),
                c.case,
                prev.file.display()
            )));
        }
        cases.insert(c.case.clone(), t);
    }
    Ok(Set {
        dir: dir.to_path_buf(),
        cases,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn openai_reply(args: &str) -> Vec<u8> {
        json!({
            "id": "x", "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "c0", "type": "function",
                    "function": {"name": "write_file", "arguments": args}}]}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2}
        })
        .to_string()
        .into_bytes()
    }

    #[test]
    fn key_order_and_whitespace_do_not_change_the_step() {
        let a = step_token(
            Protocol::Openai,
            200,
            &openai_reply(r#"{"path":"a.txt","content":"x y"}"#),
        );
        let b = step_token(
            Protocol::Openai,
            200,
            &openai_reply("{ \"content\" : \"x y\",\n  \"path\": \"a.txt\" }"),
        );
        assert_eq!(a, b);
        assert_eq!(a, r#"write_file({"content":"x y","path":"a.txt"})"#);
        // Whitespace inside a value is the value: it changes the call.
        let c = step_token(
            Protocol::Openai,
            200,
            &openai_reply(r#"{"path":"a.txt","content":"x  y"}"#),
        );
        assert_ne!(a, c);
        // Nested objects are sorted too.
        assert_eq!(
            canonical_args(&json!({"b": {"y": 1, "x": [2, {"d": 0, "c": 1}]}, "a": 0})),
            r#"{"a":0,"b":{"x":[2,{"c":1,"d":0}],"y":1}}"#
        );
    }

    #[test]
    fn unparseable_arguments_compare_as_their_raw_string() {
        let t = step_token(Protocol::Openai, 200, &openai_reply("{path: a.txt"));
        assert_eq!(t, "write_file({path: a.txt)");
        let u = step_token(Protocol::Openai, 200, &openai_reply("{path:  a.txt"));
        assert_ne!(t, u);
    }

    #[test]
    fn text_replies_and_errors_are_steps_too() {
        let text = json!({"id": "x", "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "done!"}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1}})
        .to_string();
        assert_eq!(
            step_token(Protocol::Openai, 200, text.as_bytes()),
            NO_TOOL_CALL
        );
        assert_eq!(
            step_token(Protocol::Openai, 504, b"timeout"),
            "(unreadable reply, status 504)"
        );
        assert_eq!(
            step_token(Protocol::Openai, 200, b"not json"),
            "(unreadable reply, status 200)"
        );
    }

    #[test]
    fn the_task_of_an_execute_key() {
        assert_eq!(task_of("execute/t1/a0/2"), Some("t1"));
        assert_eq!(task_of("execute/a/b/a1/0"), Some("a/b"));
        assert_eq!(task_of("plan/0"), None);
        assert_eq!(task_of("execute/t1"), None);
    }
}
