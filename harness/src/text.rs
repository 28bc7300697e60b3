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

#[cfg(test)]
mod tests {
    use super::clip_chars;

    #[test]
    fn clips_on_characters_and_marks_the_cut() {
        assert_eq!(clip_chars("abc", 3), "abc");
        assert_eq!(clip_chars("abcd", 3), "abc...");
        assert_eq!(clip_chars("ééé", 2), "éé...");
        assert_eq!(clip_chars("", 0), "");
        assert_eq!(clip_chars("a", 0), "...");
    }
}
