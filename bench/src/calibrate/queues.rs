//! The labeled set: one TOML file per queue (format in
//! suites/drift-calibration/README.md), loaded and checked field by field.
//!
//! Walked by hand over `toml::Table` instead of derived with serde, so that
//! every error names the file, the field (`queue[3].id`, `severity`) and what
//! was expected, in the words of the README: a researcher bringing their own
//! set should be able to fix it from the message alone. Every file is
//! checked and every error reported in one go.

use harness::task::{TASK_DESCRIPTION_MAX_CHARS, TASK_ID_MAX_CHARS};
use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

/// A labeled set larger than this is not hand-labeled; refuse rather than
/// make hundreds of judge calls by accident.
pub const MAX_QUEUES: usize = 500;
pub const MAX_TASKS_PER_QUEUE: usize = 50;
pub const MAX_GOAL_CHARS: usize = 4000;
/// The queue id becomes the judge call key `judge/<id>` (an HTTP header) and
/// part of file names, so it is kept short and plain.
pub const MAX_QUEUE_ID_CHARS: usize = 100;
const MAX_FILE_BYTES: u64 = 256 * 1024;

const TOP_FIELDS: &[&str] = &[
    "id", "domain", "goal", "label", "severity", "off_goal", "tags", "notes", "queue",
];
const TASK_FIELDS: &[&str] = &["id", "description"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    Aligned,
    Drifted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Mild,
    Moderate,
    Severe,
}

impl Severity {
    pub const ALL: [Severity; 3] = [Severity::Mild, Severity::Moderate, Severity::Severe];
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Mild => "mild",
            Severity::Moderate => "moderate",
            Severity::Severe => "severe",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueueTask {
    pub id: String,
    pub description: String,
}

/// One labeled queue. Only `goal` and `queue` ever reach a detector that
/// could read them as text; the rest is ground truth and bookkeeping.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabeledQueue {
    pub id: String,
    pub file: PathBuf,
    pub domain: String,
    pub goal: String,
    pub label: Label,
    pub severity: Option<Severity>,
    pub off_goal: Vec<String>,
    pub tags: Vec<String>,
    pub notes: String,
    pub queue: Vec<QueueTask>,
}

impl LabeledQueue {
    pub fn drifted(&self) -> bool {
        self.label == Label::Drifted
    }
}

/// A problem with one file (or with the set, when `file` is the directory).
#[derive(Debug, Clone, PartialEq)]
pub struct SetError {
    pub file: PathBuf,
    /// The field as a path (`queue[2].id`), or empty for the file as a whole.
    pub field: String,
    pub message: String,
}

impl fmt::Display for SetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.file.display(), self.message)
        } else {
            write!(
                f,
                "{}: field `{}`: {}",
                self.file.display(),
                self.field,
                self.message
            )
        }
    }
}

#[derive(Debug, Clone)]
pub struct LabeledSet {
    pub queues: Vec<LabeledQueue>,
    /// Said in the report, not fatal (e.g. an unbalanced set).
    pub warnings: Vec<String>,
}

impl LabeledSet {
    pub fn count(&self, label: Label) -> usize {
        self.queues.iter().filter(|q| q.label == label).count()
    }
}

