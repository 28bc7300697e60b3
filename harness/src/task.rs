//! A task: one unit of work in the queue. Tasks are written by the model (the
//! planner and replanner), so their `verify` is restricted to the fixed
//! vocabulary in [`crate::verify`]; the harness runs it, never the model.

use crate::verify::Verify;
use serde::{Deserialize, Serialize};

/// Longest task id / description the harness accepts from the model.
pub const TASK_ID_MAX_CHARS: usize = 64;
pub const TASK_DESCRIPTION_MAX_CHARS: usize = 2000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    pub description: String,
    pub verify: Verify,
    /// Which call wrote it: "plan" or "replan/<n>".
    pub origin: String,
    /// Execution attempts started so far (retries per task are bounded).
    pub attempts: u32,
}
