//! The first layer: the filesystem a confined process sees, built from
//! nothing but explicit binds in a mount namespace of its own, the way
//! bubblewrap builds one. Nothing is visible unless it is listed here: the
//! workspace and the check's temp dir (its TMPDIR) read-write; the policy's reads
//! (programs, libraries, the PATH tools and what they need, a few files of
//! `/etc`, the check's script dir) read-only; a `/dev` of harmless nodes; a
//! `/proc` of its own PID namespace. No `/home`, `/root`, `/run`, `/var`,
//! state dir or spec. Every bind is `nosuid`, and all but the device nodes
//! `nodev`; the root itself is a small tmpfs, read-only once built.
//!
//! Everything that needs memory (each path, as the child will name it) is
//! prepared here by the parent; the child (`spawn.rs`) walks the list of
//! [`RawOp`]s with one syscall each. The sequence is bubblewrap's: a tmpfs
//! on a base dir, `pivot_root` into it with the old root kept at
//! `/oldroot`, the binds from `/oldroot/<path>` to `/newroot/<path>`, the
//! old root detached, `pivot_root` into `/newroot`.

use super::Policy;
use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Where the child mounts the tmpfs it builds the view in, before the
/// first `pivot_root` (any existing directory: the mount is private).
pub(super) const BASE: &std::ffi::CStr = c"/tmp";
/// The view's root tmpfs: it holds only mount points and empty files.
pub(super) const ROOT_TMPFS_OPTIONS: &std::ffi::CStr = c"mode=0755,size=1m,nr_inodes=4096";

/// Device nodes in the view's `/dev` (each bound from the host's).
pub const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// `/dev` links every shell expects (bash's `<(..)` uses `/dev/fd`).
const DEV_LINKS: [(&str, &str); 4] = [
    ("/dev/fd", "/proc/self/fd"),
    ("/dev/stdin", "/proc/self/fd/0"),
    ("/dev/stdout", "/proc/self/fd/1"),
    ("/dev/stderr", "/proc/self/fd/2"),
];

/// What one step of the child's walk does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub(super) enum OpKind {
    /// `mkdir(target)` (EEXIST is fine).
    Dir = 1,
    /// An empty file to bind a file onto.
    File = 2,
    /// `mount(source, target, MS_BIND|MS_REC)`, then a remount with `flags`.
    Bind = 3,
    /// `symlink(source, target)`: `source` is the link's text.
    Symlink = 4,
    /// A fresh procfs (of the child's PID namespace) on `target`.
    Proc = 5,
}

/// One step, as the child reads it.
#[repr(C)]
pub(super) struct RawOp {
    pub kind: OpKind,
    pub target: *const libc::c_char,
    pub source: *const libc::c_char,
    pub flags: libc::c_ulong,
}

/// The whole walk, with the memory it points into.
pub(super) struct View {
    _strings: Vec<CString>,
    ops: Vec<RawOp>,
}

impl View {
    pub fn ops(&self) -> &[RawOp] {
        &self.ops
    }
}

/// How a path is shown.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Show {
    /// A bind of the host path (canonical) with these remount flags;
    /// `dir`: whether the source is a directory (else a file is bound).
    Bind {
        source: PathBuf,
        flags: u64,
        dir: bool,
    },
    /// A symlink with this text.
    Link(PathBuf),
    /// A fresh procfs.
    Proc,
    /// An empty directory of the root.
    Dir,
}

const RO: u64 = (libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV) as u64;
const RW: u64 = (libc::MS_NOSUID | libc::MS_NODEV) as u64;
const DEV: u64 = libc::MS_NOSUID as u64;

