//! The spec file as written: serde types that mirror the TOML one to one
//! (every table a `strict::Table`, never an array, `deny_unknown_fields`,
//! its fields declared in the order the "known fields here" list gives them), and what each field expects, in the words
//! the user reads. serde checks shape (tables, types, required and unknown
//! keys); [`super::validate`] checks values.

use super::{
    SpecError, CHECK_TIMEOUT_MAX_S, HTTP_ATTEMPTS_MAX, LOOP_CAP_MAX, REPLANS_MAX, RETRIES_MAX,
};
use serde::de::IgnoredAny;
use serde::Deserialize;
use std::collections::BTreeMap;
use strict::Table;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSpec {
    pub goal: String,
    pub predicate: Table<RawPredicate>,
    pub budget: Table<RawBudget>,
    pub model: Table<RawModel>,
    pub prices: BTreeMap<String, Table<RawPrice>>,
    #[serde(rename = "loop", default)]
    pub loop_: Table<RawLoop>,
    #[serde(default)]
    pub drift: Table<RawDrift>,
    #[serde(default)]
    pub tools: Table<RawTools>,
    #[serde(default)]
    pub checks: BTreeMap<String, Table<RawCheck>>,
    #[serde(default)]
    pub alerts: Table<RawAlerts>,
    pub workspace: String,
    pub outbox: Option<String>,
    #[serde(default)]
    pub check_env: Table<RawCheckEnv>,
    /// Absent: no compaction, the history is kept as before.
    pub memory: Option<Table<RawMemory>>,
    /// Absent: checks must run at the full confinement level.
    #[serde(default)]
    pub sandbox: Table<RawSandbox>,
    /// Absent: the harness's own prompts, unchanged.
    #[serde(default)]
    pub prompts: Table<RawPrompts>,
}

/// `[prompts]`: text the spec adds to the harness's own system prompts (the
/// knob a prompt A/B turns; the harness's prompts stay, so its contract
/// with the model does).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPrompts {
    pub executor_extra: Option<String>,
}

/// `[sandbox]`: the weakest confinement of checks the run accepts.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSandbox {
    pub min_level: Option<String>,
    pub memory_mb: Option<i64>,
}

/// `command` or `check`, never both: which one is [`super::validate`]'s call,
/// so the message can say so.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPredicate {
    pub command: Option<Vec<String>>,
    pub timeout_s: Option<i64>,
    pub check: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCheck {
    pub command: Vec<String>,
    pub timeout_s: Option<i64>,
    /// The check keeps the network (off by default: confined, it has none).
    pub network: Option<bool>,
}

