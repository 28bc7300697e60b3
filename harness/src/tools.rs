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
    }
}

pub const ALL_TOOL_NAMES: [&str; 6] = [
    ToolName::ReadFile.as_str(),
    ToolName::WriteFile.as_str(),
    ToolName::ListFiles.as_str(),
    ToolName::PostMessage.as_str(),
    ToolName::ApplyMigration.as_str(),
    ToolName::RunCheck.as_str(),
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

pub struct ToolBox<'a> {
    pub workspace: &'a Workspace,
    pub outbox: &'a Outbox,
    pub checks: &'a BTreeMap<String, CheckSpec>,
    pub allowlist: &'a [String],
    /// When the run's wall clock runs out: bounds `run_check` as well as the
    /// check's own timeout. None outside a run.
    pub deadline: Option<std::time::Instant>,
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
            "read_file" => format!("Read a UTF-8 text file from the workspace (at most {READ_MAX_BYTES} bytes). Paths are relative to the workspace root."),
            "write_file" => format!("Create or overwrite a file in the workspace with the given content (at most {WRITE_MAX_BYTES} bytes). Parent directories are created."),
            "list_files" => format!("List one directory of the workspace (default: the root), sorted, directories marked with a trailing '/'. At most {LIST_MAX_ENTRIES} entries."),
            "post_message" => "Post a message to a channel. This is a real, non-reversible side effect: posting twice posts twice. Give a stable idempotency_key for the message.".into(),
            "apply_migration" => "Apply the migration defined in migrations/<name>.json: writes each step's file in order.".into(),
            "run_check" => format!("Run a check defined by the run's spec and report whether it passed. Defined checks: {}.", self.check_names()),
            _ => String::new(),
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
            "read_file" => object(
                json!({"path": s("file path relative to the workspace root")}),
                &["path"],
            ),
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
            "read_file" => "{\"path\": string}",
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
            "read_file" => self
                .args::<ReadArgs>(call)
                .map_or_else(|e| e, |a| self.read_file(&a.path)),
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
        match crate::confined::write(self.workspace, path, content.as_bytes()) {
            Ok(rel) => {
                Observation::ok(format!("wrote {} bytes to {path}", content.len())).wrote(vec![rel])
            }
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
        // A failing check is a result, not a tool error: the tool worked.
        Observation::ok(format!(
            "check {name}: {status}; exit code: {code}\n--- output (tail) ---\n{}",
            r.output
        ))
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
            }
        }
        fn tb(&self) -> ToolBox<'_> {
            ToolBox {
                workspace: &self.ws,
                outbox: &self.outbox,
                checks: &self.checks,
                allowlist: &self.allow,
                deadline: None,
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
        assert_eq!(defs.len(), 6);
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
                o.content.contains("expected {\"path\": string}"),
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
}
