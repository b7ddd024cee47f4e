//! The charts' text in their PNGs, drawn from glyph masks cached across charts instead of by
//! usvg, which parses the font four times for every glyph it lays out and fills every text run as
//! one anti-aliased path (measured on the 10M-row bench's eleven charts: 90 of their 95 ms of SVG
//! parsing, and 95 of their 155 ms of rasterising).
//!
//! [`split`] takes each `<text>` element plotters writes (a position, an anchor, a size, a colour
//! and a line of text), shapes it with rustybuzz as usvg does (kerning on, left to right) and
//! places its glyphs; the element leaves the SVG. [`draw`] then paints each glyph from a mask
//! rasterised once per glyph, size and position within a pixel (x to 1/64 of a pixel, y
//! exact: a text's baseline sits at its integer y plus a fixed share of its size), over the
//! chart usvg rendered without them. What this path does not draw stays in the SVG for usvg:
//! rotated text, transparent or semi-transparent text, other fonts, weights and styles, and
//! text with a character the embedded font lacks or written right to left.
//!
//! Each text is painted where it stood in the document: the elements between two texts are
//! grouped, and each group is rendered by resvg in turn (a shape plotters draws after a label,
//! such as an off-scale marker at the axis, covers it as in the browser).
//! `charts::tests::text_from_cached_masks_matches_usvgs_rendering` compares every pixel of every
//! kind of chart with usvg's rendering.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::OnceLock;

use resvg::tiny_skia::{FillRule, Mask, PathBuilder, Pixmap, Transform};
use rustybuzz::ttf_parser::{self, GlyphId};

/// Horizontal positions within a pixel that get their own mask: 1/64 of a pixel apart, so that
/// a glyph lands within 1/128 px of where usvg puts it. Finer costs nothing measurable (the
/// masks of a report's charts: 121 ms at 16, 32 or 64 per pixel) and halves the pixels that
/// differ from usvg's at each step (`charts::tests::text_from_cached_masks_matches_usvgs_rendering`).
const SUBPIXELS: f32 = 64.0;

/// The embedded DejaVu Sans, shaped and outlined.
fn face() -> &'static rustybuzz::Face<'static> {
    static FACE: OnceLock<rustybuzz::Face<'static>> = OnceLock::new();
    FACE.get_or_init(|| {
        rustybuzz::Face::from_slice(super::FONT, 0).expect("the embedded font parses")
    })
}

/// The largest font size, in pixels, drawn from masks (a chart's are 11–18).
const MAX_SIZE: f32 = 200.0;

/// The farthest a text's position may be from the chart's origin, in pixels, to be drawn from
/// masks (a chart is a few thousand pixels across; NaN fails the test too).
const MAX_COORDINATE: f32 = 1e6;

/// The font's units per em, as usvg scales by them (ttf-parser's, not rustybuzz's).
fn units_per_em(face: &rustybuzz::Face) -> f32 {
    f32::from(ttf_parser::Face::units_per_em(face))
}

/// One glyph to paint: its id, size, colour, and where its origin falls on the chart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Placed {
    id: GlyphId,
    size: f32,
    color: [u8; 3],
    x: f32,
    y: f32,
}

/// The chart's SVG without the text elements this module draws, and their glyphs, placed.
pub(super) struct Split {
    /// The SVG left for usvg. When texts were taken out, the elements before each of them (and
    /// after the last) are wrapped in a group `<g id="ablate-run-K">`, K the number of texts
    /// taken out before it, so that each text can be painted where it stood ([`RUN`]).
    pub svg: String,
    /// The glyphs of each text taken out, in the order of the document.
    pub texts: Vec<Vec<Placed>>,
}

/// The start of the id of a group of [`Split::svg`]; the number of texts before it follows.
pub(super) const RUN: &str = "ablate-run-";

