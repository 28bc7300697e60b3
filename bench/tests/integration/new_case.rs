//! `bench new-case` and `bench try-case`: a newcomer's first case. The
//! template passes the gate as written; a copy passes under its new id; bad
//! input is refused naming what was expected, and writes nothing.

use std::path::Path;
use std::process::Command;

use crate::common::*;

fn bench(args: &[&str], suite: &Path) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(args)
        .arg("--suite")
        .arg(suite)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

/// Every entry under `dir`, recursively: what a refusal must leave as it was.
fn tree(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = walk(dir)
        .into_iter()
        .map(|p| p.display().to_string())
        .collect();
    v.sort();
    v
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push(e.path());
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        }
    }
    out
}

#[test]
fn the_template_and_a_copy_pass_the_gate_and_bad_input_writes_nothing() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suites");
    std::fs::create_dir_all(suite.join("happy")).unwrap();

    let (code, log) = bench(
        &["new-case", "--category", "happy", "--id", "happy-first"],
        &suite,
    );
    assert_eq!(code, 0, "{log}");
    let dir = suite.join("happy/happy-first");
    for f in [
        "case.toml",
        "run.toml",
        "scenario.json",
        "cassette.json",
        "checks/changelog.sh",
    ] {
        assert!(dir.join(f).is_file(), "{f}: {log}");
        // It lists what it wrote, every file (the check script included).
        assert!(log.contains(&format!("\n  {f}\n")), "{f} not listed: {log}");
    }
    assert!(
        log.contains("names that must agree:") && log.contains("[checks.NAME] in run.toml"),
        "{log}"
    );
    // As written, it passes `bench run --case` (and try-case shows the run).
    let (code, s, log) = bench_run(
        &suite,
        &t.path().join("out"),
        &["--category", "happy", "--case", "happy-first"],
    );
    assert_eq!(code, 0, "{log}");
    assert_eq!(s["cases"][0]["runs"][0]["ending"], "GOAL_MET", "{log}");
    // The last lines of stdout (the log holds stdout, then stderr) say
    // where the files are.
    let out_dir = t.path().join("out");
    let paths = format!(
        ": PASS\nsummary    {}\nreport     {}\njunit      {}\n",
        out_dir.join("summary.md").display(),
        out_dir.join("report.html").display(),
        out_dir.join("junit.xml").display()
    );
    assert!(log.contains(&paths), "{log}");
    // The case-run's own page: its Next names the bench command that
    // reproduces it, never the replay server's --base-url, which died with
    // the bench (issue 49).
    let page =
        std::fs::read_to_string(out_dir.join("cases/happy-first/run-0/state/report.html")).unwrap();
    let next = &page[page.find("id=\"next-steps\"").expect("a Next section")..];
    let next = &next[..next.find("</section>").unwrap()];
    let abs_dir = std::path::absolute(&dir).unwrap();
    assert!(
        next.contains(&format!("bench try-case {}", abs_dir.display())),
        "{next}"
    );
    assert!(
        !next.contains("--base-url http"),
        "the dead replay URL came back: {next}"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["try-case"])
        .arg(&dir)
        .arg("--out")
        .arg(t.path().join("try"))
        .arg("--harness")
        .arg(harness_bin())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("tool write_file")
            && out.contains("-> wrote")
            && out.contains("PASS (GOAL_MET"),
        "{out}"
    );
    // The model's final claim, beside the harness's check of it; no colour
    // into a pipe.
    assert!(out.contains("model said "), "{out}");
    assert!(!out.contains('\u{1b}'), "escape codes into a pipe: {out}");
    // Colour when forced (a CI log viewer), never with NO_COLOR.
    let try_case = |env: &[(&str, &str)]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_bench"));
        c.args(["try-case"])
            .arg(&dir)
            .arg("--out")
            .arg(t.path().join("try"))
            .arg("--harness")
            .arg(harness_bin())
            .env_remove("NO_COLOR");
        for (k, v) in env {
            c.env(k, v);
        }
        String::from_utf8_lossy(&c.output().unwrap().stdout).into_owned()
    };
    let forced = try_case(&[("CLICOLOR_FORCE", "1")]);
    assert!(
        forced.contains("\u{1b}[32mPASS\u{1b}[0m (GOAL_MET"),
        "{forced}"
    );
    let vetoed = try_case(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(!vetoed.contains('\u{1b}'), "{vetoed}");

    // A copy of a committed case, under its own id.
    let from = repo().join("suites/happy/happy-fix-failing-pricing-test");
    let (code, log) = bench(
        &[
            "new-case",
            "--category",
            "edge",
            "--id",
            "edge-copied",
            "--from",
            from.to_str().unwrap(),
        ],
        &suite,
    );
    assert_eq!(code, 0, "{log}");
    let case_toml = std::fs::read_to_string(suite.join("edge/edge-copied/case.toml")).unwrap();
    assert!(
        case_toml.contains("id = \"edge-copied\"") && case_toml.contains("category = \"edge\""),
        "{case_toml}"
    );
    let (code, _, log) = bench_run(&suite, &t.path().join("out2"), &["--category", "edge"]);
    assert_eq!(code, 0, "{log}");

    // Refusals: exit 2, the reason, and the suite exactly as it was.
    let before = tree(&suite);
    for (args, says) in [
        (
            vec!["--category", "nope", "--id", "x"],
            "expected one of happy, edge, adversarial, regression",
        ),
        (
            vec!["--category", "happy", "--id", "happy-first"],
            "already exists",
        ),
        (
            vec!["--category", "edge", "--id", "happy-first"],
            "already exists",
        ),
        (
            vec!["--category", "happy", "--id", "../out"],
            "expected 1-128 characters",
        ),
        (
            vec!["--category", "happy", "--id", ".hidden"],
            "not starting with '.'",
        ),
        (
            vec!["--category", "happy", "--id", "y", "--from", "/nonexistent"],
            "no case.toml",
        ),
    ] {
        let mut a = vec!["new-case"];
        a.extend(args.iter().copied());
        let (code, log) = bench(&a, &suite);
        assert_eq!(code, 2, "{args:?}: {log}");
        assert!(
            log.contains(says) && log.contains("nothing was written"),
            "{args:?}: {log}"
        );
        assert_eq!(tree(&suite), before, "{args:?} wrote something");
    }
}

