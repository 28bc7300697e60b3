//! The chaos bench's kill driver (`bench chaos`): kill the real harness at
//! every step-synchronized phase, inside the kill windows and at random
//! times, with SIGKILL and with a simulated power cut, rot committed
//! checkpoints, resume it, and check eleven invariants against an oracle that
//! knows what really happened. See chaos/README.md.

pub mod bitrot; // bit rot after commit: same-length flips inside a checkpoint body
pub mod cases; // chaos/cases/<id>: spec + workspace + scenario, and what the oracle reads from them
pub mod compaction; // compaction_at_most_once: a compact/<n> call made again only before its checkpoint
pub mod driver; // kill plans, trials, invariant checks, per-mode results
pub mod fsmodel; // the operation log replayed through a POSIX model: post-power-cut disk images
pub mod harness_files; // events.jsonl, report.json, alerts.jsonl: the one reader of the harness's JSON
pub mod invariant; // the closed set of invariants the oracle checks
pub mod io_sites; // where an injected I/O error leaves a write in doubt (the dir fsync after a workspace rename)
pub mod oracle; // the oracle's own readers: outbox, ledger journal, task effects, checkpoint frames
pub mod proc; // spawn the harness, SIGKILL it through nix, confirm with waitpid
pub mod report; // chaos.json, chaos.md, the terminal tables
pub mod rerun; // settled_task_never_rerun: what is durable, and what ran again
pub mod windows; // kill windows (after a park, during a replan, the drift checkpoint, around a compaction) from a clean run

pub use driver::{Config, Mode, ModeReport};
