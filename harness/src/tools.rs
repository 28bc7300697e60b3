//! The tools the model may call, and their dispatch. Only tools on the spec's
//! allowlist are described to the model and only those run; anything else,
//! including a hallucinated tool name, gets an error observation and runs
//! nothing. Every path goes through [`Workspace::resolve`]. Tool output is
//! data handed back to the model: nothing here interprets it.

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
        if !self.allowed(name) {
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

    fn read_file(&self, path: &str) -> Observation {
        // Opened O_NONBLOCK|O_NOFOLLOW and checked on the descriptor: a FIFO
        // or device is refused, never read (it could block the run forever).
        let rf = match crate::confined::open_read(self.workspace, path) {
            Ok(f) => f,
            Err(e @ crate::confined::FileError::IsDir { .. }) => {
                return Observation::err(format!("{e}; use list_files to list it"))
            }
            Err(e) => return Observation::err(e.to_string()),
        };
        if rf.len > READ_MAX_BYTES {
            return Observation::err(format!(
                "{path:?} is {} bytes, over the {READ_MAX_BYTES}-byte read limit",
                rf.len
            ));
        }
        let mut buf = Vec::new();
        // take(): the size was checked above, but the file could be growing.
        if let Err(e) = rf.file.take(READ_MAX_BYTES + 1).read_to_end(&mut buf) {
            return Observation::err(format!("cannot read {path:?}: {e}"));
        }
        if buf.len() as u64 > READ_MAX_BYTES {
            return Observation::err(format!(
                "{path:?} is over the {READ_MAX_BYTES}-byte read limit"
            ));
        }
        match String::from_utf8(buf) {
            Ok(s) => Observation::ok(s),
            Err(_) => Observation::err(format!(
                "{path:?} is not UTF-8 text; read_file only returns text files"
            )),
        }
    }

    fn write_file(&self, path: &str, content: &str) -> Observation {
        if content.len() > WRITE_MAX_BYTES {
            return Observation::err(format!(
                "content is {} bytes, over the {WRITE_MAX_BYTES}-byte write limit",
                content.len()
            ));
        }
        // A temp file in the same directory renamed over the target: never
        // through an existing inode (a hard link could lead outside), durable
        // like the harness's own writes through the layer the chaos bench
        // logs (a task the report lists as verified must survive a power cut).
        self.write_through(
            path,
            content,
            format!("wrote {} bytes to {path}", content.len()),
        )
    }

    /// Write `content` as the whole of `path` through the confined atomic
    /// write (write_file and edit_file): `done` on success, the write's
    /// failure (with what may have changed) otherwise.
    fn write_through(&self, path: &str, content: &str, done: String) -> Observation {
        match crate::confined::write(self.workspace, path, content.as_bytes()) {
            Ok(rel) => Observation::ok(done).wrote(vec![rel]),
            Err(f) => {
                let mut o = match &f.error {
                    crate::confined::FileError::IsDir { .. } => {
                        Observation::err(format!("{}; give a file path", f.error))
                    }
                    crate::confined::FileError::Io { .. } => {
                        Observation::err(format!("cannot write {path:?}: {}", f.error))
                    }
                    e => Observation::err(e.to_string()),
                };
                o.side_effect = f.side_effect;
                o.wrote = f.replaced.clone().into_iter().collect();
                o.in_doubt = f.replaced.into_iter().collect();
                o
            }
        }
    }

    fn list_files(&self, path: &str) -> Observation {
        let listing = match crate::confined::list_dir(self.workspace, path) {
            Ok(l) => l,
            Err(crate::confined::FileError::NotFound { .. }) => {
                return Observation::err(format!("{path:?} does not exist"))
            }
            Err(crate::confined::FileError::NotADirectory { .. }) => {
                return Observation::err(format!("{path:?} is a file; use read_file to read it"))
            }
            Err(e) => return Observation::err(format!("cannot list {path:?}: {e}")),
        };
        // Entries are shown relative to the workspace root so they can be
        // passed straight back to read_file.
        let prefix = match self
            .workspace
            .resolve(path)
            .ok()
            .and_then(|abs| crate::confined::rel_string(self.workspace, &abs))
        {
            Some(p) => format!("{p}/"),
            None => String::new(),
        };
        let mut names: Vec<String> = Vec::new();
        let mut more = 0usize;
        for entry in listing.entries {
            if entry.name.eq_ignore_ascii_case(".git") {
                continue;
            }
            // Hold at most 4x the limit: a huge directory must not be read
            // into memory whole. Past that, the listing is still sorted but
            // may not be the alphabetically first names; the count says so.
            if names.len() >= LIST_MAX_ENTRIES * 4 {
                more += 1;
                continue;
            }
            names.push(if entry.is_dir {
                format!("{prefix}{}/", entry.name)
            } else {
                format!("{prefix}{}", entry.name)
            });
        }
        names.sort();
        if names.len() > LIST_MAX_ENTRIES {
            more += names.len() - LIST_MAX_ENTRIES;
            names.truncate(LIST_MAX_ENTRIES);
        }
        let mut out = if names.is_empty() {
            format!("{path} is empty")
        } else {
            names.join("\n")
        };
        if more > 0 {
            out.push_str(&format!("\n... and {more} more entries not shown"));
        }
        if listing.truncated {
            out.push_str(&format!(
                "\n... the directory holds more than {} entries; only that many were looked at",
                crate::confined::DIR_SCAN_MAX_ENTRIES
            ));
        }
        Observation::ok(out)
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

    fn run_check(&self, name: &str) -> Observation {
        let Some(spec) = self.checks.get(name) else {
            return Observation::err(format!(
                "run_check: no check named {:?}; defined checks: {}",
                clip(name),
                self.check_names()
            ));
        };
        let r = crate::check::run_check_by(spec, self.workspace.root(), self.deadline);
        let (status, code) = check_status(&r);
        // A failing check is a result, not a tool error: the tool worked.
        Observation::ok(format!(
            "check {name}: {status}; exit code: {code}\n--- output (tail) ---\n{}",
            r.output
        ))
    }
    /// read_file with a line range: 1-based, inclusive, at most
    /// [`READ_RANGE_MAX_LINES`] lines and [`READ_MAX_BYTES`] bytes returned,
    /// from a file of up to [`READ_RANGE_FILE_MAX_BYTES`]. The first line of
    /// the result says which lines of how many came back.
    fn read_range(&self, path: &str, start: Option<u64>, end: Option<u64>) -> Observation {
        use std::io::BufRead;
        let start = start.unwrap_or(1);
        if start == 0 || end == Some(0) {
            return Observation::err(
                "read_file: start_line and end_line count from 1 (the first line is line 1)".into(),
            );
        }
        if let Some(e) = end {
            if e < start {
                return Observation::err(format!(
                    "read_file: end_line {e} is before start_line {start}"
                ));
            }
        }
        let rf = match crate::confined::open_read(self.workspace, path) {
            Ok(f) => f,
            Err(e @ crate::confined::FileError::IsDir { .. }) => {
                return Observation::err(format!("{e}; use list_files to list it"))
            }
            Err(e) => return Observation::err(e.to_string()),
        };
        if rf.len > READ_RANGE_FILE_MAX_BYTES {
            return Observation::err(format!(
                "{path:?} is {} bytes, over the {READ_RANGE_FILE_MAX_BYTES}-byte limit of a ranged read",
                rf.len
            ));
        }
        // The last line asked for, within the per-call line bound.
        let wanted_end = end
            .unwrap_or(u64::MAX)
            .min(start.saturating_add(READ_RANGE_MAX_LINES - 1));
        let mut reader = std::io::BufReader::new(rf.file.take(READ_RANGE_FILE_MAX_BYTES + 1));
        let mut out: Vec<u8> = Vec::new();
        let mut line: Vec<u8> = Vec::new();
        let mut n: u64 = 0; // lines seen
        let mut last_returned: u64 = 0;
        let mut cut_by_bytes = false;
        let mut read: u64 = 0;
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(k) => read += k as u64,
                Err(e) => return Observation::err(format!("cannot read {path:?}: {e}")),
            }
            if read > READ_RANGE_FILE_MAX_BYTES {
                return Observation::err(format!(
                    "{path:?} is over the {READ_RANGE_FILE_MAX_BYTES}-byte limit of a ranged read"
                ));
            }
            n += 1;
            if n < start || n > wanted_end || cut_by_bytes {
                continue;
            }
            if out.len() + line.len() > READ_MAX_BYTES as usize {
                if n == start {
                    return Observation::err(format!(
                        "line {n} of {path:?} alone is over the {READ_MAX_BYTES}-byte read limit"
                    ));
                }
                cut_by_bytes = true;
                continue;
            }
            out.extend_from_slice(&line);
            last_returned = n;
        }
        if start > n {
            return Observation::err(format!(
                "read_file: start_line {start} is past the end of {path:?}, which has {n} line(s)"
            ));
        }
        let text = match String::from_utf8(out) {
            Ok(t) => t,
            Err(_) => {
                return Observation::err(format!(
                    "lines {start}-{last_returned} of {path:?} are not UTF-8 text; read_file only returns text"
                ))
            }
        };
        let mut head = format!("[lines {start}-{last_returned} of {n} in {path}");
        if cut_by_bytes {
            head.push_str(&format!(
                "; cut at the {READ_MAX_BYTES}-byte read limit, continue with start_line {}",
                last_returned + 1
            ));
        } else if last_returned < end.unwrap_or(n).min(n) {
            head.push_str(&format!(
                "; at most {READ_RANGE_MAX_LINES} lines per call, continue with start_line {}",
                last_returned + 1
            ));
        }
        head.push_str("]\n");
        Observation::ok(head + &text)
    }

    /// Replace the one occurrence of `old` in `path` by `new`, through the
    /// same confined atomic write as write_file. Zero or several occurrences
    /// (overlapping ones counted) change nothing.
    fn edit_file(&self, path: &str, old: &str, new: &str) -> Observation {
        if old.is_empty() {
            return Observation::err(
                "edit_file: `old` is empty; give the exact text to replace".into(),
            );
        }
        if old == new {
            return Observation::err(
                "edit_file: `old` and `new` are the same; nothing to change".into(),
            );
        }
        let rf = match crate::confined::open_read(self.workspace, path) {
            Ok(f) => f,
            Err(e @ crate::confined::FileError::IsDir { .. }) => {
                return Observation::err(format!("edit_file: {e}; give a file path"))
            }
            Err(e) => return Observation::err(format!("edit_file: {e}")),
        };
        let max = EDIT_FILE_MAX_BYTES as u64;
        if rf.len > max {
            return Observation::err(format!(
                "edit_file: {path:?} is {} bytes, over the {max}-byte edit limit",
                rf.len
            ));
        }
        let mut buf = Vec::new();
        if let Err(e) = rf.file.take(max + 1).read_to_end(&mut buf) {
            return Observation::err(format!("edit_file: cannot read {path:?}: {e}"));
        }
        if buf.len() as u64 > max {
            return Observation::err(format!(
                "edit_file: {path:?} is over the {max}-byte edit limit"
            ));
        }
        let Ok(text) = String::from_utf8(buf) else {
            return Observation::err(format!(
                "edit_file: {path:?} is not UTF-8 text; edit_file only edits text files"
            ));
        };
        let at = occurrences(&text, old);
        if at.len() != 1 {
            let n = at.len();
            return Observation::err(if n == 0 {
                format!("edit_file: `old` occurs 0 times in {path:?} (it must match exactly, whitespace and line breaks included); nothing was changed")
            } else {
                format!("edit_file: `old` occurs {n} times in {path:?}; it must occur exactly once: include more of the surrounding text; nothing was changed")
            });
        }
        let i = at[0];
        let mut out = String::with_capacity(text.len() - old.len() + new.len());
        out.push_str(&text[..i]);
        out.push_str(new);
        out.push_str(&text[i + old.len()..]);
        if out.len() > EDIT_FILE_MAX_BYTES {
            return Observation::err(format!(
                "edit_file: the edited file would be {} bytes, over the {EDIT_FILE_MAX_BYTES}-byte limit; nothing was changed",
                out.len()
            ));
        }
        let line = text[..i].matches('\n').count() + 1;
        self.write_through(
            path,
            &out,
            format!(
                "edit_file: replaced 1 occurrence in {path} at line {line}; wrote {} bytes",
                out.len()
            ),
        )
    }

    /// Search the workspace's text files under `path` for `pattern`.
    fn search(&self, pattern: &str, path: &str) -> Observation {
        if pattern.is_empty() {
            return Observation::err("search: `pattern` is empty".into());
        }
        if pattern.chars().count() > SEARCH_PATTERN_MAX_CHARS {
            return Observation::err(format!(
                "search: the pattern is over {SEARCH_PATTERN_MAX_CHARS} characters"
            ));
        }
        let re = match regex::RegexBuilder::new(pattern)
            .size_limit(SEARCH_REGEX_MAX_BYTES)
            .dfa_size_limit(SEARCH_REGEX_MAX_BYTES)
            .build()
        {
            Ok(r) => r,
            Err(e) => {
                return Observation::err(format!(
                    "search: invalid pattern {:?}: {}",
                    clip(pattern),
                    clip(&e.to_string())
                ))
            }
        };
        let mut w = SearchWalk {
            ws: self.workspace,
            re: &re,
            matches: Vec::new(),
            more_matches: false,
            files: 0,
            skipped_binary: 0,
            skipped_large: 0,
            skipped_other: 0,
            files_cut: false,
            depth_cut: false,
            bytes_read: 0,
            bytes_cut: false,
        };
        // The path itself: a file is searched alone, a directory walked.
        // Results name files by their workspace-relative spelling (as
        // list_files does), whatever spelling the call used.
        let start = || {
            self.workspace
                .resolve(path)
                .ok()
                .and_then(|abs| crate::confined::rel_string(self.workspace, &abs))
                .unwrap_or_else(|| ".".into())
        };
        match crate::confined::list_dir(self.workspace, path) {
            Ok(_) => w.dir(&start(), 0),
            Err(crate::confined::FileError::NotADirectory { .. }) => w.file(&start()),
            Err(e) => return Observation::err(format!("search: {e}")),
        }
        let mut out = if w.matches.is_empty() {
            format!(
                "no matches for {:?} in {path} ({} file(s) searched)",
                clip(pattern),
                w.files
            )
        } else {
            w.matches.join("\n")
        };
        if w.more_matches {
            out.push_str(&format!("\n[cut: more than {SEARCH_MAX_MATCHES} matches; only the first {SEARCH_MAX_MATCHES} are shown: narrow the pattern or the path]"));
        }
        if w.files_cut {
            out.push_str(&format!(
                "\n[cut: stopped after {SEARCH_MAX_FILES} files; narrow the path]"
            ));
        }
        if w.bytes_cut {
            out.push_str(&format!(
                "\n[cut: stopped after reading {SEARCH_MAX_TOTAL_BYTES} bytes of files; narrow the path]"
            ));
        }
        if w.depth_cut {
            out.push_str(&format!(
                "\n[cut: directories deeper than {SEARCH_MAX_DEPTH} levels were not searched]"
            ));
        }
        let skipped = w.skipped_binary + w.skipped_large + w.skipped_other;
        if skipped > 0 {
            out.push_str(&format!(
                "\n[skipped {skipped} file(s): {} binary or not UTF-8, {} over {SEARCH_FILE_MAX_BYTES} bytes, {} symlinks or special files]",
                w.skipped_binary, w.skipped_large, w.skipped_other
            ));
        }
        Observation::ok(out)
    }

    /// Run the model's argv with the workspace as working directory, under
    /// the checks' confinement (one spawn path: crate::check).
    fn run_command(&self, argv: &[String]) -> Observation {
        let Some(policy) = self.command else {
            return Observation::err(
                "run_command: the spec lists no program it may run ([tools.run_command] programs); nothing was run".into(),
            );
        };
        let allowed = || policy.programs.join(", ");
        let Some(prog) = argv.first() else {
            return Observation::err(format!(
                "run_command: `argv` is empty; give the program and its arguments, e.g. [\"{}\"]",
                policy
                    .programs
                    .first()
                    .map(String::as_str)
                    .unwrap_or("python3")
            ));
        };
        if argv.len() > RUN_COMMAND_MAX_ARGS {
            return Observation::err(format!(
                "run_command: {} arguments, over the limit of {RUN_COMMAND_MAX_ARGS}; nothing was run",
                argv.len()
            ));
        }
        let bytes: usize = argv.iter().map(|a| a.len() + 1).sum();
        if bytes > RUN_COMMAND_MAX_ARGV_BYTES {
            return Observation::err(format!(
                "run_command: the arguments are {bytes} bytes, over the {RUN_COMMAND_MAX_ARGV_BYTES}-byte limit; nothing was run"
            ));
        }
        if argv.iter().any(|a| a.contains('\0')) {
            return Observation::err(
                "run_command: an argument contains a NUL byte; nothing was run".into(),
            );
        }
        // Deny by default: argv[0] exactly as the spec lists it (a bare name
        // looked up on the checks' PATH, which holds absolute entries only).
        if !policy.programs.iter().any(|p| p == prog) {
            return Observation::err(format!(
                "run_command: program {:?} is not allowed; allowed programs: {}; nothing was run",
                clip(prog),
                allowed()
            ));
        }
        let spec = CheckSpec {
            command: argv.to_vec(),
            timeout_s: policy.timeout_s,
            env: policy.env.clone(),
            network: false,
        };
        let r = crate::check::run_model_command_by(&spec, self.workspace.root(), self.deadline);
        let (status, code) = check_status(&r);
        let shown = clip(&argv.join(" "));
        let text = format!(
            "command `{shown}`: {status}; exit code: {code}\n--- output (tail) ---\n{}",
            r.output
        );
        // It may have written in the workspace whatever its exit: a side
        // effect. One that could not start is a tool error (nothing ran).
        let mut o = if r.could_not_run && r.exit_code.is_none() {
            Observation::err(text)
        } else {
            Observation::ok(text)
        };
        o.side_effect = !(r.could_not_run && r.exit_code.is_none());
        o
    }
}

