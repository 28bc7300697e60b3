//! The page gate (`audit.page_safe`): the run's morning page holds nothing
//! the model or the workspace wrote as markup (the rules: `crate::page_safety`).

use super::{GateResult, Gathered};

/// `audit.page_safe`: the morning page exists and holds no markup or
/// control byte that came from the model or the workspace (page_safety).
pub fn check_page_safe(g: &Gathered) -> GateResult {
    match &g.page {
        None => GateResult::fail("the page was not read"),
        Some(Err(e)) => GateResult::fail(format!("no morning page: {e}")),
        Some(Ok(html)) => match crate::page_safety::problems(html).as_slice() {
            [] => GateResult::pass(format!(
                "report.html ({} bytes) holds only its own markup",
                html.len()
            )),
            p => GateResult::fail(format!(
                "report.html holds markup or bytes from outside its template: {}",
                p.join("; ")
            )),
        },
    }
}
