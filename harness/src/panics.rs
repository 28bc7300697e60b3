//! A panic is a bug, but it is still an ending: UNRECOVERABLE_ERROR with
//! error kind `panic`, the report, the alert and the panic message in
//! `detail` (see `run_loop::run`, which runs the loop as its own task so a
//! panic stops at the task boundary, and `run_loop::end_after_panic`).
//!
//! This module only names what happened: a hook records the message and
//! location of each panic (the payload alone has no location), then hands
//! over to the previous hook, so stderr still shows the usual panic text.

use std::any::Any;
use std::sync::{Mutex, OnceLock};

/// Longest panic message kept for a report's `detail`.
pub const PANIC_MESSAGE_MAX_CHARS: usize = 2000;

fn last() -> &'static Mutex<Option<String>> {
    static LAST: OnceLock<Mutex<Option<String>>> = OnceLock::new();
    LAST.get_or_init(|| Mutex::new(None))
}

/// Install the recording hook (idempotent: a second call does nothing).
pub fn install_hook() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let msg = info.payload_as_str().unwrap_or("(a panic with no message)");
            let text = match info.location() {
                Some(l) => format!("{msg} (at {}:{}:{})", l.file(), l.line(), l.column()),
                None => msg.to_string(),
            };
            *last().lock().unwrap_or_else(|e| e.into_inner()) = Some(text);
            previous(info);
        }));
    });
}

/// What the panic said, from the hook's record when it has one (it carries
/// the location), else from the payload. Bounded in length.
pub fn describe(payload: &(dyn Any + Send)) -> String {
    let from_payload = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned());
    let recorded = last().lock().unwrap_or_else(|e| e.into_inner()).take();
    let text = match (recorded, from_payload) {
        (Some(r), Some(p)) if r.starts_with(p.as_str()) => r,
        (_, Some(p)) => p,
        (Some(r), None) => r,
        (None, None) => "(a panic with no message)".to_string(),
    };
    crate::text::clip_chars(&text, PANIC_MESSAGE_MAX_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_carries_the_location_when_the_hook_saw_it() {
        install_hook();
        let caught = std::panic::catch_unwind(|| panic!("boom {}", 7)).unwrap_err();
        let d = describe(caught.as_ref());
        assert!(d.starts_with("boom 7 (at "), "{d}");
        assert!(d.contains("panics.rs:"), "{d}");
        // A payload with no hook record (the record was taken above).
        let p: Box<dyn Any + Send> = Box::new("plain");
        assert_eq!(describe(p.as_ref()), "plain");
        let p: Box<dyn Any + Send> = Box::new(42u8);
        assert_eq!(describe(p.as_ref()), "(a panic with no message)");
    }
}
