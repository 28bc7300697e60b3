//! The run spec (TOML). Parsed and validated completely before anything runs:
//! a spec that does not parse or is incomplete is rejected with an error that
//! names the file, the field and what was expected, and nothing is written.
//!
//! Three steps, one module each: `raw` is the file's shape (serde derive,
//! unknown fields refused, loaded by the workspace's one strict loader),
//! `validate` turns it into a [`RunSpec`] with every value in range, and
//! `reach` refuses a spec whose files a tool could rewrite. Whichever step
//! refuses, the user reads one [`SpecError`]: file, dotted field path, what
//! was expected there.
//!
//! Two refusals are about eligibility, not syntax: a goal predicate that is
//! not code the harness can run (the task is not eligible for autonomy), and
//! a spec that never names the API key's environment variable but embeds a key.

mod raw;
mod reach;
mod validate;

pub use reach::{resolve_for_reach, REACH_SYMLINKS_MAX};

use crate::check::CheckSpec;
use crate::ledger::PriceTable;
use crate::model::types::Protocol;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const SPEC_MAX_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: field `{field}`: expected {expected}")]
pub struct SpecError {
    pub file: String,
    pub field: String,
    pub expected: String,
}

/// The goal predicate: code the harness runs. Never the model's opinion.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// A command; exit 0 means the goal is met.
    Command(CheckSpec),
    /// One of the spec's named checks.
    Check(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    pub protocol: Protocol,
    pub base_url: String,
    /// The NAME of the environment variable holding the key, never the key.
    pub api_key_env: Option<String>,
    pub planner: String,
    pub executor: String,
    pub judge: String,
    pub max_tokens: u32,
    pub request_timeout_s: u64,
    pub http_attempts: u32,
    /// Sampling temperature sent with every call (omitted when unset: the
    /// endpoint's default). Live recordings use one above 0 so runs differ.
    pub temperature: Option<f64>,
    /// Sampling seed (OpenAI-compatible endpoints only; Anthropic has none).
    pub seed: Option<u64>,
    /// How an OpenAI-compatible endpoint is asked for schema-constrained JSON.
    pub structured_output: crate::model::StructuredOutput,
}

impl ModelSpec {
    /// What the spec imposes on every request before it is sent: its
    /// `max_tokens` bounds every call, the planner's and the judge's fixed
    /// allowances included (a small local model's context cannot hold a
    /// 4,096-token plan, found recording the live suite).
    pub fn bound(&self, req: &mut crate::model::ModelRequest) {
        req.max_tokens = req.max_tokens.min(self.max_tokens);
    }

