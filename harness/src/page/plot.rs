//! The page's plots as SVG text, through plotters' SVG backend (the one the
//! bench's knee and calibration plots use: text stays text, no font is
//! rasterized). The page inlines them inside an outer `<svg role="img">`
//! with a title and a description (`html`), since plotters' output has no
//! text alternative of its own. plotters escapes every label it draws; the
//! labels here are the harness's own words and figures, never model text.

use super::fmt;
use super::{CallPoint, RunPage};
use crate::drift::Band;
use crate::model::types::CallRole;
use plotters::prelude::*;

pub const SIZE: (u32, u32) = (960, 420);
/// The spend plot's scale reaches the cap once the spend (with what is
/// reserved in flight) is past this share of it.
pub const CAP_IN_VIEW: f64 = 0.25;
const FONT: &str = "sans-serif";
const CAP: RGBColor = RGBColor(179, 38, 30);
const P90: RGBColor = RGBColor(214, 110, 0);
const P70: RGBColor = RGBColor(190, 150, 0);
const LINE: RGBColor = RGBColor(60, 64, 67);
const MUTED: RGBColor = RGBColor(120, 120, 120);
const RAISE: RGBColor = RGBColor(20, 60, 200);

/// One colour per call role (and grey for a booking torn before its role).
pub fn role_color(role: Option<CallRole>) -> RGBColor {
    match role {
        Some(CallRole::Plan) => RGBColor(31, 90, 170),
        Some(CallRole::Execute) => RGBColor(23, 122, 70),
        Some(CallRole::Judge) => RGBColor(128, 60, 160),
        Some(CallRole::Replan) => RGBColor(200, 100, 20),
        Some(CallRole::Compact) => RGBColor(0, 130, 150),
        Some(CallRole::Lesson) => RGBColor(170, 140, 0),
        None => MUTED,
    }
}

pub fn role_name(role: Option<CallRole>) -> &'static str {
    role.map_or("unknown role", CallRole::as_str)
}

const ROLES: [Option<CallRole>; 7] = [
    Some(CallRole::Plan),
    Some(CallRole::Execute),
    Some(CallRole::Judge),
    Some(CallRole::Replan),
    Some(CallRole::Compact),
    Some(CallRole::Lesson),
    None,
];

/// Which axis the spend is drawn against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpendAxis {
    /// The call's position in booking order.
    Call,
    /// Seconds since the run's first event.
    Time,
}

fn x_of(c: &CallPoint, axis: SpendAxis) -> Option<f64> {
    match axis {
        SpendAxis::Call => Some(c.n as f64),
        SpendAxis::Time => c.t_s,
    }
}

/// Spend against model call or time: the running total as a line, each
/// call a dot in its role's colour (a worst-case booking a red ring), the
/// cap and its 70% and 90% lines, and the worst cases still reserved for
/// calls in flight as a dashed red rise at the end. None when there is no
/// call to draw (or, against time, no call with a time).
pub fn spend(page: &RunPage, axis: SpendAxis) -> Option<Result<String, String>> {
    let pts: Vec<(f64, &CallPoint)> = (page.calls.iter())
        .filter_map(|c| x_of(c, axis).map(|x| (x, c)))
        .collect();
    if pts.is_empty() {
        return None;
    }
    Some(draw_spend(page, &pts, axis).map_err(|e| e.to_string()))
}

/// The chart every plot here draws on: f64 on both axes.
type Chart<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;
type Drawn = Result<(), Box<dyn std::error::Error>>;

fn draw_spend(
    page: &RunPage,
    pts: &[(f64, &CallPoint)],
    axis: SpendAxis,
) -> Result<String, Box<dyn std::error::Error>> {
    let last = pts.last().map_or(0.0, |(_, c)| finite_or(c.spent_usd, 0.0));
    let x_last = pts.last().map_or(0.0, |p| p.0);
    let (x_max, y_max) = spend_scale(page, axis, x_last, last);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(72)
            .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
        chart
            .configure_mesh()
            .x_desc(match axis {
                SpendAxis::Call => "model call (in booking order)",
                SpendAxis::Time => "time since the run started (s)",
            })
            .y_desc("spend (USD)")
            .y_label_formatter(&|y| fmt::usd(*y))
            .x_label_formatter(&|x| axis_number(*x, x_max))
            .axis_desc_style((FONT, 16))
            .label_style((FONT, 14))
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        draw_cap_lines(&mut chart, page, axis, (x_max, y_max))?;
        draw_cap_raises(&mut chart, page, axis, y_max)?;
        draw_calls(&mut chart, pts, last)?;
        if page.in_flight_usd > 0.0 {
            draw_in_flight(&mut chart, page.in_flight_usd, x_last, last)?;
        }
        legend(&mut chart)?;
        root.present()?;
    }
    Ok(svg)
}

