//! The fixed verification vocabulary. Tasks are written by the model, but a
//! task's `verify` can only be one of these six kinds, and the harness runs
//! it, never the model. A model-written task that cannot be verified this way
//! is not eligible for autonomous execution.
//!
//! The outcome is three-way on purpose. On resume an IN_PROGRESS task is
//! verified, never re-executed:
//! - `Done`: the work landed; mark it complete.
//! - `NotStarted`: nothing happened; safe to run again.
//! - `PartiallyApplied`: something happened but not all of it; re-running
//!   could double a side effect or "fix" a half-built thing destructively, so
//!   the task is parked with the detail.
//!
//! A fourth outcome is not about the work at all: `NotJudged`, when a `check`
//! verify was cut by the run's wall clock (or not started, no time being
//! left). The loop never reads it as "not started": the run is out of time,
//! so it ends TIME_LIMIT and the task is parked as not judged, for a human.

use crate::check::CheckSpec;
use crate::migration::{self, MigrationState};
use crate::outbox::Outbox;
use crate::workspace::Workspace;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Read;

/// Largest file prefix `file_contains` searches. Past this the text is
/// reported as not found (NotStarted), which at worst means a re-run.
pub const VERIFY_READ_MAX_BYTES: u64 = 16 * 1024 * 1024;
/// Longest `text` a model-written `file_contains` may ask for.
pub const VERIFY_TEXT_MAX_CHARS: usize = 4096;
/// Longest outbox key a model-written `outbox_has` may name.
pub const VERIFY_KEY_MAX_CHARS: usize = 200;
/// Longest piece of a verify quoted in `describe()`.
pub const DESCRIBE_MAX_CHARS: usize = 120;
/// Longest tail of a check's output quoted when it could not run, in characters.
pub const COULD_NOT_RUN_OUTPUT_MAX_CHARS: usize = 400;
/// Longest tail of a failed check's output kept in its verify event, in
/// characters: the end of a test run is where its failure is named (the
/// assertion, "FAILED (failures=1)"), so the tail is what the bench's cause
/// line quotes.
pub const FAILED_CHECK_TAIL_MAX_CHARS: usize = 400;

/// The kinds a model may use, with their fields, for error messages.
pub const ALLOWED_KINDS: [&str; 6] = [
    "file_contains {path, text}",
    "file_absent {path}",
    "file_exists {path}",
    "outbox_has {key}",
    "migration_state {name}",
    "check {name}",
];

/// Its JSON Schema (the `plan` of scenario.json: docs/schemas/) lists the
/// six kinds, so an editor flags a seventh.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Verify {
    FileContains {
        path: String,
        text: String,
    },
    FileAbsent {
        path: String,
    },
    FileExists {
        path: String,
    },
    OutboxHas {
        key: String,
    },
    /// Done only when the migration is fully applied.
    MigrationState {
        name: String,
    },
    /// A check the SPEC defines (e.g. "tests"); the model names it, never
    /// supplies a command.
    Check {
        name: String,
    },
}

crate::wire::wire_names! {
    /// A verify's `kind` tag, as tasks in the checkpoint carry it.
    pub enum VerifyKind {
        FileContains = "file_contains",
        FileAbsent = "file_absent",
        FileExists = "file_exists",
        OutboxHas = "outbox_has",
        MigrationState = "migration_state",
        Check = "check",
    }
}

