//! [`SelectorOutput`] for people: a reranker threshold's saving against the oracle's, gold
//! misses and measured drops, and the report's selector section.

use std::fmt::Write;

use crate::analysis::selector::SelectorOutput;
use crate::export::spec::Shape::{One, Rows};
use crate::export::spec::{Export, TableSpec, WARNINGS, t};
use crate::report::charts::{BLUE, Chart, Line, ORANGE};
use crate::report::section::{Cell, Page, Section, Table};
use crate::report::text::{fixed, num, percent, thousands};

/// One row per replayed threshold.
fn table(r: &SelectorOutput) -> Table {
    let mut t = Table::new(&[
        "threshold",
        "kept_tokens_mean",
        "saving_mean",
        "recovery",
        "gold_miss_rate",
        "measured_drop",
    ]);
    for p in &r.points {
        t.row(vec![
            Cell::num(Some(p.threshold), 2),
            Cell::num(Some(p.kept_tokens_mean), 0),
            Cell::num(Some(p.saving_mean), 0),
            Cell::num(p.recovery, 3),
            Cell::num(p.gold_miss_rate, 3),
            Cell::num(p.measured_drop, 4),
        ]);
    }
    t
}

/// The report's section: recovery and gold misses by threshold.
pub fn sections(sel: &SelectorOutput) -> Vec<Section> {
    let line =
        |name: &str, color, y: fn(&crate::analysis::selector::SelectorPoint) -> Option<f64>| Line {
            name: name.into(),
            points: sel
                .points
                .iter()
                .filter_map(|p| Some((p.threshold, y(p)?)))
                .collect(),
            band: Vec::new(),
            color,
        };
    vec![Section {
        name: Page::Selector,
        title: "Reranker threshold: saving against the oracle".into(),
        note: format!(
            "Recovery = saving / oracle saving ({} tokens a case); gold miss rate = cases whose gold passage the threshold drops.",
            num(sel.oracle_saving_mean, 0)
        ),
        chart: Chart::Lines {
            title: "Recovery and gold misses by threshold".into(),
            x_desc: "reranker score threshold".into(),
            y_desc: "share".into(),
            lines: vec![
                line("recovery of the oracle saving", BLUE, |p| p.recovery),
                line("gold miss rate", ORANGE, |p| p.gold_miss_rate),
            ],
            marks: vec![(1.0, "oracle".into())],
        },
        table: table(sel),
    }]
}

/// Renders the selector replay for a terminal.
pub fn human(r: &SelectorOutput) -> String {
    let mut s = String::new();
    let oracle = match r.oracle_saving_mean {
        Some(o) => format!(
            "oracle saving {} tokens{}",
            thousands(o),
            if r.full_tokens_mean > 0.0 {
                format!(" ({:.0}%)", 100.0 * o / r.full_tokens_mean)
            } else {
                String::new()
            }
        ),
        None => "oracle saving unknown (no gold passage labelled)".into(),
    };
    let _ = writeln!(
        s,
        "{} main-set cases · passages {} tokens a case · {oracle}\n",
        r.cases,
        thousands(r.full_tokens_mean),
    );
    s.push_str(&table(r).text());
    for p in r.points.iter().filter(|p| p.measured_drop.is_some()) {
        let _ = writeln!(
            s,
            "threshold {:.2} recovers {} of the oracle saving, drops the gold passage on {} of cases, and measured a drop of {} ({})",
            p.threshold,
            percent(p.recovery, 0),
            percent(p.gold_miss_rate, 1),
            p.measured_drop.map_or("—".into(), |d| fixed(d, 4)),
            p.measured_arm.as_deref().unwrap_or_default()
        );
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// The tables `--export` writes for [`SelectorOutput`].
impl Export for SelectorOutput {
    const TABLES: &'static [TableSpec] = &[
        t(
            "summary",
            "",
            One,
            "full_tokens_mean:f64 oracle_saving_mean:f64 cases:i64",
            "the full and oracle token counts",
        ),
        t(
            "points",
            "points",
            Rows,
            "threshold:f64 kept_tokens_mean:f64 saving_mean:f64 recovery:f64 gold_miss_rate:f64 \
             measured_drop:f64 measured_arm:str",
            "one row per reranker threshold",
        ),
        WARNINGS,
    ];
}
