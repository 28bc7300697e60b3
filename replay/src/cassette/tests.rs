//! Loading a cassette end to end: what each malformed, secret-bearing or
//! oversized file is refused with, and what a good one becomes.

use super::*;
use model::types::{CallRole, Protocol};
use serde_json::json;
use std::path::Path;

pub(crate) fn minimal(case: &str) -> String {
    let conditions = serde_json::to_string(&model::conditions::every_role_as(
        Protocol::Anthropic,
        &json!({"model": "claude-test"}),
    ))
    .unwrap();
    format!(
        r#"{{
  "format": "harness-cassette/2",
  "case": "{case}",
  "protocol": "anthropic",
  "model": "claude-test",
  "made": {{"how": "scripted", "when": "2025-01-01", "by": "test"}},
  "conditions": {conditions},
  "runs": [
    {{
      "run": 0,
      "interactions": [
        {{
          "role": "plan",
          "call_key": "plan/0",
          "request": {{"method": "POST", "path": "/v1/messages", "body": null, "body_sha256": null}},
          "response": {{"status": 200, "headers": {{"content-type": "application/json"}}, "body": {{"ok": true}}}},
          "latency_ms": 5
        }}
      ]
    }}
  ]
}}"#
    )
}

fn parse(text: &str) -> Result<Cassette, CassetteError> {
    Cassette::from_json_str(text, Path::new("cases/x.json"))
}

#[test]
fn minimal_cassette_loads() {
    let c = parse(&minimal("c1")).unwrap();
    assert_eq!(c.case, "c1");
    assert_eq!(c.runs[0].interactions[0].role, CallRole::Plan);
}

#[test]
fn bad_json_names_file_line_and_column() {
    let e = parse("{\n  \"format\": \"harness-cassette/2\",\n  \"case\": oops\n}").unwrap_err();
    assert_eq!(e.kind, CassetteErrorKind::BadJson);
    assert_eq!(e.line, Some(3));
    let s = e.to_string();
    assert!(s.starts_with("cases/x.json"), "{s}");
    assert!(s.contains("line 3"), "{s}");
}

#[test]
fn missing_field_names_the_field() {
    let text = minimal("c1").replace("\"call_key\": \"plan/0\",", "");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.kind, CassetteErrorKind::MissingField, "{e}");
    assert_eq!(
        e.field.as_deref(),
        Some("runs[0].interactions[0].call_key"),
        "{e}"
    );
    let text = minimal("c1").replace("\"model\": \"claude-test\",", "");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("model"), "{e}");
    let text = minimal("c1").replace("\"by\": \"test\"", "\"byy\": \"test\"");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.kind, CassetteErrorKind::UnknownField, "{e}");
    assert_eq!(e.field.as_deref(), Some("made.byy"), "{e}");
}

#[test]
fn unknown_protocol_and_role_name_the_field() {
    let e = parse(&minimal("c1").replace("\"anthropic\"", "\"gemini\"")).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("protocol"), "{e}");
    assert!(e.to_string().contains("unknown protocol \"gemini\""), "{e}");
    let e =
        parse(&minimal("c1").replace("\"role\": \"plan\"", "\"role\": \"planner\"")).unwrap_err();
    assert_eq!(
        e.field.as_deref(),
        Some("runs[0].interactions[0].role"),
        "{e}"
    );
    assert!(e.to_string().contains("unknown role \"planner\""), "{e}");
}

#[test]
fn status_out_of_range_and_type_errors() {
    let e = parse(&minimal("c1").replace("\"status\": 200", "\"status\": 700")).unwrap_err();
    assert_eq!(
        e.field.as_deref(),
        Some("runs[0].interactions[0].response.status"),
        "{e}"
    );
    assert!(e.message.contains("out of range"), "{e}");
    let e = parse(&minimal("c1").replace("\"status\": 200", "\"status\": 70000")).unwrap_err();
    assert_eq!(
        e.field.as_deref(),
        Some("runs[0].interactions[0].response.status"),
        "{e}"
    );
    let e =
        parse(&minimal("c1").replace("\"latency_ms\": 5", "\"latency_ms\": \"5\"")).unwrap_err();
    assert_eq!(
        e.field.as_deref(),
        Some("runs[0].interactions[0].latency_ms"),
        "{e}"
    );
}

#[test]
fn duplicate_call_key_is_refused() {
    let mut c = parse(&minimal("c1")).unwrap();
    let dup = c.runs[0].interactions[0].clone();
    c.runs[0].interactions.push(dup);
    let e = c.check(Path::new("d.json")).unwrap_err();
    assert_eq!(e.kind, CassetteErrorKind::Duplicate);
    assert_eq!(e.field.as_deref(), Some("runs[0].interactions[1].call_key"));
    assert!(e.to_string().contains("interactions[0]"), "{e}");
}

