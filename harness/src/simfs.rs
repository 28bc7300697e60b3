//! The one small layer every durable file operation of the harness goes
//! through (the atomic write, the ledger journal, the outbox post, the
//! migration steps), so the chaos bench can see and perturb them. With no
//! environment variable set it is a thin pass-through: the same syscalls in
//! the same order as calling `std::fs` directly.
//!
//! - `HARNESS_SIMFS_LOG=<file>`: every operation (open/create, write with its
//!   offset and bytes, fsync of a file, set_len, rename, unlink, mkdir, fsync
//!   of a directory) is ALSO appended to `<file>` as one JSON line, written
//!   with one `write(2)` right after the operation returned, so a SIGKILL never
//!   loses an operation the harness went on from. The chaos driver replays the
//!   log through a model of a file system (data volatile until fsync(fd),
//!   names volatile until fsync(dir)) to build a post-power-loss disk image.
//! - `HARNESS_SIMFS_FAULT=<eio|enospc>:<write|fsync>:<n>[:sticky|:once]`: the
//!   n-th operation of that class (1-based, counted in this process) fails
//!   with that errno and is not performed; `sticky` (the default, as SQLite's
//!   persistent I/O error tests) fails every later one of the class too.
//!   `write` = data writes and truncations; `fsync` = fsync of a file or dir.
//!
//! Both are test machinery, compiled in only with the `test-hooks` cargo
//! feature (the test-variants build): without it the layer never reads
//! either variable and is the pass-through alone. The deliberately broken
//! variants the bench self-tests against exist only with the `chaos-broken`
//! cargo feature (see [`broken`]). The production build enables neither.

use serde_json::json;
#[cfg(not(feature = "test-hooks"))]
use serde_json::Value;
use std::ffi::OsStr;
use std::io::{self, Seek, Write};
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
#[cfg(feature = "chaos-broken")]
use std::sync::OnceLock;

/// Read only by a harness built with the `test-hooks` feature.
pub const LOG_ENV: &str = "HARNESS_SIMFS_LOG";
/// Read only by a harness built with the `test-hooks` feature.
pub const FAULT_ENV: &str = "HARNESS_SIMFS_FAULT";
/// Only read by a harness built with the `chaos-broken` feature.
pub const BROKEN_ENV: &str = "HARNESS_CHAOS_BROKEN";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultClass {
    Write,
    Fsync,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    /// libc errno: 5 (EIO) or 28 (ENOSPC).
    pub errno: i32,
    pub class: FaultClass,
    pub nth: u64,
    pub sticky: bool,
}

impl Fault {
    pub fn parse(s: &str) -> Option<Fault> {
        let mut it = s.split(':');
        let errno = match it.next()? {
            "eio" => 5,
            "enospc" => 28,
            _ => return None,
        };
        let class = match it.next()? {
            "write" => FaultClass::Write,
            "fsync" => FaultClass::Fsync,
            _ => return None,
        };
        let nth: u64 = it.next()?.parse().ok().filter(|n| *n >= 1)?;
        let sticky = match it.next() {
            None | Some("sticky") => true,
            Some("once") => false,
            Some(_) => return None,
        };
        if it.next().is_some() {
            return None;
        }
        Some(Fault {
            errno,
            class,
            nth,
            sticky,
        })
    }
}

/// The deliberately broken harness variants the chaos bench must catch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broken {
    /// The atomic write never fsyncs the directory after the rename.
    NoDirFsync,
    /// The atomic write never fsyncs the temp file before the rename.
    NoFileFsync,
    /// The checkpoint is truncated and rewritten in place, no temp, no rename.
    InPlaceCheckpoint,
    /// Loading a checkpoint never compares the body's SHA-256 with the
    /// frame's: bit rot after commit is resumed from.
    SkipChecksum,
    /// No checkpoint right after a task is parked (the next one records it).
    SkipParkCheckpoint,
    /// The run's end settles the task in flight by its verify alone: a write
    /// of it that failed with an I/O error is forgotten, so it is "verified
    /// at end" and GOAL_MET may stand on it (issue 47's defect, put back).
    VerifiedInDoubt,
}

