//! Horizontal bars by category, with whiskers and vertical reference lines.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::RED;
use super::{Bar, GREY, MAX_LABEL_WIDTH, label_width, span, tick};

pub(super) fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    x_desc: &str,
    bars: &[Bar],
    marks: &[(f64, String)],
) -> std::result::Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("{e:?}");
    let n = bars.len().max(1);
    let (lo, hi) = span(
        bars.iter()
            .flat_map(|b| {
                [
                    Some(b.value),
                    b.interval.map(|i| i.0),
                    b.interval.map(|i| i.1),
                ]
            })
            .flatten()
            .chain(marks.iter().map(|m| m.0))
            .chain(std::iter::once(0.0)),
    );
    // Long names are cut for the axis (the table beside the chart keeps them whole).
    let labels: Vec<String> = bars
        .iter()
        .rev()
        .map(|b| crate::report::text::truncate(&b.label, MAX_LABEL_WIDTH))
        .collect();
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 17))
        .margin(12)
        .x_label_area_size(38)
        .y_label_area_size(label_width(&labels, 7).min(420))
        .build_cartesian_2d(lo..hi, (0..n).into_segmented())
        .map_err(err)?;
    // The first bar at the top: segment k holds bar n − 1 − k.
    let at = |i: usize| n - 1 - i;
    let formatter = |v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        // Grid lines at the labelled ticks only, as in every chart (see `forest`).
        .light_line_style(TRANSPARENT)
        .y_labels(n)
        .y_label_formatter(&formatter)
        .x_label_formatter(&tick)
        .x_desc(x_desc)
        .label_style(("sans-serif", 11))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, b)| {
            let mut r = Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(at(i))),
                    (b.value, SegmentValue::Exact(at(i) + 1)),
                ],
                b.color.mix(0.85).filled(),
            );
            r.set_margin(3, 3, 0, 0);
            r
        }))
        .map_err(err)?;
    chart
        .draw_series(bars.iter().enumerate().filter_map(|(i, b)| {
            b.interval.map(|(l, h)| {
                PathElement::new(
                    vec![
                        (l, SegmentValue::CenterOf(at(i))),
                        (h, SegmentValue::CenterOf(at(i))),
                    ],
                    BLACK.stroke_width(1),
                )
            })
        }))
        .map_err(err)?;
    for (x, label) in marks {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(*x, SegmentValue::Exact(0)), (*x, SegmentValue::Last)],
                RED.stroke_width(1),
            )))
            .map_err(err)?
            .label(label.as_str())
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], RED));
    }
    if !marks.is_empty() {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(GREY)
            .label_font(("sans-serif", 11))
            .draw()
            .map_err(err)?;
    }
    Ok(())
}
