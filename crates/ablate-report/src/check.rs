//! Human rendering of [`CheckReport`].

use std::fmt::Write;

use crate::analysis::check::CheckReport;
use crate::export::spec::Shape::{One, Rows, Values};
use crate::export::spec::{Export, TableSpec, WARNINGS, t};
use crate::report::section::Table;
use crate::report::text::thousands;

/// Renders the check summary for a terminal.
pub fn human(r: &CheckReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} — {}{}",
        r.set,
        r.dir,
        if r.synthetic { " (synthetic data)" } else { "" }
    );
    if let Some(model) = &r.model {
        let _ = writeln!(
            s,
            "model {model}{}",
            r.measured_at
                .as_ref()
                .map(|d| format!(", measured {d}"))
                .unwrap_or_default()
        );
    }
    let _ = writeln!(
        s,
        "cases {} main + {} stress{}",
        r.main_cases,
        r.stress_cases,
        r.clusters
            .map(|c| format!(" in {c} clusters"))
            .unwrap_or_default()
    );
    let repeats = if r.repeats.min == r.repeats.max {
        format!("{}", r.repeats.max)
    } else {
        format!("{}–{}", r.repeats.min, r.repeats.max)
    };
    let _ = writeln!(
        s,
        "arms {} (baseline \"{}\"), {} repeats per case",
        r.arms.len(),
        r.baseline_arm,
        repeats
    );
    let _ = writeln!(
        s,
        "threshold_drop {} (stress {}), pass_mark {}",
        r.threshold_drop, r.stress_threshold_drop, r.pass_mark
    );

    if !r.blocks.is_empty() {
        let _ = writeln!(s);
        s.push_str(&blocks_table(r).text());
    }
    if !r.strata_counts.is_empty() {
        let _ = writeln!(s);
        s.push_str(&strata_table(r).text());
    }
    let _ = writeln!(s);
    let mut t =
        Table::new(&["table", "rows", "file"]).align(2, crate::report::section::Align::Left);
    for tb in &r.tables {
        t.row(vec![
            tb.table.clone(),
            thousands(tb.rows as f64),
            tb.file.clone(),
        ]);
    }
    s.push_str(&t.text());
    if !r.absent.is_empty() {
        let _ = writeln!(s, "absent: {}", r.absent.join("; "));
    }
    if r.warnings.is_empty() {
        let _ = writeln!(s, "\nok: every table is valid, no warnings");
    } else {
        let _ = writeln!(s, "\nok with {} warning(s):", r.warnings.len());
        for w in &r.warnings {
            let _ = writeln!(s, "  warning: {w}");
        }
    }
    s
}

/// The blocks: units, tokens and need rule per block, and their totals.
fn blocks_table(r: &CheckReport) -> Table {
    let mut t = Table::new(&["block", "units", "tokens", "need"]);
    for b in &r.blocks {
        t.row(vec![
            b.block.clone(),
            b.units.to_string(),
            thousands(b.tokens),
            b.need.clone().unwrap_or_else(|| "—".into()),
        ]);
    }
    t.row(vec![
        "total".into(),
        r.units.map(|u| u.to_string()).unwrap_or_default(),
        r.total_tokens.map(thousands).unwrap_or_default(),
        String::new(),
    ]);
    t.align(3, crate::report::section::Align::Left)
}

/// Main and stress cases per stratum value, with the main set's share.
fn strata_table(r: &CheckReport) -> Table {
    let mut t = Table::new(&["stratum", "main cases", "share", "stress cases"]);
    for c in &r.strata_counts {
        t.row(vec![
            format!("{}={}", c.column, c.value),
            c.main_cases.to_string(),
            format!(
                "{:.0}%",
                100.0 * c.main_cases as f64 / r.main_cases.max(1) as f64
            ),
            c.stress_cases.to_string(),
        ]);
    }
    t
}

/// The tables `--export` writes for [`CheckReport`].
impl Export for CheckReport {
    const TABLES: &'static [TableSpec] = &[
        t(
            "summary",
            "",
            One,
            "dir:str set:str model:str measured_at:str synthetic:bool baseline_arm:str \
             threshold_drop:f64 stress_threshold_drop:f64 pass_mark:f64 cases:i64 main_cases:i64 \
             stress_cases:i64 clusters:i64 repeats_min:i64=repeats.min repeats_max:i64=repeats.max \
             units:i64 total_tokens:f64 strata:list<str> absent:list<str>",
            "the experiment in one row",
        ),
        t("arms", "arms", Values, "arm:str=@value", "one row per arm"),
        t(
            "blocks",
            "blocks",
            Rows,
            "block:str units:i64 tokens:f64 need:str",
            "one row per prompt block",
        ),
        t(
            "strata_counts",
            "strata_counts",
            Rows,
            "column:str value:str main_cases:i64 stress_cases:i64",
            "cases per stratum value",
        ),
        t(
            "tables",
            "tables",
            Rows,
            "table:str file:str rows:i64",
            "one row per table read",
        ),
        WARNINGS,
    ];
}
