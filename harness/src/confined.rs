//! File operations inside the workspace that hold against links, special
//! files and swaps. [`Workspace::resolve`] decides which path a model-named
//! path means; this module makes sure the file system object it then touches
//! is that path's and nothing else:
//!
//! - every directory on the way is opened from the workspace root one
//!   component at a time with `O_NOFOLLOW` (`openat`), so a component that was
//!   swapped for a symlink after the check fails the call instead of leading
//!   outside (a check script can run model-written code in the background);
//! - files are opened `O_NONBLOCK | O_NOFOLLOW` and `fstat`ed on the open
//!   descriptor before a byte is read: a FIFO, socket or device is refused
//!   and can never block the run;
//! - writes go to a temp file in the same directory and are renamed over the
//!   target, never through the existing inode, so a hard link inside the
//!   workspace cannot carry a write to its twin outside; a target with more
//!   than one link is refused outright, as is anything but a regular file;
//! - every durable step goes through [`crate::simfs`] (logged for the chaos
//!   bench's power-cut model, faults injected there), with the durability of
//!   the atomic write: fsync the temp file, rename, fsync the directory, and
//!   fsync every directory from the target's up to the root.

use crate::workspace::{PathError, Workspace};
use nix::errno::Errno;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{fstat, fstatat, FileStat, Mode, SFlag};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Most entries `read_dir_bounded` looks at in one directory: a directory with
/// millions of entries is reported as "more than this", not walked to the end.
pub const DIR_SCAN_MAX_ENTRIES: usize = 100_000;
/// Prefix of the temp file a write goes through (short, so a long target
/// name cannot push it past NAME_MAX).
pub const WRITE_TEMP_PREFIX: &str = ".harness-write-";

/// Why a confined file operation did not happen. The Display text is a tool
/// observation: it tells the model what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileError {
    Path(PathError),
    NotFound {
        path: String,
    },
    IsDir {
        path: String,
    },
    NotADirectory {
        path: String,
    },
    /// A FIFO, socket, device (or a symlink where none may be).
    NotRegular {
        path: String,
        kind: &'static str,
    },
    /// More than one hard link: the other name may lie outside the workspace.
    HardLinked {
        path: String,
        links: u64,
    },
    /// A component changed between the path check and its use.
    Changed {
        path: String,
        detail: String,
    },
    Io {
        path: String,
        detail: String,
    },
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Path(e) => write!(f, "{e}"),
            FileError::NotFound { path } => write!(f, "{path:?} does not exist; use list_files to see what is there"),
            FileError::IsDir { path } => write!(f, "{path:?} is a directory"),
            FileError::NotADirectory { path } => write!(f, "{path:?} is a file, not a directory"),
            FileError::NotRegular { path, kind } => write!(f, "{path:?} is a {kind}, not a regular file; tools read and write regular files only"),
            FileError::HardLinked { path, links } => write!(f, "{path:?} has {links} hard links; writing it could change a file outside the workspace, so it is refused"),
            FileError::Changed { path, detail } => write!(f, "{path:?} changed while it was being used ({detail}); it was not touched"),
            FileError::Io { path, detail } => write!(f, "cannot access {path:?}: {detail}"),
        }
    }
}

impl std::error::Error for FileError {}

impl From<PathError> for FileError {
    fn from(e: PathError) -> Self {
        FileError::Path(e)
    }
}

/// A confined write that did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteFailure {
    pub error: FileError,
    /// Something on disk may have changed (a directory made, the temp file
    /// written, the target renamed): the call counts as a side effect.
    pub side_effect: bool,
    /// The target may now hold the new bytes (the rename happened, a later
    /// fsync failed), at this workspace-relative path.
    pub replaced: Option<String>,
}

impl fmt::Display for WriteFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

/// A regular file opened for reading inside the workspace.
pub struct ReadFile {
    pub file: std::fs::File,
    /// Its length at open (from fstat on the descriptor).
    pub len: u64,
}

/// An open directory and the path it had when opened.
struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

fn kind_of(st: &FileStat) -> &'static str {
    match SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) {
        SFlag::S_IFIFO => "named pipe (FIFO)",
        SFlag::S_IFSOCK => "socket",
        SFlag::S_IFCHR => "character device",
        SFlag::S_IFBLK => "block device",
        SFlag::S_IFLNK => "symlink",
        SFlag::S_IFDIR => "directory",
        SFlag::S_IFREG => "regular file",
        _ => "special file",
    }
}

