//! The morning page: `<state-dir>/report.html`, one self-contained HTML file
//! per run that answers the operator's questions at 9am without a server
//! (which ending and what it means, the money against the cap, what was
//! verified, parked, pruned and left, how drift moved). Written beside
//! report.json at every ending and on every re-report (`write`), and again
//! on demand by `harness report` (`render_state_dir`).
//!
//! It is built from report.json's `Report` plus what the run's own files
//! add (`RunPage::gather`): events.jsonl for the time of each model call,
//! the task descriptions and the resumes, and ledger.jsonl for the worst
//! cases still reserved for calls in flight. Both are optional: a page is
//! never refused because an event log is torn or missing; it says what it
//! could not read instead.
//!
//! - `fmt`: money and numbers as a person reads them (dollars to the cent,
//!   four places where a figure is below a cent; never a negative zero or
//!   a raw float);
//! - `plot`: the spend and drift plots (plotters' SVG backend, inline);
//! - `html`: the page itself (maud: every interpolated value is escaped, so
//!   a task description or model claim holding `<script>` is text);
//! - `style`: the one style sheet, shared with the bench's suite page.
//!
//! What the model wrote (claims, descriptions, reasons) goes through the
//! one redaction filter like every text the harness writes: the report is
//! redacted before it is rendered, and the finished page once more.

pub mod filter;
pub mod fmt;
pub mod html;
pub mod next;
pub mod plot;
pub mod style;
pub mod trail;

use crate::events::{Event, EventLine};
use crate::model::types::CallRole;
use crate::report::Report;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

pub const FILE_NAME: &str = "report.html";

/// Most events read back for one page (events.jsonl is bounded by the
/// loop's own bounds; this keeps a damaged or foreign file from making the
/// page unbounded).
pub const EVENTS_READ_MAX: usize = 200_000;

/// One booked model call on the spend plots.
#[derive(Debug, Clone, PartialEq)]
pub struct CallPoint {
    /// 1-based, in booking order (the ledger's spend curve).
    pub n: u64,
    pub role: Option<CallRole>,
    pub call_key: String,
    pub cost_usd: f64,
    /// The spend after this call.
    pub spent_usd: f64,
    /// Booked at its worst case (usage unknown: an attempt that may have
    /// been billed, or a call in flight at a kill), not from reported usage.
    pub worst_case: bool,
    /// Seconds since the run's first event, when events.jsonl has the call.
    pub t_s: Option<f64>,
}

/// One tool call of a task's trail.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolStep {
    pub call_key: String,
    pub tool: String,
    pub input: String,
    pub output: String,
    pub is_error: bool,
}

/// Tool calls kept per task on the page (a task's attempts are bounded by
/// the loop cap; this bounds a damaged or foreign log).
pub const TRAIL_STEPS_MAX: usize = 200;

/// Everything the page shows.
#[derive(Debug, Clone)]
pub struct RunPage {
    pub report: Report,
    pub calls: Vec<CallPoint>,
    /// Worst cases reserved for calls still open in ledger.jsonl (in flight
    /// at a kill, not yet booked), by the resume rules.
    pub in_flight_usd: f64,
    /// Task id -> description, from the run's `task_start` events and, for
    /// tasks never started (left in the queue), its `admit` events.
    pub descriptions: HashMap<String, String>,
    /// Task id -> what the agent did for it, in order: each tool call with
    /// its input and the start of the answer (`tool` events; clipped,
    /// redacted, escaped on the page).
    pub trails: HashMap<String, Vec<ToolStep>>,
    /// Seconds since the run's first event of each resume.
    pub resumes_at_s: Vec<f64>,
    /// What the budget refused, in order (`budget_refused` events).
    pub budget_refusals: Vec<String>,
    /// The drift bands the run judged against.
    pub prune_above: f64,
    pub halt_above: f64,
    /// What the page could not read (a missing or damaged events.jsonl or
    /// ledger.jsonl), said on the page instead of refusing it.
    pub notes: Vec<String>,
    /// When the run's first and last events were written (Unix ms), for
    /// the clock time the page shows.
    pub first_event_unix_ms: Option<u64>,
    pub last_event_unix_ms: Option<u64>,
    /// The command the run was last opened with (its last `start` or
    /// `resume` event), for the Next section's exact command.
    pub command: Option<crate::events::RunCommand>,
}

