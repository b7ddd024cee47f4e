//! The report's building blocks: a [`Table`] of text cells and a [`Section`] (a table, the chart
//! drawn from the same numbers, a title and a note). Each verb's module in `report/` turns its
//! output into sections; the terminal, Markdown and HTML views render the same sections.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

use unicode_width::UnicodeWidthStr;

use crate::report::charts::Chart;
use crate::report::escape;
use crate::report::text::{MAX_CELL_WIDTH, truncate};

/// The widest a terminal table is drawn, in display columns, unless [`set_wide`]: the columns a
/// reader needs first ([`Table::needs_first`]) are kept, and a line under the table names the
/// others. JSON, CSV and the report keep every column.
pub const TERMINAL_WIDTH: usize = 120;

/// Whether terminal tables are drawn whole (`--wide`).
static WIDE: AtomicBool = AtomicBool::new(false);

/// Draws every terminal table with all its columns (`--wide`), however wide, instead of fitting
/// it in [`TERMINAL_WIDTH`]. A setting of the process, as a terminal's width is.
pub fn set_wide(wide: bool) {
    WIDE.store(wide, Ordering::Relaxed);
}

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Pad on the right (text).
    Left,
    /// Pad on the left (numbers).
    Right,
}

/// One cell of a [`Table`]: text, or a number with the way a person reads it.
///
/// The terminal, Markdown and HTML show [`Cell::shown`] ("0.0123", "<0.001", "12.3%", "1,234",
/// "—"); the report's CSVs hold [`Cell::raw`], the number at full precision (empty when missing),
/// so a spreadsheet or `pandas.read_csv` reads numbers, not display strings.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Text, the same everywhere.
    Text(String),
    /// A number (`None` when missing or undefined) and its display form.
    Number {
        /// The value, at full precision.
        value: Option<f64>,
        /// How the terminal and the page show it.
        shown: String,
    },
    /// A yes/no (`None` when undefined) and its display form: the CSV says `true` or `false`,
    /// as the JSON does, and the page and terminal say `shown` ("yes", "← flips").
    Flag {
        /// The value.
        value: Option<bool>,
        /// How the terminal and the page show it.
        shown: String,
    },
}

impl Cell {
    /// A number with `digits` decimals on screen ("—" when missing or not finite).
    pub fn num(value: Option<f64>, digits: usize) -> Cell {
        Cell::number(value, crate::text::num(value, digits))
    }

    /// A count.
    pub fn count(n: usize) -> Cell {
        Cell::number(Some(n as f64), n.to_string())
    }

    /// A count that may be missing ("—").
    pub fn count_opt(n: Option<usize>) -> Cell {
        n.map_or_else(|| Cell::num(None, 0), Cell::count)
    }

    /// A whole number with thousands separators on screen ("1,234").
    pub fn thousands(value: f64) -> Cell {
        Cell::number(Some(value), crate::text::thousands(value))
    }

    /// A p-value ("<0.001" below 0.001 on screen).
    pub fn pval(p: Option<f64>) -> Cell {
        Cell::number(p, crate::text::pval(p))
    }

    /// A signed drop ("+0.0042" on screen).
    pub fn signed(value: Option<f64>) -> Cell {
        Cell::number(value, crate::text::signed(value))
    }

    /// A share, shown as a percentage with `digits` decimals ("12.3%"); the CSV keeps the share
    /// (0.123).
    pub fn percent(value: Option<f64>, digits: usize) -> Cell {
        Cell::number(value, crate::text::percent(value, digits))
    }

    /// A yes/no shown as "yes", "no", or "—" when undefined.
    pub fn yes_no(value: Option<bool>) -> Cell {
        let shown = match value {
            Some(true) => "yes",
            Some(false) => "no",
            None => "—",
        };
        Cell::flag(value, shown)
    }

    /// A yes/no with its own display form ("yes" and "no", or "← flips" and "").
    pub fn flag(value: Option<bool>, shown: &str) -> Cell {
        Cell::Flag {
            value,
            shown: shown.to_string(),
        }
    }

    /// A number with its own display form.
    pub fn number(value: Option<f64>, shown: String) -> Cell {
        Cell::Number {
            value: value.filter(|v| v.is_finite()),
            shown,
        }
    }

    /// The text a person reads.
    pub fn shown(&self) -> &str {
        match self {
            Cell::Text(s) => s,
            Cell::Number { shown, .. } | Cell::Flag { shown, .. } => shown,
        }
    }