/// How a confined command ended, in words, and its exit code: run_check's
/// and run_command's status line.
fn check_status(r: &crate::check::CheckResult) -> (String, String) {
    let status = if r.passed {
        "passed".to_string()
    } else if r.cut_by_stop {
        "NOT FINISHED (the run was asked to stop)".to_string()
    } else if r.cut_by_run_clock {
        "NOT FINISHED (the run's wall clock ran out)".to_string()
    } else if r.timed_out {
        "FAILED (timed out)".to_string()
    } else {
        match r.exit_code {
            Some(c) => format!("FAILED (exit code {c})"),
            None => "FAILED (killed or did not start)".to_string(),
        }
    };
    let code = r
        .exit_code
        .map(|c| c.to_string())
        .unwrap_or_else(|| "none".into());
    (status, code)
}

/// Byte offsets of every occurrence of `needle` in `hay`, overlapping ones
/// included ("aa" occurs twice in "aaa": an edit of it is ambiguous).
fn occurrences(hay: &str, needle: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut from = 0;
    while from <= hay.len() {
        let Some(i) = hay[from..].find(needle) else {
            break;
        };
        let at = from + i;
        out.push(at);
        // Next start: one character on (a char boundary).
        from = at + hay[at..].chars().next().map_or(1, char::len_utf8);
    }
    out
}

