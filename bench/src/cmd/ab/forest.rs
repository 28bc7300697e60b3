//! forest.svg (and the plot on ab.html): per subject (all cases, then each
//! category) B - A with its 95% interval, one panel per metric. What the
//! verdict names is marked on the plot itself (a band behind the row, the
//! row's label flagged, the reason written under the plot), so the plot
//! never shows a grey "nothing here" where the verdict says "B regresses":
//! an adversarial case that fails once is a regression whatever the
//! interval, and the plot says so where that case's category sits.

use super::words::Mark;
use bench::ab::analysis::{Code, METRICS};
use bench::ab::run::AbRun;
use plotters::prelude::*;

/// The panels always drawn: metric, axis title, and the factor from the
/// metric's units to the axis's (shares to percentage points).
const BASE_PANELS: [(&str, &str, f64); 2] = [
    ("pass_rate", "pass rate, B - A (percentage points)", 100.0),
    ("cost_per_case", "cost per case-run, B - A (USD)", 1.0),
];
/// Pixels: the plot's width, a row's height, a panel's axes and margins,
/// the title, and one line of the notes under the plot.
const WIDTH_PX: u32 = 1200;
const ROW_PX: u32 = 46;
const PANEL_PX: u32 = 120;
const TITLE_PX: u32 = 40;
const NOTE_PX: u32 = 26;
/// The flag before a marked row's label.
pub const FLAG: &str = "▶ ";
const RED: RGBColor = RGBColor(200, 30, 30);
const GREEN: RGBColor = RGBColor(0, 130, 60);
const GREY: RGBColor = RGBColor(90, 90, 90);

/// One row of a panel.
struct Row {
    label: String,
    delta: f64,
    ci: [f64; 2],
    code: Code,
    /// The verdict names this row: Some(true) a regression, Some(false) an
    /// improvement.
    mark: Option<bool>,
}

fn rows(r: &AbRun, metric: &str, marks: &[Mark]) -> Vec<Row> {
    let mark_of = |row: Option<&str>| {
        let hit: Vec<&Mark> = (marks.iter())
            .filter(|m| m.metric == metric && m.row.as_deref() == row)
            .collect();
        (!hit.is_empty()).then(|| hit.iter().any(|m| m.regress))
    };
    let mut rows = vec![];
    if let Some(m) = r.analysis.metrics.get(metric) {
        rows.push(Row {
            label: format!("all cases (n={})", m.n_cases),
            delta: m.delta,
            ci: m.ci,
            code: m.verdict_code,
            mark: mark_of(None),
        });
    }
    for (cat, c) in &r.analysis.categories {
        if let Some(m) = c.metrics.get(metric) {
            rows.push(Row {
                label: format!("{cat} (n={})", m.n_cases),
                delta: m.delta,
                ci: m.ci,
                code: m.verdict_code,
                mark: mark_of(Some(cat)),
            });
        }
    }
    for row in rows.iter_mut().filter(|r| r.mark.is_some()) {
        row.label = format!("{FLAG}{}", row.label);
    }
    rows
}

/// The panels: the two always drawn, then a panel for any other metric the
/// verdict names (so a mark always has a row to sit on).
fn panels(marks: &[Mark]) -> Vec<(&'static str, String, f64)> {
    let mut out: Vec<(&'static str, String, f64)> = BASE_PANELS
        .iter()
        .map(|(m, axis, s)| (*m, axis.to_string(), *s))
        .collect();
    for m in marks {
        if out.iter().all(|(name, _, _)| *name != m.metric) {
            let d = METRICS.iter().find(|d| d.name == m.metric);
            let label = d.map_or(m.metric, |d| d.label);
            let unit = if m.metric.starts_with("cost") {
                " (USD)"
            } else {
                ""
            };
            out.push((m.metric, format!("{label}, B - A{unit}"), 1.0));
        }
    }
    out
}

/// A drawing step of plotters failed (its error is generic over the
/// backend, so it is kept as its text).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PlotError(String);

fn plot_error(e: impl std::fmt::Display) -> PlotError {
    PlotError(e.to_string())
}

/// The plot's size in pixels for this comparison.
pub fn size(r: &AbRun, marks: &[Mark]) -> (u32, u32) {
    let n_rows = rows(r, "pass_rate", marks).len().max(1) as u32;
    let grid_rows = panels(marks).len().div_ceil(2) as u32;
    let notes = marks.len() as u32 + u32::from(r.analysis.comparability.note.is_some());
    (
        WIDTH_PX,
        TITLE_PX + grid_rows * (PANEL_PX + ROW_PX * n_rows) + NOTE_PX * notes + 8,
    )
}

/// The plot as SVG text. Green: B significantly better; red:
/// significantly worse (categories: Holm); grey: neither. A marked row (what
/// the verdict names) has a band behind it and a flag before its label,
/// and each mark's reason is written under the plot.
pub fn svg(r: &AbRun, marks: &[Mark]) -> Result<String, PlotError> {
    let (w, h) = size(r, marks);
    let note = r.analysis.comparability.note.as_ref();
    let mut notes: Vec<(String, RGBColor)> = marks
        .iter()
        .map(|m| {
            let c = if m.regress { RED } else { GREEN };
            (format!("{FLAG}{}", m.text), c)
        })
        .collect();
    if let Some(n) = note {
        notes.push((format!("left out (not comparable): {n}"), RED));
    }
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let title = format!(
            "{} (B) vs {} (A), {} cases x {} runs: B - A with 95% intervals (green: B significantly better, red: worse; {FLAG}: what the verdict names)",
            r.b.name, r.a.name, r.analysis.n_cases, r.analysis.runs_per_case
        );
        let notes_px = NOTE_PX * notes.len() as u32;
        let (root, foot) = root.split_vertically(h - notes_px);
        for (i, (text, color)) in notes.iter().enumerate() {
            foot.draw(&Text::new(
                text.clone(),
                (16, 4 + NOTE_PX as i32 * i as i32),
                ("sans-serif", 15).into_font().color(color),
            ))
            .map_err(plot_error)?;
        }
        let root = root
            .titled(&title, ("sans-serif", 16))
            .map_err(plot_error)?;
        let panels = panels(marks);
        let areas = root.split_evenly((panels.len().div_ceil(2), 2));
        for (area, (metric, axis, scale)) in areas.iter().zip(&panels) {
            panel(area, &rows(r, metric, marks), axis, *scale)?;
        }
        root.present().map_err(plot_error)?;
    }
    Ok(out)
}

