//! From [`RawSpec`] (shape already checked by serde) to [`RunSpec`]: every
//! value in its range, defaults filled in, paths resolved against the spec
//! file's directory, and the eligibility refusals (prose predicate, a key in
//! the spec, a secret passed to checks). Checked in the order of the file's
//! concepts, so of two mistakes the same one is reported as before.

use super::raw::*;
use super::{
    AlertSpec, MemorySpec, ModelSpec, Predicate, RunSpec, SpecError, CHECK_ENV_PASS_MAX,
    DEFAULT_COMPACT_ABOVE_TOKENS, DEFAULT_COMPACT_EVERY_TASKS_MIN, DEFAULT_COMPACT_MAX_TOKENS,
    DEFAULT_DRIFT_EVERY, DEFAULT_HALT_ABOVE, DEFAULT_LOOP_CAP, DEFAULT_MIN_PASS_RATE,
    DEFAULT_NO_PROGRESS_K, DEFAULT_PASS_RATE_MIN_TASKS, DEFAULT_PRUNE_ABOVE,
};
use crate::check::CheckSpec;
use crate::ledger::{Price, PriceTable};
use crate::model::types::Protocol;
use crate::model::{Sampling, StructuredOutput};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Directories no workspace may be, or lie inside: the system's own. The
/// model writes the workspace, and every check may write all of it.
/// `/var/tmp` and `/dev/shm` are temp dirs like `/tmp`, not the system's.
pub const SYSTEM_DIRS: [&str; 14] = [
    "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/dev",
    "/proc", "/sys", "/var", "/run",
];
const SYSTEM_DIR_EXCEPTIONS: [&str; 2] = ["/var/tmp", "/dev/shm"];

pub(super) struct Checker<'a> {
    pub file: &'a str,
    pub dir: &'a Path,
}

