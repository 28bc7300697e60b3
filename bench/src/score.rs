//! Scoring one case-run against its expectations. Every check is a **gate**
//! or **scored** (`CheckKind`):
//! - gates are guarantees of the harness: the expected ending, and every
//!   expectation about a guarantee (exit code, class, alert or page, the
//!   predicate, parking and pruning, posts, notice placement, money, commits,
//!   what a request must and must not carry) plus the audit every case-run
//!   gets (bench/src/audit.rs). One failed gate fails the case-run, whatever
//!   the score: a check on a guarantee is not a quality score.
//! - scored checks are the quality of the agent's work where partial credit
//!   is meaningful (which tasks were verified, what files and posts contain,
//!   the wording of a reason); the score is the share of scored checks that
//!   pass (1.0 when there are none).
//!
//! pass = every gate passes and score >= PASS_SCORE and latency <= cap and
//! cost <= cap. `kind_of` is the one table that says which is which
//! (suites/README.md explains it to case authors).

use crate::suite::{Case, Expect};
use harness::replay::Captured;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

pub const PASS_SCORE: f64 = 0.8;
pub const NOTICE_MARKER: &str = "[harness budget notice]";

/// Whether a failed check fails the case-run outright or lowers its score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckKind {
    /// A guarantee: any failure fails the case-run.
    Gate,
    /// Quality: counted in the score.
    Scored,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub kind: CheckKind,
    pub passed: bool,
    pub detail: String,
}

/// The kind of the expectation `key` (a case.toml `[expect]` key; a check's
/// name is its key, or `key.<what>`). Only the quality expectations are
/// listed: every other expectation, including any added later, is a gate
/// until someone argues it is not.
pub fn kind_of(key: &str) -> CheckKind {
    match key {
        "verified"
        | "verified_count"
        | "queue_left"
        | "parked_reason_contains"
        | "files_contain"
        | "outbox_contains"
        | "detail_contains" => CheckKind::Scored,
        _ => CheckKind::Gate,
    }
}

/// A check named after its expectation, with that expectation's kind.
fn check(name: String, passed: bool, detail: String) -> Check {
    let key = name.split('.').next().unwrap_or("");
    Check {
        kind: kind_of(key),
        name,
        passed,
        detail,
    }
}

