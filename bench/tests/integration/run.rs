//! `bench run` end to end on a small temporary suite built from the demo
//! case: the gate, the failure report, bad input, and sharding + merge.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

use crate::common::*;

/// A case built from the demo: same workspace and cassette, its own id.
fn add_case(suite: &Path, category: &str, id: &str, expect: &str) {
    add_case_from("suites/demo/p95-index", suite, category, id, expect)
}

const GOOD: &str = "ending = \"GOAL_MET\"\nverified = [\"t1\", \"t2\", \"t3\"]\noutbox_key_count = { \"rollout-0042\" = 1 }\nfiles_contain = { \"src/search.py\" = \"idx_search_ts\" }\npredicate_met = true";

/// The case `scripts/bench-throughput` measures as the anchor's shape really
/// is that shape: six model calls, two verified tasks, the goal met.
#[test]
fn the_throughput_anchor_case_is_six_calls_to_goal_met() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suites");
    add_case_from(
        "suites/throughput/anchor-6-call",
        &suite,
        "happy",
        "anchor",
        "ending = \"GOAL_MET\"\nverified = [\"t1\", \"t2\"]\npredicate_met = true\nreport = { model_calls = 6 }",
    );
    let (code, s, log) = bench_run(&suite, &t.path().join("out"), &["--category", "happy"]);
    assert_eq!(code, 0, "{log}");
    assert_eq!(s["cases"][0]["runs"][0]["ending"], "GOAL_MET", "{log}");
}

#[test]
fn a_passing_suite_exits_0_with_the_contract_fields() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suites");
    add_case(&suite, "happy", "demo-a", GOOD);
    add_case(&suite, "adversarial", "demo-b", GOOD);
    let (code, s, log) = bench_run(
        &suite,
        &t.path().join("out"),
        &["--runs-per-case", "2", "--category", "happy,adversarial"],
    );
    assert_eq!(code, 0, "{log}");
    assert_eq!(s["passed"], true);
    assert_eq!(s["categories"]["happy"]["passed"], 1);
    assert_eq!(s["categories"]["adversarial"]["total"], 1);
    let c = &s["cases"][0];
    for k in ["id", "category", "passed", "score"] {
        assert!(!c[k].is_null(), "{k}");
    }
    let r = &c["runs"][1];
    for k in [
        "ending",
        "exit_code",
        "passed",
        "score",
        "cost_usd",
        "latency_ms",
    ] {
        assert!(!r[k].is_null(), "{k}");
    }
    assert_eq!(r["ending"], "GOAL_MET");
    assert!(s["git_rev"].is_string() && s["config_hash"].as_str().unwrap().len() == 64);
    assert!(t.path().join("out/junit.xml").exists());
    assert!(std::fs::read_to_string(t.path().join("out/summary.md"))
        .unwrap()
        .contains("| happy | 1 | 1 |"));
}

#[test]
fn a_failing_case_fails_the_gate_and_says_why() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suites");
    add_case(&suite, "happy", "demo-ok", GOOD);
    add_case(
        &suite,
        "edge",
        "demo-wrong",
        "ending = \"QUEUE_EMPTY_GOAL_UNMET\"\nverified_count = 2",
    );
    let (code, s, log) = bench_run(
        &suite,
        &t.path().join("out"),
        &["--category", "happy", "--category", "edge"],
    );
    assert_eq!(code, 1, "{log}");
    assert_eq!(s["passed"], false);
    let md = std::fs::read_to_string(t.path().join("out/summary.md")).unwrap();
    assert!(
        md.contains("demo-wrong")
            && md.contains("expected `QUEUE_EMPTY_GOAL_UNMET`, got `GOAL_MET`"),
        "{md}"
    );
    assert!(md.contains("verified_count: expected 2, got 3"), "{md}");
    let junit = std::fs::read_to_string(t.path().join("out/junit.xml")).unwrap();
    assert!(junit.contains("failure"), "{junit}");
}

