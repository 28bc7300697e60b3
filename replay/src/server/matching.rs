//! Finding a request's recording: case, endpoint, run variant, call key,
//! then role and method, each refusal a miss message that names the
//! nearest thing that is recorded, so a failed replay says what to fix
//! instead of falling through to anything live.

use std::sync::atomic::Ordering;

use wiremock::{Request, ResponseTemplate};

use super::body_diff::strict_check;
use super::cases::ServeCase;
use super::incoming::parse_incoming;
use super::response::with_delay;
use super::state::Shared;
use crate::cassette::{endpoint_path, nearest};
use model::types::Protocol;

impl Shared {
    /// The answer for a request, or the miss message.
    pub(super) fn answer(&self, req: &Request) -> Result<ResponseTemplate, String> {
        let inc = parse_incoming(req)?;
        let (case, run, key) = (inc.case, inc.run, inc.call_key);
        // The run whose variant and faults answer (the URL's unless pinned).
        let served = self.opts.serve_as_run.unwrap_or(run);

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
        let n = sc.variants.len().max(1) as u32;
        let variant = served % n;
        let Some(it) = sc.variants.get(variant as usize).and_then(|v| v.get(key)) else {
            return Err(self.no_such_call_key(sc, case, run, variant, n, key));
        };
        let at = format!("case \"{case}\" run {run} (variant {variant} of {n}) call_key \"{key}\"");
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
        if self.opts.strict {
            strict_check(it, &req.body).map_err(|why| format!("{at}: {why}"))?;
        }

        // Scripted faults first: attempt k < len(faults_before) gets the k-th.
        if let Some(f) = it.faults_before.get(inc.attempt as usize) {
            self.counters
                .scripted_faults
                .fetch_add(1, Ordering::Relaxed);
            return Ok(f.template(f.body.clone()));
        }

        let recorded_delay = self.scaled(it.latency_ms);
        match self.opts.faults.decide(case, served, key, inc.attempt) {
            None => Ok(with_delay(
                it.response.template(it.response.body.clone()),
                recorded_delay,
            )),
            Some(kind) => {
                self.counters
                    .faults_injected
                    .fetch_add(1, Ordering::Relaxed);
                Ok(self.inject(kind, sc.protocol, it, recorded_delay, &inc))
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

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::server::{ReplayCounters, ReplayOptions, HEADER_CALL_ROLE};
    use model::types::Protocol;
    use serde_json::json;

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
        std::fs::copy(example_path(), dir.path().join("example.json")).unwrap();
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
