//! roc.svg: every measured detector's ROC curve on the labeled set, with the
//! harness's shipped bands (> 0.3 prune, > 0.5 halt) marked on each curve
//! and the chance diagonal, so "does it separate, and where do the shipped
//! thresholds sit" can be read off the picture.
//!
//! plotters' SVG backend: text stays text (no font is rasterized), so the
//! bench needs no font files.

use crate::stats::rates_at;
use bench::calibrate::metrics::{DetectorReport, HALT_ABOVE, PRUNE_ABOVE};
use bench::calibrate::queues::Label;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

const SIZE: (u32, u32) = (900, 1010);
/// Height of the chart; the strip below it holds the legend, so the legend
/// never covers a curve (a good detector's curve hugs the upper left, a bad
/// one's the lower right: no corner inside the plot is safe for both).
const CHART_H: u32 = 820;
const FONT: &str = "sans-serif";
const COLORS: [RGBColor; 4] = [
    RGBColor(31, 90, 170),
    RGBColor(200, 30, 30),
    RGBColor(20, 130, 60),
    RGBColor(150, 60, 170),
];
const MUTED: RGBColor = RGBColor(130, 130, 130);

/// `detectors`: (name, report) of every MEASURED detector. `not_measured`:
/// names of detectors asked for but not measured, said on the plot so an
/// absent curve is not read as a bad one.
pub fn roc(
    detectors: &[(&str, &DetectorReport)],
    not_measured: &[&str],
    n_aligned: usize,
    n_drifted: usize,
    path: &Path,
) -> Result<(), PlotError> {
    let e = |x: &dyn std::fmt::Display| PlotError {
        path: path.to_path_buf(),
        message: x.to_string(),
    };
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let (top, bottom) = root.split_vertically(CHART_H);
    // (marker kind, color, text) of each legend line, drawn in `bottom`.
    let mut legend: Vec<(Mark, RGBColor, String)> = Vec::new();
    let title = format!(
        "Drift detectors: ROC on {} labeled queues ({n_aligned} aligned, {n_drifted} drifted)",
        n_aligned + n_drifted
    );
    let mut chart = chart(&top, title).map_err(|x| e(&x))?;
    chart
        .draw_series(DashedLineSeries::new(
            vec![(0.0, 0.0), (1.0, 1.0)],
            8,
            6,
            MUTED.stroke_width(1),
        ))
        .map_err(|x| e(&x))?;
    legend.push((
        Mark::Dashed,
        MUTED,
        "chance: a detector that cannot separate the labels (AUC 0.5)".into(),
    ));
    for (i, (name, r)) in detectors.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        legend.push(curve(&mut chart, name, r, color).map_err(|x| e(&x))?);
    }
    legend.push((
        Mark::Circle,
        BLACK,
        "marker: the shipped prune band on that curve (score > 0.3)".into(),
    ));
    legend.push((
        Mark::Triangle,
        BLACK,
        "marker: the shipped halt band on that curve (score > 0.5)".into(),
    ));
    for name in not_measured {
        legend.push((
            Mark::Cross,
            MUTED,
            format!("{name}: NOT MEASURED, no curve (no recordings of a real model yet)"),
        ));
    }
    draw_legend(&bottom, &legend).map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

/// roc.svg could not be drawn or written; the message names the file.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", .path.display())]
pub struct PlotError {
    path: PathBuf,
    message: String,
}

type Area<'b> = DrawingArea<SVGBackend<'b>, plotters::coord::Shift>;
type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    plotters::coord::cartesian::Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::types::RangedCoordf64,
    >,
>;
type DrawError<'b> = DrawingAreaErrorKind<<SVGBackend<'b> as DrawingBackend>::ErrorType>;

