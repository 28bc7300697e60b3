//! The reruns of each case, lane by lane, and the replay server each one is
//! answered by.
//!
//! A rerun is one case-run of the real harness. Its URL names the run
//! `lane * N + rerun` (so every case-run has its own directory and its own
//! capture on the server), and its server decides what it replays:
//!
//! - as written: the case's own server settings, unpinned: run r is served
//!   as run r (variant r % n, run r's fault draws);
//! - identical: the case's own settings, every request served as run 0;
//! - fault seeds (cases with a fault plan): served as run 0, the plan's seed
//!   replaced by `seed + 1 + r` (one server per seed);
//! - latency (cases whose replay has latency, `latency_scale` > 0): served
//!   as run 0, the scale multiplied by a factor from 1 to
//!   `LATENCY_FACTOR_MAX` in even steps (one server per factor). A case
//!   replayed at scale 0 has no latency to scale: its lane is not run, and
//!   the report says so.

use super::evidence::Lane;
use crate::case_run::start_server;
use crate::servers::ServerError;
use crate::suite::Case;
use harness::replay::{FaultPlan, ReplayServer};
use std::sync::Arc;

/// The latency lane's last step: twice the replayed latency, a slow day on
/// a shared machine.
pub const LATENCY_FACTOR_MAX: f64 = 2.0;

/// One case-run of the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Rerun {
    pub case: usize,
    pub lane: Lane,
    pub rerun: u32,
    /// The run index in the URL (and the case-run's directory `run-<n>`).
    pub url_run: u32,
    /// The fault seed or latency factor the lane set, for the report.
    pub setting: Option<f64>,
    /// Index into `Plan::servers`.
    pub server: usize,
}

/// How one replay server answers.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    pub faults: FaultPlan,
    pub latency_scale: f64,
    pub serve_as_run: Option<u32>,
    /// The cases it serves (indices into the plan's cases).
    pub cases: Vec<usize>,
}

pub struct Plan {
    pub reruns: Vec<Rerun>,
    pub servers: Vec<ServerSpec>,
    /// Per case, the lanes not run and why.
    pub skipped: Vec<Vec<(Lane, &'static str)>>,
}

/// A case's fault plan does not parse: the plan cannot be made.
#[derive(Debug, thiserror::Error)]
#[error("{case}: faults: {source}")]
pub struct PlanError {
    case: String,
    source: harness::replay::FaultSpecError,
}

/// Why a case-run has no replay server to answer it (it fails as the
/// bench's fault, `ReplayServerUnavailable`).
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unserved {
    #[error("cannot start the replay server: {0}")]
    Start(Arc<ServerError>),
    #[error("no server planned for this case-run")]
    Unplanned,
}

impl Plan {
    /// The plan for `cases`, `n` reruns a lane. A case whose fault plan does
    /// not parse is a load error before this (the suite checks it).
    pub fn new(cases: &[Case], n: u32) -> Result<Plan, PlanError> {
        let mut p = Plan {
            reruns: vec![],
            servers: vec![],
            skipped: vec![vec![]; cases.len()],
        };
        for (ci, c) in cases.iter().enumerate() {
            let faults = match &c.file.faults {
                Some(f) => FaultPlan::parse(f).map_err(|source| PlanError {
                    case: c.id().to_string(),
                    source,
                })?,
                None => FaultPlan::none(),
            };
            let scale = c.file.latency_scale.unwrap_or(0.0);
            for (li, lane) in Lane::ALL.into_iter().enumerate() {
                match lane {
                    Lane::FaultSeeds if faults.is_none() => {
                        p.skipped[ci].push((lane, "no fault plan"));
                        continue;
                    }
                    Lane::Latency if scale == 0.0 => {
                        p.skipped[ci]
                            .push((lane, "replayed at latency_scale 0: no latency to scale"));
                        continue;
                    }
                    _ => {}
                }
                for r in 0..n {
                    let (spec, setting) = match lane {
                        Lane::AsWritten => ((faults.clone(), scale, None), None),
                        Lane::Identical => ((faults.clone(), scale, Some(0)), None),
                        Lane::FaultSeeds => {
                            let seed = faults.seed.wrapping_add(1 + r as u64);
                            let f = FaultPlan {
                                seed,
                                ..faults.clone()
                            };
                            ((f, scale, Some(0)), Some(seed as f64))
                        }
                        Lane::Latency => {
                            let k = latency_factor(r, n);
                            ((faults.clone(), scale * k, Some(0)), Some(k))
                        }
                    };
                    let server = p.server_for(ci, spec);
                    p.reruns.push(Rerun {
                        case: ci,
                        lane,
                        rerun: r,
                        url_run: li as u32 * n + r,
                        setting,
                        server,
                    });
                }
            }
        }
        Ok(p)
    }

