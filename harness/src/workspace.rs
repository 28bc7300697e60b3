//! Path confinement for everything the model touches. Every path the model
//! names goes through [`Workspace::resolve`] before any file is read or
//! written, so the model's reach ends at the workspace root: no absolute
//! paths, no `..`, no symlink that leads outside, and nothing under `.git`
//! (the model must not be able to rewrite the history the harness commits to).
//!
//! Resolution is checked against the file system at the time of the call. The
//! model acts only through the harness's tools, one call at a time, so nothing
//! it controls can swap a component between `resolve` and the use of the
//! returned path.

use sha2::{Digest, Sha256};
use std::fmt;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// Longest relative path the model may name. Real paths are far shorter; this
/// stops a pathological argument from being walked component by component.
pub const MAX_REL_PATH_BYTES: usize = 4096;
/// Most regular files the fingerprint hashes before it stops (and says so in
/// the hash). Keeps a runaway workspace from stalling a checkpoint.
pub const FINGERPRINT_MAX_FILES: usize = 10_000;
/// Most content bytes, summed over files, the fingerprint reads.
pub const FINGERPRINT_MAX_BYTES: u64 = 256 * 1024 * 1024;
/// Deepest directory nesting the fingerprint descends into.
pub const FINGERPRINT_MAX_DEPTH: usize = 64;

/// The directory name the model may never reach.
const GIT_DIR: &str = ".git";

/// Why a workspace could not be opened. This is an operator-facing error (the
/// spec named a bad directory), not a model observation.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("workspace root {path:?} cannot be opened: {detail}")]
    Unreadable { path: PathBuf, detail: String },
    #[error("workspace root {path:?} is not a directory")]
    NotADirectory { path: PathBuf },
}

/// Why a model-supplied path was refused. The Display text becomes a tool
/// observation, so it tells the model what was wrong and what to send instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathError {
    Empty,
    NulByte,
    TooLong { len: usize },
    Absolute { path: String },
    ParentDir { path: String },
    GitDir { path: String },
    SymlinkEscape { path: String, component: String },
    DanglingSymlink { path: String, component: String },
    NotADirectory { path: String, component: String },
    Io { path: String, detail: String },
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathError::Empty => write!(f, "the path is empty; give a path relative to the workspace root, e.g. \"src/main.rs\""),
            PathError::NulByte => write!(f, "the path contains a NUL byte; give a plain relative path, e.g. \"src/main.rs\""),
            PathError::TooLong { len } => {
                write!(f, "the path is {len} bytes long, over the {MAX_REL_PATH_BYTES}-byte limit; give a shorter relative path")
            }
            PathError::Absolute { path } => write!(
                f,
                "path {path:?} is absolute; only paths relative to the workspace root are allowed, e.g. \"src/main.rs\""
            ),
            PathError::ParentDir { path } => write!(
                f,
                "path {path:?} contains \"..\"; paths must stay inside the workspace, name them from the workspace root without \"..\""
            ),
            PathError::GitDir { path } => write!(
                f,
                "path {path:?} is inside .git; the repository's history is managed by the harness and cannot be read or written by tools"
            ),
            PathError::SymlinkEscape { path, component } => write!(
                f,
                "path {path:?} goes through symlink {component:?}, which leads outside the workspace; only paths inside the workspace are allowed"
            ),
            PathError::DanglingSymlink { path, component } => write!(
                f,
                "path {path:?} goes through symlink {component:?}, whose target does not exist; it cannot be followed safely"
            ),
            PathError::NotADirectory { path, component } => write!(
                f,
                "path {path:?} goes through {component:?}, which is a file, not a directory"
            ),
            PathError::Io { path, detail } => write!(f, "path {path:?} cannot be checked: {detail}"),
        }
    }
}

impl std::error::Error for PathError {}

/// The directory the model works in. The root is canonicalized once at open,
/// so every later containment check compares canonical paths.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

