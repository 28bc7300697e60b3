//! The two knee plots, as SVG (plotters' SVG backend: text stays text, no
//! font is rasterized, so the bench needs no font files):
//!
//! - cost per verified task against budget level, each level with its 95%
//!   case-bootstrap interval, the knee and the cheapest level marked;
//! - verified tasks against spend, each point labelled with its level and
//!   the knee ringed.
//!
//! Titles, axis labels with units and a legend on both, so the knee can be
//! read off the picture without knee.json. Error bars are drawn as paths:
//! plotters' ErrorBar needs its `errorbar` feature, which the bench does not
//! enable.

use bench::knee::analysis::KneeReport;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::path::Path;

const SIZE: (u32, u32) = (1000, 640);
const FONT: &str = "sans-serif";
const POINT: RGBColor = RGBColor(31, 90, 170);
const KNEE: RGBColor = RGBColor(200, 30, 30);
const CHEAP: RGBColor = RGBColor(20, 130, 60);
const MUTED: RGBColor = RGBColor(120, 120, 120);
const CANDIDATE: RGBColor = RGBColor(220, 130, 0);

/// What to mark as the knee: the knee in red, or when Kneedle confirmed
/// none, its candidate in amber with the reason, so "no knee" is visible too.
fn knee_mark(r: &KneeReport) -> Option<(f64, RGBColor, String)> {
    let share = |k: f64| {
        r.knee_bootstrap
            .levels
            .iter()
            .find(|s| s.level == k)
            .map_or(0.0, |s| s.share)
    };
    match (r.knee_level, &r.knee_candidate) {
        (Some(k), _) => Some((
            k,
            KNEE,
            format!(
                "knee at {} (Kneedle on pass rate vs spend; {} of resamples)",
                pct(k),
                pct(share(k))
            ),
        )),
        (None, Some(c)) => Some((
            c.level,
            CANDIDATE,
            format!(
                "no knee at S = {}: candidate {} not confirmed (knee in {} of resamples)",
                r.kneedle.sensitivity,
                pct(c.level),
                pct(share(c.level))
            ),
        )),
        (None, None) => None,
    }
}

fn pct(x: f64) -> String {
    format!("{:.0}%", 100.0 * x)
}

/// Under the plot: the cases left out as not comparable, never silently.
fn footnote<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    r: &KneeReport,
    path: &Path,
) -> Result<(), PlotError> {
    if let Some(note) = &r.not_comparable_note {
        root.draw(&Text::new(
            format!("left out of every level (not comparable under replay): {note}"),
            (24, SIZE.1 as i32 - 20),
            (FONT, 15).into_font().color(&RGBColor(200, 30, 30)),
        ))
        .map_err(err(path))?;
    }
    Ok(())
}

/// A plot that could not be drawn or written; the message names its file.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct PlotError {
    path: String,
    message: String,
}

fn err<E: std::fmt::Display>(path: &Path) -> impl Fn(E) -> PlotError + '_ {
    move |e| PlotError {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// Both plots draw on data coordinates in f64 on either axis.
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Cost per verified task (USD) against budget level, with intervals.
pub fn cost_per_verified(r: &KneeReport, path: &Path) -> Result<(), PlotError> {
    let e = err(path);
    let levels: Vec<f64> = r.levels.iter().map(|l| l.level).collect();
    let x_max = levels.iter().cloned().fold(0.0, f64::max) * 1.08;
    let top = r
        .levels
        .iter()
        .flat_map(|l| {
            [
                l.cost_per_verified_usd,
                l.cost_per_verified_ci.map(|c| c[1]),
            ]
        })
        .flatten()
        .fold(0.0, f64::max);
    // Room above the highest whisker for the legend.
    let y_max = if top > 0.0 { top * 1.6 } else { 1.0 };
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    footnote(&root, r, path)?;
    let title = format!(
        "Cost per verified task by budget level ({} cases x {} runs)",
        r.cases, r.runs_per_case
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FONT, 26))
        .margin(24)
        .x_label_area_size(60)
        .y_label_area_size(90)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)
        .map_err(&e)?;
    chart
        .configure_mesh()
        .x_desc("budget level: hard cap and task budget as a share of each case's own (%)")
        .y_desc("cost per verified task (USD)")
        .x_labels(12)
        .x_label_formatter(&|x| pct(*x))
        .y_label_formatter(&|y| format!("${y:.2}"))
        .axis_desc_style((FONT, 18))
        .label_style((FONT, 16))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(&e)?;
    // The knee line first, so the points and whiskers draw over it.
    draw_knee_line(&mut chart, r, y_max, path)?;
    draw_costs(&mut chart, r, path)?;
    draw_whiskers(&mut chart, r, path)?;
    draw_undefined_costs(&mut chart, r, path)?;
    draw_cheapest(&mut chart, r, path)?;
    draw_legend(&mut chart, SeriesLabelPosition::UpperRight, path)?;
    root.present().map_err(&e)?;
    Ok(())
}

