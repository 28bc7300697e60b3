//! The one atomic write sequence everything durable goes through (checkpoint,
//! report): temp file in the SAME directory (a rename across filesystems is a
//! copy, not atomic) -> write -> fsync(fd) -> rename over the real name ->
//! fsync(dir) (without it the rename itself can be lost on power failure).
//! Any reader sees the whole old file or the whole new one, never a mixture.
//! Temp files are named `.<name>.tmp-<pid>-<n>` and are never read by anyone.

use crate::chaos_hook::{point, Phase};
use crate::simfs;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Suffix marker that identifies a temp file; loaders ignore these.
pub const TEMP_MARKER: &str = ".tmp-";

pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "path has no file name")
    })?;
    let durability = simfs::durability();
    let tmp = dir.join(format!(
        ".{}{}{}-{}",
        name.to_string_lossy(),
        TEMP_MARKER,
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    // Until the rename, the temp file is ours to remove: on an error (a full
    // disk leaves a short temp behind) and on a panic mid-write (the guard is
    // dropped while unwinding), so no half-written temp outlives the call.
    // The real file is never touched before the rename: a reader sees the
    // whole old file or the whole new one.
    let mut guard = TempGuard {
        path: &tmp,
        armed: true,
    };
    let result = (|| {
        let mut f = simfs::File::open(&tmp, simfs::Open::CreateNew)?;
        f.write_all(bytes)?;
        point(Phase::TempWritten);
        if durability.file_fsync {
            f.sync_all()?; // bytes on the device, not just in the page cache
        }
        drop(f);
        point(Phase::AfterFsyncFile);
        simfs::rename(&tmp, path)?; // the step that buys atomicity
        guard.armed = false;
        point(Phase::AfterRenameBeforeFsyncDir);
        if !durability.dir_fsync {
            return Ok(());
        }
        fsync_dir(dir) // the rename itself is durable
    })();
    drop(guard);
    result
}

/// Removes the temp file of an atomic write that did not reach its rename.
struct TempGuard<'a> {
    path: &'a Path,
    armed: bool,
}

impl Drop for TempGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = simfs::remove_file(self.path);
        }
    }
}

/// Append one line (ending in `\n`) to the journal at `path`, durably: a
/// single `write_all` on an O_APPEND descriptor (a concurrent reader sees
/// whole lines), `sync_data` before returning, and the directory synced when
/// this append created the file (a new name is durable only then). A kill
/// mid-append leaves a torn last line with no newline: this line then starts
/// on a new one, or it would be glued to the torn one and lost with it. The
/// outbox, the task-writes journal and the ledger journal append through
/// here. A failed directory fsync says which directory.
pub fn append_line(path: &Path, mut line: Vec<u8>) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let existed = path.exists();
    let mut f = simfs::File::open(path, simfs::Open::Append { read: true })?;
    let len = f.get_mut().metadata()?.len();
    if len > 0 {
        let mut last = [0u8; 1];
        f.get_mut().seek(SeekFrom::Start(len - 1))?;
        f.get_mut().read_exact(&mut last)?;
        if last[0] != b'\n' {
            line.insert(0, b'\n');
        }
    }
    f.write_all(&line)?;
    f.sync_data()?;
    if !existed {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        fsync_dir(dir).map_err(|e| {
            std::io::Error::new(e.kind(), format!("fsync of {}: {e}", dir.display()))
        })?;
    }
    Ok(())
}

/// `create_dir_all`, then fsync every directory from `dir`'s parent up to
/// `root` (inclusive), so the names of `dir` and of every directory between
/// it and `root` are durable. Not only the ones this call created: a
/// directory created by an earlier attempt whose fsync failed (EIO) exists
/// but its name may not be durable (both found by bench chaos, power-loss
/// mode, on migration steps). `root` itself is assumed durable (it existed
/// before the run). Fsyncing a clean directory is cheap.
pub fn create_dir_all_synced(dir: &Path, root: &Path) -> std::io::Result<()> {
    simfs::create_dir_all(dir)?;
    if !dir.starts_with(root) || dir == root {
        return Ok(());
    }
    for a in dir.ancestors().skip(1) {
        fsync_dir(a)?;
        if a == root || !a.starts_with(root) {
            break;
        }
    }
    Ok(())
}

/// `create_dir_all` for a directory that must survive a power cut from the
/// moment it exists (the state dir: the ledger journal and the checkpoints
/// live in it, and a state dir whose own name was lost would let a resumed
/// run start over with an empty ledger). Every directory this call creates
/// has its name fsynced in its parent; a directory that already existed is
/// taken as durable. Plain `std::fs`, not `simfs`: it runs before the run
/// opens, outside what the power-cut model replays (which takes the state
/// dir as given).
pub fn create_dir_all_durable(dir: &Path) -> std::io::Result<()> {
    let missing: Vec<&Path> = dir.ancestors().take_while(|a| !a.exists()).collect();
    std::fs::create_dir_all(dir)?;
    // Outermost first: a parent's entry is durable before its child's is.
    for made in missing.iter().rev() {
        let parent = match made.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        std::fs::File::open(parent)?.sync_all().map_err(|e| {
            std::io::Error::new(e.kind(), format!("fsync of {}: {e}", parent.display()))
        })?;
    }
    Ok(())
}

pub fn fsync_dir(dir: &Path) -> std::io::Result<()> {
    simfs::fsync_dir(dir)
}

/// What the `in-place-checkpoint` broken variant does instead of
/// [`atomic_write`] (chaos self-test only; its caller, `checkpoint::save`,
/// chooses it): truncate the real file and rewrite it. The write goes out
/// in two halves with the temp-written phase between them, as a large
/// write_all can be split by the kernel; a kill or power cut in between
/// leaves a torn checkpoint.
#[cfg(feature = "chaos-broken")]
pub fn write_in_place(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut f = simfs::File::open(path, simfs::Open::Truncate)?;
    let half = bytes.len() / 2;
    f.write_all(&bytes[..half])?;
    point(Phase::TempWritten);
    f.write_all(&bytes[half..])?;
    f.sync_all()?;
    drop(f);
    point(Phase::AfterFsyncFile);
    point(Phase::AfterRenameBeforeFsyncDir);
    fsync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn replaces_whole_file_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("checkpoint.json");
        atomic_write(&p, b"old").unwrap();
        atomic_write(&p, b"new contents").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new contents");
        let names: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn durable_dir_creates_every_missing_level_and_accepts_an_existing_one() {
        let d = tempfile::tempdir().unwrap();
        let deep = d.path().join("a/b/state");
        create_dir_all_durable(&deep).unwrap();
        assert!(deep.is_dir());
        create_dir_all_durable(&deep).unwrap();
        // A file in the way is an error, never a silent success.
        let blocked = d.path().join("file");
        std::fs::write(&blocked, b"x").unwrap();
        assert!(create_dir_all_durable(&blocked.join("state")).is_err());
    }
}
