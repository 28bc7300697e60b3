//! Cassettes from live traffic: the proxy's exchanges of each case-run
//! become one run variant of the case's cassette, written with harness's own
//! `Cassette` type and `save`, and read back with `Cassette::load` (which
//! refuses secrets) before the command says it recorded anything.
//!
//! Per call key (`x-harness-call-key`): the LAST response is the
//! interaction; earlier attempts of the same key (429, 5xx, an unparseable
//! 200 the harness retried) become its `faults_before`, in attempt order, so
//! a replay walks the same retry path. Request bodies are stored key-sorted
//! with `body_sha256` from `harness::replay`'s canonical hash
//! (`Interaction::from_exchange`), so strict replay can check them; response
//! headers are reduced to `content-type`.
//!
//! A case's cassette holds run variants 0..n-1, contiguous: a case-run that
//! could not be completed (the command-wide cap refused one of its calls, or
//! the harness left no report) is not recorded, and neither is any later run
//! of the same case, since `runs[i].run` must equal `i` and run i's seed is
//! seed + i. The command reports what was left out and why.

use super::proxy::Exchange;
use harness::model::{CallRole, Protocol};
use harness::replay::{
    Cassette, Interaction, Made, MadeHow, RecordedResponse, RunOutcome, RunRecording,
};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// `made.when`: now, RFC 3339 in UTC, to the second.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Why a case-run is not recorded, which leaves it (and every later run of
/// its case) out of the cassette: the message is what the command reports.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Gap {
    #[error("a request carried no x-harness-call-key header")]
    NoCallKey,
    #[error(
        "call {call_key:?}: x-harness-call-role {role:?} is not plan, execute, judge or replan"
    )]
    Role { call_key: String, role: String },
    #[error("not run: the command-wide cap was reached")]
    NotRun,
    /// The cap refused one of its calls, it failed before the harness
    /// could report, or its traffic does not measure the model: the message
    /// says which.
    #[error("{0}")]
    Incomplete(String),
    #[error(
        "{0} exchange(s) over the per-run limits ({calls} calls, {bytes} bytes) were not kept",
        calls = super::proxy::EXCHANGES_MAX_PER_RUN,
        bytes = super::proxy::EXCHANGE_BYTES_MAX_PER_RUN
    )]
    Dropped(u64),
    #[error("the harness left no report.json (exit {0})")]
    NoReport(i32),
}

fn role_of(s: &str, call_key: &str) -> Result<CallRole, Gap> {
    serde_json::from_value(Value::String(s.to_string())).map_err(|_| Gap::Role {
        call_key: call_key.to_string(),
        role: s.to_string(),
    })
}

/// The exchanges of one case-run as cassette interactions, in order of each
/// call key's first request.
pub fn interactions(protocol: Protocol, exchanges: &[Exchange]) -> Result<Vec<Interaction>, Gap> {
    let mut order: Vec<&str> = Vec::new();
    let mut by_key: BTreeMap<&str, Vec<&Exchange>> = BTreeMap::new();
    for e in exchanges {
        if e.call_key.is_empty() {
            return Err(Gap::NoCallKey);
        }
        let v = by_key.entry(e.call_key.as_str()).or_default();
        if v.is_empty() {
            order.push(e.call_key.as_str());
        }
        v.push(e);
    }
    let mut out = Vec::with_capacity(order.len());
    for key in order {
        let group = &by_key[key];
        let Some(last) = group.last() else { continue };
        let role = role_of(&last.role, key)?;
        let make = |e: &Exchange| {
            let ct: Vec<(&str, &str)> = e
                .content_type
                .as_deref()
                .map(|c| vec![("content-type", c)])
                .unwrap_or_default();
            Interaction::from_exchange(
                role,
                key,
                protocol,
                &e.request,
                e.status,
                ct,
                &e.body,
                e.latency_ms,
            )
        };
        let mut it = make(last);
        // Earlier attempts, the latest of each attempt number below the
        // final one, in attempt order: what a replay serves before it.
        let mut earlier: BTreeMap<u32, &Exchange> = BTreeMap::new();
        for e in &group[..group.len() - 1] {
            if e.attempt < last.attempt {
                earlier.insert(e.attempt, e);
            }
        }
        it.faults_before = earlier
            .values()
            .take(harness::replay::cassette::MAX_FAULTS_BEFORE)
            .map(|e| -> RecordedResponse { make(e).response })
            .collect();
        out.push(it);
    }
    Ok(out)
}

