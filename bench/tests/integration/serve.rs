//! `bench serve` stops on a stop request as every bench command does
//! (crate::interrupt): through the real binary, SIGTERM and SIGINT end it
//! with 128 + the signal, its port is released, and it says it stopped.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Start `bench serve` on a free port; returns the child and the port it
/// printed.
fn serve() -> (std::process::Child, u16) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../recordings/demo");
    let mut child = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["serve", "--port", "0", "--recordings"])
        .arg(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let port = first
        .trim()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {first:?}"));
    (child, port)
}

/// Wait at most `limit` for the child to exit.
fn wait_for(child: &mut std::process::Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Some(st) = child.try_wait().unwrap() {
            return Some(st);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    None
}

#[test]
fn serve_stops_on_sigterm_and_sigint_and_releases_its_port() {
    use nix::sys::signal::{kill, Signal};
    for sig in [Signal::SIGTERM, Signal::SIGINT] {
        let (mut child, port) = serve();
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
            "{sig}: the server listens on {port}"
        );
        kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
        let st = wait_for(&mut child, Duration::from_secs(10))
            .unwrap_or_else(|| panic!("{sig}: bench serve still running 10 s after the signal"));
        assert_eq!(st.code(), Some(128 + sig as i32), "{sig}: {st}");
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert!(err.contains("stopped the replay server"), "{sig}: {err}");
        assert!(
            !err.contains("case-run"),
            "{sig}: serve runs no case: {err}"
        );
        // Released: the port can be bound again at once.
        std::net::TcpListener::bind(("127.0.0.1", port))
            .unwrap_or_else(|e| panic!("{sig}: port {port} still held after exit: {e}"));
    }
}