impl RunPage {
    /// The page for `report`, with what `state_dir`'s event log and ledger
    /// journal add. `report` is redacted here before anything of it is kept.
    pub fn gather(report: &Report, state_dir: &Path) -> RunPage {
        let report = redacted(report);
        let mut notes = vec![];
        let events = match crate::events::read_events(&state_dir.join(crate::events::FILE_NAME)) {
            Ok(mut e) => {
                if e.len() > EVENTS_READ_MAX {
                    notes.push(format!(
                        "events.jsonl has {} events; the first {EVENTS_READ_MAX} are shown",
                        e.len()
                    ));
                    e.truncate(EVENTS_READ_MAX);
                }
                e
            }
            Err(e) => {
                notes.push(format!(
                    "events.jsonl could not be read ({e}): call times, descriptions and resumes are missing"
                ));
                vec![]
            }
        };
        let in_flight_usd = match crate::ledger::Ledger::peek_journal(
            &state_dir.join("ledger.jsonl"),
            report.hard_cap_usd,
        ) {
            Some((_, f)) => f,
            None => {
                notes.push(
                    "ledger.jsonl could not be read: worst cases reserved in flight are not shown"
                        .into(),
                );
                0.0
            }
        };
        RunPage::from_parts(report, &events, in_flight_usd, notes)
    }

    /// The page from a (redacted) report, the run's events and the worst
    /// cases reserved in flight.
    pub fn from_parts(
        report: Report,
        events: &[EventLine],
        in_flight_usd: f64,
        notes: Vec<String>,
    ) -> RunPage {
        let t0 = events.first().map(|e| e.unix_ms);
        let facts = EventFacts::read(events, t0);
        let calls = call_points(&report, &facts.call_times);
        RunPage {
            prune_above: report.drift_bands.prune_above,
            halt_above: report.drift_bands.halt_above,
            report,
            calls,
            in_flight_usd: if in_flight_usd.is_finite() {
                in_flight_usd.max(0.0)
            } else {
                0.0
            },
            descriptions: facts.descriptions,
            trails: facts.trails,
            resumes_at_s: facts.resumes_at_s,
            budget_refusals: facts.budget_refusals,
            notes,
            first_event_unix_ms: t0,
            last_event_unix_ms: events.last().map(|e| e.unix_ms),
            command: facts.command,
        }
    }

    /// The trail section's view of this page.
    pub fn trails(&self) -> trail::Trails<'_> {
        trail::Trails {
            trails: &self.trails,
            descriptions: &self.descriptions,
            commits: (self.report.verified.iter())
                .filter_map(|t| Some((t.id.as_str(), t.commit.as_deref()?)))
                .collect(),
        }
    }

    /// The page as HTML, through the redaction filter.
    pub fn render(&self) -> String {
        let html = crate::redact::string(html::page(self).into_string());
        crate::text::printable(&html).into_owned()
    }
}

/// What the page reads out of events.jsonl, in one pass over it.
#[derive(Default)]
struct EventFacts<'a> {
    /// Each call key's `model_call` times (seconds since the first event),
    /// in order: a key's retries are one call.
    call_times: HashMap<&'a str, Vec<f64>>,
    descriptions: HashMap<String, String>,
    trails: HashMap<String, Vec<ToolStep>>,
    resumes_at_s: Vec<f64>,
    budget_refusals: Vec<String>,
    command: Option<crate::events::RunCommand>,
}

