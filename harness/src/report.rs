//! The morning report: `<state-dir>/report.json` with the contract's field
//! names, and a short human summary for stdout. Built from the state, the
//! spec and the ending; written atomically like the checkpoint.

use crate::ending::{Alert, Class, Ending, ErrorKind};
use crate::ledger::SpendPoint;
use crate::model::types::Usage;
use crate::state::{CompletedTask, DriftPoint, ModelClaim, PrunedTask, RejectedTask, RunState};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "report.json";

/// What starts the stderr line that carries the report as JSON when
/// report.json could not be written. Readers find the line by this prefix
/// ([`json_on_stderr`]), never by the human sentence before it, which may
/// be reworded.
pub const STDERR_JSON_PREFIX: &str = "harness-report-json: ";

/// The report's JSON text on a harness's stderr, when it put one there.
pub fn json_on_stderr(stderr: &str) -> Option<&str> {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix(STDERR_JSON_PREFIX))
}
/// Where a resumed run moves its last stop report (crate::stop).
pub const STOPPED_FILE_NAME: &str = "report.stopped.json";
/// report.json's `schema_version`: the format of docs/schemas/report.schema.json.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ParkedEntry {
    pub id: String,
    pub reason: String,
    /// Paths its tools wrote, left uncommitted in the workspace.
    #[serde(default)]
    pub uncommitted_paths: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DriftEntry {
    pub step: u64,
    pub score: f64,
    pub band: crate::drift::Band,
}

/// The drift bands a run judged against (`[drift] prune_above`,
/// `halt_above`), kept in the report so its page draws the run's own bands.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DriftBands {
    pub prune_above: f64,
    pub halt_above: f64,
}

impl Default for DriftBands {
    fn default() -> DriftBands {
        DriftBands {
            prune_above: crate::spec::DEFAULT_PRUNE_ABOVE,
            halt_above: crate::spec::DEFAULT_HALT_ABOVE,
        }
    }
}

/// report.json. Readers (the bench, chaos) parse it into this type: a field
/// renamed here is unknown to them and fails the parse, it is never read as
/// absent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// This file's format version (`SCHEMA_VERSION`): raised when a
    /// field changes meaning or goes away. A file written before the field
    /// existed reads as 0.
    #[serde(default)]
    pub schema_version: u32,
    pub ending: Ending,
    pub class: Class,
    pub exit_code: i32,
    pub alert: Alert,
    pub spend_usd: f64,
    pub hard_cap_usd: f64,
    pub usage: Usage,
    pub spend_curve: Vec<SpendPoint>,
    pub verified: Vec<CompletedTask>,
    pub parked: Vec<ParkedEntry>,
    pub pruned: Vec<PrunedTask>,
    pub drift_history: Vec<DriftEntry>,
    /// The bands `drift_history` was judged against (a report written
    /// before this field existed: the defaults).
    #[serde(default)]
    pub drift_bands: DriftBands,
    pub cost_per_verified_task_usd: Option<f64>,
    pub steps: u64,
    pub elapsed_ms: u64,
    /// For UNRECOVERABLE_ERROR: what happened (a refused checkpoint names the
    /// refusal; a recording miss says it was a recording miss).
    pub detail: Option<String>,
    /// Machine-readable cause of an UNRECOVERABLE_ERROR, e.g. `recording_miss`,
    /// `checkpoint_checksum_mismatch`, `goal_tampered`, `http_rejected`.
    pub error_kind: Option<ErrorKind>,
    pub run_id: String,
    pub goal: String,
    pub goal_sha256: String,
    pub predicate_met: bool,
    pub queue_left: Vec<String>,
    pub rejected_tasks: Vec<RejectedTask>,
    pub model_claims: Vec<ModelClaim>,
    pub drift_detail: Vec<DriftPoint>,
    pub git_branch: Option<String>,
    /// Why no commit was made in this run, when the run branch could not be
    /// made or checked out.
    #[serde(default)]
    pub git_disabled: Option<String>,
    pub commits: Vec<String>,
    pub resumes: u32,
    pub budget_notices: u64,
    pub model_calls: u64,
    pub alert_delivery: Vec<String>,
    /// The history compactions attempted (`[memory]`): when (step), bytes
    /// before and after, cost, and how each ended. Left out when there were
    /// none, so a run without `[memory]` writes the report it always did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compactions: Vec<crate::state::Compaction>,
    /// The lessons admitted (`[memory] lessons`), each with the task and
    /// attempt it came from, the token it rests on and its cost. Left out
    /// when there were none, like every `[memory]` field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lessons: Vec<crate::lessons::Lesson>,
    /// The lessons not admitted, each with its reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lessons_refused: Vec<crate::lessons::RefusedLesson>,
    /// Admitted lessons dropped (oldest first) to keep the checkpoint's bounds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lessons_dropped: u64,
    /// Limits an operator raised after the run ended on them (`harness run
    /// --raise-cap-usd` / `--raise-wall-clock-s`): when, which, old, new.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limit_raises: Vec<crate::ledger::LimitRaise>,
    /// The confinement the run's checks ran under (crate::sandbox): its
    /// level and what the kernel offered. Absent in a report written before
    /// the sandbox existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxInForce>,
}

