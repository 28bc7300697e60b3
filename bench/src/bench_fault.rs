//! Case-run endings caused by the bench's own machinery rather than by the
//! harness under test: the replay had no answer, the replay server was not
//! there, the bench could not prepare the case-run, the live command's cap
//! cut it short. Such a case-run says nothing about the harness or about
//! the configuration it ran with, so a comparison (`bench ab`, `bench knee`)
//! must not count it as a pass or a fail: it is "not comparable". The gate
//! (`bench run`) still fails on one, since a suite that cannot replay its own
//! cases vouches for nothing, and names the fault.
//!
//! A closed enum, decided where the fact is known (the runner, the batch),
//! from typed sources: report.json's `error_kind` is read into
//! [`ReportErrorKind`], never matched out of stdout or a message. A case
//! whose cassette cannot be loaded never becomes a case-run: it is a load
//! error of the suite (`suite::LoadError`), which `bench ab` counts with the
//! not-comparable cases.

use serde::{Deserialize, Serialize};

/// Above this share of a comparison's cases not comparable (`bench ab`'s
/// cases, `bench knee`'s cases over all levels), there is no verdict ("not
/// comparable"), only the list. Why 5%: the cases a replay
/// cannot serve are picked by the change itself (B's traffic differs from
/// the recording exactly where B behaves differently), so they are the
/// cases most likely to differ between the arms, and dropping them biases
/// the rest toward "no difference". Had every one of them flipped, the pass
/// rate over the whole suite would move by up to their share; once that
/// share exceeds the 5-point pass-rate effect of interest (METRICS'
/// pass_rate SESOI), the part the comparison cannot see could hold an effect
/// as large as the one it exists to detect, so no verdict (better, worse or
/// no difference) can stand. At or below it, the verdict on the comparable
/// cases stands and says how many were left out. On the main suite the
/// loop-cap example leaves out 4 of 58 (6.9%): not comparable.
pub const NOT_COMPARABLE_SHARE_MAX: f64 = 0.05;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BenchFault {
    /// The replay server had no recording for a call the harness made (the
    /// report's `error_kind` is `recording_miss`): the run changed the
    /// traffic, and the cassette has no answer for it. `call_key` is the
    /// first call of the case-run the cassette's variant does not hold (None
    /// when every key was recorded and the miss was of another kind: a role,
    /// method or protocol mismatch); `detail` is the harness's report detail.
    RecordingMiss {
        call_key: Option<String>,
        detail: String,
    },
    /// The replay refused a call because it was sent under other recording
    /// conditions than the cassette's (another model, prompt, tool set,
    /// sampling or length limit; model::conditions): the recording never
    /// observed the model's answer to it, so nothing about this case-run
    /// measures model behaviour. `call_key` is the first such call.
    OtherConditions {
        call_key: String,
        difference: harness::model::Difference,
    },
    /// No replay server serves the case (it failed to start).
    ReplayServerUnavailable { detail: String },
    /// The live proxy's command-wide cap refused a call of this case-run, or
    /// the case-run was never started because the cap had been reached.
    LiveCapReached { detail: String },
    /// A live call of this case-run got no model answer: the endpoint
    /// failed (no connection, a timeout, an unreadable body), or the proxy
    /// refused to send it (no price, another model than `--model`). What the
    /// harness did next answered the failure, not the model.
    LiveNotMeasured { detail: String },
    /// The command was interrupted (SIGINT, SIGTERM, SIGHUP) before this
    /// case-run finished: it was never started, or its harness was asked
    /// to stop and suspended. Not a verdict on anything.
    Interrupted { signal: String },
    /// The bench could not prepare or start the case-run: copying the case,
    /// laying the overlay over run.toml, `git init`, the honesty snapshot,
    /// spawning the harness process.
    CaseSetup { detail: String },
}