fn is(st: &FileStat, t: SFlag) -> bool {
    SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) == t
}

fn io_err(path: &str, e: impl fmt::Display) -> FileError {
    FileError::Io {
        path: path.to_string(),
        detail: e.to_string(),
    }
}

/// `abs` (a path `resolve` returned) as components below the root.
fn parts_below(ws: &Workspace, abs: &Path, shown: &str) -> Result<Vec<OsString>, FileError> {
    let rel = abs
        .strip_prefix(ws.root())
        .map_err(|_| FileError::Changed {
            path: shown.to_string(),
            detail: "it no longer resolves inside the workspace".into(),
        })?;
    let mut out = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(s) => out.push(s.to_os_string()),
            Component::CurDir => {}
            // resolve never returns these below the root; refuse rather than guess.
            _ => {
                return Err(FileError::Changed {
                    path: shown.to_string(),
                    detail: "an unexpected path component".into(),
                })
            }
        }
    }
    Ok(out)
}

/// The workspace-relative spelling of a resolved path (`/`-separated): what
/// the commit of a task names.
pub fn rel_string(ws: &Workspace, abs: &Path) -> Option<String> {
    let rel = abs.strip_prefix(ws.root()).ok()?;
    let parts: Vec<String> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("/"))
}

fn open_root(ws: &Workspace, shown: &str) -> Result<Dir, FileError> {
    let fd = nix::fcntl::open(
        ws.root(),
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io_err(shown, e))?;
    Ok(Dir {
        fd,
        path: ws.root().to_path_buf(),
    })
}

/// Open `name` in `dir` as a directory without following a symlink.
fn open_child_dir(dir: &Dir, name: &OsStr) -> Result<OwnedFd, Errno> {
    openat(
        dir.fd.as_fd(),
        name,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}

/// Walk `parts` from the root as directories. With `create`, a missing one is
/// made (`mkdirat`, logged). Returns every directory on the way, root first.
fn walk(
    ws: &Workspace,
    parts: &[OsString],
    create: bool,
    shown: &str,
) -> Result<(Vec<Dir>, bool), FileError> {
    let mut chain = vec![open_root(ws, shown)?];
    let mut made = false;
    for name in parts {
        let cur = chain.last().expect("the chain starts with the root");
        let next_path = cur.path.join(name);
        let fd = match open_child_dir(cur, name) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) if create => {
                match crate::simfs::mkdir_at(cur.fd.as_fd(), &cur.path, name) {
                    Ok(()) => made = true,
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(io_err(shown, e)),
                }
                open_child_dir(cur, name)
                    .map_err(|e| walk_error(cur, name, e, shown, &next_path))?
            }
            Err(e) => return Err(walk_error(cur, name, e, shown, &next_path)),
        };
        chain.push(Dir {
            fd,
            path: next_path,
        });
    }
    Ok((chain, made))
}

