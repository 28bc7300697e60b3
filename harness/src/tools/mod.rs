//! The tools the model may call, and their dispatch. Only tools on the spec's
//! allowlist are described to the model and only those run; anything else,
//! including a hallucinated tool name, gets an error observation and runs
//! nothing. Every path goes through [`Workspace::resolve`]. Tool output is
//! data handed back to the model: nothing here interprets it.
//!
//! Here: the names, the bounds, the tool definitions the model sees and the
//! dispatch, and the two outward effects (post_message, apply_migration).
//! The tools of a kind have a file each.

mod command; // run_check, run_command: a confined process
mod files; // read_file (whole or by range), write_file, list_files, edit_file
mod search; // search: a regex over the workspace's text files
#[cfg(test)]
mod tests;

use crate::check::CheckSpec;
use crate::migration;
use crate::model::types::{ToolCall, ToolDef};
use crate::outbox::Outbox;
use crate::workspace::Workspace;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Read;

crate::wire::wire_names! {
    /// The tools there are. A spec's allowlist and the `tool` events name them.
    pub enum ToolName {
        ReadFile = "read_file",
        WriteFile = "write_file",
        ListFiles = "list_files",
        PostMessage = "post_message",
        ApplyMigration = "apply_migration",
        RunCheck = "run_check",
        EditFile = "edit_file",
        Search = "search",
        RunCommand = "run_command",
    }
}

pub const ALL_TOOL_NAMES: [&str; 9] = [
    ToolName::ReadFile.as_str(),
    ToolName::WriteFile.as_str(),
    ToolName::ListFiles.as_str(),
    ToolName::PostMessage.as_str(),
    ToolName::ApplyMigration.as_str(),
    ToolName::RunCheck.as_str(),
    ToolName::EditFile.as_str(),
    ToolName::Search.as_str(),
    ToolName::RunCommand.as_str(),
];

/// The tools a spec without `[tools] allow` gets: the six the harness had
/// before the coding tools. `edit_file`, `search` and `run_command` are
/// allowed only by name (run_command also needs its programs listed), so a
/// spec written before them sends the same tools as it did (its recordings
/// stay valid: the tools are a recording condition).
pub const DEFAULT_TOOL_NAMES: [&str; 6] = [
    ToolName::ReadFile.as_str(),
    ToolName::WriteFile.as_str(),
    ToolName::ListFiles.as_str(),
    ToolName::PostMessage.as_str(),
    ToolName::ApplyMigration.as_str(),
    ToolName::RunCheck.as_str(),
];

/// The coding tools: when the allowlist names one of them, read_file's
/// schema also offers its line range (without them read_file is described
/// exactly as before, so older recordings keep their tools condition).
const CODING_TOOLS: [&str; 3] = [
    ToolName::EditFile.as_str(),
    ToolName::Search.as_str(),
    ToolName::RunCommand.as_str(),
];

/// Largest file read_file returns; bigger files are refused, not truncated,
/// so the model never edits a file it only saw part of.
pub const READ_MAX_BYTES: u64 = 256 * 1024;
/// Largest content write_file accepts.
pub const WRITE_MAX_BYTES: usize = 1024 * 1024;
/// Most entries list_files returns for one directory.
pub const LIST_MAX_ENTRIES: usize = 1000;
/// Bounds on post_message arguments.
pub const POST_CHANNEL_MAX_CHARS: usize = 80;
pub const POST_TEXT_MAX_CHARS: usize = 8000;
pub const POST_KEY_MAX_CHARS: usize = 200;
/// Longest observation text; anything longer is cut with a note. read_file's
/// own limit is below this, so it only bites on unexpected output.
pub const OBSERVATION_MAX_BYTES: usize = 300 * 1024;
/// How much of a bad argument value is quoted back in an error.
const QUOTE_MAX_CHARS: usize = 200;