impl Checker<'_> {
    pub(super) fn err(&self, field: &str, expected: impl Into<String>) -> SpecError {
        SpecError {
            file: self.file.into(),
            field: field.into(),
            expected: expected.into(),
        }
    }
    fn text(&self, f: &Field, field: &str, s: &str) -> Result<String, SpecError> {
        if s.trim().is_empty() {
            return Err(self.err(field, format!("{}, found an empty string", f.what)));
        }
        Ok(s.to_string())
    }
    fn number(&self, f: &Field, field: &str, n: f64) -> Result<f64, SpecError> {
        if !n.is_finite() {
            return Err(self.err(field, format!("{}, found {n}", f.what)));
        }
        Ok(n)
    }
    /// A price: finite and not negative, named by its own field.
    fn price(&self, f: &Field, field: &str, n: f64) -> Result<f64, SpecError> {
        let n = self.number(f, field, n)?;
        if n < 0.0 {
            return Err(self.err(
                field,
                format!("a number >= 0 ({}), found {n}", f.missing.unwrap_or(f.what)),
            ));
        }
        Ok(n)
    }
    fn positive(&self, f: &Field, field: &str, n: f64) -> Result<f64, SpecError> {
        let n = self.number(f, field, n)?;
        if n <= 0.0 {
            return Err(self.err(field, format!("{}, found {n}", f.what)));
        }
        Ok(n)
    }
    fn int(&self, f: &Field, field: &str, i: i64) -> Result<u64, SpecError> {
        let (min, max) = f.range.unwrap_or((0, i64::MAX as u64));
        if i >= min as i64 && (i as u64) <= max {
            Ok(i as u64)
        } else {
            Err(self.err(
                field,
                format!("{} between {min} and {max}, found {i}", f.what),
            ))
        }
    }
    fn fraction(&self, field: &str, n: f64) -> Result<f64, SpecError> {
        let n = self.number(&FRACTION, field, n)?;
        if !(0.0..=1.0).contains(&n) {
            return Err(self.err(field, format!("{}, found {n}", FRACTION.what)));
        }
        Ok(n)
    }
    fn path(&self, field: &str, s: &str) -> Result<PathBuf, SpecError> {
        let p = PathBuf::from(self.text(&PATH, field, s)?);
        Ok(if p.is_absolute() { p } else { self.dir.join(p) })
    }
    fn argv(&self, field: &str, command: &[String]) -> Result<Vec<String>, SpecError> {
        if command.is_empty() {
            return Err(self.err(field, "a non-empty command array"));
        }
        let mut out = command.to_vec();
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
    fn check(
        &self,
        field: &str,
        command: &[String],
        timeout_s: Option<i64>,
    ) -> Result<CheckSpec, SpecError> {
        let command = self.argv(&format!("{field}.command"), command)?;
        let timeout_s = match timeout_s {
            Some(t) => self.int(&TIMEOUT, &format!("{field}.timeout_s"), t)?,
            None => 300,
        };
        Ok(CheckSpec {
            command,
            timeout_s,
            env: crate::check::CheckEnv::default(),
            network: false,
        })
    }
    /// `[check_env] pass = ["NAME", ...]`: harness-environment variables the
    /// predicate and every check receive, by name. A name that looks like a
    /// secret (`redact::looks_secret`), or is the model key's own variable, is
    /// refused: a check's output goes back to the model.
    fn check_env_pass(
        &self,
        pass: &[String],
        api_key_env: Option<&str>,
    ) -> Result<Vec<String>, SpecError> {
        if pass.len() > CHECK_ENV_PASS_MAX {
            return Err(self.err(
                "check_env.pass",
                format!("at most {CHECK_ENV_PASS_MAX} names, found {}", pass.len()),
            ));
        }
        let mut out = vec![];
        for (i, a) in pass.iter().enumerate() {
            let field = format!("check_env.pass[{i}]");
            let name = self.text(&ENV_NAME, &field, a)?;
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

    /// `[tools.run_command]`: present exactly when `tools.allow` lists
    /// run_command; its programs bare names (deny by default: nothing else
    /// runs), its timeout under the run's wall clock.
    fn run_command(
        &self,
        tools: &RawTools,
        allowed: &[String],
        wall_clock_limit_s: f64,
        check_env_pass: &[String],
    ) -> Result<Option<crate::tools::CommandPolicy>, SpecError> {
        let listed = allowed.iter().any(|t| t == "run_command");
        let table = tools.run_command.as_ref().map(|t| &t.0);
        let Some(t) = table else {
            if listed {
                return Err(self.err(
                    "tools.run_command",
                    "a [tools.run_command] table with `programs`, the programs run_command may run (deny by default), e.g. programs = [\"python3\"]: tools.allow lists run_command (the table is missing)",
                ));
            }
            return Ok(None);
        };
        if !listed {
            return Err(self.err(
                "tools.run_command",
                "no [tools.run_command] table unless tools.allow lists \"run_command\" (it configures a tool the run does not allow)",
            ));
        }
        let programs = self.programs(t.programs.as_deref().unwrap_or(&[]))?;
        let timeout_s = self.int_or(
            &TIMEOUT,
            "tools.run_command.timeout_s",
            t.timeout_s,
            crate::tools::RUN_COMMAND_DEFAULT_TIMEOUT_S,
        )?;
        if timeout_s as f64 >= wall_clock_limit_s {
            return Err(self.err(
                "tools.run_command.timeout_s",
                format!("a timeout below the run's wall clock (budget.wall_clock_limit_s = {wall_clock_limit_s}), found {timeout_s}"),
            ));
        }
        Ok(Some(crate::tools::CommandPolicy {
            programs,
            timeout_s,
            env: crate::check::CheckEnv {
                pass: check_env_pass.to_vec(),
                tmpdir: None,
                memory_mb: None,
            },
        }))
    }

    /// `tools.run_command.programs`: at least one and a bounded number of
    /// bare program names, since each is looked up on PATH and a '/' would
    /// let the spec name a workspace file the agent can write.
    fn programs(&self, programs: &[String]) -> Result<Vec<String>, SpecError> {
        if programs.is_empty() {
            return Err(self.err(
                "tools.run_command.programs",
                "at least one program run_command may run (deny by default), e.g. programs = [\"python3\"]",
            ));
        }
        if programs.len() > super::RUN_COMMAND_PROGRAMS_MAX {
            return Err(self.err(
                "tools.run_command.programs",
                format!(
                    "at most {} programs, found {}",
                    super::RUN_COMMAND_PROGRAMS_MAX,
                    programs.len()
                ),
            ));
        }
        let mut out: Vec<String> = vec![];
        for (i, p) in programs.iter().enumerate() {
            let field = format!("tools.run_command.programs[{i}]");
            let name = self.text(&PROGRAM, &field, p)?;
            let ok = name.chars().count() <= super::PROGRAM_NAME_MAX_CHARS
                && name != "."
                && name != ".."
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c));
            if !ok {
                return Err(self.err(&field, format!("{}, found {name:?}", PROGRAM.what)));
            }
            if !out.contains(&name) {
                out.push(name);
            }
        }
        Ok(out)
    }

    /// An optional integer: checked against `f`'s range when present, the
    /// default when absent (most of the spec's knobs have one).
    fn int_or(
        &self,
        f: &Field,
        field: &str,
        v: Option<i64>,
        default: u64,
    ) -> Result<u64, SpecError> {
        match v {
            Some(v) => self.int(f, field, v),
            None => Ok(default),
        }
    }

    /// An optional fraction, the default when absent.
    fn fraction_or(&self, field: &str, v: Option<f64>, default: f64) -> Result<f64, SpecError> {
        match v {
            Some(v) => self.fraction(field, v),
            None => Ok(default),
        }
    }

    /// The whole spec, in the order of its concepts: goal, checks (the
    /// predicate may name one), predicate, budget, model, prices, loop,
    /// drift, workspace, tools, alerts. The order is the contract: of two
    /// mistakes, the same one is reported as before.
    pub(super) fn run_spec(&self, raw: RawSpec) -> Result<RunSpec, SpecError> {
        let goal = self.text(&GOAL, "goal", &raw.goal)?;
        let mut checks = self.checks(&raw.checks)?;
        let mut predicate = self.predicate(&raw.predicate.0, &checks)?;
        let budget = self.budget(&raw.budget.0)?;
        let endpoint = self.endpoint(&raw.model.0)?;
        let check_env_pass = match &raw.check_env.0.pass {
            Some(pass) => self.check_env_pass(pass, endpoint.api_key_env.as_deref())?,
            None => vec![],
        };
        give_check_env(&mut predicate, &mut checks, &check_env_pass);
        let model = self.model(&raw.model.0, endpoint)?;
        let prices = self.prices(&raw.prices, &model)?;
        let limits = self.loop_limits(&raw.loop_.0)?;
        let drift = self.drift(&raw.drift.0)?;
        let workspace = self.workspace(&raw.workspace)?;
        let outbox = match &raw.outbox {
            Some(v) => Some(self.path("outbox", v)?),
            None => None,
        };
        let tools_allowed = self.tools_allowed(raw.tools.0.allow.as_deref())?;
        let run_command = self.run_command(
            &raw.tools.0,
            &tools_allowed,
            budget.wall_clock_limit_s,
            &check_env_pass,
        )?;
        let alerts = self.alerts(&raw.alerts.0)?;
        let memory = match &raw.memory {
            None => None,
            Some(m) => Some(self.memory(&m.0)?),
        };
        let sandbox_min_level = self.sandbox_min_level(raw.sandbox.0.min_level.as_deref())?;
        let sandbox_memory_mb = self.int_or(
            &super::raw::MEMORY_MB,
            "sandbox.memory_mb",
            raw.sandbox.0.memory_mb,
            crate::sandbox::DEFAULT_MEMORY_MB,
        )?;
        let executor_prompt_extra = self.prompt_extra(raw.prompts.0.executor_extra.as_deref())?;
        let mut spec = RunSpec {
            path: self
                .dir
                .join(Path::new(self.file).file_name().unwrap_or_default()),
            goal,
            predicate,
            hard_cap_usd: budget.hard_cap_usd,
            wall_clock_limit_s: budget.wall_clock_limit_s,
            task_budget_tokens: budget.task_budget_tokens,
            model,
            prices,
            loop_cap: limits.loop_cap,
            retries_per_task: limits.retries_per_task,
            max_replans: limits.max_replans,
            no_progress_k: limits.no_progress_k,
            min_pass_rate: limits.min_pass_rate,
            pass_rate_min_tasks: limits.pass_rate_min_tasks,
            drift_every_tasks: drift.every_tasks,
            drift_prune_above: drift.prune_above,
            drift_halt_above: drift.halt_above,
            workspace,
            outbox,
            tools_allowed,
            run_command,
            checks,
            alerts,
            memory,
            sandbox_min_level,
            sandbox_memory_mb,
            executor_prompt_extra,
        };
        spec.set_check_memory_mb(sandbox_memory_mb);
        Ok(spec)
    }

    /// `[checks.<name>]`: named checks, validated before the predicate
    /// because the predicate may name one.
    fn checks(
        &self,
        raw: &BTreeMap<String, strict::Table<RawCheck>>,
    ) -> Result<BTreeMap<String, CheckSpec>, SpecError> {
        let mut checks = BTreeMap::new();
        for (name, c) in raw {
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(self.err(
                    &format!("checks.{name}"),
                    "a check name of letters, digits, '_' or '-'",
                ));
            }
            let mut check = self.check(&format!("checks.{name}"), &c.0.command, c.0.timeout_s)?;
            check.network = c.0.network.unwrap_or(false);
            checks.insert(name.clone(), check);
        }
        Ok(checks)
    }

    /// `[predicate]`: exactly one of a command or the name of a check.
    fn predicate(
        &self,
        p: &RawPredicate,
        checks: &BTreeMap<String, CheckSpec>,
    ) -> Result<Predicate, SpecError> {
        match (&p.command, &p.check) {
            (Some(_), Some(_)) => {
                Err(self.err("predicate", "either `command` or `check`, not both"))
            }
            (Some(command), None) => Ok(Predicate::Command(self.check(
                "predicate",
                command,
                p.timeout_s,
            )?)),
            (None, Some(c)) => {
                let name = self.text(&PREDICATE_CHECK, "predicate.check", c)?;
                if !checks.contains_key(&name) {
                    return Err(self.err(
                        "predicate.check",
                        format!(
                            "a check defined under [checks]; {name:?} is not (defined: {:?})",
                            checks.keys().collect::<Vec<_>>()
                        ),
                    ));
                }
                Ok(Predicate::Check(name))
            }
            (None, None) => Err(self.err(
                "predicate",
                "`command` (an array) or `check` (a name under [checks])",
            )),
        }
    }

    /// `[budget]`: the three limits every run must state.
    fn budget(&self, b: &RawBudget) -> Result<Budget, SpecError> {
        let hard_cap_usd = self.positive(&HARD_CAP, "budget.hard_cap_usd", b.hard_cap_usd)?;
        let wall_clock_limit_s = self.positive(
            &WALL_CLOCK,
            "budget.wall_clock_limit_s",
            b.wall_clock_limit_s,
        )?;
        let task_budget_tokens = self.int(
            &TASK_TOKENS,
            "budget.task_budget_tokens",
            b.task_budget_tokens,
        )?;
        Ok(Budget {
            hard_cap_usd,
            wall_clock_limit_s,
            task_budget_tokens,
        })
    }

    /// `[model]`'s connection half: no key in the file, a known protocol, an
    /// http(s) URL, the key's variable by NAME. Checked before `[check_env]`,
    /// which must not pass that variable on.
    fn endpoint(&self, m: &RawModel) -> Result<Endpoint, SpecError> {
        if m.api_key.is_some() {
            return Err(self.err("model.api_key", "no key in the spec: name the environment variable that holds it with `api_key_env`"));
        }
        let protocol = match self
            .text(&PROTOCOL, "model.protocol", &m.protocol)?
            .as_str()
        {
            "anthropic" => Protocol::Anthropic,
            "openai" => Protocol::Openai,
            other => {
                return Err(self.err(
                    "model.protocol",
                    format!("\"anthropic\" or \"openai\", found {other:?}"),
                ))
            }
        };
        let base_url = self.text(&BASE_URL, "model.base_url", &m.base_url)?;
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(self.err(
                "model.base_url",
                format!("an http:// or https:// URL, found {base_url:?}"),
            ));
        }
        let api_key_env = match &m.api_key_env {
            Some(v) => {
                let s = self.text(&API_KEY_ENV, "model.api_key_env", v)?;
                if !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err(self.err(
                        "model.api_key_env",
                        "an environment variable NAME (letters, digits, '_'), not a key",
                    ));
                }
                Some(s)
            }
            None => None,
        };
        Ok(Endpoint {
            protocol,
            base_url,
            api_key_env,
        })
    }

    /// `[model]`'s other half: the three roles' models (planner and judge
    /// default to the executor), the per-call limits and the sampling.
    fn model(&self, m: &RawModel, endpoint: Endpoint) -> Result<ModelSpec, SpecError> {
        let executor = self.text(&EXECUTOR, "model.executor", &m.executor)?;
        let planner = match &m.planner {
            Some(v) => self.text(&MODEL_NAME, "model.planner", v)?,
            None => executor.clone(),
        };
        let judge = match &m.judge {
            Some(v) => self.text(&MODEL_NAME, "model.judge", v)?,
            None => executor.clone(),
        };
        let max_tokens = self.int_or(&MAX_TOKENS, "model.max_tokens", m.max_tokens, 4096)? as u32;
        let request_timeout_s = self.int_or(
            &REQUEST_TIMEOUT,
            "model.request_timeout_s",
            m.request_timeout_s,
            120,
        )?;
        let http_attempts =
            self.int_or(&HTTP_ATTEMPTS, "model.http_attempts", m.http_attempts, 5)? as u32;
        let sampling = self.sampling(m, endpoint.protocol)?;
        Ok(ModelSpec {
            protocol: endpoint.protocol,
            base_url: endpoint.base_url,
            api_key_env: endpoint.api_key_env,
            planner,
            executor,
            judge,
            max_tokens,
            request_timeout_s,
            http_attempts,
            temperature: sampling.temperature,
            seed: sampling.seed,
            structured_output: sampling.structured_output,
        })
    }

    /// Temperature, seed and structured output: what each protocol accepts
    /// (Anthropic has no seed and no json_object form).
    fn sampling(&self, m: &RawModel, protocol: Protocol) -> Result<Sampling, SpecError> {
        let temperature = match m.temperature {
            Some(v) => {
                let t = self.number(&TEMPERATURE, "model.temperature", v)?;
                if !(0.0..=2.0).contains(&t) {
                    return Err(self.err("model.temperature", TEMPERATURE.what));
                }
                Some(t)
            }
            None => None,
        };
        let seed = match m.seed {
            Some(v) => {
                if protocol == Protocol::Anthropic {
                    return Err(self.err(
                        "model.seed",
                        "no seed with protocol \"anthropic\" (the Messages API has none); remove it",
                    ));
                }
                Some(self.int(&SEED, "model.seed", v)?)
            }
            None => None,
        };
        let structured_output = match &m.structured_output {
            None => StructuredOutput::JsonSchema,
            Some(v) => self.structured_output(v, protocol)?,
        };
        Ok(Sampling {
            temperature,
            seed,
            structured_output,
        })
    }

    /// `model.structured_output`: json_object only where an OpenAI-compatible
    /// server understands it.
    fn structured_output(
        &self,
        v: &str,
        protocol: Protocol,
    ) -> Result<StructuredOutput, SpecError> {
        match self
            .text(&STRUCTURED_OUTPUT, "model.structured_output", v)?
            .as_str()
        {
            "json_schema" => Ok(StructuredOutput::JsonSchema),
            "json_object" if protocol == Protocol::Openai => Ok(StructuredOutput::JsonObject),
            "json_object" => Err(self.err(
                "model.structured_output",
                "\"json_schema\" with protocol \"anthropic\" (json_object is an OpenAI-compatible server's form)",
            )),
            _ => Err(self.err(
                "model.structured_output",
                "\"json_schema\" (OpenAI's response_format) or \"json_object\" (llama-cpp-python's: {\"type\": \"json_object\", \"schema\": ...})",
            )),
        }
    }

    /// `[prices.<model>]`: non-negative, and one for every model the run
    /// calls, or the ledger cannot be a control.
    fn prices(
        &self,
        raw: &BTreeMap<String, strict::Table<RawPrice>>,
        model: &ModelSpec,
    ) -> Result<PriceTable, SpecError> {
        let mut prices = PriceTable::new();
        for (name, strict::Table(p)) in raw {
            let f = format!("prices.{}", toml_key(name));
            let inp = self.price(
                &PRICE_IN,
                &format!("{f}.input_usd_per_mtok"),
                p.input_usd_per_mtok,
            )?;
            let out = self.price(
                &PRICE_OUT,
                &format!("{f}.output_usd_per_mtok"),
                p.output_usd_per_mtok,
            )?;
            prices.insert(
                name.clone(),
                Price {
                    input_usd_per_mtok: inp,
                    output_usd_per_mtok: out,
                },
            );
        }
        for (role, model) in [
            ("planner", &model.planner),
            ("executor", &model.executor),
            ("judge", &model.judge),
        ] {
            if !prices.contains_key(model) {
                return Err(self.err(&format!("prices.{model}"), format!("a price for the {role} model {model:?} (every model the run calls must be priced, or the ledger cannot be a control)")));
            }
        }
        Ok(prices)
    }

    /// `[loop]`: the per-task and per-run limits, defaults filled in.
    fn loop_limits(&self, l: &RawLoop) -> Result<LoopLimits, SpecError> {
        Ok(LoopLimits {
            loop_cap: self.int_or(
                &LOOP_CAP,
                "loop.loop_cap",
                l.loop_cap,
                DEFAULT_LOOP_CAP as u64,
            )? as u32,
            retries_per_task: self.int_or(
                &RETRIES,
                "loop.retries_per_task",
                l.retries_per_task,
                1,
            )? as u32,
            max_replans: self.int_or(&REPLANS, "loop.max_replans", l.max_replans, 3)? as u32,
            no_progress_k: self.int_or(
                &NO_PROGRESS_K,
                "loop.no_progress_k",
                l.no_progress_k,
                DEFAULT_NO_PROGRESS_K as u64,
            )? as u32,
            min_pass_rate: self.fraction_or(
                "loop.min_pass_rate",
                l.min_pass_rate,
                DEFAULT_MIN_PASS_RATE,
            )?,
            pass_rate_min_tasks: self.int_or(
                &PASS_RATE_MIN_TASKS,
                "loop.pass_rate_min_tasks",
                l.pass_rate_min_tasks,
                DEFAULT_PASS_RATE_MIN_TASKS,
            )?,
        })
    }

    /// `[drift]`: how often to check, and a prune band at or below the halt band.
    fn drift(&self, d: &RawDrift) -> Result<Drift, SpecError> {
        let every_tasks = self.int_or(
            &DRIFT_EVERY,
            "drift.every_tasks",
            d.every_tasks,
            DEFAULT_DRIFT_EVERY,
        )?;
        let prune_above =
            self.fraction_or("drift.prune_above", d.prune_above, DEFAULT_PRUNE_ABOVE)?;
        let halt_above = self.fraction_or("drift.halt_above", d.halt_above, DEFAULT_HALT_ABOVE)?;
        if prune_above > halt_above {
            return Err(self.err(
                "drift.prune_above",
                format!(
                    "a prune band at or below the halt band ({halt_above}), found {prune_above}"
                ),
            ));
        }
        Ok(Drift {
            every_tasks,
            prune_above,
            halt_above,
        })
    }

    /// `workspace`: resolved against the spec's directory, and there; never
    /// a system directory or one inside one (the model writes there, and
    /// every check may write all of it).
    fn workspace(&self, raw: &str) -> Result<PathBuf, SpecError> {
        let workspace = self.path("workspace", raw)?;
        if !workspace.is_dir() {
            return Err(self.err(
                "workspace",
                format!("an existing directory, {} is not", workspace.display()),
            ));
        }
        let real = workspace
            .canonicalize()
            .unwrap_or_else(|_| workspace.clone());
        let exempt = SYSTEM_DIR_EXCEPTIONS
            .iter()
            .any(|d| real.starts_with(d) && real != Path::new(d));
        let system = SYSTEM_DIRS.iter().find(|d| real.starts_with(d));
        if let Some(sys) = system
            .filter(|_| !exempt)
            .or((real == Path::new("/")).then_some(&"/"))
        {
            return Err(self.err(
                "workspace",
                format!(
                    "a project directory, not the system directory {sys} or one inside it ({} is)",
                    real.display()
                ),
            ));
        }
        Ok(workspace)
    }

    /// `tools.allow`: the listed tools (checked by the tools module, which
    /// knows them), or the default set when absent.
    fn tools_allowed(&self, allow: Option<&[String]>) -> Result<Vec<String>, SpecError> {
        let Some(allow) = allow else {
            return Ok(crate::tools::DEFAULT_TOOL_NAMES
                .iter()
                .map(|s| s.to_string())
                .collect());
        };
        let mut out = vec![];
        for (i, a) in allow.iter().enumerate() {
            out.push(self.text(&TOOL_NAME, &format!("tools.allow[{i}]"), a)?);
        }
        crate::tools::validate_allowlist(&out).map_err(|e| self.err("tools.allow", e))?;
        Ok(out)
    }

    /// `[alerts]`: a file (resolved like every path) and an http(s) webhook.
    fn alerts(&self, a: &RawAlerts) -> Result<AlertSpec, SpecError> {
        let file = match &a.file {
            Some(v) => Some(self.path("alerts.file", v)?),
            None => None,
        };
        let webhook_url = match &a.webhook_url {
            Some(v) => {
                let u = self.text(&WEBHOOK_URL, "alerts.webhook_url", v)?;
                if !(u.starts_with("http://") || u.starts_with("https://")) {
                    return Err(self.err(
                        "alerts.webhook_url",
                        format!("an http:// or https:// URL, found {u:?}"),
                    ));
                }
                Some(u)
            }
            None => None,
        };
        Ok(AlertSpec { file, webhook_url })
    }

    /// `[memory]`, when the table is present: its bounds, defaults filled in.
    fn memory(&self, m: &RawMemory) -> Result<MemorySpec, SpecError> {
        Ok(MemorySpec {
            compact_above_tokens: self.int_or(
                &COMPACT_ABOVE,
                "memory.compact_above_tokens",
                m.compact_above_tokens,
                DEFAULT_COMPACT_ABOVE_TOKENS,
            )?,
            compact_max_tokens: self.int_or(
                &COMPACT_MAX_TOKENS,
                "memory.compact_max_tokens",
                m.compact_max_tokens,
                DEFAULT_COMPACT_MAX_TOKENS as u64,
            )? as u32,
            compact_every_tasks_min: self.int_or(
                &COMPACT_EVERY,
                "memory.compact_every_tasks_min",
                m.compact_every_tasks_min,
                DEFAULT_COMPACT_EVERY_TASKS_MIN,
            )?,
            lessons: m.lessons.unwrap_or(false),
        })
    }

    /// `[sandbox] min_level`: full unless the spec accepts less.
    fn sandbox_min_level(
        &self,
        min_level: Option<&str>,
    ) -> Result<crate::sandbox::Level, SpecError> {
        match min_level {
            None => Ok(crate::sandbox::Level::Full),
            Some(l) => crate::sandbox::Level::parse(l).ok_or_else(|| {
                self.err(
                    "sandbox.min_level",
                    format!("one of \"full\", \"landlock\" or \"none\", found {l:?}"),
                )
            }),
        }
    }

    /// `[prompts] executor_extra`: bounded printable text, since it goes
    /// into every executor prompt.
    fn prompt_extra(&self, extra: Option<&str>) -> Result<Option<String>, SpecError> {
        match extra {
            None => Ok(None),
            Some(t)
                if t.trim().is_empty()
                    || t.chars().count() > super::PROMPT_EXTRA_MAX_CHARS
                    || t.chars().any(|c| c.is_control() && c != '\n') =>
            {
                Err(self.err(
                    "prompts.executor_extra",
                    format!(
                        "text of 1 to {} characters (newlines allowed, no other control character), found {} characters",
                        super::PROMPT_EXTRA_MAX_CHARS,
                        t.chars().count()
                    ),
                ))
            }
            Some(t) => Ok(Some(t.to_string())),
        }
    }
}

