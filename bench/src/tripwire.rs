//! What the sandbox's layers should keep from every check, watched while a
//! case-run's harness runs, so that a layer that fails is seen even when the
//! code that got through leaves no trace in a file (issue 46): an open of a
//! planted secret (`inotify`'s `IN_OPEN`, which sees an open through any
//! mount or namespace: it watches the file itself), and a connection to a
//! canary unix socket standing where a host keeps its container runtime's.
//! The bench's own reads come before [`Tripwires::arm`] and after
//! [`Tripwires::tripped`].

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

/// Events read per case-run: more than this many opens is an escape anyway.
pub const TRIPWIRE_EVENTS_MAX: usize = 10_000;

/// The armed wires of one case-run; the socket file is removed on drop.
#[derive(Debug)]
pub struct Tripwires {
    inotify: Inotify,
    /// Each watched file as the page names it.
    watched: Vec<(WatchDescriptor, String)>,
    socket: UnixListener,
    /// The listener's own path (short: a socket path has 108 bytes).
    socket_path: PathBuf,
    /// Where a check would find it, as the page names it.
    socket_shown: String,
}

/// A wire that could not be set.
#[derive(Debug, thiserror::Error)]
pub enum TripwireError {
    #[error("inotify: {0}")]
    Inotify(nix::Error),
    #[error("watch {}: {source}", .path.display())]
    Watch { path: PathBuf, source: nix::Error },
    #[error("canary socket {}: {source}", .path.display())]
    Socket {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Tripwires {
    /// Watch each of `files` (path, name shown) for an open, and listen on
    /// a canary socket linked from `socket_link` (shown as `socket_shown`).
    pub fn arm(
        files: &[(PathBuf, String)],
        socket_link: &Path,
        socket_shown: String,
    ) -> Result<Tripwires, TripwireError> {
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
            .map_err(TripwireError::Inotify)?;
        let mut watched = Vec::new();
        for (path, shown) in files {
            let wd = inotify
                .add_watch(path.as_path(), AddWatchFlags::IN_OPEN)
                .map_err(|source| TripwireError::Watch {
                    path: path.clone(),
                    source,
                })?;
            watched.push((wd, shown.clone()));
        }
        let socket_path = short_socket_path();
        let socket_err = |source| TripwireError::Socket {
            path: socket_path.clone(),
            source,
        };
        let _ = std::fs::remove_file(&socket_path);
        let socket = UnixListener::bind(&socket_path).map_err(socket_err)?;
        socket.set_nonblocking(true).map_err(socket_err)?;
        if let Some(dir) = socket_link.parent() {
            std::fs::create_dir_all(dir).map_err(socket_err)?;
        }
        std::os::unix::fs::symlink(&socket_path, socket_link).map_err(socket_err)?;
        Ok(Tripwires {
            inotify,
            watched,
            socket,
            socket_path,
            socket_shown,
        })
    }

    /// What tripped since [`Tripwires::arm`], one line each (empty: none).
    pub fn tripped(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut seen = 0;
        while let Ok(events) = self.inotify.read_events() {
            if events.is_empty() || seen >= TRIPWIRE_EVENTS_MAX {
                break;
            }
            seen += events.len();
            for e in events {
                if let Some((_, shown)) = self.watched.iter().find(|(wd, _)| *wd == e.wd) {
                    let line = format!("{shown} was opened by a process of the run");
                    if !out.contains(&line) {
                        out.push(line);
                    }
                }
            }
        }
        let mut connections = 0;
        while self.socket.accept().is_ok() && connections < TRIPWIRE_EVENTS_MAX {
            connections += 1;
        }
        if connections > 0 {
            out.push(format!(
                "{} was connected to {connections} time(s) by a process of the run",
                self.socket_shown
            ));
        }
        out
    }
}

impl Drop for Tripwires {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.socket_path);
    }
}

/// `<temp>/bench-canary-<pid>-<n>.sock`: unique in this process, short.
fn short_socket_path() -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    std::env::temp_dir().join(format!(
        "bench-canary-{}-{}.sock",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An open of a watched file and a connection to the socket through
    /// its link each trip a wire, named; a stat or a listing does not.
    #[test]
    fn an_open_and_a_connect_trip_and_nothing_else_does() {
        let d = tempfile::tempdir().unwrap();
        let secret = d.path().join("credentials.toml");
        std::fs::write(&secret, "token = \"x\"").unwrap();
        let link = d.path().join("run/docker.sock");
        let t = Tripwires::arm(
            &[(secret.clone(), "$HOME/credentials.toml".into())],
            &link,
            "$HOME/run/docker.sock".into(),
        )
        .unwrap();
        assert!(std::fs::metadata(&secret).is_ok());
        let _ = std::fs::read_dir(d.path()).unwrap().count();
        assert_eq!(t.tripped(), Vec::<String>::new());
        let _ = std::fs::read(&secret).unwrap();
        std::os::unix::net::UnixStream::connect(&link).unwrap();
        assert_eq!(
            t.tripped(),
            vec![
                "$HOME/credentials.toml was opened by a process of the run".to_string(),
                "$HOME/run/docker.sock was connected to 1 time(s) by a process of the run"
                    .to_string()
            ]
        );
        let sock = t.socket_path.clone();
        drop(t);
        assert!(!sock.exists(), "the socket file is removed");
    }
}