/// A call key may repeat in a run only as conditional replies; each way a
/// set can be ambiguous is refused by `check` (so by load, save and the
/// index) naming the file, the run, the call key and the field.
#[test]
fn ambiguous_conditional_replies_are_refused_naming_file_run_key_and_field() {
    let base = parse(&minimal("c1")).unwrap();
    let with = |conds: &[Option<&str>]| {
        let mut c = base.clone();
        let one = c.runs[0].interactions[0].clone();
        c.runs[0].interactions = conds
            .iter()
            .map(|w| Interaction {
                when_request_contains: w.map(str::to_string),
                ..one.clone()
            })
            .collect();
        c
    };
    // Accepted: one unconditional reply and conditional ones, and a set with no unconditional one.
    with(&[Some("lesson A"), None, Some("lesson B")])
        .check(Path::new("ok.json"))
        .unwrap();
    with(&[Some("lesson A")])
        .check(Path::new("ok.json"))
        .unwrap();

    for (conds, field, kind, says) in [
        (
            vec![Some("x1"), None, None],
            "runs[0].interactions[2].call_key",
            CassetteErrorKind::Duplicate,
            "duplicate (run 0, call_key \"plan/0\"): already at runs[0].interactions[1]; a call key has at most one reply without `when_request_contains`",
        ),
        (
            vec![None, Some("")],
            "runs[0].interactions[1].when_request_contains",
            CassetteErrorKind::InvalidValue,
            "is empty (run 0, call_key \"plan/0\")",
        ),
        (
            vec![Some("lesson A"), Some("lesson A")],
            "runs[0].interactions[1].when_request_contains",
            CassetteErrorKind::Duplicate,
            "duplicate condition \"lesson A\" (run 0, call_key \"plan/0\"): already at runs[0].interactions[0]",
        ),
        (
            vec![Some("lesson"), Some("lesson A")],
            "runs[0].interactions[1].when_request_contains",
            CassetteErrorKind::InvalidValue,
            "could never be served",
        ),
    ] {
        let e = with(&conds).check(Path::new("amb.json")).unwrap_err();
        let shown = e.to_string();
        assert_eq!((e.kind, e.field.as_deref()), (kind, Some(field)), "{shown}");
        assert!(shown.starts_with(&format!("amb.json: field `{field}`: ")), "{shown}");
        assert!(shown.contains(says), "{shown}");
    }
    // A second run variant is its own namespace, and its errors name it.
    let mut c = with(&[None]);
    let mut r1 = with(&[Some("a"), Some("a")]).runs[0].clone();
    r1.run = 1;
    c.runs.push(r1);
    let e = c.check(Path::new("amb.json")).unwrap_err();
    assert_eq!(
        e.field.as_deref(),
        Some("runs[1].interactions[1].when_request_contains")
    );
    assert!(e.message.contains("run 1, call_key \"plan/0\""), "{e}");
    // The loader refuses the same set from the file's text, and the index too.
    let text = serde_json::to_string_pretty(&with(&[None, None])).unwrap();
    let e = parse(&text).unwrap_err();
    assert_eq!(
        e.field.as_deref(),
        Some("runs[0].interactions[1].call_key"),
        "{e}"
    );
    assert!(Recordings::new()
        .add(with(&[None, None]), "mem.json")
        .is_err());
}

/// A cassette without conditions serialises exactly as before the field
/// existed (it is omitted when absent), and one with them round-trips.
#[test]
fn the_condition_field_is_omitted_when_absent_and_round_trips() {
    let c = parse(&minimal("c1")).unwrap();
    let text = serde_json::to_string(&c).unwrap();
    assert!(!text.contains("when_request_contains"), "{text}");
    let mut c2 = c.clone();
    c2.runs[0].interactions[0].when_request_contains = Some("needle".into());
    let back: Cassette = serde_json::from_str(&serde_json::to_string(&c2).unwrap()).unwrap();
    assert_eq!(back, c2);
}