/// A scenario plan can be written as the JSON object it is; the old escaped
/// string still reads; both together are refused naming the field.
#[test]
fn a_plan_is_an_object_or_a_string_never_both() {
    let t = tempfile::tempdir().unwrap();
    let suite = t.path().join("suites");
    std::fs::create_dir_all(suite.join("happy")).unwrap();
    let (code, log) = bench(
        &["new-case", "--category", "happy", "--id", "happy-plan"],
        &suite,
    );
    assert_eq!(code, 0, "{log}");
    let sc = suite.join("happy/happy-plan/scenario.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sc).unwrap()).unwrap();
    let plan = v["runs"][0]["calls"][0]["plan"].clone();
    assert!(
        plan.is_object(),
        "the template writes the plan as an object"
    );
    v["runs"][0]["calls"][0]["text"] = serde_json::Value::String(plan.to_string());
    std::fs::write(&sc, v.to_string()).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .arg("script")
        .arg(suite.join("happy/happy-plan"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        err.contains("runs[0].calls[0].plan") && err.contains("together with `text`"),
        "{err}"
    );
    // The string form alone compiles to the same cassette as the object.
    let before = std::fs::read_to_string(suite.join("happy/happy-plan/cassette.json")).unwrap();
    v["runs"][0]["calls"][0]
        .as_object_mut()
        .unwrap()
        .remove("plan");
    std::fs::write(&sc, v.to_string()).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .arg("script")
        .arg(suite.join("happy/happy-plan"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let after = std::fs::read_to_string(suite.join("happy/happy-plan/cassette.json")).unwrap();
    assert_eq!(before, after);
}