impl Broken {
    pub const ALL: [Broken; 6] = [
        Broken::NoDirFsync,
        Broken::NoFileFsync,
        Broken::InPlaceCheckpoint,
        Broken::SkipChecksum,
        Broken::SkipParkCheckpoint,
        Broken::VerifiedInDoubt,
    ];
    /// The wire names (`HARNESS_CHAOS_BROKEN`, `bench chaos --broken`).
    pub const NAMES: [&'static str; 6] = [
        "no-dir-fsync",
        "no-file-fsync",
        "in-place-checkpoint",
        "skip-checksum",
        "skip-park-checkpoint",
        "verified-in-doubt",
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Broken::NoDirFsync => Self::NAMES[0],
            Broken::NoFileFsync => Self::NAMES[1],
            Broken::InPlaceCheckpoint => Self::NAMES[2],
            Broken::SkipChecksum => Self::NAMES[3],
            Broken::SkipParkCheckpoint => Self::NAMES[4],
            Broken::VerifiedInDoubt => Self::NAMES[5],
        }
    }
    pub fn parse(s: &str) -> Option<Broken> {
        Broken::ALL.iter().copied().find(|b| b.as_str() == s)
    }
}

/// Which broken variant this process runs as. Always None unless the crate was
/// built with the `chaos-broken` feature AND `HARNESS_CHAOS_BROKEN` names one.
#[cfg(feature = "chaos-broken")]
pub fn broken() -> Option<Broken> {
    static B: OnceLock<Option<Broken>> = OnceLock::new();
    *B.get_or_init(|| {
        std::env::var(BROKEN_ENV)
            .ok()
            .and_then(|v| Broken::parse(&v))
    })
}

#[cfg(not(feature = "chaos-broken"))]
#[inline(always)]
pub fn broken() -> Option<Broken> {
    None
}

/// Which syncs an atomic write makes: both, always, in the product. The
/// one seam through which the fsync-dropping broken variants enter
/// `durable::atomic_write`, decided once per process from [`broken`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Durability {
    /// fsync the temp file before the rename.
    pub file_fsync: bool,
    /// fsync the directory after the rename.
    pub dir_fsync: bool,
}

impl Durability {
    pub const FULL: Durability = Durability {
        file_fsync: true,
        dir_fsync: true,
    };
}

/// This process's [`Durability`].
#[inline(always)]
pub fn durability() -> Durability {
    match broken() {
        Some(Broken::NoFileFsync) => Durability {
            file_fsync: false,
            ..Durability::FULL
        },
        Some(Broken::NoDirFsync) => Durability {
            dir_fsync: false,
            ..Durability::FULL
        },
        _ => Durability::FULL,
    }
}

#[cfg(feature = "test-hooks")]
use hooks::{gate, logging, next_id, record};

