//! Charts: the three kinds of drawing `ablate report` needs, rendered with plotters as SVG (inline
//! in the HTML) and PNG. Charts draw, they don't compute: every number comes from an analysis
//! output, mapped to a [`Chart`] by [`crate::report::document`].
//!
//! Text uses the embedded DejaVu Sans (Bitstream Vera licence, assets/fonts). PNGs are rendered
//! from the SVG with resvg, so both always match, their text from glyph masks cached across
//! charts (the `text` module, checked against usvg's rendering); glyphs DejaVu Sans lacks (CJK,
//! emoji) fall back to the system's fonts where it has them (e.g. Debian's fonts-noto-cjk). Axis
//! labels are cut to [`MAX_LABEL_WIDTH`] columns; the tables keep names whole.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::error::{Error, Result};

mod bars;
mod forest;
mod histogram;
mod lines;
mod text;

use bars::draw_bars;
use forest::draw_forest;
use histogram::draw_histogram;
use lines::draw_lines;

const FONT: &[u8] = include_bytes!("../../../../assets/fonts/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

/// Every chart's width in pixels: the width a report page gives it at 1400 px, so that its text
/// shows at its own size there; the page scales it down on narrower screens (a `viewBox`, and
/// `width: 100%`).
pub const WIDTH: u32 = 1300;

/// Widest a category label on a chart axis gets, in display columns (on a wide chart).
pub const MAX_LABEL_WIDTH: usize = 48;

/// How a chart is laid out: its width, its longest axis label and its text sizes. The page
/// carries each chart twice, [`WIDE`] for screens and print and [`NARROW`] for phones, so that
/// its text is legible at both widths (a 1300 px chart on a 370 px screen shows 12 px text at
/// 3 px).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Width in pixels.
    pub width: u32,
    /// Longest category label, in display columns.
    pub label_chars: usize,
    /// Tick labels and legends, as plotters sizes (shown at 0.806 of it).
    pub text: u32,
    /// The title, in pixels.
    pub caption: u32,
    /// Height of a forest plot's legend strip (its entries wrap onto more lines when narrow).
    pub legend_height: u32,
}

impl Layout {
    /// A category's name on the axis: whole on a wide chart; on a narrow one without the
    /// `without-` every leave-out arm starts with (kept in the table beside the chart).
    pub fn name(&self, label: &str) -> String {
        if self.label_chars >= MAX_LABEL_WIDTH {
            return label.to_string();
        }
        match label.split_once("without-") {
            Some((before, after)) if before.is_empty() || before.ends_with(' ') => {
                format!("{before}{after}")
            }
            _ => label.to_string(),
        }
    }
}

/// For screens from about 1,000 px, and the PNGs: drawn at the width the page gives it at
/// 1400 px, so that its text shows at its own size there. Plotters writes a font of size s as
/// `font-size` 0.806·s (s/1.24) in its SVG: 14 shows as 11.3 px.
pub const WIDE: Layout = Layout {
    width: WIDTH,
    label_chars: MAX_LABEL_WIDTH,
    text: 14,
    caption: 18,
    legend_height: 34,
};

/// For phones: 440 px wide, shown at about 355 px, so that text of size 17 shows at 11 px
/// (17 × 0.806 × 355/440).
pub const NARROW: Layout = Layout {
    width: 440,
    label_chars: 14,
    text: 17,
    caption: 18,
    legend_height: 96,
};

/// The palette: blue (eval / main), orange (production / stress), grey, red (thresholds).
pub const BLUE: RGBColor = RGBColor(49, 104, 176);
/// Second series.
pub const ORANGE: RGBColor = RGBColor(230, 126, 34);
/// Needed, but not confidently.
pub const LIGHT_ORANGE: RGBColor = RGBColor(240, 185, 120);
/// Removable, but not confidently.
pub const LIGHT_BLUE: RGBColor = RGBColor(140, 180, 225);
/// Neutral.
pub const GREY: RGBColor = RGBColor(140, 140, 140);
/// Thresholds and limits.
pub const RED: RGBColor = RGBColor(200, 40, 40);
/// Third series.
pub const GREEN: RGBColor = RGBColor(46, 139, 87);

/// One horizontal bar.
#[derive(Debug, Clone)]
pub struct Bar {
    /// Category label.
    pub label: String,
    /// Bar length.
    pub value: f64,
    /// Interval drawn as a whisker.
    pub interval: Option<(f64, f64)>,
    /// Fill.
    pub color: RGBColor,
}