/// How the case-run ended, from its report.json (parsed into the harness's
/// own type: an incomplete report never gets here) and the process's exit
/// code.
pub fn outcome(report: &harness::report::Report, exit_code: i32) -> RunOutcome {
    RunOutcome {
        ending: report.ending.as_str().to_string(),
        exit_code,
        predicate_met: report.predicate_met,
        calls: report.model_calls,
        tokens: report.usage.total(),
    }
}

/// How a cassette is described (`made`), per command.
#[derive(Debug, Clone)]
pub struct Provenance {
    /// e.g. `bench record 0.1.0 via 127.0.0.1:8080`.
    pub by: String,
}

/// What the recording of one case came to.
#[derive(Debug, Clone, Serialize)]
pub struct CaseWritten {
    pub case: String,
    /// Where the cassette went, when one was written.
    pub path: Option<String>,
    pub runs_recorded: u32,
    /// Runs left out, each with the reason.
    pub left_out: Vec<String>,
    /// Why nothing was written (or the save/load-back failed).
    pub error: Option<String>,
}

/// Per-case facts the cassette needs, from the case-run's spec.
#[derive(Debug, Clone)]
pub struct CaseMeta {
    pub protocol: Protocol,
    pub model: String,
    pub temperature: Option<f64>,
    /// The seed of run 0; run i used seed + i.
    pub seed_base: Option<u64>,
}

struct Pending {
    meta: CaseMeta,
    runs: BTreeMap<u32, Result<RunRecording, Gap>>,
}

/// Collects finished case-runs and writes each case's cassette into `dir`
/// as soon as all its runs are in (so a long command that is stopped keeps
/// what it recorded), and the rest at `finish`.
pub struct Recorder {
    dir: PathBuf,
    prov: Provenance,
    runs_per_case: u32,
    pending: Mutex<BTreeMap<String, Pending>>,
    written: Mutex<Vec<CaseWritten>>,
    /// The runs were hybrid: replayed up to their first unseen call, live after.
    hybrid: bool,
}

/// The recordings dir could not be made.
#[derive(Debug, thiserror::Error)]
#[error("--record/--out {}: cannot create: {source}", dir.display())]
pub struct RecordDirError {
    dir: std::path::PathBuf,
    source: std::io::Error,
}

impl Recorder {
    pub fn new(
        dir: &Path,
        prov: Provenance,
        runs_per_case: u32,
    ) -> Result<Recorder, RecordDirError> {
        std::fs::create_dir_all(dir).map_err(|source| RecordDirError {
            dir: dir.to_path_buf(),
            source,
        })?;
        Ok(Recorder {
            dir: dir.to_path_buf(),
            prov,
            runs_per_case,
            pending: Mutex::new(BTreeMap::new()),
            written: Mutex::new(Vec::new()),
            hybrid: false,
        })
    }

    /// The same recorder, saying in each cassette's notes that its runs
    /// were hybrid (replayed, then live).
    pub fn hybrid(mut self) -> Recorder {
        self.hybrid = true;
        self
    }

    /// One case-run is over: `Ok` with its variant, or why it cannot be recorded.
    pub fn add(&self, case: &str, run: u32, meta: CaseMeta, rec: Result<RunRecording, Gap>) {
        let done = {
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            let kept = rec.is_ok();
            let entry = p.entry(case.to_string()).or_insert_with(|| Pending {
                meta: meta.clone(),
                runs: BTreeMap::new(),
            });
            if kept {
                // A run that never ran carries no facts about the case.
                entry.meta = meta;
            }
            entry.runs.insert(run, rec);
            if entry.runs.len() as u32 >= self.runs_per_case {
                p.remove(case)
            } else {
                None
            }
        };
        if let Some(p) = done {
            let w = self.write(case, p);
            self.written
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(w);
        }
    }

