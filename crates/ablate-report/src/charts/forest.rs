//! The forest plot: estimates with intervals on an axis centred on the threshold, one row per arm,
//! optionally with a second estimate per row (a dumbbell: the set next to production, the main
//! set next to the stress slice). Its legend is drawn inside the chart, so that a chart copied
//! into a slide still reads.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{BLUE, LIGHT_BLUE, LIGHT_ORANGE, ORANGE, RED};
use super::{ForestRow, GREY, Layout, label_width, tick};

/// Pixels between a row's two markers (and their intervals) in a dumbbell.
const PAIR_GAP: i32 = 4;

/// One estimate as drawn: its whisker's ends and its centre, in pixels.
struct Mark {
    whisker: Option<(i32, i32)>,
    at: (i32, i32),
    color: RGBColor,
    /// The first estimate of a dumbbell, drawn as a ring.
    hollow: bool,
    /// Beyond the axis: drawn as a ring at the edge.
    beyond: bool,
}

/// The x window of a forest plot: the threshold ± w, with w = max(4·|threshold|, 3 × the median
/// interval half-width), widened to show 0.
fn forest_window(rows: &[ForestRow], threshold: f64) -> (f64, f64) {
    // The first side's intervals only (the set, the main set): the arms that decide. A second
    // side's wider intervals (a stress slice of 80 cases) reach past the edge instead.
    let mut half: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.interval)
        .map(|(l, h)| (h - l) / 2.0)
        .filter(|w| w.is_finite() && *w > 0.0)
        .collect();
    half.sort_by(f64::total_cmp);
    let median = half.get(half.len() / 2).copied().unwrap_or(0.0);
    let w = (4.0 * threshold.abs()).max(3.0 * median).max(1e-6);
    let (lo, hi) = (threshold - w, threshold + w);
    (lo.min(-0.1 * w), hi.max(0.1 * w))
}

/// Segments on the y axis for `n` rows, and the segment of row `i` (the first row on top). A
/// single row sits in the middle of three segments, so that it has a label and the threshold
/// line has a length. (Plotters' `(0..k).into_segmented()` has k + 1 segments.)
fn row_segments(n: usize) -> (usize, impl Fn(usize) -> usize) {
    let segments = if n == 1 { 3 } else { n.max(2) };
    (
        segments,
        move |i: usize| {
            if n == 1 { 1 } else { segments - 1 - i }
        },
    )
}

/// Draws a forest on `root`: one row per arm (its estimate and interval, a second estimate as a
/// dumbbell), the zero line and the threshold, and the legend below.
pub(super) fn draw_forest<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    layout: &Layout,
    title: &str,
    x_desc: &str,
    rows: &[ForestRow],
    (threshold, comparison): (f64, bool),
    sides: Option<&(String, String)>,
) -> std::result::Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("{e:?}");
    let (_, height) = root.dim_in_pixel();
    let strip = legend_height(layout, rows, (threshold, comparison), sides);
    let (plot, legend) = root.split_vertically(height.saturating_sub(strip));
    let (segments, at) = row_segments(rows.len());
    let (x0, x1) = forest_window(rows, threshold);
    // Labels by segment, bottom first.
    let mut labels = vec![String::new(); segments];
    for (i, r) in rows.iter().enumerate() {
        labels[at(i)] = forest_label(r, x0, x1, layout.label_chars);
    }
    let mut chart = ChartBuilder::on(&plot)
        .caption(title, ("sans-serif", layout.caption))
        .margin(14)
        .x_label_area_size(30 + layout.text)
        .y_label_area_size(label_width(&labels, layout.text / 2).min(layout.width / 2))
        .build_cartesian_2d(x0..x1, (0..segments - 1).into_segmented())
        .map_err(err)?;
    let formatter = |v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        // Grid lines at the labelled ticks only, as in every chart. The light lines plotters puts
        // between them (ten per tick) are transparent, which it does not draw at all: a forest
        // drew them white on white, the other charts at 10% black, hundreds of faint lines that
        // every renderer had to draw (a third of a tall chart's PNG rendering).
        // `max_light_lines(0)` would hang plotters.
        .light_line_style(TRANSPARENT)
        .bold_line_style(GREY.mix(0.25))
        // No tick marks on the rows: segment edges would carry empty ones.
        .set_tick_mark_size(LabelAreaPosition::Left, 0)
        .x_labels(if layout.width < super::WIDTH { 5 } else { 9 })
        .y_labels(segments)
        .y_label_formatter(&formatter)
        .x_label_formatter(&tick)
        .x_desc(x_desc)
        .label_style(("sans-serif", layout.text + 1))
        .axis_desc_style(("sans-serif", layout.text + 4))
        .draw()
        .map_err(err)?;
    for (x, color, width) in [(0.0, GREY, 1), (threshold, RED, 2)] {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x, SegmentValue::Exact(0)), (x, SegmentValue::Last)],
                color.stroke_width(width),
            )))
            .map_err(err)?;
    }
    // Markers and intervals in pixels, so that a dumbbell's two markers sit just above and below
    // the row's centre line.
    let area = chart.plotting_area();
    let px =
        |x: f64, seg: usize| area.map_coordinate(&(x.clamp(x0, x1), SegmentValue::CenterOf(seg)));
    let off = |v: f64| v > x1 || v < x0;
    let mut marks: Vec<Mark> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let seg = at(i);
        let dy = if r.second.is_some() { PAIR_GAP } else { 0 };
        if let Some(s) = &r.second {
            // The connector between the two estimates.
            let (a, b) = (px(r.value, seg), px(s.value, seg));
            plot.draw(&PathElement::new(
                vec![(a.0, a.1 - dy), (b.0, b.1 + dy)],
                GREY.mix(0.6).stroke_width(1),
            ))
            .map_err(err)?;
        }
        let first = (r.value, r.interval, r.color, -dy, r.second.is_some());
        let second = r
            .second
            .as_ref()
            .map(|s| (s.value, s.interval, s.color, dy, false));
        for (value, interval, color, shift, hollow) in std::iter::once(first).chain(second) {
            let centre = px(value, seg);
            marks.push(Mark {
                whisker: interval.map(|(l, h)| (px(l, seg).0, px(h, seg).0)),
                at: (centre.0, centre.1 + shift),
                color,
                hollow,
                beyond: off(value),
            });
        }
    }
    draw_marks(&plot, &marks).map_err(err)?;
    let beyond = marks.iter().any(|m| m.beyond);
    let items = legend_items(rows, (threshold, comparison), sides, beyond);
    draw_legend(&legend, items, layout.text).map_err(err)
}