impl<'a> EventFacts<'a> {
    fn read(events: &'a [EventLine], t0: Option<u64>) -> EventFacts<'a> {
        let secs = |ms: u64| t0.map_or(0.0, |t0| ms.saturating_sub(t0) as f64 / 1000.0);
        let mut f = EventFacts::default();
        for e in events {
            match &e.event {
                Event::ModelCall(c) => f
                    .call_times
                    .entry(c.call_key.as_str())
                    .or_default()
                    .push(secs(e.unix_ms)),
                Event::TaskStart { task, description } => {
                    f.descriptions.insert(task.clone(), description.clone());
                }
                Event::Admit(a) => {
                    for t in &a.tasks {
                        f.descriptions
                            .entry(t.id.clone())
                            .or_insert_with(|| t.description.clone());
                    }
                }
                Event::Tool(t) => {
                    let trail = f.trails.entry(t.task.clone()).or_default();
                    if trail.len() < TRAIL_STEPS_MAX {
                        trail.push(ToolStep {
                            call_key: t.call_key.clone(),
                            tool: t.tool.as_str().to_string(),
                            input: t.input.clone(),
                            output: t.output.clone(),
                            is_error: t.is_error,
                        });
                    }
                }
                Event::Start(o) => f.command = o.command.clone().or(f.command.take()),
                Event::Resume(o) => {
                    f.resumes_at_s.push(secs(e.unix_ms));
                    f.command = o.command.clone().or(f.command.take());
                }
                Event::BudgetRefused { detail, .. } => f.budget_refusals.push(detail.clone()),
                _ => {}
            }
        }
        f
    }
}

/// Each booked call of the spend curve, placed in time by its `model_call`
/// event (matched by call key in order).
fn call_points(report: &Report, call_times: &HashMap<&str, Vec<f64>>) -> Vec<CallPoint> {
    let mut taken: HashMap<&str, usize> = HashMap::new();
    let mut last_t = None;
    (report.spend_curve.iter().enumerate())
        .map(|(i, p)| {
            let k = taken.entry(p.call_key.as_str()).or_default();
            let t = call_times
                .get(p.call_key.as_str())
                .and_then(|ts| ts.get(*k))
                .copied();
            *k += 1;
            // A worst-case booking has no event of its own: it is
            // placed at the time of the call before it.
            let t_s = t.or(last_t);
            last_t = t_s;
            CallPoint {
                n: i as u64 + 1,
                role: p.role,
                call_key: p.call_key.clone(),
                cost_usd: p.cost_usd,
                spent_usd: p.spent_usd,
                worst_case: p.basis == "worst_case",
                t_s,
            }
        })
        .collect()
}

/// The report as the redaction filter leaves it (the same filter
/// report.json is written through).
fn redacted(report: &Report) -> Report {
    crate::redact::to_json_vec(report, false)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| report.clone())
}

/// Write `state_dir/report.html` for `report`, atomically (a reader sees
/// the old page or the new one, never half of one).
pub fn write(report: &Report, state_dir: &Path) -> std::io::Result<()> {
    let html = RunPage::gather(report, state_dir).render();
    crate::durable::atomic_write(&state_dir.join(FILE_NAME), html.as_bytes())
}

/// Write `state_dir/report.html` for a stopped run (not an ending).
pub fn write_stopped(
    report: &crate::report::StoppedReport,
    state_dir: &Path,
) -> std::io::Result<()> {
    let html = StoppedPage::gather(report, state_dir).render();
    crate::durable::atomic_write(&state_dir.join(FILE_NAME), html.as_bytes())
}

/// The page of a run a stop request suspended: its stop report, and what
/// the run's events add (the command to resume it, the trail).
#[derive(Debug, Clone)]
pub struct StoppedPage {
    pub report: crate::report::StoppedReport,
    pub command: Option<crate::events::RunCommand>,
    pub trails: HashMap<String, Vec<ToolStep>>,
    pub descriptions: HashMap<String, String>,
    pub notes: Vec<String>,
}

impl StoppedPage {
    pub fn gather(report: &crate::report::StoppedReport, state_dir: &Path) -> StoppedPage {
        let mut notes = vec![];
        let events = crate::events::read_events(&state_dir.join(crate::events::FILE_NAME))
            .unwrap_or_else(|e| {
                notes.push(format!(
                    "events.jsonl could not be read ({e}): the command and the trail are missing"
                ));
                vec![]
            });
        let events = &events[..events.len().min(EVENTS_READ_MAX)];
        StoppedPage::from_parts(report.clone(), events, notes)
    }