/// What a case-run left behind, as the scorer reads it.
pub struct Artifacts<'a> {
    pub report: &'a Value,
    pub outbox: &'a [Value],
    pub workspace: &'a Path,
    pub requests: &'a [Captured],
    pub commits: Option<usize>,
    /// Files per commit on the run branch, oldest first (only when a case
    /// asks for `commit_files`).
    pub commit_files: Option<&'a Result<Vec<Vec<String>>, String>>,
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
    check(
        name.into(),
        want == got,
        format!("expected {want:?}, got {got:?}"),
    )
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
        out.push(check(
            "predicate_met".into(),
            r["predicate_met"] == w,
            format!("expected {w}, got {}", r["predicate_met"]),
        ));
    }
    if let Some(w) = &e.verified {
        out.push(set_check("verified", w, set(r, "verified")));
    }
    if let Some(w) = e.verified_count {
        let n = r["verified"].as_array().map_or(0, |a| a.len());
        out.push(check(
            "verified_count".into(),
            n == w,
            format!("expected {w}, got {n}"),
        ));
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
            out.push(check(
                format!("parked_reason_contains.{id}"),
                reason.contains(needle.as_str()),
                format!("reason {reason:?} should contain {needle:?}"),
            ));
        }
    }
    if let Some(w) = &e.pruned {
        out.push(set_check("pruned", w, set(r, "pruned")));
    }
    if let Some(w) = &e.queue_left {
        out.push(set_check("queue_left", w, set(r, "queue_left")));
    }
    if let Some(w) = e.outbox_total {
        out.push(check(
            "outbox_total".into(),
            a.outbox.len() == w,
            format!("expected {w} posts, got {}", a.outbox.len()),
        ));
    }
    if let Some(m) = &e.outbox_key_count {
        for (k, w) in m {
            let n = a.outbox.iter().filter(|x| x["key"] == k.as_str()).count();
            out.push(check(
                format!("outbox_key_count.{k}"),
                n == *w,
                format!("expected {w} posts with key {k:?}, got {n}"),
            ));
        }
    }
    if let Some(v) = &e.outbox_contains {
        for s in v {
            let hit = a
                .outbox
                .iter()
                .any(|x| x["text"].as_str().is_some_and(|t| t.contains(s.as_str())));
            out.push(check(
                format!("outbox_contains.{s}"),
                hit,
                format!("some post should contain {s:?}"),
            ));
        }
    }
    let spend = r["spend_usd"].as_f64().unwrap_or(f64::NAN);
    if let Some(m) = e.spend_usd_min {
        out.push(check(
            "spend_usd_min".into(),
            spend >= m,
            format!("spend ${spend:.6} should be >= ${m}"),
        ));
    }
    if let Some(m) = e.spend_usd_max {
        out.push(check(
            "spend_usd_max".into(),
            spend <= m,
            format!("spend ${spend:.6} should be <= ${m}"),
        ));
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
            out.push(check(
                format!("report.{k}"),
                passed,
                format!("expected {want_json}, got {got}"),
            ));
        }
    }
    if let Some(s) = &e.detail_contains {
        let d = r["detail"].as_str().unwrap_or("");
        out.push(check(
            "detail_contains".into(),
            d.contains(s.as_str()),
            format!("detail {d:?} should contain {s:?}"),
        ));
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
        out.push(check(
            "drift_bands".into(),
            &got == w,
            format!("expected {w:?}, got {got:?}"),
        ));
    }
    if let Some(m) = &e.files_contain {
        for (p, needle) in m {
            let body = std::fs::read_to_string(a.workspace.join(p)).unwrap_or_default();
            out.push(check(
                format!("files_contain.{p}"),
                body.contains(needle.as_str()),
                format!("{p} should contain {needle:?}"),
            ));
        }
    }
    if let Some(v) = &e.files_absent {
        for p in v {
            let exists = a.workspace.join(p).exists();
            out.push(check(
                format!("files_absent.{p}"),
                !exists,
                format!("{p} should not exist"),
            ));
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
        out.push(check(
            "notice_at_end".into(),
            passed,
            format!(
                "{} request(s) carried the notice; at the end of the messages in {}",
                positions.len(),
                positions.iter().filter(|p| **p).count()
            ),
        ));
    }
    if let Some(m) = e.min_budget_notices {
        let n = r["budget_notices"].as_u64().unwrap_or(0);
        out.push(check(
            "min_budget_notices".into(),
            n >= m,
            format!("expected >= {m}, got {n}"),
        ));
    }
    if let Some(w) = e.commits_count {
        let n = a.commits.unwrap_or(0);
        out.push(check(
            "commits_count".into(),
            n == w,
            format!("expected {w} commits on the run branch, got {n}"),
        ));
    }
    if let Some(want) = &e.commit_files {
        let (passed, detail) = match a.commit_files {
            Some(Ok(got)) => {
                let mut want_sorted: Vec<Vec<String>> = want.clone();
                want_sorted.iter_mut().for_each(|c| c.sort());
                (
                    &want_sorted == got,
                    format!("expected {want_sorted:?}, got {got:?}"),
                )
            }
            Some(Err(e)) => (false, format!("the commits could not be read: {e}")),
            None => (false, "the commits were not gathered".into()),
        };
        out.push(check("commit_files".into(), passed, detail));
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
            out.push(check(
                format!("request_contains_in_order.{}", ro.call_key),
                passed,
                detail,
            ));
        }
    }
    if let Some(v) = &e.request_excludes {
        for rx in v {
            out.push(request_excludes_check(rx, a.requests));
        }
    }
    out
}

/// Whether `call_key` is what `pattern` names: the exact key, or every key
/// starting with what comes before a trailing `*` (`judge/*`).
pub fn call_key_matches(pattern: &str, call_key: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => call_key.starts_with(prefix),
        None => call_key == pattern,
    }
}

