//! Chaos cases as data: `chaos/cases/<id>/` holds `run.toml` (the spec),
//! `chaos.toml` (what a clean run must end with), `workspace/` (copied fresh
//! for every trial), `checks/` (predicate scripts, outside the workspace) and
//! `scenario.json` (what the model answers, compiled to a cassette at
//! start-up). What the oracle needs to know about a case (the tasks the
//! planner can admit and how each verifies, the migrations and their steps,
//! what each call costs, which tasks each drift verdict prunes) is read from
//! the same files.

use harness::ending::Ending;
use harness::replay::{Cassette, Recordings};
use harness::scenario::Scenario;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Case {
    /// Directory name under chaos/cases.
    pub id: String,
    pub dir: PathBuf,
    /// The cassette's case id (the replay URL's `<case>`).
    pub replay_case: String,
    pub cassette: Cassette,
    pub goal: String,
    pub goal_sha256: String,
    /// Task id -> its `verify` object, from every plan and replan reply.
    pub tasks: BTreeMap<String, Value>,
    /// Migration name -> its steps (path, content), from workspace/migrations.
    pub migrations: BTreeMap<String, Vec<(String, String)>>,
    /// Call key -> what the provider bills for it (the cassette's usage at the
    /// spec's prices).
    pub cost_usd: BTreeMap<String, f64>,
    /// Judge call key -> the task ids its verdict prunes (its off-goal ids,
    /// when its score is in the spec's prune band).
    pub prunes: BTreeMap<String, Vec<String>>,
    /// What a clean run (no fault injected) ends with (`chaos.toml`).
    pub expected_ending: Ending,
    /// The spec's `budget.hard_cap_usd`.
    pub hard_cap_usd: f64,
}

/// `chaos/cases/<id>/chaos.toml`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseMeta {
    expected_ending: Ending,
}

pub const META_FILE: &str = "chaos.toml";

impl Case {
    pub fn migration_of_task(&self, task: &str) -> Option<&str> {
        self.tasks
            .get(task)?
            .get("kind")
            .filter(|k| *k == "migration_state")?;
        self.tasks.get(task)?.get("name")?.as_str()
    }
}

/// The directory holding the committed cases.
pub fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("cases")
}