#[test]
fn bad_case_files_are_named_and_the_rest_still_runs() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suites");
    add_case(&suite, "happy", "demo-ok", GOOD);
    add_case(
        &suite,
        "happy",
        "demo-typo",
        &format!("{GOOD}\nverfied_count = 3"),
    );
    add_case(
        &suite,
        "happy",
        "demo-badfield",
        &format!("{GOOD}\nreport = {{ no_such_field = 1 }}"),
    );
    add_case(&suite, "edge", "demo-nocassette", GOOD);
    std::fs::remove_file(suite.join("edge/demo-nocassette/cassette.json")).unwrap();
    let (code, s, log) = bench_run(&suite, &t.path().join("out"), &["--category", "happy,edge"]);
    assert_eq!(code, 1, "{log}");
    assert_eq!(
        s["cases"].as_array().unwrap().len(),
        1,
        "the good case still ran"
    );
    let errs = s["load_errors"].to_string();
    assert!(
        errs.contains("demo-typo/case.toml") && errs.contains("verfied_count"),
        "{errs}"
    );
    assert!(errs.contains("expect.report.no_such_field"), "{errs}");
    assert!(errs.contains("demo-nocassette/cassette.json"), "{errs}");
    // An unknown category is a usage-level failure to load the suite.
    let (code, _, log) = bench_run(&suite, &t.path().join("out2"), &["--category", "nightly"]);
    assert_eq!(code, 3, "{log}");
    assert!(log.contains("--category"));
}

#[test]
fn merged_shards_equal_the_unsharded_run_case_for_case() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suites");
    for (cat, id) in [
        ("happy", "s-a"),
        ("happy", "s-b"),
        ("edge", "s-c"),
        ("adversarial", "s-d"),
        ("regression", "s-e"),
    ] {
        add_case(&suite, cat, id, GOOD);
    }
    add_case(&suite, "edge", "s-f", "ending = \"NO_PROGRESS\"");
    let (_, whole, _) = bench_run(&suite, &t.path().join("whole"), &[]);
    let (_, s1, l1) = bench_run(&suite, &t.path().join("shard1"), &["--shard", "1/2"]);
    let (_, s2, l2) = bench_run(&suite, &t.path().join("shard2"), &["--shard", "2/2"]);
    let n1 = s1["cases"].as_array().unwrap().len();
    let n2 = s2["cases"].as_array().unwrap().len();
    assert_eq!(n1 + n2, 6, "{l1}\n{l2}");
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["merge"])
        .arg(t.path().join("shard1"))
        .arg(t.path().join("shard2"))
        .arg("--out")
        .arg(t.path().join("merged"))
        .env("CI", "1")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "one case fails in both: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let merged: Value =
        serde_json::from_slice(&std::fs::read(t.path().join("merged/summary.json")).unwrap())
            .unwrap();
    let key = |s: &Value| -> Vec<(String, String, bool, String, Vec<String>)> {
        s["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["id"].as_str().unwrap().into(),
                    c["category"].as_str().unwrap().into(),
                    c["passed"].as_bool().unwrap(),
                    format!("{:.6}", c["score"].as_f64().unwrap()),
                    c["runs"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|r| format!("{}:{}:{}", r["ending"], r["exit_code"], r["passed"]))
                        .collect(),
                )
            })
            .collect()
    };
    assert_eq!(key(&merged), key(&whole));
    // Latency (judged and wall) differs in the shard runs and the whole run:
    // everything else in the totals is equal, and merge recomputes the
    // latency figures from its own records (never from shard totals).
    let without_latency = |s: &Value| {
        let mut c = s["categories"].clone();
        for t in c.as_object_mut().unwrap().values_mut() {
            let st = t["stats"].as_object_mut().unwrap();
            st.remove("latency_ms_mean");
            st.remove("latency_ms_p95");
            st.remove("wall_ms_p95");
        }
        c
    };
    assert_eq!(without_latency(&merged), without_latency(&whole));
    let lat: Vec<f64> = merged["cases"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["runs"].as_array().unwrap().iter())
        .map(|r| r["latency_ms"].as_f64().unwrap())
        .collect();
    let mean = lat.iter().sum::<f64>() / lat.len() as f64;
    assert!(
        (merged["overall"]["stats"]["latency_ms_mean"]
            .as_f64()
            .unwrap()
            - mean)
            .abs()
            < 1e-9,
        "{}",
        merged["overall"]
    );
    assert_eq!(merged["passed"], whole["passed"]);
    // Overlapping or incomplete shards are refused.
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["merge"])
        .arg(t.path().join("shard1"))
        .arg(t.path().join("shard1"))
        .arg("--out")
        .arg(t.path().join("bad"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("more than one shard"));
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["merge"])
        .arg(t.path().join("shard1"))
        .arg("--out")
        .arg(t.path().join("bad2"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("not complete"));
}

