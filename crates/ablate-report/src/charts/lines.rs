//! Lines with bands and horizontal reference lines.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::RED;
use super::{GREY, Layout, Line, span, tick};

pub(super) fn draw_lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    layout: &Layout,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    lines: &[Line],
    marks: &[(f64, String)],
) -> std::result::Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("{e:?}");
    let (x0, x1) = span(lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)));
    let (y0, y1) = span(
        lines
            .iter()
            .flat_map(|l| {
                l.points
                    .iter()
                    .map(|p| p.1)
                    .chain(l.band.iter().flat_map(|b| [b.1, b.2]))
            })
            .chain(marks.iter().map(|m| m.0)),
    );
    // A band above the data for the legend, so that it covers no line.
    let y1 = y1 + (y1 - y0) * super::legend_share(layout, root, lines.len() + marks.len());
    let y_area = 50 + 2 * layout.text;
    let (x_desc, desc_size) = super::fitted_x_desc(x_desc, layout, y_area);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", layout.caption))
        .margin(12)
        .margin_right(super::right_margin(layout))
        .x_label_area_size(38 + layout.text)
        .y_label_area_size(y_area)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(err)?;
    chart
        .configure_mesh()
        // Grid lines at the labelled ticks only, as in every chart (see `forest`).
        .light_line_style(TRANSPARENT)
        .x_labels(super::max_x_ticks(layout))
        .x_label_formatter(&tick)
        .y_label_formatter(&tick)
        .x_desc(x_desc.as_str())
        .y_desc(y_desc)
        .label_style(("sans-serif", layout.text))
        .axis_desc_style(("sans-serif", desc_size))
        .draw()
        .map_err(err)?;
    for l in lines {
        if !l.band.is_empty() {
            let mut poly: Vec<(f64, f64)> = l.band.iter().map(|b| (b.0, b.2)).collect();
            poly.extend(l.band.iter().rev().map(|b| (b.0, b.1)));
            chart
                .draw_series(std::iter::once(Polygon::new(
                    poly,
                    l.color.mix(0.18).filled(),
                )))
                .map_err(err)?;
        }
        let color = l.color;
        chart
            .draw_series(LineSeries::new(l.points.clone(), color.stroke_width(2)))
            .map_err(err)?
            .label(l.name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
        chart
            .draw_series(l.points.iter().map(|p| Circle::new(*p, 3, color.filled())))
            .map_err(err)?;
    }
    for (y, label) in marks {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x0, *y), (x1, *y)],
                RED.stroke_width(1),
            )))
            .map_err(err)?
            .label(label.as_str())
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], RED));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(GREY)
        .label_font(("sans-serif", layout.text))
        .draw()
        .map_err(err)?;
    Ok(())
}
