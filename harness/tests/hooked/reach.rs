//! The agent's reach, through the real binary: what a tool can touch (hard
//! links, FIFOs, spellings of the harness's own paths), what a check's
//! environment can leak, what each verified task's commit holds, and the
//! visible budget the model is shown at each call.

use crate::common::*;
use harness::replay::{Captured, FaultPlan, Recordings, ReplayOptions, ReplayServer};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};

/// Watchdog for a run that must end by itself: a run still going after this
/// is a hang, killed and failed (not a speed assertion).
const RUN_WATCHDOG_S: u64 = 120;

fn notes_task(id: &str, text: &str) -> Value {
    json!({"id": id, "description": "Rewrite notes.txt", "verify": {"kind": "file_contains", "path": "notes.txt", "text": text}})
}

/// Run the binary against an in-process replay server that keeps every
/// request body, with extra environment variables set on the harness.
async fn run_capturing(c: &Case, env: &[(&str, &str)]) -> (RunResult, Vec<Captured>) {
    c.materialize();
    let rec = Recordings::load_dir(c.cassette_dir()).unwrap();
    let server = ReplayServer::start(
        rec,
        ReplayOptions {
            strict: false,
            latency_scale: 0.0,
            faults: FaultPlan::none(),
            capture: true,
            serve_as_run: None,
        },
    )
    .await
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_harness"));
    cmd.arg("run")
        .arg("--spec")
        .arg(c.spec_path())
        .arg("--state-dir")
        .arg(c.state_dir())
        .arg("--base-url")
        .arg(server.base_url_for(&c.name, 0))
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let r = c.result(out);
    let bodies = server.take_captured(&c.name, 0);
    (r, bodies)
}

/// Every file under `dir`, recursively (symlinks not followed).
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![];
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() {
                out.push(e.path());
            }
        }
    }
    out
}

/// git on the run's own repository (`<state>/git`, the workspace its work
/// tree), where the harness commits.
fn git(c: &Case, args: &[&str]) -> String {
    let git_dir = c.state_dir().join(harness::gitwork::STATE_GIT_DIR);
    let mut full = vec![format!("--git-dir={}", git_dir.display())];
    full.extend(args.iter().map(|a| a.to_string()));
    ws_git(
        &c.ws(),
        &full.iter().map(String::as_str).collect::<Vec<_>>(),
    )
}

/// git on the workspace's own repository.
fn ws_git(ws: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(args)
        .current_dir(ws)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn commit_files(c: &Case, sha: &str) -> Vec<String> {
    git(
        c,
        &[
            "diff-tree",
            "--root",
            "--no-commit-id",
            "--name-only",
            "-r",
            sha,
        ],
    )
    .lines()
    .map(str::to_string)
    .collect()
}

#[test]
fn a_hard_link_to_a_file_outside_is_never_written_through() {
    let mut c = case("hardlink").calls(vec![
        plan("plan/0", json!([notes_task("t1", "new notes")])),
        tool(
            "execute/t1/a0/0",
            "write_file",
            json!({"path": "notes.txt", "content": "new notes\n"}),
        ),
        text("execute/t1/a0/1", "done"),
        tool(
            "execute/t1/a1/0",
            "write_file",
            json!({"path": "notes.txt", "content": "new notes\n"}),
        ),
        text("execute/t1/a1/1", "done"),
        plan("replan/0", json!([])),
    ]);
    c.predicate = r#"command = ["grep", "-q", "new notes", "notes.txt"]"#.into();
    c.materialize();
    let outside = c.root.path().join("outside.txt");
    std::fs::write(&outside, "outside original\n").unwrap();
    std::fs::hard_link(&outside, c.ws().join("notes.txt")).unwrap();
    let r = c.result(c.command().output().unwrap());
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "outside original\n",
        "the file outside the workspace is unchanged: {}",
        r.explain()
    );
    assert_eq!(r.ids("parked"), vec!["t1"], "{}", r.explain());
    assert_eq!((r.code, r.ending()), (3, "QUEUE_EMPTY_GOAL_UNMET"));
}