/// The index serves what the server serves: the first matching condition,
/// else the unconditional reply, else nothing.
#[test]
fn the_index_chooses_a_reply_by_the_request_text() {
    let mut c = parse(&minimal("c1")).unwrap();
    let plain = c.runs[0].interactions[0].clone();
    let mut cond = plain.clone();
    cond.when_request_contains = Some("with \"lesson\"".into());
    cond.latency_ms = 77;
    c.runs[0].interactions.push(cond);
    let rec = Recordings::from_cassettes([("mem.json", c.clone())]).unwrap();
    let body = |t: &str| serde_json::to_vec(&json!({"messages": [{"content": t}]})).unwrap();
    assert_eq!(
        rec.get("c1", 0, "plan/0", &body("with \"lesson\" here"))
            .map(|i| i.latency_ms),
        Some(77)
    );
    assert_eq!(
        rec.get("c1", 0, "plan/0", &body("without"))
            .map(|i| i.latency_ms),
        Some(5)
    );
    assert_eq!(
        c.runs[0]
            .answer("plan/0", &body("without"))
            .map(|i| i.latency_ms),
        Some(5)
    );
    c.runs[0].interactions.remove(0);
    let rec = Recordings::from_cassettes([("mem.json", c.clone())]).unwrap();
    assert!(rec.get("c1", 0, "plan/0", &body("without")).is_none());
    assert!(c.runs[0].answer("plan/0", &body("without")).is_none());
}

#[test]
fn other_semantic_checks() {
    for (from, to, field) in [
        ("\"harness-cassette/2\"", "\"harness-cassette/3\"", "format"),
        ("\"case\": \"c1\"", "\"case\": \"a b\"", "case"),
        (
            "\"/v1/messages\"",
            "\"/v1/chat/completions\"",
            "runs[0].interactions[0].request.path",
        ),
        (
            "\"body_sha256\": null",
            "\"body_sha256\": \"xyz\"",
            "runs[0].interactions[0].request.body_sha256",
        ),
        (
            "\"when\": \"2025-01-01\"",
            "\"when\": \"yesterday\"",
            "made.when",
        ),
        ("\"run\": 0", "\"run\": 1", "runs[0].run"),
    ] {
        let e = parse(&minimal("c1").replace(from, to)).unwrap_err();
        assert_eq!(e.field.as_deref(), Some(field), "{e}");
    }
    // A body hash that does not match the body.
    let text = minimal("c1").replace(
        "\"body\": null, \"body_sha256\": null",
        &format!(
            "\"body\": {{\"a\": 1}}, \"body_sha256\": \"{}\"",
            "0".repeat(64)
        ),
    );
    let e = parse(&text).unwrap_err();
    assert!(e.message.contains("does not match"), "{e}");
    // A missing hash next to a body is filled in.
    let text = minimal("c1").replace(
        "\"body\": null, \"body_sha256\": null",
        "\"body\": {\"a\": 1}",
    );
    let c = parse(&text).unwrap();
    assert_eq!(
        c.runs[0].interactions[0].request.body_sha256,
        Some(body_sha256(&json!({"a": 1})))
    );
}

#[test]
fn secrets_are_refused_anywhere() {
    let cases = [
        (
            "\"content-type\": \"application/json\"",
            "\"Set-Cookie\": \"a=b\"",
            "runs[0].interactions[0].response.headers.Set-Cookie",
        ),
        (
            "\"body\": {\"ok\": true}",
            "\"body\": {\"meta\": {\"API_KEY\": \"x\"}}",
            "runs[0].interactions[0].response.body.meta.API_KEY",
        ),
        (
            "\"body\": {\"ok\": true}",
            "\"body\": {\"t\": \"key sk-ant-api03-abcdefghij0123456789xyz\"}",
            "runs[0].interactions[0].response.body.t",
        ),
        (
            "\"by\": \"test\"",
            "\"by\": \"Bearer eyJhbGciOiJIUzI1NiJ9.abc123\"",
            "made.by",
        ),
        (
            "\"body\": null,",
            "\"headers\": {\"x-api-key\": \"k\"}, \"body\": null,",
            "runs[0].interactions[0].request.headers.x-api-key",
        ),
    ];
    for (from, to, field) in cases {
        let text = minimal("c1").replace(from, to);
        assert_ne!(text, minimal("c1"), "replacement applied for {field}");
        let e = parse(&text).unwrap_err();
        assert_eq!(e.kind, CassetteErrorKind::Secret, "{e}");
        assert_eq!(e.field.as_deref(), Some(field), "{e}");
        assert!(e.to_string().starts_with("cases/x.json"), "{e}");
    }
    // Prose that merely mentions the words passes.
    for ok in [
        "ask-me-anything-about-task-12345678901234567890",
        "Bearer tokens are sent in a header",
        "sk-short1",
    ] {
        assert_eq!(looks_like_secret(ok), None, "{ok}");
    }
}