/// The series legend, in the corner the plot leaves empty; both plots draw
/// it alike.
fn draw_legend<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    at: SeriesLabelPosition,
    path: &Path,
) -> Result<(), PlotError> {
    chart
        .configure_series_labels()
        .position(at)
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(err(path))?;
    Ok(())
}

/// The knee (or its unconfirmed candidate) as a dashed vertical line,
/// labelled at its top.
fn draw_knee_line<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    r: &KneeReport,
    y_max: f64,
    path: &Path,
) -> Result<(), PlotError> {
    let e = err(path);
    let Some((k, color, label)) = knee_mark(r) else {
        return Ok(());
    };
    chart
        .draw_series(DashedLineSeries::new(
            vec![(k, 0.0), (k, y_max * 0.62)],
            10,
            6,
            color.stroke_width(3),
        ))
        .map_err(&e)?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3)));
    let text = if r.knee_level.is_some() {
        format!("knee {}", pct(k))
    } else {
        format!("candidate {} (not a knee)", pct(k))
    };
    chart
        .draw_series(std::iter::once(
            EmptyElement::at((k, y_max * 0.62))
                + Text::new(text, (8, -4), (FONT, 18).into_font().color(&color)),
        ))
        .map_err(&e)?;
    Ok(())
}

/// The defined costs: a line through them by level, a dot and its value
/// at each.
fn draw_costs<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    r: &KneeReport,
    path: &Path,
) -> Result<(), PlotError> {
    let e = err(path);
    let defined: Vec<(f64, f64)> = r
        .levels
        .iter()
        .filter_map(|l| l.cost_per_verified_usd.map(|c| (l.level, c)))
        .collect();
    let mut line = defined.clone();
    line.sort_by(|a, b| a.0.total_cmp(&b.0));
    chart
        .draw_series(LineSeries::new(line, POINT.stroke_width(2)))
        .map_err(&e)?
        .label("cost per verified task (spend / verified tasks at the level)")
        .legend(|(x, y)| {
            EmptyElement::at((x, y))
                + PathElement::new(vec![(0, 0), (20, 0)], POINT.stroke_width(2))
                + Circle::new((10, 0), 4, POINT.filled())
        });
    chart
        .draw_series(
            defined
                .iter()
                .map(|&(x, y)| Circle::new((x, y), 5, POINT.filled())),
        )
        .map_err(&e)?;
    chart
        .draw_series(defined.iter().map(|&(x, y)| {
            EmptyElement::at((x, y))
                + Text::new(format!("${y:.3}"), (12, -8), (FONT, 15).into_font())
        }))
        .map_err(&e)?;
    Ok(())
}

/// Whiskers: a vertical path in data coordinates, caps as pixel offsets.
fn draw_whiskers<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    r: &KneeReport,
    path: &Path,
) -> Result<(), PlotError> {
    let e = err(path);
    let bars: Vec<(f64, f64, f64)> = r
        .levels
        .iter()
        .filter_map(|l| l.cost_per_verified_ci.map(|[lo, hi]| (l.level, lo, hi)))
        .collect();
    let whisker = POINT.mix(0.55).stroke_width(2);
    chart
        .draw_series(
            bars.iter()
                .map(|&(x, lo, hi)| PathElement::new(vec![(x, lo), (x, hi)], whisker)),
        )
        .map_err(&e)?
        .label("95% case-bootstrap interval")
        .legend(move |(x, y)| {
            EmptyElement::at((x + 10, y))
                + PathElement::new(vec![(0, -8), (0, 8)], whisker)
                + PathElement::new(vec![(-5, -8), (5, -8)], whisker)
                + PathElement::new(vec![(-5, 8), (5, 8)], whisker)
        });
    for &(x, lo, hi) in &bars {
        for y in [lo, hi] {
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((x, y)) + PathElement::new(vec![(-7, 0), (7, 0)], whisker),
                ))
                .map_err(&e)?;
        }
    }
    Ok(())
}

