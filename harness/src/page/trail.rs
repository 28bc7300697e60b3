//! "What the agent did": each task's tool calls, open on the page, input
//! wrapped and the answer clipped to its first lines. A write is shown as a
//! unified diff. events.jsonl keeps each call's input (its first
//! `TOOL_INPUT_SHOWN_MAX_CHARS` characters) and the start of the answer,
//! never the file before the call, so:
//! - `edit_file` is a true hunk against the file before: the text it
//!   replaced (which was there, exactly once) and what it put in its place,
//!   at the line its answer names;
//! - `write_file` shows the content written as added lines: the file before
//!   is not in the events (the task's commit on the run branch holds the
//!   whole diff: `git show COMMIT`, given where the task was verified).

use super::ToolStep;
use maud::{html, Markup};
use std::collections::HashMap;

/// Lines of a tool's answer shown (the event holds its first
/// `TOOL_OUTPUT_SHOWN_MAX_CHARS` characters; this keeps a listing short).
pub const OUTPUT_LINES_SHOWN_MAX: usize = 12;

/// A write call read out of its (possibly clipped) input.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// `write_file`: the whole new content.
    Whole { path: String, content: String },
    /// `edit_file`: `old` replaced by `new`, at `line` when the answer says.
    Edit {
        path: String,
        old: String,
        new: String,
        line: Option<usize>,
    },
}

/// The write `s` made, and whether its input was clipped in the event (the
/// diff then ends where the event's copy ends).
pub fn write_of(s: &ToolStep) -> Option<(Write, bool)> {
    let (v, clipped) = lenient_json(&s.input)?;
    let field = |k: &str| v.get(k).and_then(|x| x.as_str()).map(String::from);
    let path = field("path")?;
    let w = match s.tool.as_str() {
        "write_file" => Write::Whole {
            path,
            content: field("content").unwrap_or_default(),
        },
        "edit_file" => Write::Edit {
            path,
            old: field("old").unwrap_or_default(),
            new: field("new").unwrap_or_default(),
            line: edited_line(&s.output),
        },
        _ => return None,
    };
    Some((w, clipped))
}

/// The input as JSON; a clipped one (`...` after its first characters) is
/// closed where it was cut so the part kept can still be read.
fn lenient_json(input: &str) -> Option<(serde_json::Map<String, serde_json::Value>, bool)> {
    if let Ok(serde_json::Value::Object(m)) = serde_json::from_str(input) {
        return Some((m, false));
    }
    let cut = input.strip_suffix("...")?;
    // A cut inside an escape (`\` or `\u12`) leaves an invalid string.
    let cut = match cut.rfind('\\') {
        Some(i) if cut.len() - i <= 6 => &cut[..i],
        _ => cut,
    };
    for close in ["\"}", "}", "\":\"\"}", "\"\"}"] {
        if let Ok(serde_json::Value::Object(m)) = serde_json::from_str(&format!("{cut}{close}")) {
            return Some((m, true));
        }
    }
    None
}

/// "edit_file: replaced 1 occurrence in P at line N; ..." -> N.
fn edited_line(output: &str) -> Option<usize> {
    let rest = output.split(" at line ").nth(1)?;
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// The diff's lines, each with its kind (`hunk`, `del`, `add`, `ctx`).
pub fn diff_lines(w: &Write) -> Vec<(&'static str, String)> {
    let count = |s: &str| s.lines().count().max(usize::from(!s.is_empty()));
    match w {
        Write::Whole { path, content } => {
            let mut v = vec![
                (
                    "hunk",
                    "--- before: not in the events (see the task's commit)".to_string(),
                ),
                ("hunk", format!("+++ {path}")),
                ("hunk", format!("@@ -0,0 +1,{} @@", count(content))),
            ];
            v.extend(content.lines().map(|l| ("add", format!("+{l}"))));
            v
        }
        Write::Edit {
            path,
            old,
            new,
            line,
        } => {
            let at = line.map_or("?".to_string(), |n| n.to_string());
            let mut v = vec![
                ("hunk", format!("--- {path}")),
                ("hunk", format!("+++ {path}")),
                (
                    "hunk",
                    format!("@@ -{at},{} +{at},{} @@", count(old), count(new)),
                ),
            ];
            v.extend(old.lines().map(|l| ("del", format!("-{l}"))));
            v.extend(new.lines().map(|l| ("add", format!("+{l}"))));
            v
        }
    }
}

/// What the section shows: each task's calls, its description, and the
/// commit of each verified task.
pub struct Trails<'a> {
    pub trails: &'a HashMap<String, Vec<ToolStep>>,
    pub descriptions: &'a HashMap<String, String>,
    pub commits: HashMap<&'a str, &'a str>,
}