/// The gate runs every category: a suite whose adversarial/ went missing
/// (deleted in a copy of the committed suite), or is there but empty, is
/// "the suite could not be loaded" (exit 3) with the category named, not a
/// pass on the other three; naming the categories to run is the way to run
/// fewer, and a named category must hold a case too.
#[test]
fn a_missing_or_empty_category_fails_the_gate_with_a_clear_error() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suites");
    for cat in ["happy", "edge", "adversarial", "regression"] {
        harness::workspace::copy_tree(&repo().join("suites").join(cat), &suite.join(cat)).unwrap();
    }
    std::fs::remove_dir_all(suite.join("adversarial")).unwrap();
    let (code, s, log) = bench_run(&suite, &t.path().join("out"), &[]);
    assert_eq!(code, 3, "{log}");
    assert!(s.is_null(), "nothing ran, no summary: {s}");
    assert!(
        log.contains("category `adversarial` is missing or empty")
            && log.contains("--category happy,edge,regression"),
        "{log}"
    );
    // Present but empty is the same.
    std::fs::create_dir_all(suite.join("adversarial")).unwrap();
    let (code, _, log) = bench_run(&suite, &t.path().join("out"), &["--shard", "1/4"]);
    assert_eq!(code, 3, "{log}");
    assert!(
        log.contains("category `adversarial` is missing or empty"),
        "{log}"
    );
    // A named empty category is refused too.
    let (code, _, log) = bench_run(
        &suite,
        &t.path().join("out"),
        &["--category", "regression,adversarial"],
    );
    assert_eq!(code, 3, "{log}");
    assert!(
        log.contains("`adversarial`") && log.contains("named with --category"),
        "{log}"
    );
    // Naming the others runs them, and the summary records what was asked.
    let (code, s, log) = bench_run(
        &suite,
        &t.path().join("out-reg"),
        &["--category", "regression"],
    );
    assert_eq!(code, 0, "{log}");
    assert_eq!(s["categories_required"], serde_json::json!(["regression"]));
    assert!(s["categories"].get("regression").is_some() && s["categories"].get("happy").is_none());
}

/// Two commands on one `--out` would mix their case dirs and summaries:
/// while another holds it (here the test holds the same flock a running
/// bench takes), `bench run` refuses, names the holder and writes nothing.
#[test]
fn a_second_bench_on_one_out_dir_is_refused_and_names_the_holder() {
    use std::io::Write;
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suite");
    add_case(&suite, "happy", "demo-a", GOOD);
    let out = t.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let mut held = std::fs::File::create(out.join(bench::outputs::OUT_LOCK_FILE)).unwrap();
    held.lock().unwrap();
    writeln!(held, "4242 bench run").unwrap();
    let (code, s, log) = bench_run(&suite, &out, &["--category", "happy"]);
    assert_eq!(code, 2, "{log}");
    assert!(
        log.contains("is in use by another bench command") && log.contains("4242 bench run"),
        "{log}"
    );
    assert_eq!(s, Value::Null, "nothing written: {log}");
    drop(held);
    let (code, _, log) = bench_run(&suite, &out, &["--category", "happy"]);
    assert_eq!(code, 0, "{log}");
}

/// `bench merge --out` onto one of its own shards would overwrite it.
#[test]
fn a_merge_into_one_of_its_shards_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let shard = t.path().join("shard-1");
    std::fs::create_dir_all(&shard).unwrap();
    std::fs::write(shard.join("summary.json"), "the shard's own").unwrap();
    let spelled = t.path().join("shard-1/../shard-1");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["merge"])
        .arg(&shard)
        .arg(t.path().join("shard-2"))
        .arg("--out")
        .arg(&spelled)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("would overwrite it"), "{err}");
    assert_eq!(
        std::fs::read_to_string(shard.join("summary.json")).unwrap(),
        "the shard's own"
    );
}