fn walk_error(dir: &Dir, name: &OsStr, e: Errno, shown: &str, at: &Path) -> FileError {
    // Some kernels answer O_DIRECTORY|O_NOFOLLOW on a symlink with ENOTDIR.
    let now_symlink = || {
        fstatat(
            dir.fd.as_fd(),
            name,
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .is_ok_and(|st| is(&st, SFlag::S_IFLNK))
    };
    let e = if e == Errno::ENOTDIR && now_symlink() {
        Errno::ELOOP
    } else {
        e
    };
    match e {
        Errno::ENOENT => FileError::NotFound {
            path: shown.to_string(),
        },
        // O_NOFOLLOW on a symlink: it was a directory when resolve looked.
        Errno::ELOOP => FileError::Changed {
            path: shown.to_string(),
            detail: format!("{} is now a symlink", at.display()),
        },
        Errno::ENOTDIR => FileError::NotADirectory {
            path: shown.to_string(),
        },
        e => io_err(shown, e),
    }
}

fn split_last(parts: &[OsString], shown: &str) -> Result<(Vec<OsString>, OsString), FileError> {
    match parts.split_last() {
        Some((last, dirs)) => Ok((dirs.to_vec(), last.clone())),
        None => Err(FileError::IsDir {
            path: shown.to_string(),
        }),
    }
}

/// Open a model-named file for reading: a regular file inside the workspace,
/// or an error. Never blocks on a FIFO or device.
pub fn open_read(ws: &Workspace, rel: &str) -> Result<ReadFile, FileError> {
    let abs = ws.resolve(rel)?;
    let parts = parts_below(ws, &abs, rel)?;
    let (dirs, name) = split_last(&parts, rel)?;
    let (chain, _) = walk(ws, &dirs, false, rel)?;
    let parent = chain.last().expect("the chain starts with the root");
    let fd = openat(
        parent.fd.as_fd(),
        name.as_os_str(),
        OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::ENOENT => FileError::NotFound {
            path: rel.to_string(),
        },
        Errno::ELOOP => FileError::Changed {
            path: rel.to_string(),
            detail: "it is now a symlink".into(),
        },
        // A socket (ENXIO) or another object open() will not open: say what it is.
        e => match fstatat(
            parent.fd.as_fd(),
            name.as_os_str(),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        ) {
            Ok(st) if !is(&st, SFlag::S_IFREG) && !is(&st, SFlag::S_IFDIR) => {
                FileError::NotRegular {
                    path: rel.to_string(),
                    kind: kind_of(&st),
                }
            }
            _ => io_err(rel, e),
        },
    })?;
    let st = fstat(&fd).map_err(|e| io_err(rel, e))?;
    if is(&st, SFlag::S_IFDIR) {
        return Err(FileError::IsDir {
            path: rel.to_string(),
        });
    }
    if !is(&st, SFlag::S_IFREG) {
        return Err(FileError::NotRegular {
            path: rel.to_string(),
            kind: kind_of(&st),
        });
    }
    // O_NONBLOCK has no effect on a regular file; it is left set.
    Ok(ReadFile {
        file: std::fs::File::from(fd),
        len: st.st_size.max(0) as u64,
    })
}

/// One entry of a listed directory.
pub struct DirEntry {
    pub name: String,
    pub is_dir: bool,
    /// The entry itself is a symlink (`is_dir` may still be true: one that
    /// resolves to a directory inside the workspace). A walk that must not
    /// follow links (search) skips these.
    pub is_symlink: bool,
    /// The entry is a regular file (not a symlink, FIFO, socket or device).
    pub is_file: bool,
}

/// A listed directory: up to [`DIR_SCAN_MAX_ENTRIES`] entries (`.` and `..`
/// left out) and whether there were more.
pub struct Listing {
    pub entries: Vec<DirEntry>,
    pub truncated: bool,
}

/// List a model-named directory inside the workspace, through the same
/// no-symlink walk (a symlink swapped in after the check is refused). A
/// symlink entry counts as a directory when it resolves to one inside the
/// workspace (it can then be listed); one that leads outside is shown as a
/// plain name.
pub fn list_dir(ws: &Workspace, rel: &str) -> Result<Listing, FileError> {
    let abs = ws.resolve(rel)?;
    let parts = parts_below(ws, &abs, rel)?;
    if !parts.is_empty() {
        // A file where a directory was asked for is its own answer.
        let (dirs, name) = split_last(&parts, rel)?;
        let (chain, _) = walk(ws, &dirs, false, rel)?;
        let parent = chain.last().expect("the chain starts with the root");
        if let Ok(st) = fstatat(
            parent.fd.as_fd(),
            name.as_os_str(),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        ) {
            if !is(&st, SFlag::S_IFDIR) {
                return Err(FileError::NotADirectory {
                    path: rel.to_string(),
                });
            }
        }
    }
    let (mut chain, _) = walk(ws, &parts, false, rel)?;
    let leaf = chain.pop().expect("the chain starts with the root");
    let leaf_path = leaf.path.clone();
    let mut d = nix::dir::Dir::from_fd(leaf.fd).map_err(|e| io_err(rel, e))?;
    let mut entries = Vec::new();
    let mut truncated = false;
    for e in d.iter() {
        let Ok(e) = e else { continue };
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "." || name == ".." {
            continue;
        }
        if entries.len() >= DIR_SCAN_MAX_ENTRIES {
            truncated = true;
            break;
        }
        let ty = match e.file_type() {
            Some(t) => Some(t),
            None => std::fs::symlink_metadata(leaf_path.join(&name))
                .ok()
                .map(|m| {
                    let ft = m.file_type();
                    if ft.is_symlink() {
                        nix::dir::Type::Symlink
                    } else if ft.is_dir() {
                        nix::dir::Type::Directory
                    } else if ft.is_file() {
                        nix::dir::Type::File
                    } else {
                        nix::dir::Type::Fifo // some special file: neither
                    }
                }),
        };
        let is_symlink = ty == Some(nix::dir::Type::Symlink);
        let is_dir = match ty {
            Some(nix::dir::Type::Directory) => true,
            Some(nix::dir::Type::Symlink) => symlink_is_inner_dir(ws, &leaf_path.join(&name)),
            _ => false,
        };
        let is_file = ty == Some(nix::dir::Type::File);
        entries.push(DirEntry {
            name,
            is_dir,
            is_symlink,
            is_file,
        });
    }
    Ok(Listing { entries, truncated })
}

