//! Scoring one case-run against its expectations. The expected ending is a
//! hard gate (a wrong ending scores 0); every other expectation is one check,
//! and the score is the share of checks that pass (1.0 when there are none).
//! pass = ending right and score >= PASS_SCORE and latency <= cap and cost <= cap.

use crate::suite::{Case, Expect};
use harness::replay::Captured;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

pub const PASS_SCORE: f64 = 0.8;
pub const NOTICE_MARKER: &str = "[harness budget notice]";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

/// What a case-run left behind, as the scorer reads it.
pub struct Artifacts<'a> {
    pub report: &'a Value,
    pub outbox: &'a [Value],
    pub workspace: &'a Path,
    pub requests: &'a [Captured],
    pub commits: Option<usize>,
}

fn set(v: &Value, field: &str) -> BTreeSet<String> {
    v[field]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x["id"].as_str().or(x.as_str()).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn set_check(name: &str, want: &[String], got: BTreeSet<String>) -> Check {
    let want: BTreeSet<String> = want.iter().cloned().collect();
    Check {
        name: name.into(),
        passed: want == got,
        detail: format!("expected {want:?}, got {got:?}"),
    }
}

/// Where the notice sits in one request body: Some(true) when it is the last
/// content of the last message and not in the system prompt, Some(false) when
/// it is elsewhere, None when the request carries no notice.
pub fn notice_position(body: &str) -> Option<bool> {
    if !body.contains(NOTICE_MARKER) {
        return None;
    }
    let v: Value = serde_json::from_str(body).ok()?;
    let system_has = v["system"].to_string().contains(NOTICE_MARKER)
        || v["messages"]
            .as_array()
            .and_then(|m| m.first())
            .is_some_and(|m| {
                m["role"] == "system" && m["content"].to_string().contains(NOTICE_MARKER)
            });
    let last = v["messages"].as_array().and_then(|m| m.last());
    let at_end = match last.map(|m| &m["content"]) {
        Some(Value::String(s)) => s.contains(NOTICE_MARKER),
        Some(Value::Array(blocks)) => blocks.last().is_some_and(|b| {
            b["text"]
                .as_str()
                .is_some_and(|t| t.contains(NOTICE_MARKER))
        }),
        _ => false,
    };
    Some(at_end && !system_has)
}

pub fn checks(e: &Expect, a: &Artifacts) -> Vec<Check> {
    let r = a.report;
    let mut out = vec![];
    if let Some(w) = e.predicate_met {
        out.push(Check {
            name: "predicate_met".into(),
            passed: r["predicate_met"] == w,
            detail: format!("expected {w}, got {}", r["predicate_met"]),
        });
    }
    if let Some(w) = &e.verified {
        out.push(set_check("verified", w, set(r, "verified")));
    }
    if let Some(w) = e.verified_count {
        let n = r["verified"].as_array().map_or(0, |a| a.len());
        out.push(Check {
            name: "verified_count".into(),
            passed: n == w,
            detail: format!("expected {w}, got {n}"),
        });
    }
    if let Some(w) = &e.parked {
        out.push(set_check("parked", w, set(r, "parked")));
    }
    if let Some(m) = &e.parked_reason_contains {
        for (id, needle) in m {
            let reason = r["parked"]
                .as_array()
                .and_then(|a| a.iter().find(|p| p["id"] == id.as_str()))
                .and_then(|p| p["reason"].as_str())
                .unwrap_or("");
            out.push(Check {
                name: format!("parked_reason_contains.{id}"),
                passed: reason.contains(needle.as_str()),
                detail: format!("reason {reason:?} should contain {needle:?}"),
            });
        }
    }
    if let Some(w) = &e.pruned {
        out.push(set_check("pruned", w, set(r, "pruned")));
    }
    if let Some(w) = &e.queue_left {
        out.push(set_check("queue_left", w, set(r, "queue_left")));
    }
    if let Some(w) = e.outbox_total {
        out.push(Check {
            name: "outbox_total".into(),
            passed: a.outbox.len() == w,
            detail: format!("expected {w} posts, got {}", a.outbox.len()),
        });
    }
    if let Some(m) = &e.outbox_key_count {
        for (k, w) in m {
            let n = a.outbox.iter().filter(|x| x["key"] == k.as_str()).count();
            out.push(Check {
                name: format!("outbox_key_count.{k}"),
                passed: n == *w,
                detail: format!("expected {w} posts with key {k:?}, got {n}"),
            });
        }
    }
    if let Some(v) = &e.outbox_contains {
        for s in v {
            let hit = a
                .outbox
                .iter()
                .any(|x| x["text"].as_str().is_some_and(|t| t.contains(s.as_str())));
            out.push(Check {
                name: format!("outbox_contains.{s}"),
                passed: hit,
                detail: format!("some post should contain {s:?}"),
            });
        }
    }
    let spend = r["spend_usd"].as_f64().unwrap_or(f64::NAN);
    if let Some(m) = e.spend_usd_min {
        out.push(Check {
            name: "spend_usd_min".into(),
            passed: spend >= m,
            detail: format!("spend ${spend:.6} should be >= ${m}"),
        });
    }
    if let Some(m) = e.spend_usd_max {
        out.push(Check {
            name: "spend_usd_max".into(),
            passed: spend <= m,
            detail: format!("spend ${spend:.6} should be <= ${m}"),
        });
    }
    if let Some(m) = &e.report {
        for (k, want) in m {
            let want_json = serde_json::to_value(want).unwrap_or(Value::Null);
            let got = &r[k.as_str()];
            let passed = match (&want_json, got) {
                (Value::Number(a), Value::Number(b)) => {
                    (a.as_f64().unwrap_or(f64::NAN) - b.as_f64().unwrap_or(f64::NAN)).abs() < 1e-9
                }
                _ => &want_json == got,
            };
            out.push(Check {
                name: format!("report.{k}"),
                passed,
                detail: format!("expected {want_json}, got {got}"),
            });
        }
    }
    if let Some(s) = &e.detail_contains {
        let d = r["detail"].as_str().unwrap_or("");
        out.push(Check {
            name: "detail_contains".into(),
            passed: d.contains(s.as_str()),
            detail: format!("detail {d:?} should contain {s:?}"),
        });
    }
    if let Some(w) = &e.drift_bands {
        let got: Vec<String> = r["drift_history"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|d| d["band"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        out.push(Check {
            name: "drift_bands".into(),
            passed: &got == w,
            detail: format!("expected {w:?}, got {got:?}"),
        });
    }
    if let Some(m) = &e.files_contain {
        for (p, needle) in m {
            let body = std::fs::read_to_string(a.workspace.join(p)).unwrap_or_default();
            out.push(Check {
                name: format!("files_contain.{p}"),
                passed: body.contains(needle.as_str()),
                detail: format!("{p} should contain {needle:?}"),
            });
        }
    }
    if let Some(v) = &e.files_absent {
        for p in v {
            let exists = a.workspace.join(p).exists();
            out.push(Check {
                name: format!("files_absent.{p}"),
                passed: !exists,
                detail: format!("{p} should not exist"),
            });
        }
    }
    if let Some(w) = e.notice_at_end {
        let positions: Vec<bool> = a
            .requests
            .iter()
            .filter_map(|c| notice_position(&c.body))
            .collect();
        let passed = if w {
            !positions.is_empty() && positions.iter().all(|p| *p)
        } else {
            positions.is_empty()
        };
        out.push(Check {
            name: "notice_at_end".into(),
            passed,
            detail: format!(
                "{} request(s) carried the notice; at the end of the messages in {}",
                positions.len(),
                positions.iter().filter(|p| **p).count()
            ),
        });
    }
    if let Some(m) = e.min_budget_notices {
        let n = r["budget_notices"].as_u64().unwrap_or(0);
        out.push(Check {
            name: "min_budget_notices".into(),
            passed: n >= m,
            detail: format!("expected >= {m}, got {n}"),
        });
    }
    if let Some(w) = e.commits_count {
        let n = a.commits.unwrap_or(0);
        out.push(Check {
            name: "commits_count".into(),
            passed: n == w,
            detail: format!("expected {w} commits on the run branch, got {n}"),
        });
    }
    if let Some(v) = &e.request_contains_in_order {
        for ro in v {
            let body = a
                .requests
                .iter()
                .rev()
                .find(|c| c.call_key == ro.call_key)
                .map(|c| c.body.as_str());
            let (passed, detail) = match body {
                None => (
                    false,
                    format!("no request with call key {:?} was sent", ro.call_key),
                ),
                Some(b) => {
                    let mut at = 0;
                    let mut missing = None;
                    for s in &ro.strings {
                        match b[at..].find(s.as_str()) {
                            Some(i) => at += i + s.len(),
                            None => {
                                missing = Some(s.clone());
                                break;
                            }
                        }
                    }
                    match missing {
                        None => (true, format!("{:?} in order", ro.strings)),
                        Some(s) => (
                            false,
                            format!("{s:?} not found (in order) in the {} request", ro.call_key),
                        ),
                    }
                }
            };
            out.push(Check {
                name: format!("request_contains_in_order.{}", ro.call_key),
                passed,
                detail,
            });
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub ending_ok: bool,
    pub score: f64,
    pub passed: bool,
    pub failures: Vec<String>,
}

pub fn verdict(case: &Case, report: &Value, checks: &[Check], latency_ms: u64) -> Verdict {
    let got = report["ending"].as_str().unwrap_or("<no report>");
    let ending_ok = got == case.ending.as_str();
    let n = checks.len();
    let ok = checks.iter().filter(|c| c.passed).count();
    let score = if !ending_ok {
        0.0
    } else if n == 0 {
        1.0
    } else {
        ok as f64 / n as f64
    };
    let cost = report["spend_usd"].as_f64().unwrap_or(f64::INFINITY);
    let mut failures = vec![];
    if !ending_ok {
        failures.push(format!("ending: expected {}, got {got}", case.ending));
    }
    for c in checks.iter().filter(|c| !c.passed) {
        failures.push(format!("{}: {}", c.name, c.detail));
    }
    if latency_ms > case.file.latency_cap_ms {
        failures.push(format!(
            "latency {latency_ms} ms over the {} ms cap",
            case.file.latency_cap_ms
        ));
    }
    if cost > case.file.cost_cap_usd {
        failures.push(format!(
            "cost ${cost:.6} over the ${} cap",
            case.file.cost_cap_usd
        ));
    }
    let passed = ending_ok
        && score >= PASS_SCORE
        && latency_ms <= case.file.latency_cap_ms
        && cost <= case.file.cost_cap_usd;
    Verdict {
        ending_ok,
        score,
        passed,
        failures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn notice_position_reads_both_protocols() {
        let a = r#"{"system":"s","messages":[{"role":"user","content":[{"type":"text","text":"task"},{"type":"text","text":"[harness budget notice] 72%"}]}]}"#;
        assert_eq!(notice_position(a), Some(true));
        let wrong = r#"{"system":"[harness budget notice] 72%","messages":[{"role":"user","content":"task"}]}"#;
        assert_eq!(notice_position(wrong), Some(false));
        let o = r#"{"messages":[{"role":"system","content":"s"},{"role":"user","content":"t"},{"role":"user","content":"[harness budget notice] 80%"}]}"#;
        assert_eq!(notice_position(o), Some(true));
        assert_eq!(notice_position(r#"{"messages":[]}"#), None);
    }
}
