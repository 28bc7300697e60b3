//! What a scripted case's traffic asks of the harness, checked at load
//! against the case's own run spec, so a mistake in a hand-written case is
//! refused before any case-run (naming the file and the field) instead of
//! being found by running it, where it reads as an agent failure:
//! - a tool call naming a tool run.toml does not allow;
//! - a plan task whose verify has an unknown kind, or names a check run.toml
//!   does not define;
//! - a call key the run can never reach: a shape the harness never sends, a
//!   task no plan of the run names, an attempt, turn or plan retry past what
//!   any spec allows, or a gap (attempt a2 with no a1, turn 3 with no turn 2).
//!
//! A case that scripts a misuse on purpose (a hallucinated tool, a planner
//! that names a check that does not exist) declares it in case.toml's
//! `[deliberate]`; a declaration its traffic does not use is refused too.
//! Recorded cassettes are what a live model sent: never checked here.

use super::{CaseFile, Deliberate, LoadError};
use harness::replay::{Cassette, MadeHow};
use harness::scenario::Scenario;
use harness::spec::RunSpec;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One model call of a run, as its author wrote it.
struct Call {
    key: String,
    /// The reply's text (a plan's JSON for plan/replan calls).
    text: String,
    tools: Vec<String>,
    /// Where the call is in its file: `runs[0].calls[3]` (scenario.json) or
    /// `runs[0].interactions[3]` (a cassette without a scenario).
    at: String,
    /// Where a plan's tasks are: `.plan` (written as an object) or `.text`.
    plan_field: &'static str,
}

/// The declared misuses the traffic used.
#[derive(Default)]
struct Used {
    tools: BTreeSet<String>,
    verify_kinds: BTreeSet<String>,
    checks: BTreeSet<String>,
}

/// The file the calls were read from and its runs.
struct Source {
    file: PathBuf,
    runs: Vec<Vec<Call>>,
}

/// The verify kinds a plan may use (harness/src/verify.rs).
fn verify_kinds() -> Vec<&'static str> {
    harness::verify::ALLOWED_KINDS
        .iter()
        .filter_map(|k| k.split(' ').next())
        .collect()
}

/// Check a scripted case's traffic against its run spec (see the module doc).
pub fn check(
    dir: &Path,
    file: &CaseFile,
    cassette: &Cassette,
    cassette_path: &Path,
) -> Result<(), LoadError> {
    if cassette.made.how != MadeHow::Scripted {
        return Ok(());
    }
    let spec_path = dir.join("run.toml");
    let spec = RunSpec::load(&spec_path)
        .map_err(|e| err(&spec_path, &e.field, format!("{} (a run spec)", e.expected)))?;
    let case_toml = dir.join("case.toml");
    let deliberate = file.deliberate.clone().unwrap_or_default();
    check_declared(&case_toml, &deliberate, &spec)?;
    let src = source(dir, cassette, cassette_path)?;
    let mut used = Used::default();
    for run in &src.runs {
        check_tools(&src.file, run, &spec, &deliberate, &mut used)?;
        let planned = check_plans(&src.file, run, &spec, &deliberate, &mut used)?;
        check_keys(&src.file, run, &planned)?;
    }
    check_all_used(&case_toml, &deliberate, &used)
}

fn err(file: &Path, field: &str, expected: impl Into<String>) -> LoadError {
    LoadError {
        file: file.display().to_string(),
        field: field.into(),
        expected: expected.into(),
    }
}

/// Each `[deliberate]` entry is a misuse: a tool run.toml does not allow, a
/// kind that is not one, a check run.toml does not define.
fn check_declared(f: &Path, d: &Deliberate, spec: &RunSpec) -> Result<(), LoadError> {
    for (i, t) in d.tools.iter().enumerate() {
        if spec.tools_allowed.iter().any(|a| a == t) {
            return Err(err(f, &format!("deliberate.tools[{i}]"), format!("a tool run.toml does not allow (a misuse the harness must refuse), found {t:?}, which [tools] allow lists")));
        }
    }
    for (i, k) in d.verify_kinds.iter().enumerate() {
        if verify_kinds().contains(&k.as_str()) {
            return Err(err(
                f,
                &format!("deliberate.verify_kinds[{i}]"),
                format!("a verify kind the harness does not know, found {k:?}, which is one"),
            ));
        }
    }
    for (i, c) in d.checks.iter().enumerate() {
        if spec.checks.contains_key(c) {
            return Err(err(
                f,
                &format!("deliberate.checks[{i}]"),
                format!("a check run.toml does not define, found {c:?}, which it defines"),
            ));
        }
    }
    Ok(())
}

