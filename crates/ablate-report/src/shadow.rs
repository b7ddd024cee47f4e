//! [`ShadowOutput`] for people: change above the replay noise floor, overall and per stratum,
//! tokens and score, and the report's shadow section.

use std::fmt::Write;

use crate::analysis::shadow::ShadowOutput;
use crate::export::spec::Shape::{One, Rows};
use crate::export::spec::{Export, TableSpec, WARNINGS, t};
use crate::report::charts::{BLUE, Bar, Chart, ORANGE};
use crate::report::section::{Cell, Page, Section, Table};
use crate::report::text::{num, percent, thousands};

/// One row per stratum, with the whole traffic first when `with_total`.
fn strata_table(sh: &ShadowOutput, with_total: bool) -> Table {
    let mut t = Table::new(&[
        "stratum",
        "requests",
        "changed_rate",
        "noise_rate",
        "excess_rate",
        "se",
        "ci_low",
        "ci_high",
        "p_holm",
        "flagged",
    ]);
    if with_total {
        t.row(vec![
            "all requests".into(),
            Cell::number(Some(sh.requests as f64), sh.requests.to_string()),
            Cell::num(Some(sh.changed_rate), 4),
            Cell::num(sh.noise_rate, 4),
            Cell::num(sh.excess_rate, 4),
            Cell::num(sh.se, 4),
            Cell::num(sh.ci.map(|i| i.low), 4),
            Cell::num(sh.ci.map(|i| i.high), 4),
            Cell::pval(None),
            // No flag for the whole traffic: a null in the CSV (the column stays boolean).
            Cell::flag(None, ""),
        ]);
    }
    for st in &sh.by_stratum {
        t.row(vec![
            st.stratum.as_str().into(),
            Cell::number(Some(st.requests as f64), st.requests.to_string()),
            Cell::num(Some(st.changed_rate), 4),
            Cell::num(st.noise_rate, 4),
            Cell::num(st.excess_rate, 4),
            Cell::num(st.se, 4),
            Cell::num(st.ci.map(|i| i.low), 4),
            Cell::num(st.ci.map(|i| i.high), 4),
            Cell::pval(st.p_holm),
            Cell::flag(Some(st.flagged), if st.flagged { "yes" } else { "" }),
        ]);
    }
    t
}

/// The report's section: excess change rate (candidate − replay), overall and per stratum.
pub fn sections(sh: &ShadowOutput) -> Vec<Section> {
    let overall = sh.excess_rate.map(|e| Bar {
        label: "all requests".into(),
        value: e,
        interval: sh.ci.map(|i| i.low).zip(sh.ci.map(|i| i.high)),
        color: BLUE,
    });
    let strata = sh.by_stratum.iter().filter_map(|s| {
        Some(Bar {
            label: s.stratum.clone(),
            value: s.excess_rate?,
            interval: s.ci.map(|i| i.low).zip(s.ci.map(|i| i.high)),
            color: if s.flagged { ORANGE } else { BLUE },
        })
    });
    vec![Section {
        name: Page::Shadow,
        title: "Shadow traffic: change above the noise floor".into(),
        note: format!(
            "{} requests; the candidate changed {:.2}% of answers, a second production run {}. Orange strata changed beyond noise (Holm-adjusted).",
            sh.requests,
            100.0 * sh.changed_rate,
            sh.noise_rate
                .map_or("(no replay: noise unknown)".into(), |v| format!(
                    "{:.2}%",
                    100.0 * v
                ))
        ),
        chart: Chart::Bars {
            title: "Excess change rate (candidate − replay)".into(),
            x_desc: "excess change rate".into(),
            bars: overall.into_iter().chain(strata).collect(),
            marks: vec![(0.0, "no excess".into())],
        },
        table: strata_table(sh, true),
    }]
}

/// Renders the shadow analysis for a terminal.
pub fn human(r: &ShadowOutput) -> String {
    let mut s = String::new();
    // The variants a request needs: production and candidate, and replay when the log has it.
    let variants = if r.noise_rate.is_some() {
        "production, replay and candidate"
    } else {
        "production and candidate (the log has no replay)"
    };
    let _ = writeln!(
        s,
        "{} requests with {variants}",
        thousands(r.requests as f64)
    );
    let _ = writeln!(
        s,
        "candidate changed the answer on {} of requests; replay (production against itself) on {}",
        percent(Some(r.changed_rate), 2),
        percent(r.noise_rate, 2)
    );
    if let Some(e) = r.excess_rate {
        let _ = writeln!(
            s,
            "excess change above the noise floor: {} (se {}, {} CI [{}, {}])",
            percent(Some(e), 2),
            percent(r.se, 2),
            crate::report::text::percent_level(r.confidence_level),
            percent(r.ci.map(|i| i.low), 2),
            percent(r.ci.map(|i| i.high), 2)
        );
        if r.se_method != "independent requests" {
            let _ = writeln!(s, "standard errors: {}", r.se_method);
        }
    }
    if !r.by_stratum.is_empty() {
        let _ = writeln!(s);
        s.push_str(&strata_table(r, false).text());
    }
    if let (Some(p), Some(c)) = (&r.tokens.production, &r.tokens.candidate) {
        let _ = writeln!(s);
        let mut t = Table::new(&["tokens", "mean", "p50", "p95", "p99"]);
        for (name, v) in [("production", p), ("candidate", c)] {
            t.row(vec![
                name.into(),
                thousands(v.mean),
                thousands(v.p50),
                thousands(v.p95),
                thousands(v.p99),
            ]);
        }
        s.push_str(&t.text());
        let _ = writeln!(
            s,
            "saving: {} tokens per request",
            r.tokens.saving_mean.map_or("—".into(), thousands)
        );
    }
    if let Some(d) = r.score_delta {
        let _ = writeln!(
            s,
            "score delta (candidate − production): {}",
            num(Some(d), 4)
        );
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// The tables `--export` writes for [`ShadowOutput`].
impl Export for ShadowOutput {
    const TABLES: &'static [TableSpec] = &[
        t(
            "summary",
            "",
            One,
            "requests:i64 changed_rate:f64 noise_rate:f64 excess_rate:f64 se:f64 ci_low:f64 \
             ci_high:f64 ci_level:f64 ci_method:str confidence_level:f64 se_method:str score_delta:f64 incomplete_requests:i64 \
             tokens_production_mean:f64=tokens.production.mean \
             tokens_production_p50:f64=tokens.production.p50 \
             tokens_production_p95:f64=tokens.production.p95 \
             tokens_production_p99:f64=tokens.production.p99 \
             tokens_candidate_mean:f64=tokens.candidate.mean \
             tokens_candidate_p50:f64=tokens.candidate.p50 \
             tokens_candidate_p95:f64=tokens.candidate.p95 \
             tokens_candidate_p99:f64=tokens.candidate.p99 \
             tokens_saving_mean:f64=tokens.saving_mean \
             percentile_error:f64=tokens.percentile_error",
            "changed answers above the replay noise floor, and tokens",
        ),
        t(
            "by_stratum",
            "by_stratum",
            Rows,
            "stratum:str requests:i64 changed_rate:f64 noise_rate:f64 excess_rate:f64 se:f64 \
             ci_low:f64 ci_high:f64 ci_level:f64 ci_method:str p_holm:f64 flagged:bool",
            "one row per stratum (with --by)",
        ),
        WARNINGS,
    ];
}
