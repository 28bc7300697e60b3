//! Every check `load`, `save` and `Recordings::add` make before a cassette
//! is used: secrets first, then the format, the limits and each
//! interaction's fields (a call key repeated in a run only as a set of
//! conditional replies). The first failure is the error, naming its field.

use std::collections::BTreeMap;
use std::path::Path;

use super::alternatives::AlternativesCheck;
use super::canonical::{body_sha256, json_string};
use super::error::{CassetteError, CassetteErrorKind};
use super::format::*;
use super::secrets::find_secret;

fn is_hex64(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

fn valid_case_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_CASE_ID_LEN
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.')
        && s != "."
        && s != ".."
}

fn looks_like_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
}

fn check_headers(
    file: &Path,
    base: &str,
    headers: &BTreeMap<String, String>,
) -> Result<(), CassetteError> {
    use wiremock::http::{HeaderName, HeaderValue};
    for (k, v) in headers {
        let field = format!("{base}.headers[{}]", json_string(k));
        if HeaderName::from_bytes(k.as_bytes()).is_err() {
            return Err(CassetteError::new(
                file,
                Some(field),
                CassetteErrorKind::InvalidValue,
                "not a valid HTTP header name",
            ));
        }
        if HeaderValue::from_str(v).is_err() {
            return Err(CassetteError::new(
                file,
                Some(field),
                CassetteErrorKind::InvalidValue,
                "not a valid HTTP header value (visible ASCII only)",
            ));
        }
    }
    Ok(())
}

fn check_response(file: &Path, base: &str, r: &RecordedResponse) -> Result<(), CassetteError> {
    if !(100..=599).contains(&r.status) {
        return Err(CassetteError::new(
            file,
            Some(format!("{base}.status")),
            CassetteErrorKind::InvalidValue,
            format!(
                "status {} is out of range; expected an HTTP status 100..=599",
                r.status
            ),
        ));
    }
    check_headers(file, base, &r.headers)?;
    if r.body_raw.is_some() && r.body.is_some() {
        return Err(CassetteError::new(
            file,
            Some(format!("{base}.body_raw")),
            CassetteErrorKind::InvalidValue,
            "give either `body` (JSON) or `body_raw` (a string served verbatim), not both",
        ));
    }
    Ok(())
}

/// The error for `field`, as every check below returns it.
fn refuse(
    file: &Path,
    field: &str,
    kind: CassetteErrorKind,
    msg: impl Into<String>,
) -> Result<(), CassetteError> {
    Err(CassetteError::new(file, Some(field.to_string()), kind, msg))
}

impl Cassette {
    /// Every check `load` and `save` make: format, limits, secrets, field
    /// values, duplicates. `file` is only used to name the file in errors.
    pub fn check(&self, file: &Path) -> Result<(), CassetteError> {
        // Secrets first: a cassette with a key in it is refused whatever else is wrong.
        self.check_no_secret(file)?;
        self.check_top_level(file)?;
        self.check_limits(file)?;
        self.check_conditions(file)?;
        let endpoint = endpoint_path(self.protocol);
        for (ri, run) in self.runs.iter().enumerate() {
            if run.run as usize != ri {
                return refuse(
                    file,
                    &format!("runs[{ri}].run"),
                    CassetteErrorKind::InvalidValue,
                    format!(
                        "is {}; expected {ri} (runs are numbered 0, 1, 2, ... in order)",
                        run.run
                    ),
                );
            }
            let list = format!("runs[{ri}].interactions");
            // A call key may repeat only as a set of conditional replies
            // (alternatives.rs holds the rules, shared with scenarios).
            let mut alternatives = AlternativesCheck::new(&list, "call_key", ri);
            for (ii, it) in run.interactions.iter().enumerate() {
                let base = format!("{list}[{ii}]");
                if it.call_key.trim().is_empty() {
                    return refuse(
                        file,
                        &format!("{base}.call_key"),
                        CassetteErrorKind::InvalidValue,
                        "is empty; expected e.g. \"plan/0\"",
                    );
                }
                if let Err(r) = alternatives.admit(
                    ii,
                    &it.call_key,
                    it.when_request_contains.as_deref(),
                    it.role.as_str(),
                ) {
                    return refuse(file, &format!("{base}.{}", r.field), r.kind, r.message);
                }
                self.check_interaction(file, &base, endpoint, it)?;
            }
        }
        Ok(())
    }

    /// Every role an interaction has states its recording conditions.
    fn check_conditions(&self, file: &Path) -> Result<(), CassetteError> {
        for (ri, run) in self.runs.iter().enumerate() {
            for (ii, it) in run.interactions.iter().enumerate() {
                if !self.conditions.contains_key(&it.role) {
                    return refuse(
                        file,
                        &format!("conditions.{}", it.role.as_str()),
                        CassetteErrorKind::InvalidValue,
                        format!(
                            "is missing, but runs[{ri}].interactions[{ii}] is a {} call; expected the conditions its replies hold for \
                             (`bench script` states them for a scripted case, `bench script --migrate-recorded` reads them from recorded bodies)",
                            it.role.as_str()
                        ),
                    );
                }
            }
        }
        Ok(())
    }

    fn check_no_secret(&self, file: &Path) -> Result<(), CassetteError> {
        let doc = serde_json::to_value(self).map_err(|e| {
            CassetteError::new(file, None, CassetteErrorKind::InvalidValue, e.to_string())
        })?;
        match find_secret(&doc, &mut Vec::new()) {
            Some((field, what)) => Err(CassetteError::new(
                file,
                Some(field),
                CassetteErrorKind::Secret,
                format!("{what}; cassettes must not contain credentials (record through redact_headers/redact_json)"),
            )),
            None => Ok(()),
        }
    }