/// The tasks with a trail, by task id (t1, t2, ... as the plan numbered them).
fn in_order<'a>(t: &'a Trails) -> Vec<(&'a String, &'a Vec<ToolStep>)> {
    let mut v: Vec<_> = t.trails.iter().collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v
}

/// The section: one block per task, open.
pub fn section(t: &Trails) -> Markup {
    html! {
        section aria-labelledby="trail" {
            h2 #trail { "What the agent did" }
            @if t.trails.is_empty() {
                p.muted { "No tool call is in events.jsonl." }
            } @else {
                p.muted { "Each task's tool calls in order: the input as the model gave it (its first " (crate::events::TOOL_INPUT_SHOWN_MAX_CHARS) " characters), the answer's first lines. A write is a diff: edit_file against the text it replaced; write_file as the lines written (the file before is not in the events: the task's commit holds the whole diff)." }
            }
            @for (id, steps) in in_order(t) {
                (task_trail(t, id, steps))
            }
        }
    }
}

fn task_trail(t: &Trails, id: &str, steps: &[ToolStep]) -> Markup {
    let commit = t.commits.get(id);
    html! {
        div.trail {
            h3 { "task " code { (id) } " " (t.descriptions.get(id).map(String::as_str).unwrap_or(""))
                 " " span.muted { "(" (steps.len()) " tool call" @if steps.len() != 1 { "s" } ")" } }
            @if let Some(c) = commit {
                p.muted { "Verified; its whole diff: " code { "git show " (c) } }
            }
            ol {
                @for s in steps { li { (step(s)) } }
            }
        }
    }
}

fn step(s: &ToolStep) -> Markup {
    let output = clip_lines(&s.output, OUTPUT_LINES_SHOWN_MAX);
    html! {
        strong { (s.tool) } " " code.muted { (s.call_key) } @if s.is_error { " " span.bad { "error" } }
        @match write_of(s) {
            Some((w, clipped)) => {
                pre.diff { @for (kind, l) in diff_lines(&w) { span class=(kind) { (l) } "\n" } }
                @if clipped { p.muted { "(the event keeps the input's first " (crate::events::TOOL_INPUT_SHOWN_MAX_CHARS) " characters: the diff ends there)" } }
            }
            None => { pre.wrap { (s.input) } }
        }
        pre.wrap.muted { "-> " (output) }
    }
}

/// The first `max` lines, with how many were left out.
fn clip_lines(s: &str, max: usize) -> String {
    let n = s.lines().count();
    if n <= max {
        return s.to_string();
    }
    let head: Vec<&str> = s.lines().take(max).collect();
    format!("{}\n... ({} more line(s))", head.join("\n"), n - max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(tool: &str, input: &str, output: &str) -> ToolStep {
        ToolStep {
            call_key: "execute/t1/a0/0".into(),
            tool: tool.into(),
            input: input.into(),
            output: output.into(),
            is_error: false,
        }
    }

    #[test]
    fn an_edit_is_a_hunk_at_the_line_its_answer_names() {
        let s = step(
            "edit_file",
            r#"{"path":"app.py","old":"x = 1\ny = 2","new":"x = 3"}"#,
            "edit_file: replaced 1 occurrence in app.py at line 7; wrote 40 bytes",
        );
        let (w, clipped) = write_of(&s).unwrap();
        assert!(!clipped);
        let lines: Vec<String> = diff_lines(&w).into_iter().map(|(_, l)| l).collect();
        assert_eq!(
            lines,
            [
                "--- app.py",
                "+++ app.py",
                "@@ -7,2 +7,1 @@",
                "-x = 1",
                "-y = 2",
                "+x = 3"
            ]
        );
    }

    #[test]
    fn a_clipped_write_still_shows_what_the_event_kept() {
        let s = step(
            "write_file",
            r#"{"path":"notes.md","content":"line one\nline tw..."#,
            "",
        );
        let (w, clipped) = write_of(&s).unwrap();
        assert!(clipped);
        assert_eq!(
            w,
            Write::Whole {
                path: "notes.md".into(),
                content: "line one\nline tw".into()
            }
        );
        // Cut inside an escape: the escape is dropped, not a parse error.
        let s = step("write_file", r#"{"path":"a","content":"x\u00..."#, "");
        assert!(write_of(&s).is_some());
        // Not a write, or not JSON: no diff (the input is shown as it is).
        assert!(write_of(&step("read_file", r#"{"path":"a"}"#, "")).is_none());
        assert!(write_of(&step("write_file", "not json", "")).is_none());
    }

    #[test]
    fn an_answer_is_clipped_to_its_first_lines() {
        let long: String = (0..30).map(|i| format!("l{i}\n")).collect();
        let c = clip_lines(&long, OUTPUT_LINES_SHOWN_MAX);
        assert!(c.ends_with("... (18 more line(s))"), "{c}");
        assert_eq!(clip_lines("a\nb", 12), "a\nb");
    }
}
