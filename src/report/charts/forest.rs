//! The forest plot: estimates with intervals on an axis centred on the threshold.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::RED;
use super::{ForestRow, GREY, MAX_LABEL_WIDTH, label_width, tick};

/// The x window of a forest plot: the threshold ± w, with w = max(4·|threshold|, 3 × the median
/// interval half-width), widened to show 0.
fn forest_window(rows: &[ForestRow], threshold: f64) -> (f64, f64) {
    let mut half: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.interval.map(|(l, h)| (h - l) / 2.0))
        .filter(|w| w.is_finite() && *w > 0.0)
        .collect();
    half.sort_by(f64::total_cmp);
    let median = half.get(half.len() / 2).copied().unwrap_or(0.0);
    let w = (4.0 * threshold.abs()).max(3.0 * median).max(1e-6);
    let (lo, hi) = (threshold - w, threshold + w);
    (lo.min(-0.1 * w), hi.max(0.1 * w))
}

pub(super) fn draw_forest<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    x_desc: &str,
    rows: &[ForestRow],
    threshold: f64,
) -> std::result::Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("{e:?}");
    let n = rows.len().max(1);
    let (x0, x1) = forest_window(rows, threshold);
    let labels = forest_labels(rows, x0, x1);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 18))
        .margin(14)
        .x_label_area_size(42)
        .y_label_area_size(label_width(&labels, 8).min(460))
        .build_cartesian_2d(x0..x1, (0..n - 1).into_segmented())
        .map_err(err)?;
    let at = |i: usize| n - 1 - i;
    let formatter = |v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(WHITE)
        .bold_line_style(GREY.mix(0.25))
        .x_labels(7)
        .y_labels(n)
        .y_label_formatter(&formatter)
        .x_label_formatter(&tick)
        .x_desc(x_desc)
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    let top = SegmentValue::Last;
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(0.0, SegmentValue::Exact(0)), (0.0, top.clone())],
            GREY.stroke_width(1),
        )))
        .map_err(err)?;
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(threshold, SegmentValue::Exact(0)), (threshold, top)],
            RED.stroke_width(2),
        )))
        .map_err(err)?
        .label(format!("threshold {}", tick(&threshold)))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], RED.stroke_width(2)));
    let clamp = |v: f64| v.clamp(x0, x1);
    chart
        .draw_series(rows.iter().enumerate().filter_map(|(i, r)| {
            r.interval.map(|(l, h)| {
                PathElement::new(
                    vec![
                        (clamp(l), SegmentValue::CenterOf(at(i))),
                        (clamp(h), SegmentValue::CenterOf(at(i))),
                    ],
                    r.color.stroke_width(2),
                )
            })
        }))
        .map_err(err)?;
    chart
        .draw_series(rows.iter().enumerate().map(|(i, r)| {
            let off = r.value > x1 || r.value < x0;
            let style = if off {
                r.color.stroke_width(2)
            } else {
                r.color.filled()
            };
            Circle::new(
                (clamp(r.value), SegmentValue::CenterOf(at(i))),
                if off { 6 } else { 5 },
                style,
            )
        }))
        .map_err(err)?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(GREY)
        .label_font(("sans-serif", 12))
        .draw()
        .map_err(err)?;
    Ok(())
}

/// The row labels, bottom row first (truncated, with the row's flag, and ▶ or ◀ with the value
/// for a drop beyond the window [x0, x1]).
fn forest_labels(rows: &[ForestRow], x0: f64, x1: f64) -> Vec<String> {
    rows.iter()
        .rev()
        .map(|r| {
            let mut l = crate::report::text::truncate(&r.label, MAX_LABEL_WIDTH);
            if let Some(f) = &r.flag {
                l = format!("{l} {f}");
            }
            if r.value > x1 {
                l = format!("{l} ▶ {}", tick(&r.value));
            } else if r.value < x0 {
                l = format!("{l} ◀ {}", tick(&r.value));
            }
            l
        })
        .collect()
}