    /// `format`, `case`, `model` and `made`.
    fn check_top_level(&self, file: &Path) -> Result<(), CassetteError> {
        use CassetteErrorKind::InvalidValue;
        if self.format == FORMAT_WITHOUT_CONDITIONS {
            return refuse(
                file,
                "format",
                InvalidValue,
                format!(
                    "is \"{FORMAT_WITHOUT_CONDITIONS}\", which states no recording conditions; expected \"{FORMAT}\". \
                     Migrate it: `bench script <case dir>` for a scripted case (scenario.json beside it), \
                     `bench script --migrate-recorded {}` for a recorded one",
                    file.display()
                ),
            );
        }
        if self.format != FORMAT {
            return refuse(
                file,
                "format",
                InvalidValue,
                format!("is \"{}\"; expected \"{FORMAT}\"", self.format),
            );
        }
        if !valid_case_id(&self.case) {
            return refuse(
                file,
                "case",
                InvalidValue,
                format!(
                    "\"{}\" is not a valid case id; expected 1..={MAX_CASE_ID_LEN} characters from A-Z a-z 0-9 - _ . (it becomes a URL segment)",
                    self.case
                ),
            );
        }
        if self.model.trim().is_empty() {
            return refuse(
                file,
                "model",
                InvalidValue,
                "is empty; expected the model name",
            );
        }
        if !looks_like_date(&self.made.when) {
            return refuse(
                file,
                "made.when",
                InvalidValue,
                format!(
                    "\"{}\" is not a date; expected RFC 3339 or YYYY-MM-DD",
                    self.made.when
                ),
            );
        }
        if let Some(t) = self.made.temperature {
            if !t.is_finite() || t < 0.0 {
                return refuse(
                    file,
                    "made.temperature",
                    InvalidValue,
                    format!("{t}; expected a non-negative number or null"),
                );
            }
        }
        Ok(())
    }

    /// At least one run variant, and no more runs or interactions than the
    /// limits allow.
    fn check_limits(&self, file: &Path) -> Result<(), CassetteError> {
        if self.runs.is_empty() {
            return refuse(
                file,
                "runs",
                CassetteErrorKind::InvalidValue,
                "is empty; expected at least one run variant",
            );
        }
        if self.runs.len() > MAX_RUNS {
            return refuse(
                file,
                "runs",
                CassetteErrorKind::Limit,
                format!(
                    "has {} run variants; the limit is {MAX_RUNS}",
                    self.runs.len()
                ),
            );
        }
        let total: usize = self.runs.iter().map(|r| r.interactions.len()).sum();
        if total > MAX_INTERACTIONS {
            return refuse(
                file,
                "runs",
                CassetteErrorKind::Limit,
                format!("has {total} interactions; the limit is {MAX_INTERACTIONS} per cassette"),
            );
        }
        Ok(())
    }

    /// One interaction's request, response, latency and faults (`base` is
    /// its path); its call key, unique within the run, is the caller's.
    fn check_interaction(
        &self,
        file: &Path,
        base: &str,
        endpoint: &str,
        it: &Interaction,
    ) -> Result<(), CassetteError> {
        use CassetteErrorKind::Limit;
        self.check_request(file, base, endpoint, &it.request)?;
        check_response(file, &format!("{base}.response"), &it.response)?;
        if it.latency_ms > MAX_LATENCY_MS {
            return refuse(
                file,
                &format!("{base}.latency_ms"),
                Limit,
                format!("is {}; the limit is {MAX_LATENCY_MS}", it.latency_ms),
            );
        }
        if it.faults_before.len() > MAX_FAULTS_BEFORE {
            return refuse(
                file,
                &format!("{base}.faults_before"),
                Limit,
                format!(
                    "has {} entries; the limit is {MAX_FAULTS_BEFORE}",
                    it.faults_before.len()
                ),
            );
        }
        for (fi, f) in it.faults_before.iter().enumerate() {
            check_response(file, &format!("{base}.faults_before[{fi}]"), f)?;
        }
        Ok(())
    }

    /// One interaction's request (`base` is the interaction's path): POST to
    /// the protocol's `endpoint`, no secret-bearing header, and a body hash
    /// that is the body's when both are recorded.
    fn check_request(
        &self,
        file: &Path,
        base: &str,
        endpoint: &str,
        req: &RecordedRequest,
    ) -> Result<(), CassetteError> {
        use CassetteErrorKind::InvalidValue;
        if !req.method.eq_ignore_ascii_case("POST") {
            return refuse(
                file,
                &format!("{base}.request.method"),
                InvalidValue,
                format!("is \"{}\"; expected \"POST\"", req.method),
            );
        }
        if req.path != endpoint {
            return refuse(
                file,
                &format!("{base}.request.path"),
                InvalidValue,
                format!(
                    "is \"{}\"; a {} cassette expects \"{endpoint}\"",
                    req.path,
                    self.protocol.as_str()
                ),
            );
        }
        check_headers(file, &format!("{base}.request"), &req.headers)?;
        if let Some(h) = &req.body_sha256 {
            if !is_hex64(h) {
                return refuse(
                    file,
                    &format!("{base}.request.body_sha256"),
                    InvalidValue,
                    "expected 64 lowercase hex characters or null",
                );
            }
            if let Some(body) = &req.body {
                let actual = body_sha256(body);
                if &actual != h {
                    return refuse(
                        file,
                        &format!("{base}.request.body_sha256"),
                        InvalidValue,
                        format!(
                            "does not match the canonical SHA-256 of `request.body` ({actual}); fix or null it"
                        ),
                    );
                }
            }
        }
        Ok(())
    }
}