/// report.json's `sandbox`: the level checks ran at, and the probe behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxInForce {
    pub level: crate::sandbox::Level,
    pub probe: crate::sandbox::Probe,
}

impl SandboxInForce {
    /// What this process runs checks at.
    pub fn now() -> SandboxInForce {
        SandboxInForce {
            level: crate::sandbox::level(),
            probe: crate::sandbox::probe().clone(),
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Report {
    #[allow(clippy::too_many_arguments)]
    pub fn build(
        state: &RunState,
        goal: &str,
        ending: Ending,
        detail: Option<String>,
        error_kind: Option<ErrorKind>,
        predicate_met: bool,
        elapsed_ms: u64,
    ) -> Report {
        let n = state.completed.len();
        Report {
            schema_version: SCHEMA_VERSION,
            ending,
            class: ending.class(),
            exit_code: ending.exit_code(),
            alert: ending.alert(),
            spend_usd: state.ledger.spent_usd,
            hard_cap_usd: state.hard_cap_usd,
            usage: state.ledger.usage,
            spend_curve: state.ledger.spend_curve.clone(),
            verified: state.completed.clone(),
            parked: parked_entries(state),
            pruned: state.pruned.clone(),
            drift_history: drift_entries(state),
            drift_bands: DriftBands::default(),
            cost_per_verified_task_usd: if n > 0 {
                Some(state.ledger.spent_usd / n as f64)
            } else {
                None
            },
            steps: state.step,
            elapsed_ms,
            detail,
            error_kind,
            run_id: state.run_id.clone(),
            goal: goal.to_string(),
            goal_sha256: state.goal_sha256.clone(),
            predicate_met,
            queue_left: state.queue.iter().map(|t| t.id.clone()).collect(),
            rejected_tasks: state.rejected.clone(),
            model_claims: state.model_claims.clone(),
            drift_detail: state.drift_history.clone(),
            git_branch: state.git_branch.clone(),
            git_disabled: state.git_disabled.clone(),
            commits: state
                .completed
                .iter()
                .filter_map(|c| c.commit.clone())
                .collect(),
            resumes: state.resumes,
            budget_notices: state.budget_notices,
            model_calls: state.ledger.calls,
            alert_delivery: vec![],
            compactions: state.compactions.clone(),
            lessons: state.lessons.clone(),
            lessons_refused: state.lessons_refused.clone(),
            lessons_dropped: state.lessons_dropped,
            limit_raises: state.limit_raises.clone(),
            sandbox: Some(SandboxInForce::now()),
        }
    }

    pub fn write(&self, state_dir: &Path) -> std::io::Result<()> {
        // The one redaction filter, like every text the harness writes.
        let bytes = crate::redact::to_json_vec(self, true).map_err(std::io::Error::other)?;
        crate::durable::atomic_write(&state_dir.join(FILE_NAME), &bytes)
    }

    /// The ended run's report. A stopped run's report.json (a
    /// [`StoppedReport`]) is refused by name: it is not an ending.
    pub fn load(state_dir: &Path) -> Result<Report, String> {
        let p = state_dir.join(FILE_NAME);
        let b = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        if let Ok(s) = serde_json::from_slice::<StoppedReport>(&b) {
            return Err(format!("{}: {}", p.display(), s.not_ended()));
        }
        serde_json::from_slice(&b).map_err(|e| format!("{}: {e}", p.display()))
    }

    /// A short summary for a person at 9am (through the redaction filter).
    pub fn human_summary(&self) -> String {
        crate::text::printable(&crate::redact::string(self.summary_text())).into_owned()
    }

    fn summary_text(&self) -> String {
        let mut s = String::new();
        self.summary_totals(&mut s);
        self.summary_tasks(&mut s);
        self.summary_memory(&mut s);
        self.summary_git(&mut s);
        s
    }

    /// The summary's head: how the run ended, the goal, the predicate, the
    /// money and the tasks in numbers.
    fn summary_totals(&self, s: &mut String) {
        let class = match self.class {
            Class::Success => "SUCCESS",
            Class::Partial => "PARTIAL",
            Class::Failure => "FAILURE",
        };
        let alert = match self.alert {
            Alert::None => "none",
            Alert::Alert => "alert",
            Alert::Page => "PAGE",
        };
        s.push_str(&format!(
            "ending     {} ({class}, exit {}, {alert})\n",
            self.ending, self.exit_code
        ));
        s.push_str(&format!("goal       {}\n", self.goal));
        s.push_str(&format!(
            "predicate  {}\n",
            if self.predicate_met {
                "met (checked by the harness)"
            } else {
                "NOT met (checked by the harness)"
            }
        ));
        s.push_str(&format!(
            "spend      ${:.4} of ${:.2} cap over {} calls (in {} / out {} / cache read {} / cache write {} tokens)\n",
            self.spend_usd, self.hard_cap_usd, self.model_calls, self.usage.input_tokens, self.usage.output_tokens, self.usage.cache_read_input_tokens, self.usage.cache_creation_input_tokens
        ));
        s.push_str(&format!(
            "tasks      {} verified, {} parked, {} pruned, {} left in queue; {} steps, {:.1}s\n",
            self.verified.len(),
            self.parked.len(),
            self.pruned.len(),
            self.queue_left.len(),
            self.steps,
            self.elapsed_ms as f64 / 1000.0
        ));
        if let Some(c) = self.cost_per_verified_task_usd {
            s.push_str(&format!("per task   ${c:.4} per verified task\n"));
        }
    }

    /// Each task that did not verify (parked, pruned), and the last drift check.
    fn summary_tasks(&self, s: &mut String) {
        for p in &self.parked {
            s.push_str(&format!("parked     {}: {}\n", p.id, p.reason));
        }
        for p in &self.pruned {
            s.push_str(&format!(
                "pruned     {} (drift {:.2} at step {}): {}\n",
                p.id, p.drift_score, p.drift_step, p.description
            ));
        }
        if let Some(d) = self.drift_history.last() {
            s.push_str(&format!(
                "drift      last {:.2} ({:?}) over {} checks\n",
                d.score,
                d.band,
                self.drift_history.len()
            ));
        }
    }

    /// What `[memory]` did: each compaction, and the lessons admitted and refused.
    fn summary_memory(&self, s: &mut String) {
        for c in &self.compactions {
            s.push_str(&format!(
                "compacted  {} at step {}: {} -> {} bytes, ${:.4}, {}{}\n",
                c.call_key,
                c.step,
                c.bytes_before,
                c.bytes_after,
                c.cost_usd,
                c.outcome,
                match &c.detail {
                    Some(d) => format!(" (history kept: {d})"),
                    None => String::new(),
                }
            ));
        }
        if !self.lessons.is_empty() || !self.lessons_refused.is_empty() {
            let mut by_reason: std::collections::BTreeMap<&str, usize> = Default::default();
            for r in &self.lessons_refused {
                *by_reason.entry(r.reason.as_str()).or_default() += 1;
            }
            let reasons: Vec<String> = by_reason.iter().map(|(r, n)| format!("{r} {n}")).collect();
            s.push_str(&format!(
                "lessons    {} admitted, {} refused{}{}\n",
                self.lessons.len(),
                self.lessons_refused.len(),
                if reasons.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", reasons.join(", "))
                },
                if self.lessons_dropped > 0 {
                    format!(", {} dropped (oldest first)", self.lessons_dropped)
                } else {
                    String::new()
                }
            ));
        }
        for l in &self.lessons {
            s.push_str(&format!(
                "lesson     {} admitted: {} Workaround: {} (rests on {:?}, in the {})\n",
                l.call_key, l.constraint, l.workaround, l.anchor, l.anchor_in
            ));
        }
        for r in &self.lessons_refused {
            s.push_str(&format!(
                "lesson     {} refused ({}): {}\n",
                r.call_key, r.reason, r.detail
            ));
        }
    }

    /// The branch the verified tasks were committed on (or why there is
    /// none), and the ending's detail.
    fn summary_git(&self, s: &mut String) {
        if let Some(g) = &self.git_disabled {
            s.push_str(&format!("git        NO COMMITS: {g}\n"));
        }
        if let Some(b) = &self.git_branch {
            s.push_str(&format!(
                "branch     {b} ({} commits)\n",
                self.commits.len()
            ));
        }
        if let Some(d) = &self.detail {
            s.push_str(&format!(
                "detail     {}{d}\n",
                self.error_kind
                    .map(|k| format!("[{k}] "))
                    .unwrap_or_default()
            ));
        }
    }
}

/// The report's view of each parked task.
fn parked_entries(state: &RunState) -> Vec<ParkedEntry> {
    state
        .parked
        .iter()
        .map(|p| ParkedEntry {
            id: p.id.clone(),
            reason: p.reason.clone(),
            uncommitted_paths: p.uncommitted_paths.clone(),
        })
        .collect()
}

/// The drift history as the report's plot reads it: step, score, band.
fn drift_entries(state: &RunState) -> Vec<DriftEntry> {
    state
        .drift_history
        .iter()
        .map(|d| DriftEntry {
            step: d.step,
            score: d.score,
            band: d.band,
        })
        .collect()
}

/// report.json of a run suspended by a stop request (crate::stop). Not an
/// ending, and shaped so nothing can read it as one: it has no `ending`,
/// `class` or `exit_code` of an ending, and [`Report::load`] refuses it by
/// name. The next `harness run` on the state dir resumes the run and, when
/// it ends, replaces this with the ending's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoppedReport {
    pub stopped: StopDetail,
    pub run_id: String,
    pub goal: String,
    pub goal_sha256: String,
    pub spend_usd: f64,
    pub hard_cap_usd: f64,
    pub steps: u64,
    pub elapsed_ms: u64,
    pub resumes: u32,
    /// Ids of the tasks verified so far (kept on resume).
    pub verified: Vec<String>,
    pub parked: Vec<String>,
    pub queue_left: Vec<String>,
    /// The task in flight at the stop: a resume verifies it (done, not
    /// started, partly applied) before anything runs; it is never re-run
    /// blindly.
    pub in_flight_task: Option<String>,
}

/// What stopped the run, when, and how to go on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopDetail {
    /// `SIGTERM`, `SIGINT` or `SIGHUP`.
    pub signal: String,
    /// 128 + the signal's number: never one of the endings' codes.
    pub exit_code: i32,
    pub at_unix_ms: u64,
    /// The grace the run had to reach its safe point (crate::stop::STOP_GRACE_S).
    pub grace_s: u64,
    /// How long it took from the request to this report, in ms.
    pub took_ms: u64,
    /// What was in flight and was cut (a model call abandoned, its
    /// reservation booked as spent; a check killed), if anything.
    pub cut: Option<String>,
    /// Whether a checkpoint is on disk to resume from.
    pub resumable: bool,
    /// Why the stop's own checkpoint was not written (the previous one, if
    /// any, is what a resume continues from).
    pub checkpoint_error: Option<String>,
    pub resume: String,
}

