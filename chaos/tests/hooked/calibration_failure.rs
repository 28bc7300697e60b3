//! A clean calibration run (no fault injected) that misses its case's
//! expected ending is a finding about the harness under test, reported with
//! the ending and detail from the run's report.json (never its stdout); only
//! a case that cannot load is "fix the case".

use chaos::driver::{self, Config, Mode, PrepareError};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A stand-in harness: prints `stdout_ending` as its summary line, writes
/// `report` (if any) as report.json into --state-dir, exits `code`.
fn fake_harness(dir: &Path, stdout_ending: &str, report: Option<&str>, code: i32) -> PathBuf {
    let p = dir.join("fake-harness.sh");
    let write = match report {
        Some(r) => format!("cat > \"$state/report.json\" <<'JSON'\n{r}\nJSON\n"),
        None => String::new(),
    };
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\n# args: run --spec S --state-dir D --base-url U\nstate=\"$5\"\n{write}echo 'ending     {stdout_ending}'\nexit {code}\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// A cases dir holding only rollout-p95 (expects GOAL_MET).
fn one_case(dir: &Path) -> PathBuf {
    let cases = dir.join("cases");
    chaos::cases::copy_tree(
        &chaos::cases::default_dir().join("rollout-p95"),
        &cases.join("rollout-p95"),
    )
    .unwrap();
    cases
}

fn config(bin: PathBuf, cases: PathBuf, work: &Path) -> Config {
    Config {
        kills: 1,
        seed: 1,
        modes: vec![Mode::Sigkill],
        case: None,
        replay_kill: None,
        stratum: None,
        harness_bin: bin,
        broken: None,
        cases_dir: cases,
        work_dir: work.join("work"),
        jobs: 1,
        keep: false,
        proc_timeout: Duration::from_secs(20),
        max_procs: 12,
        replay_extra: String::new(),
        interrupted: || false,
    }
}

#[test]
fn a_failed_clean_run_reports_the_ending_and_detail_from_report_json() {
    let d = tempfile::tempdir().unwrap();
    // stdout claims success; the report says what really happened.
    let bin = fake_harness(
        d.path(),
        "GOAL_MET (SUCCESS, exit 0, none)",
        Some(
            r#"{"ending": "UNRECOVERABLE_ERROR", "exit_code": 4, "error_kind": "recording_miss", "detail": "no recording for call_key judge/9"}"#,
        ),
        4,
    );
    let cfg = config(bin, one_case(d.path()), d.path());
    let Err(PrepareError::Calibration(f)) = driver::prepare(&cfg) else {
        panic!("a failed clean run must be a calibration finding");
    };
    assert_eq!(f.len(), 1);
    let f = &f[0];
    assert_eq!(f.case, "rollout-p95");
    assert_eq!(f.expected_ending, "GOAL_MET");
    assert_eq!(f.ending.as_deref(), Some("UNRECOVERABLE_ERROR"));
    assert_eq!(f.exit_code, Some(4));
    assert_eq!(f.error_kind.as_deref(), Some("recording_miss"));
    assert_eq!(
        f.detail.as_deref(),
        Some("no recording for call_key judge/9")
    );
    let msg = f.describe();
    assert!(
        msg.contains("failed to reach the case's expected ending without any fault injected"),
        "{msg}"
    );
    assert!(
        msg.contains("UNRECOVERABLE_ERROR")
            && msg.contains("judge/9")
            && !msg.contains("fix the case"),
        "{msg}"
    );
    // The failed run's files are kept for a human.
    assert!(Path::new(&f.trial_dir).join("state/report.json").is_file());
}

#[test]
fn stdout_cannot_talk_a_clean_run_into_passing() {
    let d = tempfile::tempdir().unwrap();
    // Exit 0 and a GOAL_MET line on stdout, but the report says BUDGET_EXHAUSTED.
    let bin = fake_harness(
        d.path(),
        "GOAL_MET (SUCCESS, exit 0, none)",
        Some(
            r#"{"ending": "BUDGET_EXHAUSTED", "exit_code": 2, "detail": "spent $27.10 of $28.00"}"#,
        ),
        0,
    );
    let cfg = config(bin, one_case(d.path()), d.path());
    let Err(PrepareError::Calibration(f)) = driver::prepare(&cfg) else {
        panic!("the report, not stdout, decides");
    };
    assert_eq!(f[0].ending.as_deref(), Some("BUDGET_EXHAUSTED"));
    assert_eq!(f[0].exit_code, Some(0));
    // No report at all: said plainly.
    let bin = fake_harness(d.path(), "GOAL_MET (SUCCESS, exit 0, none)", None, 0);
    let cfg = config(bin, one_case(&d.path().join("b")), &d.path().join("b"));
    let Err(PrepareError::Calibration(f)) = driver::prepare(&cfg) else {
        panic!("no report.json is a finding");
    };
    assert_eq!(f[0].ending, None);
    assert!(
        f[0].describe().contains("wrote no report.json (exited 0)"),
        "{}",
        f[0].describe()
    );
}

#[test]
fn only_a_case_that_cannot_load_is_fix_the_case() {
    let d = tempfile::tempdir().unwrap();
    let cases = one_case(d.path());
    std::fs::write(
        cases.join("rollout-p95/chaos.toml"),
        "expected_ending = \"FINE\"\n",
    )
    .unwrap();
    let bin = fake_harness(d.path(), "GOAL_MET (SUCCESS, exit 0, none)", None, 0);
    let e = driver::prepare(&config(bin, cases, d.path()))
        .err()
        .expect("must not load");
    assert!(matches!(e, PrepareError::Case(_)), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("chaos.toml") && msg.contains("fix the case"),
        "{msg}"
    );
}