fn symlink_is_inner_dir(ws: &Workspace, p: &Path) -> bool {
    match std::fs::canonicalize(p) {
        Ok(t) => t.starts_with(ws.root()) && t.is_dir(),
        Err(_) => false,
    }
}

/// Write `bytes` as the whole content of a model-named file: parents made,
/// temp file in the same directory, fsync, rename over the target, fsync the
/// directory (and every directory up to the root). Returns the target's
/// workspace-relative path. Refuses a target that is a directory, not a
/// regular file, or has more than one hard link. The target's permission
/// bits are kept.
pub fn write(ws: &Workspace, rel: &str, bytes: &[u8]) -> Result<String, WriteFailure> {
    let refused = |error: FileError| WriteFailure {
        error,
        side_effect: false,
        replaced: None,
    };
    let abs = ws.resolve(rel).map_err(|e| refused(e.into()))?;
    let parts = parts_below(ws, &abs, rel).map_err(refused)?;
    let (dirs, name) = split_last(&parts, rel).map_err(refused)?;
    let canonical = rel_string(ws, &abs).ok_or_else(|| {
        refused(FileError::IsDir {
            path: rel.to_string(),
        })
    })?;
    let (chain, made) = walk(ws, &dirs, true, rel).map_err(|error| WriteFailure {
        side_effect: true, // directories may have been made before the failure
        error,
        replaced: None,
    })?;
    let touched = |error: FileError| WriteFailure {
        error,
        side_effect: true,
        replaced: None,
    };
    let leaf = chain.last().expect("the chain starts with the root");
    // The target as it is now, not as resolve saw it.
    let mode = match fstatat(
        leaf.fd.as_fd(),
        name.as_os_str(),
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    ) {
        Ok(st) => {
            let bad = unwritable(&st, rel);
            if let Some(e) = bad {
                return Err(if made { touched(e) } else { refused(e) });
            }
            Some(st.st_mode & 0o777)
        }
        Err(Errno::ENOENT) => None,
        Err(e) => return Err(touched(io_err(rel, e))),
    };
    if mode.is_some() && crate::mutants::active(crate::mutants::Mutant::WriteInPlace) {
        // The bug: open the existing inode (a hard link's target) and truncate.
        std::fs::write(&abs, bytes).map_err(|e| touched(io_err(rel, e)))?;
        return Ok(canonical);
    }
    // Names of the directories on the way are durable before the file is.
    if chain.len() > 1 {
        for d in chain[..chain.len() - 1].iter().rev() {
            crate::simfs::fsync_dir_fd(d.fd.as_fd(), &d.path)
                .map_err(|e| touched(io_err(rel, e)))?;
        }
    }
    let tmp = write_temp_name();
    let written = write_temp(leaf, &tmp, mode, bytes);
    if let Err(e) = written {
        let _ = crate::simfs::unlink_at(leaf.fd.as_fd(), &leaf.path, &tmp);
        return Err(touched(io_err(rel, e)));
    }
    if let Err(e) = crate::simfs::rename_at(leaf.fd.as_fd(), &leaf.path, &tmp, &name) {
        let _ = crate::simfs::unlink_at(leaf.fd.as_fd(), &leaf.path, &tmp);
        return Err(touched(io_err(rel, e)));
    }
    // The rename is only durable once the directory is synced.
    crate::simfs::fsync_dir_fd(leaf.fd.as_fd(), &leaf.path).map_err(|e| WriteFailure {
        error: io_err(rel, e),
        side_effect: true,
        replaced: Some(canonical.clone()),
    })?;
    Ok(canonical)
}

