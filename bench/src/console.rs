//! stdout and stderr for every bench command, never a panic: `println!`
//! panics when its stream is a pipe whose reader has gone (`bench run 2>&1
//! | head -1`) or a full device, which turned a finished gate into exit 101
//! and, when stderr closed early, a run that wrote no summary at all. What
//! is printed is a courtesy; the files and the exit code are the result. A
//! write error on stdout is noted once on stderr, one on stderr is ignored
//! (there is nowhere left to say it). `outln!` / `errln!` are the
//! `println!` / `eprintln!` of this crate and its binary.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// `text` on stdout as is. Never panics.
pub fn out(text: &str) {
    static NOTED: AtomicBool = AtomicBool::new(false);
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        if !NOTED.swap(true, Ordering::Relaxed) {
            err(&format!(
                "bench: stdout is not writable ({e}); the rest is not printed (the output files and the exit code are unaffected)\n"
            ));
        }
    }
}

/// `text` on stderr as is. Never panics; errors are ignored.
pub fn err(text: &str) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(text.as_bytes()).and_then(|()| e.flush());
}

/// `println!` that never panics (bench::console).
#[macro_export]
macro_rules! outln {
    () => { $crate::console::out("\n") };
    ($($arg:tt)*) => { $crate::console::out(&format!("{}\n", format_args!($($arg)*))) };
}

/// `print!` that never panics (bench::console).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::console::out(&format!($($arg)*)) };
}

/// `eprintln!` that never panics (bench::console).
#[macro_export]
macro_rules! errln {
    () => { $crate::console::err("\n") };
    ($($arg:tt)*) => { $crate::console::err(&format!("{}\n", format_args!($($arg)*))) };
}
