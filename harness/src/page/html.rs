//! The run page's markup (maud). Every `(value)` below is escaped by maud;
//! `PreEscaped` holds only the style sheet and plotters' SVG (whose text
//! plotters escapes, and which draws no model text; and, in the broken
//! variant `page-claim-unescaped` only, a claim). A Content-Security-
//! Policy with no script source is the second wall: a page that somehow
//! held a `<script>` still would not run it.

use super::fmt::{count, duration_ms, pct, score, usd, usd4, utc, when};
use super::plot::{self, SpendAxis};
use super::RunPage;
use crate::ending::{Alert, Class};
use maud::{html, Markup, PreEscaped, DOCTYPE};
use std::collections::BTreeMap;

/// No network, no script: styles and images inline only.
pub use super::CSP;

/// The document around a page's body, shared with the bench's suite page.
pub fn document(title: &str, body: Markup) -> Markup {
    document_csp(title, CSP, body)
}

/// A page with the filter and search of the bench's pages: its one script
/// (super::filter), allowed by its hash in the CSP.
pub fn document_with_filter(title: &str, body: Markup) -> Markup {
    let body = html! { (body) (super::filter::script()) };
    document_csp(title, &super::filter::csp(), body)
}

fn document_csp(title: &str, csp: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta http-equiv="Content-Security-Policy" content=(csp);
                title { (title) }
                style { (PreEscaped(super::style::CSS)) }
            }
            body { (body) }
        }
    }
}

pub fn class_name(c: Class) -> &'static str {
    match c {
        Class::Success => "success",
        Class::Partial => "partial",
        Class::Failure => "failure",
    }
}

fn alert_words(a: Alert) -> &'static str {
    match a {
        Alert::None => "no alert",
        Alert::Alert => "alert sent",
        Alert::Page => "PAGE: a human is paged",
    }
}

/// A plot inside an outer `<svg role="img">` that carries its title and a
/// text alternative (`desc`, also the visible caption); or what stood in
/// for it.
pub fn figure(
    id: &str,
    title: &str,
    desc: &str,
    size: (u32, u32),
    svg: Option<Result<String, String>>,
    empty: &str,
) -> Markup {
    match svg {
        None => html! { p.muted { (empty) } },
        Some(Err(e)) => html! { p.note { "The plot “" (title) "” could not be drawn: " (e) } },
        Some(Ok(inner)) => html! {
            figure {
                svg role="img" aria-labelledby={ (id) "-t " (id) "-d" }
                    viewBox={ "0 0 " (size.0) " " (size.1) } xmlns="http://www.w3.org/2000/svg" {
                    title id={ (id) "-t" } { (title) }
                    desc id={ (id) "-d" } { (desc) }
                    (PreEscaped(inner))
                }
                figcaption { (desc) }
            }
        },
    }
}

/// Spend per call role: calls and dollars.
fn by_role(p: &RunPage) -> Vec<(&'static str, u64, f64)> {
    let mut m: BTreeMap<&'static str, (u64, f64)> = BTreeMap::new();
    for c in &p.calls {
        let e = m.entry(plot::role_name(c.role)).or_default();
        e.0 += 1;
        e.1 += if c.cost_usd.is_finite() {
            c.cost_usd
        } else {
            0.0
        };
    }
    m.into_iter().map(|(r, (n, usd))| (r, n, usd)).collect()
}

