//! The harness: the ordinary program that owns an unattended agent's loop.
//! It holds the immutable goal, keeps the hard-cap ledger, writes atomic
//! checkpoints before and after every task, verifies every task by machine,
//! checks the queue for drift against the original goal, and ends every run
//! in exactly one of seven endings. See ARCHITECTURE.md at the repo root.

// --- the loop and its five mechanisms ---
pub mod checkpoint; // framed, checksummed, atomic checkpoint + refusals on load
pub mod clock; // the run's elapsed time: monotonic in a process, carried across resumes by the checkpoint
pub mod drift; // drift judge request/parse + the drift gate (only writer of the score)
pub mod durable; // the atomic write sequence: temp, write, fsync, rename, fsync dir
pub mod ending; // the seven endings, their class, exit code and alert action
pub mod goal; // the immutable, hashed goal
pub mod ledger; // hard-cap dollar ledger (reserve / record / blocked)
pub mod lessons; // episodic memory: lessons from failed attempts, admitted only by checks the harness runs
pub mod run_loop; // should_stop + the one loop (run_loop/policy.rs); every branch decision lives there
pub mod stop; // a stop request (SIGTERM, SIGINT, SIGHUP): the run is suspended at a safe point, never ended

// --- what the loop works on ---
pub mod agent; // planner, executor (ReAct), replanner prompts and parsing
pub mod check; // spec-defined checks and the goal predicate: commands the harness runs
pub mod check_tmp; // the checks' private temp dirs, and the sweep of a killed run's
pub mod spec; // run.toml: parsing, validation, errors that name file and field
pub mod state; // the run state that the checkpoint carries
pub mod task; // a task and where it came from
pub mod verify; // the fixed verification vocabulary (done / not_started / partially_applied)

// --- the agent's reach: tools, confined to the workspace ---
pub mod confined; // file operations inside the workspace that hold against links, special files and swaps
pub mod gitwork; // one commit per verified task on a run branch
pub mod migration; // a multi-step operation that can be left partially applied
pub mod outbox; // the non-idempotent side effect, outside the workspace
pub mod recording_conditions; // the conditions a spec's requests are sent under, per role, for scripted cassettes
pub mod sandbox; // the kernel's confinement of every process started for the model
pub mod state_seal; // the state dir's identity around each confined process: what the kernel should have stopped, seen
pub mod task_writes; // which paths each task's tools wrote (what its commit holds), journaled for resume
pub mod text; // the one rule for cutting text to a bound
pub mod tools; // the allowlisted tools and their dispatch
pub mod workspace; // path confinement: no absolute paths, no `..`, no symlink escapes

// --- model traffic ---
// The wire adapters and the replay tooling are crates of their own (model/,
// replay/); re-exported so `harness::model::...` and `harness::replay::...`
// keep naming them. The harness needs replay only for `run --replay`.
pub use model; // protocol adapters + HTTP client with retries
#[cfg(feature = "replay")]
pub use replay; // cassettes and the wiremock replay server
#[cfg(feature = "replay")]
pub use replay::scenario; // hand-written scripted scenarios compiled to cassettes

// --- reporting ---
pub mod events; // events.jsonl, one line per lap event
pub mod invocation; // `harness run`'s argv and environment, for the bench and the chaos driver
pub mod page;
pub mod report; // report.json + the human summary // report.html: the morning page (maud + plotters' SVG), beside report.json

pub mod console; // stdout/stderr writes that never panic and never change the exit code
pub mod panics; // a panic's message and location, for the UNRECOVERABLE_ERROR it becomes

pub mod chaos_hook; // named kill points for the chaos bench (the pause only with `test-hooks`)
pub mod fault_injection; // test-only panic points (the `fault-injection` feature; inert without it)
pub mod mutants; // deliberately broken variants for `bench self-test` (the `chaos-broken` feature only)
pub mod redact; // the one redaction filter for every text the harness writes or shows the model
pub mod reply_json; // the first JSON object in a model's reply (planner, drift judge, lessons)
pub mod simfs; // the durable-operation layer: op log, I/O fault injection, broken variants (chaos bench)
pub mod wire; // closed vocabularies that travel as strings (error kinds, tool names, ...)
