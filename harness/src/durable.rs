//! The one atomic write sequence everything durable goes through (checkpoint,
//! report): temp file in the SAME directory (a rename across filesystems is a
//! copy, not atomic) -> write -> fsync(fd) -> rename over the real name ->
//! fsync(dir) (without it the rename itself can be lost on power failure).
//! Any reader sees the whole old file or the whole new one, never a mixture.
//! Temp files are named `.<name>.tmp-<pid>-<n>` and are never read by anyone.

use crate::chaos_hook::{point, Phase};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Suffix marker that identifies a temp file; loaders ignore these.
pub const TEMP_MARKER: &str = ".tmp-";

pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "path has no file name"))?;
    let tmp = dir.join(format!(
        ".{}{}{}-{}",
        name.to_string_lossy(),
        TEMP_MARKER,
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        point(Phase::TempWritten);
        f.sync_all()?; // bytes on the device, not just in the page cache
        drop(f);
        point(Phase::AfterFsyncFile);
        std::fs::rename(&tmp, path)?; // the step that buys atomicity
        point(Phase::AfterRenameBeforeFsyncDir);
        fsync_dir(dir) // the rename itself is durable
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

pub fn fsync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
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
        let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }
}