/// Takes out of `svg` every `<text>` element this module can draw (the module doc) and places
/// its glyphs; leaves the rest as it was, in groups between them ([`Split::svg`]).
pub(super) fn split(svg: &str) -> Split {
    const OPEN: &str = "<text ";
    const CLOSE: &str = "</text>";
    let unchanged = || Split {
        svg: svg.to_string(),
        texts: Vec::new(),
    };
    // The root element's start tag and end tag: what lies between is plotters' flat list.
    let Some(body_start) = svg
        .find("<svg")
        .and_then(|at| svg[at..].find('>').map(|end| at + end + 1))
    else {
        return unchanged();
    };
    let Some(body_end) = svg.rfind("</svg>").filter(|end| *end >= body_start) else {
        return unchanged();
    };
    let mut out = String::with_capacity(svg.len() + 1024);
    out.push_str(&svg[..body_start]);
    let mut texts: Vec<Vec<Placed>> = Vec::new();
    let mut run = String::new();
    let flush = |out: &mut String, run: &mut String, k: usize| {
        if !run.trim().is_empty() {
            let _ = write!(out, "<g id=\"{RUN}{k}\">{run}</g>");
        }
        run.clear();
    };
    let mut rest = &svg[body_start..body_end];
    while let Some(i) = rest.find(OPEN) {
        let element = &rest[i..];
        let Some(end) = element.find(CLOSE) else {
            break;
        };
        let whole = &element[..end + CLOSE.len()];
        run.push_str(&rest[..i]);
        let mut glyphs = Vec::new();
        if place(&element[..end], &mut glyphs) {
            flush(&mut out, &mut run, texts.len());
            texts.push(glyphs);
        } else {
            run.push_str(whole);
        }
        rest = &element[whole.len()..];
    }
    if texts.is_empty() {
        return unchanged();
    }
    run.push_str(rest);
    flush(&mut out, &mut run, texts.len());
    out.push_str(&svg[body_end..]);
    Split { svg: out, texts }
}

/// One text element's glyphs, placed onto `glyphs`; `false` (and nothing added) when it is not
/// one this module draws. `element` runs from `<text ` to just before `</text>`.
fn place(element: &str, glyphs: &mut Vec<Placed>) -> bool {
    let Some((attributes, content)) = element["<text ".len()..].split_once('>') else {
        return false;
    };
    let Some(text) = Text::parse(attributes, content) else {
        return false;
    };
    text.place(glyphs)
}

/// What a plotters `<text>` element says.
#[derive(Debug)]
struct Text {
    x: f32,
    y: f32,
    /// The baseline's shift down, in pixels (`dy`).
    dy: f32,
    /// 0 start, 0.5 middle, 1 end: the share of the text's width left of `x`.
    anchor: f32,
    size: f32,
    color: [u8; 3],
    content: String,
}

impl Text {
    /// The element's attributes and content, or `None` for anything but a line of text in the
    /// sans-serif font, opaque, unrotated, with a size, a position and an `#RRGGBB` colour.
    fn parse(attributes: &str, content: &str) -> Option<Text> {
        let (mut x, mut y, mut size, mut color) = (None, None, None, None);
        let (mut dy, mut anchor) = ("0", 0.0);
        let mut rest = attributes.trim_start();
        while !rest.is_empty() {
            let (name, after) = rest.split_once("=\"")?;
            let (value, after) = after.split_once('"')?;
            match name {
                "x" => x = Some(value.parse::<f32>().ok()?),
                "y" => y = Some(value.parse::<f32>().ok()?),
                "dy" => dy = value,
                "text-anchor" => {
                    anchor = match value {
                        "start" => 0.0,
                        "middle" => 0.5,
                        "end" => 1.0,
                        _ => return None,
                    }
                }
                "font-family" if value == "sans-serif" => {}
                "font-size" => size = Some(value.parse::<f32>().ok()?),
                "opacity" if value == "1" => {}
                "fill" => color = Some(hex_color(value)?),
                _ => return None,
            }
            rest = after.trim_start();
        }
        // Sizes and places a chart has (plotters writes whole pixels and a few sizes); anything
        // else, usvg's (it draws only what is in view, and takes NaN and infinities its way).
        let size = size.filter(|s| *s > 0.0 && *s <= MAX_SIZE)?;
        let on_chart = |v: f32| v.abs() <= MAX_COORDINATE;
        Some(Text {
            x: x.filter(|v| on_chart(*v))?,
            y: y.filter(|v| on_chart(*v))?,
            dy: length(dy, size).filter(|v| on_chart(*v))?,
            anchor,
            size,
            color: color?,
            content: collapse_spaces(&unescape(content)?),
        })
    }

