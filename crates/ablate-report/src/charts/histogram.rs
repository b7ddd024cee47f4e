//! A histogram with vertical reference lines.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{BLUE, GREEN, GREY, Layout, ORANGE, RED, tick};

pub(super) fn draw_histogram<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    layout: &Layout,
    title: &str,
    x_desc: &str,
    bins: &[(f64, f64, u64)],
    marks: &[(f64, String)],
) -> std::result::Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("{e:?}");
    let x1 = bins
        .last()
        .map_or(1.0, |b| b.1)
        .max(marks.iter().map(|m| m.0).fold(0.0, f64::max));
    let y1 = bins.iter().map(|b| b.2).max().unwrap_or(1).max(1) as f64 * 1.08;
    // A band above the bins for the legend, so that it covers no bar.
    let y1 = y1 * (1.0 + super::legend_share(layout, root, marks.len()));
    let y_area = 50 + 2 * layout.text;
    let (x_desc, desc_size) = super::fitted_x_desc(x_desc, layout, y_area);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", layout.caption))
        .margin(12)
        .margin_right(super::right_margin(layout))
        .x_label_area_size(38 + layout.text)
        .y_label_area_size(y_area)
        .build_cartesian_2d(0.0..x1 * 1.02, 0.0..y1)
        .map_err(err)?;
    chart
        .configure_mesh()
        // Grid lines at the labelled ticks only, as in every chart (see `forest`).
        .light_line_style(TRANSPARENT)
        .x_labels(super::max_x_ticks(layout))
        .x_label_formatter(&tick)
        .y_label_formatter(&tick)
        .x_desc(x_desc.as_str())
        .y_desc("calls")
        .label_style(("sans-serif", layout.text))
        .axis_desc_style(("sans-serif", desc_size))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(bins.iter().map(|(lo, hi, c)| {
            Rectangle::new([(*lo, 0.0), (*hi, *c as f64)], BLUE.mix(0.8).filled())
        }))
        .map_err(err)?;
    for (i, (x, label)) in marks.iter().enumerate() {
        let color = [GREEN, ORANGE, RED, GREY][i % 4];
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(*x, 0.0), (*x, y1)],
                color.stroke_width(2),
            )))
            .map_err(err)?
            .label(label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(GREY)
        .label_font(("sans-serif", layout.text))
        .draw()
        .map_err(err)?;
    Ok(())
}