/// The view of `policy`: what the child mounts, in order.
pub(super) fn build(policy: &Policy) -> std::io::Result<View> {
    let mut shown: Vec<(PathBuf, Show)> = Vec::new();
    for p in &policy.read {
        shown.push(cached_read_entry(p));
    }
    for p in &policy.write {
        shown.push((canonical(p), bind(p, RW)));
    }
    shown.extend(devices().iter().cloned());
    for (link, text) in DEV_LINKS {
        shown.push((link.into(), Show::Link(text.into())));
    }
    shown.push(("/proc".into(), Show::Proc));
    // `/tmp` is an empty directory of the read-only root: nothing shared
    // with the host or another check; the check's own temp dir is its
    // TMPDIR (bound read-write above, as the policy's writes).
    shown.push(("/tmp".into(), Show::Dir));
    let mut b = Builder::default();
    for (target, show) in ordered(shown) {
        b.add(&target, &show)?;
    }
    Ok(View {
        _strings: b.strings,
        ops: b.ops,
    })
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

fn bind(p: &Path, flags: u64) -> Show {
    let source = canonical(p);
    Show::Bind {
        dir: source.is_dir(),
        source,
        flags,
    }
}

/// The [`DEVICES`] this host has, each as it is shown: looked at once per
/// process (they are the same for every check).
fn devices() -> &'static [(PathBuf, Show)] {
    static DEVS: std::sync::OnceLock<Vec<(PathBuf, Show)>> = std::sync::OnceLock::new();
    DEVS.get_or_init(|| {
        DEVICES
            .iter()
            .map(Path::new)
            .filter(|d| d.exists())
            .map(|d| (d.to_path_buf(), bind(d, DEV)))
            .collect()
    })
}

/// Read entries whose showing [`cached_read_entry`] keeps per process (the
/// system reads and the spec's script dirs: a few dozen in a run, a few
/// hundred in a bench process); past it, entries are worked out per check.
pub const READ_ENTRIES_CACHED_MAX: usize = 1024;

/// [`read_entry`], worked out once per process and path, not per check:
/// the `readlink` of every component (canonicalizing) and the `statx`
/// calls of a few dozen read paths were most of the syscalls a check's
/// parent made before its child started (issue 51). A link changed while
/// the process runs (a package upgrade) is seen by the next process.
fn cached_read_entry(p: &Path) -> (PathBuf, Show) {
    type Cache = std::sync::Mutex<std::collections::HashMap<PathBuf, (PathBuf, Show)>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hit) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(p) {
        return hit.clone();
    }
    let entry = read_entry(p);
    let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
    if c.len() < READ_ENTRIES_CACHED_MAX {
        c.insert(p.to_path_buf(), entry.clone());
    }
    entry
}

/// A read entry: a top-level symlink (`/bin` -> `usr/bin` on a merged
/// `/usr`) stays a symlink, so both names work; anything else is bound at
/// the path the policy names, from its canonical host path (an `/etc` file
/// that links into `/run` is shown as the file).
fn read_entry(p: &Path) -> (PathBuf, Show) {
    let top_level = p.parent() == Some(Path::new("/"));
    if top_level {
        if let Ok(text) = std::fs::read_link(p) {
            return (p.to_path_buf(), Show::Link(text));
        }
    }
    (p.to_path_buf(), bind(p, RO))
}

/// Parents before children; of two entries for one path, the first kept
/// (writes come after reads in `build`, so a read-write bind of a path the
/// reads also name replaces it); a read-only bind under another read-only
/// bind of the same tree is dropped (it is already there). Each entry
/// looks up its own ancestors, not every entry kept before it: the
/// quadratic scan was a few percent of a case-run's CPU (issue 51).
fn ordered(mut shown: Vec<(PathBuf, Show)>) -> Vec<(PathBuf, Show)> {
    shown.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out: Vec<(PathBuf, Show)> = Vec::new();
    // Where each kept target is in `out`.
    let mut kept: HashMap<PathBuf, usize> = HashMap::new();
    for (target, show) in shown {
        if let Some(&i) = kept.get(&target) {
            if matches!(show, Show::Bind { flags: RW, .. }) {
                out[i].1 = show;
            }
            continue;
        }
        let ro_of_itself =
            |t: &Path, s: &Show| matches!(s, Show::Bind { flags: RO, source, .. } if source == t);
        let covered = ro_of_itself(&target, &show)
            && target
                .ancestors()
                .any(|a| kept.get(a).is_some_and(|&i| ro_of_itself(a, &out[i].1)));
        if !covered {
            kept.insert(target.clone(), out.len());
            out.push((target, show));
        }
    }
    out
}

#[derive(Default)]
struct Builder {
    strings: Vec<CString>,
    ops: Vec<RawOp>,
    /// Directories made on the root tmpfs so far.
    made: HashSet<PathBuf>,
    /// Targets bound so far (what lies under one exists already).
    bound: HashSet<PathBuf>,
}