/// The operation log and the fault plan, read from the environment once.
#[cfg(feature = "test-hooks")]
mod hooks {
    use super::{abs, Fault, FaultClass, FAULT_ENV, LOG_ENV};
    use serde_json::{json, Value};
    use std::io::{self, Write};
    use std::path::Path;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Mutex, OnceLock};

    struct Sim {
        log: Option<Mutex<std::fs::File>>,
        fault: Option<Fault>,
        writes: AtomicU64,
        fsyncs: AtomicU64,
        next_fd: AtomicU64,
    }

    fn sim() -> &'static Sim {
        static S: OnceLock<Sim> = OnceLock::new();
        S.get_or_init(|| {
            let log = std::env::var_os(LOG_ENV).and_then(|p| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .ok()
                    .map(Mutex::new)
            });
            let fault = std::env::var(FAULT_ENV).ok().and_then(|v| Fault::parse(&v));
            Sim {
                log,
                fault,
                writes: AtomicU64::new(0),
                fsyncs: AtomicU64::new(0),
                next_fd: AtomicU64::new(1),
            }
        })
    }

    /// Is the operation log on?
    pub fn logging() -> bool {
        sim().log.is_some()
    }

    /// The log's id for a newly opened file (never 0).
    pub fn next_id() -> u64 {
        sim().next_fd.fetch_add(1, Ordering::SeqCst)
    }

    pub fn record(v: Value) {
        if let Some(m) = &sim().log {
            let mut line = v.to_string();
            line.push('\n');
            let mut f = m.lock().unwrap_or_else(|e| e.into_inner());
            let _ = f.write_all(line.as_bytes());
        }
    }

    /// Count one operation of `class`; Err if the fault plan fails it.
    pub fn gate(class: FaultClass, what: &str, path: &Path) -> io::Result<()> {
        let s = sim();
        let Some(f) = s.fault else { return Ok(()) };
        let counter = match class {
            FaultClass::Write => &s.writes,
            FaultClass::Fsync => &s.fsyncs,
        };
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        if f.class == class && (n == f.nth || (f.sticky && n > f.nth)) {
            record(
                json!({"op": "fault", "errno": f.errno, "class": what, "n": n, "path": abs(path)}),
            );
            return Err(io::Error::from_raw_os_error(f.errno));
        }
        Ok(())
    }
}

// Without the hooks: no log, no fault plan, and nothing reads the
// environment. `logging()` is a constant the optimiser folds, so the
// logging branches below vanish from the production binary.

/// Is the operation log on? Never, without the `test-hooks` feature.
#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn logging() -> bool {
    false
}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
fn next_id() -> u64 {
    // Only reached when `logging()` is true, which it never is here.
    0
}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
fn record(_: Value) {}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
fn gate(_: FaultClass, _: &str, _: &Path) -> io::Result<()> {
    Ok(())
}

fn abs(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Open {
    /// O_CREAT|O_EXCL, write.
    CreateNew,
    /// O_CREAT|O_TRUNC, write (`File::create`).
    Truncate,
    /// O_CREAT|O_APPEND, write; `read` adds read access.
    Append { read: bool },
    /// An existing file, write (no create, no truncate).
    Existing,
}

/// A file opened through the layer. Reads, seeks and metadata go through
/// [`File::get_mut`]; writes and syncs through the methods here.
#[derive(Debug)]
pub struct File {
    inner: std::fs::File,
    /// 0 when the log is off.
    id: u64,
    path: PathBuf,
    append: bool,
}

impl File {
    pub fn open(path: &Path, how: Open) -> io::Result<File> {
        let mut o = std::fs::OpenOptions::new();
        match how {
            Open::CreateNew => o.write(true).create_new(true),
            Open::Truncate => o.write(true).create(true).truncate(true),
            Open::Append { read } => o.create(true).append(true).read(read),
            Open::Existing => o.write(true),
        };
        // O_NONBLOCK: a FIFO put where a durable file belongs must fail the
        // open (ENXIO) or the check below, never block the run.
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits());
        let existed = logging() && std::fs::symlink_metadata(path).is_ok();
        let inner = o.open(path)?;
        if !inner.metadata()?.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a regular file", path.display()),
            ));
        }
        let mut id = 0;
        if logging() {
            id = next_id();
            record(json!({
                "op": "open", "fd": id, "path": abs(path), "created": !existed,
                "trunc": how == Open::Truncate, "append": matches!(how, Open::Append { .. }),
            }));
        }
        Ok(File {
            inner,
            id,
            path: path.to_path_buf(),
            append: matches!(how, Open::Append { .. }),
        })
    }

    pub fn get_mut(&mut self) -> &mut std::fs::File {
        &mut self.inner
    }

    pub fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        gate(FaultClass::Write, "write", &self.path)?;
        let off = if self.id != 0 {
            if self.append {
                self.inner.metadata().map(|m| m.len()).ok()
            } else {
                self.inner.stream_position().ok()
            }
        } else {
            None
        };
        let r = self.inner.write_all(buf);
        if self.id != 0 {
            // Logged even on error: part of the buffer may have landed.
            record(
                json!({"op": "write", "fd": self.id, "off": off, "data": hex::encode(buf), "ok": r.is_ok()}),
            );
        }
        r
    }

    /// fsync(2).
    pub fn sync_all(&self) -> io::Result<()> {
        gate(FaultClass::Fsync, "fsync", &self.path)?;
        self.inner.sync_all()?;
        if self.id != 0 {
            record(json!({"op": "fsync", "fd": self.id}));
        }
        Ok(())
    }

    /// fdatasync(2): for the model, the same as fsync (the size is metadata
    /// needed to read the data back, which fdatasync also persists).
    pub fn sync_data(&self) -> io::Result<()> {
        gate(FaultClass::Fsync, "fsync", &self.path)?;
        self.inner.sync_data()?;
        if self.id != 0 {
            record(json!({"op": "fsync", "fd": self.id}));
        }
        Ok(())
    }

    pub fn set_len(&self, len: u64) -> io::Result<()> {
        gate(FaultClass::Write, "truncate", &self.path)?;
        self.inner.set_len(len)?;
        if self.id != 0 {
            record(json!({"op": "truncate", "fd": self.id, "len": len}));
        }
        Ok(())
    }
}