fn spend_desc(p: &RunPage) -> String {
    let r = &p.report;
    let roles: Vec<String> = by_role(p)
        .iter()
        .map(|(role, n, u)| format!("{role} {n} call(s) {}", usd(*u)))
        .collect();
    let worst = p.calls.iter().filter(|c| c.worst_case).count();
    let mut s = format!(
        "Spend rose to {} of the {} hard cap ({}) over {} booked model call(s): {}.",
        usd(r.spend_usd),
        usd(r.hard_cap_usd),
        pct(r.spend_usd, r.hard_cap_usd),
        p.calls.len(),
        if roles.is_empty() {
            "none".into()
        } else {
            roles.join(", ")
        }
    );
    if r.spend_usd + p.in_flight_usd < plot::CAP_IN_VIEW * r.hard_cap_usd {
        s.push_str(&format!(
            " The cap and its 70% and 90% lines ({}, {}) are above the plot's scale.",
            usd(0.7 * r.hard_cap_usd),
            usd(0.9 * r.hard_cap_usd)
        ));
    }
    for x in plot::cap_raises(p, plot::SpendAxis::Call) {
        s.push_str(&format!(
            " The operator raised the cap after call {:.0}, at {} spent: {} (the marked point; the cap line steps there).",
            x.x - 0.5,
            usd(x.spent),
            plot::raise_label(x.old, x.new)
        ));
    }
    if worst > 0 {
        s.push_str(&format!(
            " {worst} call(s) booked at their worst case (usage unknown)."
        ));
    }
    if p.in_flight_usd > 0.0 {
        s.push_str(&format!(
            " {} more is reserved for calls in flight.",
            usd(p.in_flight_usd)
        ));
    }
    s
}

/// The time plot's own caption: why it is there beside the call plot (the
/// same spend, placed in time, shows the stretches with no spend: a slow
/// check, a retry's backoff, the gap before a resume).
fn time_desc(p: &RunPage) -> String {
    // From the first event (t = 0) through each call's time to the last.
    let end_s = p
        .first_event_unix_ms
        .zip(p.last_event_unix_ms)
        .map(|(a, b)| b.saturating_sub(a) as f64 / 1000.0);
    let mut marks: Vec<(f64, String)> = vec![(0.0, "from the start".into())];
    marks.extend(
        p.calls
            .iter()
            .filter_map(|c| Some((c.t_s?, format!("after call {}", c.n)))),
    );
    marks.extend(end_s.map(|t| (t, String::new())));
    let gap = marks
        .windows(2)
        .map(|w| (w[1].0 - w[0].0, &w[0].1))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let mut s = "Over the run's time (seconds since its first event): the same spend, placed when each call was booked, to show where time passed with no spend.".to_string();
    if let Some((g, at)) = gap {
        s.push_str(&format!(
            " The longest stretch without a booked call was {} ({at}).",
            duration_ms((g * 1000.0) as u64)
        ));
    }
    s.push_str(&match p.resumes_at_s.len() {
        0 => " The run was not resumed.".to_string(),
        n => format!(" The run resumed {n} time(s) (marked)."),
    });
    s
}

fn drift_desc(p: &RunPage) -> String {
    let h = &p.report.drift_history;
    let max = h.iter().map(|d| d.score).fold(f64::NAN, f64::max);
    format!(
        "{} drift check(s); the highest score was {}, the last {}; the run prunes above {} and halts above {}.",
        h.len(),
        score(max),
        h.last().map_or("none".into(), |d| score(d.score)),
        score(p.prune_above),
        score(p.halt_above)
    )
}

/// The morning page: one section per question the operator asks, in the
/// order they ask them: how it ended and when, what to do next, what the
/// agent did, what it cost; a drifted run's drift (the judge's reasoning)
/// before the trail, since it is why the run ended.
pub fn page(p: &RunPage) -> Markup {
    let r = &p.report;
    let title = format!("{} · run {}", r.ending, r.run_id);
    let drifted = r.ending == crate::ending::Ending::DriftDetected;
    let body = html! {
        (header(p))
        @if !p.notes.is_empty() {
            @for n in &p.notes { p.note { (n) } }
        }
        (next_section(&super::next::for_ending(p)))
        @if drifted { (drift(p)) }
        (super::trail::section(&p.trails()))
        (money(p))
        (tasks(p))
        (claims(p))
        @if !drifted { (drift(p)) }
        // Only a run with `[memory]` compacts: a page without one is unchanged.
        @if !r.compactions.is_empty() {
            (compactions(p))
        }
        // Only a run with `[memory] lessons` learns: a page without one is unchanged.
        @if !r.lessons.is_empty() || !r.lessons_refused.is_empty() {
            (lessons(p))
        }
        (resumes(p))
        footer {
            "Written by the harness beside report.json (the same data, for machines). Goal SHA-256 " code { (r.goal_sha256) } "."
            @if !p.calls.is_empty() { " Calls cost between " (usd4(p.calls.iter().map(|c| c.cost_usd).fold(f64::INFINITY, f64::min))) " and " (usd4(p.calls.iter().map(|c| c.cost_usd).fold(0.0, f64::max))) "." }
        }
    };
    document(&title, body)
}

