//! `harness run --replay <dir>`: an embedded replay server started in-process
//! on loopback, and the base URL the harness should use for it. This is what
//! lets a harness run happen on a fresh machine with no network and no key.

use super::{FaultPlan, Recordings, ReplayOptions, ReplayServer};
use model::types::Protocol;
use std::path::Path;

/// Load the cassettes under `dir`, pick the case (the only one, or `case`),
/// check its protocol against the spec's, start the server, and return it with
/// the base URL for (case, run_index).
pub async fn start_for_run(
    dir: &Path,
    case: Option<&str>,
    run_index: u32,
    protocol: Protocol,
    strict: bool,
    latency_scale: f64,
    faults: Option<&str>,
) -> Result<(ReplayServer, String), String> {
    let recordings = Recordings::load_dir(dir).map_err(|e| e.to_string())?;
    let ids: Vec<String> = recordings.case_ids().map(str::to_string).collect();
    let case_id = match case {
        Some(c) if ids.iter().any(|i| i == c) => c.to_string(),
        Some(c) => {
            return Err(format!(
                "--case {c:?}: no cassette for that case under {} (cases: {})",
                dir.display(),
                ids.join(", ")
            ))
        }
        None if ids.len() == 1 => ids[0].clone(),
        None if ids.is_empty() => return Err(format!("{}: no cassettes found", dir.display())),
        None => {
            return Err(format!(
                "{} holds {} cases; name one with --case (cases: {})",
                dir.display(),
                ids.len(),
                ids.join(", ")
            ))
        }
    };
    let rec = recordings
        .case(&case_id)
        .ok_or_else(|| format!("case {case_id:?} vanished"))?;
    if rec.cassette.protocol != protocol {
        return Err(format!(
            "{}: field `protocol`: the cassette speaks {} but the spec's model.protocol is {}",
            rec.source.display(),
            rec.cassette.protocol.as_str(),
            protocol.as_str()
        ));
    }
    if !(latency_scale.is_finite() && latency_scale >= 0.0) {
        return Err(format!(
            "--latency-scale: expected a non-negative number, found {latency_scale}"
        ));
    }
    let faults = match faults {
        Some(s) => FaultPlan::parse(s).map_err(|e| format!("--faults: {e}"))?,
        None => FaultPlan::none(),
    };
    let server = ReplayServer::start(
        recordings,
        ReplayOptions {
            strict,
            latency_scale,
            faults,
            capture: false,
            serve_as_run: None,
        },
    )
    .await
    .map_err(|e| e.to_string())?;
    let mut url = server.base_url_for(&case_id, run_index);
    if protocol == Protocol::Openai {
        url.push_str("/v1"); // OpenAI base URLs carry /v1; the client appends /chat/completions
    }
    Ok((server, url))
}