impl StoppedReport {
    pub fn load(state_dir: &Path) -> Result<StoppedReport, String> {
        let p = state_dir.join(FILE_NAME);
        let b = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        serde_json::from_slice(&b).map_err(|e| format!("{}: {e}", p.display()))
    }

    pub fn write(&self, state_dir: &Path) -> std::io::Result<()> {
        let bytes = crate::redact::to_json_vec(self, true).map_err(std::io::Error::other)?;
        crate::durable::atomic_write(&state_dir.join(FILE_NAME), &bytes)
    }

    /// One sentence for any reader that wanted an ending.
    pub fn not_ended(&self) -> String {
        format!(
            "the run was STOPPED by {} at step {} and has not ended (a stop is not one of the seven endings); {}",
            self.stopped.signal, self.steps, self.stopped.resume
        )
    }

    /// The summary for stdout, through the redaction filter.
    pub fn human_summary(&self) -> String {
        let d = &self.stopped;
        let mut s = format!(
            "stopped    by {} (exit {}): NOT an ending; {}\n",
            d.signal,
            d.exit_code,
            if d.resumable {
                "resumable"
            } else {
                "NOT resumable: no checkpoint"
            }
        );
        s.push_str(&format!(
            "spend      ${:.4} of ${:.2} cap\n",
            self.spend_usd, self.hard_cap_usd
        ));
        s.push_str(&format!(
            "done       {} verified, {} parked, {} queued\n",
            self.verified.len(),
            self.parked.len(),
            self.queue_left.len()
        ));
        if let Some(t) = &self.in_flight_task {
            s.push_str(&format!(
                "in flight  {t} (verified on resume, never re-run blindly)\n"
            ));
        }
        if let Some(c) = &d.cut {
            s.push_str(&format!("cut        {c}\n"));
        }
        if let Some(e) = &d.checkpoint_error {
            s.push_str(&format!("checkpoint NOT written: {e}\n"));
        }
        s.push_str(&format!("resume     {}\n", d.resume));
        crate::text::printable(&crate::redact::string(s)).into_owned()
    }
}