/// The spend plot's (x_max, y_max). The cap and its 70% and 90% lines are
/// drawn when the spend comes near them; a run that spent a sliver of its
/// cap is drawn at its own scale (else its curve is a flat line on the
/// floor), and the plot's description says where the cap is.
fn spend_scale(page: &RunPage, axis: SpendAxis, x_last: f64, last: f64) -> (f64, f64) {
    let cap = finite_or(page.report.hard_cap_usd, 0.0).max(0.0);
    let x_max = match axis {
        SpendAxis::Call => (x_last * 1.06).max(x_last + 1.0),
        // A replayed run lasts a fraction of a second.
        SpendAxis::Time => (x_last * 1.08).max(0.1),
    };
    let top = last + page.in_flight_usd;
    let y_max = if top >= CAP_IN_VIEW * cap {
        cap.max(top) * 1.08
    } else {
        top * 1.25
    }
    .max(0.01);
    (x_max, y_max)
}

/// The cap and its 70% and 90% lines, each left off when above the scale.
/// They step up at each raise: the old cap before it, the new one after.
fn draw_cap_lines<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    page: &RunPage,
    axis: SpendAxis,
    (x_max, y_max): (f64, f64),
) -> Drawn
where
    DB::ErrorType: 'static,
{
    let cap = finite_or(page.report.hard_cap_usd, 0.0).max(0.0);
    let steps = cap_steps(page, axis, x_max);
    for (share, color, name) in [
        (1.0, CAP, "hard cap"),
        (0.9, P90, "90% of the cap"),
        (0.7, P70, "70% of the cap"),
    ] {
        let y = cap * share;
        if y > y_max {
            continue;
        }
        let label = format!("{name} {}", fmt::usd(y));
        let style = color.stroke_width(if share == 1.0 { 2 } else { 1 });
        let path: Vec<(f64, f64)> = (steps.iter()).map(|(x, c)| (*x, c * share)).collect();
        chart
            .draw_series(DashedLineSeries::new(
                path,
                if share == 1.0 { 2000 } else { 8 },
                5,
                style,
            ))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
    }
    Ok(())
}

/// Each raise of the cap: a marked point on the spend curve where it was
/// raised, a vertical marker up to the new cap, and its label.
fn draw_cap_raises<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    page: &RunPage,
    axis: SpendAxis,
    y_max: f64,
) -> Drawn
where
    DB::ErrorType: 'static,
{
    for m in cap_raises(page, axis) {
        let top = m.new.min(y_max);
        chart.draw_series(DashedLineSeries::new(
            vec![(m.x, 0.0), (m.x, top)],
            6,
            4,
            RAISE.stroke_width(2),
        ))?;
        let label = raise_label(m.old, m.new);
        chart
            .draw_series(std::iter::once(TriangleMarker::new(
                (m.x, m.spent),
                9,
                RAISE.filled(),
            )))?
            .label(label.clone())
            .legend(|(x, y)| TriangleMarker::new((x + 9, y), 6, RAISE.filled()));
        chart.draw_series(std::iter::once(Text::new(
            label,
            (m.x, top),
            (FONT, 13).into_font().color(&RAISE),
        )))?;
    }
    Ok(())
}

