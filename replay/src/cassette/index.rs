//! The index over many cassettes: what the replay server looks every
//! request up in, built from a recordings tree or from cassettes in memory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::alternatives::choose;
use super::error::{CassetteError, CassetteErrorKind, RecordingsError};
use super::format::{Cassette, Interaction, MAX_CASSETTE_FILES};

/// One loaded cassette plus its O(1) index.
#[derive(Debug, Clone)]
pub struct CaseRecording {
    /// Where it came from (file path, or a label for in-memory cassettes).
    pub source: PathBuf,
    pub cassette: Cassette,
    /// Per run variant: call_key -> indices into `runs[v].interactions`,
    /// in file order (one, or a key's conditional alternatives).
    index: Vec<HashMap<String, Vec<usize>>>,
}

impl CaseRecording {
    pub fn variants(&self) -> u32 {
        self.cassette.runs.len() as u32
    }

    /// The variant serving run index `run`: `run % variants`.
    pub fn variant_for(&self, run: u32) -> u32 {
        // check() guarantees at least one run; max(1) keeps this panic-free anyway.
        run % self.variants().max(1)
    }

    /// The interaction (variant, call_key) serves to a request with
    /// `request_body`: the key's one reply, or among its conditional
    /// alternatives the one `alternatives::choose` picks; None is a miss.
    pub fn get_variant(
        &self,
        variant: u32,
        call_key: &str,
        request_body: &[u8],
    ) -> Option<&Interaction> {
        let run = self.cassette.runs.get(variant as usize)?;
        let alts: Vec<&Interaction> = self
            .index
            .get(variant as usize)?
            .get(call_key)?
            .iter()
            .filter_map(|&i| run.interactions.get(i))
            .collect();
        choose(&alts, |i| i.when_request_contains.as_deref(), request_body).copied()
    }

    /// Call keys recorded in one variant (for nearest-match diagnostics).
    pub fn call_keys(&self, variant: u32) -> impl Iterator<Item = &str> {
        self.index
            .get(variant as usize)
            .into_iter()
            .flat_map(|m| m.keys().map(String::as_str))
    }
}

/// Every loaded cassette, indexed by case id, then run variant, then
/// call_key: a lookup is two hash probes and never scans recordings.
/// (Nested maps rather than one map keyed by a (case, run, call_key) tuple so
/// lookups can borrow the request's &str without allocating.)
#[derive(Debug, Clone, Default)]
pub struct Recordings {
    cases: HashMap<String, CaseRecording>,
    interactions: usize,
}

impl Recordings {
    pub fn new() -> Recordings {
        Recordings::default()
    }

    /// Add a cassette after checking it; `source` names it in errors. Refuses
    /// a second cassette for the same case id.
    pub fn add(
        &mut self,
        cassette: Cassette,
        source: impl Into<PathBuf>,
    ) -> Result<(), CassetteError> {
        let source = source.into();
        cassette.check(&source)?;
        let mut cassette = cassette;
        cassette.fill_hashes();
        self.insert_checked(cassette, source)
    }

    /// Index a cassette that has already passed `check` (load_dir: `load`
    /// checked it, and checking twice would hash every body twice).
    fn insert_checked(&mut self, cassette: Cassette, source: PathBuf) -> Result<(), CassetteError> {
        if let Some(existing) = self.cases.get(&cassette.case) {
            return Err(CassetteError::new(
                &source,
                Some("case".into()),
                CassetteErrorKind::Duplicate,
                format!(
                    "case \"{}\" is already recorded in {}; one cassette per case",
                    cassette.case,
                    existing.source.display()
                ),
            ));
        }
        let index = cassette
            .runs
            .iter()
            .map(|r| {
                r.interactions.iter().enumerate().fold(
                    HashMap::<String, Vec<usize>>::new(),
                    |mut m, (i, it)| {
                        m.entry(it.call_key.clone()).or_default().push(i);
                        m
                    },
                )
            })
            .collect();
        self.interactions += cassette
            .runs
            .iter()
            .map(|r| r.interactions.len())
            .sum::<usize>();
        self.cases.insert(
            cassette.case.clone(),
            CaseRecording {
                source,
                cassette,
                index,
            },
        );
        Ok(())
    }

