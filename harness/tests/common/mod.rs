//! Test support: build a real temporary workspace, a run spec and a scripted
//! cassette, then run the real `harness` binary against its embedded replay
//! server over loopback HTTP and read what it wrote.
#![allow(dead_code)]

use harness::model::types::{Protocol, StopReason, Usage};
use harness::scenario::{Scenario, ScriptCall, ScriptRun, ScriptTool};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub const MODEL: &str = "claude-opus-5";

pub struct Case {
    pub root: tempfile::TempDir,
    pub name: String,
    pub files: Vec<(String, String)>,
    pub predicate: String,
    pub extra_toml: String,
    pub hard_cap_usd: f64,
    pub wall_clock_limit_s: f64,
    pub calls: Vec<ScriptCall>,
    pub checks: Vec<(String, String)>,
    pub env: Vec<(String, String)>,
    pub latency_scale: f64,
    pub git: bool,
    pub max_tokens: u32,
    pub faults: Option<String>,
    pub http_attempts: u32,
    /// The model's output price ($/MTok); input is $5.
    pub output_usd_per_mtok: f64,
}

pub fn case(name: &str) -> Case {
    Case {
        root: tempfile::tempdir().unwrap(),
        name: name.into(),
        files: vec![],
        // Default goal predicate: the index migration file exists with the index.
        predicate: r#"command = ["grep", "-q", "CREATE INDEX", "db/0042_search_index.sql"]"#.into(),
        extra_toml: String::new(),
        hard_cap_usd: 28.0,
        wall_clock_limit_s: 600.0,
        calls: vec![],
        checks: vec![],
        env: vec![],
        latency_scale: 0.0,
        git: false,
        max_tokens: 4096,
        faults: None,
        http_attempts: 4,
        output_usd_per_mtok: 25.0,
    }
}

pub fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
    }
}

pub fn text(key: &str, t: &str) -> ScriptCall {
    ScriptCall {
        key: key.into(),
        when_request_contains: None,
        plan: None,
        text: t.into(),
        tools: vec![],
        stop: None,
        usage: Some(usage(3500, 300)),
        latency_ms: None,
        faults_before: vec![],
    }
}

pub fn tool(key: &str, name: &str, input: Value) -> ScriptCall {
    ScriptCall {
        key: key.into(),
        when_request_contains: None,
        plan: None,
        text: String::new(),
        tools: vec![ScriptTool {
            name: name.into(),
            input,
        }],
        stop: None,
        usage: Some(usage(3500, 300)),
        latency_ms: None,
        faults_before: vec![],
    }
}

pub fn refusal(key: &str, t: &str) -> ScriptCall {
    ScriptCall {
        stop: Some(StopReason::Refusal),
        ..text(key, t)
    }
}

pub fn plan(key: &str, tasks: Value) -> ScriptCall {
    text(key, &json!({ "tasks": tasks }).to_string())
}

pub fn judge(key: &str, score: f64, off: &[&str]) -> ScriptCall {
    text(key, &json!({"reasoning": "judged against the original goal", "off_goal_task_ids": off, "drift_score": score}).to_string())
}

/// The common "write the index migration" task.
pub fn index_task(id: &str) -> Value {
    json!({"id": id, "description": "Add an index on search_events(created_at) as migration 0042",
           "verify": {"kind": "file_contains", "path": "db/0042_search_index.sql", "text": "CREATE INDEX"}})
}

pub fn write_index(key: &str) -> ScriptCall {
    tool(
        key,
        "write_file",
        json!({"path": "db/0042_search_index.sql", "content": "CREATE INDEX CONCURRENTLY idx_search_ts ON search_events(created_at);\n"}),
    )
}

pub struct RunResult {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub report: Value,
    pub state_dir: PathBuf,
}

impl Case {
    pub fn file(mut self, path: &str, content: &str) -> Self {
        self.files.push((path.into(), content.into()));
        self
    }
    pub fn call(mut self, c: ScriptCall) -> Self {
        self.calls.push(c);
        self
    }
    pub fn calls(mut self, cs: Vec<ScriptCall>) -> Self {
        self.calls.extend(cs);
        self
    }
    pub fn toml(mut self, t: &str) -> Self {
        self.extra_toml.push_str(t);
        self.extra_toml.push('\n');
        self
    }
    pub fn check(mut self, name: &str, cmd: &str) -> Self {
        self.checks.push((name.into(), cmd.into()));
        self
    }
    pub fn ws(&self) -> PathBuf {
        self.root.path().join("workspace")
    }
    pub fn state_dir(&self) -> PathBuf {
        self.root.path().join("state")
    }
    pub fn spec_path(&self) -> PathBuf {
        self.root.path().join("run.toml")
    }
    pub fn cassette_dir(&self) -> PathBuf {
        self.root.path().join("cassettes")
    }