/// Integers are read as i64 (what TOML has) and range-checked by the
/// validation, so `-1` reads "between 1 and 3600, found -1", not serde's
/// "expected u64".
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBudget {
    pub hard_cap_usd: f64,
    pub wall_clock_limit_s: f64,
    pub task_budget_tokens: i64,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawModel {
    pub protocol: String,
    pub base_url: String,
    pub api_key_env: Option<String>,
    /// Known only to be refused, whatever its type: a key has no place in
    /// the spec.
    #[serde(default)]
    #[schemars(schema_with = "refused")]
    pub api_key: Option<IgnoredAny>,
    pub planner: Option<String>,
    pub executor: String,
    pub judge: Option<String>,
    pub max_tokens: Option<i64>,
    pub request_timeout_s: Option<i64>,
    pub http_attempts: Option<i64>,
    pub temperature: Option<f64>,
    pub seed: Option<i64>,
    pub structured_output: Option<String>,
}

/// `api_key`'s schema: no value is valid (the validation refuses the key).
fn refused(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::Schema::from(false)
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPrice {
    pub input_usd_per_mtok: f64,
    pub output_usd_per_mtok: f64,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLoop {
    pub loop_cap: Option<i64>,
    pub retries_per_task: Option<i64>,
    pub max_replans: Option<i64>,
    pub no_progress_k: Option<i64>,
    pub min_pass_rate: Option<f64>,
    pub pass_rate_min_tasks: Option<i64>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDrift {
    pub every_tasks: Option<i64>,
    pub prune_above: Option<f64>,
    pub halt_above: Option<f64>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTools {
    /// The tools the model may call. Read as strings (an unknown name is the
    /// validation's error, naming the field); the schema lists the names, so
    /// an editor flags one the harness does not have.
    #[schemars(with = "Option<Vec<crate::tools::ToolName>>")]
    pub allow: Option<Vec<String>>,
    /// `[tools.run_command]`: what the run_command tool may run.
    pub run_command: Option<Table<RawRunCommand>>,
}

/// `[tools.run_command]`: the programs run_command may start (deny by
/// default) and its timeout.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRunCommand {
    pub programs: Option<Vec<String>>,
    pub timeout_s: Option<i64>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAlerts {
    pub file: Option<String>,
    pub webhook_url: Option<String>,
}

/// `[memory]`: when the history is summarized down by a model call.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMemory {
    pub compact_above_tokens: Option<i64>,
    pub compact_max_tokens: Option<i64>,
    pub compact_every_tasks_min: Option<i64>,
    pub lessons: Option<bool>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCheckEnv {
    pub pass: Option<Vec<String>>,
}

/// What a field expects: `what` heads every message about it ("a positive
/// number of USD, found -1" from the validation, "..., found string" from
/// serde's type check), `missing` is said when a required one is absent.
#[derive(Debug, Clone, Copy)]
pub(super) struct Field {
    pub what: &'static str,
    pub missing: Option<&'static str>,
    /// An integer field's range (said in its type error too).
    pub range: Option<(u64, u64)>,
    /// The message is `what` alone, without what was found.
    pub bare: bool,
}

const fn text(what: &'static str) -> Field {
    Field {
        what,
        missing: None,
        range: None,
        bare: false,
    }
}

const fn int(what: &'static str, min: u64, max: u64) -> Field {
    Field {
        range: Some((min, max)),
        ..text(what)
    }
}

const fn bare(what: &'static str) -> Field {
    Field {
        bare: true,
        ..text(what)
    }
}

const fn required(f: Field, missing: &'static str) -> Field {
    Field {
        missing: Some(missing),
        ..f
    }
}

pub(super) const GOAL: Field = required(
    text("the goal in plain English"),
    "the goal in plain English",
);
pub(super) const TABLE: Field = text("a table");
pub(super) const PREDICATE_MISSING: &str = "the goal predicate: code the harness runs, e.g. [predicate] command = [\"python3\", \"checks/p95.py\"]";
pub(super) const PREDICATE_PROSE: &str =
    "code the harness runs ([predicate] command = [...] or check = \"...\"), not prose: \
     a goal whose success cannot be checked by a program is not eligible for autonomy";
pub(super) const COMMAND: Field = required(
    text("a command as an array of strings, e.g. [\"python3\", \"checks/p95.py\"]"),
    "a command array",
);
pub(super) const COMMAND_ARG: Field = bare("a string");
pub(super) const TIMEOUT: Field = int("seconds", 1, CHECK_TIMEOUT_MAX_S);
pub(super) const PREDICATE_CHECK: Field = text("the name of a check defined under [checks]");
pub(super) const BUDGET: Field = required(
    TABLE,
    "a [budget] table with hard_cap_usd, wall_clock_limit_s and task_budget_tokens",
);
pub(super) const HARD_CAP: Field =
    required(text("a positive number of USD"), "the hard cap in USD");
pub(super) const WALL_CLOCK: Field = required(
    text("a positive number of seconds"),
    "the wall-clock limit in seconds",
);
pub(super) const TASK_TOKENS: Field = required(
    int("tokens", 1, 100_000_000),
    "the visible per-task budget in tokens (never dollars)",
);
pub(super) const MODEL: Field = required(TABLE, "a [model] table");
pub(super) const PROTOCOL: Field = required(
    text("\"anthropic\" or \"openai\""),
    "\"anthropic\" or \"openai\"",
);
pub(super) const BASE_URL: Field = required(text("an http(s) URL"), "the endpoint's base URL");
pub(super) const API_KEY_ENV: Field = text("the NAME of an environment variable");
pub(super) const MODEL_NAME: Field = text("a model name");
pub(super) const EXECUTOR: Field = required(MODEL_NAME, "the executor model name");
pub(super) const MAX_TOKENS: Field = int("max output tokens per call", 1, 1_000_000);
pub(super) const REQUEST_TIMEOUT: Field = int("seconds", 1, 3600);
pub(super) const HTTP_ATTEMPTS: Field = int("attempts per call", 1, HTTP_ATTEMPTS_MAX as u64);
pub(super) const TEMPERATURE: Field = text("a temperature from 0 to 2");
pub(super) const SEED: Field = int("a sampling seed", 0, i64::MAX as u64);
pub(super) const STRUCTURED_OUTPUT: Field = text("\"json_schema\" or \"json_object\"");
pub(super) const PRICES: Field = required(
    TABLE,
    "a [prices.\"<model>\"] table per model with input_usd_per_mtok and output_usd_per_mtok",
);
pub(super) const PRICE_IN: Field = required(text("a non-negative $/MTok"), "$/MTok input");
pub(super) const PRICE_OUT: Field = required(text("a non-negative $/MTok"), "$/MTok output");
pub(super) const LOOP_CAP: Field = int("model calls per task", 1, LOOP_CAP_MAX as u64);
pub(super) const RETRIES: Field = int("retries", 0, RETRIES_MAX as u64);
pub(super) const REPLANS: Field = int("replans", 0, REPLANS_MAX as u64);
pub(super) const NO_PROGRESS_K: Field = int("tasks", 1, 1000);
pub(super) const FRACTION: Field = text("a number in [0, 1]");
pub(super) const PASS_RATE_MIN_TASKS: Field = int(
    "finished tasks before the pass-rate guard applies",
    1,
    100_000,
);
pub(super) const DRIFT_EVERY: Field = int("tasks between drift checks", 1, 1000);
pub(super) const PATH: Field = text("a path (relative paths are relative to the spec file)");
pub(super) const WORKSPACE: Field = required(PATH, "the workspace directory the tools act in");
pub(super) const TOOLS_ALLOW: Field = bare("an array of tool names");
pub(super) const TOOL_NAME: Field = text("a tool name");
pub(super) const PROGRAMS: Field =
    bare("an array of program names run_command may run, e.g. [\"python3\"]");
pub(super) const PROGRAM: Field =
    text("a program name looked up on PATH (letters, digits, '.', '_', '+', '-'; no '/')");
pub(super) const WEBHOOK_URL: Field = text("an http(s) URL");
pub(super) const CHECK_ENV_PASS: Field = text("an array of environment variable names");
pub(super) const ENV_NAME: Field = text("an environment variable name");
pub(super) const COMPACT_ABOVE: Field = int(
    "history tokens (estimated as bytes / 4) above which it is compacted",
    super::COMPACT_ABOVE_TOKENS_MIN,
    super::COMPACT_ABOVE_TOKENS_MAX,
);
pub(super) const COMPACT_MAX_TOKENS: Field = int(
    "max output tokens of a compaction call",
    1,
    super::COMPACT_MAX_TOKENS_MAX,
);
pub(super) const COMPACT_EVERY: Field = int("tasks between compactions, at least", 1, 1000);
pub(super) const MIN_LEVEL: Field = text("one of \"full\", \"landlock\" or \"none\"");
pub(super) const NETWORK: Field = text("true or false (the check keeps the network)");
pub(super) const MEMORY_MB: Field = int(
    "megabytes of memory one check may use",
    crate::sandbox::MEMORY_MB_MIN,
    crate::sandbox::MEMORY_MB_MAX,
);
pub(super) const LESSONS: Field =
    text("true or false (ask for a lesson after each failed attempt)");

/// One step of a field path, for matching: a key or an array index.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step<'a> {
    Key(&'a str),
    Index,
}

/// The field a path names, by the shape of the file; None for a path that
/// is no field of the spec (the error is then serde's own message).
fn field_at(path: &[Step]) -> Option<Field> {
    use Step::{Index as I, Key as K};
    Some(match path {
        [K("goal")] => GOAL,
        [K("workspace")] => WORKSPACE,
        [K("outbox")] | [K("alerts"), K("file")] => PATH,
        [K("predicate"), K("command")] | [K("checks"), K(_), K("command")] => COMMAND,
        [K("predicate"), K("command"), I] | [K("checks"), K(_), K("command"), I] => COMMAND_ARG,
        [K("predicate"), K("timeout_s")] | [K("checks"), K(_), K("timeout_s")] => TIMEOUT,
        [K("predicate"), K("check")] => PREDICATE_CHECK,
        [K("budget")] => BUDGET,
        [K("budget"), K("hard_cap_usd")] => HARD_CAP,
        [K("budget"), K("wall_clock_limit_s")] => WALL_CLOCK,
        [K("budget"), K("task_budget_tokens")] => TASK_TOKENS,
        [K("model")] => MODEL,
        [K("model"), K("protocol")] => PROTOCOL,
        [K("model"), K("base_url")] => BASE_URL,
        [K("model"), K("api_key_env")] => API_KEY_ENV,
        [K("model"), K("executor")] => EXECUTOR,
        [K("model"), K("planner" | "judge")] => MODEL_NAME,
        [K("model"), K("max_tokens")] => MAX_TOKENS,
        [K("model"), K("request_timeout_s")] => REQUEST_TIMEOUT,
        [K("model"), K("http_attempts")] => HTTP_ATTEMPTS,
        [K("model"), K("temperature")] => TEMPERATURE,
        [K("model"), K("seed")] => SEED,
        [K("model"), K("structured_output")] => STRUCTURED_OUTPUT,
        [K("prices")] => PRICES,
        [K("prices"), K(_), K("input_usd_per_mtok")] => PRICE_IN,
        [K("prices"), K(_), K("output_usd_per_mtok")] => PRICE_OUT,
        [K("loop"), K("loop_cap")] => LOOP_CAP,
        [K("loop"), K("retries_per_task")] => RETRIES,
        [K("loop"), K("max_replans")] => REPLANS,
        [K("loop"), K("no_progress_k")] => NO_PROGRESS_K,
        [K("loop"), K("min_pass_rate")] => FRACTION,
        [K("loop"), K("pass_rate_min_tasks")] => PASS_RATE_MIN_TASKS,
        [K("drift"), K("every_tasks")] => DRIFT_EVERY,
        [K("drift"), K("prune_above" | "halt_above")] => FRACTION,
        [K("tools"), K("allow")] => TOOLS_ALLOW,
        [K("tools"), K("allow"), I] => TOOL_NAME,
        [K("tools"), K("run_command")] => TABLE,
        [K("tools"), K("run_command"), K("programs")] => PROGRAMS,
        [K("tools"), K("run_command"), K("programs"), I] => PROGRAM,
        [K("tools"), K("run_command"), K("timeout_s")] => TIMEOUT,
        [K("alerts"), K("webhook_url")] => WEBHOOK_URL,
        [K("check_env"), K("pass")] => CHECK_ENV_PASS,
        [K("check_env"), K("pass"), I] => ENV_NAME,
        [K("memory"), K("compact_above_tokens")] => COMPACT_ABOVE,
        [K("memory"), K("compact_max_tokens")] => COMPACT_MAX_TOKENS,
        [K("memory"), K("compact_every_tasks_min")] => COMPACT_EVERY,
        [K("memory"), K("lessons")] => LESSONS,
        [K("sandbox"), K("min_level")] => MIN_LEVEL,
        [K("sandbox"), K("memory_mb")] => MEMORY_MB,
        [K("checks"), K(_), K("network")] => NETWORK,
        [K(
            "checks" | "loop" | "drift" | "tools" | "alerts" | "check_env" | "memory" | "sandbox",
        )]
        | [K("checks" | "prices"), K(_)] => TABLE,
        _ => return None,
    })
}

/// A value of the wrong type at a field: what it expects, and what it has.
fn type_error(path: &[Step], found: &str) -> Option<String> {
    // The predicate is the one field whose wrong type is a refusal of the
    // task itself: prose is a goal no program can check.
    if path == [Step::Key("predicate")] {
        return Some(if found == "string" {
            PREDICATE_PROSE.to_string()
        } else {
            format!("a table with `command` or `check`, found {found}")
        });
    }
    let f = field_at(path)?;
    Some(match f.range {
        _ if f.bare => f.what.to_string(),
        Some((min, max)) => format!(
            "{} (an integer between {min} and {max}), found {found}",
            f.what
        ),
        None => format!("{}, found {found}", f.what),
    })
}

/// A loader error in the spec's words: file, dotted field path, and what
/// was expected there.
pub(super) fn spec_error(file: &str, e: &strict::Error) -> SpecError {
    let err = |field: String, expected: String| SpecError {
        file: file.into(),
        field,
        expected,
    };
    // Where an editor jumps: line and column, never a byte offset.
    let line_col = |p: strict::Position| format!("line {}, column {}", p.line, p.column);
    let Some(field) = e.field() else {
        let at =
            e.at.map(|p| format!("({})", line_col(p)))
                .unwrap_or_else(|| "(file)".into());
        return err(at, format!("valid TOML: {}", e.message));
    };
    // A syntax error inside a key's value: the key, and where in it.
    if let (strict::Kind::Syntax, Some(p)) = (&e.kind, e.at) {
        return err(
            field,
            format!("valid TOML: {} ({})", e.message, line_col(p)),
        );
    }
    let mut steps: Vec<Step> = e
        .path
        .iter()
        .map(|s| match s {
            strict::Segment::Map { key } => Step::Key(key),
            _ => Step::Index,
        })
        .collect();
    let expected = match &e.kind {
        strict::Kind::Unknown { known, .. } => Some(format!(
            "no such field; known fields here: {}",
            known.join(", ")
        )),
        strict::Kind::Missing { field } => {
            steps.push(Step::Key(field));
            if steps == [Step::Key("predicate")] {
                Some(format!("{PREDICATE_MISSING} (the field is missing)"))
            } else {
                field_at(&steps)
                    .and_then(|f| f.missing)
                    .map(|m| format!("{m} (the field is missing)"))
            }
        }
        strict::Kind::InvalidType | strict::Kind::InvalidValue => {
            e.found.and_then(|found| type_error(&steps, found))
        }
        _ => None,
    };
    err(field, expected.unwrap_or_else(|| e.message.clone()))
}
