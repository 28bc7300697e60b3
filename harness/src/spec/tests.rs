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

/// The three mistakes serde finds (an unknown key, a wrong type, a missing
/// key), each read as file, dotted field path and what was expected, in
/// the words the hand-walked loader used.
#[test]
fn unknown_wrong_type_and_missing_fields_read_as_file_field_expected() {
    let d = dir();
    let said = |text: &str| {
        RunSpec::parse(text, "run.toml", d.path())
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        said(&BASE.replace("[budget]\n", "[budget]\nhard_cap = 1\n")),
        "run.toml: field `budget.hard_cap`: expected no such field; known fields here: hard_cap_usd, wall_clock_limit_s, task_budget_tokens"
    );
    assert_eq!(
        said(&format!("{BASE}\n[checks.t]\ncommand = [\"true\", 3]\n")),
        "run.toml: field `checks.t.command[1]`: expected a string"
    );
    assert_eq!(
        said(&BASE.replace("task_budget_tokens = 74700", "task_budget_tokens = \"lots\"")),
        "run.toml: field `budget.task_budget_tokens`: expected tokens (an integer between 1 and 100000000), found string"
    );
    assert_eq!(
        // Its fields in order, which a serde-derived struct alone accepts.
        said(&format!(
            "budget = [28.0, 28800, 74700]\n{}",
            BASE.replace("[budget]\nhard_cap_usd = 28.0\nwall_clock_limit_s = 28800\ntask_budget_tokens = 74700\n", "")
        )),
        "run.toml: field `budget`: expected a table, found array"
    );
    assert_eq!(
        said(&BASE.replace("input_usd_per_mtok = 5.0\n", "")),
        "run.toml: field `prices.opus.input_usd_per_mtok`: expected $/MTok input (the field is missing)"
    );
    assert_eq!(
        said(&BASE.replace(
            "goal = \"Reduce p95 latency on /api/search to under 200ms.\"\n",
            ""
        )),
        "run.toml: field `goal`: expected the goal in plain English (the field is missing)"
    );
}

#[test]
fn memory_is_off_when_absent_and_range_checked_when_present() {
    let d = dir();
    assert_eq!(
        RunSpec::parse(BASE, "run.toml", d.path()).unwrap().memory,
        None
    );
    let with = format!("{BASE}[memory]\ncompact_above_tokens = 4000\n");
    let m = RunSpec::parse(&with, "run.toml", d.path())
        .unwrap()
        .memory
        .unwrap();
    assert_eq!(m.compact_above_tokens, 4000);
    assert_eq!(m.compact_max_tokens, DEFAULT_COMPACT_MAX_TOKENS);
    assert_eq!(m.compact_every_tasks_min, DEFAULT_COMPACT_EVERY_TASKS_MIN);
    assert!(!m.lessons, "lessons are off unless the spec says so");
    let on = format!("{BASE}[memory]\nlessons = true\n");
    assert!(
        RunSpec::parse(&on, "run.toml", d.path())
            .unwrap()
            .memory
            .unwrap()
            .lessons
    );
    let e = RunSpec::parse(
        &format!("{BASE}[memory]\nlessons = \"yes\"\n"),
        "run.toml",
        d.path(),
    )
    .unwrap_err();
    assert_eq!(e.field, "memory.lessons", "{e}");
    assert!(e.expected.contains("true or false"), "{e}");
    for (field, line, expect) in [
        (
            "memory.compact_above_tokens",
            "compact_above_tokens = 0",
            "history tokens (estimated as bytes / 4) above which it is compacted between 1 and 10000000, found 0",
        ),
        (
            "memory.compact_max_tokens",
            "compact_max_tokens = -5",
            "max output tokens of a compaction call between 1 and 100000, found -5",
        ),
        (
            "memory.compact_every_tasks_min",
            "compact_every_tasks_min = 0",
            "tasks between compactions, at least between 1 and 1000, found 0",
        ),
    ] {
        let e = RunSpec::parse(&format!("{BASE}[memory]\n{line}\n"), "run.toml", d.path())
            .unwrap_err();
        assert_eq!((e.field.as_str(), e.expected.as_str()), (field, expect), "{e}");
    }
    let e = RunSpec::parse(
        &format!("{BASE}[memory]\ncompact_above_bytes = 9\n"),
        "run.toml",
        d.path(),
    )
    .unwrap_err();
    assert_eq!(e.field, "memory.compact_above_bytes", "{e}");
    assert!(e.expected.contains("no such field"), "{e}");
    let e = RunSpec::parse(
        &format!("{BASE}[memory]\ncompact_max_tokens = \"big\"\n"),
        "run.toml",
        d.path(),
    )
    .unwrap_err();
    assert!(e.expected.contains("found string"), "{e}");
}

