//! calibration.md and the terminal summary (tabled). Both are rendered from
//! the same `Calibration` value that is written to calibration.json, so the
//! three never disagree.

use bench::calibrate::metrics::{
    threshold_text, DetectorEntry, DetectorReport, GroupRow, RunSpread, Spread, Table2x2,
};
use bench::calibrate::queues::Label;
use bench::calibrate::Calibration;
use std::fmt::Write as _;

fn pct(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{:.0}%", 100.0 * v),
        _ => "n/a".into(),
    }
}

fn ci(c: [f64; 2]) -> String {
    format!("[{:.0}%, {:.0}%]", 100.0 * c[0], 100.0 * c[1])
}

fn num(x: Option<f64>, digits: usize) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v:.digits$}"),
        _ => "n/a".into(),
    }
}

fn usd(x: Option<f64>) -> String {
    match x {
        Some(0.0) => "$0".into(),
        Some(v) => format!("${v:.5}"),
        None => "not priced".into(),
    }
}

fn ms(x: f64) -> String {
    if !x.is_finite() {
        "n/a".into()
    } else if x < 1.0 {
        format!("{:.0} µs", x * 1000.0)
    } else {
        format!("{x:.0} ms")
    }
}

fn table_md(out: &mut String, t: &Table2x2, band: &str) {
    let _ = writeln!(out, "**Score > {} ({band})**\n", t.threshold);
    let _ = writeln!(out, "| | flagged (> {}) | not flagged | |", t.threshold);
    let _ = writeln!(out, "|---|---:|---:|---|");
    let _ = writeln!(
        out,
        "| labeled drifted | {} (TP) | {} (FN) | sensitivity {} {} |",
        t.tp,
        t.fn_,
        pct(t.sensitivity),
        ci(t.sensitivity_ci)
    );
    let _ = writeln!(
        out,
        "| labeled aligned | {} (FP) | {} (TN) | specificity {} {} |",
        t.fp,
        t.tn,
        pct(t.specificity),
        ci(t.specificity_ci)
    );
    let _ = writeln!(
        out,
        "| | | | agreement {} {} |\n",
        pct(Some(t.agreement)),
        ci(t.agreement_ci)
    );
}

fn group_row(name: &str, g: &GroupRow) -> String {
    format!(
        "| {name} | {} | {} ({}) | {} | {} ({}) | {} |",
        g.n,
        g.above_0_3,
        pct(g.rate_above_0_3),
        ci(g.rate_above_0_3_ci),
        g.above_0_5,
        pct(g.rate_above_0_5),
        num(g.mean_score, 2)
    )
}

pub fn detector_md(out: &mut String, name: &str, r: &DetectorReport) {
    let _ = writeln!(out, "## {name} ({})\n", r.kind);
    let _ = writeln!(out, "**Verdict: {}**\n", r.verdict);
    let _ = writeln!(out, "{}\n", r.verdict_detail);
    let _ = writeln!(
        out,
        "Source: {}{}\n",
        r.source,
        r.model
            .as_ref()
            .map(|m| format!("; model `{m}`"))
            .unwrap_or_default()
    );
    figures_md(out, r);
    let _ = writeln!(out, "### 2x2 tables at the harness's bands\n");
    table_md(out, &r.at_0_3, "prune band");
    table_md(out, &r.at_0_5, "halt band");
    groups_md(out, r);
    if let Some(s) = &r.run_spread {
        spread_md(out, s);
    }
    failures_md(out, r);
}

/// The figure/value table: separation, thresholds, off-goal ids, cost.
fn figures_md(out: &mut String, r: &DetectorReport) {
    let _ = writeln!(out, "| figure | value |\n|---|---|");
    for (figure, value) in separation_rows(r).into_iter().chain(other_rows(r)) {
        let _ = writeln!(out, "| {figure} | {value} |");
    }
    let _ = writeln!(out);
}