    pub fn from_parts(
        report: crate::report::StoppedReport,
        events: &[EventLine],
        notes: Vec<String>,
    ) -> StoppedPage {
        let facts = EventFacts::read(events, events.first().map(|e| e.unix_ms));
        StoppedPage {
            report,
            command: facts.command,
            trails: facts.trails,
            descriptions: facts.descriptions,
            notes,
        }
    }

    pub fn trails(&self) -> trail::Trails<'_> {
        trail::Trails {
            trails: &self.trails,
            descriptions: &self.descriptions,
            commits: HashMap::new(),
        }
    }

    /// The page as HTML, through the redaction filter.
    pub fn render(&self) -> String {
        let html = crate::redact::string(html::stopped(self).into_string());
        crate::text::printable(&html).into_owned()
    }
}

/// The page `harness report` renders from a state dir alone: its
/// report.json, or when there is none, a page that says why (a refused
/// checkpoint names the refusal; a run not ended yet says so). Err only
/// when there is nothing to render at all (not a state dir).
pub fn render_state_dir(state_dir: &Path) -> Result<Rendered, String> {
    if !state_dir.is_dir() {
        return Err(format!("{} is not a state dir", state_dir.display()));
    }
    let refusal = match crate::checkpoint::load(state_dir, None) {
        Err(r) => Some(r.to_string()),
        Ok(_) => None,
    };
    if let Ok(stopped) = crate::report::StoppedReport::load(state_dir) {
        return Ok(Rendered {
            html: StoppedPage::gather(&stopped, state_dir).render(),
            refusal,
        });
    }
    match Report::load(state_dir) {
        Ok(report) => Ok(Rendered {
            html: RunPage::gather(&report, state_dir).render(),
            refusal,
        }),
        Err(why) => {
            let (title, detail) = match &refusal {
                Some(r) => (
                    "The checkpoint is refused",
                    format!("{r}. A run on this state dir ends UNRECOVERABLE_ERROR until a human looks at it. report.json: {why}"),
                ),
                None => (
                    "No report yet",
                    format!("The run has not ended (or ended before it could write its report): {why}. `harness status --state-dir {}` shows where it stands.", state_dir.display()),
                ),
            };
            Ok(Rendered {
                html: crate::text::printable(&crate::redact::string(
                    html::no_report(title, &detail).into_string(),
                ))
                .into_owned(),
                refusal,
            })
        }
    }
}

/// What `harness report` wrote, and whether the checkpoint is refused (its
/// exit status says so, as `harness status`'s does).
pub struct Rendered {
    pub html: String,
    pub refusal: Option<String>,
}

#[cfg(test)]
mod tests;

/// The pages' Content-Security-Policy: no script, nothing fetched.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/// The task an executor call key (`execute/<task>/a<attempt>/<turn>`)
/// worked on.
fn task_of(call_key: &str) -> Option<&str> {
    let rest = call_key.strip_prefix("execute/")?;
    let mut it = rest.rsplitn(3, '/');
    let (_turn, _attempt, task) = (it.next()?, it.next()?, it.next()?);
    Some(task)
}

/// Executor spend per task, most first: steady work or one runaway task.
pub(crate) fn by_task(p: &RunPage) -> Vec<(String, u64, f64)> {
    let mut m: BTreeMap<&str, (u64, f64)> = BTreeMap::new();
    for c in &p.calls {
        if let Some(t) = task_of(&c.call_key) {
            let e = m.entry(t).or_default();
            e.0 += 1;
            e.1 += if c.cost_usd.is_finite() {
                c.cost_usd
            } else {
                0.0
            };
        }
    }
    let mut v: Vec<(String, u64, f64)> = m
        .into_iter()
        .map(|(t, (n, u))| (t.to_string(), n, u))
        .collect();
    v.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    v
}
