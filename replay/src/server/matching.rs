//! Finding a request's recording: case, endpoint, run variant, call key,
//! the key's reply for this request's text (when it has conditional
//! alternatives), then role and method, each refusal a miss message that names the
//! nearest thing that is recorded, so a failed replay says what to fix
//! instead of falling through to anything live.

use std::sync::atomic::Ordering;

use wiremock::{Request, ResponseTemplate};

use super::body_diff::strict_check;
use super::cases::{ServeCase, ServeInteraction};
use super::incoming::{parse_incoming, Incoming};
use super::response::with_delay;
use super::state::Shared;
use super::HEADER_ALTERNATIVE;
use crate::cassette::{choose, endpoint_path, nearest};
use model::types::Protocol;

impl Shared {
    /// The answer for a request, or the miss message.
    pub(super) fn answer(&self, req: &Request) -> Result<ResponseTemplate, String> {
        let inc = parse_incoming(req)?;
        let (case, run, key) = (inc.case, inc.run, inc.call_key);
        // The run whose variant and faults answer (the URL's unless pinned).
        let served = self.opts.serve_as_run.unwrap_or(run);
        let sc = self.serve_case(&inc)?;
        let n = sc.variants.len().max(1) as u32;
        let variant = served % n;
        let Some(alts) = sc.variants.get(variant as usize).and_then(|v| v.get(key)) else {
            return Err(self.no_such_call_key(sc, case, run, variant, n, key));
        };
        let at = format!("case \"{case}\" run {run} (variant {variant} of {n}) call_key \"{key}\"");
        let Some(it) = choose(alts, |a| a.when.as_deref(), &req.body) else {
            return Err(no_alternative_matches(&at, sc, alts));
        };
        // A key with conditional replies says which one answered, on every
        // response for it (faults included): the trace shows the branch.
        let conditional = alts.len() > 1 || it.when.is_some();
        let mark = |t: ResponseTemplate| {
            if conditional {
                t.insert_header(HEADER_ALTERNATIVE, it.at.as_str())
            } else {
                t
            }
        };
        self.refuse_unlike(&at, sc, it, &inc, req)?;
        Ok(mark(self.reply(sc, it, &inc, served)))
    }

    /// The request's case, if it is loaded and the request went to the
    /// case's protocol's endpoint: a miss names the nearest case, or the
    /// protocol the cassette speaks.
    fn serve_case(&self, inc: &Incoming<'_>) -> Result<&ServeCase, String> {
        let (case, run, key) = (inc.case, inc.run, inc.call_key);
        let Some(sc) = self.cases.get(case) else {
            let near = nearest(case, self.cases.keys().map(String::as_str));
            return Err(match near {
                Some(n) => format!(
                    "unknown case \"{case}\" (run {run}, call_key \"{key}\"); nearest recorded case is \"{n}\" ({})",
                    self.cases.get(n).map(|c| c.source.display().to_string()).unwrap_or_default()
                ),
                None => format!("unknown case \"{case}\": no cassettes are loaded"),
            });
        };
        let expected_endpoint = endpoint_path(sc.protocol);
        // OpenAI clients take a base URL that already ends in /v1 and append
        // /chat/completions; accept the path without /v1 too, so
        // base_url_for() works with either base-URL convention.
        let endpoint_ok = inc.endpoint == expected_endpoint
            || (sc.protocol == Protocol::Openai && inc.endpoint == "/chat/completions");
        if !endpoint_ok {
            return Err(format!(
                "case \"{case}\" run {run} call_key \"{key}\": protocol mismatch: the cassette ({}) is {} \
                 (POST {expected_endpoint}) but the request went to {}",
                sc.source.display(),
                sc.protocol.as_str(),
                inc.endpoint
            ));
        }
        Ok(sc)
    }