/// `request_excludes`: no request (any attempt) whose call key matches
/// carries any of the strings. A pattern that matched no request is a
/// failure, not a vacuous pass: the check must see what it guards.
fn request_excludes_check(rx: &crate::suite::RequestExcludes, requests: &[Captured]) -> Check {
    let matching: Vec<&Captured> = requests
        .iter()
        .filter(|c| call_key_matches(&rx.call_key, &c.call_key))
        .collect();
    let mut found = vec![];
    for c in &matching {
        for s in &rx.strings {
            if c.body.contains(s.as_str()) {
                found.push(format!("{s:?} in {} (attempt {})", c.call_key, c.attempt));
            }
        }
    }
    let (passed, detail) = if matching.is_empty() {
        (
            false,
            format!("no request with call key {:?} was sent", rx.call_key),
        )
    } else if found.is_empty() {
        (
            true,
            format!("none of {:?} in {} request(s)", rx.strings, matching.len()),
        )
    } else {
        (false, format!("must not carry: {}", found.join(", ")))
    };
    check(format!("request_excludes.{}", rx.call_key), passed, detail)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub ending_ok: bool,
    pub score: f64,
    pub passed: bool,
    pub failures: Vec<String>,
}

/// `run` is the case-run index: for `ending = "recorded"` it picks the
/// cassette variant whose live ending is the gate.
pub fn verdict(
    case: &Case,
    run: u32,
    report: &Value,
    checks: &[Check],
    latency_ms: u64,
) -> Verdict {
    let got = report["ending"].as_str().unwrap_or("<no report>");
    let want = case.expected_ending(run);
    let ending_ok = got == want.as_str();
    let scored: Vec<&Check> = checks
        .iter()
        .filter(|c| c.kind == CheckKind::Scored)
        .collect();
    let ok = scored.iter().filter(|c| c.passed).count();
    let gates_ok = checks
        .iter()
        .all(|c| c.kind == CheckKind::Scored || c.passed);
    let score = if !ending_ok {
        0.0
    } else if scored.is_empty() {
        1.0
    } else {
        ok as f64 / scored.len() as f64
    };
    let cost = report["spend_usd"].as_f64().unwrap_or(f64::INFINITY);
    let mut failures = vec![];
    if !ending_ok {
        let how = match &case.expected {
            crate::suite::ExpectedEnding::Fixed(_) => String::new(),
            crate::suite::ExpectedEnding::Recorded(v) => format!(
                " (the live run recorded as variant {} of {})",
                run as usize % v.len().max(1),
                v.len()
            ),
        };
        failures.push(format!("ending: expected {want}{how}, got {got}"));
    }
    // Gates first: the failure that decided the verdict is named first.
    for c in checks
        .iter()
        .filter(|c| !c.passed && c.kind == CheckKind::Gate)
    {
        failures.push(format!("gate {}: {}", c.name, c.detail));
    }
    for c in checks
        .iter()
        .filter(|c| !c.passed && c.kind == CheckKind::Scored)
    {
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
        && gates_ok
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

    fn case_expecting(ending: &str) -> Case {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut c = crate::suite::load_case(
            &repo.join("suites/happy/happy-search-p95-index"),
            "happy",
            &crate::suite::report_fields(),
        )
        .expect("a committed case loads");
        c.file.expect.ending = ending.into();
        c
    }

    fn passing(name: &str) -> Check {
        check(name.into(), true, "ok".into())
    }

    #[test]
    fn one_failed_gate_fails_the_case_run_among_many_passing_checks() {
        let case = case_expecting("GOAL_MET");
        let report = serde_json::json!({"ending": "GOAL_MET", "spend_usd": 0.01});
        // Nine passing checks and one failed gate: the share is 0.9, above
        // the 0.8 line, and the case-run still fails, naming the gate.
        let mut cs: Vec<Check> = [
            "verified",
            "verified_count",
            "files_contain.a",
            "files_contain.b",
            "outbox_contains.x",
            "predicate_met",
            "parked",
            "spend_usd_max",
            "notice_at_end",
        ]
        .iter()
        .map(|n| passing(n))
        .collect();
        let v = verdict(&case, 0, &report, &cs, 1);
        assert!(v.passed, "{v:?}");
        cs.push(check(
            "request_contains_in_order.judge/5".into(),
            false,
            "\"<original_goal>\" not found".into(),
        ));
        let v = verdict(&case, 0, &report, &cs, 1);
        assert!(!v.passed, "{v:?}");
        assert_eq!(v.score, 1.0, "a gate is not part of the score");
        assert!(
            v.failures[0].starts_with("gate request_contains_in_order.judge/5"),
            "{:?}",
            v.failures
        );
        // A failed scored check among passing ones lowers the score only.
        cs.pop();
        cs.push(check("files_contain.c".into(), false, "missing".into()));
        let v = verdict(&case, 0, &report, &cs, 1);
        assert!(v.passed, "{v:?}");
        assert!((v.score - 5.0 / 6.0).abs() < 1e-12, "{}", v.score);
        // ... until the score falls under the line.
        cs.push(check("files_contain.d".into(), false, "missing".into()));
        assert!(!verdict(&case, 0, &report, &cs, 1).passed);
    }

    #[test]
    fn the_kind_table_lists_quality_and_defaults_to_gate() {
        for k in [
            "verified",
            "verified_count",
            "files_contain",
            "outbox_contains",
            "detail_contains",
            "queue_left",
            "parked_reason_contains",
        ] {
            assert_eq!(kind_of(k), CheckKind::Scored, "{k}");
        }
        for k in [
            "predicate_met",
            "parked",
            "pruned",
            "outbox_total",
            "outbox_key_count",
            "spend_usd_min",
            "spend_usd_max",
            "report",
            "drift_bands",
            "files_absent",
            "notice_at_end",
            "min_budget_notices",
            "commits_count",
            "request_contains_in_order",
            "request_excludes",
            "audit",
            "a_key_added_later",
        ] {
            assert_eq!(kind_of(k), CheckKind::Gate, "{k}");
        }
        assert_eq!(
            check("report.error_kind".into(), true, String::new()).kind,
            CheckKind::Gate
        );
        assert_eq!(
            check("files_contain.db/0042.sql".into(), true, String::new()).kind,
            CheckKind::Scored
        );
    }

    fn captured(call_key: &str, attempt: u32, body: &str) -> Captured {
        Captured {
            call_key: call_key.into(),
            attempt,
            body: body.into(),
        }
    }

    #[test]
    fn request_excludes_fails_on_any_matching_attempt_and_on_nothing_to_see() {
        let rx = crate::suite::RequestExcludes {
            call_key: "judge/*".into(),
            strings: vec!["<history>".into()],
        };
        let clean = [
            captured("execute/t1/a0/0", 0, "<history>t0 verified</history>"),
            captured("judge/5", 0, "<original_goal>g</original_goal>"),
        ];
        let c = request_excludes_check(&rx, &clean);
        assert!(c.passed, "{c:?}");
        assert_eq!(c.kind, CheckKind::Gate);
        let dirty = [
            captured("judge/5", 0, "<original_goal>g</original_goal>"),
            captured(
                "judge/5",
                1,
                "<original_goal>g</original_goal><history>x</history>",
            ),
        ];
        let c = request_excludes_check(&rx, &dirty);
        assert!(!c.passed && c.detail.contains("attempt 1"), "{c:?}");
        // No judge request at all: the check saw nothing, so it fails.
        let c = request_excludes_check(&rx, &clean[..1]);
        assert!(!c.passed && c.detail.contains("no request"), "{c:?}");
        assert!(call_key_matches("judge/5", "judge/5"));
        assert!(!call_key_matches("judge/5", "judge/50"));
        assert!(call_key_matches("execute/t1/*", "execute/t1/a0/3"));
    }
}