#[test]
fn redaction_helpers_make_a_savable_cassette() {
    let h = redact_headers([
        ("Authorization", "Bearer abcdefghijklmnop1234"),
        ("Content-Type", "application/json"),
        ("x-request-id", "sk-abcdefghijklmnopqrstuvwxyz123"),
        ("Content-Length", "12"),
        ("request-id", "req_1"),
    ]);
    assert_eq!(
        h.keys().collect::<Vec<_>>(),
        vec!["content-type", "request-id"]
    );
    let it = Interaction::from_exchange(
        CallRole::Plan,
        "plan/0",
        Protocol::Anthropic,
        &json!({"system": "s", "api_key": "zzz", "model": "m"}),
        200,
        [("set-cookie", "a=b"), ("content-type", "application/json")],
        br#"{"content": [], "id": "msg_1"}"#,
        120,
    );
    assert!(it.request.body.as_ref().unwrap().get("api_key").is_none());
    let mut c = Cassette::new(
        "rec-1",
        Protocol::Anthropic,
        "m",
        Made {
            how: MadeHow::Recorded,
            when: "2025-06-01T10:00:00Z".into(),
            by: "proxy".into(),
            temperature: Some(0.0),
            seed: None,
            notes: String::new(),
        },
    );
    c.push(0, it);
    // What a recorder does before it saves: the conditions from the bodies.
    c.conditions_from_bodies().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rec-1.json");
    c.save(&p).unwrap();
    let back = Cassette::load(&p).unwrap();
    assert_eq!(back, c);
    // Pretty-printed, diffable by a person.
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains("\n  \"case\": \"rec-1\""), "{text}");
    // Save refuses a secret and leaves nothing behind.
    let mut bad = c.clone();
    bad.runs[0].interactions[0]
        .response
        .headers
        .insert("cookie".into(), "a".into());
    let e = bad.save(dir.path().join("bad.json")).unwrap_err();
    assert_eq!(e.kind, CassetteErrorKind::Secret);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn load_dir_indexes_and_reports_every_bad_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("sub/deeper")).unwrap();
    std::fs::write(dir.path().join("README.md"), "# not a cassette").unwrap();
    std::fs::write(dir.path().join("a.json"), minimal("case-a")).unwrap();
    std::fs::write(dir.path().join("sub/deeper/b.json"), minimal("case-b")).unwrap();
    let rec = Recordings::load_dir(dir.path()).unwrap();
    assert_eq!(rec.case_count(), 2);
    assert_eq!(rec.interaction_count(), 2);
    assert!(rec.get("case-b", 7, "plan/0", b"{}").is_some());
    assert!(rec.get("case-b", 0, "plan/1", b"{}").is_none());

    std::fs::write(dir.path().join("sub/bad.json"), "{ nope").unwrap();
    std::fs::write(dir.path().join("sub/dup.json"), minimal("case-a")).unwrap();
    let err = Recordings::load_dir(dir.path()).unwrap_err();
    assert_eq!(err.errors.len(), 2, "{err}");
    let s = err.to_string();
    assert!(
        s.contains("bad.json") && s.contains("not valid JSON"),
        "{s}"
    );
    assert!(
        s.contains("dup.json") && s.contains("already recorded in"),
        "{s}"
    );

    let empty = tempfile::tempdir().unwrap();
    assert!(Recordings::load_dir(empty.path())
        .unwrap_err()
        .to_string()
        .contains("no *.json"));
}

#[test]
fn too_large_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.json");
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(MAX_CASSETTE_BYTES + 1).unwrap();
    let e = Cassette::load(&p).unwrap_err();
    assert_eq!(e.kind, CassetteErrorKind::TooLarge);
}

#[test]
fn example_cassette_loads() {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../recordings/examples/example-fix-typo.json");
    let c = Cassette::load(&p).unwrap();
    assert_eq!(c.runs.len(), 2);
    // The checked-in hashes are the canonical hashes of the checked-in bodies.
    for run in &c.runs {
        for it in &run.interactions {
            if let Some(b) = &it.request.body {
                assert_eq!(
                    it.request.body_sha256.as_deref(),
                    Some(body_sha256(b).as_str())
                );
            }
        }
    }
}

