//! Writing to stdout and stderr without ever panicking or changing the exit
//! code. `println!` panics when stdout is a pipe whose reader has gone
//! (`harness run ... | head -1`) or a full device (`> /dev/full`): the run had
//! already ended, and the panic turned its exit code into 101, which a 9am
//! script reads as a crash. The exit code is the ending's; what is printed is
//! a courtesy, so a write error here is noted once on stderr and otherwise
//! ignored (a write error on stderr itself is ignored: there is nowhere left
//! to say it).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Print `text` on stdout as is (the caller supplies newlines). Never panics.
pub fn out(text: &str) {
    static NOTED: AtomicBool = AtomicBool::new(false);
    let mut o = std::io::stdout().lock();
    let res = o.write_all(text.as_bytes()).and_then(|()| o.flush());
    if let Err(e) = res {
        if !NOTED.swap(true, Ordering::Relaxed) {
            err(&format!(
                "harness: stdout is not writable ({e}); the rest of the summary is not printed (the exit code and report.json are unaffected)\n"
            ));
        }
    }
}

/// Print `text` on stderr as is. Never panics; errors are ignored.
pub fn err(text: &str) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(text.as_bytes());
    let _ = e.flush();
}

/// [`err`] with a trailing newline.
pub fn err_line(line: &str) {
    err(&format!("{line}\n"));
}

/// Which stream a coloured text goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// What a colour says: success, a warning, a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tint {
    Ok,
    Warn,
    Bad,
}

/// Whether to colour, by the conventions most tools share: `NO_COLOR` set
/// to anything but empty never (no-color.org; it wins over a force),
/// `CLICOLOR_FORCE` set to anything but `0` always (a CI log viewer that
/// renders colour), else only on a terminal (a file or a pipe never gets
/// escape codes).
pub fn colour_wanted(
    no_color: Option<&std::ffi::OsStr>,
    force: Option<&std::ffi::OsStr>,
    is_terminal: bool,
) -> bool {
    if no_color.is_some_and(|v| !v.is_empty()) {
        return false;
    }
    if force.is_some_and(|v| !v.is_empty() && v != "0") {
        return true;
    }
    is_terminal
}

/// Whether `stream` is coloured in this process (read once per call: the
/// environment and the terminal do not change under a command).
pub fn colour_on(stream: Stream) -> bool {
    use std::io::IsTerminal;
    let tty = match stream {
        Stream::Stdout => std::io::stdout().is_terminal(),
        Stream::Stderr => std::io::stderr().is_terminal(),
    };
    colour_wanted(
        std::env::var_os("NO_COLOR").as_deref(),
        std::env::var_os("CLICOLOR_FORCE").as_deref(),
        tty,
    )
}

/// `text` in `tint` when `on` (ANSI SGR: green, yellow, bold red), as is
/// otherwise.
pub fn paint(text: &str, tint: Tint, on: bool) -> String {
    if !on {
        return text.to_string();
    }
    let code = match tint {
        Tint::Ok => "32",
        Tint::Warn => "33",
        Tint::Bad => "1;31",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn colour_only_on_a_terminal_unless_forced_and_never_with_no_color() {
        let s = |v: &'static str| Some(OsStr::new(v));
        assert!(colour_wanted(None, None, true));
        assert!(!colour_wanted(None, None, false));
        assert!(!colour_wanted(s("1"), None, true), "NO_COLOR on a terminal");
        assert!(
            colour_wanted(s(""), None, true),
            "an empty NO_COLOR is unset"
        );
        assert!(
            colour_wanted(None, s("1"), false),
            "CLICOLOR_FORCE into a pipe"
        );
        assert!(!colour_wanted(None, s("0"), false));
        assert!(!colour_wanted(s("1"), s("1"), true), "NO_COLOR wins");
        assert_eq!(paint("FAIL", Tint::Bad, false), "FAIL");
        assert_eq!(paint("FAIL", Tint::Bad, true), "\x1b[1;31mFAIL\x1b[0m");
    }
}