/// `bench run ... 2>&1 | head -1`: once the reader is gone every write
/// fails (EPIPE). A closed stream is never a crash: the exit code is the
/// gate's and every output file is written.
#[test]
fn closed_stdout_and_stderr_change_neither_the_exit_code_nor_the_files() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suite");
    add_case(&suite, "happy", "demo-a", GOOD);
    let out = t.path().join("out");
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let st = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["run", "--category", "happy", "--suite"])
        .arg(&suite)
        .arg("--out")
        .arg(&out)
        .arg("--harness")
        .arg(harness_bin())
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .status()
        .unwrap();
    assert_eq!(
        st.code(),
        Some(0),
        "the gate passed; the closed pipes are not a crash"
    );
    for f in ["summary.json", "summary.md", "junit.xml", "report.html"] {
        assert!(out.join(f).is_file(), "{f} written");
    }
    // Run with no --runs-per-case: the gate's 3, as `--help` says.
    let s: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["runs_per_case"], 3);
    assert_eq!(s["case_runs"], 3);
}

/// Nothing left behind: a suite whose cases include a harness killed
/// mid-run ([interrupt]) and one whose check runs, three times each, leaves
/// its temp dir as it found it (the checks' private dirs are removed, a
/// killed run's is swept by its resume), and no process of a case-run
/// outlives the batch in a state nobody waits for.
#[test]
fn a_batch_with_killed_harnesses_leaves_no_temp_dir_behind() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suites");
    for (cat, id) in [
        ("edge", "edge-resume-post-not-doubled"),
        ("happy", "happy-fix-failing-pricing-test"),
    ] {
        harness::workspace::copy_tree(
            &repo().join("suites").join(cat).join(id),
            &suite.join(cat).join(id),
        )
        .unwrap();
    }
    let tmp = t.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args([
            "run",
            "--category",
            "edge,happy",
            "--runs-per-case",
            "3",
            "--suite",
        ])
        .arg(&suite)
        .arg("--out")
        .arg(t.path().join("out"))
        .env("TMPDIR", &tmp)
        .env("CI", "1")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{log}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let left: Vec<String> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        left.is_empty(),
        "left in TMPDIR after 6 case-runs: {left:?}"
    );
}

/// A reused `--out` holds only this run's case dirs, never an earlier
/// run's beside a summary that does not name them.
#[test]
fn a_reused_out_dir_holds_only_this_runs_case_dirs() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suite");
    add_case(&suite, "happy", "demo-a", GOOD);
    add_case(&suite, "happy", "demo-b", GOOD);
    let out = t.path().join("out");
    let (code, _, log) = bench_run(&suite, &out, &["--category", "happy", "--case", "demo-a"]);
    assert_eq!(code, 0, "{log}");
    assert!(out.join("cases/demo-a").is_dir());
    let (code, _, log) = bench_run(&suite, &out, &["--category", "happy", "--case", "demo-b"]);
    assert_eq!(code, 0, "{log}");
    let mut left: Vec<String> = std::fs::read_dir(out.join("cases"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["demo-b"]);
}

