//! The harness's own JSON files as the chaos crate reads them: events.jsonl,
//! report.json, alerts.jsonl. The one module that knows their field names,
//! so the oracle, the calibration and the kill windows read typed values and
//! a change of the harness's format is a change here.

use serde::Deserialize;
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
    /// A compaction attempt (`compact/<n>`), after its outcome was applied.
    Compaction {
        call_key: String,
    },
    /// The run ended (an `ending` event).
    Ended,
    /// A stop request suspended the run (harness::stop).
    Stopped,
    Other,
}

impl Event {
    fn view(e: harness::events::Event) -> Event {
        use harness::events::Event as H;
        use harness::model::types::CallRole;
        match e {
            H::ModelCall(m) => Event::ModelCall {
                ok: true,
                judge: m.role == CallRole::Judge,
                call_key: Some(m.call_key),
            },
            H::ModelError { role, call_key, .. } => Event::ModelCall {
                ok: false,
                judge: role == CallRole::Judge,
                call_key: Some(call_key),
            },
            H::Tool(t) => Event::Tool {
                tool: t.tool.as_str().to_string(),
                succeeded: !t.is_error,
            },
            H::TaskStart { task, .. } => Event::TaskStart { task },
            H::TaskDone { task, .. } => Event::TaskDone { task },
            H::TaskParked { task, .. } => Event::TaskParked { task },
            H::Drift { pruned, .. } => Event::Drift {
                pruned_any: !pruned.is_empty(),
            },
            H::ResumeVerify { task, outcome } => Event::ResumeVerify {
                task,
                // The wire name, as the oracle's own effects say it.
                outcome: serde_json::to_value(&outcome)
                    .ok()
                    .and_then(|v| v["outcome"].as_str().map(str::to_string)),
            },
            H::Compaction(c) => Event::Compaction {
                call_key: c.call_key,
            },
            H::Ending(_) => Event::Ended,
            H::Stopped { .. } => Event::Stopped,
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

/// The events written after byte `from` of events.jsonl, read through the
/// harness's own types (`harness::events`). A line that is not one (torn by
/// a kill, or not an event this harness writes) is skipped: the log is for
/// debugging, the checkpoint and the journal are the truth.
pub fn events_from(state: &Path, from: u64) -> Vec<Event> {
    let b = std::fs::read(state.join(harness::events::FILE_NAME)).unwrap_or_default();
    let tail = if (from as usize) <= b.len() {
        &b[from as usize..]
    } else {
        &b[..0]
    };
    String::from_utf8_lossy(tail)
        .split('\n')
        .filter_map(|l| harness::events::parse_events(l).ok())
        .flatten()
        .map(|l| Event::view(l.event))
        .collect()
}

/// report.json as the oracle reads it. Read as the harness's own
/// `harness::report::Report` when it is one; otherwise field by field, every
/// field optional, since the harness under test may be a broken one (or a
/// stand-in) whose report is to be judged, not refused for a missing field,
/// and `not_the_contract` says why it is not a harness report.
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
    /// `compactions[].call_key`, in the report's order.
    pub compactions: Vec<CompactionKey>,
    pub hard_cap_usd: Option<f64>,
    /// `limit_raises`, counted: what each raise says is the ledger's to check.
    pub limit_raises: Vec<serde::de::IgnoredAny>,
    #[serde(skip)]
    pub not_the_contract: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Verified {
    pub id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CompactionKey {
    pub call_key: Option<String>,
    pub outcome: Option<String>,
    pub cost_usd: Option<f64>,
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
pub fn read_report(state: &Path) -> Result<Option<Report>, NotAReport> {
    match std::fs::read(state.join(harness::report::FILE_NAME)) {
        Ok(b) => parse_report(&b).map(Some),
        Err(_) => Ok(None),
    }
}

/// A report.json (or its copy on stderr) that is not JSON of a report's shape.
#[derive(Debug, thiserror::Error)]
#[error("{name}: {0}", name = harness::report::FILE_NAME)]
pub struct NotAReport(serde_json::Error);

/// A report.json's bytes read as a report (the oracle also reads the ones a
/// process was writing when it was killed, from its operation log).
pub fn parse_report(b: &[u8]) -> Result<Report, NotAReport> {
    let name = harness::report::FILE_NAME;
    match serde_json::from_slice::<harness::report::Report>(b) {
        Ok(r) => Ok(Report::from(r)),
        Err(contract) => {
            let mut r: Report = serde_json::from_slice(b).map_err(NotAReport)?;
            r.not_the_contract = Some(format!("{name}: {contract}"));
            Ok(r)
        }
    }
}

impl From<harness::report::Report> for Report {
    fn from(r: harness::report::Report) -> Report {
        Report {
            ending: Some(r.ending.as_str().to_string()),
            exit_code: Some(r.exit_code as i64),
            alert: serde_json::to_value(r.alert)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string)),
            spend_usd: Some(r.spend_usd),
            error_kind: r.error_kind.map(|k| k.as_str().to_string()),
            detail: r.detail,
            run_id: Some(r.run_id),
            goal: Some(r.goal),
            goal_sha256: Some(r.goal_sha256),
            verified: r
                .verified
                .into_iter()
                .map(|t| Verified { id: Some(t.id) })
                .collect(),
            compactions: r
                .compactions
                .into_iter()
                .map(|c| CompactionKey {
                    call_key: Some(c.call_key),
                    outcome: Some(c.outcome.as_str().to_string()),
                    cost_usd: Some(c.cost_usd),
                })
                .collect(),
            hard_cap_usd: Some(r.hard_cap_usd),
            limit_raises: vec![serde::de::IgnoredAny; r.limit_raises.len()],
            not_the_contract: None,
        }
    }
}

/// The report a harness that could not write report.json put on stderr (the
/// line under `harness::report::STDERR_JSON_PREFIX`), if it did.
pub fn report_on_stderr(stderr: &str) -> Option<Result<Report, NotAReport>> {
    let line = harness::report::json_on_stderr(stderr)?;
    Some(parse_report(line.as_bytes()))
}

/// The endings of the alerts delivered to alerts.jsonl, as the harness
/// spells them.
pub fn alerted_endings(state: &Path) -> Vec<String> {
    use harness::report::{AlertLine, ALERTS_FILE_NAME};
    std::fs::read_to_string(state.join(ALERTS_FILE_NAME))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<AlertLine>(l).ok())
        .map(|a| a.ending.as_str().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_read_with_whatever_fields_it_has() {
        let d = tempfile::tempdir().unwrap();
        assert!(matches!(read_report(d.path()), Ok(None)));
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
        assert!(
            r.not_the_contract
                .as_deref()
                .is_some_and(|e| e.contains("missing field")),
            "{r:?}"
        );
        std::fs::write(&p, "{\"ending\": ").unwrap();
        assert!(read_report(d.path()).is_err());
    }

    #[test]
    fn a_harness_report_is_read_as_one() {
        let d = tempfile::tempdir().unwrap();
        let h = harness::report::Report::build(
            &harness::state::RunState::example(2),
            "the goal",
            harness::ending::Ending::UnrecoverableError,
            Some("d".into()),
            Some(harness::ending::ErrorKind::LedgerJournal),
            false,
            10,
        );
        h.write(d.path()).unwrap();
        let r = read_report(d.path()).unwrap().unwrap();
        assert_eq!(r.not_the_contract, None);
        assert_eq!(r.ending.as_deref(), Some("UNRECOVERABLE_ERROR"));
        assert_eq!(r.exit_code, Some(4));
        assert_eq!(r.error_kind(), "ledger_journal");
        assert_eq!(r.goal.as_deref(), Some("the goal"));
        assert_eq!(r.alert.as_deref(), Some("alert"));
        assert_eq!(
            r.verified_ids(),
            h.verified.iter().map(|t| t.id.clone()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn the_report_on_stderr_is_the_line_under_the_prefix() {
        let prefix = harness::report::STDERR_JSON_PREFIX;
        let stderr = format!(
            "harness: the report was NOT written to /s/report.json: No space left on device (os error 28)\n\
            harness: the run ended UNRECOVERABLE_ERROR (exit 4); its report follows as one line of JSON\n\
            {prefix}{{\"ending\":\"UNRECOVERABLE_ERROR\",\"exit_code\":4}}\n"
        );
        let r = report_on_stderr(&stderr).unwrap().unwrap();
        assert_eq!(
            (r.ending.as_deref(), r.exit_code),
            (Some("UNRECOVERABLE_ERROR"), Some(4))
        );
        assert!(report_on_stderr("harness: something else\n").is_none());
        // A JSON line without the prefix is not the report.
        assert!(report_on_stderr("{\"ending\":\"GOAL_MET\",\"exit_code\":0}\n").is_none());
    }

    #[test]
    fn events_are_read_from_an_offset_through_the_harness_types() {
        use harness::events::{Event as H, EventLine, ToolEvent, ToolRef};
        use harness::model::types::CallRole;
        use harness::tools::ToolName;
        use harness::verify::VerifyOutcome;
        let line = |event: H| {
            let mut s = serde_json::to_string(&EventLine {
                unix_ms: 1,
                t_ms: 2,
                step: 3,
                event,
            })
            .unwrap();
            s.push('\n');
            s
        };
        let tool = |is_error: bool| {
            H::Tool(ToolEvent {
                task: "t2".into(),
                tool: ToolRef::Known(ToolName::PostMessage),
                is_error,
                side_effect: true,
                call_key: String::new(),
                input: String::new(),
                output: String::new(),
            })
        };
        let first = line(H::TaskStart {
            task: "t1".into(),
            description: "d".into(),
        });
        let rest = [
            line(H::ModelError {
                role: CallRole::Judge,
                call_key: "judge/1".into(),
                error: "e".into(),
            }),
            line(tool(false)),
            line(H::ResumeVerify {
                task: "t2".into(),
                outcome: VerifyOutcome::Done,
            }),
            // Not an event this harness writes: skipped, as is a torn tail.
            "{\"kind\":\"task_done\",\"data\":{\"task\":\"t2\"}}\n".to_string(),
            line(tool(true)),
            line(H::TaskParked {
                task: "t2".into(),
                reason: "r".into(),
            })[..20]
                .to_string(),
        ]
        .concat();
        let d = tempfile::tempdir().unwrap();
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
        assert_eq!(
            events_from(d.path(), 0).first(),
            Some(&Event::TaskStart { task: "t1".into() })
        );
    }
}
