//! The run spec (TOML). Parsed and validated completely before anything runs:
//! a spec that does not parse or is incomplete is rejected with an error that
//! names the file, the field and what was expected, and nothing is written.
//!
//! Two refusals are about eligibility, not syntax: a goal predicate that is
//! not code the harness can run (the task is not eligible for autonomy), and
//! a spec that never names the API key's environment variable but embeds a key.

use crate::check::CheckSpec;
use crate::ledger::{Price, PriceTable};
use crate::model::types::Protocol;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use toml::Value;

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
    pub checks: BTreeMap<String, CheckSpec>,
    pub alerts: AlertSpec,
}

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

struct Reader<'a> {
    file: &'a str,
    dir: &'a Path,
}

impl Reader<'_> {
    fn err(&self, field: &str, expected: impl Into<String>) -> SpecError {
        SpecError {
            file: self.file.into(),
            field: field.into(),
            expected: expected.into(),
        }
    }
    fn table<'v>(&self, v: &'v Value, field: &str) -> Result<&'v toml::Table, SpecError> {
        v.as_table()
            .ok_or_else(|| self.err(field, format!("a table, found {}", v.type_str())))
    }
    fn known(&self, t: &toml::Table, prefix: &str, allowed: &[&str]) -> Result<(), SpecError> {
        for k in t.keys() {
            if !allowed.contains(&k.as_str()) {
                let f = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                return Err(self.err(
                    &f,
                    format!("no such field; known fields here: {}", allowed.join(", ")),
                ));
            }
        }
        Ok(())
    }
    fn opt<'v>(&self, t: &'v toml::Table, key: &str) -> Option<&'v Value> {
        t.get(key)
    }
    fn req<'v>(
        &self,
        t: &'v toml::Table,
        prefix: &str,
        key: &str,
        what: &str,
    ) -> Result<&'v Value, SpecError> {
        t.get(key)
            .ok_or_else(|| self.err(&join(prefix, key), format!("{what} (the field is missing)")))
    }
    fn string(&self, v: &Value, field: &str, what: &str) -> Result<String, SpecError> {
        match v.as_str() {
            Some(s) if !s.trim().is_empty() => Ok(s.to_string()),
            Some(_) => Err(self.err(field, format!("{what}, found an empty string"))),
            None => Err(self.err(field, format!("{what}, found {}", v.type_str()))),
        }
    }
    fn number(&self, v: &Value, field: &str, what: &str) -> Result<f64, SpecError> {
        let n = match v {
            Value::Integer(i) => *i as f64,
            Value::Float(f) => *f,
            other => return Err(self.err(field, format!("{what}, found {}", other.type_str()))),
        };
        if !n.is_finite() {
            return Err(self.err(field, format!("{what}, found {n}")));
        }
        Ok(n)
    }
    fn positive(&self, v: &Value, field: &str, what: &str) -> Result<f64, SpecError> {
        let n = self.number(v, field, what)?;
        if n <= 0.0 {
            return Err(self.err(field, format!("{what}, found {n}")));
        }
        Ok(n)
    }
    fn uint(
        &self,
        v: &Value,
        field: &str,
        min: u64,
        max: u64,
        what: &str,
    ) -> Result<u64, SpecError> {
        match v.as_integer() {
            Some(i) if i >= min as i64 && (i as u64) <= max => Ok(i as u64),
            Some(i) => Err(self.err(field, format!("{what} between {min} and {max}, found {i}"))),
            None => Err(self.err(
                field,
                format!(
                    "{what} (an integer between {min} and {max}), found {}",
                    v.type_str()
                ),
            )),
        }
    }
    fn fraction(&self, v: &Value, field: &str) -> Result<f64, SpecError> {
        let n = self.number(v, field, "a number in [0, 1]")?;
        if !(0.0..=1.0).contains(&n) {
            return Err(self.err(field, format!("a number in [0, 1], found {n}")));
        }
        Ok(n)
    }
    fn path(&self, v: &Value, field: &str) -> Result<PathBuf, SpecError> {
        let s = self.string(
            v,
            field,
            "a path (relative paths are relative to the spec file)",
        )?;
        let p = PathBuf::from(s);
        Ok(if p.is_absolute() { p } else { self.dir.join(p) })
    }
    fn argv(&self, v: &Value, field: &str) -> Result<Vec<String>, SpecError> {
        let arr = v.as_array().ok_or_else(|| {
            self.err(field, format!("a command as an array of strings, e.g. [\"python3\", \"checks/p95.py\"], found {}", v.type_str()))
        })?;
        if arr.is_empty() {
            return Err(self.err(field, "a non-empty command array"));
        }
        let mut out = vec![];
        for (i, a) in arr.iter().enumerate() {
            let s = a
                .as_str()
                .ok_or_else(|| self.err(&format!("{field}[{i}]"), "a string"))?;
            out.push(s.to_string());
        }
        // A program named by a relative path (./x, checks/x) is relative to the
        // spec file; a bare name is looked up on PATH.
        if out[0].contains('/') && !Path::new(&out[0]).is_absolute() {
            out[0] = self.dir.join(&out[0]).to_string_lossy().into_owned();
        }
        // An argument that names a file next to the spec (["python3",
        // "checks/p95.py"]) is that file, resolved now: left relative it would
        // be looked up in the workspace at run time, where the agent can write
        // a script of its own under that name and pass the predicate on its
        // own say-so (regression-predicate-script-arg-resolved-in-workspace).
        for a in out.iter_mut().skip(1) {
            if !a.starts_with('-')
                && !Path::new(a.as_str()).is_absolute()
                && self.dir.join(a.as_str()).is_file()
            {
                *a = self.dir.join(a.as_str()).to_string_lossy().into_owned();
            }
        }
        // An interpreter whose script is still relative would run whatever the
        // workspace holds under that name: refuse it.
        let prog = Path::new(&out[0])
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("");
        let interp = [
            "sh", "bash", "dash", "zsh", "python", "python3", "node", "perl", "ruby",
        ]
        .contains(&prog);
        // (`-c` / `-e` run an inline program from the spec itself: fine.)
        let inline = out.iter().skip(1).any(|a| a == "-c" || a == "-e");
        if interp && !inline {
            if let Some((i, script)) = out
                .iter()
                .enumerate()
                .skip(1)
                .find(|(_, a)| !a.starts_with('-'))
            {
                if !Path::new(script).is_absolute() {
                    return Err(self.err(
                        &format!("{field}[{i}]"),
                        format!("a script next to the spec file ({script:?} does not exist there); a relative script would be looked up in the workspace, where the agent can write one"),
                    ));
                }
            }
        }
        Ok(out)
    }
    /// `[check_env] pass = ["NAME", ...]`: harness-environment variables the
    /// predicate and every check receive, by name. A name that looks like a
    /// secret (`redact::looks_secret`), or is the model key's own variable, is
    /// refused: a check's output goes back to the model.
    fn check_env_pass(
        &self,
        root: &toml::Table,
        api_key_env: Option<&str>,
    ) -> Result<Vec<String>, SpecError> {
        let Some(v) = root.get("check_env") else {
            return Ok(vec![]);
        };
        let t = self.table(v, "check_env")?;
        self.known(t, "check_env", &["pass"])?;
        let Some(pv) = t.get("pass") else {
            return Ok(vec![]);
        };
        let arr = pv.as_array().ok_or_else(|| {
            self.err(
                "check_env.pass",
                format!(
                    "an array of environment variable names, found {}",
                    pv.type_str()
                ),
            )
        })?;
        if arr.len() > CHECK_ENV_PASS_MAX {
            return Err(self.err(
                "check_env.pass",
                format!("at most {CHECK_ENV_PASS_MAX} names, found {}", arr.len()),
            ));
        }
        let mut out = vec![];
        for (i, a) in arr.iter().enumerate() {
            let field = format!("check_env.pass[{i}]");
            let name = self.string(a, &field, "an environment variable name")?;
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                || name.starts_with(|c: char| c.is_ascii_digit())
            {
                return Err(self.err(
                    &field,
                    format!("an environment variable NAME (letters, digits, '_'), found {name:?}"),
                ));
            }
            if crate::redact::looks_secret(&name) || Some(name.as_str()) == api_key_env {
                return Err(self.err(
                    &field,
                    format!("a variable that holds no secret: {name:?} looks like a key, token or password, and a check's output goes back to the model (checks get PATH, HOME, LANG and TMPDIR; pass only what they need)"),
                ));
            }
            if ["TMPDIR"].contains(&name.as_str()) {
                return Err(self.err(
                    &field,
                    "a variable other than TMPDIR (the harness sets it to the run's own temp dir)",
                ));
            }
            if !out.contains(&name) {
                out.push(name);
            }
        }
        Ok(out)
    }
    fn check(&self, v: &Value, field: &str) -> Result<CheckSpec, SpecError> {
        let t = self.table(v, field)?;
        self.known(t, field, &["command", "timeout_s"])?;
        let command = self.argv(
            self.req(t, field, "command", "a command array")?,
            &join(field, "command"),
        )?;
        let timeout_s = match self.opt(t, "timeout_s") {
            Some(v) => self.uint(
                v,
                &join(field, "timeout_s"),
                1,
                CHECK_TIMEOUT_MAX_S,
                "seconds",
            )?,
            None => 300,
        };
        Ok(CheckSpec {
            command,
            timeout_s,
            env: crate::check::CheckEnv::default(),
        })
    }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// Most symlinks [`resolve_for_reach`] follows in one path (the kernel's own