    /// Write workspace, spec and cassette to disk (idempotent).
    pub fn materialize(&self) {
        let ws = self.ws();
        std::fs::create_dir_all(&ws).unwrap();
        for (p, c) in &self.files {
            let f = ws.join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, c).unwrap();
        }
        if self.git && !ws.join(".git").exists() {
            let git = |args: &[&str]| {
                let st = Command::new("git")
                    .args(args)
                    .current_dir(&ws)
                    .env("GIT_AUTHOR_NAME", "t")
                    .env("GIT_AUTHOR_EMAIL", "t@t")
                    .env("GIT_COMMITTER_NAME", "t")
                    .env("GIT_COMMITTER_EMAIL", "t@t")
                    .output()
                    .unwrap();
                assert!(
                    st.status.success(),
                    "git {args:?}: {}",
                    String::from_utf8_lossy(&st.stderr)
                );
            };
            git(&["init", "-q", "-b", "main"]);
            git(&["add", "-A"]);
            git(&["commit", "-q", "--allow-empty", "-m", "initial"]);
        }
        let mut checks = String::new();
        for (n, c) in &self.checks {
            checks.push_str(&format!(
                "[checks.{n}]\ncommand = [\"sh\", \"-c\", {c:?}]\ntimeout_s = 30\n"
            ));
        }
        let spec = format!(
            r#"goal = "Reduce p95 latency on /api/search to under 200ms."
workspace = "workspace"

[predicate]
{pred}
timeout_s = 30

[budget]
hard_cap_usd = {cap}
wall_clock_limit_s = {wall}
task_budget_tokens = 74700

[model]
protocol = "anthropic"
base_url = "http://127.0.0.1:9"
api_key_env = "HARNESS_TEST_API_KEY"
executor = "{MODEL}"
judge = "{MODEL}"
max_tokens = {maxtok}
http_attempts = {attempts}

[prices."{MODEL}"]
input_usd_per_mtok = 5.0
output_usd_per_mtok = {out_price}

{checks}
{extra}
"#,
            pred = self.predicate,
            cap = self.hard_cap_usd,
            wall = self.wall_clock_limit_s,
            extra = self.extra_toml,
            maxtok = self.max_tokens,
            attempts = self.http_attempts,
            out_price = self.output_usd_per_mtok,
        );
        std::fs::write(self.spec_path(), spec).unwrap();
        let sc = Scenario {
            schema: None,
            case: self.name.clone(),
            protocol: Protocol::Anthropic,
            model: MODEL.into(),
            notes: "integration test".into(),
            when: None,
            indifferent_to: vec![],
            runs: vec![ScriptRun {
                calls: self.calls.clone(),
            }],
        };
        // The replies hold for what this spec sends, as a committed case's
        // do. A spec the harness refuses never reaches a model call, so its
        // cassette's conditions are never compared.
        let conditions = match harness::spec::RunSpec::load(&self.spec_path()) {
            Ok(spec) => harness::recording_conditions::of_spec(&spec, &spec.workspace).unwrap(),
            Err(_) => harness::model::conditions::every_role_as(
                Protocol::Anthropic,
                &serde_json::Value::Null,
            ),
        };
        let cas = sc
            .to_cassette("2026-11-30", "harness/tests", &conditions)
            .unwrap();
        std::fs::create_dir_all(self.cassette_dir()).unwrap();
        std::fs::write(
            self.cassette_dir().join(format!("{}.json", self.name)),
            serde_json::to_string_pretty(&cas).unwrap(),
        )
        .unwrap();
    }

    pub fn command(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_harness"));
        c.arg("run")
            .arg("--spec")
            .arg(self.spec_path())
            .arg("--state-dir")
            .arg(self.state_dir())
            .arg("--replay")
            .arg(self.cassette_dir())
            .arg("--latency-scale")
            .arg(self.latency_scale.to_string());
        if let Some(f) = &self.faults {
            c.arg("--faults").arg(f);
        }
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c.stdin(Stdio::null());
        c
    }

    pub fn run(&self) -> RunResult {
        self.materialize();
        let out = self.command().output().unwrap();
        self.result(out)
    }

    pub fn result(&self, out: Output) -> RunResult {
        let report = std::fs::read(self.state_dir().join("report.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Value::Null);
        RunResult {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into(),
            stderr: String::from_utf8_lossy(&out.stderr).into(),
            report,
            state_dir: self.state_dir(),
        }
    }
}

impl RunResult {
    pub fn ending(&self) -> &str {
        self.report["ending"].as_str().unwrap_or("<no report>")
    }
    pub fn ids(&self, field: &str) -> Vec<String> {
        self.report[field]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|x| x["id"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    }
    pub fn explain(&self) -> String {
        format!(
            "exit {}\nstdout:\n{}\nstderr:\n{}\nreport: {}",
            self.code,
            self.stdout,
            self.stderr,
            serde_json::to_string_pretty(&self.report).unwrap_or_default()
        )
    }
}

/// Start the harness paused at `phase:n`, wait until it says so, SIGKILL it.
pub fn run_until_killed(c: &Case, phase: &str) {
    c.materialize();
    let mut cmd = c.command();
    cmd.env("HARNESS_CHAOS_PAUSE_AT", phase)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut seen = String::new();
    for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)) {
        let line = line.unwrap();
        seen.push_str(&line);
        seen.push('\n');
        if line.starts_with("HARNESS_CHAOS_PAUSED") {
            break;
        }
    }
    assert!(
        seen.contains("HARNESS_CHAOS_PAUSED"),
        "harness never reached {phase}; stderr:\n{seen}"
    );
    child.kill().unwrap(); // SIGKILL
    let st = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(st.signal(), Some(9), "child must die of SIGKILL");
}

pub fn read_outbox(state_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(state_dir.join("outbox.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The body of the run's checkpoint (after its header line), as JSON.
pub fn checkpoint_body(r: &RunResult) -> Value {
    let path = harness::checkpoint::path_in(&r.state_dir);
    let raw = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        let names: Vec<_> = (std::fs::read_dir(&r.state_dir).unwrap())
            .map(|e| e.unwrap().file_name())
            .collect();
        panic!("{}: {e}; the state dir holds {names:?}", path.display())
    });
    let (_header, body) = raw.split_once('\n').unwrap();
    serde_json::from_str(body).unwrap()
}