/// Height of a forest's legend strip in `layout`: the layout's own, or more when its entries
/// wrap onto more lines than that holds (a phone-width chart with both sides, ▶ ◀ and a flag
/// takes five), so that no entry is drawn below the chart's edge.
pub(super) fn legend_height(
    layout: &Layout,
    rows: &[ForestRow],
    (threshold, comparison): (f64, bool),
    sides: Option<&(String, String)>,
) -> u32 {
    let (x0, x1) = forest_window(rows, threshold);
    let off = |v: f64| v > x1 || v < x0;
    let beyond = rows
        .iter()
        .any(|r| off(r.value) || r.second.as_ref().is_some_and(|s| off(s.value)));
    let items = legend_items(rows, (threshold, comparison), sides, beyond);
    let lines = legend_lines(&items, layout.width, layout.text);
    // The last line's text ends half a size below its centre; the first starts as far above.
    let needed = (lines - 1) * legend_line(layout.text) + layout.text as i32 + 16;
    layout.legend_height.max(needed as u32)
}

/// The distance between two lines of a legend with text of `size` pixels.
fn legend_line(size: u32) -> i32 {
    size as i32 + 8
}

/// A legend entry's width: its mark, its text (about ⅔ of the size a column) and a gap.
fn legend_entry_width(text: &str, size: u32) -> i32 {
    10 + (size * 2 / 3) as i32 * unicode_width::UnicodeWidthStr::width(text) as i32 + 20
}

/// The lines the legend's entries take in a strip `width` pixels wide, left to right, onto a
/// new line when the next would not fit.
fn legend_lines(items: &[(Glyph, String)], width: u32, size: u32) -> i32 {
    let (mut lines, mut x) = (1, 16);
    for (_, text) in items {
        let w = legend_entry_width(text, size);
        if x > 16 && x + w > width as i32 {
            lines += 1;
            x = 16;
        }
        x += w;
    }
    lines
}

/// Draws the intervals' whiskers first, then every marker over them.
fn draw_marks<DB: DrawingBackend>(
    plot: &DrawingArea<DB, Shift>,
    marks: &[Mark],
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    for m in marks {
        if let Some((l, h)) = m.whisker.filter(|(l, h)| h > l) {
            plot.draw(&PathElement::new(
                vec![(l, m.at.1), (h, m.at.1)],
                m.color.stroke_width(2),
            ))?;
        }
    }
    for m in marks {
        let style = if m.hollow || m.beyond {
            m.color.stroke_width(2)
        } else {
            m.color.filled()
        };
        plot.draw(&Circle::new(m.at, if m.beyond { 6 } else { 5 }, style))?;
    }
    Ok(())
}

/// A legend entry's mark.
enum Glyph {
    /// A filled dot.
    Dot(RGBColor),
    /// A ring.
    Ring(RGBColor),
    /// A short line.
    Line(RGBColor),
    /// No mark: the text carries its own symbol.
    Text,
}