/// A declaration nothing in the traffic uses is stale: refused, so
/// `[deliberate]` lists exactly the misuses the case scripts.
fn check_all_used(f: &Path, d: &Deliberate, used: &Used) -> Result<(), LoadError> {
    let lists = [
        ("tools", &d.tools, &used.tools),
        ("verify_kinds", &d.verify_kinds, &used.verify_kinds),
        ("checks", &d.checks, &used.checks),
    ];
    for (name, declared, seen) in lists {
        if let Some((i, x)) = declared
            .iter()
            .enumerate()
            .find(|(_, x)| !seen.contains(*x))
        {
            return Err(err(f, &format!("deliberate.{name}[{i}]"), format!("a misuse the case's calls script, found {x:?}, which none of them uses (remove it)")));
        }
    }
    Ok(())
}

/// The calls as authored: scenario.json when the case has one (the
/// cassette is its compile, call for call: the loader refuses a stale one),
/// else the cassette's replies.
fn source(dir: &Path, cassette: &Cassette, cassette_path: &Path) -> Result<Source, LoadError> {
    let scenario = dir.join("scenario.json");
    if scenario.is_file() {
        let sc = Scenario::load(&scenario).map_err(|e| err(&scenario, "(file)", e))?;
        let runs = (sc.runs.iter().enumerate())
            .map(|(r, run)| {
                (run.calls.iter().enumerate())
                    .map(|(i, c)| Call {
                        key: c.key.clone(),
                        text: c
                            .plan
                            .as_ref()
                            .map(|p| p.to_string())
                            .unwrap_or_else(|| c.text.clone()),
                        tools: c.tools.iter().map(|t| t.name.clone()).collect(),
                        at: format!("runs[{r}].calls[{i}]"),
                        plan_field: if c.plan.is_some() { ".plan" } else { ".text" },
                    })
                    .collect()
            })
            .collect();
        return Ok(Source {
            file: scenario,
            runs,
        });
    }
    let mut runs = vec![];
    for (r, run) in cassette.runs.iter().enumerate() {
        let mut calls = vec![];
        for (i, it) in run.interactions.iter().enumerate() {
            let at = format!("runs[{r}].interactions[{i}]");
            // A scripted error reply (a 500, a refusal body) has no turn.
            let reply = (it.response.status == 200)
                .then(|| {
                    harness::model::parse_response(cassette.protocol, &it.response.body_bytes())
                        .ok()
                })
                .flatten();
            calls.push(Call {
                key: it.call_key.clone(),
                text: reply.as_ref().map(|p| p.text.clone()).unwrap_or_default(),
                tools: (reply.iter())
                    .flat_map(|p| p.tool_calls.iter().map(|t| t.name.clone()))
                    .collect(),
                at,
                plan_field: ".response.body",
            });
        }
        runs.push(calls);
    }
    Ok(Source {
        file: cassette_path.to_path_buf(),
        runs,
    })
}