/// A forest plot's colour for a verdict and its confidence: dark orange confidently needed, light
/// orange needed but not settled, dark blue confidently removable, light blue removable but not
/// settled.
pub fn verdict_color(
    v: crate::analysis::vocab::Verdict,
    c: crate::analysis::vocab::Confidence,
) -> RGBColor {
    use crate::analysis::vocab::{Confidence, Verdict};
    match (v, c) {
        (Verdict::Needed, Confidence::Confident) => ORANGE,
        (Verdict::Needed, Confidence::Inconclusive) => LIGHT_ORANGE,
        (Verdict::Removable, Confidence::Confident) => BLUE,
        (Verdict::Removable, Confidence::Inconclusive) => LIGHT_BLUE,
    }
}

/// One row of a forest plot: an estimate with its interval.
#[derive(Debug, Clone)]
pub struct ForestRow {
    /// Category label.
    pub label: String,
    /// The estimate.
    pub value: f64,
    /// Its interval.
    pub interval: Option<(f64, f64)>,
    /// Colour (verdict × confidence).
    pub color: RGBColor,
    /// A mark after the label (e.g. a verdict that flips in production).
    pub flag: Option<String>,
    /// A second estimate on the same row (a dumbbell; the chart's `sides` name the two).
    pub second: Option<Point>,
}

/// An estimate with its interval and colour: the second marker of a dumbbell row.
#[derive(Debug, Clone)]
pub struct Point {
    /// The estimate.
    pub value: f64,
    /// Its interval.
    pub interval: Option<(f64, f64)>,
    /// Colour (verdict × confidence).
    pub color: RGBColor,
}

/// One line, with an optional band.
#[derive(Debug, Clone)]
pub struct Line {
    /// Legend name.
    pub name: String,
    /// Points.
    pub points: Vec<(f64, f64)>,
    /// Band (x, low, high).
    pub band: Vec<(f64, f64, f64)>,
    /// Colour.
    pub color: RGBColor,
}

/// A chart to draw.
#[derive(Debug, Clone)]
pub enum Chart {
    /// Horizontal bars by category, with whiskers and vertical reference lines.
    Bars {
        /// Title.
        title: String,
        /// Axis description.
        x_desc: String,
        /// Bars, top to bottom.
        bars: Vec<Bar>,
        /// Vertical lines (x, label).
        marks: Vec<(f64, String)>,
    },
    /// A forest plot: estimates with intervals, the x-axis centred on a threshold so that the
    /// region where verdicts are decided is readable. Rows far outside it are drawn at the edge,
    /// marked off-scale with their value, and never set the scale. Rows with a `second`
    /// estimate are dumbbells: a ring (the first side) above a dot (the second), joined. The
    /// legend (colours, threshold, sides, marks) is drawn inside the chart.
    Forest {
        /// Title.
        title: String,
        /// Axis description.
        x_desc: String,
        /// Rows, top to bottom.
        rows: Vec<ForestRow>,
        /// The decision threshold.
        threshold: f64,
        /// The names of a dumbbell's two estimates (first, second), for the legend.
        sides: Option<(String, String)>,
        /// Whether the arms are alternatives rather than cuts (no arm removes units): the
        /// legend then says "worse" and "not worse" for needed and removable, as the decision.
        comparison: bool,
    },
    /// Lines with bands and horizontal reference lines.
    Lines {
        /// Title.
        title: String,
        /// X axis description.
        x_desc: String,
        /// Y axis description.
        y_desc: String,
        /// Series.
        lines: Vec<Line>,
        /// Horizontal lines (y, label).
        marks: Vec<(f64, String)>,
    },
    /// A histogram with vertical reference lines.
    Histogram {
        /// Title.
        title: String,
        /// X axis description.
        x_desc: String,
        /// Bins (lo, hi, count).
        bins: Vec<(f64, f64, u64)>,
        /// Vertical lines (x, label).
        marks: Vec<(f64, String)>,
    },
}