/// Load every `*.toml` in `dir` (not recursive; README.md and hidden files
/// are skipped). Returns every error found, not just the first.
pub fn load_dir(dir: &Path) -> Result<LabeledSet, Vec<SetError>> {
    let set_err = |m: String| {
        vec![SetError {
            file: dir.to_path_buf(),
            field: String::new(),
            message: m,
        }]
    };
    let rd = std::fs::read_dir(dir)
        .map_err(|e| set_err(format!("cannot read the labeled-set directory: {e}")))?;
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            let hidden = p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('.'));
            !hidden && p.extension().is_some_and(|x| x == "toml") && p.is_file()
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(set_err("holds no *.toml queue files (one file per labeled queue; see suites/drift-calibration/README.md)".into()));
    }
    if files.len() > MAX_QUEUES {
        return Err(set_err(format!(
            "holds {} queue files; the limit is {MAX_QUEUES}",
            files.len()
        )));
    }
    let mut queues = Vec::new();
    let mut errors = Vec::new();
    for f in &files {
        match load_file(f) {
            Ok(q) => queues.push(q),
            Err(e) => errors.extend(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    check_set(dir, queues)
}

/// Set-level checks: ids unique, both labels present (else there is no ROC
/// curve), balance (a warning only).
fn check_set(dir: &Path, queues: Vec<LabeledQueue>) -> Result<LabeledSet, Vec<SetError>> {
    let mut errors = Vec::new();
    let mut seen: std::collections::BTreeMap<&str, &Path> = Default::default();
    for q in &queues {
        if let Some(first) = seen.insert(&q.id, &q.file) {
            errors.push(SetError {
                file: q.file.clone(),
                field: "id".into(),
                message: format!(
                    "\"{}\" is also the id of {}; ids must be unique in the set",
                    q.id,
                    first.display()
                ),
            });
        }
    }
    let aligned = queues.iter().filter(|q| q.label == Label::Aligned).count();
    let drifted = queues.len() - aligned;
    if aligned == 0 || drifted == 0 {
        errors.push(SetError {
            file: dir.to_path_buf(),
            field: "label".into(),
            message: format!(
                "the set has {aligned} aligned and {drifted} drifted queues; calibration needs both labels (there is no ROC curve with one)"
            ),
        });
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut warnings = Vec::new();
    if aligned != drifted {
        warnings.push(format!(
            "unbalanced set: {aligned} aligned vs {drifted} drifted queues. AUC is insensitive to balance, but agreement is not: \
             it leans towards the larger class, so read sensitivity and specificity separately"
        ));
    }
    if queues.len() < 20 {
        warnings.push(format!(
            "only {} queues: the intervals below are wider than the 20-queue set's",
            queues.len()
        ));
    }
    Ok(LabeledSet { queues, warnings })
}

/// Load and check one queue file.
pub fn load_file(path: &Path) -> Result<LabeledQueue, Vec<SetError>> {
    let whole = |m: String| {
        vec![SetError {
            file: path.to_path_buf(),
            field: String::new(),
            message: m,
        }]
    };
    let meta = std::fs::metadata(path).map_err(|e| whole(format!("cannot read: {e}")))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(whole(format!(
            "is {} bytes; a queue file is at most {MAX_FILE_BYTES}",
            meta.len()
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| whole(format!("cannot read: {e}")))?;
    parse(path, &text)
}

/// Parse and check a queue from TOML text; `path` names it in errors.
pub fn parse(path: &Path, text: &str) -> Result<LabeledQueue, Vec<SetError>> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        vec![SetError {
            file: path.to_path_buf(),
            field: String::new(),
            message: format!("not valid TOML: {}", e.message().trim()),
        }]
    })?;
    let mut c = Checker {
        file: path,
        errors: Vec::new(),
    };

    for k in table.keys() {
        if !TOP_FIELDS.contains(&k.as_str()) {
            c.err(
                k,
                format!("unknown field; expected one of {}", TOP_FIELDS.join(", ")),
            );
        }
    }

    let id = c.id(&table, path);
    let domain = c.string(&table, "domain", true).unwrap_or_default();
    let goal = c.goal(&table);
    let label = c.label(&table);
    let severity = c.severity(&table);
    let off_goal = c.strings(&table, "off_goal", true).unwrap_or_default();
    let tags = c.strings(&table, "tags", false).unwrap_or_default();
    let notes = c.string(&table, "notes", false).unwrap_or_default();
    let queue = c.queue(&table);
    c.label_rules(&table, label, severity, &off_goal);
    c.off_goal_ids(&queue, &off_goal);
    c.tags(&tags, label);

    if !c.errors.is_empty() {
        return Err(c.errors);
    }
    // Both are Some here: a missing or unknown label was an error above.
    let Some(label) = label else {
        return Err(vec![]);
    };
    Ok(LabeledQueue {
        id,
        file: path.to_path_buf(),
        domain,
        goal,
        label,
        severity,
        off_goal,
        tags,
        notes,
        queue,
    })
}

/// The fields of a queue file, each checked on its own; every problem is
/// kept, so one run names them all.
impl Checker<'_> {
    /// The id: plain characters, and the file's name (so a queue is found by
    /// its id).
    fn id(&mut self, table: &toml::Table, path: &Path) -> String {
        let id = self.string(table, "id", true).unwrap_or_default();
        if !id.is_empty() {
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            if !valid_id(&id) {
                self.err("id", format!("\"{id}\" is not a valid id; expected 1..={MAX_QUEUE_ID_CHARS} characters from A-Z a-z 0-9 - _ ."));
            } else if id != stem {
                self.err(
                    "id",
                    format!(
                        "is \"{id}\" but the file is {stem}.toml; the id must equal the file name"
                    ),
                );
            }
        }
        id
    }

    fn goal(&mut self, table: &toml::Table) -> String {
        let goal = self.string(table, "goal", true).unwrap_or_default();
        if goal.chars().count() > MAX_GOAL_CHARS {
            self.err(
                "goal",
                format!(
                    "is {} characters; the limit is {MAX_GOAL_CHARS}",
                    goal.chars().count()
                ),
            );
        }
        goal
    }

    fn label(&mut self, table: &toml::Table) -> Option<Label> {
        match self.string(table, "label", true).as_deref() {
            Some("aligned") => Some(Label::Aligned),
            Some("drifted") => Some(Label::Drifted),
            Some(other) => {
                self.err(
                    "label",
                    format!("unknown label \"{other}\"; expected \"aligned\" or \"drifted\""),
                );
                None
            }
            None => None,
        }
    }

    fn severity(&mut self, table: &toml::Table) -> Option<Severity> {
        match self.string(table, "severity", false).as_deref() {
            None => None,
            Some("mild") => Some(Severity::Mild),
            Some("moderate") => Some(Severity::Moderate),
            Some("severe") => Some(Severity::Severe),
            Some(other) => {
                self.err(
                    "severity",
                    format!(
                        "unknown severity \"{other}\"; expected \"mild\", \"moderate\" or \"severe\""
                    ),
                );
                None
            }
        }
    }

    /// The `[[queue]]` tasks, within the harness's own limits.
    fn queue(&mut self, table: &toml::Table) -> Vec<QueueTask> {
        let mut queue = Vec::new();
        match table.get("queue") {
            None => self.err(
                "queue",
                "missing; expected an array of [[queue]] tables with `id` and `description`".into(),
            ),
            Some(toml::Value::Array(items)) => {
                if items.is_empty() {
                    self.err("queue", "is empty; a queue has at least one task".into());
                }
                if items.len() > MAX_TASKS_PER_QUEUE {
                    self.err(
                        "queue",
                        format!(
                            "has {} tasks; the limit is {MAX_TASKS_PER_QUEUE}",
                            items.len()
                        ),
                    );
                }
                let mut ids = BTreeSet::new();
                for (i, item) in items.iter().enumerate() {
                    if let Some(t) = self.task(i, item, &mut ids) {
                        queue.push(t);
                    }
                }
            }
            Some(_) => self.err("queue", "is not an array; expected [[queue]] tables".into()),
        }
        queue
    }

    /// Task `i`; `ids` are the task ids seen so far in this queue.
    fn task(
        &mut self,
        i: usize,
        item: &toml::Value,
        ids: &mut BTreeSet<String>,
    ) -> Option<QueueTask> {
        let base = format!("queue[{i}]");
        let Some(t) = item.as_table() else {
            self.err(
                &base,
                "is not a table; expected { id = \"t1\", description = \"...\" }".into(),
            );
            return None;
        };
        for k in t.keys() {
            if !TASK_FIELDS.contains(&k.as_str()) {
                self.err(
                    &format!("{base}.{k}"),
                    "unknown field; expected `id` and `description`".into(),
                );
            }
        }
        let tid = self.string_at(t, &base, "id").unwrap_or_default();
        let desc = self.string_at(t, &base, "description").unwrap_or_default();
        if tid.chars().count() > TASK_ID_MAX_CHARS {
            self.err(
                &format!("{base}.id"),
                format!("is longer than the harness's task id limit ({TASK_ID_MAX_CHARS})"),
            );
        }
        if desc.chars().count() > TASK_DESCRIPTION_MAX_CHARS {
            self.err(
                &format!("{base}.description"),
                format!("is longer than the harness's limit ({TASK_DESCRIPTION_MAX_CHARS})"),
            );
        }
        if !tid.is_empty() && !ids.insert(tid.clone()) {
            self.err(
                &format!("{base}.id"),
                format!("duplicate task id \"{tid}\" in this queue"),
            );
        }
        Some(QueueTask {
            id: tid,
            description: desc,
        })
    }

    /// Cross-field rules: the label decides what severity and off_goal must be.
    fn label_rules(
        &mut self,
        table: &toml::Table,
        label: Option<Label>,
        severity: Option<Severity>,
        off_goal: &[String],
    ) {
        match label {
            Some(Label::Drifted) => {
                if severity.is_none() && table.get("severity").is_none() {
                    self.err(
                        "severity",
                        "missing; a drifted queue needs \"mild\", \"moderate\" or \"severe\""
                            .into(),
                    );
                }
                if off_goal.is_empty() && table.contains_key("off_goal") {
                    self.err(
                        "off_goal",
                        "is empty; a drifted queue names at least one off-goal task id".into(),
                    );
                }
            }
            Some(Label::Aligned) => {
                if table.contains_key("severity") {
                    self.err(
                        "severity",
                        "is set on an aligned queue; only drifted queues have a severity".into(),
                    );
                }
                if !off_goal.is_empty() {
                    self.err("off_goal", format!("is {off_goal:?} on an aligned queue; an aligned queue has no off-goal tasks"));
                }
            }
            None => {}
        }
    }

    /// Every off-goal id names a task of this queue, once.
    fn off_goal_ids(&mut self, queue: &[QueueTask], off_goal: &[String]) {
        let known: BTreeSet<&str> = queue.iter().map(|t| t.id.as_str()).collect();
        let mut seen_off = BTreeSet::new();
        for (i, o) in off_goal.iter().enumerate() {
            if !known.is_empty() && !known.contains(o.as_str()) {
                self.err(
                    &format!("off_goal[{i}]"),
                    format!(
                        "\"{o}\" is not a task id in this queue (ids: {})",
                        known.iter().copied().collect::<Vec<_>>().join(", ")
                    ),
                );
            }
            if !seen_off.insert(o.as_str()) {
                self.err(
                    &format!("off_goal[{i}]"),
                    format!("\"{o}\" is listed twice"),
                );
            }
        }
    }

    /// The hard_negative / hard_positive tags agree with the label.
    fn tags(&mut self, tags: &[String], label: Option<Label>) {
        for (i, t) in tags.iter().enumerate() {
            let wrong = match (t.as_str(), label) {
                ("hard_negative", Some(Label::Drifted)) => {
                    Some("hard_negative marks an ALIGNED queue that looks unrelated on the surface")
                }
                ("hard_positive", Some(Label::Aligned)) => {
                    Some("hard_positive marks a DRIFTED queue that reuses the goal's vocabulary")
                }
                _ => None,
            };
            if let Some(w) = wrong {
                self.err(&format!("tags[{i}]"), w.into());
            }
        }
    }
}

fn valid_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_QUEUE_ID_CHARS
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

struct Checker<'a> {
    file: &'a Path,
    errors: Vec<SetError>,
}

