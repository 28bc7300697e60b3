//! ARCHITECTURE.md's structural invariants, read from the manifests and the
//! sources rather than trusted to review: the crate graph it draws, that only
//! `replay` brings wiremock into the harness, that `model` names no money,
//! and that no bench command reaches into another. Nothing here runs a
//! binary; `cargo metadata --no-deps` reads only the workspace's manifests.

use e2e::repo;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// The workspace's manifests, as cargo reads them.
fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(repo())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

/// `(from, to)` for every dependency of a workspace package whose kind is
/// `kind` ("normal", "dev" or "build"), restricted to `only` when given.
fn edges(m: &Value, kind: &str, only: Option<&BTreeSet<String>>) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for p in m["packages"].as_array().expect("packages") {
        let from = p["name"].as_str().expect("package name");
        for d in p["dependencies"].as_array().expect("dependencies") {
            let to = d["name"].as_str().expect("dependency name");
            let k = d["kind"].as_str().unwrap_or("normal");
            if k == kind && only.is_none_or(|set| set.contains(to)) {
                out.insert((from.to_string(), to.to_string()));
            }
        }
    }
    out
}

fn workspace_names(m: &Value) -> BTreeSet<String> {
    m["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| p["name"].as_str().expect("package name").to_string())
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The layers, bottom first: a crate may depend only on a lower layer.
const LAYERS: [&str; 7] = [
    "strict", "model", "replay", "harness", "chaos", "bench", "e2e",
];

/// ARCHITECTURE.md, "Crates and their dependencies": the drawn graph is the
/// manifests' graph, every edge points down, and nothing but the end-to-end
/// tests' package sits above `bench`.
#[test]
fn the_crate_graph_is_the_one_drawn_and_points_one_way() {
    let m = metadata();
    let ws = workspace_names(&m);
    let drawn = pairs(&[
        ("replay", "model"),
        ("replay", "strict"),
        ("harness", "model"),
        ("harness", "replay"),
        ("harness", "strict"),
        ("chaos", "harness"),
        ("bench", "chaos"),
        ("bench", "harness"),
        ("bench", "strict"),
    ]);
    assert_eq!(
        edges(&m, "normal", Some(&ws)),
        drawn,
        "the workspace's crate graph is not the one ARCHITECTURE.md draws"
    );
    for kind in ["normal", "dev", "build"] {
        for (from, to) in edges(&m, kind, Some(&ws)) {
            let rank = |n: &str| LAYERS.iter().position(|l| *l == n);
            let (Some(f), Some(t)) = (rank(&from), rank(&to)) else {
                panic!("{from} -> {to}: a crate ARCHITECTURE.md does not place");
            };
            assert!(
                t < f,
                "{from} -> {to} ({kind}) points up the layers {LAYERS:?}"
            );
        }
    }
    // The harness's replay server is a default feature, not a hard edge.
    let harness = m["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "harness")
        .expect("the harness package");
    let replay = harness["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "replay")
        .expect("harness depends on replay");
    assert_eq!(replay["optional"], true, "{replay}");
    assert_eq!(
        harness["features"]["default"],
        serde_json::json!(["replay"])
    );
}

/// "Of the harness's normal dependencies, only `replay` brings wiremock":
/// the crates under the harness use it in tests only.
#[test]
fn only_replay_brings_wiremock_into_the_harness() {
    let m = metadata();
    let wiremock: BTreeSet<String> = ["wiremock".to_string()].into();
    let normal: BTreeSet<String> = edges(&m, "normal", Some(&wiremock))
        .into_iter()
        .map(|(from, _)| from)
        .filter(|from| ["strict", "model", "replay", "harness"].contains(&from.as_str()))
        .collect();
    assert_eq!(normal, ["replay".to_string()].into());
}

/// Code with `//` comments cut off (a string holding `//` is cut too, which
/// only hides text from the checks below, never invents a hit).
fn code_lines(path: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.split("//").next().unwrap_or("").to_lowercase()))
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
}

/// "Nothing in `model` knows about dollars": no line of its code (comments
/// aside) says usd, dollar or price (the ledger prices `Usage` in the
/// harness). "cost" is left out: a failed attempt "may have cost" is
/// `Billing`, a fact about the reply, not money.
#[test]
fn model_names_no_money() {
    let mut files = Vec::new();
    rust_files(&repo().join("model/src"), &mut files);
    let mut hits = Vec::new();
    for f in &files {
        for (n, line) in code_lines(f) {
            for word in ["usd", "dollar", "price"] {
                if line.contains(word) {
                    hits.push(format!("{}:{n}: {word}", f.display()));
                }
            }
        }
    }
    assert!(hits.is_empty(), "model/ names money: {hits:#?}");
}

/// The commands the binary imports by their bare name (`use cmd::{..}` in
/// bench/src/main.rs): in the binary, `crate::<name>` is that command.
fn commands_named_at_the_root() -> BTreeSet<String> {
    let main = std::fs::read_to_string(repo().join("bench/src/main.rs")).unwrap();
    let start = main
        .find("use cmd::{")
        .expect("bench/src/main.rs imports the commands")
        + 10;
    let end = start + main[start..].find('}').unwrap();
    main[start..end]
        .split(',')
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect()
}

/// Whether `line` holds the path `<pre><name>` as whole segments: the text
/// before is no identifier's tail, the text after no identifier's rest.
fn names_segment(line: &str, pre: &str, name: &str) -> bool {
    let path = format!("{pre}{name}");
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(path.as_str()).any(|(i, _)| {
        let before_ok = !line[..i].ends_with(ident);
        let after_ok = !line[i + path.len()..].starts_with(ident);
        before_ok && after_ok
    })
}

/// "A command never calls another command": no file of `bench/src/cmd/`
/// names a sibling command's module. The one exception is named: `schemas`
/// generates the schema of `ab`'s output type.
#[test]
fn no_bench_command_reaches_into_another() {
    let cmd = repo().join("bench/src/cmd");
    let commands = commands_named_at_the_root();
    assert!(
        commands.len() > 10,
        "bench/src/main.rs imports {commands:?}"
    );
    const ALLOWED: [(&str, &str); 1] = [("schemas", "ab")];
    let mut files = Vec::new();
    rust_files(&cmd, &mut files);
    let mut hits = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&cmd).unwrap();
        let own = rel
            .iter()
            .next()
            .unwrap()
            .to_str()
            .unwrap()
            .trim_end_matches(".rs");
        if own == "mod" {
            continue; // cmd/mod.rs declares the commands
        }
        // From a file `depth` modules below `cmd`, `super::` that many times
        // is `cmd`; `crate::<name>` is the command the binary imports.
        // (a `mod.rs` is its directory's module, one level up).
        let depth = rel.components().count() - usize::from(f.ends_with("mod.rs"));
        let prefixes = [
            "crate::".to_string(),
            "cmd::".to_string(),
            "super::".repeat(depth),
        ];
        for (n, line) in code_lines(f) {
            for other in commands.iter().filter(|c| c.as_str() != own) {
                let named = prefixes.iter().any(|pre| names_segment(&line, pre, other));
                if named && !ALLOWED.contains(&(own, other.as_str())) {
                    hits.push(format!("{}:{n}: names command {other}", f.display()));
                }
            }
        }
    }
    assert!(
        hits.is_empty(),
        "a bench command reaches into another: {hits:#?}"
    );
}