/// The components of a model-supplied relative path, refused before any
/// filesystem access when the text alone says it is empty, too long,
/// absolute, climbs with `..` or names `.git`.
fn lexical_parts(rel: &str) -> Result<Vec<&std::ffi::OsStr>, PathError> {
    if rel.is_empty() {
        return Err(PathError::Empty);
    }
    if rel.contains('\0') {
        return Err(PathError::NulByte);
    }
    if rel.len() > MAX_REL_PATH_BYTES {
        return Err(PathError::TooLong { len: rel.len() });
    }
    let p = Path::new(rel);
    if p.is_absolute() || rel.starts_with('/') || rel.starts_with('\\') {
        return Err(PathError::Absolute {
            path: rel.to_string(),
        });
    }
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => {
                if is_git_name(s) {
                    return Err(PathError::GitDir {
                        path: rel.to_string(),
                    });
                }
                parts.push(s);
            }
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(PathError::ParentDir {
                    path: rel.to_string(),
                })
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(PathError::Absolute {
                    path: rel.to_string(),
                })
            }
        }
    }
    Ok(parts)
}

impl Workspace {
    pub fn open(root: &Path) -> Result<Workspace, WorkspaceError> {
        let canon = std::fs::canonicalize(root).map_err(|e| WorkspaceError::Unreadable {
            path: root.to_path_buf(),
            detail: e.to_string(),
        })?;
        let meta = std::fs::metadata(&canon).map_err(|e| WorkspaceError::Unreadable {
            path: root.to_path_buf(),
            detail: e.to_string(),
        })?;
        if !meta.is_dir() {
            return Err(WorkspaceError::NotADirectory {
                path: root.to_path_buf(),
            });
        }
        Ok(Workspace { root: canon })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Turn a model-supplied relative path into an absolute path inside the
    /// workspace, or refuse it. Components that do not exist yet are allowed
    /// (write_file creates parents); every component that does exist is
    /// checked, and a symlink is followed only when its canonical target stays
    /// inside the root and outside `.git`. `"."` resolves to the root itself.
    pub fn resolve(&self, rel: &str) -> Result<PathBuf, PathError> {
        let parts = lexical_parts(rel)?;
        // Walk the existing prefix one component at a time. `cur` is always a
        // canonical path inside the root while the prefix exists.
        let mut cur = self.root.clone();
        let mut missing = false;
        let mut shown = PathBuf::new();
        let last = parts.len().saturating_sub(1);
        for (i, part) in parts.into_iter().enumerate() {
            shown.push(part);
            let next = cur.join(part);
            if missing {
                // Below a missing component nothing exists, so nothing can be a
                // symlink; the rest is appended as written.
                cur = next;
                continue;
            }
            match std::fs::symlink_metadata(&next) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    cur = self.follow_symlink(rel, &next, &shown, i < last)?;
                }
                Ok(meta) => {
                    if i < last && !meta.is_dir() {
                        let component = shown.to_string_lossy().into_owned();
                        return Err(PathError::NotADirectory {
                            path: rel.to_string(),
                            component,
                        });
                    }
                    cur = next;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    missing = true;
                    cur = next;
                }
                Err(e) => {
                    return Err(PathError::Io {
                        path: rel.to_string(),
                        detail: e.to_string(),
                    })
                }
            }
        }
        Ok(cur)
    }

    /// The canonical target of the symlink `next` (the component `shown` of
    /// `rel`), or the refusal: a link is followed only when it lands inside
    /// the root and outside `.git`, and (`not_last`) on a directory when more
    /// components follow.
    fn follow_symlink(
        &self,
        rel: &str,
        next: &Path,
        shown: &Path,
        not_last: bool,
    ) -> Result<PathBuf, PathError> {
        let component = shown.to_string_lossy().into_owned();
        let target = match std::fs::canonicalize(next) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // A dangling symlink would let a write create a file
                // wherever it points, possibly outside the root.
                return Err(PathError::DanglingSymlink {
                    path: rel.to_string(),
                    component,
                });
            }
            Err(e) => {
                return Err(PathError::Io {
                    path: rel.to_string(),
                    detail: e.to_string(),
                })
            }
        };
        let Ok(inside) = target.strip_prefix(&self.root) else {
            return Err(PathError::SymlinkEscape {
                path: rel.to_string(),
                component,
            });
        };
        // A symlink inside the workspace that points at .git would
        // otherwise be a back door into the history.
        if inside
            .components()
            .any(|c| matches!(c, Component::Normal(s) if is_git_name(s)))
        {
            return Err(PathError::GitDir {
                path: rel.to_string(),
            });
        }
        if not_last && !target.is_dir() {
            return Err(PathError::NotADirectory {
                path: rel.to_string(),
                component,
            });
        }
        Ok(target)
    }

    /// SHA-256 (hex) over every regular file in the workspace, by sorted
    /// relative path and contents, skipping `.git` and not following symlinks.
    /// The bench hashes a case's whole directory with it (its config hash).
    /// Bounded by
    /// [`FINGERPRINT_MAX_FILES`], [`FINGERPRINT_MAX_BYTES`] and
    /// [`FINGERPRINT_MAX_DEPTH`]; when a bound is hit the hash still comes out
    /// (deterministically, since directories are walked in sorted order) and
    /// includes a marker saying it was truncated.
    pub fn fingerprint(&self) -> String {
        let mut hasher = Sha256::new();
        hasher.update(b"harness-workspace-fingerprint-v1\0");
        let mut files = 0usize;
        let mut bytes_left = FINGERPRINT_MAX_BYTES;
        let mut truncated = false;
        // Depth-first with children pushed in reverse sorted order, so files
        // are visited in a deterministic order without holding the whole tree.
        let mut stack: Vec<(PathBuf, String, usize)> = vec![(self.root.clone(), String::new(), 0)];
        'walk: while let Some((dir, rel_dir, depth)) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&dir) else {
                hash_field(&mut hasher, b"unreadable-dir");
                hash_field(&mut hasher, rel_dir.as_bytes());
                continue;
            };
            let mut entries: Vec<(String, std::fs::FileType, PathBuf)> = Vec::new();
            for entry in rd {
                let Ok(entry) = entry else { continue };
                let Ok(ft) = entry.file_type() else { continue };
                let name = entry.file_name().to_string_lossy().into_owned();
                if is_git_name(std::ffi::OsStr::new(&name)) {
                    continue;
                }
                if entries.len() >= FINGERPRINT_MAX_FILES {
                    truncated = true;
                    break;
                }
                entries.push((name, ft, entry.path()));
            }
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let mut subdirs = Vec::new();
            for (name, ft, path) in entries {
                let rel = if rel_dir.is_empty() {
                    name
                } else {
                    format!("{rel_dir}/{name}")
                };
                if ft.is_dir() {
                    if depth + 1 > FINGERPRINT_MAX_DEPTH {
                        truncated = true;
                        continue;
                    }
                    subdirs.push((path, rel, depth + 1));
                } else if ft.is_file() {
                    if files >= FINGERPRINT_MAX_FILES || bytes_left == 0 {
                        truncated = true;
                        break 'walk;
                    }
                    files += 1;
                    hash_field(&mut hasher, b"file");
                    hash_field(&mut hasher, rel.as_bytes());
                    // Non-blocking and checked on the descriptor: an entry
                    // swapped for a FIFO since the listing cannot hang the hash.
                    use std::os::unix::fs::OpenOptionsExt;
                    let opened = std::fs::OpenOptions::new()
                        .read(true)
                        .custom_flags(
                            (nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_NOFOLLOW).bits(),
                        )
                        .open(&path)
                        .and_then(|f| {
                            if f.metadata()?.is_file() {
                                Ok(f)
                            } else {
                                Err(std::io::Error::other("not a regular file"))
                            }
                        });
                    match opened {
                        Ok(f) => {
                            let mut buf = Vec::new();
                            let mut limited = f.take(bytes_left);
                            match limited.read_to_end(&mut buf) {
                                Ok(n) => {
                                    bytes_left = bytes_left.saturating_sub(n as u64);
                                    hash_field(&mut hasher, &buf);
                                }
                                Err(_) => hash_field(&mut hasher, b"\0unreadable"),
                            }
                        }
                        Err(_) => hash_field(&mut hasher, b"\0unreadable"),
                    }
                }
                // Symlinks and special files are skipped: only regular files
                // carry the work, and following links could leave the root.
            }
            while let Some(d) = subdirs.pop() {
                stack.push(d);
            }
        }
        if truncated {
            hash_field(&mut hasher, b"truncated");
        }
        hex::encode(hasher.finalize())
    }
}

