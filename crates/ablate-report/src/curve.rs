//! [`CurveOutput`] for people: retention by budget per selector, the smallest budget that keeps
//! quality, the cost, and the report's budget section.

use std::fmt::Write;

use crate::analysis::curve::{Curve, CurveOutput};
use crate::export::spec::Shape::{One, Rows};
use crate::export::spec::{Export, TableSpec, WARNINGS, t};
use crate::report::charts::{BLUE, Chart, GREEN, GREY, Line, ORANGE};
use crate::report::section::{Cell, Page, Section, Table};
use crate::report::text::thousands;

/// Every measured point of these curves, one row each.
fn points_table(curves: &[Curve]) -> Table {
    let mut t = Table::new(&[
        "selector",
        "budget_ratio",
        "tokens",
        "score",
        "retention",
        "ci_low",
        "ci_high",
        "retention_confident",
    ]);
    for sel in curves {
        for p in &sel.points {
            t.row(vec![
                sel.selector.as_str().into(),
                Cell::num(Some(p.budget_ratio), 2),
                Cell::num(p.tokens, 0),
                Cell::num(Some(p.score), 3),
                Cell::num(p.retention, 4),
                Cell::num(p.ci.map(|i| i.low), 4),
                Cell::num(p.ci.map(|i| i.high), 4),
                Cell::yes_no(p.retention_confident),
            ]);
        }
    }
    t
}

/// The report's section: quality against context budget, one line per selector.
pub fn sections(c: &CurveOutput) -> Vec<Section> {
    let palette = [BLUE, ORANGE, GREEN, GREY];
    let lines = c
        .selectors
        .iter()
        .enumerate()
        .map(|(k, sel)| Line {
            name: format!("{} ({})", sel.selector, confirmed(sel)),
            points: sel
                .points
                .iter()
                .filter_map(|p| Some((p.budget_ratio, p.retention?)))
                .collect(),
            band: sel
                .points
                .iter()
                .filter_map(|p| Some((p.budget_ratio, p.ci.map(|i| i.low)?, p.ci.map(|i| i.high)?)))
                .collect(),
            color: palette[k % palette.len()],
        })
        .collect();
    let target = format!("{:.0}% target", 100.0 * c.quality_threshold);
    let mut note = format!(
        "Retention = arm score / baseline score over paired cases, with bootstrap bands; the red line is the {target}; a budget is confirmed when its family interval clears it."
    );
    // The curve and the decision judge the same arm by different rules: said where they part.
    for w in c
        .warnings
        .iter()
        .filter(|w| w.code == "curve.confirmed_budget_needed")
    {
        let _ = write!(note, " {}.", w.message);
    }
    vec![Section {
        name: Page::Budget,
        title: "Quality against context budget".into(),
        note,
        chart: Chart::Lines {
            title: "Retention by budget and selector".into(),
            x_desc: "budget (share of the full context)".into(),
            y_desc: "retention".into(),
            lines,
            marks: vec![(c.quality_threshold, target)],
        },
        table: points_table(&c.selectors),
    }]
}

/// A selector's smallest budget below full that its interval confirms keeps quality, as the
/// chart's legend says it: "confirmed at 0.50", or "none confirmed below full".
fn confirmed(c: &Curve) -> String {
    match c.min_budget_confident.filter(|&b| b < 1.0) {
        Some(b) => format!("confirmed at {b:.2}"),
        None => "none confirmed below full".into(),
    }
}

/// Renders the budget curves for a terminal.
pub fn human(r: &CurveOutput) -> String {
    let mut s = String::new();
    for c in &r.selectors {
        let _ = writeln!(s, "selector {}:", c.selector);
        s.push_str(&points_table(std::slice::from_ref(c)).text());
        let target = format!("{:.0}%", 100.0 * r.quality_threshold);
        match (c.min_budget, c.min_budget_confident) {
            (Some(b), _) if b >= 1.0 => {
                let _ = writeln!(
                    s,
                    "no measured budget below full reaches {target} retention\n"
                );
            }
            (Some(b), Some(bc)) if bc >= 1.0 => {
                let _ = writeln!(
                    s,
                    "reaches {target} retention at budget {b:.2}, but no budget below full clears it confidently (family interval)\n"
                );
            }
            (Some(b), Some(bc)) => {
                let _ = writeln!(
                    s,
                    "reaches {target} retention at budget {b:.2}; confidently (family interval) at {bc:.2}\n"
                );
            }
            (Some(b), None) => {
                let _ = writeln!(
                    s,
                    "reaches {target} retention at budget {b:.2}, but no measured budget below full clears it confidently\n"
                );
            }
            _ => {
                let _ = writeln!(
                    s,
                    "no measured budget below full reaches {target} retention\n"
                );
            }
        }
    }
    if let Some(c) = &r.cost {
        let _ = writeln!(
            s,
            "cost with {} at budget {:.2}, the smallest its interval confirms: ${} a day instead of ${} — saves ${} a day, ${} a month ({:.0}%)",
            c.selector,
            c.budget_ratio,
            thousands(c.daily_at_min_budget),
            thousands(c.daily_full),
            thousands(c.savings_daily),
            thousands(c.savings_monthly),
            c.savings_percent
        );
        // Beyond the threshold, the warning `curve.confirmed_budget_needed` below says so for
        // this budget's arm (the same arm and test), priced or not.
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// The tables `--export` writes for [`CurveOutput`].
impl Export for CurveOutput {
    const TABLES: &'static [TableSpec] = &[
        t(
            "summary",
            "",
            One,
            "quality_threshold:f64",
            "the retention target",
        ),
        t(
            "selectors",
            "selectors",
            Rows,
            "selector:str min_budget:f64 min_budget_confident:f64",
            "one row per selector: the smallest budget that keeps quality",
        ),
        t(
            "points",
            "selectors[].points",
            Rows,
            "selector:str=^selector arm:str budget_ratio:f64 tokens:f64 score:f64 retention:f64 \
             ci_low:f64 ci_high:f64 ci_level:f64 ci_method:str retention_confident:bool",
            "one row per (selector, budget)",
        ),
        t(
            "cost",
            "cost",
            One,
            "selector:str budget_ratio:f64 arm:str drop:f64 within_threshold_drop:bool \
             daily_full:f64 daily_at_min_budget:f64 savings_daily:f64 savings_monthly:f64 \
             savings_percent:f64",
            "dollars at the smallest budget confirmed to keep quality (with pricing)",
        ),
        WARNINGS,
    ];
}
