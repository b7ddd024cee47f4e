//! The report's building blocks: a [`Table`] of text cells and a [`Section`] (a table, the chart
//! drawn from the same numbers, a title and a note). Each verb's module in `report/` turns its
//! output into sections; the terminal, Markdown and HTML views render the same sections.

use std::fmt::Write as _;
use std::path::Path;

use polars::prelude::{Column, DataFrame};
use unicode_width::UnicodeWidthStr;

use crate::error::{Error, Result};
use crate::report::charts::Chart;
use crate::report::escape;
use crate::report::text::{MAX_CELL_WIDTH, truncate};

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Pad on the right (text).
    Left,
    /// Pad on the left (numbers).
    Right,
}

/// A table being built row by row: one type for the terminal, Markdown, HTML and CSV.
#[derive(Debug, Clone, Default)]
pub struct Table {
    headers: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these headers; the first column is left-aligned, the rest right-aligned.
    pub fn new(headers: &[&str]) -> Self {
        let align = (0..headers.len())
            .map(|i| if i == 0 { Align::Left } else { Align::Right })
            .collect();
        Table {
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

    /// A narrower view of the same table: every column but those named in `leave_out`. A
    /// terminal shows the view where the whole table is too wide; JSON, CSV and the report keep
    /// every column.
    pub fn without(&self, leave_out: &[&str]) -> Table {
        let kept: Vec<usize> = (0..self.headers.len())
            .filter(|&i| !leave_out.contains(&self.headers[i].as_str()))
            .collect();
        Table {
            headers: kept.iter().map(|&i| self.headers[i].clone()).collect(),
            align: kept.iter().map(|&i| self.align[i]).collect(),
            rows: self
                .rows
                .iter()
                .map(|r| {
                    kept.iter()
                        .map(|&i| r.get(i).cloned().unwrap_or_default())
                        .collect()
                })
                .collect(),
        }
    }

    /// Renders with two spaces between columns and a rule under the header. Widths are display
    /// columns (CJK and emoji take two), and a cell wider than [`MAX_CELL_WIDTH`] is cut with an
    /// ellipsis (JSON and CSV keep it whole).
    pub fn text(&self) -> String {
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

impl Table {
    /// A GitHub-flavoured Markdown table, every cell escaped.
    pub fn markdown(&self) -> String {
        let row = |cells: &[String]| {
            cells
                .iter()
                .map(|c| escape::markdown(c))
                .collect::<Vec<_>>()
                .join(" | ")
        };
        let mut s = format!(
            "| {} |\n|{}\n",
            row(&self.headers),
            "---|".repeat(self.headers.len())
        );
        for r in &self.rows {
            let _ = writeln!(s, "| {} |", row(r));
        }
        s
    }

    /// An HTML `<table>`, every cell escaped.
    pub fn html(&self) -> String {
        let esc = escape::html;
        let mut s = String::from("<table class=\"data\"><thead><tr>");
        for h in &self.headers {
            let _ = write!(s, "<th>{}</th>", esc(h));
        }
        s.push_str("</tr></thead><tbody>");
        for r in &self.rows {
            s.push_str("<tr>");
            for c in r {
                let _ = write!(s, "<td>{}</td>", esc(c));
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table>");
        s
    }

    /// Writes the table as CSV (cells that a spreadsheet would run as formulas are defused).
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn csv(&self, path: &Path) -> Result<()> {
        let columns: Vec<Column> = self
            .headers
            .iter()
            .enumerate()
            .map(|(i, h)| {
                Column::new(
                    h.as_str().into(),
                    self.rows
                        .iter()
                        .map(|r| r.get(i).cloned().unwrap_or_default())
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        let df = DataFrame::new(self.rows.len(), columns).map_err(|e| Error::Polars {
            context: format!("building {}", path.display()),
            source: e,
        })?;
        crate::io::write::csv(&df, path)
    }
}

/// The slots of the report's page, in page order (the derived `Ord`): the decision's sections
/// first (drops, production, coverage, stress), then interactions, budget, live traffic, and
/// churn last. A new section needs a slot here, so the compiler places it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Page {
    /// Every arm's drop (`sweep`).
    Drops,
    /// Drops under production weights (`reweight`).
    Production,
    /// Strata the set lacks (`reweight`).
    Coverage,
    /// The main set next to the stress slice (`stress`).
    Stress,
    /// Composed cuts against their parts (`interactions`).
    Interactions,
    /// Budget curves (`curve`).
    Budget,
    /// Reranker replay (`selector`).
    Selector,
    /// Context sizes against the limit (`context`).
    Context,
    /// What fills the context (`context`).
    Composition,
    /// Shadow traffic (`shadow`).
    Shadow,
    /// Churn between repeats (`sweep`).
    Churn,
}

impl Page {
    /// File stem of the section's chart and table (`charts/<name>.svg`, `tables/<name>.csv`).
    pub fn name(self) -> &'static str {
        match self {
            Page::Drops => "drops",
            Page::Production => "production",
            Page::Coverage => "coverage",
            Page::Stress => "stress",
            Page::Interactions => "interactions",
            Page::Budget => "budget",
            Page::Selector => "selector",
            Page::Context => "context",
            Page::Composition => "composition",
            Page::Shadow => "shadow",
            Page::Churn => "churn",
        }
    }
}

impl std::fmt::Display for Page {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One section of the report: a table, the chart drawn from the same numbers, a title and a note.
#[derive(Debug, Clone)]
pub struct Section {
    /// Its slot on the page; its name is the file stem of its chart and table.
    pub name: Page,
    /// Heading.
    pub title: String,
    /// One or two sentences under the heading: how to read it and what it shows.
    pub note: String,
    /// The chart, drawn from the table's numbers.
    pub chart: Chart,
    /// The numbers.
    pub table: Table,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::text;

    #[test]
    fn renders_aligned() {
        let mut t = Table::new(&["arm", "drop"]);
        t.row(vec!["baseline".into(), "0.000".into()]);
        t.row(vec!["x".into(), "-0.012".into()]);
        let s = t.text();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "arm         drop");
        assert_eq!(lines[2], "baseline   0.000");
        assert_eq!(lines[3], "x         -0.012");
    }

    #[test]
    fn a_view_leaves_out_the_named_columns_and_keeps_the_alignment() {
        let mut t = Table::new(&["arm", "parts", "drop", "verdict"])
            .align(1, Align::Left)
            .align(3, Align::Left);
        t.row(vec![
            "a".into(),
            "x + y".into(),
            "0.1".into(),
            "needed".into(),
        ]);
        t.row(vec!["b".into()]);
        let v = t.without(&["parts", "no such column"]);
        assert_eq!(v.headers, ["arm", "drop", "verdict"]);
        assert_eq!(v.align, [Align::Left, Align::Right, Align::Left]);
        assert_eq!(v.rows[0], ["a", "0.1", "needed"]);
        assert_eq!(v.rows[1], ["b", "", ""]);
        assert_eq!(t.headers.len(), 4, "the table itself is unchanged");
    }

    #[test]
    fn wide_characters_align_and_long_names_are_cut() {
        let mut t = Table::new(&["arm", "drop"]);
        t.row(vec!["日本語".into(), "1".into()]);
        t.row(vec!["abc".into(), "2".into()]);
        t.row(vec!["🙂x".into(), "3".into()]);
        t.row(vec!["y".repeat(80), "4".into()]);
        let out = t.text();
        let lines: Vec<&str> = out.lines().collect();
        // Every data row ends at the same display column.
        let widths: Vec<usize> = lines[2..].iter().map(|l| l.width()).collect();
        assert!(widths.iter().all(|w| *w == widths[0]), "{out}");
        assert!(
            lines[5].contains('…') && lines[5].width() <= text::MAX_CELL_WIDTH + 2 + 4,
            "{out}"
        );
        assert_eq!(text::truncate("abcdef", 4), "abc…");
        assert_eq!(text::truncate("日本語", 4), "日…");
        assert_eq!(text::truncate("a\u{1b}[31m", 20), "a\u{FFFD}[31m");
    }
}