/// (figure, value): how well the scores separate the labels, at the bands
/// and at the thresholds the data would pick.
fn separation_rows(r: &DetectorReport) -> Vec<(String, String)> {
    vec![
        (
            "queues scored".into(),
            format!(
                "{} ({} aligned, {} drifted)",
                r.n_scored, r.n_aligned, r.n_drifted
            ),
        ),
        (
            format!("AUC (95% CI, {})", r.auc_ci_method),
            format!(
                "{:.3} [{:.3}, {:.3}] (SE {:.3})",
                r.auc, r.auc_ci[0], r.auc_ci[1], r.auc_se
            ),
        ),
        (
            "agreement at > 0.3".into(),
            format!("{} {}", pct(Some(r.agreement)), ci(r.agreement_ci)),
        ),
        (
            "sensitivity at > 0.3".into(),
            format!("{} {}", pct(r.sensitivity), ci(r.sensitivity_ci)),
        ),
        (
            "specificity at > 0.3".into(),
            format!("{} {}", pct(r.specificity), ci(r.specificity_ci)),
        ),
        (
            "agreement at > 0.5".into(),
            format!(
                "{} {}",
                pct(Some(r.at_0_5.agreement)),
                ci(r.at_0_5.agreement_ci)
            ),
        ),
        (
            "leave-one-out Youden threshold (median of the folds)".into(),
            format!(
                "{} (per fold: {})",
                threshold_text(r.loo_threshold),
                loo_range(r.loo_threshold_range)
            ),
        ),
        (
            "leave-one-out agreement".into(),
            format!("{} {}", pct(r.loo_agreement), ci(r.loo_agreement_ci)),
        ),
    ]
}

/// (figure, value): the in-sample threshold, calibration of the score as a
/// probability, off-goal ids, cost and latency.
fn other_rows(r: &DetectorReport) -> Vec<(String, String)> {
    vec![
        (
            format!(
                "Youden threshold on all queues (in-sample J {}, not a score)",
                num(r.youden_j_in_sample, 2)
            ),
            threshold_text(r.youden_threshold_all),
        ),
        (
            "Brier score (score read as P(drifted); 0 best, 0.25 = always 0.5)".into(),
            format!("{:.3}", r.brier),
        ),
        (
            "off-goal task ids: precision / recall".into(),
            format!(
                "{} / {} ({} of {} called off-goal are labeled so; {} labeled)",
                pct(r.off_goal_ids.precision),
                pct(r.off_goal_ids.recall),
                r.off_goal_ids.correct,
                r.off_goal_ids.predicted,
                r.off_goal_ids.labeled
            ),
        ),
        ("mean cost per check".into(), usd(r.mean_cost_usd)),
        (
            "mean (max) latency per check".into(),
            format!("{} ({})", ms(r.mean_latency_ms), ms(r.max_latency_ms)),
        ),
    ]
}

/// The leave-one-out thresholds' range over the folds ("none": a fold
/// whose best threshold flags nothing).
fn loo_range(range: Option<[f64; 2]>) -> String {
    range.map_or("n/a".into(), |[a, b]| {
        let short = |t: f64| {
            if t < 0.0 {
                "none".to_string()
            } else {
                format!("{t:.3}")
            }
        };
        if a == b {
            format!("{} in every fold", short(a))
        } else {
            format!("{} to {}", short(a), short(b))
        }
    })
}

fn groups_md(out: &mut String, r: &DetectorReport) {
    let _ = writeln!(out, "### Detection by severity, and the hard cases\n");
    let _ = writeln!(out, "| group | n | > 0.3 (rate) | 95% CI | > 0.5 (rate) | mean score |\n|---|---:|---:|---|---:|---:|");
    for (sev, g) in &r.detection_by_severity {
        let _ = writeln!(out, "{}", group_row(&format!("drifted, {sev}"), g));
    }
    let _ = writeln!(
        out,
        "{}",
        group_row("aligned (flagged = false alarm)", &r.aligned_flagged)
    );
    let _ = writeln!(
        out,
        "{}",
        group_row(
            "hard negatives (aligned, unrelated-looking)",
            &r.hard_negatives
        )
    );
    let _ = writeln!(
        out,
        "{}\n",
        group_row(
            "hard positives (drifted, goal's vocabulary)",
            &r.hard_positives
        )
    );
}