/// **Next**: what to do, each step with its exact command.
pub fn next_section(steps: &[super::next::Step]) -> Markup {
    html! {
        section #next-steps aria-labelledby="next" {
            h2 #next { "Next" }
            ol.next {
                @for s in steps {
                    li {
                        p { (s.say) }
                        @if let Some(c) = &s.command { pre.cmd { code { (c) } } }
                        @if !s.lines.is_empty() { pre.wrap.muted { (s.lines.join("\n")) } }
                    }
                }
            }
        }
    }
}

/// The verdict first (how the run ended, and whether anyone was paged),
/// then the facts a reader checks it against.
fn header(p: &RunPage) -> Markup {
    let r = &p.report;
    let cls = class_name(r.class);
    html! {
        header {
            p.muted { "Morning report of harness run " code { (r.run_id) } }
            div class={ "verdict " (cls) } role="status" {
                div.name { (r.ending) }
                p {
                    span class={ "tag " (match r.class { Class::Success => "ok", Class::Partial => "warn", Class::Failure => "bad" }) } { (format!("{:?}", r.class).to_uppercase()) }
                    span.tag { "exit " (r.exit_code) }
                    span class={ "tag " (if r.alert == Alert::None { "muted" } else { "bad" }) } { (alert_words(r.alert)) }
                }
                p { (r.ending.meaning()) }
                @if let Some(t) = p.last_event_unix_ms {
                    p.when { "Ended " (when(t, p.command.as_ref().map(|c| c.utc_offset_s))) }
                }
                @if let Some(d) = &r.detail {
                    p { strong { "Detail: " } @if let Some(k) = r.error_kind { code { (k) } " " } (d) }
                }
            }
            dl.facts {
                dt { "Goal" } dd { (r.goal) }
                dt { "Goal predicate" } dd {
                    @if r.predicate_met { span.ok { "met" } } @else { span.bad { "not met" } }
                    " (checked by the harness, never by the model)"
                }
                dt { "Spend" } dd { (usd(r.spend_usd)) " of the " (usd(r.hard_cap_usd)) " hard cap (" (pct(r.spend_usd, r.hard_cap_usd)) ")" }
                dt { "Tasks" } dd { (r.verified.len()) " verified, " (r.parked.len()) " parked, " (r.pruned.len()) " pruned, " (r.queue_left.len()) " left in the queue" }
                dt { "Ran" } dd { (duration_ms(r.elapsed_ms)) ", " (r.steps) " steps, " (r.model_calls) " model calls, " (r.resumes) " resume(s)" }
                @if let (Some(a), Some(b)) = (p.first_event_unix_ms, p.last_event_unix_ms) {
                    dt { "When" } dd { "from " (utc(a)) " to " (utc(b)) }
                }
                dt { "Branch" } dd {
                    @match (&r.git_branch, &r.git_disabled) {
                        (_, Some(why)) => { span.bad { "no commits: " } (why) }
                        (Some(b), None) => { code { (b) } " (" (r.commits.len()) " commit(s), one per verified task)" }
                        (None, None) => { span.muted { "none" } }
                    }
                }
            }
        }
    }
}