    /// Shapes the text and adds its glyphs to `glyphs` (the module doc); `false` when a character
    /// is not one this module draws.
    fn place(&self, glyphs: &mut Vec<Placed>) -> bool {
        let face = face();
        if !self.content.chars().all(|c| drawable(face, c)) {
            return false;
        }
        if self.content.is_empty() {
            return true;
        }
        let mut buffer = rustybuzz::UnicodeBuffer::new();
        buffer.push_str(&self.content);
        buffer.set_direction(rustybuzz::Direction::LeftToRight);
        let shaped = rustybuzz::shape(face, &[], buffer);
        let scale = self.size / units_per_em(face);
        // usvg's clusters: the glyphs of one cluster sit at its start plus their own advances
        // before them (in font units); the cluster advances by its widest glyph.
        let (infos, positions) = (shaped.glyph_infos(), shaped.glyph_positions());
        let mut clusters: Vec<(f32, usize, usize)> = Vec::new();
        let mut start = 0;
        for i in 1..=infos.len() {
            if i == infos.len() || infos[i].cluster != infos[start].cluster {
                let advance = positions[start..i]
                    .iter()
                    .map(|p| p.x_advance as f32 * scale)
                    .fold(0.0, f32::max);
                clusters.push((advance, start, i));
                start = i;
            }
        }
        let width: f32 = clusters.iter().map(|c| c.0).sum();
        let mut x = -width * self.anchor;
        for &(advance, from, to) in &clusters {
            let mut within = 0.0;
            for (info, p) in infos[from..to].iter().zip(&positions[from..to]) {
                glyphs.push(Placed {
                    id: GlyphId(info.glyph_id as u16),
                    size: self.size,
                    color: self.color,
                    x: self.x + x + scale * (within + p.x_offset as f32),
                    y: self.y + self.dy - scale * p.y_offset as f32,
                });
                within += p.x_advance as f32;
            }
            x += advance;
        }
        true
    }
}

/// Whether this module draws `c`: a printable character the embedded font has, from a script
/// written left to right (up to Hebrew, and U+1E00–U+20FF: Latin and Greek extended,
/// punctuation, super- and subscripts, currency signs, combining marks for symbols), and none
/// of the invisible marks that steer bidirectional text (U+200B–U+200F, U+2028–U+202E,
/// U+2060–U+206F), which usvg's layout reorders by.
fn drawable(face: &rustybuzz::Face, c: char) -> bool {
    let left_to_right = (' '..'\u{0590}').contains(&c) || ('\u{1E00}'..'\u{2100}').contains(&c);
    let steering = ('\u{200B}'..='\u{200F}').contains(&c)
        || ('\u{2028}'..='\u{202E}').contains(&c)
        || ('\u{2060}'..='\u{206F}').contains(&c);
    left_to_right && !steering && !c.is_control() && face.glyph_index(c).is_some()
}

/// A `dy` value in pixels: a number, or in `em` (the font size) or `ex` (half of it, as usvg
/// takes it).
fn length(value: &str, size: f32) -> Option<f32> {
    if let Some(n) = value.strip_suffix("em") {
        Some(n.parse::<f32>().ok()? * size)
    } else if let Some(n) = value.strip_suffix("ex") {
        Some(n.parse::<f32>().ok()? * size / 2.0)
    } else {
        value.parse::<f32>().ok()
    }
}

/// `#RRGGBB` as bytes.
fn hex_color(value: &str) -> Option<[u8; 3]> {
    let hex = value.strip_prefix('#').filter(|h| h.len() == 6)?;
    let byte = |i: usize| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok();
    Some([byte(0)?, byte(2)?, byte(4)?])
}

/// XML text with its five named entities and numeric references resolved; `None` with markup
/// in it (a child element) or an entity it does not know.
fn unescape(text: &str) -> Option<String> {
    if text.contains('<') {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let (entity, after) = rest[i + 1..].split_once(';')?;
        let c = match entity {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            _ => {
                // XML's forms only (`&#x` lower-case, digits alone): what usvg's parser refuses
                // stays in the SVG for it to refuse.
                let (digits, radix) = match entity.strip_prefix("#x") {
                    Some(hex) => (hex, 16),
                    None => (entity.strip_prefix('#')?, 10),
                };
                if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
                    return None;
                }
                char::from_u32(u32::from_str_radix(digits, radix).ok()?)?
            }
        };
        out.push(c);
        rest = after;
    }
    out.push_str(rest);
    Some(out)
}

/// SVG's default white space (what usvg does): newlines and tabs become spaces, runs of spaces
/// one space, and one space is dropped from each end.
fn collapse_spaces(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut previous = '0';
    for c in text.chars() {
        let c = if matches!(c, '\r' | '\n' | '\t') {
            ' '
        } else {
            c
        };
        if c == ' ' && previous == ' ' {
            continue;
        }
        previous = c;
        out.push(c);
    }
    if out.ends_with(' ') {
        out.pop();
    }
    if out.starts_with(' ') {
        out.remove(0);
    }
    out
}

/// A glyph's coverage, rasterised at one size and position within a pixel: `width × height`
/// bytes, its top-left corner `(left, top)` pixels from the pixel the glyph's origin falls in.
struct GlyphMask {
    left: i32,
    top: i32,
    width: usize,
    coverage: Vec<u8>,
}