/// Levels where nothing was verified have no cost: say so on the axis.
fn draw_undefined_costs<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    r: &KneeReport,
    path: &Path,
) -> Result<(), PlotError> {
    let undefined: Vec<f64> = r
        .levels
        .iter()
        .filter(|l| l.cost_per_verified_usd.is_none())
        .map(|l| l.level)
        .collect();
    if !undefined.is_empty() {
        chart
            .draw_series(
                undefined
                    .iter()
                    .map(|&x| Cross::new((x, 0.0), 7, MUTED.stroke_width(3))),
            )
            .map_err(err(path))?
            .label("no verified task at this level: cost undefined")
            .legend(|(x, y)| Cross::new((x + 10, y), 6, MUTED.stroke_width(3)));
    }
    Ok(())
}

/// The cheapest level ringed, its cost in the legend.
fn draw_cheapest<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    r: &KneeReport,
    path: &Path,
) -> Result<(), PlotError> {
    let Some(m) = r.min_cost_level else {
        return Ok(());
    };
    if let Some(c) = r
        .levels
        .iter()
        .find(|l| l.level == m)
        .and_then(|l| l.cost_per_verified_usd)
    {
        chart
            .draw_series(std::iter::once(Circle::new(
                (m, c),
                11,
                CHEAP.stroke_width(3),
            )))
            .map_err(err(path))?
            .label(format!(
                "lowest cost per verified task: {} (${c:.3})",
                pct(m)
            ))
            .legend(|(x, y)| Circle::new((x + 10, y), 6, CHEAP.stroke_width(3)));
    }
    Ok(())
}

/// Verified tasks against total spend, one point per level.
pub fn verified_vs_spend(r: &KneeReport, path: &Path) -> Result<(), PlotError> {
    let e = err(path);
    let mut pts: Vec<(f64, f64, f64)> = r
        .levels
        .iter()
        .map(|l| (l.spend_usd, l.verified as f64, l.level))
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let x_max = pts.iter().map(|p| p.0).fold(0.0, f64::max).max(0.01) * 1.12;
    let planned = r.levels.iter().map(|l| l.planned).max().unwrap_or(0);
    let y_max = (pts.iter().map(|p| p.1).fold(planned as f64, f64::max) * 1.1).max(1.0);
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    footnote(&root, r, path)?;
    let title = format!(
        "Verified tasks against spend, one point per budget level ({} case-runs each)",
        r.levels.first().map_or(0, |l| l.runs)
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FONT, 24))
        .margin(24)
        .x_label_area_size(60)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)
        .map_err(&e)?;
    chart
        .configure_mesh()
        .x_desc("spend at the level, all case-runs (USD)")
        .y_desc("verified tasks (count)")
        .x_label_formatter(&|x| format!("${x:.2}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .axis_desc_style((FONT, 18))
        .label_style((FONT, 16))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(&e)?;
    draw_spend_curve(&mut chart, r, &pts, (planned, x_max), path)?;
    draw_knee_point(&mut chart, r, &pts, path)?;
    draw_legend(&mut chart, SeriesLabelPosition::LowerRight, path)?;
    root.present().map_err(&e)?;
    Ok(())
}

/// The planned tasks as a ceiling, the points (spend, verified) labelled
/// with their level, and the chord when it means what Kneedle measures.
fn draw_spend_curve<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    r: &KneeReport,
    pts: &[(f64, f64, f64)],
    (planned, x_max): (u64, f64),
    path: &Path,
) -> Result<(), PlotError> {
    let e = err(path);
    if planned > 0 {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, planned as f64), (x_max, planned as f64)],
                6,
                6,
                MUTED.stroke_width(1),
            ))
            .map_err(&e)?
            .label(format!("tasks planned ({planned}): every task verified"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], MUTED.stroke_width(1)));
    }
    chart
        .draw_series(LineSeries::new(
            pts.iter().map(|p| (p.0, p.1)),
            POINT.stroke_width(2),
        ))
        .map_err(&e)?
        .label("verified tasks at a budget level (labelled with the level)")
        .legend(|(x, y)| {
            EmptyElement::at((x, y))
                + PathElement::new(vec![(0, 0), (20, 0)], POINT.stroke_width(2))
                + Circle::new((10, 0), 4, POINT.filled())
        });
    chart
        .draw_series(pts.iter().map(|&(x, y, level)| {
            EmptyElement::at((x, y))
                + Circle::new((0, 0), 5, POINT.filled())
                + Text::new(
                    format!("{} cap", pct(level)),
                    (8, 6),
                    (FONT, 15).into_font(),
                )
        }))
        .map_err(&e)?;
    // With the same number of tasks planned at every level, verified tasks
    // are the pass rate times a constant, and the chord Kneedle measures
    // from is the straight line from the cheapest to the costliest point.
    let same_planned = r.levels.windows(2).all(|w| w[0].planned == w[1].planned);
    if let (true, Some(a), Some(b)) = (same_planned, pts.first(), pts.last()) {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(a.0, a.1), (b.0, b.1)],
                4,
                5,
                MUTED.stroke_width(2),
            ))
            .map_err(&e)?
            .label("chord: the knee is the point farthest above it")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], MUTED.stroke_width(2)));
    }
    Ok(())
}