    /// Write every case still pending (some runs never ran) and return what
    /// was written for every case, sorted by case id.
    pub fn finish(&self) -> Vec<CaseWritten> {
        let pending = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        for (case, p) in pending {
            let w = self.write(&case, p);
            self.written
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(w);
        }
        let mut all = self
            .written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        all.sort_by(|a, b| a.case.cmp(&b.case));
        all
    }

    fn write(&self, case: &str, p: Pending) -> CaseWritten {
        let (runs, left_out) = self.contiguous_runs(&p);
        let mut w = CaseWritten {
            case: case.to_string(),
            path: None,
            runs_recorded: runs.len() as u32,
            left_out,
            error: None,
        };
        if runs.is_empty() {
            w.error = Some("no complete run to record; no cassette written".into());
            return w;
        }
        let made = self.made(&p.meta, runs.len());
        let mut c = Cassette::new(case, p.meta.protocol, p.meta.model.clone(), made);
        c.runs = runs;
        if p.meta.seed_base.is_some() {
            // Run i was recorded with seed S+i and replay serves run i from
            // variant i: the variant carries the seed, and a replayed spec
            // sends none. Said explicitly, as indifference must be.
            c.indifferent_to = vec![harness::model::ConditionField::Seed];
        }
        let path = self.dir.join(format!("{case}.json"));
        if let Err(e) = c.conditions_from_bodies() {
            w.error = Some(format!("{}: {e}", path.display()));
            return w;
        }
        match c.save(&path).and_then(|_| Cassette::load(&path)) {
            Ok(back) if back == c => w.path = Some(path.display().to_string()),
            Ok(_) => {
                w.error = Some(format!(
                    "{}: read back differently from what was written",
                    path.display()
                ))
            }
            Err(e) => w.error = Some(e.to_string()),
        }
        w
    }

    /// The runs a cassette can hold (0..n-1 without a gap: run i's seed is
    /// seed + i, so a later run cannot move down) and what was left out, why.
    fn contiguous_runs(&self, p: &Pending) -> (Vec<RunRecording>, Vec<String>) {
        let mut runs = Vec::new();
        let mut left_out = Vec::new();
        let mut stopped = None;
        for r in 0..self.runs_per_case {
            match (&stopped, p.runs.get(&r)) {
                (None, Some(Ok(rec))) => runs.push(rec.clone()),
                (None, Some(Err(why))) => {
                    left_out.push(format!("run {r}: {why}"));
                    stopped = Some(r);
                }
                (None, None) => {
                    left_out.push(format!("run {r}: not run"));
                    stopped = Some(r);
                }
                (Some(s), _) => left_out.push(format!(
                    "run {r}: left out because run {s} was (variants must be 0..n-1)"
                )),
            }
        }
        (runs, left_out)
    }

    /// The cassette's `made`: how its `recorded` runs were recorded (live
    /// or hybrid) and with which seeds, for whoever replays it.
    fn made(&self, meta: &CaseMeta, recorded: usize) -> Made {
        let how = if self.hybrid {
            "Recorded by hybrid replay through the bench's proxy (each run's calls answered by the case's recording up to the first call it had not seen, by the live endpoint from there)"
        } else {
            "Recorded live through the bench's proxy"
        };
        let mut notes = format!(
            "{how}: {recorded} run variant(s) of {} case-run(s) asked; run i is the harness's live case-run i.",
            self.runs_per_case
        );
        if let Some(s) = meta.seed_base {
            notes.push_str(&format!(" Seeds vary: run i used seed {s}+i."));
        }
        Made {
            how: MadeHow::Recorded,
            when: now_rfc3339(),
            by: self.prov.by.clone(),
            temperature: meta.temperature,
            seed: meta.seed_base,
            notes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ex(key: &str, attempt: u32, status: u16, body: &str) -> Exchange {
        Exchange {
            role: "execute".into(),
            call_key: key.into(),
            attempt,
            request: json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}),
            status,
            content_type: Some("application/json".into()),
            body: body.as_bytes().to_vec(),
            latency_ms: 7,
        }
    }

