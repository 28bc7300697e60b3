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