    /// Refuse a request the chosen recording `it` never saw (another role,
    /// method, conditions, or in strict mode body): a matching call key
    /// alone does not make the recorded reply true for it.
    fn refuse_unlike(
        &self,
        at: &str,
        sc: &ServeCase,
        it: &ServeInteraction,
        inc: &Incoming<'_>,
        req: &Request,
    ) -> Result<(), String> {
        if it.role != inc.role {
            return Err(format!(
                "{at}: role mismatch: recorded role {} but the request says {}",
                it.role.as_str(),
                inc.role.as_str()
            ));
        }
        if !req.method.as_str().eq_ignore_ascii_case(&it.method) {
            return Err(format!(
                "{at}: method mismatch: recorded {} but got {}",
                it.method, req.method
            ));
        }
        // A reply holds only under the conditions it was recorded under:
        // another model, prompt, tool set, sampling or length limit is a
        // request this recording never saw, however its call key matches.
        if let Some(d) = sc.condition_difference(inc.role, &req.body) {
            return Err(format!(
                "{at}: {OTHER_CONDITIONS}: {d} ({})",
                sc.source.display()
            ));
        }
        if self.opts.strict {
            strict_check(it, &req.body).map_err(|why| format!("{at}: {why}"))?;
        }
        Ok(())
    }

    /// What answers an accepted request: its scripted fault for this
    /// attempt, else a seeded fault the plan decides on, else the recorded
    /// response after its scaled latency.
    fn reply(
        &self,
        sc: &ServeCase,
        it: &ServeInteraction,
        inc: &Incoming<'_>,
        served: u32,
    ) -> ResponseTemplate {
        // Scripted faults first: attempt k < len(faults_before) gets the k-th.
        if let Some(f) = it.faults_before.get(inc.attempt as usize) {
            self.counters
                .scripted_faults
                .fetch_add(1, Ordering::Relaxed);
            return f.template(f.body.clone());
        }
        let recorded_delay = self.scaled(it.latency_ms);
        match self
            .opts
            .faults
            .decide(inc.case, served, inc.call_key, inc.attempt)
        {
            None => {
                self.note_held(inc, recorded_delay);
                with_delay(
                    it.response.template(it.response.body.clone()),
                    recorded_delay,
                )
            }
            Some(kind) => {
                self.counters
                    .faults_injected
                    .fetch_add(1, Ordering::Relaxed);
                self.note_held(inc, self.held_for(kind, it, recorded_delay));
                self.inject(kind, sc.protocol, it, recorded_delay, inc)
            }
        }
    }

    fn no_such_call_key(
        &self,
        sc: &ServeCase,
        case: &str,
        run: u32,
        variant: u32,
        n: u32,
        key: &str,
    ) -> String {
        let mut msg =
            format!("case \"{case}\" run {run} (variant {variant} of {n}): no recording for call_key \"{key}\"");
        let here = sc.variants.get(variant as usize);
        match here.and_then(|v| nearest(key, v.keys().map(String::as_str))) {
            Some(near) => {
                let role = here
                    .and_then(|v| v.get(near))
                    .and_then(|alts| alts.first())
                    .map(|i| i.role.as_str())
                    .unwrap_or("?");
                msg.push_str(&format!(
                    "; nearest in this run is \"{near}\" (role {role})"
                ));
            }
            None => msg.push_str("; this run variant has no recordings"),
        }
        // The case's nearest run: another variant that does have this key.
        if let Some(other) = sc.variants.iter().position(|v| v.contains_key(key)) {
            msg.push_str(&format!("; the key is recorded in run variant {other}"));
        }
        msg.push_str(&format!(" ({})", sc.source.display()));
        msg
    }
}

/// How a refusal for other conditions reads (the bench classifies it from
/// the typed comparison, not from this text).
pub const OTHER_CONDITIONS: &str = "replayed under other conditions";

/// Longest piece of a condition quoted in a miss message, in characters.
const CONDITION_QUOTED_MAX_CHARS: usize = 80;