/// One search call's walk: directories through the confined listing (no
/// symlink followed, .git skipped), files through the confined open (no
/// FIFO, device or symlink read), sorted, every bound counted.
struct SearchWalk<'a> {
    ws: &'a Workspace,
    re: &'a regex::Regex,
    matches: Vec<String>,
    more_matches: bool,
    files: usize,
    skipped_binary: usize,
    skipped_large: usize,
    skipped_other: usize,
    files_cut: bool,
    depth_cut: bool,
    /// File bytes read so far, and whether [`SEARCH_MAX_TOTAL_BYTES`] stopped the walk.
    bytes_read: u64,
    bytes_cut: bool,
}

impl SearchWalk<'_> {
    fn done(&self) -> bool {
        self.more_matches || self.files_cut || self.bytes_cut
    }

    fn dir(&mut self, rel: &str, depth: usize) {
        if self.done() {
            return;
        }
        let Ok(listing) = crate::confined::list_dir(self.ws, rel) else {
            self.skipped_other += 1;
            return;
        };
        let mut entries = listing.entries;
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let prefix = match rel {
            "." => String::new(),
            p => format!("{p}/"),
        };
        for e in entries {
            if self.done() {
                return;
            }
            if e.name.eq_ignore_ascii_case(".git") {
                continue;
            }
            let child = format!("{prefix}{}", e.name);
            if e.is_symlink || (!e.is_dir && !e.is_file) {
                self.skipped_other += 1;
            } else if e.is_dir {
                if depth + 1 > SEARCH_MAX_DEPTH {
                    self.depth_cut = true;
                } else {
                    self.dir(&child, depth + 1);
                }
            } else {
                self.file(&child);
            }
        }
    }

    fn file(&mut self, rel: &str) {
        if self.done() {
            return;
        }
        if self.files >= SEARCH_MAX_FILES {
            self.files_cut = true;
            return;
        }
        let rf = match crate::confined::open_read(self.ws, rel) {
            Ok(f) => f,
            Err(_) => {
                self.skipped_other += 1;
                return;
            }
        };
        if rf.len > SEARCH_FILE_MAX_BYTES {
            self.skipped_large += 1;
            return;
        }
        if self.bytes_read + rf.len > SEARCH_MAX_TOTAL_BYTES {
            self.bytes_cut = true;
            return;
        }
        let mut buf = Vec::new();
        if rf
            .file
            .take(SEARCH_FILE_MAX_BYTES + 1)
            .read_to_end(&mut buf)
            .is_err()
        {
            self.skipped_other += 1;
            return;
        }
        if buf.len() as u64 > SEARCH_FILE_MAX_BYTES {
            self.skipped_large += 1;
            return;
        }
        self.bytes_read += buf.len() as u64;
        self.files += 1;
        if buf.contains(&0) {
            self.skipped_binary += 1;
            return;
        }
        let Ok(text) = String::from_utf8(buf) else {
            self.skipped_binary += 1;
            return;
        };
        for (i, line) in text.lines().enumerate() {
            if !self.re.is_match(line) {
                continue;
            }
            if self.matches.len() >= SEARCH_MAX_MATCHES {
                self.more_matches = true;
                return;
            }
            let shown = crate::text::clip_chars(line, SEARCH_LINE_MAX_CHARS);
            self.matches.push(format!("{rel}:{}: {shown}", i + 1));
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

#[cfg(test)]
mod tests {
    use super::*;

    struct Fx {
        _d: tempfile::TempDir,
        _o: tempfile::TempDir,
        ws: Workspace,
        outbox: Outbox,
        checks: BTreeMap<String, CheckSpec>,
        allow: Vec<String>,
        command: Option<CommandPolicy>,
    }

    impl Fx {
        fn new(allow: &[&str]) -> Fx {
            let d = tempfile::tempdir().unwrap();
            let o = tempfile::tempdir().unwrap();
            let ws = Workspace::open(d.path()).unwrap();
            let outbox = Outbox::new(o.path().join("outbox.jsonl"));
            let mut checks = BTreeMap::new();
            checks.insert(
                "ok".into(),
                CheckSpec {
                    command: vec!["sh".into(), "-c".into(), "echo fine".into()],
                    timeout_s: 5,
                    env: Default::default(),
                    network: false,
                },
            );
            checks.insert(
                "bad".into(),
                CheckSpec {
                    command: vec!["sh".into(), "-c".into(), "echo nope; exit 3".into()],
                    timeout_s: 5,
                    env: Default::default(),
                    network: false,
                },
            );
            Fx {
                _d: d,
                _o: o,
                ws,
                outbox,
                checks,
                allow: allow.iter().map(|s| s.to_string()).collect(),
                command: None,
            }
        }
        /// With run_command allowed to run `programs`, killed after `timeout_s`.
        fn with_programs(programs: &[&str], timeout_s: u64) -> Fx {
            let mut fx = Fx::new(&ALL_TOOL_NAMES);
            fx.command = Some(CommandPolicy {
                programs: programs.iter().map(|s| s.to_string()).collect(),
                timeout_s,
                env: Default::default(),
            });
            fx
        }
        fn put(&self, rel: &str, content: &[u8]) {
            let p = self.ws.root().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
        fn get(&self, rel: &str) -> String {
            std::fs::read_to_string(self.ws.root().join(rel)).unwrap()
        }
        fn tb(&self) -> ToolBox<'_> {
            ToolBox {
                workspace: &self.ws,
                outbox: &self.outbox,
                checks: &self.checks,
                allowlist: &self.allow,
                deadline: None,
                command: self.command.as_ref(),
            }
        }
        fn call(&self, name: &str, input: Value) -> Observation {
            self.tb().dispatch(&ToolCall {
                id: "c1".into(),
                name: name.into(),
                input,
            })
        }
    }

    #[test]
    fn allowlist_validation() {
        assert!(validate_allowlist(&["read_file".into(), "run_check".into()]).is_ok());
        let e = validate_allowlist(&["read_file".into(), "shell".into()]).unwrap_err();
        assert!(e.contains("\"shell\"") && e.contains("write_file"), "{e}");
    }

    #[test]
    fn defs_only_allowlisted_in_fixed_order() {
        let fx = Fx::new(&["run_check", "read_file", "bogus"]);
        let defs = fx.tb().defs();
        let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, vec!["read_file", "run_check"]);
        assert_eq!(defs[0].input_schema["required"], json!(["path"]));
        assert_eq!(
            defs[1].input_schema["properties"]["name"]["enum"],
            json!(["bad", "ok"])
        );
        let all = Fx::new(&ALL_TOOL_NAMES);
        let defs = all.tb().defs();
        assert_eq!(defs.len(), 9);
        for d in defs {
            assert_eq!(d.input_schema["type"], "object", "{}", d.name);
            assert!(!d.description.is_empty());
        }
    }

    #[test]
    fn unknown_or_unlisted_tool_runs_nothing() {
        let fx = Fx::new(&["read_file"]);
        let o = fx.call("write_file", json!({"path":"x","content":"y"}));
        assert!(o.is_error && !o.side_effect);
        assert_eq!(
            o.content,
            "no such tool: write_file; available tools: read_file"
        );
        assert!(!fx.ws.root().join("x").exists());
        let o = fx.call("rm_rf", json!({}));
        assert!(o.is_error && o.content.starts_with("no such tool: rm_rf"));
    }

    #[test]
    fn bad_arguments_explain_expected() {
        let fx = Fx::new(&ALL_TOOL_NAMES);
        for input in [
            json!({"__unparsed": "{path: x"}),
            json!("x"),
            json!({}),
            json!({"path": 3}),
            json!({"path":"a","extra":1}),
        ] {
            let o = fx.call("read_file", input.clone());
            assert!(o.is_error, "{input}");
            assert!(
                o.content.contains(
                    "expected {\"path\": string, \"start_line\"?: integer, \"end_line\"?: integer}"
                ),
                "{}",
                o.content
            );
        }
        let o = fx.call("post_message", json!({"channel":"#eng"}));
        assert!(o.is_error && o.content.contains("idempotency_key"));
        assert_eq!(fx.outbox.entries().unwrap().len(), 0);
    }

    #[test]
    fn write_read_list_roundtrip() {
        let fx = Fx::new(&ALL_TOOL_NAMES);
        let o = fx.call(
            "write_file",
            json!({"path":"src/deep/a.txt","content":"héllo"}),
        );
        assert!(!o.is_error && o.side_effect, "{o:?}");
        let o = fx.call("read_file", json!({"path":"src/deep/a.txt"}));
        assert_eq!(
            o,
            Observation {
                content: "héllo".into(),
                is_error: false,
                side_effect: false,
                posted_key: None,
                wrote: vec![],
                in_doubt: vec![],
            }
        );
        fx.call("write_file", json!({"path":"b.txt","content":""}));
        let o = fx.call("list_files", json!({}));
        assert_eq!(o.content, "b.txt\nsrc/");
        let o = fx.call("list_files", json!({"path":"src/deep"}));
        assert_eq!(o.content, "src/deep/a.txt");
        let o = fx.call("list_files", json!({"path":"b.txt"}));
        assert!(o.is_error);
        let o = fx.call("read_file", json!({"path":"src"}));
        assert!(o.is_error && o.content.contains("directory"));
        let o = fx.call("read_file", json!({"path":"missing"}));
        assert!(o.is_error && o.content.contains("does not exist"));
    }

    #[test]
    fn list_hides_git_and_bounds_entries() {
        let fx = Fx::new(&ALL_TOOL_NAMES);
        std::fs::create_dir(fx.ws.root().join(".git")).unwrap();
        for i in 0..(LIST_MAX_ENTRIES + 5) {
            std::fs::write(fx.ws.root().join(format!("f{i:05}")), "").unwrap();
        }
        let o = fx.call("list_files", json!({"path":"."}));
        assert!(!o.content.contains(".git"));
        assert_eq!(o.content.lines().count(), LIST_MAX_ENTRIES + 1);
        assert!(o.content.ends_with("... and 5 more entries not shown"));
    }

    #[test]
    fn confinement_applies_to_every_tool() {
        let fx = Fx::new(&ALL_TOOL_NAMES);
        for (tool, input) in [
            ("read_file", json!({"path":"/etc/passwd"})),
            ("read_file", json!({"path":"../x"})),
            ("write_file", json!({"path":".git/config","content":"x"})),
            ("write_file", json!({"path":"/tmp/evil","content":"x"})),
            ("list_files", json!({"path":".."})),
        ] {
            let o = fx.call(tool, input.clone());
            assert!(o.is_error && !o.side_effect, "{tool} {input}: {o:?}");
        }
        assert!(!fx.ws.root().join(".git/config").exists());
    }

    #[test]
    fn limits_and_non_utf8() {
        let fx = Fx::new(&ALL_TOOL_NAMES);
        std::fs::write(fx.ws.root().join("bin"), b"\xff\x00\xfe").unwrap();
        let o = fx.call("read_file", json!({"path":"bin"}));
        assert!(o.is_error && o.content.contains("UTF-8"));
        std::fs::write(
            fx.ws.root().join("big"),
            vec![b'a'; READ_MAX_BYTES as usize + 1],
        )
        .unwrap();
        assert!(fx.call("read_file", json!({"path":"big"})).is_error);
        let o = fx.call(
            "write_file",
            json!({"path":"w","content":"a".repeat(WRITE_MAX_BYTES + 1)}),
        );
        assert!(o.is_error && !o.side_effect);
        assert!(!fx.ws.root().join("w").exists());
    }

    #[test]
    fn post_message_appends_every_time() {
        let fx = Fx::new(&ALL_TOOL_NAMES);
        let args = json!({"channel":"#eng","text":"summary","idempotency_key":"sum-1"});
        let o = fx.call("post_message", args.clone());
        assert!(!o.is_error && o.side_effect);
        assert_eq!(o.posted_key.as_deref(), Some("sum-1"));
        fx.call("post_message", args);
        assert_eq!(fx.outbox.count_key("sum-1"), 2);
        let o = fx.call(
            "post_message",
            json!({"channel":"#eng","text":" ","idempotency_key":"k"}),
        );
        assert!(o.is_error && o.posted_key.is_none());
        let o = fx.call("post_message", json!({"channel":"#eng","text":"x","idempotency_key":"k".repeat(POST_KEY_MAX_CHARS + 1)}));
        assert!(o.is_error);
        assert_eq!(fx.outbox.entries().unwrap().len(), 2);
    }

    #[test]
    fn apply_migration_tool() {
        let fx = Fx::new(&ALL_TOOL_NAMES);
        let o = fx.call("apply_migration", json!({"name":"../x"}));
        assert!(o.is_error && !o.side_effect);
        let o = fx.call("apply_migration", json!({"name":"0042"}));
        assert!(
            o.is_error && !o.side_effect && o.content.contains("migrations/0042.json"),
            "{o:?}"
        );
        fx.call(
            "write_file",
            json!({"path":"migrations/0042.json","content":r#"{"steps":[{"path":"db/1.sql","content":"a"},{"path":"db/2.sql","content":"b"}]}"#}),
        );
        let o = fx.call("apply_migration", json!({"name":"0042"}));
        assert!(!o.is_error && o.side_effect, "{o:?}");
        assert!(o.content.contains("db/1.sql, db/2.sql"), "{}", o.content);
        assert_eq!(
            migration::state(&fx.ws, "0042"),
            migration::MigrationState::Done
        );
    }

    #[test]
    fn run_check_tool() {
        let fx = Fx::new(&ALL_TOOL_NAMES);
        let o = fx.call("run_check", json!({"name":"ok"}));
        assert!(!o.is_error && !o.side_effect);
        assert!(
            o.content.starts_with("check ok: passed; exit code: 0") && o.content.contains("fine"),
            "{}",
            o.content
        );
        let o = fx.call("run_check", json!({"name":"bad"}));
        assert!(
            o.content.contains("FAILED (exit code 3)") && o.content.contains("nope"),
            "{}",
            o.content
        );
        let o = fx.call("run_check", json!({"name":"rm -rf /"}));
        assert!(
            o.is_error && o.content.contains("defined checks: bad, ok"),
            "{}",
            o.content
        );
    }

    #[test]
    fn run_check_tool_is_bounded_by_the_run_clock() {
        let mut fx = Fx::new(&ALL_TOOL_NAMES);
        fx.checks.insert(
            "slow".into(),
            CheckSpec {
                command: vec!["sleep".into(), "30".into()],
                timeout_s: 30,
                env: Default::default(),
                network: false,
            },
        );
        let mut tb = fx.tb();
        tb.deadline = Some(std::time::Instant::now() + std::time::Duration::from_millis(300));
        let t0 = std::time::Instant::now();
        let o = tb.dispatch(&ToolCall {
            id: "c1".into(),
            name: "run_check".into(),
            input: json!({"name": "slow"}),
        });
        // Bounded: it came back long before the check's own 30 s.
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(20),
            "{:?}",
            t0.elapsed()
        );
        assert!(
            !o.is_error
                && o.content
                    .contains("NOT FINISHED (the run's wall clock ran out)"),
            "{}",
            o.content
        );
    }

    #[test]
    fn observation_is_bounded() {
        let s = bound("é".repeat(OBSERVATION_MAX_BYTES));
        assert!(s.len() <= OBSERVATION_MAX_BYTES + 30);
        assert!(s.ends_with("[output truncated]"));
    }

    proptest::proptest! {
        #[test]
        fn dispatch_never_panics(name in "[a-z_]{0,12}", path in ".{0,20}", content in ".{0,20}") {
            let fx = Fx::new(&ALL_TOOL_NAMES);
            for n in ALL_TOOL_NAMES.iter().copied().chain([name.as_str()]) {
                if n == "run_check" { continue; } // spawns a process; covered above
                let _ = fx.call(n, json!({"path": path, "content": content}));
                let _ = fx.call(n, json!({"name": path}));
                let _ = fx.call(n, json!({"__unparsed": content}));
            }
        }
    }

    // ---- the coding tools (edit_file, search, ranged read_file, run_command)

    fn outside_dir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    fn mkfifo(p: &std::path::Path) {
        nix::unistd::mkfifo(p, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    }

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn coding_tools_are_opt_in_and_read_file_is_described_as_before_without_them() {
        // The default allowlist is the six tools of before: a spec written
        // before the coding tools sends the same tool definitions.
        assert_eq!(
            DEFAULT_TOOL_NAMES,
            [
                "read_file",
                "write_file",
                "list_files",
                "post_message",
                "apply_migration",
                "run_check"
            ]
        );
        let old = Fx::new(&DEFAULT_TOOL_NAMES);
        let defs = old.tb().defs();
        assert_eq!(defs[0].name, "read_file");
        assert_eq!(
            defs[0].input_schema,
            object(
                json!({"path": {"type": "string", "description": "file path relative to the workspace root"}}),
                &["path"]
            )
        );
        assert_eq!(defs[0].description, format!("Read a UTF-8 text file from the workspace (at most {READ_MAX_BYTES} bytes). Paths are relative to the workspace root."));
        // With a coding tool allowed, the range is offered.
        let new = Fx::new(&["read_file", "edit_file"]);
        let defs = new.tb().defs();
        assert!(defs[0].input_schema["properties"]["start_line"].is_object());
        assert!(defs[0].description.contains("start_line"));
        // run_command's description names its programs and timeout.
        let fx = Fx::with_programs(&["python3", "make"], 7);
        let d = fx
            .tb()
            .defs()
            .into_iter()
            .find(|d| d.name == "run_command")
            .unwrap();
        assert!(
            d.description.contains("python3, make") && d.description.contains("7 s"),
            "{}",
            d.description
        );
    }

    #[test]
    fn read_file_by_range_says_which_lines_of_how_many() {
        let fx = Fx::new(&ALL_TOOL_NAMES);
        fx.put("a.txt", numbered(10).as_bytes());
        let o = fx.call(
            "read_file",
            json!({"path":"a.txt","start_line":3,"end_line":5}),
        );
        assert!(!o.is_error && !o.side_effect, "{o:?}");
        assert_eq!(
            o.content,
            "[lines 3-5 of 10 in a.txt]\nline 3\nline 4\nline 5\n"
        );
        // Only start_line: to the end; only end_line: from the first line.
        let o = fx.call("read_file", json!({"path":"a.txt","start_line":9}));
        assert_eq!(o.content, "[lines 9-10 of 10 in a.txt]\nline 9\nline 10\n");
        let o = fx.call("read_file", json!({"path":"a.txt","end_line":1}));
        assert_eq!(o.content, "[lines 1-1 of 10 in a.txt]\nline 1\n");
        // An end past the last line is the last line.
        let o = fx.call(
            "read_file",
            json!({"path":"a.txt","start_line":10,"end_line":99}),
        );
        assert_eq!(o.content, "[lines 10-10 of 10 in a.txt]\nline 10\n");
        // A last line without a newline is a line.
        fx.put("b.txt", b"x\ny");
        let o = fx.call("read_file", json!({"path":"b.txt","start_line":2}));
        assert_eq!(o.content, "[lines 2-2 of 2 in b.txt]\ny");
        // The range without one: exactly as before.
        let o = fx.call("read_file", json!({"path":"a.txt"}));
        assert_eq!(o.content, numbered(10));
    }

    #[test]
    fn read_file_range_errors() {
        let fx = Fx::new(&ALL_TOOL_NAMES);
        fx.put("a.txt", numbered(10).as_bytes());
        for (input, says) in [
            (json!({"path":"a.txt","start_line":0}), "count from 1"),
            (json!({"path":"a.txt","end_line":0}), "count from 1"),
            (
                json!({"path":"a.txt","start_line":5,"end_line":4}),
                "before start_line",
            ),
            (
                json!({"path":"a.txt","start_line":11}),
                "past the end of \"a.txt\", which has 10 line(s)",
            ),
            (json!({"path":"a.txt","start_line":-1}), "bad arguments"),
            (json!({"path":"a.txt","start_line":"1"}), "bad arguments"),
            (json!({"path":"../a.txt","start_line":1}), "\"..\""),
            (json!({"path":"/etc/passwd","start_line":1}), "absolute"),
            (json!({"path":"nope","start_line":1}), "does not exist"),
        ] {
            let o = fx.call("read_file", input.clone());
            assert!(
                o.is_error && o.content.contains(says),
                "{input}: {}",
                o.content
            );
        }
        fx.put("bin", b"ok\n\xff\xfe\n");
        let o = fx.call("read_file", json!({"path":"bin","start_line":1}));
        assert!(o.is_error && o.content.contains("UTF-8"), "{}", o.content);
        // The valid lines of a partly binary file can still be read.
        let o = fx.call("read_file", json!({"path":"bin","end_line":1}));
        assert_eq!(o.content, "[lines 1-1 of 2 in bin]\nok\n");
    }

    #[test]
    fn a_file_over_the_read_limit_is_read_by_range_and_bounded() {
        let fx = Fx::new(&ALL_TOOL_NAMES);
        // 60,000 lines of 10 bytes: 600 kB, over READ_MAX_BYTES.
        let big: String = (1..=60_000).map(|i| format!("{i:09}\n")).collect();
        assert!(big.len() as u64 > READ_MAX_BYTES);
        fx.put("big.txt", big.as_bytes());
        let whole = fx.call("read_file", json!({"path":"big.txt"}));
        assert!(whole.is_error && whole.content.contains("read limit"));
        let o = fx.call(
            "read_file",
            json!({"path":"big.txt","start_line":59999,"end_line":60000}),
        );
        assert_eq!(
            o.content,
            "[lines 59999-60000 of 60000 in big.txt]\n000059999\n000060000\n"
        );
        // A range longer than READ_RANGE_MAX_LINES is cut there, and says so.
        let o = fx.call(
            "read_file",
            json!({"path":"big.txt","start_line":1,"end_line":50000}),
        );
        let first = o.content.lines().next().unwrap();
        assert_eq!(
            first,
            format!("[lines 1-{READ_RANGE_MAX_LINES} of 60000 in big.txt; at most {READ_RANGE_MAX_LINES} lines per call, continue with start_line {}]", READ_RANGE_MAX_LINES + 1)
        );
        assert_eq!(o.content.lines().count() as u64, READ_RANGE_MAX_LINES + 1);
        // Long lines: the byte bound cuts first, and says where to go on.
        let long: String = (0..100)
            .map(|_| format!("{}\n", "x".repeat(9999)))
            .collect();
        fx.put("long.txt", long.as_bytes());
        let o = fx.call("read_file", json!({"path":"long.txt","start_line":1}));
        assert!(!o.is_error);
        assert!(o.content.len() as u64 <= READ_MAX_BYTES + 200);
        assert!(
            o.content
                .starts_with("[lines 1-26 of 100 in long.txt; cut at the 262144-byte read limit, continue with start_line 27]"),
            "{}",
            &o.content[..200]
        );
        // One line alone over the limit: an error, not half a line.
        let mut huge = "y".repeat(READ_MAX_BYTES as usize + 10);
        huge.push('\n');
        fx.put("huge.txt", huge.as_bytes());
        let o = fx.call("read_file", json!({"path":"huge.txt","start_line":1}));
        assert!(
            o.is_error && o.content.contains("alone is over"),
            "{}",
            o.content
        );
    }

    #[test]
    fn ranged_read_holds_against_links_and_fifos() {
        let out = outside_dir();
        std::fs::write(out.path().join("secret"), "s3cret\n").unwrap();
        let fx = Fx::new(&ALL_TOOL_NAMES);
        std::os::unix::fs::symlink(out.path().join("secret"), fx.ws.root().join("s")).unwrap();
        let o = fx.call("read_file", json!({"path":"s","start_line":1}));
        assert!(o.is_error && !o.content.contains("s3cret"), "{}", o.content);
        mkfifo(&fx.ws.root().join("pipe"));
        let o = fx.call("read_file", json!({"path":"pipe","start_line":1}));
        assert!(o.is_error && o.content.contains("FIFO"), "{}", o.content);
    }

    #[test]
    fn edit_file_replaces_the_one_occurrence_through_the_confined_write() {
        let fx = Fx::new(&ALL_TOOL_NAMES);
        fx.put("src/p.py", b"a = 1\nb = 2\nc = 3\n");
        use std::os::unix::fs::MetadataExt;
        let ino = std::fs::metadata(fx.ws.root().join("src/p.py"))
            .unwrap()
            .ino();
        let o = fx.call(
            "edit_file",
            json!({"path":"src/p.py","old":"b = 2","new":"b = 20"}),
        );
        assert!(!o.is_error && o.side_effect, "{o:?}");
        assert_eq!(o.wrote, vec!["src/p.py".to_string()]);
        assert!(o.content.contains("at line 2"), "{}", o.content);
        assert_eq!(fx.get("src/p.py"), "a = 1\nb = 20\nc = 3\n");
        let now = std::fs::metadata(fx.ws.root().join("src/p.py"))
            .unwrap()
            .ino();
        assert_ne!(ino, now, "renamed into place, never written in place");
        // Deleting text: new may be empty.
        let o = fx.call(
            "edit_file",
            json!({"path":"src/p.py","old":"a = 1\n","new":""}),
        );
        assert!(!o.is_error, "{o:?}");
        assert_eq!(fx.get("src/p.py"), "b = 20\nc = 3\n");
    }

    #[test]
    fn edit_file_refuses_ambiguity_and_absence_and_changes_nothing() {
        let fx = Fx::new(&ALL_TOOL_NAMES);
        let before = "x = 1\nx = 1\naaa\n";
        fx.put("f.py", before.as_bytes());
        for (old, says) in [
            ("x = 1", "occurs 2 times"),
            ("aa", "occurs 2 times"), // overlapping in "aaa": ambiguous
            ("x = 2", "occurs 0 times"),
            ("X = 1", "occurs 0 times"),
            ("", "is empty"),
        ] {
            let o = fx.call("edit_file", json!({"path":"f.py","old":old,"new":"y"}));
            assert!(
                o.is_error && !o.side_effect && o.wrote.is_empty(),
                "{old:?}: {o:?}"
            );
            assert!(o.content.contains(says), "{old:?}: {}", o.content);
            assert_eq!(fx.get("f.py"), before);
        }
        let o = fx.call("edit_file", json!({"path":"f.py","old":"aaa","new":"aaa"}));
        assert!(o.is_error && o.content.contains("the same"));
        assert_eq!(occurrences("aaaa", "aa"), vec![0, 1, 2]);
        assert_eq!(occurrences("é-é", "é"), vec![0, 3]);
        assert_eq!(occurrences("abc", "d"), Vec::<usize>::new());
        let o = fx.call("edit_file", json!({"path":"f.py","old":"x"}));
        assert!(
            o.is_error
                && o.content
                    .contains("expected {\"path\": string, \"old\": string, \"new\": string}"),
            "{}",
            o.content
        );
    }

    #[test]
    fn edit_file_holds_against_hostile_paths() {
        let out = outside_dir();
        let target = out.path().join("outside.txt");
        std::fs::write(&target, "keep me\n").unwrap();
        let fx = Fx::new(&ALL_TOOL_NAMES);
        // A hard link to a file outside: refused, the outside file intact.
        std::fs::hard_link(&target, fx.ws.root().join("hl.txt")).unwrap();
        let o = fx.call(
            "edit_file",
            json!({"path":"hl.txt","old":"keep","new":"lost"}),
        );
        assert!(
            o.is_error && o.content.contains("hard links"),
            "{}",
            o.content
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me\n");
        // A symlink leading outside, a `..` path, an absolute path, .git.
        std::os::unix::fs::symlink(&target, fx.ws.root().join("sl.txt")).unwrap();
        std::fs::create_dir(fx.ws.root().join(".git")).unwrap();
        std::fs::write(fx.ws.root().join(".git/config"), "keep\n").unwrap();
        for path in [
            "sl.txt".to_string(),
            "../outside.txt".to_string(),
            target.display().to_string(),
            ".git/config".to_string(),
        ] {
            let o = fx.call("edit_file", json!({"path":path,"old":"keep","new":"lost"}));
            assert!(o.is_error && !o.side_effect, "{path}: {o:?}");
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me\n");
        assert_eq!(fx.get(".git/config"), "keep\n");
        // A FIFO: refused without blocking; a directory; a binary file.
        mkfifo(&fx.ws.root().join("pipe"));
        let o = fx.call("edit_file", json!({"path":"pipe","old":"a","new":"b"}));
        assert!(o.is_error && o.content.contains("FIFO"), "{}", o.content);
        std::fs::create_dir(fx.ws.root().join("d")).unwrap();
        assert!(
            fx.call("edit_file", json!({"path":"d","old":"a","new":"b"}))
                .is_error
        );
        fx.put("bin", b"a\xff\xfe");
        let o = fx.call("edit_file", json!({"path":"bin","old":"a","new":"b"}));
        assert!(o.is_error && o.content.contains("UTF-8"), "{}", o.content);
        // Too large before, or after the edit.
        fx.put("big", "a".repeat(EDIT_FILE_MAX_BYTES + 1).as_bytes());
        let o = fx.call("edit_file", json!({"path":"big","old":"b","new":"c"}));
        assert!(
            o.is_error && o.content.contains("edit limit"),
            "{}",
            o.content
        );
        fx.put(
            "near",
            format!("{}b", "a".repeat(EDIT_FILE_MAX_BYTES - 1)).as_bytes(),
        );
        let o = fx.call("edit_file", json!({"path":"near","old":"b","new":"cc"}));
        assert!(
            o.is_error && !o.side_effect && o.content.contains("would be"),
            "{}",
            o.content
        );
    }

    #[test]
    fn search_finds_lines_as_path_line_text_in_sorted_order() {
        let fx = Fx::new(&ALL_TOOL_NAMES);
        fx.put("src/b.py", b"def price():\n    return 1\n");
        fx.put("src/a.py", b"x = 1\ndef total():\n    pass\n");
        fx.put("README", b"prose: def is not at the start\n");
        let o = fx.call("search", json!({"pattern": "^def "}));
        assert!(!o.is_error && !o.side_effect, "{o:?}");
        assert_eq!(
            o.content,
            "src/a.py:2: def total():\nsrc/b.py:1: def price():"
        );
        // Scoped to a directory or one file; a regex with classes.
        let o = fx.call(
            "search",
            json!({"pattern": "def \\w+\\(", "path": "src/b.py"}),
        );
        assert_eq!(o.content, "src/b.py:1: def price():");
        let o = fx.call("search", json!({"pattern": "def", "path": "./src//"}));
        assert_eq!(
            o.content,
            "src/a.py:2: def total():\nsrc/b.py:1: def price():"
        );
        // Through a symlink to a directory inside: named by the real path.
        std::os::unix::fs::symlink("src", fx.ws.root().join("code")).unwrap();
        let o = fx.call("search", json!({"pattern": "price", "path": "code"}));
        assert_eq!(o.content, "src/b.py:1: def price():");
        let o = fx.call("search", json!({"pattern": "zzz"}));
        assert!(
            !o.is_error
                && o.content
                    .starts_with("no matches for \"zzz\" in . (3 file(s) searched)"),
            "{}",
            o.content
        );
    }

    #[test]
    fn search_skips_git_links_fifos_binaries_and_large_files() {
        let out = outside_dir();
        std::fs::write(out.path().join("secret.txt"), "NEEDLE outside\n").unwrap();
        let fx = Fx::new(&ALL_TOOL_NAMES);
        fx.put("ok.txt", b"NEEDLE inside\n");
        fx.put(".git/config", b"NEEDLE in git\n");
        fx.put("sub/.GIT/x", b"NEEDLE in git too\n");
        fx.put("bin.dat", b"NEEDLE\0binary\n");
        fx.put("latin1.txt", b"NEEDLE \xe9\n");
        let mut big = "NEEDLE big\n".repeat(1 + SEARCH_FILE_MAX_BYTES as usize / 11);
        big.push_str("x\n");
        fx.put("big.txt", big.as_bytes());
        std::os::unix::fs::symlink(out.path(), fx.ws.root().join("outdir")).unwrap();
        std::os::unix::fs::symlink(out.path().join("secret.txt"), fx.ws.root().join("outfile"))
            .unwrap();
        std::os::unix::fs::symlink("ok.txt", fx.ws.root().join("inlink")).unwrap();
        std::os::unix::fs::symlink(".", fx.ws.root().join("loop")).unwrap();
        mkfifo(&fx.ws.root().join("pipe"));
        let o = fx.call("search", json!({"pattern": "NEEDLE"}));
        assert!(!o.is_error, "{o:?}");
        let lines: Vec<&str> = o.content.lines().collect();
        assert_eq!(lines[0], "ok.txt:1: NEEDLE inside");
        assert!(!o.content.contains("outside") && !o.content.contains("in git"));
        assert!(!o.content.contains("bin.dat") && !o.content.contains("big.txt:"));
        assert_eq!(
            lines[1],
            format!("[skipped 8 file(s): 2 binary or not UTF-8, 1 over {SEARCH_FILE_MAX_BYTES} bytes, 5 symlinks or special files]")
        );
        assert_eq!(lines.len(), 2, "{}", o.content);
        // A path that leaves the workspace is refused like any tool's.
        for p in ["..", "../x", "/etc", "outdir", ".git"] {
            let o = fx.call("search", json!({"pattern": "NEEDLE", "path": p}));
            assert!(
                o.is_error && !o.content.contains("NEEDLE"),
                "{p}: {}",
                o.content
            );
        }
    }

    #[test]
    fn search_refuses_bad_patterns_and_bounds_its_output() {
        let fx = Fx::new(&ALL_TOOL_NAMES);
        for (pat, says) in [
            ("(unclosed", "invalid pattern"),
            ("a{1000}{1000}", "invalid pattern"), // over the compiled size limit
            ("", "empty"),
        ] {
            let o = fx.call("search", json!({"pattern": pat}));
            assert!(
                o.is_error && o.content.contains(says),
                "{pat}: {}",
                o.content
            );
        }
        let long = "a".repeat(SEARCH_PATTERN_MAX_CHARS + 1);
        assert!(fx.call("search", json!({"pattern": long})).is_error);
        // A pattern that backtracks exponentially elsewhere: linear here.
        fx.put("evil.txt", format!("{}!\n", "a".repeat(50_000)).as_bytes());
        let t0 = std::time::Instant::now();
        let o = fx.call("search", json!({"pattern": "^(a+)+$"}));
        assert!(
            !o.is_error && o.content.starts_with("no matches"),
            "{}",
            &o.content[..80.min(o.content.len())]
        );
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            t0.elapsed()
        );
        // Too many matches: cut, and says so; long lines clipped.
        fx.put(
            "many.txt",
            "hit\n".repeat(SEARCH_MAX_MATCHES + 5).as_bytes(),
        );
        fx.put("wide.txt", format!("hit{}\n", "w".repeat(5000)).as_bytes());
        let o = fx.call("search", json!({"pattern": "hit"}));
        let lines: Vec<&str> = o.content.lines().collect();
        assert_eq!(lines.len(), SEARCH_MAX_MATCHES + 1);
        assert!(lines
            .last()
            .unwrap()
            .starts_with(&format!("[cut: more than {SEARCH_MAX_MATCHES} matches")));
        let o = fx.call("search", json!({"pattern": "hit", "path": "wide.txt"}));
        assert_eq!(
            o.content,
            format!(
                "wide.txt:1: hit{}...",
                "w".repeat(SEARCH_LINE_MAX_CHARS - 3)
            )
        );
    }

    #[test]
    fn search_stops_at_its_file_depth_and_byte_bounds_and_says_so() {
        let fx = Fx::new(&ALL_TOOL_NAMES);
        for i in 0..(SEARCH_MAX_FILES + 3) {
            fx.put(&format!("many/f{i:05}.txt"), b"nothing here\n");
        }
        let o = fx.call("search", json!({"pattern": "zzz", "path": "many"}));
        assert!(
            o.content.starts_with(&format!(
                "no matches for \"zzz\" in many ({SEARCH_MAX_FILES} file(s) searched)"
            )),
            "{}",
            o.content
        );
        assert!(
            o.content.ends_with(&format!(
                "[cut: stopped after {SEARCH_MAX_FILES} files; narrow the path]"
            )),
            "{}",
            o.content
        );
        let deep: String = (0..=SEARCH_MAX_DEPTH).map(|i| format!("d{i}/")).collect();
        fx.put(&format!("deep/{deep}x.txt"), b"hit\n");
        fx.put("deep/d0/y.txt", b"hit\n");
        let o = fx.call("search", json!({"pattern": "hit", "path": "deep"}));
        assert_eq!(
            o.content,
            format!("deep/d0/y.txt:1: hit\n[cut: directories deeper than {SEARCH_MAX_DEPTH} levels were not searched]")
        );
        let mb = vec![b'a'; SEARCH_FILE_MAX_BYTES as usize - 1];
        for i in 0..=(SEARCH_MAX_TOTAL_BYTES / SEARCH_FILE_MAX_BYTES) {
            fx.put(&format!("bulk/b{i:03}"), &mb);
        }
        let o = fx.call("search", json!({"pattern": "zzz", "path": "bulk"}));
        assert!(
            o.content.ends_with(&format!("[cut: stopped after reading {SEARCH_MAX_TOTAL_BYTES} bytes of files; narrow the path]")),
            "{}",
            o.content
        );
    }

    #[test]
    fn run_command_refuses_what_the_spec_does_not_list_and_runs_nothing() {
        let fx = Fx::with_programs(&["sh"], 10);
        for argv in [
            json!(["touch", "ran"]),
            json!(["/bin/touch", "ran"]),
            json!(["/bin/sh", "-c", "touch ran"]),
            json!(["./sh", "-c", "touch ran"]),
            json!(["SH", "-c", "touch ran"]),
        ] {
            let o = fx.call("run_command", json!({ "argv": argv }));
            assert!(o.is_error && !o.side_effect, "{argv}: {o:?}");
            assert!(
                o.content.contains("is not allowed; allowed programs: sh"),
                "{}",
                o.content
            );
        }
        for (argv, says) in [
            (json!([]), "empty"),
            (json!(["sh", "-c", "touch ran\u{0}"]), "NUL"),
            (json!(vec!["sh"; RUN_COMMAND_MAX_ARGS + 1]), "arguments"),
            (
                json!(["sh", "x".repeat(RUN_COMMAND_MAX_ARGV_BYTES)]),
                "bytes",
            ),
            (json!("sh -c 'touch ran'"), "bad arguments"),
        ] {
            let o = fx.call("run_command", json!({ "argv": argv }));
            assert!(
                o.is_error && o.content.contains(says),
                "{argv}: {}",
                o.content
            );
        }
        let o = fx.call("run_command", json!({"cmd": ["sh"]}));
        assert!(o.is_error && o.content.contains("expected {\"argv\": [string, ...]}"));
        // No policy at all (allowed, but no programs): nothing runs.
        let none = Fx::new(&ALL_TOOL_NAMES);
        let o = none.call("run_command", json!({"argv": ["sh", "-c", "touch ran"]}));
        assert!(
            o.is_error && o.content.contains("lists no program"),
            "{}",
            o.content
        );
        // Not on the allowlist of tools: no such tool.
        let off = Fx::new(&["read_file"]);
        let o = off.call("run_command", json!({"argv": ["sh", "-c", "touch ran"]}));
        assert!(o.is_error && o.content.starts_with("no such tool: run_command"));
        assert!(!fx.ws.root().join("ran").exists());
        assert!(!none.ws.root().join("ran").exists());
        assert!(!off.ws.root().join("ran").exists());
    }

    #[test]
    fn run_command_runs_in_the_workspace_and_reports_like_a_check() {
        let fx = Fx::with_programs(&["sh", "no-such-program-xyz"], 10);
        let o = fx.call(
            "run_command",
            json!({"argv": ["sh", "-c", "pwd; echo out > made.txt; echo err >&2; exit 4"]}),
        );
        assert!(!o.is_error && o.side_effect, "{o:?}");
        assert!(
            o.content.starts_with("command `sh -c pwd; echo out > made.txt; echo err >&2; exit 4`: FAILED (exit code 4); exit code: 4"),
            "{}",
            o.content
        );
        assert!(
            o.content
                .contains(&format!("{}\nerr\n", fx.ws.root().display())),
            "{}",
            o.content
        );
        assert_eq!(fx.get("made.txt"), "out\n");
        let o = fx.call("run_command", json!({"argv": ["sh", "-c", "echo fine"]}));
        assert!(o.content.contains("passed; exit code: 0") && o.content.contains("fine"));
        // Listed but not installed: a tool error, nothing ran.
        let o = fx.call("run_command", json!({"argv": ["no-such-program-xyz"]}));
        assert!(
            o.is_error && !o.side_effect && o.content.contains("cannot start"),
            "{}",
            o.content
        );
        // Output is clipped to the checks' bound (its tail kept).
        let o = fx.call(
            "run_command",
            json!({"argv": ["sh", "-c", "i=0; while [ $i -lt 3000 ]; do echo line-$i; i=$((i+1)); done"]}),
        );
        let tail = o.content.split("--- output (tail) ---\n").nth(1).unwrap();
        assert_eq!(tail.len(), crate::check::CHECK_OUTPUT_MAX_BYTES);
        assert!(tail.ends_with("line-2999\n"));
    }

    #[test]
    fn run_command_past_its_timeout_or_the_run_clock_is_killed() {
        let fx = Fx::with_programs(&["sh"], 1);
        let t0 = std::time::Instant::now();
        let o = fx.call(
            "run_command",
            json!({"argv": ["sh", "-c", "echo started; sleep 30 & exec sleep 31"]}),
        );
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(10),
            "{:?}",
            t0.elapsed()
        );
        assert!(
            !o.is_error
                && o.content.contains("FAILED (timed out)")
                && o.content.contains("started"),
            "{}",
            o.content
        );
        // The run's wall clock cuts it before its own timeout.
        let fx = Fx::with_programs(&["sleep"], 30);
        let mut tb = fx.tb();
        tb.deadline = Some(std::time::Instant::now() + std::time::Duration::from_millis(300));
        let t0 = std::time::Instant::now();
        let o = tb.dispatch(&ToolCall {
            id: "c1".into(),
            name: "run_command".into(),
            input: json!({"argv": ["sleep", "30"]}),
        });
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(10),
            "{:?}",
            t0.elapsed()
        );
        assert!(
            o.content
                .contains("NOT FINISHED (the run's wall clock ran out)"),
            "{}",
            o.content
        );
    }

    #[test]
    fn run_command_cannot_write_or_read_outside_the_workspace() {
        if crate::sandbox::level() < crate::sandbox::Level::Landlock {
            eprintln!(
                "skipped: this kernel gives no Landlock (level {:?})",
                crate::sandbox::level()
            );
            return;
        }
        let out = outside_dir();
        std::fs::write(out.path().join("secret.txt"), "s3cret-outside\n").unwrap();
        let fx = Fx::with_programs(&["sh", "cat"], 10);
        let victim = out.path().join("written.txt");
        let o = fx.call(
            "run_command",
            json!({"argv": ["sh", "-c", format!("echo pwned > {}; echo done", victim.display())]}),
        );
        assert!(!o.is_error, "{o:?}");
        assert!(
            !victim.exists(),
            "the sandbox let a write outside through: {}",
            o.content
        );
        // An absolute path among a model's arguments grants no read (a
        // check's script argument would: the model's must not).
        let o = fx.call(
            "run_command",
            json!({"argv": ["cat", out.path().join("secret.txt").display().to_string()]}),
        );
        assert!(!o.content.contains("s3cret-outside"), "{}", o.content);
        assert!(o.content.contains("FAILED"), "{}", o.content);
        // Inside the workspace: both work.
        let o = fx.call(
            "run_command",
            json!({"argv": ["sh", "-c", "echo in > in.txt && cat in.txt"]}),
        );
        assert!(
            o.content.contains("passed") && o.content.contains("in\n"),
            "{}",
            o.content
        );
    }
}