/// The running total (a step at each booking), each call a dot in its
/// role's colour, and a red ring on each worst-case booking.
fn draw_calls<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    pts: &[(f64, &CallPoint)],
    last: f64,
) -> Drawn
where
    DB::ErrorType: 'static,
{
    let mut line = vec![(0.0, 0.0)];
    let mut prev = 0.0;
    for (x, c) in pts {
        line.push((*x, prev));
        prev = finite_or(c.spent_usd, prev);
        line.push((*x, prev));
    }
    chart
        .draw_series(LineSeries::new(line, LINE.stroke_width(2)))?
        .label(format!("spend {}", fmt::usd(last)))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], LINE.stroke_width(2)));
    for role in ROLES {
        let mine: Vec<(f64, f64)> = (pts.iter())
            .filter(|(_, c)| c.role == role && !c.worst_case)
            .map(|(x, c)| (*x, finite_or(c.spent_usd, 0.0)))
            .collect();
        if mine.is_empty() {
            continue;
        }
        let color = role_color(role);
        chart
            .draw_series(mine.into_iter().map(|p| Circle::new(p, 4, color.filled())))?
            .label(format!("{} call", role_name(role)))
            .legend(move |(x, y)| Circle::new((x + 9, y), 4, color.filled()));
    }
    let worst: Vec<(f64, f64)> = (pts.iter())
        .filter(|(_, c)| c.worst_case)
        .map(|(x, c)| (*x, finite_or(c.spent_usd, 0.0)))
        .collect();
    if !worst.is_empty() {
        chart
            .draw_series(
                worst
                    .into_iter()
                    .map(|p| Circle::new(p, 7, CAP.stroke_width(2))),
            )?
            .label("booked at its worst case (usage unknown)")
            .legend(|(x, y)| Circle::new((x + 9, y), 6, CAP.stroke_width(2)));
    }
    Ok(())
}

/// The worst cases still reserved for calls in flight: a dashed red rise
/// at the end of the curve.
fn draw_in_flight<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    in_flight_usd: f64,
    x_last: f64,
    last: f64,
) -> Drawn
where
    DB::ErrorType: 'static,
{
    let top = last + in_flight_usd;
    chart
        .draw_series(DashedLineSeries::new(
            vec![(x_last, last), (x_last, top)],
            5,
            4,
            CAP.stroke_width(3),
        ))?
        .label(format!("reserved in flight {}", fmt::usd(in_flight_usd)))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], CAP.stroke_width(3)));
    Ok(())
}

/// A raise of the hard cap where the spend plot draws it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CapRaise {
    /// On the plot's axis: between the last call booked before the raise
    /// and the next (by call), or when it was journaled (by time).
    pub x: f64,
    /// The spend when the cap was raised (the marked point's height).
    pub spent: f64,
    pub old: f64,
    pub new: f64,
}

/// The words a raise is labelled with, on the plot and in its description.
pub fn raise_label(old: f64, new: f64) -> String {
    format!("cap raised {} \u{2192} {}", fmt::usd(old), fmt::usd(new))
}

/// The report's raises of the hard cap, placed on `axis` (a raise the time
/// axis cannot place, with no event log, is left off that plot only).
pub fn cap_raises(page: &RunPage, axis: SpendAxis) -> Vec<CapRaise> {
    (page.report.limit_raises.iter())
        .filter(|r| r.limit == crate::ledger::LimitKind::HardCapUsd)
        .filter(|r| r.old.is_finite() && r.new.is_finite())
        .filter_map(|r| {
            let before = (page.calls.iter())
                .take_while(|c| c.n <= r.after_calls)
                .last();
            let spent = before.map_or(0.0, |c| finite_or(c.spent_usd, 0.0));
            let x = match axis {
                SpendAxis::Call => r.after_calls as f64 + 0.5,
                SpendAxis::Time => match page.first_event_unix_ms {
                    Some(t0) => r.unix_ms.saturating_sub(t0) as f64 / 1000.0,
                    None => before.and_then(|c| c.t_s)?,
                },
            };
            Some(CapRaise {
                x,
                spent,
                old: r.old,
                new: r.new,
            })
        })
        .collect()
}

/// The hard cap as a path over the plot's width: the cap before the first
/// raise from 0, stepping to each raise's new cap at its x, the run's cap
/// to `x_max`. A run never raised: the report's cap, one flat line.
pub fn cap_steps(page: &RunPage, axis: SpendAxis, x_max: f64) -> Vec<(f64, f64)> {
    let cap = finite_or(page.report.hard_cap_usd, 0.0).max(0.0);
    let raises = cap_raises(page, axis);
    let mut path = vec![(0.0, raises.first().map_or(cap, |r| r.old))];
    for r in &raises {
        let x = r.x.clamp(0.0, x_max);
        let before = path.last().map_or(r.old, |p| p.1);
        path.push((x, before));
        path.push((x, r.new));
    }
    let last = path.last().map_or(cap, |p| p.1);
    path.push((x_max, last));
    path
}

