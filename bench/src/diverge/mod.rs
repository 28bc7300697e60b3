//! Trajectory divergence (`bench diverge`): did the agent's trajectory
//! change between two sets of recordings, or between a committed set and a
//! fresh live run of the same cases?
//!
//! What is read from each run variant (`trajectory`), how two are compared
//! and what counts as diverged (`compare`, whose `DivergeReport` is
//! diverge.json's contract), the overlap math (`similarity`) and the live
//! re-recording of a set's cases (`live`). The command
//! (bench/src/cmd/diverge.rs) holds the flags and the renderings.

pub mod compare;
pub mod live;
pub mod similarity;
pub mod trajectory;