/// Why a case cannot be used (the driver says "fix the case: " before it).
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: no cases (directories with a run.toml)", .0.display())]
    NoCases(PathBuf),
    #[error(transparent)]
    Spec(#[from] harness::spec::SpecError),
    /// The scenario or its recording conditions, in the harness's words.
    #[error("{0}")]
    Scenario(String),
    #[error("{}: {msg}", path.display())]
    Cassette { path: PathBuf, msg: String },
    #[error(transparent)]
    CassetteFile(#[from] harness::replay::CassetteError),
    #[error("{}: a chaos case has exactly one run (found {found})", path.display())]
    NotOneRun { path: PathBuf, found: usize },
    #[error("{}: expected `expected_ending = \"<one of the seven endings>\"`: {source}", path.display())]
    Meta {
        path: PathBuf,
        source: toml::de::Error,
    },
    /// "Never executed again" needs one task per id: a replan that
    /// re-proposed an id would make the oracle take its new run for a re-run.
    #[error("{}: {key}: task id {id:?} is proposed twice; every plan and replan reply in a chaos case must use new ids", path.display())]
    TaskTwice {
        path: PathBuf,
        key: String,
        id: String,
    },
    #[error("{}: no price for {model}", dir.display())]
    NoPrice { dir: PathBuf, model: String },
    /// A migration file that cannot be read (the error alone, as before).
    #[error("{0}")]
    MigrationRead(std::io::Error),
    #[error("{}: {source}", path.display())]
    MigrationJson {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(transparent)]
    Recordings(#[from] harness::replay::RecordingsError),
}

pub fn load_all(dir: &Path) -> Result<Vec<Case>, CaseError> {
    let mut ids: Vec<String> = std::fs::read_dir(dir)
        .map_err(|source| CaseError::Read {
            path: dir.to_path_buf(),
            source,
        })?
        .flatten()
        .filter(|e| e.path().join("run.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    if ids.is_empty() {
        return Err(CaseError::NoCases(dir.to_path_buf()));
    }
    ids.iter().map(|id| load(&dir.join(id))).collect()
}

pub fn load(dir: &Path) -> Result<Case, CaseError> {
    let id = dir
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let spec = harness::spec::RunSpec::load(&dir.join("run.toml"))?;
    let sc_path = dir.join("scenario.json");
    let sc = Scenario::load(&sc_path).map_err(CaseError::Scenario)?;
    let conditions = harness::recording_conditions::of_spec(&spec, &spec.workspace)
        .map_err(CaseError::Scenario)?;
    let v = sc
        .to_cassette("1970-01-01", "bench chaos", &conditions)
        .map_err(|msg| CaseError::Cassette {
            path: sc_path.clone(),
            msg,
        })?;
    let cassette = Cassette::from_json_str(&v.to_string(), &sc_path)?;
    if sc.runs.len() != 1 {
        return Err(CaseError::NotOneRun {
            path: sc_path,
            found: sc.runs.len(),
        });
    }
    let meta = load_meta(&dir.join(META_FILE))?;
    let calls = CallFacts::of(dir, &sc_path, &sc, &spec)?;
    let migrations = load_migrations(dir)?;
    Ok(Case {
        id,
        dir: dir.to_path_buf(),
        replay_case: sc.case.clone(),
        cassette,
        goal: spec.goal.clone(),
        goal_sha256: harness::goal::sha256_hex(&spec.goal),
        tasks: calls.tasks,
        migrations,
        cost_usd: calls.cost_usd,
        prunes: calls.prunes,
        expected_ending: meta.expected_ending,
        hard_cap_usd: spec.hard_cap_usd,
    })
}

/// `chaos.toml`: a case without its expected ending would let any ending pass.
fn load_meta(meta_path: &Path) -> Result<CaseMeta, CaseError> {
    let text = std::fs::read_to_string(meta_path).map_err(|source| CaseError::Read {
        path: meta_path.to_path_buf(),
        source,
    })?;
    toml::from_str(&text).map_err(|source| CaseError::Meta {
        path: meta_path.to_path_buf(),
        source,
    })
}

/// What the oracle reads from the scenario's calls: the tasks proposed, what
/// each call costs, and what each drift verdict prunes.
struct CallFacts {
    tasks: BTreeMap<String, Value>,
    cost_usd: BTreeMap<String, f64>,
    prunes: BTreeMap<String, Vec<String>>,
}

impl CallFacts {
    fn of(
        dir: &Path,
        sc_path: &Path,
        sc: &Scenario,
        spec: &harness::spec::RunSpec,
    ) -> Result<CallFacts, CaseError> {
        let mut f = CallFacts {
            tasks: BTreeMap::new(),
            cost_usd: BTreeMap::new(),
            prunes: BTreeMap::new(),
        };
        for c in &sc.runs[0].calls {
            if c.key.starts_with("plan/") || c.key.starts_with("replan/") {
                f.add_tasks(sc_path, &c.key, &c.text)?;
            }
            if c.key.starts_with("judge/") {
                f.add_prunes(spec, &c.key, &c.text);
            }
            let usage = c.usage.unwrap_or(harness::scenario::DEFAULT_USAGE);
            let price = spec
                .prices
                .get(&sc.model)
                .ok_or_else(|| CaseError::NoPrice {
                    dir: dir.to_path_buf(),
                    model: sc.model.clone(),
                })?;
            f.cost_usd
                .insert(c.key.clone(), harness::ledger::cost_usd(price, &usage));
        }
        Ok(f)
    }

    /// The tasks a plan or replan reply proposes, with their `verify`.
    fn add_tasks(&mut self, sc_path: &Path, key: &str, text: &str) -> Result<(), CaseError> {
        let Ok(p) = serde_json::from_str::<Value>(text) else {
            return Ok(());
        };
        for t in p["tasks"].as_array().into_iter().flatten() {
            if let (Some(id), Some(v)) = (t["id"].as_str(), t.get("verify")) {
                if self.tasks.insert(id.to_string(), v.clone()).is_some() {
                    return Err(CaseError::TaskTwice {
                        path: sc_path.to_path_buf(),
                        key: key.to_string(),
                        id: id.to_string(),
                    });
                }
            }
        }
        Ok(())
    }

    /// A judge verdict in the spec's prune band prunes its off-goal ids.
    fn add_prunes(&mut self, spec: &harness::spec::RunSpec, key: &str, text: &str) {
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            return;
        };
        let score = v["drift_score"].as_f64().unwrap_or(0.0);
        if score > spec.drift_prune_above && score <= spec.drift_halt_above {
            let off: Vec<String> = v["off_goal_task_ids"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t.as_str().map(str::to_string))
                .collect();
            self.prunes.insert(key.to_string(), off);
        }
    }
}

/// Each migration of the case's workspace with its steps (path, content).
fn load_migrations(dir: &Path) -> Result<BTreeMap<String, Vec<(String, String)>>, CaseError> {
    let mut migrations = BTreeMap::new();
    let mdir = dir
        .join("workspace")
        .join(harness::migration::MIGRATIONS_DIR);
    let Ok(rd) = std::fs::read_dir(&mdir) else {
        return Ok(migrations);
    };
    for e in rd.flatten() {
        let p = e.path();
        let Some(name) = p
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".json"))
        else {
            continue;
        };
        let bytes = std::fs::read(&p).map_err(CaseError::MigrationRead)?;
        let def: Value =
            serde_json::from_slice(&bytes).map_err(|source| CaseError::MigrationJson {
                path: p.clone(),
                source,
            })?;
        let steps = def["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                (
                    s["path"].as_str().unwrap_or("").to_string(),
                    s["content"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        migrations.insert(name.to_string(), steps);
    }
    Ok(migrations)
}

/// One index over every case's cassette, for the driver's replay server.
pub fn recordings(cases: &[Case]) -> Result<Recordings, CaseError> {
    Ok(Recordings::from_cassettes(cases.iter().map(|c| {
        (c.dir.join("scenario.json"), c.cassette.clone())
    }))?)
}

/// Copy a directory tree (the case fixture into a trial dir): the one the
/// bench's suite runner uses too.
pub use harness::workspace::copy_tree;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_cases_load() {
        let cases = load_all(&default_dir()).unwrap();
        assert!(cases.len() >= 4, "{}", cases.len());
        let triage = cases.iter().find(|c| c.id == "release-triage").unwrap();
        assert_eq!(triage.prunes["judge/2"], vec!["t5".to_string()]);
        assert_eq!(triage.expected_ending, Ending::GoalMet);
        for c in &cases {
            assert!(c.tasks.len() >= 4, "{}: {:?}", c.id, c.tasks.keys());
            assert!(!c.migrations.is_empty(), "{}", c.id);
            assert!(
                c.tasks.values().any(|v| v["kind"] == "outbox_has"),
                "{}: a non-idempotent post",
                c.id
            );
            assert!(
                c.migrations.values().all(|s| s.len() >= 2),
                "{}: multi-step migrations",
                c.id
            );
        }
        recordings(&cases).unwrap();
    }

    #[test]
    fn a_case_without_its_expected_ending_does_not_load() {
        let d = tempfile::tempdir().unwrap();
        copy_tree(&default_dir().join("rollout-p95"), d.path()).unwrap();
        std::fs::remove_file(d.path().join(META_FILE)).unwrap();
        let e = load(d.path()).unwrap_err().to_string();
        assert!(e.contains("chaos.toml"), "{e}");
        std::fs::write(d.path().join(META_FILE), "expected_ending = \"DONE\"\n").unwrap();
        let e = load(d.path()).unwrap_err().to_string();
        assert!(
            e.contains("chaos.toml") && e.contains("expected_ending"),
            "{e}"
        );
    }
}