// --- fd-relative variants ---------------------------------------------------
// The confined workspace writes (`crate::confined`) act on a directory they
// opened by walking from the workspace root without following a symlink, so
// a component swapped after the check cannot redirect them. The operations
// are the same as above, logged with the path the directory had when it was
// opened (the power-cut model replays paths), and gated by the same faults.

impl File {
    /// O_CREAT|O_EXCL|O_NOFOLLOW, write, in the directory `dir` (at `dir_path`).
    pub fn create_new_at(dir: BorrowedFd<'_>, dir_path: &Path, name: &OsStr) -> io::Result<File> {
        use nix::fcntl::{openat, OFlag};
        use nix::sys::stat::Mode;
        let fd = openat(
            dir,
            name,
            OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_WRONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o666),
        )
        .map_err(io::Error::from)?;
        let path = dir_path.join(name);
        let mut id = 0;
        if logging() {
            id = next_id();
            record(json!({
                "op": "open", "fd": id, "path": abs(&path), "created": true,
                "trunc": false, "append": false,
            }));
        }
        Ok(File {
            inner: std::fs::File::from(fd),
            id,
            path,
            append: false,
        })
    }
}

/// renameat(2) within one directory.
pub fn rename_at(dir: BorrowedFd<'_>, dir_path: &Path, from: &OsStr, to: &OsStr) -> io::Result<()> {
    nix::fcntl::renameat(dir, from, dir, to).map_err(io::Error::from)?;
    if logging() {
        record(
            json!({"op": "rename", "from": abs(&dir_path.join(from)), "to": abs(&dir_path.join(to))}),
        );
    }
    Ok(())
}

/// unlinkat(2) of a file in `dir`.
pub fn unlink_at(dir: BorrowedFd<'_>, dir_path: &Path, name: &OsStr) -> io::Result<()> {
    nix::unistd::unlinkat(dir, name, nix::unistd::UnlinkatFlags::NoRemoveDir)
        .map_err(io::Error::from)?;
    if logging() {
        record(json!({"op": "unlink", "path": abs(&dir_path.join(name))}));
    }
    Ok(())
}

/// mkdirat(2) of one directory in `dir`.
pub fn mkdir_at(dir: BorrowedFd<'_>, dir_path: &Path, name: &OsStr) -> io::Result<()> {
    nix::sys::stat::mkdirat(dir, name, nix::sys::stat::Mode::from_bits_truncate(0o777))
        .map_err(io::Error::from)?;
    if logging() {
        record(json!({"op": "mkdir", "path": abs(&dir_path.join(name))}));
    }
    Ok(())
}