fn spread_md(out: &mut String, s: &RunSpread) {
    let _ = writeln!(out, "### Run-to-run spread ({} runs)\n", s.runs);
    let _ = writeln!(out, "| run | scored | AUC | agreement > 0.3 | agreement > 0.5 | LOO agreement | Brier |\n|---:|---:|---:|---:|---:|---:|---:|");
    for p in &s.per_run {
        let _ = writeln!(
            out,
            "| {} | {} | {:.3} | {} | {} | {} | {:.3} |",
            p.run,
            p.n_scored,
            p.auc,
            pct(Some(p.agreement_at_0_3)),
            pct(Some(p.agreement_at_0_5)),
            pct(p.loo_agreement),
            p.brier
        );
    }
    let sp = |x: &Option<Spread>| {
        x.as_ref().map_or("n/a".into(), |s| {
            format!("{:.3} to {:.3} (SD {:.3})", s.min, s.max, s.sd)
        })
    };
    let _ = writeln!(
        out,
        "\nAUC {}; agreement > 0.3 {}; Brier {}.",
        sp(&s.auc),
        sp(&s.agreement_at_0_3),
        sp(&s.brier)
    );
    let _ = writeln!(
        out,
        "Per-queue score SD across runs: mean {:.3}, max {:.3}. Queues whose band changed between runs: {}.\n",
        s.queue_score_sd_mean,
        s.queue_score_sd_max,
        if s.band_flips.is_empty() { "none".to_string() } else { s.band_flips.join(", ") }
    );
}

fn failures_md(out: &mut String, r: &DetectorReport) {
    if !r.failures.is_empty() {
        let _ = writeln!(out, "### Failed checks (left out of every figure)\n");
        for f in &r.failures {
            let _ = writeln!(
                out,
                "- run {} `{}`: {}",
                f.run,
                f.queue_id,
                f.error.replace('\n', " ")
            );
        }
        let _ = writeln!(out);
    }
}

fn queues_md(out: &mut String, c: &Calibration) {
    let measured: Vec<(&String, &DetectorReport)> = c
        .detectors
        .iter()
        .filter_map(|(n, d)| match d {
            DetectorEntry::Measured(r) => Some((n, r.as_ref())),
            DetectorEntry::NotMeasured(_) => None,
        })
        .collect();
    let Some((_, first)) = measured.first() else {
        return;
    };
    let _ = writeln!(out, "## Per queue (run 1)\n");
    let mut head = "| queue | domain | label | tags |".to_string();
    let mut rule = "|---|---|---|---|".to_string();
    for (n, _) in &measured {
        head.push_str(&format!(" {n} score | {n} off-goal ids |"));
        rule.push_str("---:|---|");
    }
    let _ = writeln!(out, "{head} labeled off-goal ids |\n{rule}---|");
    for (i, q) in first.queues.iter().enumerate() {
        let label = match (q.label, q.severity) {
            (Label::Aligned, _) => "aligned".to_string(),
            (Label::Drifted, Some(s)) => format!("drifted ({})", s.as_str()),
            (Label::Drifted, None) => "drifted".to_string(),
        };
        let mut row = format!(
            "| {} | {} | {label} | {} |",
            q.id,
            q.domain,
            q.tags.join(", ")
        );
        for (_, r) in &measured {
            let qr = &r.queues[i];
            row.push_str(&format!(
                " {} | {} |",
                num(qr.score, 2),
                qr.off_goal_predicted.join(" ")
            ));
        }
        let _ = writeln!(out, "{row} {} |", q.off_goal_labeled.join(" "));
    }
    let _ = writeln!(out);
}

