//! The state dir's seal: what the kernel should have stopped, detected when
//! it did not. The sandbox (crate::sandbox) keeps every process the harness
//! starts on the model's behalf (a check, the goal predicate, a command) out
//! of the state dir; on a weaker kernel (a lowered `[sandbox] min_level`) or
//! a sandbox bug, this is what still notices.
//!
//! Right before such a process starts, the identity of every entry of the
//! run's state dir is taken (name, type, inode, size, link count, mtime,
//! ctime); right after it and everything it started are gone, it is taken
//! again. The harness writes nothing to the state dir while one runs (the
//! loop waits for it), so any difference is a write, a rename, a new hard
//! link, a new or removed file made by what that process ran. ctime cannot
//! be set back by an unprivileged process, so a write whose mtime was
//! restored is still seen. The first breach is kept; the loop refuses to
//! checkpoint over it and the run ends UNRECOVERABLE_ERROR (`state_tampered`),
//! naming the entry: its ledger and checkpoint can no longer be trusted.
//!
//! Process-wide, like crate::stop: one run per harness process. Outside a
//! run (the bench re-running a predicate) nothing is sealed and a watch is
//! free.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Entries of the state dir compared; a state dir holds about ten.
pub const SEAL_ENTRIES_MAX: usize = 1000;

/// The run's seal: its state dir and the first breach.
pub struct Seal {
    dir: Mutex<Option<PathBuf>>,
    breach: Mutex<Option<String>>,
}

/// This process's run (one run per harness process).
static SEAL: Seal = Seal::new();

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One entry's identity: what a write, rename or link changes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    kind: &'static str,
    ino: u64,
    len: u64,
    nlink: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

type Snapshot = BTreeMap<String, Identity>;

fn snapshot(dir: &Path) -> Snapshot {
    let mut out = Snapshot::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten().take(SEAL_ENTRIES_MAX) {
        let Ok(m) = e.path().symlink_metadata() else {
            continue;
        };
        let ft = m.file_type();
        let kind = if ft.is_file() {
            "file"
        } else if ft.is_dir() {
            "dir"
        } else if ft.is_symlink() {
            "symlink"
        } else {
            "other"
        };
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        out.insert(
            e.file_name().to_string_lossy().into_owned(),
            Identity {
                kind,
                ino: m.ino(),
                len: m.len(),
                nlink: m.nlink(),
                mtime_ns: ns(m.mtime(), m.mtime_nsec()),
                ctime_ns: match crate::mutants::active(crate::mutants::Mutant::SealMtimeOnly) {
                    true => 0,
                    false => ns(m.ctime(), m.ctime_nsec()),
                },
            },
        );
    }
    out
}

/// What differs between two snapshots, each entry named once.
fn differences(before: &Snapshot, after: &Snapshot) -> Vec<String> {
    let mut out = vec![];
    for (name, b) in before {
        match after.get(name) {
            None => out.push(format!("{name} removed")),
            Some(a) if a.ino != b.ino || a.kind != b.kind => out.push(format!("{name} replaced")),
            Some(a) if a.nlink != b.nlink => out.push(format!("{name} linked elsewhere")),
            Some(a) if a != b => out.push(format!("{name} written")),
            Some(_) => {}
        }
    }
    out.extend(
        after
            .keys()
            .filter(|k| !before.contains_key(*k))
            .map(|k| format!("{k} created")),
    );
    out
}

impl Seal {
    pub const fn new() -> Seal {
        Seal {
            dir: Mutex::new(None),
            breach: Mutex::new(None),
        }
    }

    pub fn seal(&self, state_dir: &Path) {
        *lock(&self.dir) = Some(state_dir.to_path_buf());
    }

    fn watch_of(&self, except: &'static [&'static str]) -> Watch {
        let dir = lock(&self.dir).clone();
        Watch {
            before: dir.map(|d| {
                let s = snapshot(&d);
                (d, s)
            }),
            except,
        }
    }

    /// The process `what` and everything it started are gone: compare, and
    /// keep the first breach.
    fn end(&self, w: Watch, what: &str) {
        let Some((dir, mut before)) = w.before else {
            return;
        };
        let mut after = snapshot(&dir);
        for name in w.except {
            before.remove(*name);
            after.remove(*name);
        }
        let changed = differences(&before, &after);
        if changed.is_empty() {
            return;
        }
        lock(&self.breach).get_or_insert_with(|| {
            format!(
                "while {what} ran, the state dir {} changed: {}; the harness writes nothing there while a confined process runs, so its ledger and checkpoint can no longer be trusted",
                dir.display(),
                changed.join(", ")
            )
        });
    }

    pub fn intact(&self) -> Result<(), StateTampered> {
        match lock(&self.breach).clone() {
            Some(b) => Err(StateTampered(b)),
            None => Ok(()),
        }
    }
}

impl Default for Seal {
    fn default() -> Seal {
        Seal::new()
    }
}

/// Seal `state_dir` for this process's run.
pub fn seal(state_dir: &Path) {
    SEAL.seal(state_dir);
}

/// A watch over one confined process: [`watch`] before it starts,
/// [`Watch::end`] after it and everything it started are gone.
#[must_use]
pub struct Watch {
    before: Option<(PathBuf, Snapshot)>,
    /// Entries the watched process may write (git's own repository).
    except: &'static [&'static str],
}

/// Take the state dir's identity before a confined process starts.
pub fn watch() -> Watch {
    SEAL.watch_of(&[])
}

