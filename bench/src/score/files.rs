//! What the post-run workspace holds.

use super::check::{check, Check};
use crate::suite::Expect;
use std::path::Path;

pub(super) fn checks(e: &Expect, workspace: &Path, out: &mut Vec<Check>) {
    if let Some(m) = &e.files_contain {
        for (p, needle) in m {
            let body = std::fs::read_to_string(workspace.join(p)).unwrap_or_default();
            out.push(check(
                format!("files_contain.{p}"),
                body.contains(needle.as_str()),
                format!("{p} should contain {needle:?}"),
            ));
        }
    }
    if let Some(v) = &e.files_absent {
        for p in v {
            let exists = workspace.join(p).exists();
            out.push(check(
                format!("files_absent.{p}"),
                !exists,
                format!("{p} should not exist"),
            ));
        }
    }
}
