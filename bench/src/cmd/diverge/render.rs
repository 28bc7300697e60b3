//! diverge.md and the terminal table, both from the `DivergeReport` alone
//! (nothing here looks at a cassette), worst case first.

use bench::diverge::compare::{CaseDiff, DivergeReport, EndView, Presence, StepView, VariantDiff};
use harness::text::clip_chars;
use std::fmt::Write;

/// Characters of a call shown in a Markdown cell or a table cell.
pub const CALL_SHOWN_CHARS_MAX: usize = 160;
/// Task ids listed per side in diverge.md.
pub const TASKS_SHOWN_MAX: usize = 12;
/// Cases given a section of their own in diverge.md (the table lists all).
pub const CASE_SECTIONS_MAX: usize = 200;

/// A similarity, or "n/a" when there was nothing to compare (two empty
/// sets, or a variant only one side has).
fn num(x: Option<f64>) -> String {
    x.map_or("n/a".into(), |v| format!("{v:.3}"))
}

fn ratio(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.2}x"))
}

/// A value for a Markdown table cell: bounded, one line, pipes escaped.
fn cell(s: &str) -> String {
    clip_chars(s, CALL_SHOWN_CHARS_MAX)
        .replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('\n', "\\n")
        .replace('`', "'")
}

fn presence(p: Presence) -> &'static str {
    match p {
        Presence::Both => "both",
        Presence::OnlyRecorded => "only recorded",
        Presence::OnlyAgainst => "only against",
    }
}

fn ending(e: Option<&EndView>) -> String {
    e.and_then(|e| e.ending.clone())
        .unwrap_or_else(|| "not recorded".into())
}

fn endings(c: &CaseDiff, side: fn(&VariantDiff) -> Option<&EndView>) -> String {
    c.runs
        .iter()
        .map(|v| side(v).map_or("-".into(), |e| ending(Some(e))))
        .collect::<Vec<_>>()
        .join(", ")
}

fn step(s: &Option<StepView>) -> (String, String) {
    match s {
        Some(s) => (
            format!("`{}`", cell(&s.call_key)),
            format!("`{}`", cell(&s.call)),
        ),
        None => ("-".into(), "(trajectory ended)".into()),
    }
}

fn tasks(t: &[String]) -> String {
    if t.is_empty() {
        return "(none)".into();
    }
    let mut s = t
        .iter()
        .take(TASKS_SHOWN_MAX)
        .map(|x| format!("`{}`", cell(x)))
        .collect::<Vec<_>>()
        .join(", ");
    if t.len() > TASKS_SHOWN_MAX {
        let _ = write!(s, " and {} more", t.len() - TASKS_SHOWN_MAX);
    }
    s
}

/// diverge.md.
pub fn markdown(r: &DivergeReport) -> String {
    let t = &r.totals;
    let mut m = String::new();
    let _ = writeln!(m, "# bench diverge\n");
    let _ = writeln!(
        m,
        "Recorded `{}` against `{}` ({} mode), threshold {}.\n",
        r.sets.recorded, r.sets.against, r.mode, r.threshold
    );
    let _ = writeln!(
        m,
        "**{} of {} case(s) diverged**; {} of {} variant(s) diverged ({} on one side only), {} ending(s) changed; worst similarity {}; tokens {} recorded, {} against.\n",
        t.cases_diverged,
        t.cases,
        t.variants_diverged,
        t.variants,
        t.variants_one_side_only,
        t.endings_changed,
        num(t.worst_similarity),
        t.tokens.recorded,
        t.tokens.against
    );
    let _ = writeln!(
        m,
        "Per variant (run i against run i): **calls** = multiset Jaccard of the (tool, canonical args) calls; **tasks** = Jaccard of the planned task ids; **seq** = LCS / longer length over the executor's steps (tool calls and text-only replies); a variant is diverged when any of the three is below the threshold or its ending changed, and a case or variant on one side only is diverged. **cost** = tokens against / recorded. A case shows its worst variant.\n"
    );
    let _ = writeln!(m, "Not recorded in cassettes, so not compared:\n");
    for n in &r.not_recorded {
        let _ = writeln!(m, "- `{}`: {}", n.field, n.why);
    }
    cases_table(&mut m, r);
    for c in r.cases.iter().take(CASE_SECTIONS_MAX) {
        case_section(&mut m, c);
    }
    if r.cases.len() > CASE_SECTIONS_MAX {
        let _ = writeln!(
            m,
            "\n({} more case(s) in the table above; details in diverge.json.)",
            r.cases.len() - CASE_SECTIONS_MAX
        );
    }
    m
}

/// One row per case, worst first.
fn cases_table(m: &mut String, r: &DivergeReport) {
    let _ = writeln!(
        m,
        "\n| case | diverged | similarity | variants | endings recorded | endings against | cost |"
    );
    let _ = writeln!(m, "| --- | --- | --- | --- | --- | --- | --- |");
    for c in &r.cases {
        let _ = writeln!(
            m,
            "| `{}` | {} | {} | {}/{} diverged ({}) | {} | {} | {} |",
            c.case,
            if c.diverged { "**yes**" } else { "no" },
            num(c.similarity),
            c.variants_diverged,
            c.runs.len(),
            presence(c.presence),
            endings(c, |v| v.recorded.as_ref()),
            endings(c, |v| v.against.as_ref()),
            ratio(c.cost_ratio)
        );
    }
}

