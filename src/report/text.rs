//! Plain-text tables with aligned columns, for human output on a terminal.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Pad on the right (text).
    Left,
    /// Pad on the left (numbers).
    Right,
}

/// A table being built row by row.
#[derive(Debug, Clone)]
pub struct TextTable {
    headers: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl TextTable {
    /// A table with these headers; the first column is left-aligned, the rest right-aligned.
    pub fn new(headers: &[&str]) -> Self {
        let align = (0..headers.len())
            .map(|i| if i == 0 { Align::Left } else { Align::Right })
            .collect();
        TextTable {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            align,
            rows: Vec::new(),
        }
    }

    /// Sets the alignment of column `i`.
    pub fn align(mut self, i: usize, a: Align) -> Self {
        if i < self.align.len() {
            self.align[i] = a;
        }
        self
    }

    /// Adds a row (missing cells are blank).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Renders with two spaces between columns and a rule under the header. Widths are display
    /// columns (CJK and emoji take two), and a cell wider than [`MAX_CELL_WIDTH`] is cut with an
    /// ellipsis (JSON and CSV keep it whole).
    pub fn render(&self) -> String {
        let n = self.headers.len();
        let fit = |c: &str| truncate(c, MAX_CELL_WIDTH);
        let headers: Vec<String> = self.headers.iter().map(|h| fit(h)).collect();
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.iter().take(n).map(|c| fit(c)).collect())
            .collect();
        let mut width: Vec<usize> = headers.iter().map(|h| h.width()).collect();
        for r in &rows {
            for (i, c) in r.iter().enumerate() {
                width[i] = width[i].max(c.width());
            }
        }
        let line = |cells: &[String]| {
            let mut out = String::new();
            for (i, w) in width.iter().enumerate() {
                let c = cells.get(i).map(String::as_str).unwrap_or("");
                let pad = w - c.width();
                if i > 0 {
                    out.push_str("  ");
                }
                match self.align[i] {
                    Align::Left => {
                        out.push_str(c);
                        if i + 1 < n {
                            out.push_str(&" ".repeat(pad));
                        }
                    }
                    Align::Right => {
                        out.push_str(&" ".repeat(pad));
                        out.push_str(c);
                    }
                }
            }
            out.push('\n');
            out
        };
        let mut out = line(&headers);
        let total: usize = width.iter().sum::<usize>() + 2 * n.saturating_sub(1);
        out.push_str(&"─".repeat(total));
        out.push('\n');
        for r in &rows {
            out.push_str(&line(r));
        }
        out
    }
}

/// Widest a terminal table cell gets, in display columns.
pub const MAX_CELL_WIDTH: usize = 48;

/// `text` cut to at most `max` display columns, ending in "…" when cut; control characters are
/// shown as U+FFFD so a name cannot move the cursor.
pub fn truncate(text: &str, max: usize) -> String {
    let text = crate::report::escape::plain(text).replace(['\n', '\t'], " ");
    if text.width() <= max {
        return text;
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// Formats a count with thousands separators: 14000 → "14,000".
pub fn thousands(n: f64) -> String {
    let neg = n < 0.0;
    let digits = format!("{:.0}", n.abs());
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if neg { format!("-{out}") } else { out }
}

/// Formats an optional number with `digits` decimals, or "—".
/// Non-finite values print as "—" too.
pub fn num(x: Option<f64>, digits: usize) -> String {
    match x {
        Some(v) if v.is_finite() => fixed(v, digits),
        _ => "—".to_string(),
    }
}

/// Formats with `digits` decimals, never printing a negative zero ("-0.000" becomes "0.000").
pub fn fixed(v: f64, digits: usize) -> String {
    let s = format!("{v:.digits$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => s,
    }
}

/// Formats a p-value: 3 significant digits, "<0.001" below.
pub fn pval(p: Option<f64>) -> String {
    match p {
        None => "—".into(),
        Some(p) if p < 0.001 => "<0.001".into(),
        Some(p) => format!("{p:.3}"),
    }
}

/// Formats a drop-like number with 4 decimals and its sign ("+0.0042", "-0.0009"), or "—".
pub fn signed(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() && v >= 0.0 => format!("+{}", fixed(v, 4)),
        Some(v) if v.is_finite() => fixed(v, 4),
        _ => "—".into(),
    }
}

/// A confidence level as a percentage with the digits it needs and no more: 0.95 → "95%",
/// 0.999 → "99.9%", 0.9999999 → "99.99999%" (never a rounded "100%").
pub fn percent_level(confidence: f64) -> String {
    let pct = 100.0 * confidence;
    let mut digits = 0;
    while digits < 12 {
        let scale = 10f64.powi(digits);
        if ((pct * scale).round() / scale - pct).abs() <= 1e-9 * pct.abs().max(1.0) {
            break;
        }
        digits += 1;
    }
    format!("{pct:.*}%", digits as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_aligned() {
        let mut t = TextTable::new(&["arm", "drop"]);
        t.row(vec!["baseline".into(), "0.000".into()]);
        t.row(vec!["x".into(), "-0.012".into()]);
        let s = t.render();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "arm         drop");
        assert_eq!(lines[2], "baseline   0.000");
        assert_eq!(lines[3], "x         -0.012");
    }

    #[test]
    fn numbers_never_print_negative_zero() {
        assert_eq!(fixed(-0.00001, 4), "0.0000");
        assert_eq!(num(Some(f64::NAN), 2), "—");
        assert_eq!(signed(Some(0.0042)), "+0.0042");
        assert_eq!(signed(Some(-0.0009)), "-0.0009");
        assert_eq!(pval(Some(0.0001)), "<0.001");
    }

    #[test]
    fn wide_characters_align_and_long_names_are_cut() {
        let mut t = TextTable::new(&["arm", "drop"]);
        t.row(vec!["日本語".into(), "1".into()]);
        t.row(vec!["abc".into(), "2".into()]);
        t.row(vec!["🙂x".into(), "3".into()]);
        t.row(vec!["y".repeat(80), "4".into()]);
        let out = t.render();
        let lines: Vec<&str> = out.lines().collect();
        // Every data row ends at the same display column.
        let widths: Vec<usize> = lines[2..].iter().map(|l| l.width()).collect();
        assert!(widths.iter().all(|w| *w == widths[0]), "{out}");
        assert!(
            lines[5].contains('…') && lines[5].width() <= MAX_CELL_WIDTH + 2 + 4,
            "{out}"
        );
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("日本語", 4), "日…");
        assert_eq!(truncate("a\u{1b}[31m", 20), "a\u{FFFD}[31m");
    }

    #[test]
    fn confidence_levels_keep_their_digits() {
        assert_eq!(percent_level(0.95), "95%");
        assert_eq!(percent_level(0.999), "99.9%");
        assert_eq!(percent_level(0.9999999), "99.99999%");
        assert_eq!(percent_level(0.8), "80%");
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(14000.0), "14,000");
        assert_eq!(thousands(999.4), "999");
        assert_eq!(thousands(-1234567.0), "-1,234,567");
    }
}