    /// The CSV's value: text as it is; a number at full precision (the shortest decimal that
    /// reads back as the same `f64`); a flag as `true` or `false`; empty when missing.
    pub fn raw(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Number { value: None, .. } => String::new(),
            Cell::Number { value: Some(v), .. } if *v == 0.0 => "0".into(),
            // Scientific notation far from 1 ("3.65e-45", not 45 zeros); both read as numbers.
            Cell::Number { value: Some(v), .. } if !(1e-5..1e16).contains(&v.abs()) => {
                format!("{v:e}")
            }
            Cell::Number { value: Some(v), .. } => v.to_string(),
            Cell::Flag { value: None, .. } => String::new(),
            Cell::Flag { value: Some(b), .. } => b.to_string(),
        }
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::Text(s)
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::Text(s.to_string())
    }
}

impl From<&String> for Cell {
    fn from(s: &String) -> Cell {
        Cell::Text(s.clone())
    }
}

/// A table being built row by row: one type for the terminal, Markdown, HTML and CSV.
#[derive(Debug, Clone, Default)]
pub struct Table {
    headers: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<Cell>>,
    /// The arms are alternatives (no arm removes units): the page's words are "not worse" and
    /// "worse" instead of "cut" and "keep".
    comparison: bool,
    /// The columns a narrow terminal keeps first, in order ([`Table::needs_first`]).
    first: Vec<String>,
}

/// Columns whose values the page shows in the decision's words ([`Table::page_word`]).
const VERDICT_COLUMNS: &[&str] = &[
    "verdict",
    "verdict_eval",
    "verdict_production",
    "verdict_main",
    "verdict_stress",
];