/// limit is 40).
pub const REACH_SYMLINKS_MAX: usize = 40;

/// Where `p` would land if it were created now: absolute (a relative path is
/// taken against the current directory, as the harness will use it), every
/// component that exists resolved (symlinks followed, `..` applied to the
/// resolved directory, as the kernel does), the missing rest appended as
/// written. A `..` after a missing component is refused: what it means
/// depends on what will be created there (`<dir>/missing/../workspace/x`
/// is inside the workspace once `missing` exists, and never outside it), so
/// it cannot be checked. Trailing slashes and `.` change nothing.
pub fn resolve_for_reach(p: &Path) -> Result<PathBuf, String> {
    resolve_counting(p, &mut 0)
}

fn resolve_counting(p: &Path, links: &mut usize) -> Result<PathBuf, String> {
    let abs = std::path::absolute(p).map_err(|e| format!("{}: {e}", p.display()))?;
    let mut cur = PathBuf::from("/");
    let mut missing: Option<PathBuf> = None;
    for c in abs.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => cur = PathBuf::from("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                if let Some(m) = &missing {
                    return Err(format!(
                        "{}: \"..\" after {}, which does not exist (write the path without \"..\")",
                        p.display(),
                        m.display()
                    ));
                }
                cur.pop();
            }
            Component::Normal(name) => {
                let next = cur.join(name);
                if missing.is_some() {
                    cur = next;
                    continue;
                }
                match std::fs::symlink_metadata(&next) {
                    Ok(m) if m.file_type().is_symlink() => {
                        *links += 1;
                        if *links > REACH_SYMLINKS_MAX {
                            return Err(format!(
                                "{}: more than {REACH_SYMLINKS_MAX} symlinks",
                                p.display()
                            ));
                        }
                        match std::fs::canonicalize(&next) {
                            Ok(t) => cur = t,
                            // A dangling link: it would be created where it points.
                            Err(_) => {
                                let target = std::fs::read_link(&next)
                                    .map_err(|e| format!("{}: {e}", next.display()))?;
                                let joined = if target.is_absolute() {
                                    target
                                } else {
                                    cur.join(target)
                                };
                                cur = resolve_counting(&joined, links)?;
                                missing = Some(next);
                            }
                        }
                    }
                    Ok(_) => cur = next,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        missing = Some(next.clone());
                        cur = next;
                    }
                    Err(e) => return Err(format!("{}: {e}", next.display())),
                }
            }
        }
    }
    Ok(cur)
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
        let r = Reader { file, dir };
        let root: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let field = e
                .span()
                .map(|s| format!("(byte {})", s.start))
                .unwrap_or_else(|| "(file)".into());
            r.err(&field, format!("valid TOML: {}", e.message()))
        })?;
        r.known(
            &root,
            "",
            &[
                "goal",
                "predicate",
                "budget",
                "model",
                "prices",
                "loop",
                "drift",
                "tools",
                "checks",
                "alerts",
                "workspace",
                "outbox",
                "check_env",
            ],
        )?;
        let goal = r.string(
            r.req(&root, "", "goal", "the goal in plain English")?,
            "goal",
            "the goal in plain English",
        )?;

        // checks first: the predicate may name one.
        let mut checks = BTreeMap::new();
        if let Some(v) = root.get("checks") {
            for (name, c) in r.table(v, "checks")? {
                if name.is_empty()
                    || !name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                {
                    return Err(r.err(
                        &format!("checks.{name}"),
                        "a check name of letters, digits, '_' or '-'",
                    ));
                }
                checks.insert(name.clone(), r.check(c, &format!("checks.{name}"))?);
            }
        }

        let pv = r.req(&root, "", "predicate", "the goal predicate: code the harness runs, e.g. [predicate] command = [\"python3\", \"checks/p95.py\"]")?;
        let predicate = match pv {
            Value::Table(t) => {
                r.known(t, "predicate", &["command", "timeout_s", "check"])?;
                match (t.get("command"), t.get("check")) {
                    (Some(_), Some(_)) => return Err(r.err("predicate", "either `command` or `check`, not both")),
                    (Some(_), None) => Predicate::Command(r.check(pv, "predicate")?),
                    (None, Some(c)) => {
                        let name = r.string(c, "predicate.check", "the name of a check defined under [checks]")?;
                        if !checks.contains_key(&name) {
                            return Err(r.err("predicate.check", format!("a check defined under [checks]; {name:?} is not (defined: {:?})", checks.keys().collect::<Vec<_>>())));
                        }
                        Predicate::Check(name)
                    }
                    (None, None) => return Err(r.err("predicate", "`command` (an array) or `check` (a name under [checks])")),
                }
            }
            Value::String(_) => {
                return Err(r.err(
                    "predicate",
                    "code the harness runs ([predicate] command = [...] or check = \"...\"), not prose: \
                     a goal whose success cannot be checked by a program is not eligible for autonomy",
                ))
            }
            other => return Err(r.err("predicate", format!("a table with `command` or `check`, found {}", other.type_str()))),
        };

        let bv = r.req(
            &root,
            "",
            "budget",
            "a [budget] table with hard_cap_usd, wall_clock_limit_s and task_budget_tokens",
        )?;
        let b = r.table(bv, "budget")?;
        r.known(
            b,
            "budget",
            &["hard_cap_usd", "wall_clock_limit_s", "task_budget_tokens"],
        )?;
        let hard_cap_usd = r.positive(
            r.req(b, "budget", "hard_cap_usd", "the hard cap in USD")?,
            "budget.hard_cap_usd",
            "a positive number of USD",
        )?;
        let wall_clock_limit_s = r.positive(
            r.req(
                b,
                "budget",
                "wall_clock_limit_s",
                "the wall-clock limit in seconds",
            )?,
            "budget.wall_clock_limit_s",
            "a positive number of seconds",
        )?;
        let task_budget_tokens = r.uint(
            r.req(
                b,
                "budget",
                "task_budget_tokens",
                "the visible per-task budget in tokens (never dollars)",
            )?,
            "budget.task_budget_tokens",
            1,
            100_000_000,
            "tokens",
        )?;

        let mv = r.req(&root, "", "model", "a [model] table")?;
        let m = r.table(mv, "model")?;
        r.known(
            m,
            "model",
            &[
                "protocol",
                "base_url",
                "api_key_env",
                "api_key",
                "planner",
                "executor",
                "judge",
                "max_tokens",
                "request_timeout_s",
                "http_attempts",
                "temperature",
                "seed",
                "structured_output",
            ],
        )?;
        if m.contains_key("api_key") {
            return Err(r.err("model.api_key", "no key in the spec: name the environment variable that holds it with `api_key_env`"));
        }
        let protocol = match r
            .string(
                r.req(m, "model", "protocol", "\"anthropic\" or \"openai\"")?,
                "model.protocol",
                "\"anthropic\" or \"openai\"",
            )?
            .as_str()
        {
            "anthropic" => Protocol::Anthropic,
            "openai" => Protocol::Openai,
            other => {
                return Err(r.err(
                    "model.protocol",
                    format!("\"anthropic\" or \"openai\", found {other:?}"),
                ))
            }
        };
        let base_url = r.string(
            r.req(m, "model", "base_url", "the endpoint's base URL")?,
            "model.base_url",
            "an http(s) URL",
        )?;
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(r.err(
                "model.base_url",
                format!("an http:// or https:// URL, found {base_url:?}"),
            ));
        }
        let api_key_env = match m.get("api_key_env") {
            Some(v) => {
                let s = r.string(
                    v,
                    "model.api_key_env",
                    "the NAME of an environment variable",
                )?;
                if !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err(r.err(
                        "model.api_key_env",
                        "an environment variable NAME (letters, digits, '_'), not a key",
                    ));
                }
                Some(s)
            }
            None => None,
        };
        let check_env_pass = r.check_env_pass(&root, api_key_env.as_deref())?;
        let mut predicate = predicate;
        if let Predicate::Command(c) = &mut predicate {
            c.env.pass = check_env_pass.clone();
        }
        for c in checks.values_mut() {
            c.env.pass = check_env_pass.clone();
        }
        let executor = r.string(
            r.req(m, "model", "executor", "the executor model name")?,
            "model.executor",
            "a model name",
        )?;
        let planner = match m.get("planner") {
            Some(v) => r.string(v, "model.planner", "a model name")?,
            None => executor.clone(),
        };
        let judge = match m.get("judge") {
            Some(v) => r.string(v, "model.judge", "a model name")?,
            None => executor.clone(),
        };
        let max_tokens = match m.get("max_tokens") {
            Some(v) => r.uint(
                v,
                "model.max_tokens",
                1,
                1_000_000,
                "max output tokens per call",
            )? as u32,
            None => 4096,
        };
        let request_timeout_s = match m.get("request_timeout_s") {
            Some(v) => r.uint(v, "model.request_timeout_s", 1, 3600, "seconds")?,
            None => 120,
        };
        let http_attempts = match m.get("http_attempts") {
            Some(v) => r.uint(
                v,
                "model.http_attempts",
                1,
                HTTP_ATTEMPTS_MAX as u64,
                "attempts per call",
            )? as u32,
            None => 5,
        };
        let temperature = match m.get("temperature") {
            Some(v) => {
                let t = r.number(v, "model.temperature", "a temperature from 0 to 2")?;
                if !(0.0..=2.0).contains(&t) {
                    return Err(r.err("model.temperature", "a temperature from 0 to 2"));
                }
                Some(t)
            }
            None => None,
        };
        let seed = match m.get("seed") {
            Some(v) => {
                if protocol == Protocol::Anthropic {
                    return Err(r.err(
                        "model.seed",
                        "no seed with protocol \"anthropic\" (the Messages API has none); remove it",
                    ));
                }
                Some(r.uint(v, "model.seed", 0, i64::MAX as u64, "a sampling seed")?)
            }
            None => None,
        };

        let structured_output = match m.get("structured_output") {
            None => crate::model::StructuredOutput::JsonSchema,
            Some(v) => match r
                .string(v, "model.structured_output", "\"json_schema\" or \"json_object\"")?
                .as_str()
            {
                "json_schema" => crate::model::StructuredOutput::JsonSchema,
                "json_object" if protocol == Protocol::Openai => {
                    crate::model::StructuredOutput::JsonObject
                }
                "json_object" => {
                    return Err(r.err(
                        "model.structured_output",
                        "\"json_schema\" with protocol \"anthropic\" (json_object is an OpenAI-compatible server's form)",
                    ))
                }
                _ => {
                    return Err(r.err(
                        "model.structured_output",
                        "\"json_schema\" (OpenAI's response_format) or \"json_object\" (llama-cpp-python's: {\"type\": \"json_object\", \"schema\": ...})",
                    ))
                }
            },
        };

        let pv = r.req(&root, "", "prices", "a [prices.\"<model>\"] table per model with input_usd_per_mtok and output_usd_per_mtok")?;
        let mut prices = PriceTable::new();
        for (name, pt) in r.table(pv, "prices")? {
            let f = format!("prices.{name}");
            let t = r.table(pt, &f)?;
            r.known(t, &f, &["input_usd_per_mtok", "output_usd_per_mtok"])?;
            let inp = r.number(
                r.req(t, &f, "input_usd_per_mtok", "$/MTok input")?,
                &join(&f, "input_usd_per_mtok"),
                "a non-negative $/MTok",
            )?;
            let out = r.number(
                r.req(t, &f, "output_usd_per_mtok", "$/MTok output")?,
                &join(&f, "output_usd_per_mtok"),
                "a non-negative $/MTok",
            )?;
            if inp < 0.0 || out < 0.0 {
                return Err(r.err(&f, "non-negative prices"));
            }
            prices.insert(
                name.clone(),
                Price {
                    input_usd_per_mtok: inp,
                    output_usd_per_mtok: out,
                },
            );
        }
        for (role, model) in [
            ("planner", &planner),
            ("executor", &executor),
            ("judge", &judge),
        ] {
            if !prices.contains_key(model) {
                return Err(r.err(&format!("prices.{model}"), format!("a price for the {role} model {model:?} (every model the run calls must be priced, or the ledger cannot be a control)")));
            }
        }

        let empty = toml::Table::new();
        let lt = match root.get("loop") {
            Some(v) => r.table(v, "loop")?,
            None => &empty,
        };
        r.known(
            lt,
            "loop",
            &[
                "loop_cap",
                "retries_per_task",
                "max_replans",
                "no_progress_k",
                "min_pass_rate",
                "pass_rate_min_tasks",
            ],
        )?;
        let loop_cap = match lt.get("loop_cap") {
            Some(v) => r.uint(
                v,
                "loop.loop_cap",
                1,
                LOOP_CAP_MAX as u64,
                "model calls per task",
            )? as u32,
            None => DEFAULT_LOOP_CAP,
        };
        let retries_per_task = match lt.get("retries_per_task") {
            Some(v) => r.uint(v, "loop.retries_per_task", 0, RETRIES_MAX as u64, "retries")? as u32,
            None => 1,
        };
        let max_replans = match lt.get("max_replans") {
            Some(v) => r.uint(v, "loop.max_replans", 0, REPLANS_MAX as u64, "replans")? as u32,
            None => 3,
        };
        let no_progress_k = match lt.get("no_progress_k") {
            Some(v) => r.uint(v, "loop.no_progress_k", 1, 1000, "tasks")? as u32,
            None => DEFAULT_NO_PROGRESS_K,
        };
        let min_pass_rate = match lt.get("min_pass_rate") {
            Some(v) => r.fraction(v, "loop.min_pass_rate")?,
            None => DEFAULT_MIN_PASS_RATE,
        };
        let pass_rate_min_tasks = match lt.get("pass_rate_min_tasks") {
            Some(v) => r.uint(
                v,
                "loop.pass_rate_min_tasks",
                1,
                100_000,
                "finished tasks before the pass-rate guard applies",
            )?,
            None => DEFAULT_PASS_RATE_MIN_TASKS,
        };

        let dt = match root.get("drift") {
            Some(v) => r.table(v, "drift")?,
            None => &empty,
        };
        r.known(dt, "drift", &["every_tasks", "prune_above", "halt_above"])?;
        let drift_every_tasks = match dt.get("every_tasks") {
            Some(v) => r.uint(
                v,
                "drift.every_tasks",
                1,
                1000,
                "tasks between drift checks",
            )?,
            None => DEFAULT_DRIFT_EVERY,
        };
        let drift_prune_above = match dt.get("prune_above") {
            Some(v) => r.fraction(v, "drift.prune_above")?,
            None => DEFAULT_PRUNE_ABOVE,
        };
        let drift_halt_above = match dt.get("halt_above") {
            Some(v) => r.fraction(v, "drift.halt_above")?,
            None => DEFAULT_HALT_ABOVE,
        };
        if drift_prune_above > drift_halt_above {
            return Err(r.err("drift.prune_above", format!("a prune band at or below the halt band ({drift_halt_above}), found {drift_prune_above}")));
        }

        let workspace = r.path(
            r.req(
                &root,
                "",
                "workspace",
                "the workspace directory the tools act in",
            )?,
            "workspace",
        )?;
        if !workspace.is_dir() {
            return Err(r.err(
                "workspace",
                format!("an existing directory, {} is not", workspace.display()),
            ));
        }
        let outbox = match root.get("outbox") {
            Some(v) => Some(r.path(v, "outbox")?),
            None => None,
        };

        let tt = match root.get("tools") {
            Some(v) => r.table(v, "tools")?,
            None => &empty,
        };
        r.known(tt, "tools", &["allow"])?;
        let tools_allowed = match tt.get("allow") {
            Some(v) => {
                let arr = v
                    .as_array()
                    .ok_or_else(|| r.err("tools.allow", "an array of tool names"))?;
                let mut out = vec![];
                for (i, a) in arr.iter().enumerate() {
                    out.push(r.string(a, &format!("tools.allow[{i}]"), "a tool name")?);
                }
                crate::tools::validate_allowlist(&out).map_err(|e| r.err("tools.allow", e))?;
                out
            }
            None => crate::tools::ALL_TOOL_NAMES
                .iter()
                .map(|s| s.to_string())
                .collect(),
        };

        let at = match root.get("alerts") {
            Some(v) => r.table(v, "alerts")?,
            None => &empty,
        };
        r.known(at, "alerts", &["file", "webhook_url"])?;
        let alerts = AlertSpec {
            file: match at.get("file") {
                Some(v) => Some(r.path(v, "alerts.file")?),
                None => None,
            },
            webhook_url: match at.get("webhook_url") {
                Some(v) => {
                    let u = r.string(v, "alerts.webhook_url", "an http(s) URL")?;
                    if !(u.starts_with("http://") || u.starts_with("https://")) {
                        return Err(r.err(
                            "alerts.webhook_url",
                            format!("an http:// or https:// URL, found {u:?}"),
                        ));
                    }
                    Some(u)
                }
                None => None,
            },
        };

        let spec = RunSpec {
            path: dir.join(Path::new(file).file_name().unwrap_or_default()),
            goal,
            predicate,
            hard_cap_usd,
            wall_clock_limit_s,
            task_budget_tokens,
            model: ModelSpec {
                protocol,
                base_url,
                api_key_env,
                planner,
                executor,
                judge,
                max_tokens,
                request_timeout_s,
                http_attempts,
                temperature,
                seed,
                structured_output,
            },
            prices,
            loop_cap,
            retries_per_task,
            max_replans,
            no_progress_k,
            min_pass_rate,
            pass_rate_min_tasks,
            drift_every_tasks,
            drift_prune_above,
            drift_halt_above,
            workspace,
            outbox,
            tools_allowed,
            checks,
            alerts,
        };
        spec.check_reach(&r)?;
        Ok(spec)
    }

    /// Nothing a tool can reach may hold the predicate, the checks, the spec,
    /// the outbox or the alerts file: tools act inside the workspace only, so
    /// none of those may live inside it. Every path is compared after
    /// [`resolve_for_reach`] (every existing ancestor resolved, `..` after a
    /// missing component refused), so no spelling slips one inside.
    fn check_reach(&self, r: &Reader) -> Result<(), SpecError> {
        let ws = resolve_for_reach(&self.workspace)
            .map_err(|e| r.err("workspace", format!("a path that can be checked: {e}")))?;
        let inside = |field: &str, p: &Path| -> Result<bool, SpecError> {
            resolve_for_reach(p)
                .map(|c| c.starts_with(&ws))
                .map_err(|e| r.err(field, format!("a path that can be checked: {e}")))
        };
        if inside("workspace", &self.path)? {
            return Err(r.err(
                "workspace",
                "a directory that does not contain the spec file (a tool could rewrite it)",
            ));
        }
        let mut cmds: Vec<(String, &CheckSpec)> = self
            .checks
            .iter()
            .map(|(n, c)| (format!("checks.{n}.command"), c))
            .collect();
        if let Predicate::Command(c) = &self.predicate {
            cmds.push(("predicate.command".into(), c));
        }
        for (field, c) in cmds {
            for (i, a) in c.command.iter().enumerate() {
                let p = Path::new(a);
                let f = format!("{field}[{i}]");
                if p.is_absolute() && inside(&f, p)? {
                    return Err(r.err(&f, "a program or script outside the workspace (the agent's tools could rewrite anything inside it)"));
                }
            }
        }
        if let Some(o) = &self.outbox {
            if inside("outbox", o)? {
                return Err(r.err("outbox", "a path outside the workspace"));
            }
        }
        if let Some(f) = &self.alerts.file {
            if inside("alerts.file", f)? {
                return Err(r.err("alerts.file", "a path outside the workspace"));
            }
        }
        Ok(())
    }

    /// The state dir must also be out of the tools' reach, however it is
    /// spelled (relative, through a symlink, with `..`, with a trailing slash).
    pub fn check_state_dir(&self, state_dir: &Path) -> Result<(), SpecError> {
        let bad = |expected: String| SpecError {
            file: "--state-dir".into(),
            field: "state_dir".into(),
            expected,
        };
        let ws = resolve_for_reach(&self.workspace)
            .map_err(|e| bad(format!("a workspace path that can be checked: {e}")))?;
        let sd = resolve_for_reach(state_dir)
            .map_err(|e| bad(format!("a directory path that can be checked: {e}")))?;
        if sd.starts_with(&ws) {
            return Err(bad(format!("a directory outside the workspace {} (no tool may reach the checkpoints or the ledger)", ws.display())));
        }
        Ok(())
    }

    /// Point every check's (and the predicate's) TMPDIR at the run's own temp dir.
    pub fn set_check_tmpdir(&mut self, dir: &Path) {
        if let Predicate::Command(c) = &mut self.predicate {
            c.env.tmpdir = Some(dir.to_path_buf());
        }
        for c in self.checks.values_mut() {
            c.env.tmpdir = Some(dir.to_path_buf());
        }
    }

    pub fn model_for(&self, role: crate::model::types::CallRole) -> &str {
        use crate::model::types::CallRole::*;
        match role {
            Plan | Replan => &self.model.planner,
            Execute => &self.model.executor,
            Judge => &self.model.judge,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
goal = "Reduce p95 latency on /api/search to under 200ms."
workspace = "ws"
[predicate]
command = ["python3", "checks/p95.py"]
[budget]
hard_cap_usd = 28.0
wall_clock_limit_s = 28800
task_budget_tokens = 74700
[model]
protocol = "anthropic"
base_url = "https://api.anthropic.com"
api_key_env = "ANTHROPIC_API_KEY"
executor = "opus"
[prices.opus]
input_usd_per_mtok = 5.0
output_usd_per_mtok = 25.0
"#;

    fn dir() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("ws")).unwrap();
        std::fs::create_dir_all(d.path().join("checks")).unwrap();
        std::fs::write(d.path().join("checks/p95.py"), "print(410)\n").unwrap();
        d
    }

    #[test]
    fn a_script_argument_next_to_the_spec_is_resolved_there() {
        let d = dir();
        let s = RunSpec::parse(BASE, "run.toml", d.path()).unwrap();
        let Predicate::Command(c) = &s.predicate else {
            panic!()
        };
        assert_eq!(
            c.command[1],
            d.path().join("checks/p95.py").to_string_lossy()
        );
    }

    #[test]
    fn an_interpreter_script_that_would_resolve_in_the_workspace_is_refused() {
        let d = dir();
        let e = RunSpec::parse(
            &BASE.replace("checks/p95.py", "checks/missing.py"),
            "run.toml",
            d.path(),
        )
        .unwrap_err();
        assert_eq!(e.field, "predicate.command[1]");
        assert!(e.expected.contains("workspace"), "{e}");
        // An inline program from the spec itself is fine.
        let inline = BASE.replace(
            r#"["python3", "checks/p95.py"]"#,
            r#"["sh", "-c", "test -f db/0042.sql"]"#,
        );
        assert!(RunSpec::parse(&inline, "run.toml", d.path()).is_ok());
    }

    #[test]
    fn check_env_passes_plain_names_and_refuses_secret_ones() {
        let d = dir();
        let with = |pass: &str| {
            format!("{BASE}\n[checks.tests]\ncommand = [\"true\"]\n\n[check_env]\npass = {pass}\n")
        };
        let s = RunSpec::parse(
            &with(r#"["PGHOST", "JAVA_HOME", "PGHOST"]"#),
            "run.toml",
            d.path(),
        )
        .unwrap();
        let Predicate::Command(p) = &s.predicate else {
            panic!()
        };
        assert_eq!(p.env.pass, vec!["PGHOST", "JAVA_HOME"]);
        assert_eq!(s.checks["tests"].env.pass, vec!["PGHOST", "JAVA_HOME"]);
        for (pass, field) in [
            (r#"["PGHOST", "ANTHROPIC_API_KEY"]"#, "check_env.pass[1]"),
            (r#"["OPENAI_API_KEY"]"#, "check_env.pass[0]"),
            (r#"["GITHUB_TOKEN"]"#, "check_env.pass[0]"),
            (r#"["AWS_SECRET_ACCESS_KEY"]"#, "check_env.pass[0]"),
            (r#"["DB_PASSWORD"]"#, "check_env.pass[0]"),
            (r#"["STRIPE_KEY"]"#, "check_env.pass[0]"),
            (r#"["TMPDIR"]"#, "check_env.pass[0]"),
            (r#"["NOT A NAME"]"#, "check_env.pass[0]"),
            (r#""PGHOST""#, "check_env.pass"),
        ] {
            let e = RunSpec::parse(&with(pass), "run.toml", d.path()).unwrap_err();
            assert_eq!(
                (e.file.as_str(), e.field.as_str()),
                ("run.toml", field),
                "{pass}: {e}"
            );
        }
        // The model key's own variable is refused whatever it is called.
        let own = with(r#"["MYVAR"]"#).replace(
            "api_key_env = \"ANTHROPIC_API_KEY\"",
            "api_key_env = \"MYVAR\"",
        );
        let e = RunSpec::parse(&own, "run.toml", d.path()).unwrap_err();
        assert_eq!(e.field, "check_env.pass[0]", "{e}");
        let e = RunSpec::parse(
            &format!("{BASE}\n[check_env]\nbogus = 1\n"),
            "run.toml",
            d.path(),
        )
        .unwrap_err();
        assert_eq!(e.field, "check_env.bogus");
    }

    /// Every spelling of a path that lands inside the workspace, and some
    /// that do not.
    fn spellings(d: &Path) -> (Vec<String>, Vec<String>) {
        let ws = d.join("ws");
        std::os::unix::fs::symlink(&ws, d.join("wslink")).unwrap();
        std::os::unix::fs::symlink(ws.join("not-yet"), d.join("dangling")).unwrap();
        std::fs::create_dir_all(d.join("out")).unwrap();
        // The same path relative to the current directory (the harness's).
        let cwd = std::env::current_dir().unwrap();
        let up = "../".repeat(cwd.components().count() - 1);
        let rel = |p: &Path| format!("{up}{}", p.strip_prefix("/").unwrap().display());
        let inside = vec![
            format!("{}/a/b", d.join("wslink").display()),
            format!("{}/nonexistent/../ws/x", d.display()),
            format!("{}/out/missing/../../ws/x", d.display()),
            rel(&ws.join("st")),
            format!("{}/", ws.join("st").display()),
            format!("{}/", d.join("wslink").display()),
            format!("{}/./st//deeper/", ws.display()),
            ws.display().to_string(),
            format!("{}/x", d.join("dangling").display()),
            format!("{}/out/../ws/st", d.display()),
        ];
        let outside = vec![
            d.join("out/st").display().to_string(),
            format!("{}/nonexistent/deeper", d.display()),
            format!("{}/ws/../out/st", d.display()),
            format!("{}/", d.join("out").display()),
            rel(&d.join("out/rel")),
        ];
        (inside, outside)
    }

    #[test]
    fn no_spelling_puts_harness_state_inside_the_workspace() {
        let d = dir();
        let dp = std::fs::canonicalize(d.path()).unwrap();
        let (inside, outside) = spellings(&dp);
        let spec = RunSpec::parse(BASE, "run.toml", &dp).unwrap();
        for p in &inside {
            let e = spec.check_state_dir(Path::new(p)).unwrap_err();
            assert_eq!(
                (e.file.as_str(), e.field.as_str()),
                ("--state-dir", "state_dir"),
                "{p}"
            );
        }
        for p in &outside {
            assert!(spec.check_state_dir(Path::new(p)).is_ok(), "{p}");
        }
        let with = |key: &str, v: &str| {
            let t = if key == "outbox" {
                BASE.replace(
                    "workspace = \"ws\"\n",
                    &format!("workspace = \"ws\"\noutbox = {v:?}\n"),
                )
            } else {
                format!("{BASE}\n[alerts]\nfile = {v:?}\n")
            };
            RunSpec::parse(&t, "run.toml", &dp)
        };
        for (key, field) in [("outbox", "outbox"), ("alerts", "alerts.file")] {
            for p in &inside {
                let e = with(key, p).unwrap_err();
                assert_eq!(e.field, field, "{key} {p}: {e}");
            }
            for p in &outside {
                assert!(with(key, p).is_ok(), "{key} {p}");
            }
        }
        // A check script reached through a link into the workspace.
        std::fs::write(dp.join("ws/evil.sh"), "#!/bin/sh\n").unwrap();
        let t = format!(
            "{BASE}\n[checks.t]\ncommand = [{:?}]\n",
            dp.join("wslink/evil.sh").display().to_string()
        );
        let e = RunSpec::parse(&t, "run.toml", &dp).unwrap_err();
        assert_eq!(e.field, "checks.t.command[0]", "{e}");
        // The spec file itself inside the workspace, through the link.
        let t = BASE
            .replace(
                "workspace = \"ws\"",
                &format!("workspace = {:?}", dp.join("ws").display().to_string()),
            )
            .replace(r#"["python3", "checks/p95.py"]"#, r#"["true"]"#);
        assert!(RunSpec::parse(&t, "run.toml", &dp).is_ok());
        let e = RunSpec::parse(&t, "run.toml", &dp.join("wslink")).unwrap_err();
        assert_eq!(e.field, "workspace", "{e}");
        assert!(e.expected.contains("spec file"), "{e}");
    }

    #[test]
    fn temperature_and_seed_are_read_and_checked() {
        let d = dir();
        let s = RunSpec::parse(BASE, "run.toml", d.path()).unwrap();
        assert_eq!((s.model.temperature, s.model.seed), (None, None));
        let with_t = BASE.replace("[model]\n", "[model]\ntemperature = 0.8\n");
        assert_ne!(with_t, BASE, "the fixture has a [model] table");
        let s = RunSpec::parse(&with_t, "run.toml", d.path()).unwrap();
        assert_eq!(s.model.temperature, Some(0.8));
        let e = RunSpec::parse(
            &BASE.replace("[model]\n", "[model]\ntemperature = 3\n"),
            "run.toml",
            d.path(),
        )
        .unwrap_err();
        assert_eq!(e.field, "model.temperature");
        // The fixture speaks Anthropic, whose API has no seed.
        let e = RunSpec::parse(
            &BASE.replace("[model]\n", "[model]\nseed = 7\n"),
            "run.toml",
            d.path(),
        )
        .unwrap_err();
        assert_eq!(e.field, "model.seed");
        let openai = BASE
            .replace("protocol = \"anthropic\"", "protocol = \"openai\"")
            .replace("[model]\n", "[model]\nseed = 7\n");
        let s = RunSpec::parse(&openai, "run.toml", d.path()).unwrap();
        assert_eq!(s.model.seed, Some(7));
    }

    #[test]
    fn errors_name_the_field_and_what_was_expected() {
        let d = dir();
        let cases = [
            (
                BASE.replace("hard_cap_usd = 28.0", "hard_cap_usd = -1"),
                "budget.hard_cap_usd",
            ),
            (BASE.replace("executor = \"opus\"", ""), "model.executor"),
            (
                BASE.replace("protocol = \"anthropic\"", "protocol = \"gemini\""),
                "model.protocol",
            ),
            (
                BASE.replace("api_key_env = \"ANTHROPIC_API_KEY\"", "api_key = \"k\""),
                "model.api_key",
            ),
            (format!("{BASE}\n[loop]\nloop_cap = 500\n"), "loop.loop_cap"),
            (
                format!("{BASE}\n[drift]\nprune_above = 0.6\n"),
                "drift.prune_above",
            ),
            (format!("bogus = 1\n{BASE}"), "bogus"),
            (format!("{BASE}\nbogus = 1\n"), "prices.opus.bogus"),
            (
                BASE.replace("[prices.opus]", "[prices.other]"),
                "prices.opus",
            ),
        ];
        for (text, field) in cases {
            let e = RunSpec::parse(&text, "run.toml", d.path()).unwrap_err();
            assert_eq!(e.field, field, "{e}");
            assert_eq!(e.file, "run.toml");
        }
        let prose = BASE.replace(
            "[predicate]\ncommand = [\"python3\", \"checks/p95.py\"]",
            "predicate = \"it feels fast\"",
        );
        let e = RunSpec::parse(&prose, "run.toml", d.path()).unwrap_err();
        assert!(e.expected.contains("not eligible for autonomy"), "{e}");
    }
}