impl Verify {
    pub fn kind(&self) -> VerifyKind {
        match self {
            Verify::FileContains { .. } => VerifyKind::FileContains,
            Verify::FileAbsent { .. } => VerifyKind::FileAbsent,
            Verify::FileExists { .. } => VerifyKind::FileExists,
            Verify::OutboxHas { .. } => VerifyKind::OutboxHas,
            Verify::MigrationState { .. } => VerifyKind::MigrationState,
            Verify::Check { .. } => VerifyKind::Check,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum VerifyOutcome {
    Done,
    NotStarted,
    PartiallyApplied {
        detail: String,
    },
    /// The run's wall clock ran out before the verify's check finished.
    NotJudged {
        detail: String,
    },
    /// The verify's check never ran its command (not executable, not
    /// found, no such check): nothing happened, as NotStarted, and `detail`
    /// says why (the OS error or the shell's status and output tail), so a
    /// broken case reads as one instead of as an agent that failed.
    CouldNotRun {
        detail: String,
    },
}

pub struct VerifyContext<'a> {
    pub workspace: &'a Workspace,
    pub outbox: &'a Outbox,
    pub checks: &'a BTreeMap<String, CheckSpec>,
    /// When the run's wall clock runs out: bounds a `check` verify. None
    /// outside a run.
    pub deadline: Option<std::time::Instant>,
}

impl Verify {
    /// Run the verify. Read-only (except that a spec check runs its command),
    /// never panics. Anything that cannot be judged is NotStarted, except an
    /// unreadable outbox: see below.
    pub fn run(&self, ctx: &VerifyContext) -> VerifyOutcome {
        self.run_why(ctx).0
    }

    /// [`Verify::run`], and when the work was found not done (NotStarted)
    /// why, in one line: a check's name, exit status and the tail of its
    /// output; for the other kinds, what did not hold. The verify event
    /// carries it, so a run that failed its verify says so where it ends
    /// (the bench's cause line), not only in the transcript.
    pub fn run_why(&self, ctx: &VerifyContext) -> (VerifyOutcome, Option<String>) {
        let outcome = match self {
            Verify::Check { name } => return named_check(ctx, name),
            _ => self.run_plain(ctx),
        };
        let why = (outcome == VerifyOutcome::NotStarted)
            .then(|| format!("{} did not hold", self.describe()));
        (outcome, why)
    }

    fn run_plain(&self, ctx: &VerifyContext) -> VerifyOutcome {
        match self {
            Verify::FileContains { path, text } => file_contains(ctx, path, text),
            Verify::FileAbsent { path } => {
                let Ok(abs) = ctx.workspace.resolve(path) else {
                    return VerifyOutcome::NotStarted;
                };
                match std::fs::symlink_metadata(&abs) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => VerifyOutcome::Done,
                    _ => VerifyOutcome::NotStarted,
                }
            }
            Verify::FileExists { path } => {
                let Ok(abs) = ctx.workspace.resolve(path) else {
                    return VerifyOutcome::NotStarted;
                };
                if std::fs::symlink_metadata(&abs).is_ok() {
                    VerifyOutcome::Done
                } else {
                    VerifyOutcome::NotStarted
                }
            }
            Verify::OutboxHas { key } => match ctx.outbox.read_all() {
                Ok(c) if c.entries.iter().any(|e| &e.key == key) => VerifyOutcome::Done,
                Ok(_) => VerifyOutcome::NotStarted,
                // Not NotStarted: that would let resume post a second time.
                // We cannot tell whether the post happened, so park the task.
                Err(e) => VerifyOutcome::PartiallyApplied {
                    detail: format!("cannot tell whether {key:?} was posted: {e}"),
                },
            },
            Verify::MigrationState { name } => match migration::state(ctx.workspace, name) {
                MigrationState::Done => VerifyOutcome::Done,
                MigrationState::NotStarted | MigrationState::Unknown { .. } => {
                    VerifyOutcome::NotStarted
                }
                MigrationState::Partial {
                    applied,
                    total,
                    detail,
                } => VerifyOutcome::PartiallyApplied {
                    detail: format!("applied {applied} of {total} steps: {detail}"),
                },
            },
            Verify::Check { name } => named_check(ctx, name).0,
        }
    }

    /// One line for reports.
    pub fn describe(&self) -> String {
        let q = |s: &str| format!("{:?}", clip(s, DESCRIBE_MAX_CHARS));
        match self {
            Verify::FileContains { path, text } => format!("file {} contains {}", q(path), q(text)),
            Verify::FileAbsent { path } => format!("file {} is absent", q(path)),
            Verify::FileExists { path } => format!("file {} exists", q(path)),
            Verify::OutboxHas { key } => format!("outbox has a message with key {}", q(key)),
            Verify::MigrationState { name } => format!("migration {} is fully applied", q(name)),
            Verify::Check { name } => format!("check {} passes", q(name)),
        }
    }

    /// Refuse a model-written verify that is not eligible. The error names
    /// what was wrong and what was expected; it goes back to the model.
    pub fn validate_model_written(&self, ctx: &VerifyContext) -> Result<(), String> {
        let file_path = |path: &str| -> Result<(), String> {
            let abs = ctx
                .workspace
                .resolve(path)
                .map_err(|e| format!("verify path refused: {e}"))?;
            if abs == ctx.workspace.root() {
                return Err(format!("verify path {path:?} names the workspace root; name a file, e.g. \"src/lib.rs\""));
            }
            Ok(())
        };
        match self {
            Verify::FileContains { path, text } => {
                file_path(path)?;
                if text.trim().is_empty() {
                    return Err("file_contains needs a non-empty `text` (not just whitespace) that will be in the file once the task is done".into());
                }
                if text.chars().count() > VERIFY_TEXT_MAX_CHARS {
                    return Err(format!("file_contains `text` is over {VERIFY_TEXT_MAX_CHARS} characters; use a short distinctive snippet"));
                }
                Ok(())
            }
            Verify::FileAbsent { path } | Verify::FileExists { path } => file_path(path),
            Verify::OutboxHas { key } => {
                if key.trim().is_empty() {
                    return Err("outbox_has needs a non-empty `key`: the idempotency_key the task's post_message will use".into());
                }
                if key.chars().count() > VERIFY_KEY_MAX_CHARS {
                    return Err(format!(
                        "outbox_has `key` is over {VERIFY_KEY_MAX_CHARS} characters"
                    ));
                }
                Ok(())
            }
            Verify::MigrationState { name } => {
                migration::validate_name(name)
                    .map_err(|r| format!("migration_state name {name:?} is invalid: {r}"))?;
                migration::load(ctx.workspace, name)
                    .map(|_| ())
                    .map_err(|e| {
                        format!(
                            "migration_state needs an existing, valid definition at {}: {e}",
                            migration::definition_path(name)
                        )
                    })
            }
            Verify::Check { name } => {
                if ctx.checks.contains_key(name) {
                    Ok(())
                } else {
                    Err(format!(
                        "check {name:?} is not defined by the spec; defined checks: {}",
                        check_list(ctx.checks)
                    ))
                }
            }
        }
    }
}

/// Parse a model-sent verify object, with an error that lists what is allowed.
pub fn parse_model_verify(v: &serde_json::Value) -> Result<Verify, String> {
    let allowed = ALLOWED_KINDS.join(", ");
    let Some(obj) = v.as_object() else {
        return Err(format!(
            "verify must be a JSON object with a \"kind\"; allowed kinds: {allowed}"
        ));
    };
    let kind = match obj.get("kind") {
        Some(serde_json::Value::String(k)) => k.as_str(),
        Some(_) => {
            return Err(format!(
                "verify \"kind\" must be a string; allowed kinds: {allowed}"
            ))
        }
        None => return Err(format!("verify has no \"kind\"; allowed kinds: {allowed}")),
    };
    let known = ALLOWED_KINDS
        .iter()
        .any(|k| k.split(' ').next() == Some(kind));
    let commandish = [
        "command", "cmd", "shell", "bash", "sh", "exec", "run", "script", "argv",
    ];
    if !known && (commandish.contains(&kind) || commandish.iter().any(|c| obj.contains_key(*c))) {
        return Err(format!(
            "a command is not allowed in verify: the harness only runs checks the spec defines. \
             Use {{\"kind\":\"check\",\"name\":\"<check name>\"}} naming one of the spec's checks, \
             or another allowed kind: {allowed}"
        ));
    }
    if !known {
        return Err(format!(
            "verify kind {:?} is not allowed; allowed kinds: {allowed}",
            clip(kind, DESCRIBE_MAX_CHARS)
        ));
    }
    serde_json::from_value::<Verify>(v.clone()).map_err(|e| {
        let fields = ALLOWED_KINDS.iter().find(|k| k.split(' ').next() == Some(kind)).copied().unwrap_or(kind);
        format!("verify of kind {kind:?} is malformed ({e}); expected exactly {fields} with string values")
    })
}

fn check_list(checks: &BTreeMap<String, CheckSpec>) -> String {
    if checks.is_empty() {
        "(none)".into()
    } else {
        checks
            .keys()
            .map(|k| format!("{k:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `file_contains`: confined and non-blocking, so a FIFO or device at the
/// path is "not there yet", never a read that hangs the run.
fn file_contains(ctx: &VerifyContext, path: &str, text: &str) -> VerifyOutcome {
    let Ok(f) = crate::confined::open_read(ctx.workspace, path) else {
        return VerifyOutcome::NotStarted;
    };
    let mut buf = Vec::new();
    if f.file
        .take(VERIFY_READ_MAX_BYTES)
        .read_to_end(&mut buf)
        .is_err()
    {
        return VerifyOutcome::NotStarted;
    }
    // Byte search, so a file that is not UTF-8 can still match.
    if contains(&buf, text.as_bytes()) {
        VerifyOutcome::Done
    } else {
        VerifyOutcome::NotStarted
    }
}

/// `check`: the spec's named check, within the run's deadline. A check cut
/// short is not judged, and one that never ran its command says why, so a
/// broken case does not read as an agent that failed.
fn named_check(ctx: &VerifyContext, name: &str) -> (VerifyOutcome, Option<String>) {
    let Some(spec) = ctx.checks.get(name) else {
        let why = format!("check {name:?} is not defined by the spec");
        return (VerifyOutcome::NotStarted, Some(why));
    };
    let r = crate::check::run_check_by(spec, ctx.workspace.root(), ctx.deadline);
    let status = r
        .exit_code
        .map_or("not started".into(), |c| format!("exit {c}"));
    let outcome = if r.passed {
        VerifyOutcome::Done
    } else if r.cut_short() {
        let why = if r.cut_by_stop {
            "the run was asked to stop"
        } else {
            "the run's wall clock ran out"
        };
        VerifyOutcome::NotJudged {
            detail: format!("{why} before check {name:?} finished"),
        }
    } else if r.could_not_run {
        VerifyOutcome::CouldNotRun {
            detail: format!(
                "check {name:?} could not run ({status}): {}",
                clip(r.output.trim(), COULD_NOT_RUN_OUTPUT_MAX_CHARS)
            ),
        }
    } else {
        let status = if r.timed_out {
            "timed out".to_string()
        } else {
            status
        };
        let tail = tail_chars(r.output.trim(), FAILED_CHECK_TAIL_MAX_CHARS);
        let why = format!("check {name:?} failed ({status}): {tail}");
        return (VerifyOutcome::NotStarted, Some(why));
    };
    (outcome, None)
}

/// The last `max_chars` characters of `s`, with `...` before a cut.
fn tail_chars(s: &str, max_chars: usize) -> String {
    let n = s.chars().count();
    if n <= max_chars {
        return s.to_string();
    }
    let start = s.char_indices().nth(n - max_chars).map_or(0, |(i, _)| i);
    format!("...{}", &s[start..])
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

use crate::text::clip_chars as clip;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_verify_kind_is_its_serde_tag() {
        let all = [
            json!({"kind": "file_contains", "path": "a", "text": "b"}),
            json!({"kind": "file_absent", "path": "a"}),
            json!({"kind": "file_exists", "path": "a"}),
            json!({"kind": "outbox_has", "key": "k"}),
            json!({"kind": "migration_state", "name": "m"}),
            json!({"kind": "check", "name": "tests"}),
        ];
        assert_eq!(all.len(), VerifyKind::ALL.len());
        for v in all {
            let parsed: Verify = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(v["kind"], parsed.kind().as_str());
        }
    }

    struct Fx {
        _d: tempfile::TempDir,
        _o: tempfile::TempDir,
        ws: Workspace,
        outbox: Outbox,
        checks: BTreeMap<String, CheckSpec>,
    }

    impl Fx {
        fn new() -> Fx {
            let d = tempfile::tempdir().unwrap();
            let o = tempfile::tempdir().unwrap();
            let ws = Workspace::open(d.path()).unwrap();
            let outbox = Outbox::new(o.path().join("outbox.jsonl"));
            let mut checks = BTreeMap::new();
            checks.insert(
                "ok".to_string(),
                CheckSpec {
                    command: vec!["true".into()],
                    timeout_s: 5,
                    env: Default::default(),
                    network: false,
                },
            );
            checks.insert(
                "bad".to_string(),
                CheckSpec {
                    command: vec!["false".into()],
                    timeout_s: 5,
                    env: Default::default(),
                    network: false,
                },
            );
            checks.insert(
                "has_marker".to_string(),
                CheckSpec {
                    command: vec!["test".into(), "-f".into(), "marker".into()],
                    timeout_s: 5,
                    env: Default::default(),
                    network: false,
                },
            );
            Fx {
                _d: d,
                _o: o,
                ws,
                outbox,
                checks,
            }
        }
        fn ctx(&self) -> VerifyContext<'_> {
            VerifyContext {
                workspace: &self.ws,
                outbox: &self.outbox,
                checks: &self.checks,
                deadline: None,
            }
        }
    }

    #[test]
    fn serde_shape() {
        let v = Verify::FileContains {
            path: "a".into(),
            text: "b".into(),
        };
        assert_eq!(
            serde_json::to_value(&v).unwrap(),
            json!({"kind":"file_contains","path":"a","text":"b"})
        );
        let o = VerifyOutcome::PartiallyApplied { detail: "x".into() };
        assert_eq!(
            serde_json::to_value(&o).unwrap(),
            json!({"outcome":"partially_applied","detail":"x"})
        );
        assert_eq!(
            serde_json::to_value(VerifyOutcome::Done).unwrap(),
            json!({"outcome":"done"})
        );
        let back: Verify =
            serde_json::from_value(json!({"kind":"migration_state","name":"0042"})).unwrap();
        assert_eq!(
            back,
            Verify::MigrationState {
                name: "0042".into()
            }
        );
    }

    #[test]
    fn file_kinds() {
        let fx = Fx::new();
        let c = fx.ctx();
        let fc = Verify::FileContains {
            path: "src/a.rs".into(),
            text: "fn main".into(),
        };
        let fe = Verify::FileExists {
            path: "src/a.rs".into(),
        };
        let fa = Verify::FileAbsent {
            path: "src/a.rs".into(),
        };
        assert_eq!(fc.run(&c), VerifyOutcome::NotStarted);
        assert_eq!(fe.run(&c), VerifyOutcome::NotStarted);
        assert_eq!(fa.run(&c), VerifyOutcome::Done);
        std::fs::create_dir(fx.ws.root().join("src")).unwrap();
        std::fs::write(fx.ws.root().join("src/a.rs"), b"\xff\xfe fn other").unwrap();
        assert_eq!(fc.run(&c), VerifyOutcome::NotStarted);
        assert_eq!(fe.run(&c), VerifyOutcome::Done);
        assert_eq!(fa.run(&c), VerifyOutcome::NotStarted);
        std::fs::write(fx.ws.root().join("src/a.rs"), b"\xff\xfe fn main() {}").unwrap();
        assert_eq!(fc.run(&c), VerifyOutcome::Done);
        // Paths that do not resolve are NotStarted, never a panic.
        assert_eq!(
            Verify::FileExists {
                path: "/etc/passwd".into()
            }
            .run(&c),
            VerifyOutcome::NotStarted
        );
        assert_eq!(
            Verify::FileAbsent {
                path: "../x".into()
            }
            .run(&c),
            VerifyOutcome::NotStarted
        );
    }

    #[test]
    fn outbox_kind() {
        let fx = Fx::new();
        let v = Verify::OutboxHas {
            key: "summary-1".into(),
        };
        assert_eq!(v.run(&fx.ctx()), VerifyOutcome::NotStarted);
        fx.outbox.post("#eng", "hi", "summary-1").unwrap();
        assert_eq!(v.run(&fx.ctx()), VerifyOutcome::Done);
        // An unreadable outbox parks instead of inviting a second post.
        let bad = Outbox::new(fx.ws.root());
        let ctx = VerifyContext {
            workspace: &fx.ws,
            outbox: &bad,
            checks: &fx.checks,
            deadline: None,
        };
        assert!(matches!(
            v.run(&ctx),
            VerifyOutcome::PartiallyApplied { .. }
        ));
    }

    #[test]
    fn migration_kind_is_three_way() {
        let fx = Fx::new();
        let v = Verify::MigrationState {
            name: "0042".into(),
        };
        assert_eq!(
            v.run(&fx.ctx()),
            VerifyOutcome::NotStarted,
            "unknown => NotStarted"
        );
        std::fs::create_dir(fx.ws.root().join("migrations")).unwrap();
        std::fs::write(
            fx.ws.root().join("migrations/0042.json"),
            r#"{"steps":[{"path":"db/1","content":"a"},{"path":"db/2","content":"b"}]}"#,
        )
        .unwrap();
        assert_eq!(v.run(&fx.ctx()), VerifyOutcome::NotStarted);
        std::fs::create_dir(fx.ws.root().join("db")).unwrap();
        std::fs::write(fx.ws.root().join("db/1"), "a").unwrap();
        match v.run(&fx.ctx()) {
            VerifyOutcome::PartiallyApplied { detail } => {
                assert!(detail.starts_with("applied 1 of 2 steps: "), "{detail}")
            }
            o => panic!("{o:?}"),
        }
        std::fs::write(fx.ws.root().join("db/2"), "b").unwrap();
        assert_eq!(v.run(&fx.ctx()), VerifyOutcome::Done);
    }

    #[test]
    fn check_kind_runs_in_workspace() {
        let fx = Fx::new();
        let c = fx.ctx();
        assert_eq!(
            Verify::Check { name: "ok".into() }.run(&c),
            VerifyOutcome::Done
        );
        assert_eq!(
            Verify::Check { name: "bad".into() }.run(&c),
            VerifyOutcome::NotStarted
        );
        assert_eq!(
            Verify::Check {
                name: "nope".into()
            }
            .run(&c),
            VerifyOutcome::NotStarted
        );
        let m = Verify::Check {
            name: "has_marker".into(),
        };
        assert_eq!(m.run(&c), VerifyOutcome::NotStarted);
        std::fs::write(fx.ws.root().join("marker"), "").unwrap();
        assert_eq!(m.run(&c), VerifyOutcome::Done, "cwd is the workspace root");
    }

    #[test]
    fn a_check_verify_cut_by_the_run_clock_is_not_judged_not_failed() {
        let mut fx = Fx::new();
        fx.checks.insert(
            "slow".into(),
            CheckSpec {
                command: vec!["sleep".into(), "30".into()],
                timeout_s: 30,
                env: Default::default(),
                network: false,
            },
        );
        let mut c = fx.ctx();
        c.deadline = Some(std::time::Instant::now() + std::time::Duration::from_millis(200));
        let v = Verify::Check {
            name: "slow".into(),
        };
        assert!(
            matches!(v.run(&c), VerifyOutcome::NotJudged { .. }),
            "cut mid-check"
        );
        // Out of time before it starts: not judged either, and nothing runs.
        assert!(matches!(
            Verify::Check { name: "bad".into() }.run(&c),
            VerifyOutcome::NotJudged { .. }
        ));
        // A failing check inside the clock is judged: not started.
        c.deadline = Some(std::time::Instant::now() + std::time::Duration::from_secs(20));
        assert_eq!(
            Verify::Check { name: "bad".into() }.run(&c),
            VerifyOutcome::NotStarted
        );
    }

    #[test]
    fn validate_model_written_refuses_ineligible() {
        let fx = Fx::new();
        let c = fx.ctx();
        let ok = |v: Verify| v.validate_model_written(&c);
        assert!(ok(Verify::FileContains {
            path: "a.txt".into(),
            text: "x".into()
        })
        .is_ok());
        assert!(ok(Verify::FileContains {
            path: "a.txt".into(),
            text: "  \n".into()
        })
        .unwrap_err()
        .contains("non-empty"));
        assert!(ok(Verify::FileContains {
            path: "a.txt".into(),
            text: "x".repeat(VERIFY_TEXT_MAX_CHARS + 1)
        })
        .is_err());
        assert!(ok(Verify::FileExists {
            path: "/abs".into()
        })
        .unwrap_err()
        .contains("absolute"));
        assert!(ok(Verify::FileAbsent {
            path: ".git/HEAD".into()
        })
        .is_err());
        assert!(ok(Verify::FileAbsent { path: ".".into() }).is_err());
        assert!(ok(Verify::OutboxHas { key: " ".into() }).is_err());
        assert!(ok(Verify::OutboxHas { key: "k".into() }).is_ok());
        let e = ok(Verify::Check {
            name: "lint".into(),
        })
        .unwrap_err();
        assert!(e.contains("\"ok\"") && e.contains("\"bad\""), "{e}");
        assert!(ok(Verify::Check { name: "ok".into() }).is_ok());
        assert!(ok(Verify::MigrationState { name: "a/b".into() })
            .unwrap_err()
            .contains("invalid"));
        assert!(ok(Verify::MigrationState {
            name: "0042".into()
        })
        .unwrap_err()
        .contains("migrations/0042.json"));
        std::fs::create_dir(fx.ws.root().join("migrations")).unwrap();
        std::fs::write(
            fx.ws.root().join("migrations/0042.json"),
            r#"{"steps":[{"path":"db/1","content":"a"}]}"#,
        )
        .unwrap();
        assert!(ok(Verify::MigrationState {
            name: "0042".into()
        })
        .is_ok());
    }

    #[test]
    fn parse_model_verify_messages() {
        assert_eq!(
            parse_model_verify(&json!({"kind":"outbox_has","key":"k"})).unwrap(),
            Verify::OutboxHas { key: "k".into() }
        );
        let e = parse_model_verify(&json!({"kind":"command","command":"pytest"})).unwrap_err();
        assert!(
            e.contains("command is not allowed") && e.contains("\"check\""),
            "{e}"
        );
        let e = parse_model_verify(&json!({"kind":"file_exists","path":"a","command":"x"}))
            .unwrap_err();
        assert!(e.contains("malformed"), "{e}");
        let e = parse_model_verify(&json!({"kind":"sql","query":"select 1"})).unwrap_err();
        assert!(
            e.contains("not allowed") && e.contains("file_contains"),
            "{e}"
        );
        let e = parse_model_verify(&json!({"kind":"file_contains","path":"a"})).unwrap_err();
        assert!(e.contains("file_contains {path, text}"), "{e}");
        assert!(parse_model_verify(&json!("done")).is_err());
        assert!(parse_model_verify(&json!({"path":"a"}))
            .unwrap_err()
            .contains("no \"kind\""));
        assert!(parse_model_verify(&json!({"kind":3})).is_err());
        assert!(parse_model_verify(&json!({"kind":"file_exists","path":5})).is_err());
    }

    #[test]
    fn describe_is_one_bounded_line() {
        let d = Verify::FileContains {
            path: "a".into(),
            text: "x\n".repeat(500),
        }
        .describe();
        assert!(!d.contains('\n'));
        assert!(d.len() < 400);
        assert_eq!(
            Verify::Check {
                name: "tests".into()
            }
            .describe(),
            "check \"tests\" passes"
        );
    }
}