impl BenchFault {
    /// One line for tables and logs.
    pub fn describe(&self) -> String {
        match self {
            BenchFault::RecordingMiss {
                call_key: Some(k), ..
            } => format!("recording miss: no recording for call_key {k}"),
            BenchFault::RecordingMiss {
                call_key: None,
                detail,
            } => format!("recording miss: {detail}"),
            BenchFault::OtherConditions {
                call_key,
                difference,
            } => format!("replayed under other conditions: {difference} (call {call_key})"),
            BenchFault::ReplayServerUnavailable { detail } => {
                format!("replay server unavailable: {detail}")
            }
            BenchFault::LiveCapReached { detail } => format!("live cap reached: {detail}"),
            BenchFault::LiveNotMeasured { detail } => {
                format!("live call not answered by the model: {detail}")
            }
            BenchFault::CaseSetup { detail } => format!("case-run setup failed: {detail}"),
            BenchFault::Interrupted { signal } => {
                format!("interrupted by {signal} before it finished: not judged")
            }
        }
    }

    /// What would make the case comparable, for the verdict's advice;
    /// `sides` names what is compared ("both arms", "every level").
    pub fn remedy(&self, sides: &str) -> String {
        match self {
            BenchFault::RecordingMiss { .. } => {
                format!("record them live with --endpoint, or use a suite recorded for {sides}")
            }
            BenchFault::OtherConditions { .. } => format!(
                "the recording holds replies for other conditions than these: measure them with hybrid replay (`--hybrid --endpoint URL --protocol P --max-usd X`: the matching turns replay, the rest goes live), or record {sides} live (`bench record --endpoint ...`), so each is measured under its own conditions"
            ),
            BenchFault::ReplayServerUnavailable { .. } | BenchFault::CaseSetup { .. } => {
                "fix the bench's setup (see each case-run's fault) and rerun".into()
            }
            BenchFault::LiveCapReached { .. } => "raise --max-usd / --max-tokens and rerun".into(),
            BenchFault::LiveNotMeasured { .. } => {
                "check the endpoint (and --model, the run specs' prices) and rerun".into()
            }
            BenchFault::Interrupted { .. } => "rerun the command to the end".into(),
        }
    }
}

/// The first call key a case-run sent that its cassette variant cannot
/// answer (no reply for the key, or none of its conditional replies
/// matches what was sent): the call the replay could not answer.
pub fn missing_call_key(
    cassette: &harness::replay::Cassette,
    run: u32,
    sent: &[harness::replay::Captured],
) -> Option<String> {
    let n = cassette.runs.len();
    let variant = (n > 0).then(|| &cassette.runs[run as usize % n]);
    sent.iter()
        .find(|c| variant.is_none_or(|v| v.answer(&c.call_key, c.body.as_bytes()).is_none()))
        .map(|c| c.call_key.clone())
}

/// The bench fault a finished case-run's report shows, if any: a recording
/// miss (the replay ran out of answers) is the bench's; every other
/// `error_kind` is the harness's own error and stays a failure of the
/// harness.
pub fn from_report(
    report: &harness::report::Report,
    cassette: Option<&harness::replay::Cassette>,
    run: u32,
    sent: &[harness::replay::Captured],
) -> Option<BenchFault> {
    match report.error_kind? {
        harness::ending::ErrorKind::RecordingMiss => Some(
            cassette
                .and_then(|c| other_conditions(c, sent))
                .unwrap_or_else(|| BenchFault::RecordingMiss {
                    call_key: cassette.and_then(|c| missing_call_key(c, run, sent)),
                    detail: report.detail.clone().unwrap_or_default(),
                }),
        ),
        _ => None,
    }
}