/// The axes, a little past 0..1 so curves on the edges stay visible.
fn chart<'a, 'b>(top: &'a Area<'b>, title: String) -> Result<Chart<'a, 'b>, DrawError<'b>> {
    let mut chart = ChartBuilder::on(top)
        .caption(title, (FONT, 24))
        .margin(24)
        .x_label_area_size(64)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.02f64..1.02f64, -0.02f64..1.02f64)?;
    chart
        .configure_mesh()
        .x_desc("false positive rate: share of ALIGNED queues flagged")
        .y_desc("true positive rate: share of DRIFTED queues caught")
        .x_labels(11)
        .y_labels(11)
        .x_label_formatter(&|x| format!("{x:.1}"))
        .y_label_formatter(&|y| format!("{y:.1}"))
        .axis_desc_style((FONT, 19))
        .label_style((FONT, 16))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()?;
    Ok(chart)
}

/// One detector's curve and its band markers; returns its legend line.
fn curve<'b>(
    chart: &mut Chart<'_, 'b>,
    name: &str,
    r: &DetectorReport,
    color: RGBColor,
) -> Result<(Mark, RGBColor, String), DrawError<'b>> {
    // Straight segments between consecutive thresholds: between two
    // thresholds exactly one distinct score changes side, so a segment is
    // vertical (only drifted queues had it), horizontal (only aligned) or
    // diagonal (a tie across labels), and the area under this polyline is
    // the tie-aware AUC reported.
    let pts: Vec<(f64, f64)> = r.roc.iter().map(|p| (p.fpr, p.tpr)).collect();
    chart.draw_series(LineSeries::new(pts, color.stroke_width(3)))?;
    let line = (
        Mark::Line,
        color,
        format!(
            "{name}: AUC {:.2} (95% CI {:.2}-{:.2}), {}",
            r.auc,
            r.auc_ci[0],
            r.auc_ci[1],
            r.verdict.split(':').next().unwrap_or("")
        ),
    );
    // The shipped bands on this curve.
    let scores: Vec<f64> = r.queues.iter().filter_map(|q| q.score).collect();
    let drifted: Vec<bool> = (r.queues.iter())
        .filter(|q| q.score.is_some())
        .map(|q| q.label == Label::Drifted)
        .collect();
    for (t, is_halt) in [(PRUNE_ABOVE, false), (HALT_ABOVE, true)] {
        let (tpr, fpr) = rates_at(&scores, &drifted, t);
        if !(tpr.is_finite() && fpr.is_finite()) {
            continue;
        }
        let text = format!("{name} > {t}");
        // Labels of the two bands go to opposite sides so they do not overprint.
        let offset = if is_halt { (12, 6) } else { (12, -22) };
        let style = (FONT, 15).into_font().color(&color);
        if is_halt {
            let m = EmptyElement::at((fpr, tpr))
                + TriangleMarker::new((0, 0), 9, color.filled())
                + Text::new(text, offset, style);
            chart.draw_series(std::iter::once(m))?;
        } else {
            let m = EmptyElement::at((fpr, tpr))
                + Circle::new((0, 0), 8, color.filled())
                + Text::new(text, offset, style);
            chart.draw_series(std::iter::once(m))?;
        }
    }
    Ok(line)
}

/// The legend, one line per mark, in the strip under the chart.
fn draw_legend<'b>(
    bottom: &Area<'b>,
    legend: &[(Mark, RGBColor, String)],
) -> Result<(), DrawError<'b>> {
    let font = (FONT, 17).into_font();
    for (i, (mark, color, text)) in legend.iter().enumerate() {
        let y = 20 + 30 * i as i32;
        let x = 110;
        match mark {
            Mark::Line => bottom.draw(&PathElement::new(
                vec![(x, y), (x + 30, y)],
                color.stroke_width(3),
            )),
            Mark::Dashed => bottom.draw(&PathElement::new(
                vec![(x, y), (x + 30, y)],
                color.stroke_width(1),
            )),
            Mark::Circle => bottom.draw(&Circle::new((x + 15, y), 7, color.filled())),
            Mark::Triangle => bottom.draw(&TriangleMarker::new((x + 15, y), 8, color.filled())),
            Mark::Cross => bottom.draw(&Cross::new((x + 15, y), 6, color.stroke_width(2))),
        }?;
        bottom.draw(&Text::new(text.clone(), (x + 44, y - 9), font.clone()))?;
    }
    Ok(())
}

enum Mark {
    Line,
    Dashed,
    Circle,
    Triangle,
    Cross,
}