impl Checker<'_> {
    fn err(&mut self, field: &str, message: String) {
        self.errors.push(SetError {
            file: self.file.to_path_buf(),
            field: field.to_string(),
            message,
        });
    }

    /// A non-empty string field of the top-level table.
    fn string(&mut self, t: &toml::Table, field: &str, required: bool) -> Option<String> {
        self.string_in(t, field, field, required)
    }

    fn string_at(&mut self, t: &toml::Table, base: &str, field: &str) -> Option<String> {
        self.string_in(t, field, &format!("{base}.{field}"), true)
    }

    fn string_in(
        &mut self,
        t: &toml::Table,
        key: &str,
        path: &str,
        required: bool,
    ) -> Option<String> {
        match t.get(key) {
            None => {
                if required {
                    self.err(path, format!("missing; expected {}", expected(key)));
                }
                None
            }
            Some(toml::Value::String(s)) if s.trim().is_empty() && required => {
                self.err(path, format!("is empty; expected {}", expected(key)));
                None
            }
            Some(toml::Value::String(s)) => Some(s.trim().to_string()),
            Some(v) => {
                self.err(
                    path,
                    format!(
                        "is a {}; expected a string: {}",
                        v.type_str(),
                        expected(key)
                    ),
                );
                None
            }
        }
    }

    fn strings(&mut self, t: &toml::Table, field: &str, required: bool) -> Option<Vec<String>> {
        match t.get(field) {
            None => {
                if required {
                    self.err(field, format!("missing; expected {}", expected(field)));
                }
                None
            }
            Some(toml::Value::Array(a)) => {
                let mut out = Vec::new();
                for (i, v) in a.iter().enumerate() {
                    match v.as_str() {
                        Some(s) if !s.trim().is_empty() => out.push(s.trim().to_string()),
                        _ => self.err(
                            &format!("{field}[{i}]"),
                            "expected a non-empty string".into(),
                        ),
                    }
                }
                Some(out)
            }
            Some(v) => {
                self.err(
                    field,
                    format!("is a {}; expected {}", v.type_str(), expected(field)),
                );
                None
            }
        }
    }
}

