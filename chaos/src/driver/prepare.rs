//! Before the first kill: load the cases, check the flags and the harness
//! binary, start the runtime and calibrate every case.

use super::calibrate::{calibrate, Calibration, PrepareError};
use super::config::{Config, Mode};
use super::plan::strata;
use crate::cases::Case;
use harness::replay::Recordings;

pub struct Prepared {
    pub cases: Vec<Case>,
    pub calib: Vec<Calibration>,
    pub only: Option<usize>,
    pub(super) rt: tokio::runtime::Runtime,
    pub(super) recordings: Recordings,
}

pub fn prepare(cfg: &Config) -> Result<Prepared, PrepareError> {
    let cases =
        crate::cases::load_all(&cfg.cases_dir).map_err(|e| PrepareError::Case(e.to_string()))?;
    let only = match &cfg.case {
        Some(id) => Some(cases.iter().position(|c| &c.id == id).ok_or_else(|| {
            PrepareError::Case(format!(
                "--case {id:?}: no such case under {} (cases: {})",
                cfg.cases_dir.display(),
                cases
                    .iter()
                    .map(|c| c.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?),
        None => None,
    };
    if let Some(st) = &cfg.stratum {
        let all: Vec<String> = [Mode::Sigkill, Mode::PowerLoss, Mode::Sigterm]
            .iter()
            .flat_map(|m| strata(*m))
            .map(|s| s.label())
            .collect();
        if !all.contains(st) {
            return Err(PrepareError::Setup(format!(
                "--stratum {st:?}: no such stratum (strata: {})",
                all.join(", ")
            )));
        }
    }
    if !cfg.harness_bin.is_file() {
        return Err(PrepareError::Setup(format!(
            "harness binary {} not found (build it: cargo build --release -p harness)",
            cfg.harness_bin.display()
        )));
    }
    std::fs::create_dir_all(&cfg.work_dir)
        .map_err(|e| PrepareError::Setup(format!("{}: {e}", cfg.work_dir.display())))?;
    let recordings =
        crate::cases::recordings(&cases).map_err(|e| PrepareError::Case(e.to_string()))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| PrepareError::Setup(e.to_string()))?;
    let calib = calibrate(cfg, &cases, &rt, &recordings)?;
    Ok(Prepared {
        cases,
        calib,
        only,
        rt,
        recordings,
    })
}
