//! The harness's own JSON files as the chaos crate reads them: events.jsonl,
//! report.json, alerts.jsonl. The one module that knows their field names,
//! so the oracle, the calibration and the kill windows read typed values and
//! a change of the harness's format is a change here.

use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

/// The events the chaos crate reads from events.jsonl; every other kind is
/// `Other`. A debugging log, not a source of truth: the oracle uses it only
/// to learn what the harness said it did (a classification, a park) and to
/// count phases in a clean run.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// `model_call` (`ok`) or `model_error`.
    ModelCall {
        ok: bool,
        judge: bool,
        call_key: Option<String>,
    },
    Tool {
        tool: String,
        /// Only an explicit `false`: a line without the field is no success.
        succeeded: bool,
    },
    TaskStart {
        task: String,
    },
    TaskDone {
        task: String,
    },
    TaskParked {
        task: String,
    },
    Drift {
        pruned_any: bool,
    },
    ResumeVerify {
        task: String,
        /// done / not_started / partially_applied, as the harness wrote it.
        outcome: Option<String>,
    },
    Other,
}

impl Event {
    fn from_value(e: &Value) -> Event {
        let d = &e["data"];
        let s = |v: &Value| v.as_str().unwrap_or("").to_string();
        match e["kind"].as_str().unwrap_or("") {
            kind @ ("model_call" | "model_error") => Event::ModelCall {
                ok: kind == "model_call",
                judge: d["role"] == "judge",
                call_key: d["call_key"].as_str().map(str::to_string),
            },
            "tool" => Event::Tool {
                tool: s(&d["tool"]),
                succeeded: d["is_error"] == false,
            },
            "task_start" => Event::TaskStart {
                task: s(&d["task"]),
            },
            "task_done" => Event::TaskDone {
                task: s(&d["task"]),
            },
            "task_parked" => Event::TaskParked {
                task: s(&d["task"]),
            },
            "drift" => Event::Drift {
                pruned_any: d["pruned"].as_array().is_some_and(|a| !a.is_empty()),
            },
            "resume_verify" => Event::ResumeVerify {
                task: s(&d["task"]),
                outcome: d["outcome"]["outcome"].as_str().map(str::to_string),
            },
            _ => Event::Other,
        }
    }
}

/// The length of events.jsonl now: where the next process's lines start.
pub fn events_len(state: &Path) -> u64 {
    std::fs::metadata(state.join(harness::events::FILE_NAME))
        .map(|m| m.len())
        .unwrap_or(0)
}