    /// Build from in-memory cassettes (tests, generators).
    pub fn from_cassettes<I, P>(cassettes: I) -> Result<Recordings, RecordingsError>
    where
        I: IntoIterator<Item = (P, Cassette)>,
        P: Into<PathBuf>,
    {
        let mut rec = Recordings::new();
        let mut errors = Vec::new();
        for (src, c) in cassettes {
            if let Err(e) = rec.add(c, src) {
                errors.push(e);
            }
        }
        if errors.is_empty() {
            Ok(rec)
        } else {
            Err(RecordingsError { errors })
        }
    }

    /// Load every `*.json` file under `dir`, recursively (hidden entries,
    /// non-JSON files like README.md and symlinked directories are skipped).
    /// Every file is checked and every error reported; any error fails the load.
    pub fn load_dir(dir: impl AsRef<Path>) -> Result<Recordings, RecordingsError> {
        let dir = dir.as_ref();
        let mut files = Vec::new();
        let mut errors = Vec::new();
        collect_json_files(dir, &mut files, &mut errors);
        if files.len() > MAX_CASSETTE_FILES {
            errors.push(CassetteError::new(
                dir,
                None,
                CassetteErrorKind::Limit,
                format!(
                    "{} cassette files; the limit is {MAX_CASSETTE_FILES}",
                    files.len()
                ),
            ));
            return Err(RecordingsError { errors });
        }
        if files.is_empty() && errors.is_empty() {
            errors.push(CassetteError::new(
                dir,
                None,
                CassetteErrorKind::Io,
                "no *.json cassettes found under this directory",
            ));
        }
        let mut rec = Recordings::new();
        for f in files {
            match Cassette::load(&f) {
                Ok(c) => {
                    if let Err(e) = rec.insert_checked(c, f) {
                        errors.push(e);
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            Ok(rec)
        } else {
            Err(RecordingsError { errors })
        }
    }

    pub fn case(&self, case: &str) -> Option<&CaseRecording> {
        self.cases.get(case)
    }

    /// The interaction for (case, run index, call_key) served to a request
    /// with `request_body`, run mapped to its variant `run % n`: two hash
    /// probes, plus a scan of the key's conditions when it has any.
    pub fn get(
        &self,
        case: &str,
        run: u32,
        call_key: &str,
        request_body: &[u8],
    ) -> Option<&Interaction> {
        let c = self.cases.get(case)?;
        c.get_variant(c.variant_for(run), call_key, request_body)
    }

    pub fn cases(&self) -> impl Iterator<Item = &CaseRecording> {
        self.cases.values()
    }

    pub fn case_ids(&self) -> impl Iterator<Item = &str> {
        self.cases.keys().map(String::as_str)
    }

    /// Give up the index and hand back the cassettes (the replay server
    /// moves them into its own prepared form instead of copying bodies).
    pub fn into_cases(self) -> Vec<CaseRecording> {
        self.cases.into_values().collect()
    }

    pub fn case_count(&self) -> usize {
        self.cases.len()
    }

    pub fn interaction_count(&self) -> usize {
        self.interactions
    }
}

fn collect_json_files(dir: &Path, files: &mut Vec<PathBuf>, errors: &mut Vec<CassetteError>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            errors.push(CassetteError::new(
                dir,
                None,
                CassetteErrorKind::Io,
                format!("cannot read directory: {e}"),
            ));
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    // Sorted so errors and duplicate-case reports are deterministic.
    paths.sort();
    for p in paths {
        let hidden = p
            .file_name()
            .map(|n| n.to_string_lossy().starts_with('.'))
            .unwrap_or(true);
        if hidden {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if meta.is_dir() {
            collect_json_files(&p, files, errors);
            if files.len() > MAX_CASSETTE_FILES {
                return;
            }
        } else if p.extension().is_some_and(|e| e == "json")
            && std::fs::metadata(&p).map(|m| m.is_file()).unwrap_or(false)
        {
            files.push(p);
        }
    }
}