/// Fonts for rendering SVG to PNG: the embedded DejaVu Sans as the sans-serif family, then the
/// system's fonts (loaded once per process) for fallback.
fn font_db() -> std::sync::Arc<resvg::usvg::fontdb::Database> {
    static DB: std::sync::OnceLock<std::sync::Arc<resvg::usvg::fontdb::Database>> =
        std::sync::OnceLock::new();
    DB.get_or_init(|| {
        let mut db = resvg::usvg::fontdb::Database::new();
        db.load_font_data(FONT.to_vec());
        db.load_system_fonts();
        db.set_sans_serif_family("DejaVu Sans");
        std::sync::Arc::new(db)
    })
    .clone()
}

/// Renders SVG text to PNG bytes at its own size: opaque RGB (the charts are drawn on white),
/// compressed fast with the Paeth filter.
///
/// Measured on the 10M-row bench's eleven charts (2026-12-02): rendering 160 → 111 ms with
/// [`paint_opacity`], encoding 52 → 34 ms as RGB with Paeth instead of tiny-skia's RGBA with
/// Sub, and the PNGs 7.3 → 2.9 MB.
fn svg_to_png(svg: &str) -> std::result::Result<Vec<u8>, String> {
    let pixmap = rasterise(svg, true)?;
    // Every pixel is opaque (the white fill is under everything), so its premultiplied RGB is
    // its colour and the alpha channel carries nothing.
    let rgba = pixmap.data();
    let mut rgb = vec![0u8; rgba.len() / 4 * 3];
    for (to, from) in rgb.chunks_exact_mut(3).zip(rgba.chunks_exact(4)) {
        to.copy_from_slice(&from[..3]);
    }
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, pixmap.width(), pixmap.height());
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    encoder.set_filter(png::FilterType::Paeth);
    let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(&rgb).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// The chart's pixels (opaque, on white): its text from cached glyph masks ([`text`]) when
/// `cached_text`, else all of it by usvg and resvg.
fn rasterise(
    svg: &str,
    cached_text: bool,
) -> std::result::Result<resvg::tiny_skia::Pixmap, String> {
    use resvg::{tiny_skia, usvg};
    let options = usvg::Options {
        fontdb: font_db(),
        font_family: "DejaVu Sans".into(),
        ..usvg::Options::default()
    };
    let split = if cached_text {
        text::split(svg)
    } else {
        text::Split {
            svg: svg.to_string(),
            texts: Vec::new(),
        }
    };
    let tree =
        usvg::Tree::from_str(&paint_opacity(&split.svg), &options).map_err(|e| e.to_string())?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| "empty chart".to_string())?;
    pixmap.fill(tiny_skia::Color::WHITE);
    if split.texts.is_empty() {
        resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
        return Ok(pixmap);
    }
    // Each text is painted where it stood: after the group of elements before it, before the
    // next (a shape drawn after a label covers it, as in the browser).
    let texts = &split.texts;
    let mut painted = 0;
    for node in tree.root().children() {
        let run = match node {
            usvg::Node::Group(group) => group.id().strip_prefix(text::RUN),
            _ => None,
        };
        if let Some(before) = run.and_then(|k| k.parse::<usize>().ok()) {
            let before = before.min(texts.len());
            for glyphs in texts.get(painted..before).unwrap_or_default() {
                text::draw(&mut pixmap, glyphs);
            }
            painted = painted.max(before);
        }
        // `render_node` draws a node at its bounding box's corner; from the corner back to
        // where it is.
        if let Some(bounds) = node.abs_layer_bounding_box() {
            resvg::render_node(
                node,
                tiny_skia::Transform::from_translate(bounds.x(), bounds.y()),
                &mut pixmap.as_mut(),
            );
        }
    }
    for glyphs in &split.texts[painted..] {
        text::draw(&mut pixmap, glyphs);
    }
    Ok(pixmap)
}