/// Where the money went: the totals, the tokens, the spend plots and the
/// spend by role and by task (steady work or one runaway task).
fn money(p: &RunPage) -> Markup {
    let r = &p.report;
    html! {
        section aria-labelledby="money" {
            h2 #money { "Money" }
            (money_facts(p))
            div.scroll { table {
                caption { "Tokens (the four usage fields the ledger books)" }
                thead { tr { th { "field" } th.num { "tokens" } } }
                tbody {
                    tr { td { "input" } td.num { (count(r.usage.input_tokens)) } }
                    tr { td { "output" } td.num { (count(r.usage.output_tokens)) } }
                    tr { td { "cache read" } td.num { (count(r.usage.cache_read_input_tokens)) } }
                    tr { td { "cache write" } td.num { (count(r.usage.cache_creation_input_tokens)) } }
                }
            } }
            @let spend_words = spend_desc(p);
            @let by_call = format!("Call by call (each step up is one call's cost: a steep one is an expensive call): {spend_words}");
            @let by_time = time_desc(p);
            (figure("spend-call", "Spend against model call", &by_call, plot::SIZE, plot::spend(p, SpendAxis::Call), "No model call was booked."))
            (figure("spend-time", "Spend over time", &by_time, plot::SIZE, plot::spend(p, SpendAxis::Time), "No call times: events.jsonl holds no model call."))
            div.scroll { table {
                caption { "Spend by call role" }
                thead { tr { th { "role" } th.num { "calls" } th.num { "spend" } th.num { "share" } } }
                tbody { @for (role, n, u) in by_role(p) {
                    tr { td { (role) } td.num { (n) } td.num { (usd(u)) } td.num { (pct(u, r.spend_usd)) } }
                } }
            } }
            @let tasks = super::by_task(p);
            @if !tasks.is_empty() {
                div.scroll { table {
                    caption { "Executor spend by task, most first" }
                    thead { tr { th { "task" } th.num { "calls" } th.num { "spend" } th.num { "share" } } }
                    tbody { @for (t, n, u) in &tasks {
                        tr { td { code { (t) } } td.num { (n) } td.num { (usd(*u)) } td.num { (pct(*u, r.spend_usd)) } }
                    } }
                } }
            }
            @if !p.budget_refusals.is_empty() {
                h3 { "What the budget refused" }
                ul { @for b in &p.budget_refusals { li { (b) } } }
            }
        }
    }
}

/// The money totals, with every cap or wall-clock raise the operator made.
fn money_facts(p: &RunPage) -> Markup {
    let r = &p.report;
    html! {
        dl.facts {
            dt { "Spent" } dd { (usd(r.spend_usd)) " of " (usd(r.hard_cap_usd)) " (" (pct(r.spend_usd, r.hard_cap_usd)) ")" }
            dt { "Reserved in flight" } dd { (usd(p.in_flight_usd)) @if p.in_flight_usd > 0.0 { " (worst cases of calls open in the ledger journal)" } }
            dt { "Per verified task" } dd {
                @match r.cost_per_verified_task_usd { Some(c) => { (usd(c)) }, None => { span.muted { "no task verified" } } }
            }
            dt { "Budget notices" } dd { (r.budget_notices) " request(s) carried the budget notice" }
            @for x in &r.limit_raises {
                dt { "Limit raised" } dd {
                    @match x.limit {
                        crate::ledger::LimitKind::HardCapUsd => { "cap " (usd(x.old)) " to " (usd(x.new)) }
                        crate::ledger::LimitKind::WallClockLimitS => { "wall clock " (x.old) " s to " (x.new) " s" }
                    }
                    " by the operator after the run had ended on it (ledger.jsonl)"
                }
            }
        }
    }
}