/// The miss for a key whose replies are all conditional and none of whose
/// conditions the request contains: each condition and where it is, so the
/// author sees which text the prompt lacked.
fn no_alternative_matches(at: &str, sc: &ServeCase, alts: &[ServeInteraction]) -> String {
    let conditions: Vec<String> = alts
        .iter()
        .filter_map(|a| {
            a.when.as_deref().map(|w| {
                let mut q: String = w.chars().take(CONDITION_QUOTED_MAX_CHARS).collect();
                if q.len() < w.len() {
                    q.push_str("...");
                }
                format!("{q:?} ({})", a.at)
            })
        })
        .collect();
    format!(
        "{at}: no reply matches the request: its text contains none of when_request_contains {}, and the key has no reply without a condition ({})",
        conditions.join(", "),
        sc.source.display()
    )
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::server::{ReplayCounters, ReplayOptions, HEADER_ALTERNATIVE, HEADER_CALL_ROLE};
    use model::types::Protocol;
    use serde_json::json;

    #[tokio::test]
    async fn a_request_under_other_conditions_is_refused_never_answered() {
        let recorded = json!({"model": "claude-opus-5", "max_tokens": 512, "system": "plan it",
                              "messages": [{"role": "user", "content": "goal"}]});
        let mut cassette = test_cassette();
        cassette.conditions = model::conditions::every_role_as(Protocol::Anthropic, &recorded);
        cassette.indifferent_to = vec![];
        let mut rec = crate::cassette::Recordings::new();
        rec.add(cassette, "mem/srv.json").unwrap();
        let s = crate::server::ReplayServer::start(rec, fast())
            .await
            .unwrap();
        let c = reqwest::Client::new();
        let base = s.base_url_for(CASE, 0);
        let send = |body: serde_json::Value| {
            let (c, base) = (c.clone(), base.clone());
            async move { call(&c, &base, "/v1/messages", "plan", "plan/0", 0, &body).await }
        };
        // Another conversation under the same conditions: answered.
        let mut same = recorded.clone();
        same["messages"] = json!([{"role": "user", "content": "another goal"}]);
        assert_eq!(send(same).await.json()["id"], "msg_plan_v0");
        // Another model, prompt, length or sampling: refused, naming the field.
        for (field, v, says) in [
            (
                "model",
                json!("claude-sonnet-9"),
                "model: recorded claude-opus-5, requested claude-sonnet-9",
            ),
            (
                "system",
                json!("plan it boldly"),
                "system: recorded sha256 ",
            ),
            (
                "max_tokens",
                json!(4096),
                "max_tokens: recorded 512, requested 4096",
            ),
            (
                "temperature",
                json!(0.9),
                "temperature: recorded (not sent), requested 0.9",
            ),
            ("tools", json!([{"name": "x"}]), "tools: recorded sha256 "),
        ] {
            let mut other = recorded.clone();
            other[field] = v;
            let miss = send(other).await.miss_message();
            assert!(
                miss.contains("replayed under other conditions") && miss.contains(says),
                "{field}: {miss}"
            );
        }
    }

    #[tokio::test]
    async fn run_index_selects_variant_modulo() {
        let s = server(fast()).await;
        let c = reqwest::Client::new();
        for run in 0..6u32 {
            let got = call(
                &c,
                &s.base_url_for(CASE, run),
                "/v1/messages",
                "plan",
                "plan/0",
                0,
                &json!({}),
            )
            .await;
            assert_eq!(
                got.json()["id"],
                format!("msg_plan_v{}", run % 2),
                "run {run}"
            );
        }
    }

    #[tokio::test]
    async fn a_pinned_run_serves_its_variant_and_keeps_each_urls_capture() {
        let s = server(ReplayOptions {
            serve_as_run: Some(1),
            capture: true,
            ..fast()
        })
        .await;
        assert_eq!((s.served_run(4), s.served_run(7)), (1, 1));
        let c = reqwest::Client::new();
        for run in [0u32, 2, 4] {
            let got = call(
                &c,
                &s.base_url_for(CASE, run),
                "/v1/messages",
                "plan",
                "plan/0",
                0,
                &json!({ "run": run }),
            )
            .await;
            // Run 1's variant for every URL, whatever its parity.
            assert_eq!(got.json()["id"], "msg_plan_v1", "run {run}");
        }
        for run in [0u32, 2, 4] {
            let cap = s.take_captured(CASE, run);
            assert_eq!(cap.len(), 1, "run {run}: its own capture");
            assert!(cap[0].body.contains(&format!("\"run\":{run}")), "run {run}");
        }
    }

    /// One case whose `execute/t2/a0/0` has two replies: one served when the
    /// request carries a lesson's workaround, one otherwise; and whose
    /// `execute/t3/a0/0` has only a conditional one.
    fn conditional_cassette() -> crate::cassette::Cassette {
        let reply = |id: &str| json!({"status": 200, "body": {"id": id, "content": []}});
        let it = |key: &str, when: Option<&str>, id: &str| {
            let mut v = json!({
                "role": "execute", "call_key": key,
                "request": {"path": "/v1/messages", "body": null, "body_sha256": null},
                "response": reply(id),
            });
            if let Some(w) = when {
                v["when_request_contains"] = json!(w);
            }
            v
        };
        serde_json::from_value(json!({
            "format": crate::cassette::FORMAT, "case": "cond", "protocol": "anthropic", "model": "claude-test",
            "made": {"how": "scripted", "when": "2025-01-01", "by": "server tests"},
            "conditions": model::conditions::every_role_as(Protocol::Anthropic, &json!({})),
            "indifferent_to": model::conditions::ConditionField::ALL,
            "runs": [{"run": 0, "interactions": [
                it("execute/t2/a0/0", None, "msg_explores"),
                it("execute/t2/a0/0", Some("pass --tz \"UTC\""), "msg_uses_the_lesson"),
                it("execute/t3/a0/0", Some("only then"), "msg_t3"),
            ]}]
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn one_call_key_serves_the_reply_its_request_text_selects() {
        let mut rec = crate::cassette::Recordings::new();
        rec.add(conditional_cassette(), "mem/cond.json").unwrap();
        let s = crate::server::ReplayServer::start(
            rec,
            ReplayOptions {
                capture: true,
                ..fast()
            },
        )
        .await
        .unwrap();
        let c = reqwest::Client::new();
        let base = s.base_url_for("cond", 0);
        let exec = |text: &str| json!({"system": "x", "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}]});
        // The workaround's quotes travel escaped; the condition is matched
        // against the decoded text, so it still occurs.
        let with = exec(
            "<lessons>\n- [t1 a0] ... Workaround: pass --tz \"UTC\" to the exporter\n</lessons>",
        );
        let r = call(
            &c,
            &base,
            "/v1/messages",
            "execute",
            "execute/t2/a0/0",
            0,
            &with,
        )
        .await;
        assert_eq!(r.json()["id"], "msg_uses_the_lesson");
        assert_eq!(r.headers[HEADER_ALTERNATIVE], "runs[0].interactions[1]");
        let without = exec("no lessons here, only tz UTC");
        let r = call(
            &c,
            &base,
            "/v1/messages",
            "execute",
            "execute/t2/a0/0",
            0,
            &without,
        )
        .await;
        assert_eq!(r.json()["id"], "msg_explores");
        assert_eq!(r.headers[HEADER_ALTERNATIVE], "runs[0].interactions[0]");
        // The same key and attempt again: the answer is the request's, not the order's.
        let r = call(
            &c,
            &base,
            "/v1/messages",
            "execute",
            "execute/t2/a0/0",
            0,
            &with,
        )
        .await;
        assert_eq!(r.json()["id"], "msg_uses_the_lesson");

        // Only conditional replies and none matches: a miss naming the condition.
        let m = call(
            &c,
            &base,
            "/v1/messages",
            "execute",
            "execute/t3/a0/0",
            0,
            &without,
        )
        .await
        .miss_message();
        assert!(
            m.contains("no reply matches the request")
                && m.contains("\"only then\" (runs[0].interactions[2])")
                && m.contains("mem/cond.json"),
            "{m}"
        );
        let r = call(
            &c,
            &base,
            "/v1/messages",
            "execute",
            "execute/t3/a0/0",
            0,
            &exec("only then"),
        )
        .await;
        assert_eq!(r.json()["id"], "msg_t3");

        // A key without conditions carries no alternative header (the server
        // fixture's cassette, unchanged).
        let plain = server(fast()).await;
        let r = call(
            &c,
            &plain.base_url_for(CASE, 0),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &json!({}),
        )
        .await;
        assert!(r.headers.get(HEADER_ALTERNATIVE).is_none());
        assert_eq!(
            s.take_captured("cond", 0).len(),
            5,
            "every request captured under its URL's run"
        );
    }

    #[tokio::test]
    async fn a_pinned_run_chooses_among_its_variants_alternatives_by_each_request() {
        let mut cassette = conditional_cassette();
        // Variant 1 answers the plain request differently: a pinned run must serve variant 1's.
        let mut v1 = cassette.runs[0].clone();
        v1.run = 1;
        v1.interactions[0].response.body = Some(json!({"id": "msg_explores_v1", "content": []}));
        cassette.runs.push(v1);
        let mut rec = crate::cassette::Recordings::new();
        rec.add(cassette, "mem/cond.json").unwrap();
        let s = crate::server::ReplayServer::start(
            rec,
            ReplayOptions {
                serve_as_run: Some(1),
                capture: true,
                ..fast()
            },
        )
        .await
        .unwrap();
        let c = reqwest::Client::new();
        for (run, text, want) in [
            (0u32, "plain", "msg_explores_v1"),
            (2, "pass --tz \"UTC\"", "msg_uses_the_lesson"),
            (4, "plain", "msg_explores_v1"),
        ] {
            let body = json!({"messages": [{"role": "user", "content": text}], "run": run});
            let r = call(
                &c,
                &s.base_url_for("cond", run),
                "/v1/messages",
                "execute",
                "execute/t2/a0/0",
                0,
                &body,
            )
            .await;
            assert_eq!(r.json()["id"], want, "run {run}");
            assert!(
                r.headers[HEADER_ALTERNATIVE]
                    .to_str()
                    .unwrap()
                    .starts_with("runs[1]."),
                "run {run}"
            );
            let cap = s.take_captured("cond", run);
            assert_eq!(cap.len(), 1, "run {run}: its own capture");
        }
    }

    #[tokio::test]
    async fn misses_name_the_nearest_recording() {
        let s = server(fast()).await;
        let c = reqwest::Client::new();
        let b = json!({});
        let base = s.base_url_for(CASE, 0);

        let m = call(&c, &base, "/v1/messages", "plan", "plan/1", 0, &b)
            .await
            .miss_message();
        assert!(
            m.contains("no recording for call_key \"plan/1\"")
                && m.contains("nearest in this run is \"plan/0\""),
            "{m}"
        );

        let m = call(
            &c,
            &s.base_url_for("srvv", 0),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &b,
        )
        .await
        .miss_message();
        assert!(
            m.contains("unknown case \"srvv\"") && m.contains("nearest recorded case is \"srv\""),
            "{m}"
        );

        let m = call(&c, &base, "/v1/messages", "execute", "plan/0", 0, &b)
            .await
            .miss_message();
        assert!(
            m.contains("role mismatch: recorded role plan but the request says execute"),
            "{m}"
        );

        let m = call(&c, &base, "/v1/chat/completions", "plan", "plan/0", 0, &b)
            .await
            .miss_message();
        assert!(
            m.contains("protocol mismatch") && m.contains("anthropic"),
            "{m}"
        );

        let m = call(
            &c,
            &format!("{}/replay/{CASE}/x", s.uri()),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &b,
        )
        .await
        .miss_message();
        assert!(m.contains("run index \"x\""), "{m}");

        let m = call(&c, &s.uri(), "/v1/messages", "plan", "plan/0", 0, &b)
            .await
            .miss_message();
        assert!(m.contains("not a replay URL"), "{m}");

        let m = call(&c, &base, "/v1/messages", "planner", "plan/0", 0, &b)
            .await
            .miss_message();
        assert!(m.contains("is not plan|execute|judge|replan"), "{m}");

        // No call-key header at all.
        let resp = c
            .post(format!("{base}/v1/messages"))
            .header(HEADER_CALL_ROLE, "plan")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 404);
        assert!(resp
            .text()
            .await
            .unwrap()
            .contains("no x-harness-call-key header"));

        assert_eq!(
            s.counters(),
            ReplayCounters {
                served: 0,
                misses: 8,
                faults_injected: 0,
                scripted_faults: 0
            }
        );
        assert_eq!(s.recent_misses().len(), 8);
    }

    #[tokio::test]
    async fn faults_before_are_served_in_attempt_order() {
        let s = server(fast()).await;
        let c = reqwest::Client::new();
        let base = s.base_url_for(CASE, 1);
        let r0 = call(
            &c,
            &base,
            "/v1/messages",
            "execute",
            "execute/t1/a0/0",
            0,
            &json!({}),
        )
        .await;
        assert_eq!(r0.status, 429);
        assert_eq!(r0.headers["retry-after"], "1");
        assert_eq!(r0.json()["error"]["message"], "slow down");
        let r1 = call(
            &c,
            &base,
            "/v1/messages",
            "execute",
            "execute/t1/a0/0",
            1,
            &json!({}),
        )
        .await;
        assert_eq!(r1.status, 500);
        assert_eq!(r1.body, b"upstream connect error");
        let r2 = call(
            &c,
            &base,
            "/v1/messages",
            "execute",
            "execute/t1/a0/0",
            2,
            &json!({}),
        )
        .await;
        assert_eq!(r2.status, 200);
        assert_eq!(r2.json()["id"], "msg_exec_v1");
        assert_eq!(
            s.counters(),
            ReplayCounters {
                served: 3,
                misses: 0,
                faults_injected: 0,
                scripted_faults: 2
            }
        );
    }

    #[tokio::test]
    async fn embedded_start_for_run_and_openai_base_url_convention() {
        let dir = tempfile::tempdir().unwrap();
        example_any_conditions()
            .save(&dir.path().join("example.json"))
            .unwrap();
        use crate::embed::start_for_run;

        // One case in the directory: no need to name it.
        let (s, url) = start_for_run(dir.path(), None, 1, Protocol::Anthropic, false, 0.0, None)
            .await
            .unwrap();
        assert_eq!(url, s.base_url_for("example-fix-typo", 1));
        let c = reqwest::Client::new();
        let r = call(&c, &url, "/v1/messages", "plan", "plan/0", 0, &json!({})).await;
        assert_eq!(r.json()["id"], "msg_example_plan_1");

        // An OpenAI cassette: the URL ends in /v1 and the client appends /chat/completions.
        let mut oa = test_cassette();
        oa.case = "oa".into();
        oa.protocol = Protocol::Openai;
        for run in &mut oa.runs {
            for it in &mut run.interactions {
                it.request.path = "/v1/chat/completions".into();
            }
        }
        oa.save(dir.path().join("oa.json")).unwrap();
        let (s, url) = start_for_run(
            dir.path(),
            Some("oa"),
            0,
            Protocol::Openai,
            false,
            0.0,
            Some("seed=1"),
        )
        .await
        .unwrap();
        assert!(url.ends_with("/replay/oa/0/v1"), "{url}");
        let r = call(
            &c,
            &url,
            "/chat/completions",
            "plan",
            "plan/0",
            0,
            &json!({}),
        )
        .await;
        assert_eq!(r.json()["id"], "msg_plan_v0");
        // base_url_for (no /v1) works too; /v1/messages is a protocol mismatch.
        let r = call(
            &c,
            &s.base_url_for("oa", 0),
            "/chat/completions",
            "plan",
            "plan/0",
            0,
            &json!({}),
        )
        .await;
        assert_eq!(r.status, 200);
        let m = call(
            &c,
            &s.base_url_for("oa", 0),
            "/v1/messages",
            "plan",
            "plan/0",
            0,
            &json!({}),
        )
        .await
        .miss_message();
        assert!(m.contains("protocol mismatch"), "{m}");

        // Ambiguous, unknown, wrong-protocol, bad faults, broken tree: all errors.
        assert!(
            start_for_run(dir.path(), None, 0, Protocol::Anthropic, false, 0.0, None)
                .await
                .is_err()
        );
        assert!(start_for_run(
            dir.path(),
            Some("nope"),
            0,
            Protocol::Anthropic,
            false,
            0.0,
            None
        )
        .await
        .is_err());
        assert!(start_for_run(
            dir.path(),
            Some("oa"),
            0,
            Protocol::Anthropic,
            false,
            0.0,
            None
        )
        .await
        .is_err());
        assert!(start_for_run(
            dir.path(),
            Some("oa"),
            0,
            Protocol::Openai,
            false,
            0.0,
            Some("429=9")
        )
        .await
        .is_err());
        std::fs::write(dir.path().join("broken.json"), "{").unwrap();
        let e = start_for_run(
            dir.path(),
            Some("oa"),
            0,
            Protocol::Openai,
            false,
            0.0,
            None,
        )
        .await
        .map(|_| ())
        .unwrap_err();
        assert!(e.to_string().contains("broken.json"), "{e}");
    }
}
