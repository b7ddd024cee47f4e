//! [`NeedOutput`] for people: needed and sent tokens per block, and the needed fraction.

use std::fmt::Write;

use crate::analysis::need::NeedOutput;
use crate::export::spec::Shape::{Map, One, Rows};
use crate::export::spec::{Export, TableSpec, WARNINGS, t};
use crate::report::charts::{BLUE, Bar, Chart, GREY};
use crate::report::section::{Align, Cell, Page, Section, Table};
use crate::report::text::thousands;

/// Needed and sent tokens per block, and their totals.
fn blocks_table(r: &NeedOutput) -> Table {
    let mut t = Table::new(&[
        "block",
        "rule",
        "needed_tokens_mean",
        "total_tokens_mean",
        "value",
    ])
    .align(1, Align::Left);
    for (block, b) in &r.by_block {
        t.row(vec![
            block.into(),
            b.rule.as_str().into(),
            Cell::thousands(b.needed_tokens_mean),
            Cell::thousands(b.total_tokens_mean),
            Cell::percent(b.value, 0),
        ]);
    }
    t.row(vec![
        "total".into(),
        "".into(),
        Cell::thousands(r.needed_tokens_mean),
        Cell::thousands(r.total_tokens_mean),
        Cell::percent(Some(r.value), 0),
    ]);
    t
}

/// The caveat of an oracle figure ("This is an oracle figure (…): an upper bound …"), when it is
/// one.
fn oracle_caveat(r: &NeedOutput) -> Option<String> {
    r.oracle.then(|| {
        format!(
            "This is an oracle figure ({}): an upper bound on what any deployable selector can save, not a plan.",
            r.oracle_note.as_deref().unwrap_or_default()
        )
    })
}

/// The report's section: the tokens each block sends against those it needs (the headline's
/// needed context fraction, block by block).
pub fn sections(r: &NeedOutput) -> Vec<Section> {
    let mut bars = Vec::new();
    for (block, b) in &r.by_block {
        bars.push(Bar {
            label: format!("{block} · sent"),
            value: b.total_tokens_mean,
            interval: None,
            color: GREY,
        });
        bars.push(Bar {
            label: format!("{block} · needed"),
            value: b.needed_tokens_mean,
            interval: None,
            color: BLUE,
        });
    }
    vec![Section {
        name: Page::Need,
        title: "Needed context: the tokens each block sends and needs".into(),
        note: format!(
            "{}.{}{}",
            r.headline,
            oracle_caveat(r)
                .map(|c| format!(" {c}"))
                .unwrap_or_default(),
            if r.joint_cut_measured {
                String::new()
            } else {
                " The cut of every unit judged removable was not measured as one arm: the figure assumes their drops add up (measure the joint cut to confirm it).".into()
            }
        ),
        chart: Chart::Bars {
            title: "Tokens per request by block: sent (grey) and needed (blue)".into(),
            x_desc: "tokens per request (main-set mean)".into(),
            bars,
            marks: Vec::new(),
        },
        table: blocks_table(r),
    }]
}

/// Renders the needed context fraction for a terminal.
pub fn human(r: &NeedOutput) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}.\n", r.headline);
    s.push_str(&blocks_table(r).text());
    let _ = writeln!(
        s,
        "\n{} tokens of the {} sent per request are needed: {} (over {} main-set cases){}.",
        thousands(r.needed_tokens_mean),
        thousands(r.total_tokens_mean),
        crate::percent(r.value),
        r.cases,
        r.value_production
            .map(|v| format!("; {:.0}% weighted to production traffic", 100.0 * v))
            .unwrap_or_default()
    );
    if let Some(caveat) = oracle_caveat(r) {
        let _ = writeln!(s, "{caveat}");
    }
    if !r.forced_needed.is_empty() {
        let _ = writeln!(
            s,
            "restored to needed ({} search, fewest tokens): {}",
            r.restore_method,
            r.forced_needed
                .iter()
                .map(|f| format!(
                    "{} ({} tokens; {} needed {:.4})",
                    f.unit,
                    thousands(f.tokens),
                    f.cut,
                    f.cut_drop
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !r.removable_units.is_empty() {
        let _ = writeln!(
            s,
            "units judged removable by a confidently removable measured arm: {}",
            r.removable_units
                .iter()
                .map(|(u, a)| format!("{u} ({a})"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// The tables `--export` writes for [`NeedOutput`].
impl Export for NeedOutput {
    const TABLES: &'static [TableSpec] = &[
        t(
            "summary",
            "",
            One,
            "value:f64 value_production:f64 value_point:f64 needed_tokens_mean:f64 \
             total_tokens_mean:f64 oracle:bool oracle_note:str jointly_removable:list<str> \
             joint_cut_measured:bool restore_method:str headline:str cases:i64 \
             unmeasured_share:f64",
            "the needed context fraction",
        ),
        t(
            "by_block",
            "by_block",
            Map,
            "block:str=@key needed_tokens_mean:f64=@value.needed_tokens_mean \
             total_tokens_mean:f64=@value.total_tokens_mean rule:str=@value.rule \
             value:f64=@value.value",
            "one row per block: needed against total tokens",
        ),
        t(
            "removable_units",
            "removable_units",
            Map,
            "unit:str=@key arm:str=@value",
            "units a confidently removable measured arm shows removable, with that arm",
        ),
        t(
            "forced_needed",
            "forced_needed",
            Rows,
            "unit:str cut:str cut_drop:f64 tokens:f64",
            "units restored to needed because a measured cut of them loses (the fewest tokens)",
        ),
        WARNINGS,
    ];
}