/// The events written after byte `from` of events.jsonl (lines that do not
/// parse, such as a line torn by a kill, are skipped).
pub fn events_from(state: &Path, from: u64) -> Vec<Event> {
    let b = std::fs::read(state.join(harness::events::FILE_NAME)).unwrap_or_default();
    let tail = if (from as usize) <= b.len() {
        &b[from as usize..]
    } else {
        &b[..0]
    };
    tail.split(|&c| c == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .map(|v| Event::from_value(&v))
        .collect()
}

/// report.json as the oracle reads it: every field optional, since the
/// harness under test may be a broken one (or a stand-in) and its report is
/// to be judged, not refused for a missing field.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Report {
    pub ending: Option<String>,
    pub exit_code: Option<i64>,
    pub alert: Option<String>,
    pub spend_usd: Option<f64>,
    pub error_kind: Option<String>,
    pub detail: Option<String>,
    pub run_id: Option<String>,
    pub goal: Option<String>,
    pub goal_sha256: Option<String>,
    pub verified: Vec<Verified>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Verified {
    pub id: Option<String>,
}

impl Report {
    pub fn spend(&self) -> f64 {
        self.spend_usd.unwrap_or(0.0)
    }
    pub fn error_kind(&self) -> &str {
        self.error_kind.as_deref().unwrap_or("")
    }
    pub fn verified_ids(&self) -> Vec<String> {
        self.verified.iter().filter_map(|v| v.id.clone()).collect()
    }
}

/// A report field as report.json spells it (a quoted string, or null): how
/// the oracle's findings quote the report.
pub fn quoted<T: serde::Serialize>(v: &Option<T>) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

/// report.json in `state`: `Ok(None)` when there is none, `Err` when the
/// file is there but is not a report.
pub fn read_report(state: &Path) -> Result<Option<Report>, String> {
    match std::fs::read(state.join(harness::report::FILE_NAME)) {
        Ok(b) => parse_report(&b).map(Some),
        Err(_) => Ok(None),
    }
}

fn parse_report(b: &[u8]) -> Result<Report, String> {
    serde_json::from_slice(b).map_err(|e| format!("{}: {e}", harness::report::FILE_NAME))
}

/// The report a harness that could not write report.json put on stderr (one
/// line of JSON after its notice), if it says so.
pub fn report_on_stderr(stderr: &str) -> Option<Result<Report, String>> {
    let mut lines = stderr.lines();
    lines.find(|l| l.contains("its report follows as one line of JSON"))?;
    let line = lines.next()?;
    Some(parse_report(line.as_bytes()))
}

/// The endings of the alerts delivered to alerts.jsonl, as the harness
/// spells them.
pub fn alerted_endings(state: &Path) -> Vec<String> {
    std::fs::read_to_string(state.join("alerts.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|a| a["ending"].as_str().map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_read_with_whatever_fields_it_has() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(read_report(d.path()), Ok(None));
        let p = d.path().join(harness::report::FILE_NAME);
        std::fs::write(
            &p,
            r#"{"ending": "GOAL_MET", "exit_code": 0, "verified": [{"id": "t1"}]}"#,
        )
        .unwrap();
        let r = read_report(d.path()).unwrap().unwrap();
        assert_eq!(r.ending.as_deref(), Some("GOAL_MET"));
        assert_eq!(r.verified_ids(), vec!["t1".to_string()]);
        assert_eq!((r.spend(), r.error_kind()), (0.0, ""));
        assert_eq!(quoted(&r.ending), "\"GOAL_MET\"");
        assert_eq!(quoted(&r.detail), "null");
        std::fs::write(&p, "{\"ending\": ").unwrap();
        assert!(read_report(d.path()).is_err());
    }

    #[test]
    fn the_report_on_stderr_is_the_line_after_the_notice() {
        let stderr = "harness: the report was NOT written to /s/report.json: No space left on device (os error 28)\n\
            harness: the run ended UNRECOVERABLE_ERROR (exit 4); its report follows as one line of JSON\n\
            {\"ending\":\"UNRECOVERABLE_ERROR\",\"exit_code\":4}\n";
        let r = report_on_stderr(stderr).unwrap().unwrap();
        assert_eq!(
            (r.ending.as_deref(), r.exit_code),
            (Some("UNRECOVERABLE_ERROR"), Some(4))
        );
        assert!(report_on_stderr("harness: something else\n").is_none());
    }

    #[test]
    fn events_are_read_from_an_offset_and_typed() {
        let d = tempfile::tempdir().unwrap();
        let first = "{\"kind\":\"task_start\",\"data\":{\"task\":\"t1\"}}\n";
        let rest = concat!(
            "{\"kind\":\"model_error\",\"data\":{\"role\":\"judge\",\"call_key\":\"judge/1\"}}\n",
            "{\"kind\":\"tool\",\"data\":{\"tool\":\"post_message\",\"is_error\":false}}\n",
            "{\"kind\":\"resume_verify\",\"data\":{\"task\":\"t2\",\"outcome\":{\"outcome\":\"done\"}}}\n",
            "{\"kind\":\"tool\",\"data\":{\"tool\":\"post_message\"}}\n",
            "{\"kind\":\"task_pa",
        );
        std::fs::write(
            d.path().join(harness::events::FILE_NAME),
            format!("{first}{rest}"),
        )
        .unwrap();
        assert_eq!(events_len(d.path()), (first.len() + rest.len()) as u64);
        let ev = events_from(d.path(), first.len() as u64);
        assert_eq!(
            ev,
            vec![
                Event::ModelCall {
                    ok: false,
                    judge: true,
                    call_key: Some("judge/1".into())
                },
                Event::Tool {
                    tool: "post_message".into(),
                    succeeded: true
                },
                Event::ResumeVerify {
                    task: "t2".into(),
                    outcome: Some("done".into())
                },
                Event::Tool {
                    tool: "post_message".into(),
                    succeeded: false
                },
            ]
        );
    }
}
