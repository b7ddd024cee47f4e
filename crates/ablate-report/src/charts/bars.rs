//! Horizontal bars by category, with whiskers and vertical reference lines.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::RED;
use super::{Bar, Layout, label_width, max_x_ticks, span, tick};

pub(super) fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    layout: &Layout,
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
        .map(|b| axis_label(&layout.name(&b.label), layout.label_chars))
        .collect();
    // Counts get whole-number ticks, one per unit up to ten.
    let counts = bars
        .iter()
        .all(|b| b.value.fract() == 0.0 && b.interval.is_none())
        && marks.iter().all(|m| m.0.fract() == 0.0);
    let (lo, hi) = if counts {
        let values = bars
            .iter()
            .map(|b| b.value)
            .chain(marks.iter().map(|m| m.0));
        let (least, most) = values.fold((0.0f64, 1.0f64), |(l, h), v| (l.min(v), h.max(v)));
        (least.floor(), most.ceil() + 1.0)
    } else {
        (lo, hi)
    };
    let x_ticks = if counts {
        ((hi - lo) as usize + 1).min(11)
    } else {
        10
    };
    // The reference lines are named under the axis, where they cover no bar.
    let x_desc = if marks.is_empty() {
        x_desc.to_string()
    } else {
        let named: Vec<&str> = marks.iter().map(|m| m.1.as_str()).collect();
        format!("{x_desc} (red line: {})", named.join("; "))
    };
    let y_area = label_width(&labels, layout.text / 2).min(layout.width / 2);
    let (x_desc, desc_size) = super::fitted_x_desc(&x_desc, layout, y_area);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", layout.caption))
        .margin(12)
        .margin_right(super::right_margin(layout))
        .x_label_area_size(38 + layout.text)
        .y_label_area_size(y_area)
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
        // No tick marks on the categories: segment edges would carry empty ones.
        .set_tick_mark_size(LabelAreaPosition::Left, 0)
        .x_labels(x_ticks.min(max_x_ticks(layout)))
        .y_labels(n)
        .y_label_formatter(&formatter)
        .x_label_formatter(&tick)
        .x_desc(x_desc.as_str())
        .label_style(("sans-serif", layout.text))
        .axis_desc_style(("sans-serif", desc_size))
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
    for (x, _) in marks {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(*x, SegmentValue::Exact(0)), (*x, SegmentValue::Last)],
                RED.stroke_width(1),
            )))
            .map_err(err)?;
    }
    Ok(())
}

/// A label cut to `chars` columns for an axis, keeping what follows its last " · " (the need
/// chart's "conversation · sent" and "conversation · needed" had both become "conversation …"
/// on a phone) when at least four columns of the head are left (else the head, which names the
/// row, is kept and the kind cut: the interactions chart's colours tell predicted from
/// measured); and, when the label does not fit, dropping a leading "[block] " group tag (the
/// drops chart's "[few_shot] fe…" had kept the tag and lost the arm).
pub(super) fn axis_label(label: &str, chars: usize) -> String {
    let width = |s: &str| unicode_width::UnicodeWidthStr::width(s);
    let label = match label.split_once("] ") {
        Some((tag, rest)) if tag.starts_with('[') && width(label) > chars => rest,
        _ => label,
    };
    match label.rsplit_once(" · ") {
        Some((head, tail)) => {
            let tail = format!(" · {tail}");
            let room = chars.saturating_sub(unicode_width::UnicodeWidthStr::width(tail.as_str()));
            if room >= 4 {
                format!("{}{tail}", crate::report::text::truncate(head, room))
            } else {
                crate::report::text::truncate(label, chars)
            }
        }
        None => crate::report::text::truncate(label, chars),
    }
}

#[cfg(test)]
mod tests {
    use super::axis_label;

    #[test]
    fn a_cut_label_keeps_its_kind() {
        assert_eq!(axis_label("conversation · needed", 14), "conv… · needed");
        assert_eq!(axis_label("conversation · sent", 14), "conver… · sent");
        assert_eq!(axis_label("system · sent", 14), "system · sent");
        assert_eq!(axis_label("a-very-long-arm-name", 10), "a-very-lo…");
        // A group tag goes first when the label does not fit, and stays when it does.
        assert_eq!(axis_label("[few_shot] few_shot/06", 14), "few_shot/06");
        assert_eq!(axis_label("[sys] system", 14), "[sys] system");
        assert_eq!(
            axis_label("few_shot/03+passages/rank3 · predicted", 14),
            "few_shot/03+p…"
        );
    }
}