/// The line the alerts file (and webhook) gets when a run is stopped: not
/// an [`AlertLine`] (it names no ending), so a reader of endings skips it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StopNotice {
    pub unix_ms: u64,
    /// Always `stopped`.
    pub action: String,
    pub run_id: String,
    pub signal: String,
    pub exit_code: i32,
    pub spend_usd: f64,
    pub resumable: bool,
    pub report: PathBuf,
}

/// Tell a person the run was stopped: the alerts file and the webhook, as
/// an ending's alert is delivered.
pub async fn deliver_stop_notice(
    spec: &crate::spec::AlertSpec,
    state_dir: &Path,
    report: &StoppedReport,
) -> Vec<String> {
    let notice = StopNotice {
        unix_ms: crate::clock::now_unix_ms(),
        action: "stopped".into(),
        run_id: report.run_id.clone(),
        signal: report.stopped.signal.clone(),
        exit_code: report.stopped.exit_code,
        spend_usd: report.spend_usd,
        resumable: report.stopped.resumable,
        report: state_dir.join(FILE_NAME),
    };
    deliver_line(spec, state_dir, "stop notice", &notice).await
}

/// The alerts file's name in the state dir (when the spec names no file).
pub const ALERTS_FILE_NAME: &str = "alerts.jsonl";