    fn server_for(
        &mut self,
        ci: usize,
        (faults, latency_scale, serve_as_run): (FaultPlan, f64, Option<u32>),
    ) -> usize {
        let found = self.servers.iter().position(|s| {
            s.faults == faults && s.latency_scale == latency_scale && s.serve_as_run == serve_as_run
        });
        let i = found.unwrap_or_else(|| {
            self.servers.push(ServerSpec {
                faults,
                latency_scale,
                serve_as_run,
                cases: vec![],
            });
            self.servers.len() - 1
        });
        if !self.servers[i].cases.contains(&ci) {
            self.servers[i].cases.push(ci);
        }
        i
    }

    /// The most reruns any case has: the batch's runs per case.
    pub fn runs_per_case(&self) -> u32 {
        self.reruns.iter().map(|r| r.url_run + 1).max().unwrap_or(0)
    }

    /// Start every server; one that cannot start fails its own case-runs
    /// with the reason, never the plan.
    pub async fn start(&self, cases: &[Case]) -> Vec<Result<Arc<ReplayServer>, Unserved>> {
        let mut out = vec![];
        for s in &self.servers {
            let group: Vec<&Case> = s.cases.iter().map(|&i| &cases[i]).collect();
            out.push(
                start_server(&group, s.faults.clone(), s.latency_scale, s.serve_as_run)
                    .await
                    .map(Arc::new)
                    .map_err(|e| Unserved::Start(Arc::new(e))),
            );
        }
        out
    }
}

/// Rerun r of n's latency factor: 1 to `LATENCY_FACTOR_MAX` in even steps
/// (the maximum alone for one rerun).
pub fn latency_factor(r: u32, n: u32) -> f64 {
    if n <= 1 {
        return LATENCY_FACTOR_MAX;
    }
    1.0 + (LATENCY_FACTOR_MAX - 1.0) * r as f64 / (n - 1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(id: &str) -> Case {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let dir = repo.join(id);
        let cat = dir
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        crate::suite::load_case(&dir, &cat, &crate::suite::report_fields()).expect("loads")
    }

    #[test]
    fn each_lane_gets_its_runs_and_servers() {
        let cases = vec![
            case("suites/happy/happy-seeded-faults-plan"),
            case("suites/edge/edge-time-limit"),
        ];
        let p = Plan::new(&cases, 4).unwrap();
        let of = |ci: usize, lane: Lane| {
            p.reruns
                .iter()
                .filter(|r| r.case == ci && r.lane == lane)
                .count()
        };
        // The faults case: as written, identical, four seeds; no latency.
        assert_eq!(
            [
                of(0, Lane::AsWritten),
                of(0, Lane::Identical),
                of(0, Lane::FaultSeeds),
                of(0, Lane::Latency)
            ],
            [4, 4, 4, 0]
        );
        assert_eq!(
            p.skipped[0],
            vec![(
                Lane::Latency,
                "replayed at latency_scale 0: no latency to scale"
            )]
        );
        // The latency case: no fault lane, a latency lane from 1x to 2x.
        assert_eq!([of(1, Lane::FaultSeeds), of(1, Lane::Latency)], [0, 4]);
        let factors: Vec<f64> = (p.reruns.iter())
            .filter(|r| r.case == 1 && r.lane == Lane::Latency)
            .filter_map(|r| r.setting)
            .collect();
        assert_eq!(factors.first(), Some(&1.0));
        assert_eq!(factors.last(), Some(&LATENCY_FACTOR_MAX));
        // Every case-run has its own URL run, and only as-written runs are unpinned.
        for ci in 0..2 {
            let mut runs: Vec<u32> = p
                .reruns
                .iter()
                .filter(|r| r.case == ci)
                .map(|r| r.url_run)
                .collect();
            let n = runs.len();
            runs.sort();
            runs.dedup();
            assert_eq!(runs.len(), n);
        }
        for r in &p.reruns {
            let s = &p.servers[r.server];
            assert_eq!(s.serve_as_run.is_none(), r.lane == Lane::AsWritten, "{r:?}");
            assert!(s.cases.contains(&r.case));
        }
        // Seeds differ per rerun, and from the case's own (11).
        let seeds: Vec<u64> = (p.reruns.iter())
            .filter(|r| r.lane == Lane::FaultSeeds)
            .map(|r| p.servers[r.server].faults.seed)
            .collect();
        assert_eq!(seeds, vec![12, 13, 14, 15]);
    }
}