/// A mask's key: the glyph, its size's bits, its position within the pixel (x in 64ths, y's
/// bits).
type Key = (u16, u32, u16, u32);

thread_local! {
    /// Masks rasterised on this thread (charts are drawn on several at once), kept for the
    /// process: a report's charts share a few hundred glyphs at three sizes.
    static MASKS: RefCell<HashMap<Key, Option<GlyphMask>>> = RefCell::new(HashMap::new());
}

/// Paints `glyphs` onto `pixmap` (opaque: the charts are drawn on white).
pub(super) fn draw(pixmap: &mut Pixmap, glyphs: &[Placed]) {
    let (width, height) = (pixmap.width() as i32, pixmap.height() as i32);
    let pixels = pixmap.data_mut();
    MASKS.with_borrow_mut(|masks| {
        for g in glyphs {
            let (fx, fy) = (g.x.floor(), g.y.floor());
            let sub = ((g.x - fx) * SUBPIXELS).round();
            // Rounding up to a whole pixel moves the glyph to the next one.
            let (ox, sub) = if sub >= SUBPIXELS {
                (fx as i32 + 1, 0.0)
            } else {
                (fx as i32, sub)
            };
            let phase_y = g.y - fy;
            let key = (g.id.0, g.size.to_bits(), sub as u16, phase_y.to_bits());
            let mask = masks
                .entry(key)
                .or_insert_with(|| rasterise(g.id, g.size, sub / SUBPIXELS, phase_y));
            let Some(mask) = mask else { continue };
            let (x0, y0) = (ox + mask.left, fy as i32 + mask.top);
            for (row, line) in mask.coverage.chunks_exact(mask.width).enumerate() {
                let y = y0 + row as i32;
                if y < 0 || y >= height {
                    continue;
                }
                for (column, &a) in line.iter().enumerate() {
                    let x = x0 + column as i32;
                    if a == 0 || x < 0 || x >= width {
                        continue;
                    }
                    let at = 4 * (y as usize * width as usize + x as usize);
                    for (channel, &c) in pixels[at..at + 3].iter_mut().zip(&g.color) {
                        *channel = blend(c, *channel, a);
                    }
                }
            }
        }
    });
}

/// `source` over `under` at coverage `a` (of 255), rounded.
fn blend(source: u8, under: u8, a: u8) -> u8 {
    let (s, d, a) = (u32::from(source), u32::from(under), u32::from(a));
    ((s * a + d * (255 - a) + 127) / 255) as u8
}

/// A glyph's mask at `size` with its origin `(dx, dy)` into its pixel, anti-aliased as resvg
/// fills text; `None` for a glyph without an outline (a space).
fn rasterise(id: GlyphId, size: f32, dx: f32, dy: f32) -> Option<GlyphMask> {
    let face = face();
    let mut outline = Outline(PathBuilder::new());
    let bounds = face.outline_glyph(id, &mut outline)?;
    let path = outline.0.finish()?;
    let scale = size / units_per_em(face);
    // The glyph's pixels: its bounds scaled (y down), with a pixel spare on each side.
    let left = (f32::from(bounds.x_min) * scale + dx).floor() as i32 - 1;
    let top = (-f32::from(bounds.y_max) * scale + dy).floor() as i32 - 1;
    let right = (f32::from(bounds.x_max) * scale + dx).ceil() as i32 + 1;
    let bottom = (-f32::from(bounds.y_min) * scale + dy).ceil() as i32 + 1;
    let (width, height) = ((right - left) as u32, (bottom - top) as u32);
    let mut mask = Mask::new(width, height)?;
    let transform = Transform::from_row(scale, 0.0, 0.0, -scale, dx - left as f32, dy - top as f32);
    mask.fill_path(&path, FillRule::Winding, true, transform);
    Some(GlyphMask {
        left,
        top,
        width: width as usize,
        coverage: mask.data().to_vec(),
    })
}

/// A glyph's outline as a tiny-skia path, in font units.
struct Outline(PathBuilder);