/// The first call a case-run sent under other conditions than its
/// cassette's, compared by type (the same comparison the replay server
/// refused it by), never read out of the miss message.
pub fn other_conditions(
    cassette: &harness::replay::Cassette,
    sent: &[harness::replay::Captured],
) -> Option<BenchFault> {
    sent.iter().find_map(|c| {
        let role = harness::model::CallRole::of_call_key(&c.call_key)?;
        cassette
            .condition_difference(role, c.body.as_bytes())
            .map(|difference| BenchFault::OtherConditions {
                call_key: c.call_key.clone(),
                difference,
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::ending::ErrorKind;
    use serde_json::json;

    /// A report of an UNRECOVERABLE_ERROR with `kind` and `detail`.
    fn report(kind: Option<ErrorKind>, detail: &str) -> harness::report::Report {
        let s = harness::state::RunState::example(2);
        harness::report::Report::build(
            &s,
            "g",
            harness::ending::Ending::UnrecoverableError,
            Some(detail.into()),
            kind,
            false,
            1,
        )
    }

    #[test]
    fn the_report_error_kind_is_read_typed_and_unknown_kinds_are_the_harnesss() {
        assert!(matches!(
            from_report(
                &report(Some(ErrorKind::RecordingMiss), "no recording"),
                None,
                0,
                &[]
            ),
            Some(BenchFault::RecordingMiss { .. })
        ));
        for other in ErrorKind::ALL
            .iter()
            .filter(|k| **k != ErrorKind::RecordingMiss)
        {
            let r = report(Some(*other), "x");
            assert_eq!(from_report(&r, None, 0, &[]), None, "{other}");
        }
        assert_eq!(from_report(&report(None, "x"), None, 0, &[]), None);
    }

    fn cassette(keys_per_variant: &[&[&str]]) -> harness::replay::Cassette {
        let runs: Vec<serde_json::Value> = keys_per_variant
            .iter()
            .enumerate()
            .map(|(i, keys)| {
                json!({"run": i, "interactions": keys.iter().map(|k| json!({
                    "role": "execute", "call_key": k,
                    "request": {"method": "POST", "path": "/v1/messages"},
                    "response": {"status": 200, "body": {}}
                })).collect::<Vec<_>>()})
            })
            .collect();
        serde_json::from_value(json!({
            "format": harness::replay::cassette::FORMAT,
            "case": "c", "protocol": "anthropic", "model": "m",
            "made": {"how": "scripted", "when": "2026-01-01", "by": "test"},
            "runs": runs
        }))
        .unwrap()
    }

    fn sent(keys: &[&str]) -> Vec<harness::replay::Captured> {
        keys.iter()
            .map(|k| harness::replay::Captured {
                call_key: k.to_string(),
                attempt: 0,
                body: String::new(),
            })
            .collect()
    }

    #[test]
    fn the_missing_call_key_is_the_first_sent_key_the_variant_lacks() {
        let c = cassette(&[
            &["plan/0", "execute/t1/a0/0"],
            &["plan/0", "execute/t1/a1/0"],
        ]);
        let s = sent(&["plan/0", "execute/t1/a0/0", "execute/t1/a1/0"]);
        assert_eq!(
            missing_call_key(&c, 0, &s).as_deref(),
            Some("execute/t1/a1/0")
        );
        // Run 1 replays variant 1, which holds a1 but not a0.
        assert_eq!(
            missing_call_key(&c, 1, &s).as_deref(),
            Some("execute/t1/a0/0")
        );
        // Run 2 wraps to variant 0.
        assert_eq!(
            missing_call_key(&c, 2, &s).as_deref(),
            Some("execute/t1/a1/0")
        );
        assert_eq!(missing_call_key(&c, 0, &sent(&["plan/0"])), None);
        // A key whose only reply is conditional is missing for a request
        // that lacks its text, and answered for one that has it.
        let mut cond = cassette(&[&["plan/0", "execute/t1/a0/0"]]);
        cond.runs[0].interactions[1].when_request_contains = Some("the lesson".into());
        let mut s2 = sent(&["plan/0", "execute/t1/a0/0"]);
        assert_eq!(
            missing_call_key(&cond, 0, &s2).as_deref(),
            Some("execute/t1/a0/0")
        );
        s2[1].body = json!({"messages": [{"content": "with the lesson"}]}).to_string();
        assert_eq!(missing_call_key(&cond, 0, &s2), None);
        let r = report(Some(ErrorKind::RecordingMiss), "d");
        assert_eq!(
            from_report(&r, Some(&c), 0, &s),
            Some(BenchFault::RecordingMiss {
                call_key: Some("execute/t1/a1/0".into()),
                detail: "d".into()
            })
        );
    }

    #[test]
    fn faults_serialize_with_their_kind() {
        let f = BenchFault::RecordingMiss {
            call_key: Some("execute/t1/a1/0".into()),
            detail: "x".into(),
        };
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["kind"], "recording_miss");
        assert_eq!(v["call_key"], "execute/t1/a1/0");
        let back: BenchFault = serde_json::from_value(v).unwrap();
        assert_eq!(back, f);
        assert!(f.describe().contains("execute/t1/a1/0"));
        assert!(f
            .remedy("both arms")
            .ends_with("a suite recorded for both arms"));
    }
}