/// Columns of confidence, shown as "settled" and "not settled" on the page.
const CONFIDENCE_COLUMNS: &[&str] = &[
    "confidence",
    "confidence_production",
    "confidence_main",
    "confidence_stress",
];

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
            comparison: false,
            first: Vec::new(),
        }
    }

    /// The columns a reader needs first, most needed first: where the table is wider than
    /// [`TERMINAL_WIDTH`], the terminal keeps the first column, then these in this order, then
    /// the others from the left, each one that still fits.
    pub fn needs_first(mut self, columns: &[&str]) -> Self {
        self.first = columns.iter().map(|c| c.to_string()).collect();
        self
    }

    /// Shows verdicts as "not worse" and "worse" on the page (the arms are alternatives).
    pub fn comparison(mut self, comparison: bool) -> Self {
        self.comparison = comparison;
        self
    }

    /// What the HTML and Markdown pages show for `cell` in column `col`: the decision's words for
    /// verdicts ("cut" for removable-on-this-set, "keep" for needed; "not worse" and "worse" for
    /// alternatives) and confidence ("settled", "not settled"); anything else as it is. The
    /// terminal, CSV, JSON and DataFrames keep the values scripts read; [`Table::legend`] says
    /// which word stands for which.
    pub fn page_word<'a>(&self, col: usize, cell: &'a str) -> &'a str {
        let header = self.headers.get(col).map_or("", String::as_str);
        if VERDICT_COLUMNS.contains(&header) {
            match (cell, self.comparison) {
                ("removable-on-this-set", false) => "cut",
                ("needed", false) => "keep",
                ("removable-on-this-set", true) => "not worse",
                ("needed", true) => "worse",
                _ => cell,
            }
        } else if CONFIDENCE_COLUMNS.contains(&header) {
            match cell {
                "confident" => "settled",
                "inconclusive" => "not settled",
                _ => cell,
            }
        } else {
            cell
        }
    }

    /// The legend of [`Table::page_word`] when the table has a verdict or confidence column.
    pub fn legend(&self) -> Option<String> {
        let words = self.headers.iter().any(|h| {
            VERDICT_COLUMNS.contains(&h.as_str()) || CONFIDENCE_COLUMNS.contains(&h.as_str())
        });
        words.then(|| {
            if self.comparison {
                "not worse = removable-on-this-set (within the threshold), worse = needed; settled = confident, not settled = inconclusive (the values of the CSV and JSON)".to_string()
            } else {
                "cut = removable-on-this-set, keep = needed (with settled: the decision's cut and keep); settled = confident, not settled = inconclusive (the values of the CSV and JSON)".to_string()
            }
        })
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the table has no row.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Sets the alignment of column `i`.
    pub fn align(mut self, i: usize, a: Align) -> Self {
        if i < self.align.len() {
            self.align[i] = a;
        }
        self
    }

    /// Adds a row (missing cells are blank). Strings are text cells; numbers come as
    /// [`Cell::num`] and its siblings, so that the CSV keeps them as numbers.
    pub fn row<C: Into<Cell>>(&mut self, cells: Vec<C>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
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
                        .map(|&i| r.get(i).cloned().unwrap_or_else(|| Cell::from("")))
                        .collect()
                })
                .collect(),
            comparison: self.comparison,
            first: self.first.clone(),
        }
    }

    /// Renders with two spaces between columns and a rule under the header. Widths are display
    /// columns (CJK and emoji take two), and a cell wider than [`MAX_CELL_WIDTH`] is cut with an
    /// ellipsis (JSON and CSV keep it whole). A table wider than [`TERMINAL_WIDTH`] keeps the
    /// columns that fit, in the order of [`Table::needs_first`], and names the others on a line
    /// below (unless [`set_wide`]).
    pub fn text(&self) -> String {
        let n = self.headers.len();
        let fit = |c: &str| truncate(c, MAX_CELL_WIDTH);
        // The header, then the rows, as shown (cut to MAX_CELL_WIDTH; missing cells blank).
        let lines: Vec<Vec<String>> =
            std::iter::once(self.headers.iter().map(|h| fit(h)).collect())
                .chain(self.rows.iter().map(|r| {
                    (0..n)
                        .map(|i| r.get(i).map_or_else(String::new, |c| fit(c.shown())))
                        .collect()
                }))
                .collect();
        let width: Vec<usize> = (0..n)
            .map(|i| lines.iter().map(|l| l[i].width()).max().unwrap_or(0))
            .collect();
        let total = |cols: &[usize]| -> usize {
            cols.iter().map(|&i| width[i]).sum::<usize>() + 2 * cols.len().saturating_sub(1)
        };
        let all: Vec<usize> = (0..n).collect();
        if WIDE.load(Ordering::Relaxed) || total(&all) <= TERMINAL_WIDTH {
            return self.draw(&lines, &all, &width);
        }
        let mut order: Vec<usize> = self
            .first
            .iter()
            .filter_map(|h| self.headers.iter().position(|x| x == h))
            .filter(|&i| i > 0)
            .collect();
        let rest: Vec<usize> = (1..n).filter(|i| !order.contains(i)).collect();
        order.extend(rest);
        let mut kept = vec![0];
        for i in order {
            let mut with = kept.clone();
            with.push(i);
            if total(&with) <= TERMINAL_WIDTH {
                kept = with;
            }
        }
        kept.sort_unstable();
        let left: Vec<&str> = (0..n)
            .filter(|i| !kept.contains(i))
            .map(|i| self.headers[i].as_str())
            .collect();
        let mut out = self.draw(&lines, &kept, &width);
        let _ = writeln!(
            out,
            "({} column{} left out to fit {TERMINAL_WIDTH} characters: {}; --wide shows them)",
            left.len(),
            if left.len() == 1 { "" } else { "s" },
            left.join(", ")
        );
        out
    }

    /// Draws the columns `cols` (in table order) of `lines` (the header, then the rows, as shown)
    /// at their `width`s.
    fn draw(&self, lines: &[Vec<String>], cols: &[usize], width: &[usize]) -> String {
        let n = cols.len();
        let width: Vec<usize> = cols.iter().map(|&i| width[i]).collect();
        let align: Vec<Align> = cols.iter().map(|&i| self.align[i]).collect();
        let line = |cells: &[String]| {
            let mut out = String::new();
            for (i, w) in width.iter().enumerate() {
                let c = cells[cols[i]].as_str();
                let pad = w - c.width();
                if i > 0 {
                    out.push_str("  ");
                }
                match align[i] {
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
        let mut out = line(&lines[0]);
        let total: usize = width.iter().sum::<usize>() + 2 * n.saturating_sub(1);
        out.push_str(&"─".repeat(total));
        out.push('\n');
        for r in &lines[1..] {
            out.push_str(&line(r));
        }
        out
    }
}

impl Table {
    /// A GitHub-flavoured Markdown table, every cell escaped.
    pub fn markdown(&self) -> String {
        let row = |cells: &mut dyn Iterator<Item = &str>| {
            cells.map(escape::markdown).collect::<Vec<_>>().join(" | ")
        };
        let mut s = format!(
            "| {} |\n|{}\n",
            row(&mut self.headers.iter().map(String::as_str)),
            "---|".repeat(self.headers.len())
        );
        for r in &self.rows {
            let _ = writeln!(
                s,
                "| {} |",
                row(&mut r
                    .iter()
                    .enumerate()
                    .map(|(i, c)| self.page_word(i, c.shown())))
            );
        }
        if let Some(legend) = self.legend() {
            let _ = writeln!(s, "\n{}", escape::markdown(&legend));
        }
        s
    }

    /// An HTML `<table>`, every cell escaped.
    pub fn html(&self) -> String {
        let esc = escape::html;
        let mut s = String::from("<table class=\"data\">");
        if let Some(legend) = self.legend() {
            let _ = write!(s, "<caption>{}</caption>", esc(&legend));
        }
        s.push_str("<thead><tr>");
        for h in &self.headers {
            let _ = write!(s, "<th>{}</th>", esc(h));
        }
        s.push_str("</tr></thead><tbody>");
        for r in &self.rows {
            s.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                let _ = write!(s, "<td>{}</td>", esc(self.page_word(i, c.shown())));
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table>");
        s
    }

    /// The table for a CSV file: its headers, and its columns of cells, numbers at full
    /// precision ([`Cell::raw`]) and a missing number as `None` (an empty field, not a quoted
    /// ""). Whoever writes the file defuses cells a spreadsheet would run as formulas.
    pub fn csv_columns(&self) -> (Vec<String>, Vec<Vec<Option<String>>>) {
        let columns = (0..self.headers.len())
            .map(|i| {
                self.rows
                    .iter()
                    .map(|r| match r.get(i) {
                        Some(Cell::Number { value: None, .. } | Cell::Flag { value: None, .. }) => {
                            None
                        }
                        cell => Some(cell.map(Cell::raw).unwrap_or_default()),
                    })
                    .collect()
            })
            .collect();
        (self.headers.clone(), columns)
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
    /// Needed and sent tokens per block (`need`).
    Need,
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
    /// The harness runs behind the results (`check`, imported experiments).
    Runs,
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
            Page::Need => "need",
            Page::Budget => "budget",
            Page::Selector => "selector",
            Page::Context => "context",
            Page::Composition => "composition",
            Page::Shadow => "shadow",
            Page::Churn => "churn",
            Page::Runs => "runs",
        }
    }
}

impl Page {
    /// The section's name in the report's table of contents.
    pub fn label(self) -> &'static str {
        match self {
            Page::Drops => "Drops",
            Page::Production => "Production",
            Page::Coverage => "Coverage",
            Page::Stress => "Stress",
            Page::Interactions => "Interactions",
            Page::Need => "Needed context",
            Page::Budget => "Budget",
            Page::Selector => "Selector",
            Page::Context => "Context",
            Page::Composition => "Composition",
            Page::Shadow => "Shadow",
            Page::Churn => "Churn",
            Page::Runs => "Runs",
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
        t.row(vec!["baseline", "0.000"]);
        t.row(vec!["x", "-0.012"]);
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
        t.row(vec!["a", "x + y", "0.1", "needed"]);
        t.row(vec!["b"]);
        let v = t.without(&["parts", "no such column"]);
        assert_eq!(v.headers, ["arm", "drop", "verdict"]);
        assert_eq!(v.align, [Align::Left, Align::Right, Align::Left]);
        let shown = |r: &[Cell]| r.iter().map(|c| c.shown().to_string()).collect::<Vec<_>>();
        assert_eq!(shown(&v.rows[0]), ["a", "0.1", "needed"]);
        assert_eq!(shown(&v.rows[1]), ["b", "", ""]);
        assert_eq!(t.headers.len(), 4, "the table itself is unchanged");
    }

    #[test]
    fn numbers_show_rounded_and_keep_full_precision_for_the_csv() {
        let third = Cell::num(Some(1.0 / 3.0), 4);
        assert_eq!(third.shown(), "0.3333");
        assert_eq!(third.raw().parse::<f64>().unwrap(), 1.0 / 3.0);
        assert_eq!(Cell::num(None, 4).shown(), "—");
        assert_eq!(Cell::num(None, 4).raw(), "");
        assert_eq!(
            Cell::num(Some(f64::NAN), 4).raw(),
            "",
            "not finite is missing"
        );
        let p = Cell::pval(Some(3.65e-45));
        assert_eq!(p.shown(), "<0.001");
        assert_eq!(p.raw(), "3.65e-45");
        assert_eq!(Cell::percent(Some(0.1234), 1).shown(), "12.3%");
        assert_eq!(Cell::percent(Some(0.1234), 1).raw(), "0.1234");
        assert_eq!(Cell::thousands(12_345.0).shown(), "12,345");
        assert_eq!(Cell::thousands(12_345.0).raw(), "12345");
        assert_eq!(Cell::count_opt(None).raw(), "");
        assert_eq!(Cell::count(7).raw(), "7");
        assert_eq!(Cell::num(Some(-0.0), 3).raw(), "0");
        assert_eq!(Cell::from("—").raw(), "—", "text stays text");
    }

    #[test]
    fn wide_characters_align_and_long_names_are_cut() {
        let mut t = Table::new(&["arm", "drop"]);
        t.row(vec!["日本語", "1"]);
        t.row(vec!["abc", "2"]);
        t.row(vec!["🙂x", "3"]);
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
