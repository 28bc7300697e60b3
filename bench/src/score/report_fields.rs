//! Fields of report.json itself: the predicate, the `[expect] report` table
//! (any field by name), the detail, the drift bands.

use super::check::{check, Check};
use crate::suite::Expect;
use harness::report::Report;
use serde_json::Value;

pub(super) fn predicate_met(e: &Expect, r: &Report, out: &mut Vec<Check>) {
    if let Some(w) = e.predicate_met {
        out.push(check(
            "predicate_met".into(),
            r.predicate_met == w,
            format!("expected {w}, got {}", r.predicate_met),
        ));
    }
}

pub(super) fn checks(e: &Expect, r: &Report, out: &mut Vec<Check>) {
    if let Some(m) = &e.report {
        // The table names fields as case.toml spells them (suite loading
        // checks each name against the report's fields), so it reads the
        // report as JSON.
        let json = serde_json::to_value(r).unwrap_or(Value::Null);
        for (k, want) in m {
            let want_json = serde_json::to_value(want).unwrap_or(Value::Null);
            let got = &json[k.as_str()];
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
        let d = r.detail.as_deref().unwrap_or("");
        out.push(check(
            "detail_contains".into(),
            d.contains(s.as_str()),
            format!("detail {d:?} should contain {s:?}"),
        ));
    }
    memory(e, r, out);
    if let Some(w) = &e.drift_bands {
        // A band as case.toml names it: its name in report.json.
        let got: Vec<String> = (r.drift_history.iter())
            .filter_map(|d| match serde_json::to_value(d.band) {
                Ok(Value::String(s)) => Some(s),
                _ => None,
            })
            .collect();
        out.push(check(
            "drift_bands".into(),
            &got == w,
            format!("expected {w:?}, got {got:?}"),
        ));
    }
}

/// `[memory]`: which lessons were admitted and refused (and why), and how
/// each compaction ended. Gates: admission is the harness's own check.
fn memory(e: &Expect, r: &Report, out: &mut Vec<Check>) {
    if let Some(w) = &e.lessons {
        let got: Vec<&str> = r.lessons.iter().map(|l| l.call_key.as_str()).collect();
        out.push(check(
            "lessons".into(),
            got == w.iter().map(String::as_str).collect::<Vec<_>>(),
            format!("expected {w:?} admitted, got {got:?}"),
        ));
    }
    if let Some(w) = &e.lessons_refused {
        let got: std::collections::BTreeMap<String, String> = (r.lessons_refused.iter())
            .map(|l| (l.call_key.clone(), l.reason.as_str().to_string()))
            .collect();
        out.push(check(
            "lessons_refused".into(),
            &got == w,
            format!("expected {w:?} refused, got {got:?}"),
        ));
    }
    if let Some(w) = &e.compactions {
        let got: Vec<&str> = r.compactions.iter().map(|c| c.outcome.as_str()).collect();
        out.push(check(
            "compactions".into(),
            got == w.iter().map(String::as_str).collect::<Vec<_>>(),
            format!("expected {w:?}, got {got:?}"),
        ));
    }
}