#[test]
fn run_command_is_off_by_default_and_needs_its_programs() {
    let d = dir();
    // No [tools] allow: the six tools of before, no coding tools.
    let s = RunSpec::parse(BASE, "run.toml", d.path()).unwrap();
    assert_eq!(s.tools_allowed, crate::tools::DEFAULT_TOOL_NAMES.to_vec());
    assert_eq!(s.run_command, None);
    let with = |tools: &str| format!("{BASE}\n{tools}\n");
    // Allowed with its programs: a policy with the default timeout and the
    // checks' environment names.
    let s = RunSpec::parse(
        &with("[tools]\nallow = [\"read_file\", \"run_command\"]\n[tools.run_command]\nprograms = [\"python3\", \"make\", \"python3\"]\n\n[check_env]\npass = [\"PGHOST\"]"),
        "run.toml",
        d.path(),
    )
    .unwrap();
    let p = s.run_command.unwrap();
    assert_eq!(p.programs, vec!["python3", "make"]);
    assert_eq!(p.timeout_s, crate::tools::RUN_COMMAND_DEFAULT_TIMEOUT_S);
    assert_eq!(p.env.pass, vec!["PGHOST"]);
    for (tools, field, says) in [
        (
            "[tools]\nallow = [\"run_command\"]",
            "tools.run_command",
            "the table is missing",
        ),
        (
            "[tools]\nallow = [\"run_command\"]\n[tools.run_command]\nprograms = []",
            "tools.run_command.programs",
            "at least one program",
        ),
        (
            "[tools]\nallow = [\"run_command\"]\n[tools.run_command]\ntimeout_s = 5",
            "tools.run_command.programs",
            "at least one program",
        ),
        (
            "[tools]\nallow = [\"read_file\"]\n[tools.run_command]\nprograms = [\"sh\"]",
            "tools.run_command",
            "unless tools.allow lists",
        ),
        (
            "[tools.run_command]\nprograms = [\"sh\"]",
            "tools.run_command",
            "unless tools.allow lists",
        ),
        (
            "[tools]\nallow = [\"run_command\"]\n[tools.run_command]\nprograms = [\"/bin/sh\"]",
            "tools.run_command.programs[0]",
            "no '/'",
        ),
        (
            "[tools]\nallow = [\"run_command\"]\n[tools.run_command]\nprograms = [\"sh\", \"..\"]",
            "tools.run_command.programs[1]",
            "no '/'",
        ),
        (
            "[tools]\nallow = [\"run_command\"]\n[tools.run_command]\nprograms = [\"sh\"]\ntimeout_s = 0",
            "tools.run_command.timeout_s",
            "between 1 and 3600",
        ),
        (
            "[tools]\nallow = [\"run_command\"]\n[tools.run_command]\nprograms = [3]",
            "tools.run_command.programs[0]",
            "a program name",
        ),
        (
            "[tools]\nallow = [\"run_command\"]\n[tools.run_command]\nprograms = [\"sh\"]\nshell = true",
            "tools.run_command.shell",
            "known fields here: programs, timeout_s",
        ),
        (
            "[tools]\nallow = [\"run_shell\"]",
            "tools.allow",
            "valid tools are",
        ),
    ] {
        let e = RunSpec::parse(&with(tools), "run.toml", d.path()).unwrap_err();
        assert_eq!(e.field, field, "{tools}: {e}");
        assert!(e.expected.contains(says), "{tools}: {e}");
        assert_eq!(e.file, "run.toml");
    }
    // The timeout stays under the run's wall clock.
    let short = BASE.replace("wall_clock_limit_s = 28800", "wall_clock_limit_s = 60");
    let e = RunSpec::parse(
        &format!("{short}\n[tools]\nallow = [\"run_command\"]\n[tools.run_command]\nprograms = [\"sh\"]\ntimeout_s = 60\n"),
        "run.toml",
        d.path(),
    )
    .unwrap_err();
    assert_eq!(e.field, "tools.run_command.timeout_s");
    assert!(e.expected.contains("below the run's wall clock"), "{e}");
}

/// `[prompts] executor_extra` reaches the executor's system prompt after the
/// harness's own; empty, oversized or control-laden text is refused by field.
#[test]
fn an_executor_prompt_extra_is_appended_and_bounded() {
    let d = dir();
    let s = RunSpec::parse(BASE, "run.toml", d.path()).unwrap();
    assert_eq!(s.executor_prompt_extra, None);
    let with =
        format!("{BASE}[prompts]\nexecutor_extra = \"Be terse.\\nName every file you change.\"\n");
    let s = RunSpec::parse(&with, "run.toml", d.path()).unwrap();
    let extra = s.executor_prompt_extra.as_deref();
    assert_eq!(extra, Some("Be terse.\nName every file you change."));
    let req = crate::agent::execute_request(
        "opus",
        100,
        "execute/t1/a0/0".into(),
        vec![],
        vec![],
        10,
        None,
        extra,
    );
    assert!(
        req.system.starts_with(crate::agent::EXECUTE_SYSTEM),
        "{}",
        req.system
    );
    assert!(
        req.system
            .ends_with("\n\nBe terse.\nName every file you change."),
        "{}",
        req.system
    );
    let long = "x".repeat(PROMPT_EXTRA_MAX_CHARS + 1);
    for bad in ["\"\"", "\"  \"", "\"a\\u0007b\"", &format!("\"{long}\"")] {
        let e = RunSpec::parse(
            &format!("{BASE}[prompts]\nexecutor_extra = {bad}\n"),
            "run.toml",
            d.path(),
        )
        .unwrap_err();
        assert_eq!(e.field, "prompts.executor_extra", "{bad}: {e}");
    }
    let e = RunSpec::parse(
        &format!("{BASE}[prompts]\nplanner_extra = \"x\"\n"),
        "run.toml",
        d.path(),
    )
    .unwrap_err();
    assert!(e.field.contains("planner_extra"), "{e}");
}