#[test]
fn a_fifo_in_the_workspace_cannot_hang_the_run() {
    let mut c = case("fifo")
        .file("notes.txt", "old\n")
        .calls(vec![
            // Admission runs the verify (it must not already pass): on the FIFO.
            plan("plan/0", json!([
                {"id": "t0", "description": "Fill the pipe", "verify": {"kind": "file_contains", "path": "pipe", "text": "x"}},
                notes_task("t1", "new notes"),
            ])),
            tool("execute/t0/a0/0", "read_file", json!({"path": "pipe"})),
            tool("execute/t0/a0/1", "write_file", json!({"path": "pipe", "content": "x"})),
            tool("execute/t0/a0/2", "list_files", json!({})),
            text("execute/t0/a0/3", "done"),
            text("execute/t0/a1/0", "done"),
            tool("execute/t1/a0/0", "write_file", json!({"path": "notes.txt", "content": "new notes\n"})),
            text("execute/t1/a0/1", "done"),
        ]);
    c.predicate = r#"command = ["grep", "-q", "new notes", "notes.txt"]"#.into();
    c.wall_clock_limit_s = 60.0;
    c.materialize();
    nix::unistd::mkfifo(
        &c.ws().join("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    let mut child = c
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed().as_secs() > RUN_WATCHDOG_S {
            let _ = child.kill();
            panic!("the run hung on the FIFO for {RUN_WATCHDOG_S}s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let r = c.result(child.wait_with_output().unwrap());
    assert_eq!((r.code, r.ending()), (0, "GOAL_MET"), "{}", r.explain());
    assert_eq!(r.ids("verified"), vec!["t1"]);
    assert_eq!(r.ids("parked"), vec!["t0"]);
    let events = std::fs::read_to_string(r.state_dir.join("events.jsonl")).unwrap();
    assert!(
        events.contains("\"is_error\":true"),
        "the FIFO calls were refused"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_that_prints_its_environment_hands_no_key_to_the_model_or_a_file() {
    // Not shaped like real keys: the cassette loader refuses those, and the
    // scripted model below repeats them.
    let key = "CANARY-anthropic-reach-0123456789abcdef";
    let other = "CANARY-openai-reach-9876543210fedcba";
    let spec_key = "CANARY-spec-key-reach-5555555555";
    let mut c = case("envleak")
        .file("notes.txt", "old\n")
        .check("env", "env | sort")
        .calls(vec![
            plan("plan/0", json!([notes_task("t1", "new notes"),
                {"id": "t2", "description": "Post a summary", "verify": {"kind": "outbox_has", "key": "summary"}}])),
            tool("execute/t1/a0/0", "run_check", json!({"name": "env"})),
            tool("execute/t1/a0/1", "write_file", json!({"path": "notes.txt", "content": "new notes\n"})),
            // A model that repeats a key it saw anyway: the filter catches it.
            text("execute/t1/a0/2", &format!("done; the environment had ANTHROPIC_API_KEY={key}")),
            tool("execute/t2/a0/0", "post_message", json!({"channel": "#eng", "text": format!("keys: {key} {other}"), "idempotency_key": "summary"})),
            text("execute/t2/a0/1", &format!("posted {spec_key}")),
        ]);
    c.predicate = r#"command = ["false"]"#.into();
    c = c.toml("[check_env]\npass = [\"HARNESS_REACH_PASSED\"]");
    let (r, bodies) = run_capturing(
        &c,
        &[
            ("ANTHROPIC_API_KEY", key),
            ("OPENAI_API_KEY", other),
            ("HARNESS_TEST_API_KEY", spec_key),
            ("HARNESS_REACH_PASSED", "passed-through"),
        ],
    )
    .await;
    assert_eq!(r.ids("verified"), vec!["t1", "t2"], "{}", r.explain());
    assert!(bodies.len() >= 5, "{} bodies", bodies.len());
    // The check ran with its documented environment: the passed variable
    // reached the model, no key did.
    let after_check = bodies
        .iter()
        .find(|b| b.call_key == "execute/t1/a0/1")
        .unwrap();
    assert!(after_check
        .body
        .contains("HARNESS_REACH_PASSED=passed-through"));
    assert!(after_check.body.contains("TMPDIR="));
    for secret in [key, other, spec_key, "CANARY"] {
        for b in &bodies {
            // execute/t2/a0/1 carries the model's own post_message call back
            // to it (its history): text the model wrote, not one it was shown.
            if b.call_key == "execute/t2/a0/1" {
                continue;
            }
            assert!(
                !b.body.contains(secret),
                "{secret} in the {} request",
                b.call_key
            );
        }
        for f in files_under(c.root.path()) {
            if f.starts_with(c.cassette_dir()) || f == c.spec_path() {
                continue; // the test's own inputs
            }
            let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).into_owned();
            assert!(!text.contains(secret), "{secret} in {}", f.display());
        }
        assert!(!r.stdout.contains(secret) && !r.stderr.contains(secret));
    }
    let claims = r.report["model_claims"].to_string();
    assert!(claims.contains("[REDACTED:ANTHROPIC_API_KEY]"), "{claims}");
}

#[test]
fn a_secret_looking_variable_in_check_env_is_refused_at_spec_load() {
    let c = case("envrefused")
        .calls(vec![plan("plan/0", json!([]))])
        .toml("[check_env]\npass = [\"PGHOST\", \"GITHUB_TOKEN\"]");
    let r = c.run();
    assert_eq!(r.code, 64, "{}", r.explain());
    assert!(r.stderr.contains("check_env.pass[1]"), "{}", r.stderr);
    assert!(!c.state_dir().exists(), "nothing written");
}

#[test]
fn harness_state_spelled_into_the_workspace_is_refused_by_the_binary() {
    let c = case("spellings").calls(vec![plan("plan/0", json!([]))]);
    c.materialize();
    let root = c.root.path();
    std::os::unix::fs::symlink(c.ws(), root.join("wslink")).unwrap();
    for sd in [
        root.join("wslink/a/b"),
        root.join("nonexistent/../workspace/x"),
        root.join("workspace/st/"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_harness"))
            .arg("run")
            .arg("--spec")
            .arg(c.spec_path())
            .arg("--state-dir")
            .arg(&sd)
            .arg("--replay")
            .arg(c.cassette_dir())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(64), "{}", sd.display());
        assert!(String::from_utf8_lossy(&out.stderr).contains("state_dir"));
    }
    assert!(
        files_under(&c.ws()).is_empty(),
        "nothing was created inside the workspace"
    );
    let spec = std::fs::read_to_string(c.spec_path()).unwrap();
    for (line, field) in [
        ("outbox = \"wslink/sub/outbox.jsonl\"", "outbox"),
        ("outbox = \"missing/../workspace/o.jsonl\"", "outbox"),
    ] {
        std::fs::write(
            c.spec_path(),
            spec.replace(
                "workspace = \"workspace\"\n",
                &format!("workspace = \"workspace\"\n{line}\n"),
            ),
        )
        .unwrap();
        let out = c.command().output().unwrap();
        assert_eq!(out.status.code(), Some(64), "{line}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&format!("field `{field}`")),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(files_under(&c.ws()).is_empty());
}

fn git_case(name: &str) -> Case {
    let mut c = case(name)
        .file("README.md", "# app\n")
        .file("notes.txt", "old\n");
    c.git = true;
    c.predicate = r#"command = ["false"]"#.into();
    c
}

#[test]
fn each_verified_commit_holds_exactly_the_paths_its_task_wrote() {
    let c = git_case("commits").calls(vec![
        plan("plan/0", json!([
            {"id": "t1", "description": "Draft the design doc", "verify": {"kind": "file_contains", "path": "docs/design.md", "text": "APPROVED"}},
            {"id": "t2", "description": "Update notes and the changelog", "verify": {"kind": "file_contains", "path": "CHANGELOG.md", "text": "1.2.0"}},
            {"id": "t3", "description": "Post the release note", "verify": {"kind": "outbox_has", "key": "rel-1.2.0"}},
        ])),
        // t1 writes two files but never satisfies its verify: parked.
        tool("execute/t1/a0/0", "write_file", json!({"path": "docs/design.md", "content": "# draft\n"})),
        tool("execute/t1/a0/1", "write_file", json!({"path": "notes.txt", "content": "t1 was here\n"})),
        text("execute/t1/a0/2", "drafted"),
        text("execute/t1/a1/0", "still a draft"),
        // t2 writes its own two files (one through a ./ spelling), and
        // rewrites notes.txt too: the path two tasks wrote.
        tool("execute/t2/a0/0", "write_file", json!({"path": "./CHANGELOG.md", "content": "## 1.2.0\n"})),
        tool("execute/t2/a0/1", "write_file", json!({"path": "notes.txt", "content": "release 1.2.0 notes\n"})),
        text("execute/t2/a0/2", "done"),
        tool("execute/t3/a0/0", "post_message", json!({"channel": "#eng", "text": "1.2.0 is out", "idempotency_key": "rel-1.2.0"})),
        text("execute/t3/a0/1", "posted"),
        plan("replan/0", json!([])),
    ]);
    c.materialize();
    // Something the operator left untracked before the run.
    std::fs::write(c.ws().join("scratch.txt"), "operator's\n").unwrap();
    let r = c.result(c.command().output().unwrap());
    assert_eq!(r.ids("verified"), vec!["t2", "t3"], "{}", r.explain());
    assert_eq!(r.ids("parked"), vec!["t1"]);
    let commits: Vec<String> = r.report["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(commits.len(), 2);
    assert_eq!(
        commit_files(&c, &commits[0]),
        vec!["CHANGELOG.md", "notes.txt"]
    );
    assert!(
        commit_files(&c, &commits[1]).is_empty(),
        "the post: an empty commit"
    );
    // notes.txt went into t2's commit (t2 rewrote it whole): only t1's own
    // file is left uncommitted.
    assert_eq!(
        r.report["parked"][0]["uncommitted_paths"],
        json!(["docs/design.md"])
    );
    let status = git(&c, &["status", "--porcelain"]);
    assert!(
        status.contains("?? docs/"),
        "t1's file stays uncommitted: {status}"
    );
    assert!(status.contains("?? scratch.txt"), "{status}");
}

#[test]
fn a_kill_after_the_tools_wrote_but_before_the_commit_loses_no_path() {
    let c = git_case("commit-resume").calls(vec![
        plan("plan/0", json!([
            {"id": "t1", "description": "Write the note and announce it", "verify": {"kind": "outbox_has", "key": "note-1"}},
        ])),
        tool("execute/t1/a0/0", "write_file", json!({"path": "docs/note.md", "content": "the note\n"})),
        tool("execute/t1/a0/1", "post_message", json!({"channel": "#eng", "text": "note written", "idempotency_key": "note-1"})),
        text("execute/t1/a0/2", "done"),
        plan("replan/0", json!([])),
    ]);
    c.materialize();
    let mut cmd = c.command();
    cmd.env("HARNESS_CHAOS_PAUSE_AT", "after_post_before_checkpoint:1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    use std::io::BufRead;
    let stderr = child.stderr.take().unwrap();
    for line in std::io::BufReader::new(stderr).lines() {
        if line.unwrap().starts_with("HARNESS_CHAOS_PAUSED") {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let r = c.result(c.command().output().unwrap());
    assert_eq!(r.ids("verified"), vec!["t1"], "{}", r.explain());
    assert_eq!(r.report["verified"][0]["how"], "verified_on_resume");
    let sha = r.report["commits"][0].as_str().unwrap();
    assert_eq!(commit_files(&c, sha), vec!["docs/note.md"]);
}

#[test]
fn nothing_is_committed_when_the_run_branch_cannot_be_made() {
    let c = git_case("no-branch").calls(vec![
        plan("plan/0", json!([notes_task("t1", "new notes")])),
        tool(
            "execute/t1/a0/0",
            "write_file",
            json!({"path": "notes.txt", "content": "new notes\n"}),
        ),
        text("execute/t1/a0/1", "done"),
        plan("replan/0", json!([])),
    ]);
    c.materialize();
    // A file where the run's own repository must go: it cannot be made.
    std::fs::create_dir_all(c.state_dir()).unwrap();
    std::fs::write(c.state_dir().join(harness::gitwork::STATE_GIT_DIR), "").unwrap();
    let head = ws_git(&c.ws(), &["rev-parse", "HEAD"]);
    let r = c.result(c.command().output().unwrap());
    assert_eq!(r.ids("verified"), vec!["t1"], "{}", r.explain());
    assert_eq!(r.report["commits"], json!([]));
    assert_eq!(r.report["git_branch"], Value::Null);
    let why = r.report["git_disabled"].as_str().unwrap_or("");
    assert!(why.contains("nothing is committed"), "{}", r.explain());
    assert!(r.stdout.contains("NO COMMITS"), "{}", r.stdout);
    assert_eq!(
        ws_git(&c.ws(), &["rev-parse", "HEAD"]),
        head,
        "main untouched"
    );
    assert_eq!(
        ws_git(&c.ws(), &["symbolic-ref", "--short", "HEAD"]).trim(),
        "main"
    );
}

/// The figure each execute request shows, in order of the calls.
fn budget_figures(bodies: &[Captured]) -> Vec<(String, u64)> {
    bodies
        .iter()
        .filter(|b| b.call_key.starts_with("execute/"))
        .map(|b| {
            let at = b
                .body
                .find("<task_budget>")
                .expect("every execute call shows the budget");
            let rest = &b.body[at + "<task_budget>".len()..];
            let n: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            assert!(rest[n.len()..].starts_with(" tokens left"), "{rest}");
            (b.call_key.clone(), n.parse().unwrap())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_visible_budget_is_the_ledger_remainder_in_tokens_and_shrinks_with_spend() {
    // Every scripted call books 3500 in + 300 out at $5 / $25 per MTok:
    // $0.025. With a $0.50 cap the remainder after k calls buys
    // (0.50 - 0.025 k) / $25 per MTok = 20000 - 1000 k output tokens, below
    // the spec's 74700 per task.
    let mut c = case("budget").calls(vec![
        plan("plan/0", json!([index_task("t1")])),
        tool("execute/t1/a0/0", "list_files", json!({})),
        tool("execute/t1/a0/1", "read_file", json!({"path": "README.md"})),
        write_index("execute/t1/a0/2"),
        text("execute/t1/a0/3", "done"),
    ]);
    c = c.file("README.md", "# app\n");
    c.hard_cap_usd = 0.5;
    let (r, bodies) = run_capturing(&c, &[]).await;
    assert_eq!(r.ending(), "GOAL_MET", "{}", r.explain());
    let got = budget_figures(&bodies);
    assert_eq!(got.len(), 4);
    for (k, (key, n)) in got.iter().enumerate() {
        // k + 1 calls booked before this one (the plan and k execute calls).
        let exact = 20_000 - 1000 * (k as u64 + 1);
        // The ledger's float arithmetic may land one token under the decimal value.
        assert!(
            *n == exact || *n + 1 == exact,
            "{key}: shown {n}, the remainder buys {exact}"
        );
    }
    assert!(got.windows(2).all(|w| w[1].1 < w[0].1), "{got:?}");
    for b in bodies.iter().filter(|b| b.call_key.starts_with("execute/")) {
        let dollars = b
            .body
            .as_bytes()
            .windows(2)
            .any(|w| w[0] == b'$' && w[1].is_ascii_digit());
        assert!(!dollars, "a dollar figure in {}", b.call_key);
    }
    // With a roomy cap the spec's per-task figure is the lower one.
    let mut roomy = case("budget-roomy").calls(vec![
        plan("plan/0", json!([index_task("t1")])),
        write_index("execute/t1/a0/0"),
        text("execute/t1/a0/1", "done"),
    ]);
    roomy.hard_cap_usd = 28.0;
    let (_, bodies) = run_capturing(&roomy, &[]).await;
    assert!(budget_figures(&bodies).iter().all(|(_, n)| *n == 74700));
}

#[test]
fn a_write_whose_directory_fsync_failed_after_the_rename_never_ends_goal_met() {
    // Find the fsync index that is the directory fsync right after the tool
    // write's rename (the simfs log names it), fail it once with EIO, and
    // check the run does not claim GOAL_MET on content a power cut could undo.
    let c = case("doubt").calls(vec![
        plan("plan/0", json!([index_task("t1")])),
        write_index("execute/t1/a0/0"),
        text("execute/t1/a0/1", "done"),
    ]);
    c.materialize();
    let db = std::fs::canonicalize(c.ws()).unwrap().join("db");
    let mut found = None;
    for n in 1..=60 {
        let _ = std::fs::remove_dir_all(c.state_dir());
        let _ = std::fs::remove_dir_all(c.ws().join("db"));
        let log = c.root.path().join(format!("simfs-{n}.jsonl"));
        let out = c
            .command()
            .env(harness::simfs::FAULT_ENV, format!("eio:fsync:{n}:once"))
            .env(harness::simfs::LOG_ENV, &log)
            .output()
            .unwrap();
        let ops: Vec<Value> = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let fault_at = ops.iter().position(|o| o["op"] == "fault");
        let Some(i) = fault_at else { break }; // past the last fsync of the run
        let renamed_into_db = ops[..i].last().is_some_and(|o| {
            o["op"] == "rename"
                && o["to"]
                    .as_str()
                    .is_some_and(|t| Path::new(t).starts_with(&db))
        });
        if ops[i]["class"] == "fsync_dir" && renamed_into_db {
            found = Some((n, c.result(out)));
            break;
        }
    }
    let (n, r) = found.expect("some fsync index is the directory fsync after the tool's rename");
    assert_eq!(
        (r.code, r.ending()),
        (4, "UNRECOVERABLE_ERROR"),
        "eio:fsync:{n}:once: {}",
        r.explain()
    );
    assert_eq!(r.report["error_kind"], "write_not_durable");
    let detail = r.report["detail"].as_str().unwrap();
    assert!(
        detail.contains("db/0042_search_index.sql") && detail.contains("os error 5"),
        "{detail}"
    );
    assert_eq!(
        r.report["predicate_met"], true,
        "the predicate did pass on the page cache"
    );
}
