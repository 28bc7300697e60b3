//! Money: the spend's bounds and how often the budget notice was sent.

use super::check::{check, Check};
use crate::suite::Expect;
use harness::report::Report;

pub(super) fn limits(e: &Expect, r: &Report, out: &mut Vec<Check>) {
    let spend = r.spend_usd;
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
}

pub(super) fn min_budget_notices(e: &Expect, r: &Report, out: &mut Vec<Check>) {
    if let Some(m) = e.min_budget_notices {
        let n = r.budget_notices;
        out.push(check(
            "min_budget_notices".into(),
            n >= m,
            format!("expected >= {m}, got {n}"),
        ));
    }
}