/// fsync(2) of an open directory (at `dir_path`).
pub fn fsync_dir_fd(dir: BorrowedFd<'_>, dir_path: &Path) -> io::Result<()> {
    gate(FaultClass::Fsync, "fsync_dir", dir_path)?;
    nix::unistd::fsync(dir).map_err(io::Error::from)?;
    if logging() {
        record(json!({"op": "fsync_dir", "path": abs(dir_path)}));
    }
    Ok(())
}

pub fn rename(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::rename(from, to)?;
    if logging() {
        record(json!({"op": "rename", "from": abs(from), "to": abs(to)}));
    }
    Ok(())
}

pub fn remove_file(p: &Path) -> io::Result<()> {
    std::fs::remove_file(p)?;
    if logging() {
        record(json!({"op": "unlink", "path": abs(p)}));
    }
    Ok(())
}

/// `std::fs::create_dir_all`, logging each directory it created, outermost first.
pub fn create_dir_all(p: &Path) -> io::Result<()> {
    if !logging() {
        return std::fs::create_dir_all(p);
    }
    let p = abs(p);
    let missing: Vec<PathBuf> = p
        .ancestors()
        .take_while(|a| !a.exists())
        .map(Path::to_path_buf)
        .collect();
    std::fs::create_dir_all(&p)?;
    for d in missing.iter().rev() {
        record(json!({"op": "mkdir", "path": d}));
    }
    Ok(())
}

/// Open a directory and fsync it: makes creates, renames and unlinks of its
/// entries durable.
pub fn fsync_dir(dir: &Path) -> io::Result<()> {
    gate(FaultClass::Fsync, "fsync_dir", dir)?;
    std::fs::File::open(dir)?.sync_all()?;
    if logging() {
        record(json!({"op": "fsync_dir", "path": abs(dir)}));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_specs() {
        assert_eq!(
            Fault::parse("eio:write:3"),
            Some(Fault {
                errno: 5,
                class: FaultClass::Write,
                nth: 3,
                sticky: true
            })
        );
        assert_eq!(
            Fault::parse("enospc:fsync:1:once"),
            Some(Fault {
                errno: 28,
                class: FaultClass::Fsync,
                nth: 1,
                sticky: false
            })
        );
        for bad in [
            "",
            "eio",
            "eio:write",
            "eio:write:0",
            "eacces:write:1",
            "eio:read:1",
            "eio:write:1:x",
            "eio:write:1:once:2",
        ] {
            assert_eq!(Fault::parse(bad), None, "{bad}");
        }
        assert_eq!(Broken::parse("no-dir-fsync"), Some(Broken::NoDirFsync));
        assert_eq!(Broken::parse("nope"), None);
        for b in Broken::ALL {
            assert_eq!(Broken::parse(b.as_str()), Some(b));
        }
    }

    #[test]
    fn pass_through_without_env() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a/b/c.txt");
        create_dir_all(p.parent().unwrap()).unwrap();
        let mut f = File::open(&p, Open::Truncate).unwrap();
        f.write_all(b"hello").unwrap();
        f.sync_all().unwrap();
        f.set_len(4).unwrap();
        drop(f);
        let mut f = File::open(&p, Open::Append { read: false }).unwrap();
        f.write_all(b"!").unwrap();
        f.sync_data().unwrap();
        fsync_dir(p.parent().unwrap()).unwrap();
        rename(&p, &d.path().join("a/b/d.txt")).unwrap();
        assert_eq!(std::fs::read(d.path().join("a/b/d.txt")).unwrap(), b"hell!");
        assert!(File::open(&d.path().join("a/b/d.txt"), Open::CreateNew).is_err());
        remove_file(&d.path().join("a/b/d.txt")).unwrap();
        assert!(File::open(&d.path().join("nope"), Open::Existing).is_err());
    }
}