/// Every task the run held, by outcome, and the ones it refused to admit.
fn tasks(p: &RunPage) -> Markup {
    let r = &p.report;
    html! {
        section aria-labelledby="tasks" {
            h2 #tasks { "Tasks" }
            div.scroll { table #task-table {
                caption { "Every task the run held: verified (by the harness, with its commit), parked, pruned for drift, or left in the queue" }
                thead { tr { th { "outcome" } th { "task" } th { "description" } th { "what decided it" } } }
                tbody { (task_rows(p)) }
            } }
            @if r.verified.is_empty() && r.parked.is_empty() && r.pruned.is_empty() && r.queue_left.is_empty() {
                p.muted { "The run held no task." }
            }
            @if !r.rejected_tasks.is_empty() {
                div.scroll { table {
                    caption { "Tasks the harness refused to admit" }
                    thead { tr { th { "task" } th { "from" } th { "why" } } }
                    tbody { @for t in &r.rejected_tasks { tr { td { code { (t.id) } } td { (t.origin) } td { (t.reason) } } } }
                } }
            }
        }
    }
}

/// The task table's rows: verified, parked, pruned, then left in the queue,
/// each with what decided it.
fn task_rows(p: &RunPage) -> Markup {
    let r = &p.report;
    html! {
        @for t in &r.verified {
            tr.task {
                td { span.ok { "verified" } }
                td { code { (t.id) } }
                td { (t.description) }
                td {
                    "verified by " code { (t.verify) } " (" (format!("{:?}", t.how).to_lowercase()) ", step " (t.step) ")"
                    @if let Some(c) = &t.commit { br; "commit " code { (c) } }
                }
            }
        }
        @for t in &r.parked {
            tr.task {
                td { span.warn { "parked" } }
                td { code { (t.id) } }
                td { (p.descriptions.get(&t.id).map(String::as_str).unwrap_or("")) }
                td {
                    (t.reason)
                    @if !t.uncommitted_paths.is_empty() {
                        br; "left uncommitted: " @for (i, path) in t.uncommitted_paths.iter().enumerate() { @if i > 0 { ", " } code { (path) } }
                    }
                }
            }
        }
        @for t in &r.pruned {
            tr.task {
                td { span.bad { "pruned" } }
                td { code { (t.id) } }
                td { (t.description) }
                td { "drift " (score(t.drift_score)) " at step " (t.drift_step) }
            }
        }
        @for id in &r.queue_left {
            tr.task {
                td { span.muted { "left in queue" } }
                td { code { (id) } }
                td { (p.descriptions.get(id).map(String::as_str).unwrap_or("")) }
                td { span.muted { "not reached" } }
            }
        }
    }
}

/// The model's claims beside the harness's own checks: a claim is never a verdict.
fn claims(p: &RunPage) -> Markup {
    let r = &p.report;
    html! {
        section aria-labelledby="claims" {
            h2 #claims { "What the model claimed, beside what the harness checked" }
            @if r.model_claims.is_empty() {
                p.muted { "No claims recorded." }
            } @else {
                div.scroll { table {
                    caption { "A claim is never a verdict: the right column is the harness's own check" }
                    thead { tr { th { "task" } th { "the model said" } th { "the harness's check" } } }
                    tbody { @for c in &r.model_claims {
                        tr { td { code { (c.task_id) } } td { @if crate::mutants::active(crate::mutants::Mutant::PageClaimUnescaped) { (PreEscaped(&c.text)) } @else { (c.text) } } td { @if c.verified { span.ok { "verified" } } @else { span.bad { "not verified" } } } }
                    } }
                } }
            }
        }
    }
}

