//! The kill driver: plans every kill from (seed, mode, kill index), runs the
//! real harness binary on a fresh copy of a case, kills it at a named phase,
//! inside a kill window (right after a park, during a replan, at the drift
//! check's checkpoint) or at a random time (SIGKILL through nix, confirmed by
//! waitpid), in power-loss mode rebuilds the disk as a power cut would have
//! left it, rots a committed checkpoint in the bit-rot stratum, resumes with
//! the same command (sometimes killing again during the resume) until the run
//! ends, and checks the invariants ([`Invariant`]) against an oracle that
//! knows what really happened: the operation logs, the outbox, and the
//! requests the driver's own replay server answered (which is what the
//! provider bills).
//!
//! One concept a module: [`config`] (what a run is asked to do), [`plan`]
//! (the kill plan of each index), [`calibrate`] (the clean run per case),
//! [`prepare`] (before the first kill), [`run`] (the worker threads of one
//! mode), [`trial`] (one kill index, process by process), [`damage`] (what
//! the driver does to the disk between processes), [`observe`] (what the
//! oracle sees), [`check`] (the invariant checks), [`tally`] (one mode's
//! results).

pub mod calibrate;
mod check;
pub mod config;
mod damage;
mod observe;
pub mod plan;
pub mod prepare;
pub mod run;
pub mod tally;
mod trial;

pub use crate::invariant::Invariant;
pub use calibrate::{calibrate, Calibration, CalibrationFailure, PrepareError};
pub use config::{Config, Mode};
pub use damage::DECOY_RUN_ID;
pub use plan::{plan, strata, IoSite, JournalDamage, Stratum, TrialPlan};
pub use prepare::{prepare, Prepared};
pub use run::{run_mode, Progress};
pub use tally::{describe_target, replay_command, InvCount, ModeReport, Violation};
pub use trial::TrialOutcome;