/// Both plots' legend: upper left, over a light box.
fn legend<'a, DB: DrawingBackend + 'a>(chart: &mut Chart<'a, DB>) -> Drawn
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font((FONT, 13))
        .background_style(WHITE.mix(0.85))
        .border_style(MUTED)
        .draw()?;
    Ok(())
}

fn band_color(b: Band) -> RGBColor {
    match b {
        Band::Aligned => RGBColor(23, 122, 70),
        Band::Prune => P90,
        Band::Halt => CAP,
    }
}

/// Drift score against step, with the prune and halt bands. None when the
/// run made no drift check.
pub fn drift(page: &RunPage) -> Option<Result<String, String>> {
    if page.report.drift_history.is_empty() {
        return None;
    }
    Some(draw_drift(page).map_err(|e| e.to_string()))
}

fn draw_drift(page: &RunPage) -> Result<String, Box<dyn std::error::Error>> {
    let h = &page.report.drift_history;
    let x_last = h.iter().map(|d| d.step).max().unwrap_or(0) as f64;
    let x_max = (x_last * 1.06).max(x_last + 1.0);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (SIZE.0, 320)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..x_max, 0f64..1.0)?;
        chart
            .configure_mesh()
            .x_desc("step")
            .y_desc("drift score")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .axis_desc_style((FONT, 16))
            .label_style((FONT, 14))
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        for (y, color, name) in [
            (page.halt_above, CAP, "halt above"),
            (page.prune_above, P90, "prune above"),
        ] {
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(0.0, y), (x_max, y)],
                    8,
                    5,
                    color.stroke_width(2),
                ))?
                .label(format!("{name} {}", fmt::score(y)))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
        }
        let line: Vec<(f64, f64)> = (h.iter())
            .map(|d| (d.step as f64, finite_or(d.score, 0.0).clamp(0.0, 1.0)))
            .collect();
        chart.draw_series(LineSeries::new(line, LINE.stroke_width(1)))?;
        for band in [Band::Aligned, Band::Prune, Band::Halt] {
            let mine: Vec<(f64, f64)> = (h.iter())
                .filter(|d| d.band == band)
                .map(|d| (d.step as f64, finite_or(d.score, 0.0).clamp(0.0, 1.0)))
                .collect();
            if mine.is_empty() {
                continue;
            }
            let color = band_color(band);
            chart
                .draw_series(mine.into_iter().map(|p| Circle::new(p, 5, color.filled())))?
                .label(format!("{band:?}").to_lowercase())
                .legend(move |(x, y)| Circle::new((x + 9, y), 5, color.filled()));
        }
        legend(&mut chart)?;
        root.present()?;
    }
    Ok(svg)
}

/// Labels the mesh puts on an axis (plotters' default), which the decimals
/// are chosen for.
const AXIS_LABELS: usize = 10;

/// An axis tick with as many decimals as the ticks' step needs, so no two
/// ticks read the same (a replayed run lasts a fraction of a second: with
/// tenths, a 0.1 s axis read "0.0, 0.0, 0.0, 0.1, ...").
fn axis_number(x: f64, span: f64) -> String {
    let step = span / AXIS_LABELS as f64;
    let decimals = if step.is_finite() && step > 0.0 && step < 1.0 {
        ((-step.log10()).ceil() as usize).min(6)
    } else {
        0
    };
    format!("{x:.decimals$}")
}

fn finite_or(x: f64, or: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        or
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plotters::coord::ranged1d::Ranged;
    use plotters::coord::types::RangedCoordf64;

    /// The ticks plotters draws on a 0..span axis, labelled as the page
    /// labels them, never repeat, from a replay's fraction of a second to
    /// a night's hours.
    #[test]
    fn time_axis_ticks_never_read_the_same() {
        for span in [
            0.013, 0.05, 0.1, 0.108, 0.35, 1.0, 2.0, 7.3, 10.8, 37.0, 500.0, 28_800.0,
        ] {
            let ticks = RangedCoordf64::from(0.0..span).key_points(AXIS_LABELS);
            let labels: Vec<String> = ticks.iter().map(|t| axis_number(*t, span)).collect();
            let mut distinct = labels.clone();
            distinct.dedup();
            assert_eq!(distinct, labels, "span {span}: {labels:?}");
            assert!(labels.len() >= 2, "span {span}: {labels:?}");
        }
    }
}