fn expected(field: &str) -> &'static str {
    match field {
        "id" => "a plain id equal to the file name (A-Z a-z 0-9 - _ .)",
        "domain" => "the goal's domain, e.g. \"latency\"",
        "goal" => "the original goal, as the harness would hold it",
        "label" => "\"aligned\" or \"drifted\"",
        "severity" => "\"mild\", \"moderate\" or \"severe\" (drifted queues only)",
        "off_goal" => "an array of the queue's off-goal task ids ([] for an aligned queue)",
        "tags" => "an array of strings, e.g. [\"hard_negative\"]",
        "notes" => "free text: why the label is what it is",
        "description" => "what the task says, as the agent wrote it",
        _ => "a value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
id = "q"
domain = "latency"
goal = "Reduce p95 latency."
label = "drifted"
severity = "mild"
off_goal = ["t2"]
[[queue]]
id = "t1"
description = "Profile."
[[queue]]
id = "t2"
description = "Dashboard."
"#;

    fn errs(text: &str) -> Vec<String> {
        parse(Path::new("set/q.toml"), text)
            .unwrap_err()
            .iter()
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn good_file_parses() {
        let q = parse(Path::new("set/q.toml"), GOOD).unwrap();
        assert_eq!(q.label, Label::Drifted);
        assert_eq!(q.severity, Some(Severity::Mild));
        assert_eq!(q.queue.len(), 2);
    }

    #[test]
    fn missing_label_names_file_and_field() {
        let e = errs(&GOOD.replace("label = \"drifted\"\n", ""));
        assert!(
            e.iter()
                .any(|m| m.starts_with("set/q.toml: field `label`: missing")),
            "{e:?}"
        );
    }

    #[test]
    fn unknown_severity_names_file_and_field() {
        let e = errs(&GOOD.replace("\"mild\"", "\"catastrophic\""));
        assert!(
            e.iter()
                .any(|m| m
                    .contains("set/q.toml: field `severity`: unknown severity \"catastrophic\"")),
            "{e:?}"
        );
    }

    #[test]
    fn off_goal_id_not_in_queue_is_named() {
        let e = errs(&GOOD.replace("[\"t2\"]", "[\"t9\"]"));
        assert!(
            e.iter()
                .any(|m| m.contains("field `off_goal[0]`: \"t9\" is not a task id in this queue")),
            "{e:?}"
        );
    }

    #[test]
    fn cross_field_rules() {
        // A drifted queue without severity; an aligned one with severity / off-goal ids.
        assert!(errs(&GOOD.replace("severity = \"mild\"\n", ""))
            .iter()
            .any(|m| m.contains("`severity`: missing")));
        let aligned = GOOD.replace("\"drifted\"", "\"aligned\"");
        let e = errs(&aligned);
        assert!(
            e.iter()
                .any(|m| m.contains("`severity`: is set on an aligned queue")),
            "{e:?}"
        );
        assert!(
            e.iter()
                .any(|m| m.contains("`off_goal`: is [\"t2\"] on an aligned queue")),
            "{e:?}"
        );
        assert!(errs(&GOOD.replace("[\"t2\"]", "[]"))
            .iter()
            .any(|m| m.contains("`off_goal`: is empty")));
    }

    #[test]
    fn typos_ids_and_types_are_errors() {
        assert!(errs(&GOOD.replace("label =", "lable ="))
            .iter()
            .any(|m| m.contains("field `lable`: unknown field")));
        assert!(errs(&GOOD.replace("id = \"q\"", "id = \"other\""))
            .iter()
            .any(|m| m.contains("must equal the file name")));
        assert!(errs(&GOOD.replace("id = \"t2\"", "id = \"t1\""))
            .iter()
            .any(|m| m.contains("`queue[1].id`: duplicate task id")));
        assert!(
            errs(&GOOD.replace("goal = \"Reduce p95 latency.\"", "goal = 3"))
                .iter()
                .any(|m| m.contains("`goal`: is a integer"))
        );
        assert!(errs("id = [").iter().any(|m| m.contains("not valid TOML")));
        assert!(errs(&GOOD.replace("description = \"Profile.\"", ""))
            .iter()
            .any(|m| m.contains("`queue[0].description`: missing")));
    }

    #[test]
    fn set_level_balance_is_a_warning_and_one_label_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: String| {
            std::fs::write(dir.path().join(format!("{name}.toml")), text).unwrap()
        };
        write("a", GOOD.replace("id = \"q\"", "id = \"a\""));
        let e = load_dir(dir.path()).unwrap_err();
        assert!(
            e[0].to_string().contains("calibration needs both labels"),
            "{}",
            e[0]
        );
        write(
            "b",
            GOOD.replace("id = \"q\"", "id = \"b\"")
                .replace("\"drifted\"", "\"aligned\"")
                .replace("severity = \"mild\"\n", "")
                .replace("[\"t2\"]", "[]"),
        );
        write("c", GOOD.replace("id = \"q\"", "id = \"c\""));
        std::fs::write(dir.path().join("README.md"), "not a queue").unwrap();
        let set = load_dir(dir.path()).unwrap();
        assert_eq!(set.queues.len(), 3);
        assert!(
            set.warnings
                .iter()
                .any(|w| w.starts_with("unbalanced set: 1 aligned vs 2 drifted")),
            "{:?}",
            set.warnings
        );
    }

    #[test]
    fn committed_set_loads_balanced_with_the_promised_coverage() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites/drift-calibration");
        let set = load_dir(&dir).unwrap_or_else(|e| {
            panic!(
                "{}",
                e.iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        });
        assert_eq!(set.queues.len(), 20);
        assert_eq!(set.count(Label::Aligned), 10);
        assert!(set.warnings.is_empty(), "{:?}", set.warnings);
        for s in Severity::ALL {
            assert!(
                set.queues.iter().any(|q| q.severity == Some(s)),
                "no {} queue",
                s.as_str()
            );
        }
        let domains: BTreeSet<&str> = set.queues.iter().map(|q| q.domain.as_str()).collect();
        assert!(domains.len() >= 5, "{domains:?}");
        let tagged = |t: &str| {
            set.queues
                .iter()
                .filter(|q| q.tags.iter().any(|x| x == t))
                .count()
        };
        assert!(tagged("hard_negative") >= 3 && tagged("hard_positive") >= 3);
        // Ids reach the endpoint as the call key header: none may give the label away.
        for q in &set.queues {
            for w in [
                "aligned", "drift", "hard", "negative", "positive", "mild", "moderate", "severe",
            ] {
                assert!(!q.id.contains(w), "{} gives its label away", q.id);
            }
        }
    }
}
