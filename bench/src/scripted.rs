//! Scripted cassettes: a hand-written scenario (`scenario.json`) compiled
//! to the replay format, with the recording conditions of the case's own
//! run spec (harness::recording_conditions); the one-time migration of
//! cassettes written before conditions existed; and the staleness check the
//! suite loader runs, so a cassette its scenario no longer compiles to is
//! refused, never replayed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use harness::model::conditions::{every_role_as, ConditionField, Conditions};
use harness::model::types::CallRole;
use harness::replay::Cassette;
use harness::scenario::Scenario;
use serde_json::Value;

/// The date and author a scripted cassette is stamped with when its
/// scenario has none, so compiling twice gives the same bytes.
const MADE_WHEN: &str = "1970-01-01";
const MADE_BY: &str = "bench script";

/// Why a scenario did not compile, or a cassette did not migrate. Each
/// message names the file it is about.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The scenario file: unreadable, or not a scenario (the replay
    /// crate's loader names the file and the field).
    #[error("{0}")]
    Scenario(String),
    /// No run spec beside the scenario, and the scenario is not
    /// indifferent to every condition.
    #[error(
        "{}: no run.toml beside it to read the recording conditions from; expected the case's run spec there, \
         or `\"indifferent_to\": {}` in the scenario for replies that hold under any request",
        scenario.display(),
        serde_json::to_string(&ConditionField::ALL).unwrap_or_default()
    )]
    NoRunSpec { scenario: PathBuf },
    /// The run spec beside the scenario does not load.
    #[error(transparent)]
    Spec(#[from] harness::spec::SpecError),
    /// The run spec's recording conditions could not be read (its
    /// workspace, its request settings).
    #[error("{0}")]
    Conditions(String),
    /// The scenario's calls do not make a cassette.
    #[error("{}: {reason}", path.display())]
    Compile { path: PathBuf, reason: String },
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// What the compiler wrote is refused by the replay loader.
    #[error(transparent)]
    Cassette(#[from] harness::replay::CassetteError),
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A cassette from before recording conditions that cannot be
    /// migrated: why, after its path.
    #[error("{}: {reason}", path.display())]
    Migrate { path: PathBuf, reason: String },
}

/// Compile one scenario to the pretty JSON text of its cassette, checked by
/// the same loader the replay server uses (secrets, fields, duplicates,
/// conditions).
pub fn compile(scenario_path: &Path) -> Result<String, ScriptError> {
    let sc = Scenario::load(scenario_path).map_err(ScriptError::Scenario)?;
    let conditions = conditions_for(scenario_path, &sc)?;
    let v = sc
        .to_cassette(MADE_WHEN, MADE_BY, &conditions)
        .map_err(|e| ScriptError::Compile {
            path: scenario_path.to_path_buf(),
            reason: e.to_string(),
        })?;
    let mut text = serde_json::to_string_pretty(&v)?;
    text.push('\n');
    Cassette::from_json_str(&text, scenario_path)?;
    Ok(text)
}

/// Compile `scenario` and write its cassette to `out` (atomically), unless
/// `out` already holds exactly that; true when it was written.
pub fn write_compiled(scenario: &Path, out: &Path) -> Result<bool, ScriptError> {
    let text = compile(scenario)?;
    if std::fs::read_to_string(out).is_ok_and(|current| current == text) {
        return Ok(false);
    }
    harness::durable::atomic_write(out, text.as_bytes()).map_err(|source| ScriptError::Write {
        path: out.to_path_buf(),
        source,
    })?;
    Ok(true)
}

/// The conditions a scenario's replies hold for: those the run spec beside
/// it (`run.toml`) sends. A scenario with no spec beside it must declare
/// itself indifferent to every field; nothing is indifferent by default.
fn conditions_for(
    scenario_path: &Path,
    sc: &Scenario,
) -> Result<BTreeMap<CallRole, Conditions>, ScriptError> {
    let spec_path = scenario_path.with_file_name("run.toml");
    if spec_path.is_file() {
        return conditions_of_spec(&spec_path);
    }
    let all = ConditionField::ALL
        .iter()
        .all(|f| sc.indifferent_to.contains(f));
    if all {
        return Ok(every_role_as(sc.protocol, &Value::Null));
    }
    Err(ScriptError::NoRunSpec {
        scenario: scenario_path.to_path_buf(),
    })
}

/// Each role's conditions as the run spec at `spec_path` sends them.
pub fn conditions_of_spec(spec_path: &Path) -> Result<BTreeMap<CallRole, Conditions>, ScriptError> {
    let spec = harness::spec::RunSpec::load(spec_path)?;
    harness::recording_conditions::of_spec(&spec, &spec.workspace).map_err(ScriptError::Conditions)
}

/// Where `bench script PATH` reads the scenario and writes the cassette.
pub fn targets(p: &Path) -> (PathBuf, PathBuf) {
    if p.is_dir() {
        (p.join("scenario.json"), p.join("cassette.json"))
    } else {
        (p.to_path_buf(), p.with_file_name("cassette.json"))
    }
}

/// A case whose cassette is compiled from a scenario beside it: None when
/// the committed cassette holds what the scenario compiles to now (or there
/// is no scenario), else why not, with the command that fixes it. Compared
/// as cassettes, leaving out each run's `outcome` (how a recorded run
/// ended: added to a recording after the fact, never compiled).
pub fn stale(case_dir: &Path, cassette_path: &Path) -> Option<String> {
    let scenario = case_dir.join("scenario.json");
    if !scenario.is_file() {
        return None;
    }
    let fix = format!("run `bench script {}`", case_dir.display());
    let compiled = compile(&scenario)
        .and_then(|t| Cassette::from_json_str(&t, &scenario).map_err(ScriptError::from));
    let compiled = match compiled {
        Ok(c) => c,
        Err(e) => {
            return Some(format!(
                "its scenario does not compile ({e}); fix it, then {fix}"
            ))
        }
    };
    let committed = match Cassette::load(cassette_path) {
        Ok(c) => c,
        Err(e) => return Some(format!("cannot be read ({e}); {fix}")),
    };
    let without_outcomes = |mut c: Cassette| {
        c.runs.iter_mut().for_each(|r| r.outcome = None);
        c
    };
    if without_outcomes(compiled) == without_outcomes(committed) {
        None
    } else {
        Some(format!(
            "is not what {} and run.toml compile to (a stale recording is never replayed); {fix}",
            scenario.display()
        ))
    }
}

/// Rewrite a cassette from before recording conditions (`harness-cassette/1`)
/// in the current format: each role's conditions read from its recorded
/// request bodies (what was really sent); a role recorded without bodies
/// takes them from `spec` (the run spec it was recorded under), or the
/// migration is refused naming the role. Written atomically; a cassette
/// already in the current format is left alone. `indifferent_to` is
/// written as the cassette's declared indifference (e.g. `seed` for a live
/// recording whose run i used seed S+i: the variant carries the seed).
pub fn migrate_recorded(
    path: &Path,
    spec: Option<&Path>,
    indifferent_to: &[ConditionField],
) -> Result<String, ScriptError> {
    let at = |reason: String| ScriptError::Migrate {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| at(e.to_string()))?;
    let mut v: Value = serde_json::from_str(&text).map_err(|e| at(format!("not JSON: {e}")))?;
    match v.get("format").and_then(Value::as_str) {
        Some(harness::replay::FORMAT) => {
            return Ok(format!("{} already states its conditions", path.display()))
        }
        Some(harness::replay::FORMAT_WITHOUT_CONDITIONS) => {}
        other => {
            return Err(at(format!(
                "field `format` is {other:?}; expected \"{}\"",
                harness::replay::FORMAT_WITHOUT_CONDITIONS
            )))
        }
    }
    v["format"] = Value::String(harness::replay::FORMAT.into());
    let mut c: Cassette = serde_json::from_value(v).map_err(|e| at(e.to_string()))?;
    c.indifferent_to = indifferent_to.to_vec();
    c.conditions_from_bodies().map_err(at)?;
    let used: Vec<CallRole> = c
        .runs
        .iter()
        .flat_map(|r| r.interactions.iter().map(|i| i.role))
        .collect();
    let missing: Vec<CallRole> = used
        .into_iter()
        .filter(|r| !c.conditions.contains_key(r))
        .collect();
    if !missing.is_empty() {
        let Some(spec) = spec else {
            let names: Vec<&str> = missing.iter().map(|r| r.as_str()).collect();
            return Err(at(format!(
                "role(s) {} were recorded without request bodies; name the run spec they were made under with --spec",
                names.join(", ")
            )));
        };
        let from_spec = conditions_of_spec(spec)?;
        for r in missing {
            c.conditions.insert(r, from_spec[&r].clone());
        }
    }
    c.save(path)?;
    Ok(format!(
        "migrated {} ({} roles)",
        path.display(),
        c.conditions.len()
    ))
}