/// Every check, and a command predicate, receive the `[check_env]` names:
/// the spec states them once for all.
fn give_check_env(
    predicate: &mut Predicate,
    checks: &mut BTreeMap<String, CheckSpec>,
    pass: &[String],
) {
    if let Predicate::Command(c) = predicate {
        c.env.pass = pass.to_vec();
    }
    for c in checks.values_mut() {
        c.env.pass = pass.to_vec();
    }
}

/// `[budget]`'s values, carried from their check to the [`RunSpec`].
struct Budget {
    hard_cap_usd: f64,
    wall_clock_limit_s: f64,
    task_budget_tokens: u64,
}

/// `[model]`'s connection values, checked before `[check_env]` needs the
/// key's variable name.
struct Endpoint {
    protocol: Protocol,
    base_url: String,
    api_key_env: Option<String>,
}

/// `[loop]`'s values, defaults filled in.
struct LoopLimits {
    loop_cap: u32,
    retries_per_task: u32,
    max_replans: u32,
    no_progress_k: u32,
    min_pass_rate: f64,
    pass_rate_min_tasks: u64,
}

/// `[drift]`'s values, defaults filled in.
struct Drift {
    every_tasks: u64,
    prune_above: f64,
    halt_above: f64,
}

/// A table key as TOML spells it in a dotted path: bare when it can be
/// (`opus`), else quoted (`"gpt-4.1"`, whose dot would read as a path step).
fn toml_key(k: &str) -> String {
    let bare = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        k.to_string()
    } else {
        format!("{k:?}")
    }
}
