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
        crate::text::float_text(r.threshold_drop),
        crate::text::float_text(r.stress_threshold_drop),
        r.pass_mark
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
    if !r.runs.is_empty() {
        let _ = writeln!(s);
        s.push_str(&runs_table(&r.runs).text());
    }
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

/// The harness runs: arm, revision, model, samples, errors and mean, the outliers marked (in
/// `check`, the report's runs section and `import`'s summary).
pub fn runs_table(runs: &[ablate_core::data::runs::RunRow]) -> Table {
    let mut t = Table::new(&[
        "run",
        "arm",
        "revision",
        "model",
        "samples",
        "errors",
        "mean_score",
        "",
    ]);
    for x in runs {
        t.row(vec![
            crate::report::text::truncate(&x.run, 28),
            x.arm.clone(),
            x.revision.clone().unwrap_or_default(),
            x.model.clone().unwrap_or_default(),
            x.samples.to_string(),
            x.errors.to_string(),
            crate::report::text::num(x.mean_score, 3),
            if x.outlier {
                "← stands out".into()
            } else {
                String::new()
            },
        ]);
    }
    t.align(7, crate::report::section::Align::Left)
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
    let mut t = Table::new(&["stratum", "main_cases", "eval_share", "stress_cases"]);
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

/// The report's runs section, when an arm pools several harness runs or a run stands out: each
/// run's mean score, the outliers in orange.
pub fn sections(r: &CheckReport) -> Vec<crate::report::section::Section> {
    use crate::report::charts::{BLUE, Bar, Chart, ORANGE};
    let mut per_arm: std::collections::BTreeMap<&str, usize> = Default::default();
    for x in &r.runs {
        *per_arm.entry(&x.arm).or_default() += 1;
    }
    if !(r.runs.iter().any(|x| x.outlier) || per_arm.values().any(|&n| n > 1)) {
        return Vec::new();
    }
    let outliers = r.runs.iter().filter(|x| x.outlier).count();
    vec![crate::report::section::Section {
        name: crate::report::section::Page::Runs,
        title: "The runs behind each arm".into(),
        note: format!(
            "Each harness run's mean score; an arm's repeats are its runs. {}",
            if outliers == 0 {
                "No run stands out from its arm's others.".to_string()
            } else {
                format!(
                    "{outliers} run(s) in orange stand out from their arm's others (a run that failed on every sample, or far from the rest): check them before reading the drops."
                )
            }
        ),
        chart: Chart::Bars {
            title: "Mean score by run".into(),
            x_desc: "mean score".into(),
            bars: r
                .runs
                .iter()
                // A run with no scored sample has no mean: no bar (the table shows "—"), not a
                // bar at 0.
                .filter_map(|x| {
                    Some(Bar {
                        label: format!(
                            "{} · {}{}",
                            x.arm,
                            x.revision.as_ref().map_or_else(
                                || crate::report::text::truncate(&x.run, 24),
                                |r| { format!("revision {r}") }
                            ),
                            if x.outlier { " (stands out)" } else { "" }
                        ),
                        value: x.mean_score?,
                        interval: None,
                        color: if x.outlier { ORANGE } else { BLUE },
                    })
                })
                .collect(),
            marks: Vec::new(),
        },
        table: runs_table(&r.runs),
    }]
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
        t(
            "runs",
            "runs",
            Rows,
            "run:str arm:str harness:str file:str revision:str model:str started:str \
             samples:i64 errors:i64 mean_score:f64 outlier:bool",
            "one row per harness run behind the results (imported experiments)",
        ),
        WARNINGS,
    ];
}