/// Ctrl-C on `bench run` (SIGINT to the bench alone, as a supervisor's
/// SIGTERM would be): no new case-run starts, the harnesses in flight are
/// asked to stop and suspend, the summary says interrupted with what
/// finished (JUnit: the unfinished as skipped), the exit is 130, and no
/// harness process of the run is left.
#[test]
fn an_interrupted_run_stops_its_harnesses_and_writes_an_interrupted_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("suite");
    // The slow-drip case holds each harness mid-call for seconds.
    harness::workspace::copy_tree(
        &repo().join("suites/adversarial/adv-slow-drip-server"),
        &suite.join("adversarial/adv-slow-drip-server"),
    )
    .unwrap();
    let out = tmp.path().join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_bench"))
        .arg("run")
        .arg("--suite")
        .arg(&suite)
        .arg("--out")
        .arg(&out)
        .arg("--harness")
        .arg(harness_bin())
        .args([
            "--category",
            "adversarial",
            "--runs-per-case",
            "6",
            "--max-concurrency",
            "2",
        ])
        .env("CI", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until harnesses run (their state dirs appear), then Ctrl-C.
    let state_of = |r: u32| {
        out.join(format!(
            "cases/adv-slow-drip-server/run-{r}/state/events.jsonl"
        ))
    };
    let t0 = std::time::Instant::now();
    while !(state_of(0).exists() || state_of(1).exists()) {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(60),
            "no case-run started"
        );
        if let Ok(Some(st)) = child.try_wait() {
            panic!("bench exited ({st}) before a case-run started");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let o = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(130), "{said}");
    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["passed"], false);
    let why = summary["interrupted"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("SIGINT: ") && why.contains("of 6 case-runs finished"),
        "{why}"
    );
    let runs = summary["cases"][0]["runs"].as_array().unwrap();
    let cut = runs
        .iter()
        .filter(|r| r["bench_fault"]["kind"] == "interrupted")
        .count();
    assert!(cut >= 4, "at most 2 ran before the signal: {summary}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.starts_with("## bench run: INTERRUPTED (SIGINT"), "{md}");
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap_or_default();
    assert!(
        junit.contains("<skipped") && junit.contains("interrupted"),
        "{junit}"
    );
    // The harnesses it had running were asked to stop and suspended.
    let stopped: Vec<_> = (0..6)
        .filter(|r| harness::report::StoppedReport::load(state_of(*r).parent().unwrap()).is_ok())
        .collect();
    assert!(!stopped.is_empty(), "no harness left a stop report: {said}");
    // None of this run's harnesses is still running.
    let out_s = out.display().to_string();
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&out_s) && c.contains("harness"))
        .collect();
    assert!(left.is_empty(), "left running: {left:?}");
}