/// Most lines one ranged read_file returns (a longer range is cut there and
/// the result says which lines came back).
pub const READ_RANGE_MAX_LINES: u64 = 2000;
/// Largest file read_file reads by range (it counts the file's lines to say
/// "of how many"); bigger files are refused. A ranged result itself stays
/// under [`READ_MAX_BYTES`].
pub const READ_RANGE_FILE_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// Largest file edit_file edits (before and after the edit): what write_file
/// may write.
pub const EDIT_FILE_MAX_BYTES: usize = WRITE_MAX_BYTES;
/// Longest regex search accepts, in characters.
pub const SEARCH_PATTERN_MAX_CHARS: usize = 1000;
/// Compiled size limit of a search regex, bytes (regex's `size_limit` and
/// `dfa_size_limit`): a pattern like `a{1000}{1000}` is refused, not built.
pub const SEARCH_REGEX_MAX_BYTES: usize = 1024 * 1024;
/// Most matching lines search returns; past it the result says it was cut.
pub const SEARCH_MAX_MATCHES: usize = 200;
/// Longest matching line shown, in characters (longer ones are cut with
/// "...").
pub const SEARCH_LINE_MAX_CHARS: usize = 300;
/// Files larger than this are skipped by search (and counted as skipped).
pub const SEARCH_FILE_MAX_BYTES: u64 = 1024 * 1024;
/// Most files search reads in one call.
pub const SEARCH_MAX_FILES: usize = 5000;
/// Deepest directory nesting search descends into (below the path given).
pub const SEARCH_MAX_DEPTH: usize = 32;
/// Most file bytes one search call reads, summed over its files.
pub const SEARCH_MAX_TOTAL_BYTES: u64 = 64 * 1024 * 1024;
/// Most arguments a run_command argv may have, and their total size in bytes.
pub const RUN_COMMAND_MAX_ARGS: usize = 256;
pub const RUN_COMMAND_MAX_ARGV_BYTES: usize = 32 * 1024;
/// run_command's timeout when the spec names none, seconds. Like a check's,
/// it is also cut by the run's wall clock.
pub const RUN_COMMAND_DEFAULT_TIMEOUT_S: u64 = 120;

/// What run_command may run: the spec's `[tools.run_command]`.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandPolicy {
    /// Programs argv[0] may name, exactly (bare names looked up on the
    /// check PATH). Anything else is refused: deny by default.
    pub programs: Vec<String>,
    /// Seconds before the command is killed (and never past the run's
    /// wall clock).
    pub timeout_s: u64,
    /// The environment, as checks get it (`[check_env] pass`, the run's TMPDIR).
    pub env: crate::check::CheckEnv,
}

pub struct ToolBox<'a> {
    pub workspace: &'a Workspace,
    pub outbox: &'a Outbox,
    pub checks: &'a BTreeMap<String, CheckSpec>,
    pub allowlist: &'a [String],
    /// When the run's wall clock runs out: bounds `run_check` as well as the
    /// check's own timeout. None outside a run.
    pub deadline: Option<std::time::Instant>,
    /// run_command's programs and timeout (None: the spec lists none, and
    /// run_command refuses every call).
    pub command: Option<&'a CommandPolicy>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    pub content: String,
    pub is_error: bool,
    /// true when the call wrote to the workspace or outbox (or may have: a
    /// write that failed partway is reported as a side effect too).
    pub side_effect: bool,
    /// Some(key) when a post_message appended to the outbox.
    pub posted_key: Option<String>,
    /// Workspace-relative paths the call wrote (or may have written: a write
    /// that failed after its rename), as the task's commit will name them.
    pub wrote: Vec<String>,
    /// Of those, the ones whose new content may not be durable (renamed into
    /// place, then the directory fsync failed).
    pub in_doubt: Vec<String>,
}

impl Observation {
    fn ok(content: String) -> Observation {
        Observation {
            content: bound(content),
            is_error: false,
            side_effect: false,
            posted_key: None,
            wrote: vec![],
            in_doubt: vec![],
        }
    }
    fn err(content: String) -> Observation {
        Observation {
            content: bound(content),
            is_error: true,
            side_effect: false,
            posted_key: None,
            wrote: vec![],
            in_doubt: vec![],
        }
    }
    /// A side effect on these workspace paths (none for the outbox).
    fn wrote(mut self, paths: Vec<String>) -> Observation {
        self.side_effect = true;
        self.wrote = paths;
        self
    }
}