/// One line of the alerts file, and the webhook's body: what a person is
/// told when a run ends with an alert or a page. Readers (chaos) parse it
/// through this type, never by field names of their own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlertLine {
    pub unix_ms: u64,
    /// `alert` or `page` (never `none`: no line is written then).
    pub action: Alert,
    pub run_id: String,
    pub ending: Ending,
    pub class: Class,
    pub exit_code: i32,
    pub spend_usd: f64,
    pub detail: Option<String>,
    /// The report.json this alert is about.
    pub report: PathBuf,
}

/// Deliver the ending's alert action: a line in the alerts file (the spec's,
/// or `<state-dir>/alerts.jsonl`) and, when configured, a POST to the webhook.
/// Delivery problems are reported, never turned into a different ending.
pub async fn deliver_alert(
    spec: &crate::spec::AlertSpec,
    state_dir: &Path,
    report: &Report,
) -> Vec<String> {
    let mut out = vec![];
    if report.alert == Alert::None {
        return out;
    }
    let action = if report.alert == Alert::Page {
        "page"
    } else {
        "alert"
    };
    let line = AlertLine {
        unix_ms: crate::clock::now_unix_ms(),
        action: report.alert,
        run_id: report.run_id.clone(),
        ending: report.ending,
        class: report.class,
        exit_code: report.exit_code,
        spend_usd: report.spend_usd,
        detail: report.detail.clone(),
        report: state_dir.join(FILE_NAME),
    };
    out.extend(deliver_line(spec, state_dir, action, &line).await);
    out
}

