//! The tools' tests: every tool through `dispatch`, as the loop calls it.

use super::files::occurrences;
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
    let o = fx.call(
        "post_message",
        json!({"channel":"#eng","text":"x","idempotency_key":"k".repeat(POST_KEY_MAX_CHARS + 1)}),
    );
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
        o.content.ends_with(&format!(
            "[cut: stopped after reading {SEARCH_MAX_TOTAL_BYTES} bytes of files; narrow the path]"
        )),
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
        !o.is_error && o.content.contains("FAILED (timed out)") && o.content.contains("started"),
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

/// What a command writes is the task's work: every file it added, changed
/// or removed is in `wrote` (so the task's commit holds it), `.git` never,
/// and what it left alone never.
#[test]
fn run_command_reports_every_file_it_wrote() {
    let fx = Fx::with_programs(&["sh"], 10);
    fx.put("keep.txt", b"same\n");
    fx.put("src/edit.py", b"x = 1\n");
    fx.put("old.txt", b"bye\n");
    fx.put(".git/HEAD", b"ref: refs/heads/main\n");
    let o = fx.call(
        "run_command",
        json!({"argv": ["sh", "-c", "echo 'x = 2' > src/edit.py; mkdir -p gen; echo new > gen/new.txt; rm old.txt; echo junk > .git/HEAD"]}),
    );
    assert!(!o.is_error && o.side_effect, "{o:?}");
    assert_eq!(
        o.wrote,
        vec!["gen/new.txt", "old.txt", "src/edit.py"],
        "{o:?}"
    );
    assert!(
        o.content.contains("files changed in the workspace: 3"),
        "{}",
        o.content
    );
    // A command that writes nothing reports nothing written.
    let o = fx.call("run_command", json!({"argv": ["sh", "-c", "cat keep.txt"]}));
    assert!(o.wrote.is_empty(), "{o:?}");
}