/// A case's section: who made each side, a row per variant, and where each
/// diverged variant parts.
fn case_section(m: &mut String, c: &CaseDiff) {
    let _ = writeln!(m, "\n## `{}`\n", c.case);
    if !c.reasons.is_empty() {
        let _ = writeln!(m, "{}.\n", c.reasons.join("; "));
    }
    let made = |v: &Option<bench::diverge::compare::MadeView>| {
        v.as_ref().map_or("-".into(), |x| {
            format!(
                "{}, temperature {}, seed {}",
                x.model,
                x.temperature.map_or("-".into(), |t| t.to_string()),
                x.seed.map_or("-".into(), |s| s.to_string())
            )
        })
    };
    let _ = writeln!(
        m,
        "Recorded: {}. Against: {}.\n",
        made(&c.made.recorded),
        made(&c.made.against)
    );
    let _ = writeln!(
        m,
        "| run | diverged | calls | tasks | seq | ending recorded | ending against | tokens | cost | calls/task |"
    );
    let _ = writeln!(
        m,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    for v in &c.runs {
        let cpt = |e: Option<&EndView>| {
            e.and_then(|e| e.calls_per_task)
                .map_or("-".into(), |x| format!("{x:.1}"))
        };
        let tok = |e: Option<&EndView>| e.map_or("-".into(), |e| e.tokens.to_string());
        let _ = writeln!(
            m,
            "| {} | {} | {} | {} | {} | {} | {} | {} / {} | {} | {} / {} |",
            v.run,
            if v.diverged { "**yes**" } else { "no" },
            num(v.calls_jaccard),
            num(v.tasks_jaccard),
            num(v.sequence_similarity),
            ending(v.recorded.as_ref()),
            ending(v.against.as_ref()),
            tok(v.recorded.as_ref()),
            tok(v.against.as_ref()),
            ratio(v.cost_ratio),
            cpt(v.recorded.as_ref()),
            cpt(v.against.as_ref()),
        );
    }
    for v in c.runs.iter().filter(|v| v.diverged) {
        diverged_variant(m, v);
    }
}

/// Why a variant diverged, what each side planned and did, and the first
/// step where they part, side by side.
fn diverged_variant(m: &mut String, v: &VariantDiff) {
    let _ = writeln!(m, "\nRun {}: {}.\n", v.run, v.reasons.join("; "));
    if let (Some(rv), Some(av)) = (&v.recorded, &v.against) {
        let _ = writeln!(
            m,
            "- tasks planned: recorded {}; against {}",
            tasks(&rv.tasks_planned),
            tasks(&av.tasks_planned)
        );
        let _ = writeln!(
            m,
            "- steps: recorded {} ({} tool calls), against {} ({} tool calls)",
            rv.steps, rv.tool_calls, av.steps, av.tool_calls
        );
    }
    if let Some(p) = &v.first_parting {
        let (rk, rc) = step(&p.recorded);
        let (ak, ac) = step(&p.against);
        let _ = writeln!(m, "\nFirst parting point:\n");
        let _ = writeln!(m, "| step | side | call key | (tool, args) |");
        let _ = writeln!(m, "| --- | --- | --- | --- |");
        let _ = writeln!(m, "| {} | recorded | {rk} | {rc} |", p.step);
        let _ = writeln!(m, "| {} | against | {ak} | {ac} |", p.step);
    }
}

/// The terminal table: one row per case, worst first.
pub fn table(r: &DivergeReport) -> String {
    use tabled::{builder::Builder, settings::Style};
    let mut b = Builder::default();
    b.push_record([
        "case",
        "diverged",
        "similarity",
        "calls",
        "tasks",
        "seq",
        "endings changed",
        "cost",
        "first parting",
    ]);
    for c in &r.cases {
        let min_of =
            |f: fn(&VariantDiff) -> Option<f64>| c.runs.iter().filter_map(f).reduce(f64::min);
        let parting = c
            .runs
            .iter()
            .find_map(|v| v.first_parting.as_ref().map(|p| (v.run, p)))
            .map_or("-".into(), |(run, p)| {
                format!(
                    "run {run} step {} ({})",
                    p.step,
                    p.recorded
                        .as_ref()
                        .or(p.against.as_ref())
                        .map_or("-".into(), |s| clip_chars(&s.call_key, 40))
                )
            });
        b.push_record([
            clip_chars(&c.case, 40),
            if c.diverged {
                "YES".into()
            } else {
                "no".into()
            },
            num(c.similarity),
            num(min_of(|v| v.calls_jaccard)),
            num(min_of(|v| v.tasks_jaccard)),
            num(min_of(|v| v.sequence_similarity)),
            format!(
                "{}/{}",
                c.runs
                    .iter()
                    .filter(|v| v.ending_changed == Some(true))
                    .count(),
                c.runs.len()
            ),
            ratio(c.cost_ratio),
            parting,
        ]);
    }
    let mut t = b.build();
    t.with(Style::sharp());
    t.to_string()
}
