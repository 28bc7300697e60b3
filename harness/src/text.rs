//! Text shown to people and to the model, cut to a bound.

/// `s` cut to its first `max_chars` characters (never inside one), with
/// `...` after a cut so a reader sees that something was left out. The one
/// clipping rule of the harness and the bench (tool and verify messages, git
/// errors, panic messages, tables); byte-bounded cuts, which also name the
/// total, are a different thing (`tools::bound`, `model::truncate_str`).
pub fn clip_chars(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// `s` with every control character but tab, line feed and carriage return
/// shown as its Unicode control picture (ESC as U+241B, BEL as U+2407, DEL
/// as U+2421, C1 controls as U+FFFD): text the model or a workspace wrote can
/// move no terminal cursor, ring no bell and hide nothing on a page. The one
/// rule for every output a person reads (the page, the stdout summary, the
/// bench's summary.md).
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    let shown = |c: char| matches!(c, '\t' | '\n' | '\r') || !c.is_control();
    if s.chars().all(shown) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(
        s.chars()
            .map(|c| match c {
                c if shown(c) => c,
                '\u{7f}' => '\u{2421}',
                c if (c as u32) < 0x20 => char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'),
                _ => '\u{fffd}',
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::{clip_chars, printable};

    #[test]
    fn control_bytes_become_pictures() {
        assert_eq!(
            printable("a\u{1b}[31mb\u{7}c\n\t"),
            "a\u{241b}[31mb\u{2407}c\n\t"
        );
        assert_eq!(printable("\u{7f}\u{85}"), "\u{2421}\u{fffd}");
        assert!(matches!(printable("plain"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn clips_on_characters_and_marks_the_cut() {
        assert_eq!(clip_chars("abc", 3), "abc");
        assert_eq!(clip_chars("abcd", 3), "abc...");
        assert_eq!(clip_chars("ééé", 2), "éé...");
        assert_eq!(clip_chars("", 0), "");
        assert_eq!(clip_chars("a", 0), "...");
    }
}