type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::ranged1d::SegmentedCoord<plotters::coord::types::RangedCoordusize>,
    >,
>;

/// One panel: the axes sized to every finite delta and interval end (and
/// 0), a line at 0, and one row per subject, all cases at the top.
fn panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    rows: &[Row],
    axis: &str,
    scale: f64,
) -> Result<(), PlotError> {
    let n = rows.len().max(1);
    let finite: Vec<f64> = rows
        .iter()
        .flat_map(|x| [x.delta, x.ci[0], x.ci[1]])
        .filter(|v| v.is_finite())
        .map(|v| v * scale)
        .collect();
    let lo = finite.iter().copied().fold(0.0f64, f64::min);
    let hi = finite.iter().copied().fold(0.0f64, f64::max);
    let pad = ((hi - lo) * 0.08).max(if scale > 1.0 { 1.0 } else { 1e-4 });
    let (x0, x1) = (lo - pad, hi + pad);
    let labels: Vec<String> = rows.iter().map(|x| x.label.clone()).collect();
    let mut chart = ChartBuilder::on(area)
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(190)
        // an integer range includes its end: 0..n-1 is n rows
        .build_cartesian_2d(x0..x1, (0..n - 1).into_segmented())
        .map_err(plot_error)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc(axis)
        .y_desc("")
        .axis_desc_style(("sans-serif", 16))
        .label_style(("sans-serif", 14))
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            // row 0 (all cases) at the top
            SegmentValue::CenterOf(i) if *i < n => {
                labels.get(n - 1 - i).cloned().unwrap_or_default()
            }
            _ => String::new(),
        })
        .x_label_formatter(&|x| {
            if scale > 1.0 {
                format!("{x:+.0}")
            } else {
                format!("{x:+.3}")
            }
        })
        .draw()
        .map_err(plot_error)?;
    for (i, row) in rows.iter().enumerate() {
        if let Some(regress) = row.mark {
            band(&mut chart, n - 1 - i, (x0, x1), regress)?;
        }
    }
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(0.0, SegmentValue::Exact(0)), (0.0, SegmentValue::Last)],
            BLACK.mix(0.5).stroke_width(1),
        )))
        .map_err(plot_error)?;
    for (i, row) in rows.iter().enumerate() {
        draw_row(&mut chart, row, n - 1 - i, scale)?;
    }
    Ok(())
}

/// The band behind a marked row, across the whole panel.
fn band(chart: &mut Chart, at: usize, x: (f64, f64), regress: bool) -> Result<(), PlotError> {
    let color = if regress { RED } else { GREEN };
    let y = SegmentValue::CenterOf(at);
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(x.0, y.clone()), (x.1, y)],
            color.mix(0.15).stroke_width(ROW_PX - 12),
        )))
        .map_err(plot_error)?;
    Ok(())
}

/// A row's interval as a bar and its delta as a dot, coloured by verdict;
/// an undefined interval or delta is left out rather than drawn at NaN.
fn draw_row(chart: &mut Chart, row: &Row, at: usize, scale: f64) -> Result<(), PlotError> {
    let y = SegmentValue::CenterOf(at);
    let color = match row.code {
        Code::Better => GREEN,
        Code::Worse => RED,
        _ => GREY,
    };
    if row.ci[0].is_finite() && row.ci[1].is_finite() {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![
                    (row.ci[0] * scale, y.clone()),
                    (row.ci[1] * scale, y.clone()),
                ],
                color.stroke_width(3),
            )))
            .map_err(plot_error)?;
    }
    if row.delta.is_finite() {
        chart
            .draw_series(std::iter::once(Circle::new(
                (row.delta * scale, y),
                6,
                color.filled(),
            )))
            .map_err(plot_error)?;
    }
    Ok(())
}