/// The whole message of each kind of load error, word for word with its
/// line and column: people grep old bug reports and CI logs for these, so
/// a change of loader must not move them (they are what the hand tokenizer
/// that preceded the strict loader printed).
#[test]
fn load_error_messages_are_pinned() {
    let m = minimal("c1");
    for (from, to, kind, message) in [
        (
            "\"case\": \"c1\"",
            "\"case\": oops",
            CassetteErrorKind::BadJson,
            "cases/x.json (line 3, column 12): not valid JSON: expected value",
        ),
        (
            "\"call_key\": \"plan/0\",",
            "",
            CassetteErrorKind::MissingField,
            "cases/x.json: field `runs[0].interactions[0].call_key` (line 18, column 10): \
             required field `call_key` is missing",
        ),
        (
            "\"by\": \"test\"",
            "\"byy\": \"test\"",
            CassetteErrorKind::UnknownField,
            "cases/x.json: field `made.byy` (line 6, column 58): unknown field `byy`, expected \
             one of `how`, `when`, `by`, `temperature`, `seed`, `notes` \
             (harness-cassette/2 has no such field)",
        ),
        (
            "\"anthropic\"",
            "\"gemini\"",
            CassetteErrorKind::InvalidValue,
            "cases/x.json: field `protocol` (line 4, column 23): \
             unknown protocol \"gemini\"; expected `anthropic` or `openai`",
        ),
        (
            "\"scripted\"",
            "\"typed\"",
            CassetteErrorKind::InvalidValue,
            "cases/x.json: field `made.how` (line 6, column 26): \
             unknown made.how \"typed\"; expected `scripted` or `recorded`",
        ),
        (
            "\"latency_ms\": 5",
            "\"latency_ms\": \"5\"",
            CassetteErrorKind::InvalidValue,
            "cases/x.json: field `runs[0].interactions[0].latency_ms` (line 17, column 28): \
             invalid type: string \"5\", expected u64",
        ),
        (
            "\"run\": 0",
            "\"run\": 0, \"run\": 0",
            CassetteErrorKind::InvalidValue,
            "cases/x.json: field `runs[0].run` (line 10, column 22): duplicate field `run`",
        ),
        (
            "\"headers\": {\"content-type\": \"application/json\"}",
            "\"headers\": {\"x y\": 1}",
            CassetteErrorKind::InvalidValue,
            "cases/x.json: field `runs[0].interactions[0].response.headers[\"x y\"]` \
             (line 16, column 59): invalid type: integer `1`, expected a string",
        ),
    ] {
        let text = m.replacen(from, to, 1);
        assert_ne!(text, m, "replacement applied for {from}");
        let e = parse(&text).unwrap_err();
        assert_eq!((e.kind, e.to_string().as_str()), (kind, message), "{from}");
    }
    // A variant is the author's text and may hold anything, the list's
    // marker included; the list is still the enum's.
    let e =
        parse(&m.replacen("\"role\": \"plan\"", "\"role\": \"plan`, expected x\"", 1)).unwrap_err();
    assert_eq!(
        e.message,
        "unknown role \"plan`, expected x\"; expected one of `plan`, `execute`, `judge`, `replan`, `compact`, `lesson`"
    );
}

#[test]
fn a_cassette_without_conditions_is_refused_with_the_way_to_migrate() {
    let old = minimal("c1").replace("harness-cassette/2", "harness-cassette/1");
    let e = parse(&old).unwrap_err().to_string();
    assert!(
        e.contains("cases/x.json")
            && e.contains("format")
            && e.contains("states no recording conditions"),
        "{e}"
    );
    assert!(
        e.contains("bench script --migrate-recorded cases/x.json"),
        "{e}"
    );

    // The new format with a role left out: refused naming the role.
    let mut c = parse(&minimal("c1")).unwrap();
    c.conditions.remove(&CallRole::Plan);
    let e = c.check(Path::new("cases/x.json")).unwrap_err().to_string();
    assert!(
        e.contains("conditions.plan") && e.contains("is missing"),
        "{e}"
    );
}

#[test]
fn conditions_read_from_recorded_bodies_must_agree_per_role() {
    let mut c = parse(&minimal("c1")).unwrap();
    let body = |m: &str| json!({"model": m, "max_tokens": 10, "system": "s", "messages": []});
    c.runs[0].interactions[0].request.body = Some(body("m1"));
    c.runs[0].interactions[0].request.body_sha256 = Some(body_sha256(&body("m1")));
    c.conditions_from_bodies().unwrap();
    assert_eq!(c.conditions.len(), 1);
    assert_eq!(c.conditions[&CallRole::Plan].model.as_deref(), Some("m1"));
    let d = c
        .condition_difference(CallRole::Plan, body("m2").to_string().as_bytes())
        .unwrap();
    assert_eq!(d.to_string(), "model: recorded m1, requested m2");

    let mut second = c.runs[0].interactions[0].clone();
    second.call_key = "plan/1".into();
    second.request.body = Some(body("m2"));
    c.runs[0].interactions.push(second);
    let e = c.conditions_from_bodies().unwrap_err();
    assert!(
        e.contains("runs[0].interactions[1]") && e.contains("model: recorded m1, requested m2"),
        "{e}"
    );
}