/// Why the target as it is now cannot be replaced, if it cannot: the model
/// names a file, and a directory, a symlink swapped in since resolve, a
/// special file or a hard-linked inode (its other names would change too)
/// is not one.
fn unwritable(st: &FileStat, rel: &str) -> Option<FileError> {
    if is(st, SFlag::S_IFDIR) {
        Some(FileError::IsDir {
            path: rel.to_string(),
        })
    } else if is(st, SFlag::S_IFLNK) {
        Some(FileError::Changed {
            path: rel.to_string(),
            detail: "it is now a symlink".into(),
        })
    } else if !is(st, SFlag::S_IFREG) {
        Some(FileError::NotRegular {
            path: rel.to_string(),
            kind: kind_of(st),
        })
    } else if st.st_nlink > 1 && !crate::mutants::active(crate::mutants::Mutant::WriteInPlace) {
        Some(FileError::HardLinked {
            path: rel.to_string(),
            links: st.st_nlink as u64,
        })
    } else {
        None
    }
}

/// A temp name no other write in this process or another can hold at once
/// (pid and a counter), with the prefix the sweep of a killed run knows.
fn write_temp_name() -> OsString {
    static N: AtomicU64 = AtomicU64::new(0);
    OsString::from(format!(
        "{WRITE_TEMP_PREFIX}{}-{}.tmp",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

/// The new content, whole and synced, under the temp name beside the
/// target, with the target's permission bits: only then is it renamed over.
fn write_temp(leaf: &Dir, tmp: &OsStr, mode: Option<u32>, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = crate::simfs::File::create_new_at(leaf.fd.as_fd(), &leaf.path, tmp)?;
    if let Some(m) = mode {
        use std::os::unix::fs::PermissionsExt;
        f.get_mut()
            .set_permissions(std::fs::Permissions::from_mode(m))?;
    }
    f.write_all(bytes)?;
    f.get_mut().flush()?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};

    fn ws() -> (tempfile::TempDir, Workspace) {
        let d = tempfile::tempdir().unwrap();
        let w = Workspace::open(d.path()).unwrap();
        (d, w)
    }

    fn mkfifo(p: &Path) {
        nix::unistd::mkfifo(p, Mode::from_bits_truncate(0o644)).unwrap();
    }

    #[test]
    fn write_replaces_the_inode_and_keeps_the_mode() {
        let (_d, w) = ws();
        assert_eq!(write(&w, "a/b/c.txt", b"one").unwrap(), "a/b/c.txt");
        let p = w.root().join("a/b/c.txt");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o751)).unwrap();
        let ino = std::fs::metadata(&p).unwrap().ino();
        assert_eq!(write(&w, "./a/b/c.txt", b"two").unwrap(), "a/b/c.txt");
        let m = std::fs::metadata(&p).unwrap();
        assert_ne!(m.ino(), ino, "a new inode, never the old one rewritten");
        assert_eq!(m.permissions().mode() & 0o777, 0o751);
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let left: Vec<_> = std::fs::read_dir(w.root().join("a/b"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![OsString::from("c.txt")], "no temp file left");
    }

    #[test]
    fn a_hard_link_to_outside_is_never_written_through() {
        let outside = tempfile::tempdir().unwrap();
        let (_d, w) = ws();
        let target = outside.path().join("secret.txt");
        std::fs::write(&target, "outside\n").unwrap();
        std::fs::hard_link(&target, w.root().join("notes.txt")).unwrap();
        let e = write(&w, "notes.txt", b"overwritten").unwrap_err();
        assert!(
            matches!(e.error, FileError::HardLinked { links: 2, .. }),
            "{e}"
        );
        assert!(!e.side_effect);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "outside\n");
        assert_eq!(
            std::fs::read_to_string(w.root().join("notes.txt")).unwrap(),
            "outside\n"
        );
    }

    #[test]
    fn special_files_are_refused_without_blocking() {
        let (_d, w) = ws();
        mkfifo(&w.root().join("pipe"));
        let e = open_read(&w, "pipe").err().unwrap();
        assert!(
            matches!(
                e,
                FileError::NotRegular {
                    kind: "named pipe (FIFO)",
                    ..
                }
            ),
            "{e}"
        );
        let e = write(&w, "pipe", b"x").unwrap_err();
        assert!(matches!(e.error, FileError::NotRegular { .. }), "{e}");
        let sock = std::os::unix::net::UnixListener::bind(w.root().join("sock")).unwrap();
        assert!(matches!(
            open_read(&w, "sock").err().unwrap(),
            FileError::NotRegular { kind: "socket", .. }
        ));
        assert!(matches!(
            write(&w, "sock", b"x").unwrap_err().error,
            FileError::NotRegular { .. }
        ));
        drop(sock);
        // A device, reached through a symlink inside the workspace that
        // resolve cannot follow out: refused as an escape.
        symlink("/dev/zero", w.root().join("zero")).unwrap();
        assert!(matches!(
            open_read(&w, "zero").err().unwrap(),
            FileError::Path(PathError::SymlinkEscape { .. })
        ));
        // A device node in the workspace itself (mknod needs privilege: the
        // check runs where the test may make one).
        let dev = w.root().join("null");
        if nix::sys::stat::mknod(
            &dev,
            SFlag::S_IFCHR,
            Mode::from_bits_truncate(0o666),
            nix::sys::stat::makedev(1, 3),
        )
        .is_ok()
        {
            assert!(matches!(
                open_read(&w, "null").err().unwrap(),
                FileError::NotRegular {
                    kind: "character device",
                    ..
                }
            ));
            assert!(matches!(
                write(&w, "null", b"x").unwrap_err().error,
                FileError::NotRegular { .. }
            ));
        }
        assert!(matches!(
            open_read(&w, ".").err().unwrap(),
            FileError::IsDir { .. }
        ));
        std::fs::create_dir(w.root().join("d")).unwrap();
        assert!(matches!(
            write(&w, "d", b"x").unwrap_err().error,
            FileError::IsDir { .. }
        ));
    }

    #[test]
    fn a_directory_swapped_for_a_symlink_after_the_check_is_refused() {
        let outside = tempfile::tempdir().unwrap();
        let (_d, w) = ws();
        std::fs::create_dir(w.root().join("sub")).unwrap();
        std::fs::write(outside.path().join("f"), "outside\n").unwrap();
        // What resolve saw: a real directory. What is there at use: a symlink
        // to outside (a background process swapped it).
        let abs = w.resolve("sub/f").unwrap();
        let parts = parts_below(&w, &abs, "sub/f").unwrap();
        std::fs::remove_dir(w.root().join("sub")).unwrap();
        symlink(outside.path(), w.root().join("sub")).unwrap();
        let (dirs, _) = split_last(&parts, "sub/f").unwrap();
        let e = walk(&w, &dirs, true, "sub/f").err().unwrap();
        assert!(matches!(e, FileError::Changed { .. }), "{e}");
        // Through the public calls resolve now refuses it as an escape.
        assert!(matches!(
            write(&w, "sub/f", b"x").unwrap_err().error,
            FileError::Path(PathError::SymlinkEscape { .. })
        ));
        assert_eq!(
            std::fs::read_to_string(outside.path().join("f")).unwrap(),
            "outside\n"
        );
    }

    #[test]
    fn list_dir_bounds_and_marks_dirs() {
        let (_d, w) = ws();
        std::fs::create_dir_all(w.root().join("a/b")).unwrap();
        std::fs::write(w.root().join("a/f"), "").unwrap();
        symlink("b", w.root().join("a/lb")).unwrap();
        let l = list_dir(&w, "a").unwrap();
        let mut got: Vec<(String, bool)> =
            l.entries.into_iter().map(|e| (e.name, e.is_dir)).collect();
        got.sort();
        assert_eq!(
            got,
            vec![("b".into(), true), ("f".into(), false), ("lb".into(), true)]
        );
        assert!(!l.truncated);
        assert!(matches!(
            list_dir(&w, "a/f").err().unwrap(),
            FileError::NotADirectory { .. }
        ));
        assert!(matches!(
            list_dir(&w, "nope").err().unwrap(),
            FileError::NotFound { .. }
        ));
    }
}
