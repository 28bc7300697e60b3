//! The bench's core: what every command is made of. A command (bench/src/cmd/)
//! uses only these modules, never another command.
//!
//! - `suite`: loading a suite's cases (case.toml, fixtures, cassettes).
//! - `case_run`: one case-run: a fresh copy, the harness process
//!   (`harness::invocation::HarnessInvocation`), scoring (`score`) and the
//!   audit (`audit`), one room per phase.
//! - `batch`: every case `runs_per_case` times at bounded concurrency (replay
//!   servers or the live proxy, `live`) on the one worker pool (`batch::pool`),
//!   emitting typed events to reporters (`events`: the terminal's progress
//!   bar or lines, the summary files, a fan-out to several); the harness
//!   binary.
//! - `summary`: the summary model (cases, totals, config hash) and its
//!   summary.json / summary.md / JUnit renderings; `outputs` holds the
//!   reporter that builds the summary from the events and writes those files
//!   (`SummaryFiles`), and prints the table and the failures; `page` is the
//!   suite's report.html, from the same summary.
//! - `exit`: every command's exit status and the one table of their codes.
//! - `known_flaky`: the causes of flakiness (with their remedies) and the
//!   case.toml marker that labels a known-flaky case in every output.
//! - `stats`: the statistics the reports rest on.
//! - The analyses behind the commands, each a plan in and a result out:
//!   `ab` (paired A/B), `knee` (cost per verified task), `calibrate` (the
//!   drift detector on labeled queues), `diverge` (trajectories compared),
//!   `flaky` (causes of flakiness), `price` (a night priced).
//! - The bottom modules the case-run path shares: `record` (`RunRecord`),
//!   `servers` (the replay servers), `harness_bin` (which harness binary),
//!   `spec_overlay`, `outside` and `canary` (the audit's snapshots and
//!   planted secrets).
//! - `latency`: what a case's latency cap judges (replayed model time plus
//!   the harness's CPU time, or wall time for wall-clock cases and live runs).
//! - `prices`, `cli`: the price table and the clap value types several
//!   commands share.

#[macro_use]
pub mod console;
pub mod ab;
pub mod audit;
pub mod batch;
pub mod bench_fault;
pub mod calibrate;
pub mod canary;
pub mod case_run;
pub mod cause;
pub mod cli;
pub mod diverge;
pub mod events;
pub mod exit;
pub mod flaky;
pub mod guarantees;
pub mod harness_bin;
pub mod http_request;
pub mod interrupt;
pub mod knee;
pub mod known_flaky;
pub mod latency;
pub mod live;
pub mod outputs;
pub mod outside;
pub mod page;
pub mod page_safety;
pub mod price;
pub mod prices;
pub mod private_dirs;
pub mod record;
pub mod run_index;
pub mod score;
pub mod scripted;
pub mod servers;
pub mod spec_overlay;
pub mod stats;
pub mod steps;
pub mod suite;
pub mod summary;
pub mod tripwire;

/// docs/cases.md names every case, scenario and verify field the types have.
#[cfg(test)]
mod cases_doc;