/// The drift plot and each check the judge made.
fn drift(p: &RunPage) -> Markup {
    let r = &p.report;
    html! {
        section aria-labelledby="drift" {
            h2 #drift { "Drift" }
            (figure("drift-plot", "Drift score against step", &drift_desc(p), (plot::SIZE.0, 320), plot::drift(p), "The run made no drift check."))
            @if !r.drift_detail.is_empty() {
                div.scroll { table {
                    caption { "Each drift check (the judge saw only the goal and the queue)" }
                    thead { tr { th.num { "step" } th.num { "score" } th { "band" } th { "off-goal tasks" } th { "judge's reasoning" } } }
                    tbody { @for d in &r.drift_detail {
                        tr { td.num { (d.step) } td.num { (score(d.score)) } td { (format!("{:?}", d.band).to_lowercase()) } td { @for (i, t) in d.off_goal_task_ids.iter().enumerate() { @if i > 0 { ", " } code { (t) } } } td { @if crate::mutants::active(crate::mutants::Mutant::ReasoningUnescaped) { (maud::PreEscaped(&d.reasoning)) } @else { (d.reasoning) } } }
                    } }
                } }
            }
        }
    }
}

/// Each history compaction and what came of it.
fn compactions(p: &RunPage) -> Markup {
    let r = &p.report;
    html! {
        section aria-labelledby="compactions" {
            h2 #compactions { "History compactions" }
            div.scroll { table {
                caption { "Each compaction (the history summarized by a model call; anything but ok kept the history)" }
                thead { tr { th { "call" } th.num { "step" } th.num { "bytes before" } th.num { "bytes after" } th.num { "cost" } th { "outcome" } } }
                tbody { @for c in &r.compactions {
                    tr { td { code { (c.call_key) } } td.num { (c.step) } td.num { (c.bytes_before) } td.num { (c.bytes_after) } td.num { (usd4(c.cost_usd)) }
                         td { (c.outcome.as_str()) @if let Some(d) = &c.detail { ": " (d) } } }
                } }
            } }
        }
    }
}

/// The lessons the harness admitted, and the ones it refused.
fn lessons(p: &RunPage) -> Markup {
    let r = &p.report;
    html! {
        section aria-labelledby="lessons" {
            h2 #lessons { "Lessons" }
            p { (r.lessons.len()) " admitted, " (r.lessons_refused.len()) " refused"
                @if r.lessons_dropped > 0 { ", " (r.lessons_dropped) " dropped (oldest first)" }
                ". A lesson is admitted only by the harness's checks: specific evidence the attempt observed, about the workspace, not the task restated, not a duplicate." }
            @if !r.lessons.is_empty() {
                div.scroll { table {
                    caption { "Admitted (placed in later executor prompts of the tasks they bear on)" }
                    thead { tr { th { "call" } th.num { "step" } th { "constraint" } th { "cause" } th { "workaround" } th { "rests on" } th.num { "cost" } } }
                    tbody { @for l in &r.lessons {
                        tr { td { code { (l.call_key) } } td.num { (l.step) } td { (l.constraint) } td { (l.cause) } td { (l.workaround) }
                             td { code { (l.anchor) } " (" (l.anchor_in.as_str()) ")" } td.num { (usd4(l.cost_usd)) } }
                    } }
                } }
            }
            @if !r.lessons_refused.is_empty() {
                div.scroll { table {
                    caption { "Refused (never shown to the model again)" }
                    thead { tr { th { "call" } th.num { "step" } th { "reason" } th { "detail" } th.num { "cost" } } }
                    tbody { @for l in &r.lessons_refused {
                        tr { td { code { (l.call_key) } } td.num { (l.step) } td { (l.reason.as_str()) } td { (l.detail) } td.num { (usd4(l.cost_usd)) } }
                    } }
                } }
            }
        }
    }
}

/// When the run resumed, and which alerts went out.
fn resumes(p: &RunPage) -> Markup {
    let r = &p.report;
    html! {
        section aria-labelledby="resumes" {
            h2 #resumes { "Resumes and alerts" }
            p { (r.resumes) " resume(s)"
                @if !p.resumes_at_s.is_empty() {
                    ", at " @for (i, t) in p.resumes_at_s.iter().enumerate() { @if i > 0 { ", " } (duration_ms((t * 1000.0) as u64)) } " since the start"
                } "." }
            @if r.alert_delivery.is_empty() {
                p.muted { "No alert was sent (" (alert_words(r.alert)) ")." }
            } @else {
                ul { @for a in &r.alert_delivery { li { (a) } } }
            }
        }
    }
}

