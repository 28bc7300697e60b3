//! Every message `RunSpec::parse` gives for a one-edit mistake, pinned
//! against tests/spec_messages.golden. The golden file was written by the
//! hand-walked loader the serde one replaced, so this is the proof that a
//! user who gets a field wrong reads the same line as before (file, field
//! path, what was expected). A deliberate message change rewrites the file:
//! `UPDATE_GOLDEN=1 cargo test -p harness --test integration spec_messages`, and the
//! diff is the review.

use harness::spec::RunSpec;
use std::path::Path;

/// A spec that sets every field the format has (one of each kind of table),
/// so each one can be broken on its own.
const FULL: &str = r#"goal = "Reduce p95 latency on /api/search to under 200ms."
workspace = "ws"
outbox = "outbox.jsonl"
[predicate]
command = ["python3", "checks/p95.py"]
timeout_s = 60
[budget]
hard_cap_usd = 28.0
wall_clock_limit_s = 28800
task_budget_tokens = 74700
[model]
protocol = "openai"
base_url = "http://127.0.0.1:1"
api_key_env = "OPENAI_API_KEY"
planner = "opus"
executor = "opus"
judge = "opus"
max_tokens = 4096
request_timeout_s = 120
http_attempts = 5
temperature = 0.5
seed = 7
structured_output = "json_schema"
[prices.opus]
input_usd_per_mtok = 5.0
output_usd_per_mtok = 25.0
[loop]
loop_cap = 6
retries_per_task = 1
max_replans = 3
no_progress_k = 5
min_pass_rate = 0.7
pass_rate_min_tasks = 10
[drift]
every_tasks = 5
prune_above = 0.3
halt_above = 0.5
[tools]
allow = ["read_file", "write_file"]
[checks.tests]
command = ["true"]
timeout_s = 30
[check_env]
pass = ["PGHOST"]
[alerts]
file = "alerts.log"
webhook_url = "http://127.0.0.1:2/hook"
"#;

/// One value of every TOML type, and the edge values the checks look at.
const VALUES: [&str; 16] = [
    "\"x\"",
    "\"\"",
    "\"  \"",
    "0",
    "-1",
    "3",
    "1.5",
    "-0.5",
    "nan",
    "inf",
    "true",
    "1979-05-27",
    "[]",
    "[1]",
    "[\"a\", \"\"]",
    "{ a = 1 }",
];

/// The tables of FULL, by header, and the key that replaces each.
const SECTIONS: [(&str, &str); 12] = [
    ("[predicate]", "predicate"),
    ("[budget]", "budget"),
    ("[model]", "model"),
    ("[prices.opus]", "prices"),
    ("[prices.opus]", "prices.opus"),
    ("[loop]", "loop"),
    ("[drift]", "drift"),
    ("[tools]", "tools"),
    ("[checks.tests]", "checks"),
    ("[checks.tests]", "checks.tests"),
    ("[check_env]", "check_env"),
    ("[alerts]", "alerts"),
];

/// (what was changed, the spec text) for every one-edit mistake.
fn edits() -> Vec<(String, String)> {
    let lines: Vec<&str> = FULL.lines().collect();
    let with = |i: usize, new: Option<String>| -> String {
        let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        match new {
            Some(n) => out[i] = n,
            None => {
                out.remove(i);
            }
        }
        out.join("\n") + "\n"
    };
    let mut v = vec![("as is".to_string(), FULL.to_string())];
    for (i, l) in lines.iter().enumerate() {
        if let Some((key, _)) = l.split_once(" = ") {
            v.push((format!("line {i} removed: {l}"), with(i, None)));
            for x in VALUES {
                v.push((
                    format!("line {i}: {key} = {x}"),
                    with(i, Some(format!("{key} = {x}"))),
                ));
            }
        }
        if l.starts_with('[') {
            v.push((
                format!("unknown key after {l}"),
                with(i, Some(format!("{l}\nbogus = 1"))),
            ));
        }
    }
    v.push(("unknown top-level key".into(), format!("bogus = 1\n{FULL}")));
    // A whole table replaced by a value of another type (and, for the
    // named tables, one name replaced by a value).
    for (header, key) in SECTIONS {
        let start = lines.iter().position(|l| *l == header).unwrap();
        let end = (start + 1..lines.len())
            .find(|&j| lines[j].starts_with('['))
            .unwrap_or(lines.len());
        for x in ["5", "\"prose\"", "[1]", "1979-05-27"] {
            let mut out: Vec<String> = lines[..start].iter().map(|l| l.to_string()).collect();
            let replacement = match key.split_once('.') {
                Some((table, name)) => format!("[{table}]\n{name} = {x}"),
                None => format!("{key} = {x}"),
            };
            // A bare key must come before the first table header.
            let first = lines.iter().position(|l| l.starts_with('[')).unwrap();
            if key.contains('.') {
                out.push(replacement);
            } else {
                out.insert(first, replacement);
            }
            out.extend(lines[end..].iter().map(|l| l.to_string()));
            v.push((format!("{key} replaced by {x}"), out.join("\n") + "\n"));
        }
        let mut out: Vec<String> = lines[..start].iter().map(|l| l.to_string()).collect();
        out.extend(lines[end..].iter().map(|l| l.to_string()));
        v.push((format!("{header} removed"), out.join("\n") + "\n"));
    }
    v.push(("not TOML".into(), format!("{FULL}\n[budget\n")));
    v.push(("duplicate key".into(), format!("goal = \"a\"\n{FULL}")));
    v
}

fn dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("ws")).unwrap();
    std::fs::create_dir_all(d.path().join("checks")).unwrap();
    std::fs::write(d.path().join("checks/p95.py"), "print(410)\n").unwrap();
    d
}

fn outcome(text: &str, d: &Path) -> String {
    match RunSpec::parse(text, "run.toml", d) {
        Ok(_) => "ok".to_string(),
        Err(e) => e.to_string().replace(&d.display().to_string(), "<dir>"),
    }
}

#[test]
fn every_one_edit_mistake_reads_as_pinned() {
    let d = dir();
    let d = std::fs::canonicalize(d.path()).unwrap();
    let got: String = edits()
        .iter()
        .map(|(what, text)| format!("{what}\n    {}\n", outcome(text, &d)))
        .collect();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/spec_messages.golden");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&golden).unwrap();
    // Edit by edit, so a failure names every edit whose message moved.
    let pairs = |s: &str| -> Vec<String> {
        s.lines()
            .collect::<Vec<_>>()
            .chunks(2)
            .map(|c| c.join("\n"))
            .collect()
    };
    let (got, want) = (pairs(&got), pairs(&want));
    let moved: Vec<String> = got
        .iter()
        .zip(want.iter())
        .filter(|(g, w)| g != w)
        .map(|(g, w)| format!("now:    {g}\npinned: {w}"))
        .collect();
    assert!(
        moved.is_empty(),
        "{} moved:\n{}",
        moved.len(),
        moved.join("\n")
    );
    assert_eq!(got.len(), want.len());
}