/// Every tool a call names is one run.toml allows, or a declared misuse.
fn check_tools(
    f: &Path,
    run: &[Call],
    spec: &RunSpec,
    d: &Deliberate,
    used: &mut Used,
) -> Result<(), LoadError> {
    for c in run {
        for (j, t) in c.tools.iter().enumerate() {
            if spec.tools_allowed.iter().any(|a| a == t) {
                continue;
            }
            if d.tools.contains(t) {
                used.tools.insert(t.clone());
                continue;
            }
            return Err(err(
                f,
                &format!("{}.tools[{j}].name", c.at),
                format!(
                    "a tool run.toml's [tools] allow lists ({}), found {t:?}; a misuse scripted on purpose is declared in case.toml's [deliberate] tools",
                    spec.tools_allowed.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Every verify of a plan (or replan) the harness can read is of a known
/// kind, well formed, and a `check` names one run.toml defines; or the
/// misuse is declared. Returns the task ids the run's plans name.
fn check_plans(
    f: &Path,
    run: &[Call],
    spec: &RunSpec,
    d: &Deliberate,
    used: &mut Used,
) -> Result<BTreeSet<String>, LoadError> {
    let mut planned = BTreeSet::new();
    for c in run
        .iter()
        .filter(|c| c.key.starts_with("plan/") || c.key.starts_with("replan/"))
    {
        // A malformed plan is a case of its own (the harness asks again):
        // there is nothing in it to check.
        let Ok(tasks) = harness::agent::parse_plan(&c.text) else {
            continue;
        };
        for (k, t) in tasks.iter().enumerate() {
            planned.insert(t.id.clone());
            let field = match c.plan_field {
                ".plan" => format!("{}.plan.tasks[{k}].verify", c.at),
                other => format!("{}{other} (tasks[{k}].verify)", c.at),
            };
            check_verify(f, &field, &t.verify, spec, d, used)?;
        }
    }
    Ok(planned)
}

fn check_verify(
    f: &Path,
    field: &str,
    v: &serde_json::Value,
    spec: &RunSpec,
    d: &Deliberate,
    used: &mut Used,
) -> Result<(), LoadError> {
    let kind = v.get("kind").and_then(|k| k.as_str()).unwrap_or("");
    if !verify_kinds().contains(&kind) {
        if d.verify_kinds.iter().any(|k| k == kind) {
            used.verify_kinds.insert(kind.to_string());
            return Ok(());
        }
        return Err(err(
            f,
            &format!("{field}.kind"),
            format!(
                "a verify kind ({}), found {kind:?}; a misuse scripted on purpose is declared in case.toml's [deliberate] verify_kinds",
                verify_kinds().join(", ")
            ),
        ));
    }
    let parsed = harness::verify::parse_model_verify(v).map_err(|e| err(f, field, e))?;
    if let harness::verify::Verify::Check { name } = parsed {
        if !spec.checks.contains_key(&name) {
            if d.checks.contains(&name) {
                used.checks.insert(name);
                return Ok(());
            }
            let defined: Vec<&str> = spec.checks.keys().map(|k| k.as_str()).collect();
            return Err(err(
                f,
                &format!("{field}.name"),
                format!(
                    "a check run.toml defines ({}), found {name:?}; a misuse scripted on purpose is declared in case.toml's [deliberate] checks",
                    if defined.is_empty() { "none".to_string() } else { defined.join(", ") }
                ),
            ));
        }
    }
    Ok(())
}

/// A call key as the harness sends it (harness/src/run_loop).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Plan(u32),
    Replan(u32),
    Compact(u32),
    Judge,
    Execute {
        task: String,
        attempt: u32,
        turn: u32,
    },
    Lesson {
        task: String,
        attempt: u32,
    },
}

/// The key's meaning, or the shape the harness sends for its role.
fn parse_key(key: &str) -> Result<Key, &'static str> {
    let num = |s: &str| s.parse::<u32>().ok().filter(|_| !s.starts_with('+'));
    let attempt = |s: &str| s.strip_prefix('a').and_then(num);
    let parts: Vec<&str> = key.split('/').collect();
    let parsed = match parts.as_slice() {
        ["plan", n] => num(n).map(Key::Plan),
        ["replan", n] => num(n).map(Key::Replan),
        ["compact", n] => num(n).map(Key::Compact),
        ["judge", n] => n.parse::<u64>().ok().map(|_| Key::Judge),
        ["execute", task, a, t] if !task.is_empty() => match (attempt(a), num(t)) {
            (Some(attempt), Some(turn)) => Some(Key::Execute {
                task: task.to_string(),
                attempt,
                turn,
            }),
            _ => None,
        },
        ["lesson", task, a] if !task.is_empty() => attempt(a).map(|attempt| Key::Lesson {
            task: task.to_string(),
            attempt,
        }),
        _ => None,
    };
    parsed.ok_or(match parts[0] {
        "plan" | "replan" | "compact" => "<role>/<n>",
        "judge" => "judge/<step>",
        "execute" => "execute/<task>/a<attempt>/<turn>",
        "lesson" => "lesson/<task>/a<attempt>",
        _ => "one of plan/<n>, replan/<n>, execute/<task>/a<attempt>/<turn>, judge/<step>, compact/<n>, lesson/<task>/a<attempt>",
    })
}

/// Every call key of a run is one the harness can send in that run (see the
/// module doc). Bounds are the harness's maxima, not this spec's values: an
/// A/B overlay may raise `loop_cap` or `retries_per_task` over the same
/// cassette.
fn check_keys(f: &Path, run: &[Call], planned: &BTreeSet<String>) -> Result<(), LoadError> {
    use harness::spec::{LOOP_CAP_MAX, REPLANS_MAX, RETRIES_MAX};
    let mut keys: BTreeMap<Key, &Call> = BTreeMap::new();
    for c in run {
        let k = parse_key(&c.key).map_err(|shape| {
            err(
                f,
                &format!("{}.key", c.at),
                format!("a call key of the form {shape}, found {:?}", c.key),
            )
        })?;
        keys.entry(k).or_insert(c);
    }
    let has = |k: &Key| keys.contains_key(k);
    let has_attempt = |task: &str, a: u32| {
        keys.keys().any(
            |k| matches!(k, Key::Execute { task: t, attempt, .. } if t == task && *attempt == a),
        )
    };
    for (k, c) in &keys {
        let unreachable = match k {
            Key::Plan(n) if *n > harness::run_loop::PLAN_FORMAT_RETRIES => Some(format!(
                "a plan retry the harness makes (at most plan/{}), found plan/{n}",
                harness::run_loop::PLAN_FORMAT_RETRIES
            )),
            Key::Plan(n) if *n > 0 && !has(&Key::Plan(n - 1)) => Some(gap("plan", n - 1)),
            Key::Replan(n) if *n >= REPLANS_MAX => Some(format!("at most replan/{}, found replan/{n}", REPLANS_MAX - 1)),
            Key::Replan(n) if *n > 0 && !has(&Key::Replan(n - 1)) => Some(gap("replan", n - 1)),
            Key::Compact(n) if *n > 0 && !has(&Key::Compact(n - 1)) => Some(gap("compact", n - 1)),
            Key::Execute { task, .. } | Key::Lesson { task, .. } if !planned.contains(task) => Some(format!(
                "a task a plan of this run names ({}), found {task:?}",
                if planned.is_empty() { "none".to_string() } else { planned.iter().cloned().collect::<Vec<_>>().join(", ") }
            )),
            Key::Execute { attempt, .. } | Key::Lesson { attempt, .. } if *attempt > RETRIES_MAX => Some(format!(
                "at most attempt a{RETRIES_MAX} (1 + the most retries_per_task a spec may set), found a{attempt}"
            )),
            Key::Execute { turn, .. } if *turn >= LOOP_CAP_MAX => Some(format!(
                "at most turn {} (the largest loop_cap a spec may set, less one), found {turn}",
                LOOP_CAP_MAX - 1
            )),
            Key::Execute { task, attempt, .. } | Key::Lesson { task, attempt }
                if *attempt > 0 && !has_attempt(task, attempt - 1) =>
            {
                Some(format!(
                    "no gap in attempts: attempt a{attempt} of task {task:?} with no execute/{task}/a{}/* (the harness asks for attempt n only after attempt n-1 failed)",
                    attempt - 1
                ))
            }
            Key::Execute { task, attempt, turn } if *turn > 0
                && !has(&Key::Execute { task: task.clone(), attempt: *attempt, turn: turn - 1 }) =>
            {
                Some(format!(
                    "no gap in turns: turn {turn} with no execute/{task}/a{attempt}/{} (the harness asks for turn n only after turn n-1's reply)",
                    turn - 1
                ))
            }
            Key::Lesson { task, attempt } if !has_attempt(task, *attempt) => Some(format!(
                "a lesson on an attempt the run makes: no execute/{task}/a{attempt}/* in this run"
            )),
            _ => None,
        };
        if let Some(why) = unreachable {
            return Err(err(
                f,
                &format!("{}.key", c.at),
                format!("a call the run can reach: {why}"),
            ));
        }
    }
    Ok(())
}

fn gap(role: &str, missing: u32) -> String {
    format!("no gap: {role}/{missing} is not in this run, and the harness sends {role}/n only after {role}/n-1")
}

#[cfg(test)]
mod tests {
    use crate::suite::{load_case, load_suite, report_fields, suite_case_dirs, LoadError};
    use serde_json::{json, Value};
    use std::path::{Path, PathBuf};

    /// The known-good case every bad fixture is made from: one task `t1`
    /// verified by the check `backup`; tools read_file, write_file,
    /// list_files, run_check, run_command.
    const GOOD: &str = "../suites/happy/happy-backup-script-path-vars";

    /// A copy of the good case under `<tmp>/happy/`, its scenario changed by
    /// `edit` and `case_extra` added to case.toml before `[expect]`, its
    /// cassette compiled from the result (as `bench script` does), loaded.
    fn load_bad(
        edit: impl Fn(&mut Value),
        case_extra: &str,
    ) -> (tempfile::TempDir, PathBuf, Result<(), LoadError>) {
        let t = tempfile::tempdir().unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(GOOD);
        let dir = t.path().join("happy").join("happy-backup-script-path-vars");
        copy_dir(&src, &dir);
        let sc_path = dir.join("scenario.json");
        let mut sc: Value =
            serde_json::from_str(&std::fs::read_to_string(&sc_path).unwrap()).unwrap();
        edit(&mut sc);
        std::fs::write(&sc_path, serde_json::to_string_pretty(&sc).unwrap()).unwrap();
        crate::scripted::write_compiled(&sc_path, &dir.join("cassette.json")).unwrap();
        let case = dir.join("case.toml");
        let text = std::fs::read_to_string(&case).unwrap();
        std::fs::write(
            &case,
            text.replace("\n[expect]\n", &format!("\n{case_extra}\n[expect]\n")),
        )
        .unwrap();
        let r = load_case(&dir, "happy", &report_fields()).map(|_| ());
        (t, dir, r)
    }

    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                copy_dir(&p, &to.join(e.file_name()));
            } else {
                std::fs::copy(&p, to.join(e.file_name())).unwrap();
            }
        }
    }

    fn calls(sc: &mut Value) -> &mut Vec<Value> {
        sc["runs"][0]["calls"].as_array_mut().unwrap()
    }

    /// The plan's one verify, replaced.
    fn set_verify(sc: &mut Value, verify: Value) {
        let plan = json!({"tasks": [{"id": "t1", "description": "d", "verify": verify}]});
        calls(sc)[0]["text"] = Value::String(plan.to_string());
    }

    /// The error, which must name `file` (a file name) and exactly `field`,
    /// and say `said`.
    fn refused(r: Result<(), LoadError>, file: &str, field: &str, said: &str) {
        let e = r.expect_err("a bad case loaded");
        assert!(e.file.ends_with(file), "{e}");
        assert_eq!(e.field, field, "{e}");
        assert!(e.expected.contains(said), "{e}");
    }

    #[test]
    fn the_good_case_loads_after_a_copy_and_recompile() {
        let (_t, _d, r) = load_bad(|_| {}, "");
        r.unwrap();
    }

    #[test]
    fn a_verify_naming_a_check_run_toml_does_not_define_is_refused() {
        let (_t, _d, r) = load_bad(
            |sc| set_verify(sc, json!({"kind": "check", "name": "bakup"})),
            "",
        );
        refused(
            r,
            "scenario.json",
            "runs[0].calls[0].text (tasks[0].verify).name",
            "a check run.toml defines (backup), found \"bakup\"",
        );
    }

    #[test]
    fn an_unknown_verify_kind_is_refused() {
        let (_t, _d, r) = load_bad(
            |sc| set_verify(sc, json!({"kind": "chek", "name": "backup"})),
            "",
        );
        refused(
            r,
            "scenario.json",
            "runs[0].calls[0].text (tasks[0].verify).kind",
            "found \"chek\"",
        );
        // Written as an object in `plan`, the field is the object's.
        let (_t, _d, r) = load_bad(
            |sc| {
                let c = &mut calls(sc)[0];
                c["plan"] = json!({"tasks": [{"id": "t1", "description": "d", "verify": {"kind": "file_exist", "path": "a"}}]});
                c.as_object_mut().unwrap().remove("text");
            },
            "",
        );
        refused(
            r,
            "scenario.json",
            "runs[0].calls[0].plan.tasks[0].verify.kind",
            "found \"file_exist\"",
        );
    }

    #[test]
    fn a_tool_the_spec_does_not_allow_is_refused() {
        // A real tool this run.toml leaves out, and a misspelt one.
        for name in ["edit_file", "read_fille"] {
            let (_t, _d, r) = load_bad(|sc| calls(sc)[1]["tools"][0]["name"] = json!(name), "");
            refused(
                r,
                "scenario.json",
                "runs[0].calls[1].tools[0].name",
                &format!("found {name:?}"),
            );
        }
    }

    #[test]
    fn a_scripted_cassette_without_a_scenario_is_checked_and_named() {
        let (_t, dir, r) = load_bad(|sc| calls(sc)[1]["tools"][0]["name"] = json!("bash"), "");
        assert!(r.is_err());
        std::fs::remove_file(dir.join("scenario.json")).unwrap();
        let r = load_case(&dir, "happy", &report_fields()).map(|_| ());
        refused(
            r,
            "cassette.json",
            "runs[0].interactions[1].tools[0].name",
            "found \"bash\"",
        );
    }

    #[test]
    fn keys_the_run_can_never_reach_are_refused() {
        let retarget = |to: &'static str| {
            move |sc: &mut Value| {
                let mut c = calls(sc)[1].clone();
                c["key"] = json!(to);
                calls(sc).push(c);
            }
        };
        for (key, said) in [
            (
                "execute/t9/a0/0",
                "a task a plan of this run names (t1), found \"t9\"",
            ),
            (
                "execute/t1/0",
                "a call key of the form execute/<task>/a<attempt>/<turn>",
            ),
            ("execute/t1/a0/99", "at most turn 49"),
            ("plan/2", "at most plan/1"),
            ("replan/1", "replan/0 is not in this run"),
            ("lesson/t1/a1", "no execute/t1/a1/* in this run"),
        ] {
            let (_t, _d, r) = load_bad(retarget(key), "");
            let e = r.expect_err(key);
            assert!(e.file.ends_with("scenario.json"), "{key}: {e}");
            assert!(
                e.field.starts_with("runs[0].calls[") && e.field.ends_with("].key"),
                "{key}: {e}"
            );
            assert!(e.expected.contains(said), "{key}: {e}");
        }
    }

    #[test]
    fn a_gap_in_attempt_or_turn_numbers_is_refused() {
        // Attempt a0, then a2 with no a1.
        let (_t, _d, r) = load_bad(
            |sc| {
                let mut c = calls(sc)[1].clone();
                c["key"] = json!("execute/t1/a2/0");
                calls(sc).push(c);
            },
            "",
        );
        let n = 6; // happy-backup-script-path-vars has calls[0..6]
        refused(
            r,
            "scenario.json",
            &format!("runs[0].calls[{n}].key"),
            "no gap in attempts: attempt a2 of task \"t1\" with no execute/t1/a1/*",
        );
        // Turn 2 removed: turns 3 and on can never be asked for.
        let (_t, _d, r) = load_bad(
            |sc| {
                calls(sc).remove(3);
            },
            "",
        );
        refused(
            r,
            "scenario.json",
            "runs[0].calls[3].key",
            "no gap in turns: turn 3 with no execute/t1/a0/2",
        );
    }

    #[test]
    fn a_deliberate_misuse_loads_and_a_stale_or_wrong_declaration_is_refused() {
        let bash = |sc: &mut Value| calls(sc)[1]["tools"][0]["name"] = json!("bash");
        let (_t, _d, r) = load_bad(bash, "[deliberate]\ntools = [\"bash\"]\n");
        r.unwrap();
        let (_t, _d, r) = load_bad(|_| {}, "[deliberate]\ntools = [\"bash\"]\n");
        refused(r, "case.toml", "deliberate.tools[0]", "none of them uses");
        let (_t, _d, r) = load_bad(|_| {}, "[deliberate]\ntools = [\"read_file\"]\n");
        refused(
            r,
            "case.toml",
            "deliberate.tools[0]",
            "which [tools] allow lists",
        );
        let (_t, _d, r) = load_bad(|_| {}, "[deliberate]\nchecks = [\"backup\"]\n");
        refused(r, "case.toml", "deliberate.checks[0]", "which it defines");
        let (_t, _d, r) = load_bad(|_| {}, "[deliberate]\nverify_kinds = [\"check\"]\n");
        refused(r, "case.toml", "deliberate.verify_kinds[0]", "which is one");
        let undefined =
            |sc: &mut Value| set_verify(sc, json!({"kind": "check", "name": "looks_good"}));
        let (_t, _d, r) = load_bad(undefined, "[deliberate]\nchecks = [\"looks_good\"]\n");
        r.unwrap();
    }

    /// Every committed suite loads whole under the checks: the committed
    /// cases' deliberate misuses are all declared, and nothing else trips.
    #[test]
    fn every_committed_case_loads() {
        let suites = Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites");
        let mut roots = vec![suites.clone(), suites.join("live")];
        for extra in ["ab", "ab-lessons", "flaky", "knee", "throughput", "demo"] {
            if suites.join(extra).is_dir() {
                roots.push(suites.join(extra));
            }
        }
        let mut errors = vec![];
        let mut loaded = 0;
        for root in roots {
            if suite_case_dirs(&root, None).map_or(true, |d| d.is_empty()) {
                continue;
            }
            let s = load_suite(&root, None).unwrap();
            loaded += s.cases.len();
            errors.extend(s.errors.iter().map(|e| e.to_string()));
        }
        assert!(errors.is_empty(), "{}", errors.join("\n"));
        assert!(loaded > 100, "{loaded}");
    }
}
