//! What a `bench chaos` run is asked to do: the kill modes and the driver's
//! configuration.

use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Mode {
    #[serde(rename = "sigkill")]
    Sigkill,
    #[serde(rename = "power-loss")]
    PowerLoss,
    /// SIGTERM instead of SIGKILL (sometimes a second one during the
    /// grace): the harness suspends at a safe point (harness::stop).
    #[serde(rename = "sigterm")]
    Sigterm,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Sigkill => "sigkill",
            Mode::PowerLoss => "power-loss",
            Mode::Sigterm => "sigterm",
        }
    }
    pub(super) fn tag(self) -> u64 {
        match self {
            Mode::Sigkill => 1,
            Mode::PowerLoss => 2,
            Mode::Sigterm => 3,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub kills: usize,
    pub seed: u64,
    pub modes: Vec<Mode>,
    /// Only this case (directory name).
    pub case: Option<String>,
    /// Run only this kill index.
    pub replay_kill: Option<usize>,
    /// Run only the kill indexes of this stratum (its label): the first
    /// `kills` of them.
    pub stratum: Option<String>,
    pub harness_bin: PathBuf,
    /// A broken variant name (the binary must be a `chaos-broken` build).
    pub broken: Option<String>,
    pub cases_dir: PathBuf,
    pub work_dir: PathBuf,
    pub jobs: usize,
    /// Keep every trial directory (violating ones are always kept).
    pub keep: bool,
    pub proc_timeout: Duration,
    /// Processes per trial before it counts as "never ends".
    pub max_procs: usize,
    /// Extra flags the replay command must carry (e.g. the harness path).
    pub replay_extra: String,
    /// Asked by every worker before it takes the next kill index: true
    /// once the command was interrupted (the bench's SIGINT/SIGTERM).
    pub interrupted: fn() -> bool,
}