/// Ctrl-C on a terminal: SIGINT to the bench's whole process group. Each
/// harness is in a group of its own, so only the bench's one stop request
/// reaches it: every harness in flight suspends and writes its stop report
/// (in the bench's group, each read the bench's SIGTERM as a second signal
/// and exited at once with none: 0 or 1 reports with 2 to 4 in flight).
#[test]
fn ctrl_c_to_the_process_group_leaves_a_stop_report_per_harness_in_flight() {
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("suite");
    // The slow-drip case holds each harness mid-call for seconds.
    harness::workspace::copy_tree(
        &repo().join("suites/adversarial/adv-slow-drip-server"),
        &suite.join("adversarial/adv-slow-drip-server"),
    )
    .unwrap();
    let out = tmp.path().join("out");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bench"));
    cmd.arg("run")
        .arg("--suite")
        .arg(&suite)
        .arg("--out")
        .arg(&out)
        .arg("--harness")
        .arg(harness_bin())
        .args(["--category", "adversarial", "--runs-per-case", "3"])
        .args(["--max-concurrency", "3"])
        .env("CI", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        // A group of its own, as a shell gives a foreground job: the
        // terminal's Ctrl-C goes to that whole group.
        .process_group(0);
    let mut child = cmd.spawn().unwrap();
    let state_of = |r: u32| out.join(format!("cases/adv-slow-drip-server/run-{r}/state"));
    let t0 = std::time::Instant::now();
    while !(0..3).all(|r| state_of(r).join("events.jsonl").exists()) {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(60),
            "the three case-runs did not start"
        );
        if let Ok(Some(st)) = child.try_wait() {
            panic!("bench exited ({st}) before its case-runs started");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    // The group of the bench (its pid): what a terminal signals.
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let o = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(130), "{said}");
    // Each harness either ended before the signal (an ending's report) or
    // was in flight and suspended (a stop report): none died without one.
    let mut stopped = 0;
    for r in 0..3 {
        let st = state_of(r);
        if harness::report::StoppedReport::load(&st).is_ok() {
            stopped += 1;
        } else {
            assert!(
                harness::report::Report::load(&st).is_ok(),
                "run-{r}: neither an ending nor a stop report: {said}"
            );
        }
    }
    assert!(
        stopped >= 2,
        "{stopped} stop report(s) with 3 harnesses started: {said}"
    );
}

/// Ctrl-C on `bench chaos`: the trials in flight finish, no new one starts,
/// chaos.json covers the kill indexes that ran, and the exit is 130.
#[test]
fn an_interrupted_chaos_run_reports_what_ran() {
    let bin = bench::batch::build_harness(None, false).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let asked = 100_000;
    let child = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args([
            "chaos",
            "--mode",
            "sigkill",
            "--seed",
            "3",
            "--no-build",
            "--jobs",
            "2",
        ])
        .args(["--kills", &asked.to_string()])
        .arg("--harness")
        .arg(&bin)
        .arg("--work-dir")
        .arg(tmp.path().join("work"))
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Trials run once the work dir holds one.
    let work = tmp.path().join("work");
    let t0 = std::time::Instant::now();
    while std::fs::read_dir(&work).map_or(true, |d| d.count() < 2) {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(120),
            "no trial started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let o = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(130), "{said}");
    assert!(said.contains("interrupted by SIGINT"), "{said}");
    let report: Value =
        serde_json::from_slice(&std::fs::read(out.join("chaos.json")).unwrap()).unwrap();
    let ran = report["kills"].as_u64().unwrap();
    assert!(ran < asked, "all {asked} ran: the interrupt was not seen");
    assert_eq!(
        report["violations"].as_array().map(Vec::len),
        Some(0),
        "{report}"
    );
}

/// `--case` takes several ids and patterns; `--rerun-failed DIR` runs only
/// what did not pass there; a pattern that matches nothing is an error.
#[test]
fn several_cases_patterns_and_rerun_failed() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suite");
    add_case(&suite, "happy", "demo-a", GOOD);
    add_case(&suite, "happy", "demo-b", GOOD);
    add_case(&suite, "happy", "other-c", GOOD);
    let ran = |out: &Path| -> Vec<String> {
        let s: Value =
            serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
        s["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect()
    };
    let out = t.path().join("o1");
    let (code, _, log) = bench_run(
        &suite,
        &out,
        &["--category", "happy", "--case", "demo-*,other-c"],
    );
    assert_eq!(code, 0, "{log}");
    assert_eq!(ran(&out), ["demo-a", "demo-b", "other-c"]);
    let (code, _, log) = bench_run(&suite, &out, &["--category", "happy", "--case", "demo-?"]);
    assert_eq!(code, 0, "{log}");
    assert_eq!(ran(&out), ["demo-a", "demo-b"]);
    // An id that is not there is a usage error (exit 2, README's table);
    // a near miss names the nearest id and the command with it.
    let (code, _, log) = bench_run(&suite, &out, &["--category", "happy", "--case", "nope-*"]);
    assert_eq!(code, 2, "{log}");
    assert!(log.contains("--case \"nope-*\": no case under"), "{log}");
    assert!(!log.contains("did you mean"), "nothing is near nope: {log}");
    let (code, _, log) = bench_run(&suite, &out, &["--category", "happy", "--case", "demo-bb"]);
    assert_eq!(code, 2, "{log}");
    assert!(
        log.contains("did you mean demo-b?") && log.contains("--case demo-b)"),
        "{log}"
    );

    // demo-b fails once its expected ending is changed; the rerun runs it alone.
    let toml = suite.join("happy/demo-b/case.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(
        &toml,
        text.replacen("ending = \"GOAL_MET\"", "ending = \"NO_PROGRESS\"", 1),
    )
    .unwrap();
    let first = t.path().join("o2");
    let (code, _, log) = bench_run(&suite, &first, &["--category", "happy"]);
    assert_eq!(code, 1, "{log}");
    let again = t.path().join("o3");
    let rerun = first.display().to_string();
    let (code, _, log) = bench_run(
        &suite,
        &again,
        &["--category", "happy", "--rerun-failed", &rerun],
    );
    assert_eq!(code, 1, "{log}");
    assert_eq!(ran(&again), ["demo-b"]);
    std::fs::write(&toml, text).unwrap();
    let (code, _, log) = bench_run(
        &suite,
        &again,
        &["--category", "happy", "--rerun-failed", &rerun],
    );
    assert_eq!(
        (code, ran(&again)),
        (0, vec!["demo-b".to_string()]),
        "{log}"
    );
    let passed = again.display().to_string();
    let (code, _, log) = bench_run(
        &suite,
        &t.path().join("o4"),
        &["--category", "happy", "--rerun-failed", &passed],
    );
    assert_eq!(code, 0, "{log}");
    assert!(log.contains("nothing to rerun"), "{log}");
}

/// `bench run --hybrid`: a case whose requests match its recording replays
/// whole (no live call); a case whose run spec changed the executor's prompt
/// replays its plan call and goes live from its first execute call. Per
/// case-run traffic is in summary.json and the summary's traffic line, and
/// what was observed replays offline from OUT/hybrid/suite to the same
/// per-case verdicts.
#[test]
fn hybrid_replays_what_matches_and_measures_the_rest_live() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let up = rt.block_on(async {
        let s = wiremock::MockServer::start().await;
        wiremock::Mock::given(wiremock::matchers::method("POST"))
            .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(serde_json::json!({
                "id": "msg_standin", "type": "message", "role": "assistant", "model": "claude-opus-5",
                "content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn",
                "stop_sequence": null, "usage": {"input_tokens": 500, "output_tokens": 5}})))
            .mount(&s)
            .await;
        s
    });
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suites");
    add_case(&suite, "happy", "as-recorded", GOOD);
    add_case(&suite, "happy", "new-prompt", GOOD);
    // A recorded case (no scenario it is compiled from) whose harness now
    // sends another executor prompt.
    std::fs::remove_file(suite.join("happy/new-prompt/scenario.json")).unwrap();
    let spec = suite.join("happy/new-prompt/run.toml");
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(
        &spec,
        format!("{text}\n[prompts]\nexecutor_extra = \"Be terse.\"\n"),
    )
    .unwrap();
    let out = t.path().join("out");
    let endpoint = up.uri();
    let (code, s, log) = bench_run(
        &suite,
        &out,
        &[
            "--category",
            "happy",
            "--hybrid",
            "--endpoint",
            &endpoint,
            "--protocol",
            "anthropic",
            "--max-usd",
            "1",
        ],
    );
    assert_eq!(
        code, 1,
        "the changed prompt's live run does not reach the goal: {log}"
    );
    let calls = |id: &str| {
        let c = s["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("{id}: {log}"));
        c["runs"][0]["live_calls"].clone()
    };
    let same = calls("as-recorded");
    assert_eq!(same["live"], 0, "{same}");
    assert!(same["replayed"].as_u64().unwrap() >= 4, "{same}");
    let changed = calls("new-prompt");
    assert!(changed["live"].as_u64().unwrap() >= 1, "{changed}");
    assert_eq!(changed["replayed"], 1, "the plan call replays: {changed}");
    assert!(
        changed["diverged"].as_str().unwrap().contains("system"),
        "{changed}"
    );
    assert!(log.contains("Model traffic: "), "{log}");
    let got = rt.block_on(up.received_requests()).unwrap();
    assert_eq!(got.len() as u64, changed["live"].as_u64().unwrap());
    // Next time, offline: the same verdicts from what was observed.
    drop(up);
    let (code2, s2, log2) = bench_run(
        &out.join("hybrid/suite"),
        &t.path().join("out2"),
        &["--category", "happy"],
    );
    assert_eq!(code2, code, "{log2}");
    for id in ["as-recorded", "new-prompt"] {
        let passed = |s: &Value| {
            s["cases"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["id"] == id)
                .unwrap()["passed"]
                .clone()
        };
        assert_eq!(passed(&s), passed(&s2), "{id}: {log2}");
    }
    assert!(!log2.contains("Model traffic"), "{log2}");
    // An endpoint that fails mid-case: that case-run measured nothing, and
    // says why first; its live call is counted.
    let (code3, s3, log3) = bench_run(
        &suite,
        &t.path().join("out3"),
        &[
            "--category",
            "happy",
            "--hybrid",
            "--endpoint",
            "http://127.0.0.1:9",
            "--protocol",
            "anthropic",
            "--max-usd",
            "1",
        ],
    );
    assert_eq!(code3, 1, "{log3}");
    let run = s3["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "new-prompt")
        .unwrap()["runs"][0]
        .clone();
    assert_eq!(run["bench_fault"]["kind"], "live_not_measured", "{run}");
    assert!(
        run["cause"]
            .as_str()
            .unwrap()
            .starts_with("live call not answered by the model: cannot connect"),
        "{run}"
    );
    assert!(run["live_calls"]["live"].as_u64().unwrap() >= 1, "{run}");
    assert!(
        log3.contains("FAIL happy/new-prompt run 0: live call not answered by the model"),
        "{log3}"
    );
}

/// `bench index` over two runs of a suite, the second with one case broken
/// and one case new: one row per run, one mark per run per case (`·` where
/// a case was not run), the failed case marked for the "failed last" filter
/// with the command that reruns it, and a directory without a summary named.
#[test]
fn the_index_shows_each_run_and_every_case_s_history() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suites");
    add_case(&suite, "happy", "demo-ok", GOOD);
    add_case(&suite, "edge", "demo-flips", GOOD);
    let first = t.path().join("first");
    let (code, _, log) = bench_run(&suite, &first, &["--category", "happy,edge"]);
    assert_eq!(code, 0, "{log}");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let flips = suite.join("edge/demo-flips/case.toml");
    let text = std::fs::read_to_string(&flips).unwrap();
    std::fs::write(
        &flips,
        text.replace("ending = \"GOAL_MET\"", "ending = \"NO_PROGRESS\""),
    )
    .unwrap();
    add_case(&suite, "happy", "demo-new", GOOD);
    let second = t.path().join("second");
    let (code, _, log) = bench_run(&suite, &second, &["--category", "happy,edge"]);
    assert_eq!(code, 1, "{log}");
    let page = t.path().join("index.html");
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args([
            "index",
            second.to_str().unwrap(),
            first.to_str().unwrap(),
            "--out",
            page.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = scraper::Html::parse_document(&std::fs::read_to_string(&page).unwrap());
    let sel = |s: &str| scraper::Selector::parse(s).unwrap();
    let runs: Vec<String> = html
        .select(&sel("table:not(.history) tr td:nth-child(4)"))
        .map(|td| td.text().collect())
        .collect();
    assert_eq!(
        runs,
        vec!["PASS", "FAIL"],
        "oldest first, whatever the order given"
    );
    let row = |id: &str| {
        html.select(&sel("tr.row"))
            .find(|r| r.text().next() == Some(id))
            .unwrap_or_else(|| panic!("no row for {id}"))
    };
    let marks = |id: &str| -> String {
        row(id)
            .select(&sel("td.marks"))
            .next()
            .unwrap()
            .text()
            .collect()
    };
    assert_eq!(marks("demo-ok"), "✓✓");
    assert_eq!(marks("demo-flips"), "✓✗");
    assert_eq!(marks("demo-new"), "·✓");
    let flipped = row("demo-flips");
    assert!(
        flipped.value().classes().any(|c| c == "last-failed"),
        "{:?}",
        flipped.value()
    );
    let rerun: String = flipped
        .select(&sel("code"))
        .next()
        .unwrap()
        .text()
        .collect();
    assert_eq!(rerun, "bench run --case demo-flips");
    assert!(row("demo-ok").select(&sel("code")).next().is_none());
    // Each mark and the case's name open that case's run page: demo-flips'
    // failed mark its failed case-run's, the name its latest page.
    let hrefs: Vec<&str> = flipped
        .select(&sel("td.marks a"))
        .filter_map(|a| a.value().attr("href"))
        .collect();
    assert_eq!(hrefs.len(), 2, "one link per mark");
    for h in &hrefs {
        assert!(t.path().join(h).is_file(), "{h} is not a page");
    }
    assert!(hrefs[1].starts_with("second/"), "{hrefs:?}");
    let name = flipped.select(&sel("td a")).next().unwrap();
    assert_eq!(name.value().attr("href"), Some(hrefs[1]));
    assert_eq!(
        row("demo-new").select(&sel("td.marks a")).count(),
        1,
        "no link where absent"
    );
    // The filter's one script, allowed by its hash.
    assert_eq!(html.select(&sel("script")).count(), 1);
    assert_eq!(
        html.select(&sel("tr[data-row][data-status=failed]"))
            .count(),
        1
    );
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args([
            "index",
            t.path().join("nowhere").to_str().unwrap(),
            "--out",
            page.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nowhere/summary.json"));
}