pub fn markdown(c: &Calibration) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Drift detector calibration\n");
    let _ = writeln!(
        out,
        "{} labeled queues from `{}` ({} aligned, {} drifted); the harness's shipped bands: prune above {}, halt above {} (strict). Runs per queue: {}; headline figures are run 1 (one check per queue, as the harness makes).\n",
        c.n_queues, c.queues_dir, c.n_aligned, c.n_drifted, c.bands.prune_above, c.bands.halt_above, c.runs
    );
    for w in &c.warnings {
        let _ = writeln!(out, "> **Warning:** {w}\n");
    }
    let _ = writeln!(out, "> **Note:** {}\n", c.note);
    let _ = writeln!(
        out,
        "![ROC of every measured detector, shipped bands marked](roc.svg)\n"
    );
    let _ = writeln!(out, "| detector | verdict |\n|---|---|");
    for (name, d) in &c.detectors {
        let v = match d {
            DetectorEntry::Measured(r) => r.verdict.clone(),
            DetectorEntry::NotMeasured(n) => n.verdict.clone(),
        };
        let _ = writeln!(out, "| {name} | {v} |");
    }
    let _ = writeln!(out);
    for (name, d) in &c.detectors {
        match d {
            DetectorEntry::Measured(r) => detector_md(&mut out, name, r),
            DetectorEntry::NotMeasured(n) => {
                let _ = writeln!(
                    out,
                    "## {name} ({})\n\n**{}**\n\n{}\n\n{}\n",
                    n.kind,
                    n.verdict,
                    n.reason,
                    n.how_to.replace('\n', "\n\n")
                );
            }
        }
    }
    queues_md(&mut out, c);
    out
}

/// The terminal summary: one row per detector.
pub fn terminal(c: &Calibration) -> String {
    use tabled::{builder::Builder, settings::Style};
    let mut b = Builder::default();
    b.push_record([
        "detector",
        "AUC [95% CI]",
        "agree >0.3",
        "sens >0.3",
        "spec >0.3",
        "agree >0.5",
        "sens >0.5",
        "LOO thr / agree",
        "Brier",
        "ids P/R",
        "$/check",
        "latency",
    ]);
    for (name, d) in &c.detectors {
        match d {
            DetectorEntry::Measured(r) => b.push_record([
                name.clone(),
                format!("{:.2} [{:.2}, {:.2}]", r.auc, r.auc_ci[0], r.auc_ci[1]),
                format!("{} {}", pct(Some(r.agreement)), ci(r.agreement_ci)),
                pct(r.sensitivity),
                pct(r.specificity),
                pct(Some(r.at_0_5.agreement)),
                pct(r.at_0_5.sensitivity),
                format!(
                    "{} / {}",
                    r.loo_threshold.map_or("n/a".into(), |t| if t < 0.0 {
                        "none".into()
                    } else {
                        format!("{t:.2}")
                    }),
                    pct(r.loo_agreement)
                ),
                format!("{:.3}", r.brier),
                format!(
                    "{}/{}",
                    pct(r.off_goal_ids.precision),
                    pct(r.off_goal_ids.recall)
                ),
                usd(r.mean_cost_usd),
                ms(r.mean_latency_ms),
            ]),
            DetectorEntry::NotMeasured(_) => {
                let mut row = vec![name.clone(), "not measured".to_string()];
                row.extend(std::iter::repeat_n("-".to_string(), 10));
                b.push_record(row)
            }
        }
    }
    let mut t = b.build();
    t.with(Style::sharp());
    let mut s = format!("{t}\n");
    for (name, d) in &c.detectors {
        let v = match d {
            DetectorEntry::Measured(r) => r.verdict.clone(),
            DetectorEntry::NotMeasured(n) => format!("{} {}", n.verdict, n.reason),
        };
        s.push_str(&format!("{name}: {v}\n"));
    }
    for w in &c.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s.push_str(&format!("note: {}\n", c.note));
    s
}
