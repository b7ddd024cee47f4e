//! Charts: the three kinds of drawing `ablate report` needs, rendered with plotters as SVG (inline
//! in the HTML) and PNG. Charts draw, they don't compute: every number comes from an analysis
//! output, mapped to a [`Chart`] by [`crate::report::document`].
//!
//! Text uses the embedded DejaVu Sans (Bitstream Vera licence, assets/fonts). PNGs are rendered
//! from the SVG with resvg, so both always match; glyphs DejaVu Sans lacks (CJK, emoji) fall back
//! to the system's fonts where it has them (e.g. Debian's fonts-noto-cjk). Axis labels are cut
//! to [`MAX_LABEL_WIDTH`] columns; the tables keep names whole.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::error::{Error, Result};

const FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

/// Widest a category label on a chart axis gets, in display columns.
pub const MAX_LABEL_WIDTH: usize = 48;

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
    /// marked off-scale with their value, and never set the scale.
    Forest {
        /// Title.
        title: String,
        /// Axis description.
        x_desc: String,
        /// Rows, top to bottom.
        rows: Vec<ForestRow>,
        /// The decision threshold.
        threshold: f64,
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

/// Renders SVG text to PNG bytes at its own size.
fn svg_to_png(svg: &str) -> std::result::Result<Vec<u8>, String> {
    use resvg::{tiny_skia, usvg};
    let options = usvg::Options {
        fontdb: font_db(),
        font_family: "DejaVu Sans".into(),
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &options).map_err(|e| e.to_string())?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| "empty chart".to_string())?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| e.to_string())
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

/// Pixels for the widest of `labels` at `per_char` pixels a column, with a margin.
fn label_width(labels: &[String], per_char: u32) -> u32 {
    labels
        .iter()
        .map(|l| unicode_width::UnicodeWidthStr::width(l.as_str()))
        .max()
        .unwrap_or(4) as u32
        * per_char
        + 12
}

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

fn draw_forest<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    x_desc: &str,
    rows: &[ForestRow],
    threshold: f64,
) -> std::result::Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("{e:?}");
    let n = rows.len().max(1);
    let (x0, x1) = forest_window(rows, threshold);
    let labels: Vec<String> = rows
        .iter()
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
        .collect();
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

impl Chart {
    /// Pixel size.
    pub fn size(&self) -> (u32, u32) {
        match self {
            Chart::Bars { bars, .. } => (900, (90 + 18 * bars.len().max(1) as u32).max(240)),
            Chart::Forest { rows, .. } => (960, (100 + 20 * rows.len().max(1) as u32).max(240)),
            _ => (900, 420),
        }
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> std::result::Result<(), String> {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("{e:?}");
        root.fill(&WHITE).map_err(err)?;
        match self {
            Chart::Bars {
                title,
                x_desc,
                bars,
                marks,
            } => {
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
                    .y_labels(n)
                    .y_label_formatter(&formatter)
                    .x_label_formatter(&tick)
                    .x_desc(x_desc.as_str())
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
            }
            Chart::Forest {
                title,
                x_desc,
                rows,
                threshold,
            } => draw_forest(root, title, x_desc, rows, *threshold)?,
            Chart::Lines {
                title,
                x_desc,
                y_desc,
                lines,
                marks,
            } => {
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
                let mut chart = ChartBuilder::on(root)
                    .caption(title, ("sans-serif", 17))
                    .margin(12)
                    .x_label_area_size(38)
                    .y_label_area_size(60)
                    .build_cartesian_2d(x0..x1, y0..y1)
                    .map_err(err)?;
                chart
                    .configure_mesh()
                    .x_label_formatter(&tick)
                    .y_label_formatter(&tick)
                    .x_desc(x_desc.as_str())
                    .y_desc(y_desc.as_str())
                    .label_style(("sans-serif", 11))
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
                    .position(SeriesLabelPosition::LowerRight)
                    .background_style(WHITE.mix(0.9))
                    .border_style(GREY)
                    .label_font(("sans-serif", 11))
                    .draw()
                    .map_err(err)?;
            }
            Chart::Histogram {
                title,
                x_desc,
                bins,
                marks,
            } => {
                let x1 = bins
                    .last()
                    .map_or(1.0, |b| b.1)
                    .max(marks.iter().map(|m| m.0).fold(0.0, f64::max));
                let y1 = bins.iter().map(|b| b.2).max().unwrap_or(1).max(1) as f64 * 1.08;
                let mut chart = ChartBuilder::on(root)
                    .caption(title, ("sans-serif", 17))
                    .margin(12)
                    .x_label_area_size(38)
                    .y_label_area_size(60)
                    .build_cartesian_2d(0.0..x1 * 1.02, 0.0..y1)
                    .map_err(err)?;
                chart
                    .configure_mesh()
                    .x_label_formatter(&tick)
                    .y_label_formatter(&tick)
                    .x_desc(x_desc.as_str())
                    .y_desc("calls")
                    .label_style(("sans-serif", 11))
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
                    .label_font(("sans-serif", 11))
                    .draw()
                    .map_err(err)?;
            }
        }
        root.present().map_err(err)?;
        Ok(())
    }

    /// The chart as SVG text.
    ///
    /// # Errors
    /// Plotters fails to draw (a bug).
    pub fn svg(&self) -> Result<String> {
        register_font();
        let mut out = String::new();
        {
            let root = SVGBackend::with_string(&mut out, self.size()).into_drawing_area();
            self.draw(&root)
                .map_err(|e| Error::Invariant(format!("drawing a chart: {e}")))?;
        }
        Ok(out)
    }

    /// Writes the chart as a PNG file, rendered from the same SVG (resvg), so that the two always
    /// match. Text uses the embedded DejaVu Sans, with the system's fonts as fallback for glyphs it
    /// lacks (CJK, emoji) where the machine has them.
    ///
    /// # Errors
    /// The SVG cannot be parsed or rendered (a bug), or the file cannot be written.
    pub fn png(&self, path: &Path) -> Result<()> {
        let svg = self.svg()?;
        let bytes = svg_to_png(&svg)
            .map_err(|e| Error::Invariant(format!("rendering {}: {e}", path.display())))?;
        std::fs::write(path, bytes).map_err(|e| Error::io(path, e))
    }
}