/// One line to the alerts file (the spec's, or `<state-dir>/alerts.jsonl`)
/// and, when configured, the same body POSTed to the webhook; what happened
/// to each, said in a sentence. Never fails.
async fn deliver_line(
    spec: &crate::spec::AlertSpec,
    state_dir: &Path,
    action: &str,
    line: &impl Serialize,
) -> Vec<String> {
    let mut out = vec![];
    // The one redaction filter, for the file line and the webhook body alike.
    let body = match crate::redact::to_json_vec(line, false) {
        Ok(b) => b,
        Err(e) => {
            out.push(format!("{action} NOT written: cannot serialize it: {e}"));
            return out;
        }
    };
    let file = spec
        .file
        .clone()
        .unwrap_or_else(|| state_dir.join(ALERTS_FILE_NAME));
    let res = (|| -> std::io::Result<()> {
        use std::io::Write;
        if let Some(p) = file.parent() {
            std::fs::create_dir_all(p)?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)?;
        let mut framed = body.clone();
        framed.push(b'\n');
        f.write_all(&framed)?;
        f.sync_data()
    })();
    out.push(match res {
        Ok(()) => format!("{action} written to {}", file.display()),
        Err(e) => format!("{action} NOT written to {}: {e}", file.display()),
    });
    if let Some(url) = &spec.webhook_url {
        let client = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(5))
            .build();
        let sent = match client {
            Ok(c) => c
                .post(url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body)
                .send()
                .await
                .map(|r| r.status().as_u16())
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        out.push(match sent {
            Ok(s) if (200..300).contains(&s) => format!("{action} posted to webhook (HTTP {s})"),
            Ok(s) => format!("{action} webhook answered HTTP {s}"),
            Err(e) => format!("{action} webhook failed: {e}"),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> serde_json::Value {
        let r = Report::build(
            &RunState::example(4),
            "goal",
            Ending::UnrecoverableError,
            Some("d".into()),
            Some(ErrorKind::RecordingMiss),
            false,
            10,
        );
        serde_json::to_value(&r).unwrap()
    }

    #[test]
    fn a_report_reads_back_and_a_renamed_field_or_unknown_kind_does_not() {
        let v = example();
        let back: Report = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(back.error_kind, Some(ErrorKind::RecordingMiss));
        assert_eq!(back.error_kind.as_deref(), Some("recording_miss"));

        let mut renamed = v.clone();
        let o = renamed.as_object_mut().unwrap();
        let k = o.shift_remove("error_kind").unwrap();
        o.insert("error_kinds".into(), k);
        let e = serde_json::from_value::<Report>(renamed).unwrap_err();
        assert!(e.to_string().contains("unknown field `error_kinds`"), "{e}");

        let mut unknown = v;
        unknown["error_kind"] = "recording".into();
        let e = serde_json::from_value::<Report>(unknown).unwrap_err();
        assert!(e.to_string().contains("unknown variant `recording`"), "{e}");
    }
}