impl Builder {
    fn c(&mut self, prefix: &str, p: &Path) -> std::io::Result<*const libc::c_char> {
        let bytes = [prefix.as_bytes(), p.as_os_str().as_bytes()].concat();
        let s = CString::new(bytes)
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a NUL byte"))?;
        let ptr = s.as_ptr(); // the heap buffer does not move with the CString
        self.strings.push(s);
        Ok(ptr)
    }

    fn op(
        &mut self,
        kind: OpKind,
        target: &Path,
        source: Option<(&str, &Path)>,
        flags: u64,
    ) -> std::io::Result<()> {
        let target = self.c("/newroot", target)?;
        let source = match source {
            Some((prefix, p)) => self.c(prefix, p)?,
            None => std::ptr::null(),
        };
        self.ops.push(RawOp {
            kind,
            target,
            source,
            flags: flags as libc::c_ulong,
        });
        Ok(())
    }

    /// Make `dir` and its parents on the root tmpfs, unless they lie
    /// under a bind (there they exist already).
    fn dirs(&mut self, dir: &Path) -> std::io::Result<()> {
        let mut at = PathBuf::from("/");
        for c in dir
            .components()
            .filter(|c| matches!(c, Component::Normal(_)))
        {
            at.push(c);
            if self.made.contains(&at) || self.under_bind(&at) {
                continue;
            }
            self.op(OpKind::Dir, &at.clone(), None, 0)?;
            self.made.insert(at.clone());
        }
        Ok(())
    }

    /// Whether `p` is a bound target or lies under one.
    fn under_bind(&self, p: &Path) -> bool {
        p.ancestors().any(|a| self.bound.contains(a))
    }

    fn add(&mut self, target: &Path, show: &Show) -> std::io::Result<()> {
        let under_bind = self.under_bind(target);
        if let Some(parent) = target.parent() {
            self.dirs(parent)?;
        }
        match show {
            Show::Link(text) => self.op(OpKind::Symlink, target, Some(("", text)), 0),
            Show::Proc => {
                self.dirs(target)?;
                self.op(OpKind::Proc, target, None, 0)
            }
            Show::Dir => self.dirs(target),
            Show::Bind { source, flags, dir } => {
                if !under_bind {
                    if *dir {
                        self.dirs(target)?;
                    } else {
                        self.op(OpKind::File, target, None, 0)?;
                    }
                }
                self.op(OpKind::Bind, target, Some(("/oldroot", source)), *flags)?;
                self.bound.insert(target.to_path_buf());
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds_and_targets(v: &View) -> Vec<(OpKind, String)> {
        v.ops()
            .iter()
            .map(|o| {
                // SAFETY: every target is a CString the View holds.
                let t = unsafe { std::ffi::CStr::from_ptr(o.target) };
                (o.kind, t.to_string_lossy().into_owned())
            })
            .collect()
    }

    /// Parents are made before their children, the workspace is bound
    /// read-write, a nested read-only bind of the same tree is not repeated,
    /// and nothing outside the policy appears.
    #[test]
    fn the_view_binds_only_the_policy() {
        let ws = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let policy = Policy {
            write: vec![ws.path().to_path_buf()],
            read: vec!["/usr".into(), "/usr/bin".into()],
            tmp: tmp.path().to_path_buf(),
            network: false,
            limits: super::super::DEFAULT_LIMITS,
        };
        let v = build(&policy).unwrap();
        let ops = kinds_and_targets(&v);
        let binds: Vec<&str> = ops
            .iter()
            .filter(|(k, _)| *k == OpKind::Bind)
            .map(|(_, t)| t.as_str())
            .collect();
        let ws_target = format!("/newroot{}", ws.path().canonicalize().unwrap().display());
        assert!(binds.contains(&"/newroot/usr"), "{binds:?}");
        assert!(!binds.contains(&"/newroot/usr/bin"), "{binds:?}");
        assert!(binds.contains(&ws_target.as_str()), "{binds:?}");
        assert!(!binds
            .iter()
            .any(|b| b.starts_with("/newroot/etc") || b.starts_with("/newroot/home")));
        for (i, (_, t)) in ops.iter().enumerate() {
            let parent = Path::new(t).parent().unwrap();
            if parent != Path::new("/newroot") {
                let made_before = ops[..i].iter().any(|(_, p)| Path::new(p) == parent)
                    || ops[..i]
                        .iter()
                        .any(|(k, p)| *k == OpKind::Bind && Path::new(t).starts_with(p));
                assert!(made_before, "{t} before its parent: {ops:?}");
            }
        }
    }
}