    /// The sampling settings every request carries.
    pub fn sampling(&self) -> crate::model::Sampling {
        crate::model::Sampling {
            temperature: self.temperature,
            seed: self.seed,
            structured_output: self.structured_output,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct AlertSpec {
    pub file: Option<PathBuf>,
    pub webhook_url: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    pub path: PathBuf,
    pub goal: String,
    pub predicate: Predicate,
    pub hard_cap_usd: f64,
    pub wall_clock_limit_s: f64,
    pub task_budget_tokens: u64,
    pub model: ModelSpec,
    pub prices: PriceTable,
    pub loop_cap: u32,
    pub retries_per_task: u32,
    pub max_replans: u32,
    pub no_progress_k: u32,
    /// The pass-rate guard: after `pass_rate_min_tasks` finished tasks, a
    /// verified share below `min_pass_rate` ends the run as NO_PROGRESS
    /// (the seed: below ~70% the agent is paying for work that is thrown away).
    pub min_pass_rate: f64,
    pub pass_rate_min_tasks: u64,
    pub drift_every_tasks: u64,
    pub drift_prune_above: f64,
    pub drift_halt_above: f64,
    pub workspace: PathBuf,
    /// Where post_message appends; outside the workspace. None = state dir.
    pub outbox: Option<PathBuf>,
    pub tools_allowed: Vec<String>,
    /// `[tools.run_command]`: Some exactly when `run_command` is allowed
    /// (the spec must then list its programs).
    pub run_command: Option<crate::tools::CommandPolicy>,
    pub checks: BTreeMap<String, CheckSpec>,
    pub alerts: AlertSpec,
    /// `[memory]`; None (the table absent) = the history is never compacted.
    pub memory: Option<MemorySpec>,
    /// `[sandbox] min_level`: the weakest confinement of checks this run
    /// accepts (default full); below it the run refuses to start.
    pub sandbox_min_level: crate::sandbox::Level,
    /// `[sandbox] memory_mb`: the memory one check may use.
    pub sandbox_memory_mb: u64,
    /// `[prompts] executor_extra`: appended to the executor's system prompt
    /// (a paragraph of its own after the harness's).
    pub executor_prompt_extra: Option<String>,
}

/// Longest `[prompts]` text, in characters.
pub const PROMPT_EXTRA_MAX_CHARS: usize = 4000;

/// When the run's history is summarized down by a `compact/<n>` call.
#[derive(Debug, Clone, PartialEq)]
pub struct MemorySpec {
    /// Compact when the history's estimate (bytes / 4) passes this.
    pub compact_above_tokens: u64,
    /// The compaction call's own output bound (still under `[model] max_tokens`).
    pub compact_max_tokens: u32,
    /// At most one compaction per this many finished tasks.
    pub compact_every_tasks_min: u64,
    /// Ask for a lesson after each failed attempt (`lesson/<task>/a<n>`),
    /// admit it by the harness's checks, and place the relevant ones in later
    /// executor prompts (harness/src/lessons.rs). Off unless the spec says
    /// so: each lesson is a paid call.
    pub lessons: bool,
}

/// `[memory]` defaults and bounds. (A summary that is not smaller than the
/// history is refused as malformed, so a low bound wastes calls, never history.)
pub const COMPACT_ABOVE_TOKENS_MIN: u64 = 1;
pub const COMPACT_ABOVE_TOKENS_MAX: u64 = 10_000_000;
pub const DEFAULT_COMPACT_ABOVE_TOKENS: u64 = 8_000;
pub const DEFAULT_COMPACT_MAX_TOKENS: u32 = 1_024;
pub const COMPACT_MAX_TOKENS_MAX: u64 = 100_000;
pub const DEFAULT_COMPACT_EVERY_TASKS_MIN: u64 = 5;

/// Defaults from the seed.
pub const DEFAULT_LOOP_CAP: u32 = 6;
pub const DEFAULT_DRIFT_EVERY: u64 = 5;
pub const DEFAULT_PRUNE_ABOVE: f64 = 0.3;
pub const DEFAULT_HALT_ABOVE: f64 = 0.5;
pub const DEFAULT_NO_PROGRESS_K: u32 = 5;
pub const DEFAULT_MIN_PASS_RATE: f64 = 0.7;
pub const DEFAULT_PASS_RATE_MIN_TASKS: u64 = 10;
/// Hard upper bounds: limits on everything that can run away.
pub const LOOP_CAP_MAX: u32 = 50;
pub const RETRIES_MAX: u32 = 10;
pub const REPLANS_MAX: u32 = 50;
pub const HTTP_ATTEMPTS_MAX: u32 = 10;
pub const CHECK_TIMEOUT_MAX_S: u64 = 3600;
/// Most names `[check_env] pass` may list.
pub const CHECK_ENV_PASS_MAX: usize = 64;
/// Most programs `[tools.run_command] programs` may list, and the longest name.
pub const RUN_COMMAND_PROGRAMS_MAX: usize = 64;
pub const PROGRAM_NAME_MAX_CHARS: usize = 64;

/// run.toml's JSON Schema (docs/schemas/run.schema.json): the file's shape
/// as serde reads it; the value checks (ranges, one of `command` and
/// `check`) are the validation's.
pub fn json_schema() -> schemars::Schema {
    schemars::schema_for!(raw::RawSpec)
}

impl RunSpec {
    pub fn load(path: &Path) -> Result<RunSpec, SpecError> {
        let file = path.display().to_string();
        let top_err = |expected: String| SpecError {
            file: file.clone(),
            field: "(file)".into(),
            expected,
        };
        let meta =
            std::fs::metadata(path).map_err(|e| top_err(format!("a readable run spec: {e}")))?;
        if meta.len() > SPEC_MAX_BYTES {
            return Err(top_err(format!(
                "a spec under {SPEC_MAX_BYTES} bytes, found {}",
                meta.len()
            )));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| top_err(format!("a UTF-8 TOML file: {e}")))?;
        let dir = path
            .parent()
            .map(|p| {
                if p.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    p
                }
            })
            .unwrap_or(Path::new("."));
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        Self::parse(&text, &file, &dir)
    }
    pub fn parse(text: &str, file: &str, dir: &Path) -> Result<RunSpec, SpecError> {
        let raw: raw::RawSpec =
            strict::from_str(strict::Format::Toml, text).map_err(|e| raw::spec_error(file, &e))?;
        let checker = validate::Checker { file, dir };
        let spec = checker.run_spec(raw)?;
        spec.check_reach(&checker)?;
        Ok(spec)
    }

    /// Point every check's (and the predicate's) TMPDIR at the run's own temp dir.
    /// Every check, the predicate and `run_command` get `[sandbox]
    /// memory_mb` (so the bench's re-run of the predicate is bounded the
    /// same as the harness's).
    pub fn set_check_memory_mb(&mut self, mb: u64) {
        if let Predicate::Command(c) = &mut self.predicate {
            c.env.memory_mb = Some(mb);
        }
        for c in self.checks.values_mut() {
            c.env.memory_mb = Some(mb);
        }
        if let Some(c) = &mut self.run_command {
            c.env.memory_mb = Some(mb);
        }
    }

    pub fn set_check_tmpdir(&mut self, dir: &Path) {
        if let Predicate::Command(c) = &mut self.predicate {
            c.env.tmpdir = Some(dir.to_path_buf());
        }
        for c in self.checks.values_mut() {
            c.env.tmpdir = Some(dir.to_path_buf());
        }
        if let Some(c) = &mut self.run_command {
            c.env.tmpdir = Some(dir.to_path_buf());
        }
    }

    pub fn model_for(&self, role: crate::model::types::CallRole) -> &str {
        use crate::model::types::CallRole::*;
        match role {
            // The compaction summarizes, as the planner reads: the same model.
            Plan | Replan | Compact => &self.model.planner,
            // A lesson reflects on an executor's attempt (Reflexion): the
            // executor's model.
            Execute | Lesson => &self.model.executor,
            Judge => &self.model.judge,
        }
    }
}

#[cfg(test)]
mod tests;