/// The knee's point (or its unconfirmed candidate's) ringed and named.
fn draw_knee_point<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    r: &KneeReport,
    pts: &[(f64, f64, f64)],
    path: &Path,
) -> Result<(), PlotError> {
    let Some((k, color, label)) = knee_mark(r) else {
        return Ok(());
    };
    if let Some(p) = pts.iter().find(|p| p.2 == k) {
        let text = if r.knee_level.is_some() {
            "the knee".to_string()
        } else {
            "candidate, not confirmed".to_string()
        };
        chart
            .draw_series(std::iter::once(
                // Under the point's level label: that corner lies between the curve and the chord.
                EmptyElement::at((p.0, p.1))
                    + Circle::new((0, 0), 12, color.stroke_width(3))
                    + Text::new(text, (8, 24), (FONT, 17).into_font().color(&color)),
            ))
            .map_err(err(path))?
            .label(label)
            .legend(move |(x, y)| Circle::new((x + 10, y), 6, color.stroke_width(3)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench::knee::analysis::{analyze, fill_planned, RunObs};
    use harness::ending::Ending;

    fn report(shape: &[(f64, f64, u64)]) -> KneeReport {
        let mut obs: Vec<RunObs> = shape
            .iter()
            .flat_map(|&(level, spend, v)| {
                (0..3).map(move |c| RunObs {
                    level,
                    case: format!("c{c}"),
                    run: 0,
                    ending: Some(if v == 10 {
                        Ending::GoalMet
                    } else {
                        Ending::BudgetExhausted
                    }),
                    spend_usd: spend,
                    hard_cap_usd: level,
                    verified: v,
                    parked: 0,
                    queue_left: 10 - v,
                    planned: 0,
                    planned_borrowed: false,
                    error: None,
                    not_comparable: None,
                    state_dir: String::new(),
                })
            })
            .collect();
        fill_planned(&mut obs);
        let levels: Vec<f64> = shape.iter().map(|s| s.0).collect();
        analyze("s", 1, &levels, &obs, 50, 1, 1.0)
    }

    fn render(r: &KneeReport) -> (String, String) {
        let d = tempfile::tempdir().unwrap();
        cost_per_verified(r, &d.path().join("a.svg")).unwrap();
        verified_vs_spend(r, &d.path().join("b.svg")).unwrap();
        (
            std::fs::read_to_string(d.path().join("a.svg")).unwrap(),
            std::fs::read_to_string(d.path().join("b.svg")).unwrap(),
        )
    }

    #[test]
    fn a_knee_is_drawn_and_named_in_both_legends() {
        let r = report(&[
            (1.0, 2.0, 10),
            (0.75, 1.7, 10),
            (0.5, 1.3, 9),
            (0.25, 0.6, 4),
            (0.1, 0.1, 0),
        ]);
        assert_eq!(r.knee_level, Some(0.5));
        let (a, b) = render(&r);
        assert!(
            a.contains("knee at 50%")
                && a.contains("knee 50%")
                && a.contains("no verified task at this level"),
            "{a}"
        );
        assert!(
            b.contains("the knee") && b.contains("chord") && b.contains("50% cap"),
            "{b}"
        );
    }

    #[test]
    fn nothing_verified_anywhere_still_renders() {
        let r = report(&[(1.0, 0.2, 0), (0.5, 0.1, 0)]);
        assert_eq!((r.knee_level, r.min_cost_level), (None, None));
        let (a, b) = render(&r);
        assert!(a.contains("cost undefined") && !a.contains("knee"), "{a}");
        assert!(b.contains("Verified tasks against spend"));
    }
}