/// The chart's SVG with each element's `opacity` given to its paint instead
/// (`fill-opacity` and `stroke-opacity`), and `opacity="1"` dropped: what the PNG is rendered
/// from. resvg draws an element with `opacity` into a layer of its own and then blends it, and
/// the charts have hundreds (grid lines, bands, bars); every element plotters writes has one
/// paint (a fill or a stroke), so the pixels are the same up to the layer's rounding (at most
/// 7 of 255 in a channel, measured on every chart of the bench report). The browser's page
/// keeps the SVG as drawn.
///
/// Only attributes match: plotters escapes `"` in text and attribute values, so ` opacity="`
/// can only start an attribute.
fn paint_opacity(svg: &str) -> String {
    const ATTRIBUTE: &str = " opacity=\"";
    let mut out = String::with_capacity(svg.len() + svg.len() / 4);
    let mut rest = svg;
    while let Some(i) = rest.find(ATTRIBUTE) {
        out.push_str(&rest[..i]);
        let after = &rest[i + ATTRIBUTE.len()..];
        let Some(end) = after.find('"') else {
            // Not an attribute after all: keep the text as it is.
            out.push_str(&rest[i..]);
            return out;
        };
        let value = &after[..end];
        if value != "1" {
            let _ = write!(out, " fill-opacity=\"{value}\" stroke-opacity=\"{value}\"");
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

fn register_font() {
    REGISTER.call_once(|| {
        // The embedded font is valid; a failure would only lose the text, not the chart.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// Axis tick text: whole numbers with thousands separators from 100 up, else up to 4 decimals
/// without trailing zeros.
fn tick(v: &f64) -> String {
    if v.abs() >= 100.0 {
        crate::report::text::thousands(*v)
    } else {
        let s = format!("{v:.4}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s == "-0" { "0".into() } else { s.to_string() }
    }
}

fn span(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.06).max(1e-9);
    (lo - pad, hi + pad)
}

/// The share of a chart's data range to add above the data so that a legend of `entries` lines
/// (in the upper right) sits over empty space: the legend's height over the plot's.
fn legend_share<DB: DrawingBackend>(
    layout: &Layout,
    root: &DrawingArea<DB, Shift>,
    entries: usize,
) -> f64 {
    if entries == 0 {
        return 0.0;
    }
    let (_, height) = root.dim_in_pixel();
    let plot = f64::from(
        height
            .saturating_sub(60 + 2 * layout.text + layout.caption)
            .max(100),
    );
    let legend = entries as f64 * f64::from(layout.text + 8) + 14.0;
    (legend / (plot - legend).max(40.0)).min(1.5)
}

/// Pixels for the widest of `labels` at `per_char` pixels a column, with a margin.
/// An axis title that fits `room` pixels: at `layout.text + 4` when it fits, else at the
/// largest size down to `layout.text` that does, else cut with "…" at that size (the section's
/// note and table carry it whole). A column of a size-s font is taken as 0.45·s pixels (plotters
/// shows s at 0.806·s, and a sans-serif column averages about 0.55 em). A need chart's title had
/// run off a phone-width chart.
fn axis_desc(desc: &str, layout: &Layout, room: u32) -> (String, u32) {
    let columns = unicode_width::UnicodeWidthStr::width(desc) as u32;
    let width = |columns: u32, size: u32| columns * size * 9 / 20;
    for size in (layout.text..=layout.text + 4).rev() {
        if width(columns, size) <= room {
            return (desc.to_string(), size);
        }
    }
    let fits = (room / width(1, layout.text).max(1)) as usize;
    (
        crate::report::text::truncate(desc, fits.max(8)),
        layout.text,
    )
}

/// The x-axis title of a chart whose y labels take `y_area` pixels, fitted to the plot's width
/// ([`axis_desc`]; a left margin of 12 and [`right_margin`]): the title and its size.
fn fitted_x_desc(desc: &str, layout: &Layout, y_area: u32) -> (String, u32) {
    axis_desc(
        desc,
        layout,
        layout
            .width
            .saturating_sub(y_area + 12 + right_margin(layout)),
    )
}

/// The right margin of a chart with a value axis: room on a narrow chart for half of the last
/// tick's label, which sits on the plot's right edge ("40,000" had shown as "40,00").
fn right_margin(layout: &Layout) -> u32 {
    if layout.width < WIDTH {
        12 + 2 * layout.text
    } else {
        12
    }
}

/// Most labelled ticks on a value axis: five on a narrow chart, whose tick labels ("10,000")
/// ran together at plotters' default, else that default (11).
fn max_x_ticks(layout: &Layout) -> usize {
    if layout.width < WIDTH { 5 } else { 11 }
}

fn label_width(labels: &[String], per_char: u32) -> u32 {
    labels
        .iter()
        .map(|l| unicode_width::UnicodeWidthStr::width(l.as_str()))
        .max()
        .unwrap_or(4) as u32
        * per_char
        + 12
}

impl Chart {
    /// Pixel size on a wide page ([`WIDE`]).
    pub fn size(&self) -> (u32, u32) {
        self.size_in(&WIDE)
    }

    /// Pixel size in `layout`: its width; rows of 18–22 px (more with larger text).
    pub fn size_in(&self, layout: &Layout) -> (u32, u32) {
        let extra = layout.text.saturating_sub(WIDE.text) * 2;
        match self {
            Chart::Bars { bars, .. } => (
                layout.width,
                (90 + (18 + extra) * bars.len().max(1) as u32).max(240),
            ),
            Chart::Forest {
                rows,
                sides,
                threshold,
                comparison,
                ..
            } => {
                let per_row = if sides.is_some() { 22 } else { 20 } + extra;
                let legend =
                    forest::legend_height(layout, rows, (*threshold, *comparison), sides.as_ref());
                (
                    layout.width,
                    (100 + per_row * rows.len().max(1) as u32).max(240) + legend,
                )
            }
            _ => (layout.width, if layout.width < WIDTH { 360 } else { 440 }),
        }
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        layout: &Layout,
    ) -> std::result::Result<(), String> {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("{e:?}");
        root.fill(&WHITE).map_err(err)?;
        match self {
            Chart::Bars {
                title,
                x_desc,
                bars,
                marks,
            } => draw_bars(root, layout, title, x_desc, bars, marks)?,
            Chart::Forest {
                title,
                x_desc,
                rows,
                threshold,
                sides,
                comparison,
            } => draw_forest(
                root,
                layout,
                title,
                x_desc,
                rows,
                (*threshold, *comparison),
                sides.as_ref(),
            )?,
            Chart::Lines {
                title,
                x_desc,
                y_desc,
                lines,
                marks,
            } => draw_lines(root, layout, title, x_desc, y_desc, lines, marks)?,
            Chart::Histogram {
                title,
                x_desc,
                bins,
                marks,
            } => draw_histogram(root, layout, title, x_desc, bins, marks)?,
        }
        root.present().map_err(err)?;
        Ok(())
    }

    /// The chart as SVG text, laid out [`WIDE`].
    ///
    /// # Errors
    /// Plotters fails to draw (a bug).
    pub fn svg(&self) -> Result<String> {
        self.svg_in(&WIDE)
    }

    /// The chart as SVG text, laid out in `layout`.
    ///
    /// # Errors
    /// Plotters fails to draw (a bug).
    pub fn svg_in(&self, layout: &Layout) -> Result<String> {
        register_font();
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, self.size_in(layout)).into_drawing_area();
            self.draw(&root, layout)
                .map_err(|e| Error::Invariant(format!("drawing a chart: {e}")))?;
        }
        Ok(out)
    }

    /// A chart's SVG ([`Chart::svg`]) rendered as PNG bytes (resvg), so that the two always
    /// match; `path` is the file they are for, named in errors. Text uses the embedded DejaVu
    /// Sans, with the system's fonts as fallback for glyphs it lacks (CJK, emoji) where the
    /// machine has them.
    ///
    /// # Errors
    /// The SVG cannot be parsed or rendered (a bug).
    pub fn png(svg: &str, path: &Path) -> Result<Vec<u8>> {
        svg_to_png(svg).map_err(|e| Error::Invariant(format!("rendering {}: {e}", path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opacity_moves_to_the_paint_and_text_is_untouched() {
        let svg = r##"<svg width="4" height="2"><line opacity="0.1" stroke="#000000" x1="0"/><rect opacity="1" fill="#FF0000"/><text opacity="1" fill="#000000">a opacity=&quot;0.5&quot;</text></svg>"##;
        assert_eq!(
            paint_opacity(svg),
            r##"<svg width="4" height="2"><line fill-opacity="0.1" stroke-opacity="0.1" stroke="#000000" x1="0"/><rect fill="#FF0000"/><text fill="#000000">a opacity=&quot;0.5&quot;</text></svg>"##
        );
        // Nothing to change: the text comes back as it was.
        assert_eq!(paint_opacity("<svg/>"), "<svg/>");
    }

    /// The grid has a line at each labelled tick and none between them: plotters' light lines
    /// are transparent, so it writes no element for them.
    #[test]
    fn grid_lines_only_at_the_labelled_ticks() {
        let chart = Chart::Bars {
            title: "t".into(),
            x_desc: "x".into(),
            bars: (0..5)
                .map(|i| Bar {
                    label: format!("arm {i}"),
                    value: f64::from(i) / 10.0,
                    interval: None,
                    color: BLUE,
                })
                .collect(),
            marks: Vec::new(),
        };
        let svg = chart.svg().unwrap();
        let lines: Vec<&str> = svg.lines().filter(|l| l.starts_with("<line")).collect();
        assert!(
            lines.iter().any(|l| l.contains("opacity=\"0.2\"")),
            "a grid line at each labelled tick: {lines:?}"
        );
        assert!(
            !lines
                .iter()
                .any(|l| l.contains("opacity=\"0.1\"") || l.contains("opacity=\"0\"")),
            "no light lines between the ticks: {lines:?}"
        );
        assert!(lines.len() <= 20, "{} lines", lines.len());
    }

    /// One chart of each kind, with the text a report's charts carry: labels with markup
    /// characters, accents, a name in a script the embedded font lacks (drawn by usvg with the
    /// system's fonts), a rotated axis description (drawn by usvg), off-scale marks at both
    /// edges (the left one drawn over its label) and legends.
    fn every_kind() -> Vec<Chart> {
        let names = [
            "without-examples & <notes>",
            "without-résumé",
            "without-検索",
            "baseline",
            "without-tone, without-format",
        ];
        let forest = |sides: bool| Chart::Forest {
            title: "Drop in score when each block is removed".into(),
            x_desc: "drop (baseline − arm)".into(),
            rows: names
                .iter()
                .enumerate()
                .map(|(i, name)| ForestRow {
                    label: (*name).into(),
                    value: 0.02 * i as f64 - 0.03
                        + match i {
                            0 => -0.5,
                            4 => 0.5,
                            _ => 0.0,
                        },
                    interval: Some((0.02 * i as f64 - 0.05, 0.02 * i as f64 - 0.01)),
                    color: [ORANGE, LIGHT_BLUE, BLUE, LIGHT_ORANGE, ORANGE][i],
                    flag: (i == 1).then(|| "flips".to_string()),
                    second: sides.then_some(Point {
                        value: 0.01 * i as f64,
                        interval: Some((0.01 * i as f64 - 0.02, 0.01 * i as f64 + 0.02)),
                        color: BLUE,
                    }),
                })
                .collect(),
            threshold: 0.02,
            sides: sides.then(|| ("eval".to_string(), "production".to_string())),
            comparison: false,
        };
        vec![
            forest(false),
            forest(true),
            Chart::Bars {
                title: "How often each arm's verdict changes".into(),
                x_desc: "share of cases".into(),
                bars: names
                    .iter()
                    .enumerate()
                    .map(|(i, name)| Bar {
                        label: (*name).into(),
                        value: 0.1 * i as f64,
                        interval: Some((0.1 * i as f64 - 0.02, 0.1 * i as f64 + 0.03)),
                        color: BLUE,
                    })
                    .collect(),
                marks: vec![(0.25, "limit 0.25".into())],
            },
            Chart::Lines {
                title: "Score by context budget".into(),
                x_desc: "budget (tokens)".into(),
                y_desc: "score retained".into(),
                lines: vec![Line {
                    name: "oracle".into(),
                    points: (0..8)
                        .map(|i| (1000.0 * f64::from(i), 0.1 * f64::from(i)))
                        .collect(),
                    band: (0..8)
                        .map(|i| {
                            (
                                1000.0 * f64::from(i),
                                0.1 * f64::from(i) - 0.05,
                                0.1 * f64::from(i) + 0.05,
                            )
                        })
                        .collect(),
                    color: GREEN,
                }],
                marks: vec![(0.95, "95% retained".into())],
            },
            Chart::Histogram {
                title: "Context size in production".into(),
                x_desc: "tokens".into(),
                bins: (0..12)
                    .map(|i| {
                        (
                            100.0 * f64::from(i),
                            100.0 * f64::from(i + 1),
                            (i * 7 % 11) as u64,
                        )
                    })
                    .collect(),
                marks: vec![(900.0, "hard limit".into())],
            },
        ]
    }

    /// The PNG's text, painted from cached glyph masks, is usvg's rendering of it within 1/128
    /// of a pixel: on every kind of chart at both layouts, no channel of any pixel is more than
    /// one of the rasteriser's quarter-pixel coverage steps (64 of 255) from usvg's, and fewer
    /// than 1 in 500 differ by more than 8 (at most 0.12% on these). Text the masks do not draw
    /// (the rotated axis description, a script the font lacks) stays in the SVG for usvg.
    #[test]
    fn text_from_cached_masks_matches_usvgs_rendering() {
        for chart in every_kind() {
            for layout in [WIDE, NARROW] {
                let svg = chart.svg_in(&layout).unwrap();
                let split = text::split(&svg);
                assert!(!split.texts.is_empty());
                assert!(
                    !split.svg.contains("résumé"),
                    "drawn from masks: {}",
                    split.svg
                );
                if let Chart::Lines { .. } = chart {
                    assert!(split.svg.contains("score retained"), "rotated: usvg's");
                }
                if let Chart::Forest { .. } | Chart::Bars { .. } = chart {
                    assert!(
                        split.svg.contains("検索"),
                        "a script the font lacks: usvg's"
                    );
                }
                let (usvg, masks) = (
                    rasterise(&svg, false).unwrap(),
                    rasterise(&svg, true).unwrap(),
                );
                let (mut largest, mut over) = (0, 0);
                for (a, b) in usvg.data().iter().zip(masks.data()) {
                    largest = largest.max(a.abs_diff(*b));
                    over += usize::from(a.abs_diff(*b) > 8);
                }
                let n = usvg.data().len();
                assert!(largest <= 64, "{largest}");
                assert!(over * 500 < n, "{over} of {n}");
            }
        }
    }

    /// Text is painted where it stands in the document: a shape drawn after it covers it (as
    /// an off-scale marker at the axis covers the end of its label), one drawn before does not.
    #[test]
    fn a_shape_drawn_after_a_label_covers_it() {
        let text = r##"<text x="2" y="4" dy="0.76em" text-anchor="start" font-family="sans-serif" font-size="12" opacity="1" fill="#000000">Hidden</text>"##;
        let cover = r##"<rect x="0" y="0" width="60" height="20" opacity="1" fill="#3168B0" stroke="none"/>"##;
        let chart = |body: String| {
            format!(
                r#"<svg width="60" height="20" viewBox="0 0 60 20" xmlns="http://www.w3.org/2000/svg">{body}</svg>"#
            )
        };
        let blue = |p: &resvg::tiny_skia::Pixmap| {
            p.data()
                .chunks_exact(4)
                .all(|px| px == [0x31, 0x68, 0xB0, 255])
        };
        let covered = rasterise(&chart(format!("{text}{cover}")), true).unwrap();
        assert!(blue(&covered));
        let over = rasterise(&chart(format!("{cover}{text}")), true).unwrap();
        assert!(!blue(&over));
        let usvg = rasterise(&chart(format!("{cover}{text}")), false).unwrap();
        let largest = over
            .data()
            .iter()
            .zip(usvg.data())
            .map(|(a, b)| a.abs_diff(*b))
            .max();
        assert!(largest <= Some(64), "{largest:?}");
    }

    /// A half-transparent black line over white is the same grey drawn either way (within the
    /// layer's rounding), and the PNG is opaque RGB at the SVG's size.
    #[test]
    fn the_png_is_rgb_and_draws_opacity_as_before() {
        let svg = r##"<svg width="20" height="10" viewBox="0 0 20 10" xmlns="http://www.w3.org/2000/svg"><rect x="0" y="0" width="20" height="10" opacity="1" fill="#FFFFFF" stroke="none"/><rect x="5" y="0" width="10" height="10" opacity="0.5" fill="#000000" stroke="none"/></svg>"##;
        let bytes = svg_to_png(svg).unwrap();
        let decoder = png::Decoder::new(std::io::Cursor::new(&bytes));
        let mut reader = decoder.read_info().unwrap();
        let mut pixels = vec![0; reader.output_buffer_size()];
        let frame = reader.next_frame(&mut pixels).unwrap();
        assert_eq!((frame.width, frame.height), (20, 10));
        assert_eq!(frame.color_type, png::ColorType::Rgb);
        let at = |x: usize, y: usize| &pixels[(y * 20 + x) * 3..(y * 20 + x) * 3 + 3];
        assert_eq!(at(0, 0), [255, 255, 255]);
        for c in at(10, 5) {
            assert!((127..=128).contains(c), "{c}");
        }
    }
}