/// The page for a state dir with no report to show (`harness report`).
pub fn no_report(title: &str, detail: &str) -> Markup {
    document(
        title,
        html! {
            div.verdict.failure role="status" {
                div.name { (title) }
                p { (detail) }
            }
        },
    )
}

/// The page of a run a stop request suspended: the layout of an ending's
/// page (the box with when, Next, the trail, the money, the tasks), the box
/// saying first that this is not an ending.
pub fn stopped(p: &super::StoppedPage) -> Markup {
    let r = &p.report;
    let d = &r.stopped;
    let title = format!("STOPPED by {}: not finished", d.signal);
    let offset = p.command.as_ref().map(|c| c.utc_offset_s);
    let ids = |v: &[String]| -> Markup {
        html! { @if v.is_empty() { span.muted { "none" } } @else { @for (i, t) in v.iter().enumerate() { @if i > 0 { ", " } code { (t) } } } }
    };
    let body = html! {
        header {
            p.muted { "Morning report of harness run " code { (r.run_id) } }
            div.verdict.partial role="status" {
                div.name { (title) }
                p {
                    span.tag.warn { "STOPPED" }
                    span.tag { "exit " (d.exit_code) }
                    span class={ "tag " (if d.resumable { "ok" } else { "bad" }) } { (if d.resumable { "resumable" } else { "NOT resumable: no checkpoint" }) }
                }
                p { "Not one of the seven endings: the run was asked to stop and was suspended at a safe point, " (duration_ms(d.took_ms)) " after the request." }
                p.when { "Stopped " (when(d.at_unix_ms, offset)) }
            }
        }
        @for n in &p.notes { p.note { (n) } }
        (next_section(&super::next::for_stopped(r, p.command.as_ref())))
        (super::trail::section(&p.trails()))
        section aria-labelledby="money" {
            h2 #money { "Money" }
            dl.facts {
                dt { "Spent" } dd { (usd(r.spend_usd)) " of " (usd(r.hard_cap_usd)) " (" (pct(r.spend_usd, r.hard_cap_usd)) ")" }
                @if let Some(c) = &d.cut { dt { "Cut at the stop" } dd { (c) } }
            }
        }
        section aria-labelledby="tasks" {
            h2 #tasks { "Tasks" }
            dl.facts {
                dt { "Verified" } dd { (ids(&r.verified)) }
                dt { "Parked" } dd { (ids(&r.parked)) }
                dt { "In flight" } dd { @match &r.in_flight_task { Some(t) => { code { (t) } " (verified on resume, never re-run blindly)" }, None => { span.muted { "none" } } } }
                dt { "Left in the queue" } dd { (ids(&r.queue_left)) }
            }
        }
        section aria-labelledby="facts" {
            h2 #facts { "The run" }
            dl.facts {
                dt { "Goal" } dd { (r.goal) }
                dt { "Ran" } dd { (duration_ms(r.elapsed_ms)) ", " (r.steps) " steps, " (r.resumes) " resume(s)" }
                dt { "Checkpoint" } dd { @match &d.checkpoint_error { Some(e) => { span.bad { "NOT written: " } (e) }, None => { "written at the stop" } } }
            }
        }
        footer { "Written by the harness beside report.json (the same data, for machines). Goal SHA-256 " code { (r.goal_sha256) } "." }
    };
    document(&title, body)
}

#[cfg(test)]
mod tests {
    use super::super::task_of;

    #[test]
    fn an_executor_call_key_names_its_task() {
        assert_eq!(task_of("execute/t3/a1/4"), Some("t3"));
        assert_eq!(task_of("execute/a/b/a2/1"), Some("a/b"));
        assert_eq!(task_of("plan/1"), None);
        assert_eq!(task_of("execute/t3"), None);
    }
}