/// A workspace in or under a system directory is refused, naming the field;
/// a temp dir (`/tmp`, `/dev/shm`) is fine; `[sandbox] memory_mb` reaches
/// every check and is range-checked.
#[test]
fn a_system_workspace_is_refused_and_memory_travels_with_every_check() {
    let d = dir();
    for sys in ["/etc", "/usr/share", "/var/lib", "/proc/self", "/"] {
        let text = BASE.replace("workspace = \"ws\"", &format!("workspace = {sys:?}"));
        let e = RunSpec::parse(&text, "run.toml", d.path()).unwrap_err();
        assert_eq!(e.field, "workspace", "{sys}: {e}");
        assert!(e.expected.contains("system directory"), "{sys}: {e}");
    }
    let s = RunSpec::parse(BASE, "run.toml", d.path()).unwrap();
    let Predicate::Command(c) = &s.predicate else {
        panic!()
    };
    assert_eq!(c.env.memory_mb, Some(crate::sandbox::DEFAULT_MEMORY_MB));
    let s = RunSpec::parse(
        &format!("{BASE}[sandbox]\nmemory_mb = 256\n"),
        "run.toml",
        d.path(),
    )
    .unwrap();
    let Predicate::Command(c) = &s.predicate else {
        panic!()
    };
    assert_eq!(c.env.memory_mb, Some(256));
    let e = RunSpec::parse(
        &format!("{BASE}[sandbox]\nmemory_mb = 1\n"),
        "run.toml",
        d.path(),
    )
    .unwrap_err();
    assert_eq!(e.field, "sandbox.memory_mb", "{e}");
}

/// A TOML syntax error names the file, the line and the column (where an
/// editor jumps), never a byte offset; one inside a key's value names the
/// key too.
#[test]
fn a_toml_syntax_error_names_the_file_line_and_column() {
    let d = dir();
    // Line 4 of BASE (after its leading newline) is `[predicate]`.
    let broken = BASE.replace("[predicate]\n", "[predicate\n");
    let e = RunSpec::parse(&broken, "suites/x/run.toml", d.path()).unwrap_err();
    assert_eq!(e.file, "suites/x/run.toml");
    assert_eq!(e.field, "(line 4, column 11)", "{e}");
    assert!(e.expected.starts_with("valid TOML: "), "{e}");
    assert!(!e.to_string().contains("byte"), "{e}");
    // An unclosed string in a value: the key, and where.
    let broken = BASE.replace("executor = \"opus\"", "executor = \"opus");
    let e = RunSpec::parse(&broken, "run.toml", d.path()).unwrap_err();
    assert_eq!(e.field, "model.executor", "{e}");
    assert!(e.expected.ends_with("(line 14, column 17)"), "{e}");
}

/// A negative price names its own field (not its table), quoting a model
/// name that is not a bare TOML key, with what was expected and found.
#[test]
fn a_negative_price_names_its_field() {
    let d = dir();
    let said = |text: String| {
        RunSpec::parse(&text, "run.toml", d.path())
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        said(BASE.replace("input_usd_per_mtok = 5.0", "input_usd_per_mtok = -1")),
        "run.toml: field `prices.opus.input_usd_per_mtok`: expected a number >= 0 ($/MTok input), found -1"
    );
    assert_eq!(
        said(BASE.replace("output_usd_per_mtok = 25.0", "output_usd_per_mtok = -0.5")),
        "run.toml: field `prices.opus.output_usd_per_mtok`: expected a number >= 0 ($/MTok output), found -0.5"
    );
    let dotted = BASE
        .replace("executor = \"opus\"", "executor = \"gpt-4.1\"")
        .replace("[prices.opus]", "[prices.\"gpt-4.1\"]")
        .replace("input_usd_per_mtok = 5.0", "input_usd_per_mtok = -2");
    assert_eq!(
        said(dotted),
        "run.toml: field `prices.\"gpt-4.1\".input_usd_per_mtok`: expected a number >= 0 ($/MTok input), found -2"
    );
}