/// The legend's words for the four verdict × confidence colours: of cuts (needed, removable),
/// or of alternatives compared with the baseline (worse, not worse), as the decision words them.
fn verdict_words(comparison: bool) -> [&'static str; 4] {
    if comparison {
        [
            "worse, confident",
            "worse, not settled",
            "not worse, confident",
            "not worse, not settled",
        ]
    } else {
        [
            "needed, confident",
            "needed, not settled",
            "removable, confident",
            "removable, not settled",
        ]
    }
}

/// The legend's entries: the four verdict × confidence colours, the threshold, the two sides of
/// a dumbbell, ▶/◀ when an estimate lies `beyond` the axis, and the rows' flags they use.
fn legend_items(
    rows: &[ForestRow],
    (threshold, comparison): (f64, bool),
    sides: Option<&(String, String)>,
    beyond: bool,
) -> Vec<(Glyph, String)> {
    let words = verdict_words(comparison);
    let mut items: Vec<(Glyph, String)> = [
        (ORANGE, words[0]),
        (LIGHT_ORANGE, words[1]),
        (BLUE, words[2]),
        (LIGHT_BLUE, words[3]),
    ]
    .into_iter()
    .map(|(color, text)| (Glyph::Dot(color), text.to_string()))
    .collect();
    // The threshold as every other output prints it (5e-5, not the axis's rounding to 0.0001).
    items.push((
        Glyph::Line(RED),
        format!("threshold {}", crate::text::float_text(threshold)),
    ));
    if let Some((first, second)) = sides {
        items.push((Glyph::Ring(BLACK), first.clone()));
        items.push((Glyph::Dot(BLACK), second.clone()));
    }
    if beyond {
        items.push((Glyph::Text, "▶ ◀ beyond the axis (value given)".into()));
    }
    for (flag, meaning) in [
        ("⚑", "⚑ verdict flips in production"),
        ("↯", "↯ verdicts differ between the two"),
    ] {
        if rows.iter().any(|r| r.flag.as_deref() == Some(flag)) {
            items.push((Glyph::Text, meaning.into()));
        }
    }
    items
}

/// Draws the legend strip's entries left to right, onto a new line when the next would not fit
/// the strip's width (text of `size` pixels).
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    items: Vec<(Glyph, String)>,
    size: u32,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let font = ("sans-serif", size).into_font().color(&BLACK);
    let (width, height) = area.dim_in_pixel();
    let line = legend_line(size);
    let lines_needed = legend_lines(&items, width, size);
    // Centred in the strip: one line on a wide chart, more on a narrow one.
    let mut y = ((height as i32 - (lines_needed - 1) * line) / 2).max(size as i32 / 2 + 2);
    let mut x = 16;
    for (glyph, text) in items {
        let w = legend_entry_width(&text, size);
        if x > 16 && x + w > width as i32 {
            x = 16;
            y += line;
        }
        let text_at = match glyph {
            Glyph::Dot(c) => area
                .draw(&Circle::new((x, y), 5, c.filled()))
                .map(|()| x + 10),
            Glyph::Ring(c) => area
                .draw(&Circle::new((x, y), 5, c.stroke_width(2)))
                .map(|()| x + 10),
            Glyph::Line(c) => area
                .draw(&PathElement::new(
                    vec![(x - 6, y), (x + 6, y)],
                    c.stroke_width(2),
                ))
                .map(|()| x + 10),
            Glyph::Text => Ok(x - 6),
        }?;
        area.draw(&Text::new(
            text.clone(),
            (text_at, y - size as i32 / 2 - 1),
            font.clone(),
        ))?;
        x = text_at + legend_entry_width(&text, size) - 10;
    }
    Ok(())
}

/// A row's label: truncated, with the row's flag, and ▶ or ◀ with the value for an estimate
/// beyond the window [x0, x1].
fn forest_label(r: &ForestRow, x0: f64, x1: f64, chars: usize) -> String {
    let short = |l: &str, chars: usize| {
        if chars < super::MAX_LABEL_WIDTH {
            super::NARROW.name(l)
        } else {
            l.to_string()
        }
    };
    let mut l = super::bars::axis_label(&short(&r.label, chars), chars);
    if let Some(f) = &r.flag {
        l = format!("{l} {f}");
    }
    let beyond: Vec<String> = std::iter::once(r.value)
        .chain(r.second.as_ref().map(|s| s.value))
        .filter(|v| *v > x1 || *v < x0)
        .map(|v| tick(&v))
        .collect();
    match r.value {
        _ if beyond.is_empty() => l,
        v if v < x0 => format!("{l} ◀ {}", beyond.join(" / ")),
        _ => format!("{l} ▶ {}", beyond.join(" / ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_row_sits_mid_chart_and_many_rows_fill_it_top_down() {
        let (segments, at) = row_segments(1);
        assert_eq!((segments, at(0)), (3, 1));
        let (segments, at) = row_segments(4);
        assert_eq!(segments, 4);
        assert_eq!((0..4).map(at).collect::<Vec<_>>(), [3, 2, 1, 0]);
    }
}