/// Unknown tool names in a spec are an error naming the valid ones.
pub fn validate_allowlist(names: &[String]) -> Result<(), String> {
    let unknown: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| !ALL_TOOL_NAMES.contains(n))
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "unknown tool name(s) in the allowlist: {}; valid tools are: {}",
            unknown
                .iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", "),
            ALL_TOOL_NAMES.join(", ")
        ))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
    #[serde(default)]
    start_line: Option<u64>,
    #[serde(default)]
    end_line: Option<u64>,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    path: String,
    old: String,
    new: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommandArgs {
    argv: Vec<String>,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    path: String,
    content: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default)]
    path: Option<String>,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PostArgs {
    channel: String,
    text: String,
    idempotency_key: String,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NameArgs {
    name: String,
}

impl ToolBox<'_> {
    /// The allowlisted tools, in the fixed [`ALL_TOOL_NAMES`] order so the
    /// request prefix is stable across calls (prompt caching).
    pub fn defs(&self) -> Vec<ToolDef> {
        ALL_TOOL_NAMES
            .iter()
            .filter(|n| self.allowed(n))
            .map(|n| ToolDef {
                name: n.to_string(),
                description: self.description(n),
                input_schema: self.schema(n),
            })
            .collect()
    }

    fn allowed(&self, name: &str) -> bool {
        ALL_TOOL_NAMES.contains(&name)
            && (self.allowlist.iter().any(|a| a == name)
                || crate::mutants::active(crate::mutants::Mutant::AllowlistIgnored))
    }

    /// Whether read_file is described with its line range (see [`CODING_TOOLS`]).
    fn ranged_read(&self) -> bool {
        CODING_TOOLS.iter().any(|n| self.allowed(n))
    }

    fn available(&self) -> String {
        let names: Vec<&str> = ALL_TOOL_NAMES
            .iter()
            .copied()
            .filter(|n| self.allowed(n))
            .collect();
        if names.is_empty() {
            "(none)".into()
        } else {
            names.join(", ")
        }
    }

    fn description(&self, name: &str) -> String {
        match name {
            "read_file" if self.ranged_read() => format!("Read a UTF-8 text file from the workspace (at most {READ_MAX_BYTES} bytes). Paths are relative to the workspace root. With start_line and/or end_line (1-based, inclusive) only those lines are returned, at most {READ_RANGE_MAX_LINES} of them, after a first line saying which lines of how many; a file too large to read whole can be read this way."),
            "read_file" => format!("Read a UTF-8 text file from the workspace (at most {READ_MAX_BYTES} bytes). Paths are relative to the workspace root."),
            "edit_file" => format!("Replace an exact string in a workspace file: `old` must occur exactly once (give enough surrounding text); otherwise nothing is changed and the error says how many times it occurs. Files up to {EDIT_FILE_MAX_BYTES} bytes."),
            "search" => format!("Search the workspace's text files for a regular expression (Rust regex syntax), line by line. Returns `path:line: text`, at most {SEARCH_MAX_MATCHES} matches, lines cut at {SEARCH_LINE_MAX_CHARS} characters. Skips .git, symlinks, binary files and files over {SEARCH_FILE_MAX_BYTES} bytes."),
            "run_command" => format!("Run a program in the workspace (its working directory) under the same confinement as checks: no network, writes only inside the workspace and a temp dir. argv[0] must be one of: {}. Killed after {} s. Returns the exit code and the tail of its output.", self.command_programs(), self.command.map_or(RUN_COMMAND_DEFAULT_TIMEOUT_S, |c| c.timeout_s)),
            "write_file" => format!("Create or overwrite a file in the workspace with the given content (at most {WRITE_MAX_BYTES} bytes). Parent directories are created."),
            "list_files" => format!("List one directory of the workspace (default: the root), sorted, directories marked with a trailing '/'. At most {LIST_MAX_ENTRIES} entries."),
            "post_message" => "Post a message to a channel. This is a real, non-reversible side effect: posting twice posts twice. Give a stable idempotency_key for the message.".into(),
            "apply_migration" => "Apply the migration defined in migrations/<name>.json: writes each step's file in order.".into(),
            "run_check" => format!("Run a check defined by the run's spec and report whether it passed. Defined checks: {}.", self.check_names()),
            _ => String::new(),
        }
    }

    fn command_programs(&self) -> String {
        match self.command {
            Some(c) if !c.programs.is_empty() => c.programs.join(", "),
            _ => "(none)".into(),
        }
    }

    fn check_names(&self) -> String {
        if self.checks.is_empty() {
            "(none)".into()
        } else {
            self.checks.keys().cloned().collect::<Vec<_>>().join(", ")
        }
    }

    fn schema(&self, name: &str) -> Value {
        let s = |d: &str| json!({"type": "string", "description": d});
        match name {
            "read_file" if self.ranged_read() => object(
                json!({
                    "path": s("file path relative to the workspace root"),
                    "start_line": {"type": "integer", "minimum": 1, "description": "first line to return, 1-based (default 1)"},
                    "end_line": {"type": "integer", "minimum": 1, "description": "last line to return, inclusive (default: start_line + 1999 or the last line)"}
                }),
                &["path"],
            ),
            "read_file" => object(
                json!({"path": s("file path relative to the workspace root")}),
                &["path"],
            ),
            "edit_file" => object(
                json!({
                    "path": s("file path relative to the workspace root"),
                    "old": s("the exact text to replace; must occur exactly once in the file"),
                    "new": s("the text to put in its place")
                }),
                &["path", "old", "new"],
            ),
            "search" => object(
                json!({
                    "pattern": {"type": "string", "maxLength": SEARCH_PATTERN_MAX_CHARS, "description": "regular expression (Rust regex syntax), matched against each line"},
                    "path": s("file or directory to search, relative to the workspace root; default \".\"")
                }),
                &["pattern"],
            ),
            "run_command" => {
                let argv = json!({"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": RUN_COMMAND_MAX_ARGS, "description": format!("the program and its arguments, e.g. [\"python3\", \"-m\", \"unittest\"]; argv[0] one of: {}; no shell unless the program is one", self.command_programs())});
                object(json!({ "argv": argv }), &["argv"])
            }
            "write_file" => object(
                json!({"path": s("file path relative to the workspace root"), "content": s("the complete new file content")}),
                &["path", "content"],
            ),
            "list_files" => object(
                json!({"path": s("directory relative to the workspace root; default \".\"")}),
                &[],
            ),
            "post_message" => object(
                json!({
                    "channel": {"type": "string", "maxLength": POST_CHANNEL_MAX_CHARS, "description": "channel, e.g. #eng"},
                    "text": {"type": "string", "maxLength": POST_TEXT_MAX_CHARS, "description": "message text"},
                    "idempotency_key": {"type": "string", "maxLength": POST_KEY_MAX_CHARS, "description": "stable key identifying this message"}
                }),
                &["channel", "text", "idempotency_key"],
            ),
            "apply_migration" => object(
                json!({"name": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+$", "description": "migration name: the file migrations/<name>.json"}}),
                &["name"],
            ),
            "run_check" => {
                let mut name =
                    json!({"type": "string", "description": "name of a check defined by the spec"});
                if !self.checks.is_empty() {
                    name["enum"] = Value::from(self.checks.keys().cloned().collect::<Vec<_>>());
                }
                object(json!({ "name": name }), &["name"])
            }
            _ => object(json!({}), &[]),
        }
    }

    fn expected_args(name: &str) -> &'static str {
        match name {
            "read_file" => "{\"path\": string, \"start_line\"?: integer, \"end_line\"?: integer}",
            "edit_file" => "{\"path\": string, \"old\": string, \"new\": string}",
            "search" => "{\"pattern\": string, \"path\"?: string}",
            "run_command" => "{\"argv\": [string, ...]}",
            "write_file" => "{\"path\": string, \"content\": string}",
            "list_files" => "{\"path\"?: string}",
            "post_message" => {
                "{\"channel\": string, \"text\": string, \"idempotency_key\": string}"
            }
            "apply_migration" | "run_check" => "{\"name\": string}",
            _ => "{}",
        }
    }

    /// Run one tool call. Never panics; every failure is an error observation.
    pub fn dispatch(&self, call: &ToolCall) -> Observation {
        let name = call.name.as_str();
        let off_list_runs = crate::mutants::active(crate::mutants::Mutant::OffListCallRuns)
            && ALL_TOOL_NAMES.contains(&name);
        if !self.allowed(name) && !off_list_runs {
            return Observation::err(format!(
                "no such tool: {}; available tools: {}",
                clip(name),
                self.available()
            ));
        }
        match name {
            "read_file" => self.args::<ReadArgs>(call).map_or_else(
                |e| e,
                |a| match (a.start_line, a.end_line) {
                    (None, None) => self.read_file(&a.path),
                    (start, end) => self.read_range(&a.path, start, end),
                },
            ),
            "edit_file" => self
                .args::<EditArgs>(call)
                .map_or_else(|e| e, |a| self.edit_file(&a.path, &a.old, &a.new)),
            "search" => self.args::<SearchArgs>(call).map_or_else(
                |e| e,
                |a| self.search(&a.pattern, a.path.as_deref().unwrap_or(".")),
            ),
            "run_command" => self
                .args::<CommandArgs>(call)
                .map_or_else(|e| e, |a| self.run_command(&a.argv)),
            "write_file" => self
                .args::<WriteArgs>(call)
                .map_or_else(|e| e, |a| self.write_file(&a.path, &a.content)),
            "list_files" => self
                .args::<ListArgs>(call)
                .map_or_else(|e| e, |a| self.list_files(a.path.as_deref().unwrap_or("."))),
            "post_message" => self
                .args::<PostArgs>(call)
                .map_or_else(|e| e, |a| self.post_message(a)),
            "apply_migration" => self
                .args::<NameArgs>(call)
                .map_or_else(|e| e, |a| self.apply_migration(&a.name)),
            "run_check" => self
                .args::<NameArgs>(call)
                .map_or_else(|e| e, |a| self.run_check(&a.name)),
            _ => Observation::err(format!(
                "no such tool: {}; available tools: {}",
                clip(name),
                self.available()
            )),
        }
    }

    fn args<T: DeserializeOwned>(&self, call: &ToolCall) -> Result<T, Observation> {
        let expected = Self::expected_args(&call.name);
        let bad = |why: String| {
            Observation::err(format!(
                "bad arguments for {}: {why}; expected {expected}",
                call.name
            ))
        };
        let Some(obj) = call.input.as_object() else {
            return Err(bad("the arguments are not a JSON object".into()));
        };
        if let Some(raw) = obj.get("__unparsed") {
            let raw = raw.as_str().map(clip).unwrap_or_default();
            return Err(bad(format!("the arguments are not valid JSON ({raw:?})")));
        }
        serde_json::from_value::<T>(call.input.clone()).map_err(|e| bad(e.to_string()))
    }

    fn post_message(&self, a: PostArgs) -> Observation {
        for (field, v, max) in [
            ("channel", &a.channel, POST_CHANNEL_MAX_CHARS),
            ("text", &a.text, POST_TEXT_MAX_CHARS),
            ("idempotency_key", &a.idempotency_key, POST_KEY_MAX_CHARS),
        ] {
            if v.trim().is_empty() {
                return Observation::err(format!("post_message: `{field}` must not be empty"));
            }
            if v.chars().count() > max {
                return Observation::err(format!(
                    "post_message: `{field}` is over {max} characters"
                ));
            }
        }
        // No dedupe here on purpose: the outbox models a real chat API. The
        // harness avoids double posts by verifying, not by this tool.
        match self.outbox.post(&a.channel, &a.text, &a.idempotency_key) {
            Ok(()) => Observation {
                content: format!(
                    "posted to {} with idempotency_key {:?}",
                    a.channel, a.idempotency_key
                ),
                is_error: false,
                side_effect: true,
                posted_key: Some(a.idempotency_key),
                wrote: vec![],
                in_doubt: vec![],
            },
            Err(e) => Observation::err(format!("post_message failed: {e}")).wrote(vec![]),
        }
    }

    fn apply_migration(&self, name: &str) -> Observation {
        if let Err(r) = migration::validate_name(name) {
            return Observation::err(format!(
                "apply_migration: invalid name {:?}: {r}",
                clip(name)
            ));
        }
        match migration::apply(self.workspace, name) {
            Ok(a) => Observation::ok(format!(
                "applied migration {name}: wrote {} step(s): {}",
                a.steps_written.len(),
                a.steps_written.join(", ")
            ))
            .wrote(a.paths_written),
            Err(e @ migration::MigrationError::StepWrite { .. }) => {
                let mut o = Observation::err(format!(
                    "apply_migration: {e}; the migration is now partially applied"
                ))
                .wrote(e.paths_written().to_vec());
                o.in_doubt = e.path_in_doubt().into_iter().collect();
                o
            }
            Err(e) => Observation::err(format!("apply_migration: {e}")),
        }
    }
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

fn clip(s: &str) -> String {
    crate::text::clip_chars(s, QUOTE_MAX_CHARS)
}

/// Cut an observation at OBSERVATION_MAX_BYTES on a char boundary, after the
/// redaction filter: the model never reads a key value the harness knows.
fn bound(s: String) -> String {
    let mut s = crate::redact::string(s);
    if s.len() > OBSERVATION_MAX_BYTES {
        let mut cut = OBSERVATION_MAX_BYTES;
        while cut > 0 && !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("\n[output truncated]");
    }
    s
}