    #[test]
    fn last_response_is_the_interaction_earlier_attempts_are_faults() {
        let ok = r#"{"id":"x","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#;
        let xs = vec![
            ex("plan/0", 0, 200, ok),
            ex("execute/t1/a0/0", 0, 429, r#"{"error":"slow"}"#),
            ex("execute/t1/a0/0", 1, 500, "upstream down"),
            ex("execute/t1/a0/0", 2, 200, ok),
        ];
        let its = interactions(Protocol::Openai, &xs).unwrap();
        assert_eq!(its.len(), 2);
        assert_eq!(its[0].call_key, "plan/0");
        assert!(its[0].faults_before.is_empty());
        let e = &its[1];
        assert_eq!(e.response.status, 200);
        assert_eq!(
            e.faults_before.iter().map(|f| f.status).collect::<Vec<_>>(),
            [429, 500]
        );
        assert_eq!(
            e.faults_before[1].body_raw.as_deref(),
            Some("upstream down")
        );
        assert_eq!(e.request.path, "/v1/chat/completions");
        assert_eq!(
            e.request.body_sha256.as_deref(),
            Some(harness::replay::body_sha256(e.request.body.as_ref().unwrap()).as_str())
        );
        assert_eq!(
            e.response.headers.keys().collect::<Vec<_>>(),
            ["content-type"]
        );
        let mut bad = xs.clone();
        bad[0].role = "boss".into();
        assert!(interactions(Protocol::Openai, &bad)
            .unwrap_err()
            .to_string()
            .contains("boss"));
    }

    #[test]
    fn outcome_reads_the_report() {
        let mut r = harness::report::Report::build(
            &harness::state::RunState::example(2),
            "g",
            harness::ending::Ending::GoalMet,
            None,
            None,
            true,
            1,
        );
        r.model_calls = 4;
        r.usage = serde_json::from_value(json!({"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 1, "cache_creation_input_tokens": 0})).unwrap();
        let o = outcome(&r, 0);
        assert_eq!(
            (
                o.ending.as_str(),
                o.exit_code,
                o.predicate_met,
                o.calls,
                o.tokens
            ),
            ("GOAL_MET", 0, true, 4, 16)
        );
        // A report.json missing its fields is refused before it gets here.
        assert!(serde_json::from_value::<harness::report::Report>(json!({})).is_err());
    }

    #[test]
    fn only_a_contiguous_prefix_of_complete_runs_is_written() {
        let t = tempfile::tempdir().unwrap();
        let rec = Recorder::new(
            t.path(),
            Provenance {
                by: "bench test".into(),
            },
            3,
        )
        .unwrap();
        let meta = CaseMeta {
            protocol: Protocol::Openai,
            model: "m".into(),
            temperature: Some(0.8),
            seed_base: Some(7),
        };
        let run = |i| RunRecording {
            run: i,
            interactions: vec![],
            outcome: None,
        };
        rec.add("c1", 0, meta.clone(), Ok(run(0)));
        rec.add("c1", 2, meta.clone(), Ok(run(2)));
        rec.add("c1", 1, meta.clone(), Err(Gap::Incomplete("cap".into())));
        rec.add(
            "c2",
            0,
            meta.clone(),
            Err(Gap::Incomplete("no report".into())),
        );
        let w = rec.finish();
        assert_eq!(w.len(), 2);
        assert_eq!(w[0].runs_recorded, 1);
        assert_eq!(w[0].left_out.len(), 2);
        let c = Cassette::load(t.path().join("c1.json")).unwrap();
        assert_eq!(c.runs.len(), 1);
        assert_eq!(c.made.how, MadeHow::Recorded);
        assert_eq!(c.made.seed, Some(7));
        assert!(c.made.notes.contains("seed 7+i"));
        assert!(w[1].error.is_some() && !t.path().join("c2.json").exists());
    }
}