impl ttf_parser::OutlineBuilder for Outline {
    fn move_to(&mut self, x: f32, y: f32) {
        self.0.move_to(x, y);
    }
    fn line_to(&mut self, x: f32, y: f32) {
        self.0.line_to(x, y);
    }
    fn quad_to(&mut self, x1: f32, y1: f32, x: f32, y: f32) {
        self.0.quad_to(x1, y1, x, y);
    }
    fn curve_to(&mut self, x1: f32, y1: f32, x2: f32, y2: f32, x: f32, y: f32) {
        self.0.cubic_to(x1, y1, x2, y2, x, y);
    }
    fn close(&mut self) {
        self.0.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn white_space_as_usvg_takes_it() {
        assert_eq!(collapse_spaces("\n  a\t b  \n"), "a b");
        assert_eq!(collapse_spaces("\nwithout-tone\n"), "without-tone");
        assert_eq!(collapse_spaces(" "), "");
    }

    #[test]
    fn entities_resolved_and_markup_refused() {
        assert_eq!(
            unescape("a &amp; &lt;b&gt; &quot;&apos; &#233; &#x4E2D;").as_deref(),
            Some("a & <b> \"' é 中")
        );
        assert_eq!(unescape("&nbsp;"), None);
        // Not XML's forms: left to usvg's parser.
        for bad in ["&#X41;", "&#+65;", "&#x+41;", "&#;", "&#x;"] {
            assert_eq!(unescape(bad), None, "{bad}");
        }
        assert_eq!(unescape("a <tspan>b</tspan>"), None);
    }

    #[test]
    fn lengths_in_em_and_ex() {
        assert_eq!(length("0.76em", 10.0), Some(7.6));
        assert_eq!(length("-0.5ex", 10.0), Some(-2.5));
        assert_eq!(length("3", 10.0), Some(3.0));
        assert_eq!(length("3px", 10.0), None);
    }

    /// A plain line of text leaves the SVG as glyphs; rotated text, a script the font lacks and
    /// text steered right to left stay for usvg, and everything else is kept as it was.
    #[test]
    fn only_plain_text_leaves_the_svg() {
        let text = |attributes: &str, content: &str| {
            format!(
                r##"<text x="10" y="20" dy="0.76em" text-anchor="middle" font-family="sans-serif" font-size="12" opacity="1" fill="#000000"{attributes}>{content}</text>"##
            )
        };
        let kept = [
            text(r#" transform="rotate(270, 10, 20)""#, "\nrotated\n"),
            text("", "\n検索\n"),
            text("", "\nab\u{202E}cd\n"),
            text("", "\nab\u{5D0}\n"),
            text("", "\na<tspan>b</tspan>\n"),
        ];
        let plain = text("", "\nwithout-tone &amp; format\n");
        let svg = format!(
            "<svg width=\"100\" height=\"40\"><rect x=\"0\"/>{}{plain}<line x1=\"0\"/></svg>",
            kept.concat()
        );
        let split = split(&svg);
        // What stood before the text and after it, each in a group named by the texts before.
        assert_eq!(
            split.svg,
            format!(
                "<svg width=\"100\" height=\"40\"><g id=\"ablate-run-0\"><rect x=\"0\"/>{}</g><g id=\"ablate-run-1\"><line x1=\"0\"/></g></svg>",
                kept.concat()
            )
        );
        // "without-tone & format": 21 characters, 21 glyphs (two of them spaces).
        assert_eq!(split.texts.len(), 1);
        assert_eq!(split.texts[0].len(), 21);
        assert!(
            split.texts[0]
                .iter()
                .all(|g| g.size == 12.0 && g.color == [0, 0, 0])
        );
        // Nothing taken out: the SVG as it was, without groups.
        let none = super::split(&format!("<svg width=\"9\">{}</svg>", kept[0]));
        assert!(none.texts.is_empty());
        assert_eq!(none.svg, format!("<svg width=\"9\">{}</svg>", kept[0]));
    }

    /// The anchor moves the line by its share of the width, the baseline by `dy`, and glyphs
    /// advance left to right.
    #[test]
    fn anchors_and_baseline() {
        let line = |anchor: &str| {
            let mut glyphs = Vec::new();
            let element = format!(
                r##"<text x="100" y="50" dy="-0.5ex" text-anchor="{anchor}" font-family="sans-serif" font-size="20" opacity="1" fill="#3168B0">Hello"##
            );
            assert!(place(&element, &mut glyphs));
            glyphs
        };
        let (start, middle, end) = (line("start"), line("middle"), line("end"));
        assert_eq!(start[0].x, 100.0);
        assert_eq!(start[0].y, 45.0);
        assert_eq!(start[0].color, [0x31, 0x68, 0xB0]);
        assert!(start.windows(2).all(|w| w[0].x < w[1].x));
        let shift = start[0].x - end[0].x;
        assert!(shift > 40.0 && shift < 70.0, "{shift}");
        assert!((start[0].x - middle[0].x - shift / 2.0).abs() < 1e-3);
    }
}