/// Length-prefixed, so ("ab","c") and ("a","bc") hash differently.
fn hash_field(h: &mut Sha256, data: &[u8]) {
    h.update((data.len() as u64).to_le_bytes());
    h.update(data);
}

/// `.git` compared case-insensitively: on a case-insensitive file system
/// `.GIT` names the same directory.
fn is_git_name(s: &std::ffi::OsStr) -> bool {
    s.to_str().is_some_and(|s| s.eq_ignore_ascii_case(GIT_DIR))
}

/// Copy a directory tree: a case's fixture (spec, workspace, checks) into a
/// fresh directory for one run. Files keep their permission bits (check
/// scripts stay executable) and symlinks stay symlinks (a fixture may test a
/// symlink escape). Used by the bench's suite runner and the chaos driver.
pub fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let ft = e.file_type()?;
        let dst = to.join(e.file_name());
        if ft.is_dir() {
            copy_tree(&e.path(), &dst)?;
        } else if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(e.path())?, &dst)?;
        } else {
            std::fs::copy(e.path(), &dst)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn ws() -> (tempfile::TempDir, Workspace) {
        let d = tempfile::tempdir().unwrap();
        let w = Workspace::open(d.path()).unwrap();
        (d, w)
    }

    #[test]
    fn open_refuses_missing_and_files() {
        let d = tempfile::tempdir().unwrap();
        assert!(Workspace::open(&d.path().join("nope")).is_err());
        std::fs::write(d.path().join("f"), "x").unwrap();
        assert!(matches!(
            Workspace::open(&d.path().join("f")),
            Err(WorkspaceError::NotADirectory { .. })
        ));
    }

    #[test]
    fn root_is_canonical() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("real")).unwrap();
        symlink(d.path().join("real"), d.path().join("link")).unwrap();
        let w = Workspace::open(&d.path().join("link")).unwrap();
        assert_eq!(
            w.root(),
            std::fs::canonicalize(d.path().join("real")).unwrap()
        );
    }

    #[test]
    fn resolves_plain_and_new_paths() {
        let (_d, w) = ws();
        std::fs::create_dir(w.root().join("src")).unwrap();
        assert_eq!(
            w.resolve("src/main.rs").unwrap(),
            w.root().join("src/main.rs")
        );
        assert_eq!(w.resolve("./src").unwrap(), w.root().join("src"));
        assert_eq!(w.resolve(".").unwrap(), w.root());
        // Missing parents are fine: write_file creates them.
        assert_eq!(w.resolve("a/b/c.txt").unwrap(), w.root().join("a/b/c.txt"));
    }

    #[test]
    fn refuses_bad_shapes() {
        let (_d, w) = ws();
        assert_eq!(w.resolve(""), Err(PathError::Empty));
        assert_eq!(w.resolve("a\0b"), Err(PathError::NulByte));
        assert!(matches!(
            w.resolve("/etc/passwd"),
            Err(PathError::Absolute { .. })
        ));
        assert!(matches!(
            w.resolve("../x"),
            Err(PathError::ParentDir { .. })
        ));
        assert!(matches!(
            w.resolve("a/../../x"),
            Err(PathError::ParentDir { .. })
        ));
        assert!(matches!(
            w.resolve("a/.."),
            Err(PathError::ParentDir { .. })
        ));
        assert!(matches!(
            w.resolve(&"a/".repeat(3000)),
            Err(PathError::TooLong { .. })
        ));
        std::fs::write(w.root().join("file"), "x").unwrap();
        assert!(matches!(
            w.resolve("file/x"),
            Err(PathError::NotADirectory { .. })
        ));
        assert!(w.resolve("file").is_ok());
    }

    #[test]
    fn refuses_git_dir() {
        let (_d, w) = ws();
        std::fs::create_dir(w.root().join(".git")).unwrap();
        assert!(matches!(w.resolve(".git"), Err(PathError::GitDir { .. })));
        assert!(matches!(
            w.resolve(".git/config"),
            Err(PathError::GitDir { .. })
        ));
        assert!(matches!(
            w.resolve("./.GIT/hooks/pre-commit"),
            Err(PathError::GitDir { .. })
        ));
        assert!(matches!(
            w.resolve("sub/.git/x"),
            Err(PathError::GitDir { .. })
        ));
        // .gitignore is an ordinary file.
        assert!(w.resolve(".gitignore").is_ok());
        // A symlink inside that points at .git is a back door.
        symlink(w.root().join(".git"), w.root().join("g")).unwrap();
        assert!(matches!(
            w.resolve("g/config"),
            Err(PathError::GitDir { .. })
        ));
    }

    #[test]
    fn symlinks_inside_ok_outside_refused() {
        let outside = tempfile::tempdir().unwrap();
        let (_d, w) = ws();
        std::fs::create_dir(w.root().join("real")).unwrap();
        symlink(w.root().join("real"), w.root().join("inlink")).unwrap();
        assert_eq!(
            w.resolve("inlink/f.txt").unwrap(),
            w.root().join("real/f.txt")
        );
        symlink("real", w.root().join("rel_inlink")).unwrap();
        assert_eq!(
            w.resolve("rel_inlink/f.txt").unwrap(),
            w.root().join("real/f.txt")
        );

        symlink(outside.path(), w.root().join("out")).unwrap();
        let e = w.resolve("out/f.txt").unwrap_err();
        assert!(matches!(e, PathError::SymlinkEscape { .. }), "{e:?}");
        assert!(e.to_string().contains("outside the workspace"));
        // The final component itself being an escaping symlink is refused too.
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        symlink(outside.path().join("secret"), w.root().join("secret")).unwrap();
        assert!(matches!(
            w.resolve("secret"),
            Err(PathError::SymlinkEscape { .. })
        ));
        // Relative escape through a nested link.
        std::fs::create_dir(w.root().join("deep")).unwrap();
        symlink("../..", w.root().join("deep/up")).unwrap();
        assert!(matches!(
            w.resolve("deep/up/x"),
            Err(PathError::SymlinkEscape { .. })
        ));
        // Dangling links are refused: a write would land at their target.
        symlink("/nonexistent/zzz", w.root().join("dang")).unwrap();
        assert!(matches!(
            w.resolve("dang"),
            Err(PathError::DanglingSymlink { .. })
        ));
    }

    #[test]
    fn error_messages_speak_to_the_model() {
        let (_d, w) = ws();
        let msg = w.resolve("/etc/passwd").unwrap_err().to_string();
        assert!(msg.contains("relative"), "{msg}");
        let msg = w.resolve("../x").unwrap_err().to_string();
        assert!(msg.contains(".."), "{msg}");
    }

    #[test]
    fn fingerprint_tracks_contents_and_skips_git() {
        let (_d, w) = ws();
        let empty = w.fingerprint();
        assert_eq!(empty.len(), 64);
        std::fs::create_dir_all(w.root().join("a/b")).unwrap();
        std::fs::write(w.root().join("a/b/f"), "1").unwrap();
        let one = w.fingerprint();
        assert_ne!(empty, one);
        assert_eq!(one, w.fingerprint(), "deterministic");
        std::fs::write(w.root().join("a/b/f"), "2").unwrap();
        let two = w.fingerprint();
        assert_ne!(one, two);
        std::fs::create_dir_all(w.root().join(".git/objects")).unwrap();
        std::fs::write(w.root().join(".git/objects/x"), "zzz").unwrap();
        assert_eq!(two, w.fingerprint(), ".git is not part of the fingerprint");
        // Renaming changes the hash even with the same contents.
        std::fs::rename(w.root().join("a/b/f"), w.root().join("a/b/g")).unwrap();
        assert_ne!(two, w.fingerprint());
    }

    #[test]
    fn fingerprint_does_not_follow_symlinks_out() {
        let outside = tempfile::tempdir().unwrap();
        let (_d, w) = ws();
        symlink(outside.path(), w.root().join("out")).unwrap();
        let a = w.fingerprint();
        std::fs::write(outside.path().join("x"), "changes").unwrap();
        assert_eq!(a, w.fingerprint());
    }

    proptest::proptest! {
        // Whatever the model sends, resolve never panics, and anything it
        // accepts stays under the root.
        #[test]
        fn resolve_never_escapes(s in "[a-z./\\\\\\x00-]{0,40}") {
            let (_d, w) = ws();
            if let Ok(p) = w.resolve(&s) {
                proptest::prop_assert!(p.starts_with(w.root()));
            }
        }
    }
}