/// As [`watch`], for a process of the harness's own that writes the
/// entries `except` and nothing else of the state dir (its git, which
/// writes `<state>/git`): a write anywhere else is a breach as for a check.
pub fn watch_except(except: &'static [&'static str]) -> Watch {
    SEAL.watch_of(except)
}

impl Watch {
    /// Compare with the state dir now; `what` names the process in a breach.
    pub fn end(self, what: &str) {
        SEAL.end(self, what);
    }
}

/// The state dir was changed by a process the harness started.
#[derive(Debug, Clone, thiserror::Error)]
#[error("state dir tampered: {0}")]
pub struct StateTampered(pub String);

/// Ok unless a confined process changed this run's state dir.
pub fn intact() -> Result<(), StateTampered> {
    SEAL.intact()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("ledger.jsonl"), "{\"a\":1}\n").unwrap();
        std::fs::write(d.path().join("checkpoint.json"), "{}").unwrap();
        d
    }

    /// Every kind of change a process could make is named: an append, a
    /// write with its mtime put back, a rename over, a hard link from
    /// elsewhere, a new file, a removal. An untouched dir is no change.
    #[test]
    fn each_kind_of_change_is_seen_and_named() {
        let d = dir();
        let p = d.path();
        let outside = tempfile::tempdir().unwrap();
        let cases: Vec<(&str, Box<dyn Fn()>)> = vec![
            ("nothing", Box::new(|| {})),
            (
                "ledger.jsonl written",
                Box::new(|| {
                    use std::io::Write;
                    let mut f = std::fs::OpenOptions::new()
                        .append(true)
                        .open(p.join("ledger.jsonl"))
                        .unwrap();
                    f.write_all(b"{\"spent\":0}\n").unwrap();
                }),
            ),
            (
                "checkpoint.json written",
                Box::new(|| {
                    let f = p.join("checkpoint.json");
                    let m = std::fs::metadata(&f).unwrap().modified().unwrap();
                    std::fs::write(&f, "{}").unwrap();
                    std::fs::File::options()
                        .write(true)
                        .open(&f)
                        .unwrap()
                        .set_modified(m)
                        .unwrap();
                }),
            ),
            (
                "checkpoint.json replaced",
                Box::new(|| {
                    std::fs::write(p.join("new"), "{}").unwrap();
                    std::fs::rename(p.join("new"), p.join("checkpoint.json")).unwrap();
                }),
            ),
            (
                "ledger.jsonl linked elsewhere",
                Box::new(|| {
                    std::fs::hard_link(p.join("ledger.jsonl"), outside.path().join("l")).unwrap();
                }),
            ),
            (
                "evil created",
                Box::new(|| std::fs::write(p.join("evil"), "x").unwrap()),
            ),
            (
                "ledger.jsonl removed",
                Box::new(|| std::fs::remove_file(p.join("ledger.jsonl")).unwrap()),
            ),
        ];
        for (says, change) in cases {
            let before = snapshot(p);
            // ctime has nanosecond resolution on the usual filesystems, but
            // make sure a write is not inside the same tick as the snapshot.
            std::thread::sleep(std::time::Duration::from_millis(5));
            change();
            let d = differences(&before, &snapshot(p));
            if says == "nothing" {
                assert!(d.is_empty(), "{d:?}");
            } else {
                assert!(d.iter().any(|x| x == says), "{says}: {d:?}");
            }
        }
    }

    /// A watch with nothing sealed is free, and the first breach is kept
    /// and named (a seal of its own: the process-wide one is the run's).
    #[test]
    fn the_first_breach_is_kept() {
        let seal = Seal::new();
        let w = seal.watch_of(&[]);
        std::fs::write(dir().path().join("x"), "x").unwrap();
        seal.end(w, "nothing sealed");
        assert!(seal.intact().is_ok());
        let d = dir();
        seal.seal(d.path());
        let w = seal.watch_of(&[]);
        std::fs::write(d.path().join("ledger.jsonl"), "forged").unwrap();
        seal.end(w, "check \"tests\"");
        let w = seal.watch_of(&[]);
        std::fs::write(d.path().join("second"), "x").unwrap();
        seal.end(w, "check \"lint\"");
        let e = seal.intact().unwrap_err().to_string();
        assert!(
            e.contains("check \"tests\"") && e.contains("ledger.jsonl written"),
            "{e}"
        );
        assert!(!e.contains("lint"), "{e}");
    }

    /// git's watch: its own repository may change, nothing else may.
    #[test]
    fn git_may_write_its_repository_and_nothing_else() {
        let seal = Seal::new();
        let d = dir();
        std::fs::create_dir(d.path().join("git")).unwrap();
        seal.seal(d.path());
        let w = seal.watch_of(&["git", "git.partial"]);
        std::fs::write(d.path().join("git/index.lock"), "x").unwrap();
        std::fs::create_dir(d.path().join("git.partial")).unwrap();
        seal.end(w, "git add");
        assert!(seal.intact().is_ok(), "{:?}", seal.intact());
        let w = seal.watch_of(&["git", "git.partial"]);
        std::fs::write(d.path().join("ledger.jsonl"), "forged").unwrap();
        seal.end(w, "git add");
        let e = seal.intact().unwrap_err().to_string();
        assert!(e.contains("git add") && e.contains("ledger.jsonl"), "{e}");
    }
}
