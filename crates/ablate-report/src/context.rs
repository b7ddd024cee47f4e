//! [`ContextOutput`] for people: call sizes against the limits, composition by source, the
//! policy replay, and the report's context and composition sections.

use std::fmt::Write;

use crate::analysis::context::ContextOutput;
use crate::export::spec::Shape::{Map, One, Rows};
use crate::export::spec::{Export, TableSpec, WARNINGS, t};
use crate::report::charts::{BLUE, Bar, Chart};
use crate::report::section::{Cell, Page, Section, Table};
use crate::report::text::{num, percent, thousands};

/// Sources by their share of all logged tokens, largest first.
fn sources(r: &ContextOutput) -> Vec<(&String, f64)> {
    let mut parts: Vec<(&String, f64)> = r.composition.iter().map(|(k, v)| (k, *v)).collect();
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    parts
}

fn composition_table(r: &ContextOutput) -> Table {
    let mut t = Table::new(&["source", "share"]);
    for (source, share) in sources(r) {
        t.row(vec![source.into(), Cell::num(Some(share), 3)]);
    }
    t
}

/// The report's sections: the call-size histogram against the limits, and composition by source.
pub fn sections(ctx: &ContextOutput) -> Vec<Section> {
    let n = |x: f64| num(Some(x), 0);
    let mut t = Table::new(&["lo", "hi", "calls"]);
    for b in &ctx.histogram {
        t.row(vec![
            Cell::num(Some(b.lo), 0),
            Cell::num(Some(b.hi), 0),
            Cell::number(Some(b.calls as f64), b.calls.to_string()),
        ]);
    }
    let sizes = Section {
        name: Page::Context,
        title: "Context size per call".into(),
        note: format!(
            "{} calls; hard input limit {}; {:.2}% of calls over it, {:.2}% over the soft limit; utilisation {:.0}%.",
            ctx.calls,
            n(ctx.hard_limit),
            100.0 * ctx.overflow_rate,
            100.0 * ctx.soft_crossing_rate,
            100.0 * ctx.utilisation
        ),
        chart: Chart::Histogram {
            title: "Call sizes".into(),
            x_desc: "tokens per call".into(),
            bins: ctx
                .histogram
                .iter()
                .map(|b| (b.lo, b.hi, b.calls))
                .collect(),
            marks: vec![
                (ctx.size.p50, format!("p50 {}", n(ctx.size.p50))),
                (ctx.size.p95, format!("p95 {}", n(ctx.size.p95))),
                (ctx.size.p99, format!("p99 {}", n(ctx.size.p99))),
                (ctx.hard_limit, format!("hard limit {}", n(ctx.hard_limit))),
            ],
        },
        table: t,
    };
    let composition = Section {
        name: Page::Composition,
        title: "Where the context's tokens come from".into(),
        note: "Share of all logged tokens by source.".into(),
        chart: Chart::Bars {
            title: "Composition by source".into(),
            x_desc: "share of tokens".into(),
            bars: sources(ctx)
                .into_iter()
                .map(|(s, v)| Bar {
                    label: s.clone(),
                    value: v,
                    interval: None,
                    color: BLUE,
                })
                .collect(),
            marks: Vec::new(),
        },
        table: composition_table(ctx),
    };
    vec![sizes, composition]
}

/// Renders the context-size analysis for a terminal.
pub fn human(r: &ContextOutput) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} calls · size mean {} · p50 {} · p95 {} · p99 {} · max {} tokens",
        thousands(r.calls as f64),
        thousands(r.size.mean),
        thousands(r.size.p50),
        thousands(r.size.p95),
        thousands(r.size.p99),
        thousands(r.size.max)
    );
    let _ = writeln!(
        s,
        "hard input limit {}{} · utilisation {:.0}% · over the hard limit {} · over the soft limit {}",
        thousands(r.hard_limit),
        if r.hard_limit_varies {
            " (median; varies by call)"
        } else {
            ""
        },
        100.0 * r.utilisation,
        percent(Some(r.overflow_rate), 2),
        percent(Some(r.soft_crossing_rate), 2)
    );
    if let Some(g) = r.growth_per_step {
        let _ = writeln!(s, "growth: {} tokens per agent step", thousands(g));
    }
    let _ = writeln!(s);
    s.push_str(&composition_table(r).text());
    if let Some(p) = &r.policy {
        let rest = match (p.admitted_mean, p.saving_mean) {
            (Some(a), Some(saving)) => format!(
                "the rest admit {} tokens on average, saving {}",
                thousands(a),
                thousands(saving)
            ),
            _ => "no call fits".into(),
        };
        let _ = writeln!(
            s,
            "\npolicy replay over {} calls: {} CONTEXT_BUDGET_EXCEEDED (mandatory items alone over the limit); {rest}",
            thousands(p.calls as f64),
            thousands(p.overflow_count as f64),
        );
        let mut t = Table::new(&["evicted from", "tokens per call"]);
        for (source, tokens) in &p.evicted_by_source {
            t.row(vec![source.clone(), thousands(*tokens)]);
        }
        s.push_str(&t.text());
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// The tables `--export` writes for [`ContextOutput`].
impl Export for ContextOutput {
    const TABLES: &'static [TableSpec] = &[
        t(
            "summary",
            "",
            One,
            "calls:i64 size_mean:f64=size.mean size_p50:f64=size.p50 size_p95:f64=size.p95 \
             size_p99:f64=size.p99 size_max:f64=size.max hard_limit:f64 hard_limit_varies:bool \
             utilisation:f64 overflow_rate:f64 soft_crossing_rate:f64 growth_per_step:f64 \
             percentile_error:f64 policy_calls:i64=policy.calls \
             policy_overflow_count:i64=policy.overflow_count \
             policy_admitted_mean:f64=policy.admitted_mean \
             policy_saving_mean:f64=policy.saving_mean",
            "sizes against the hard limit, and the policy replay",
        ),
        t(
            "composition",
            "composition",
            Map,
            "source:str=@key share:f64=@value",
            "share of all tokens by source",
        ),
        t(
            "histogram",
            "histogram",
            Rows,
            "lo:f64 hi:f64 calls:i64",
            "call sizes",
        ),
        t(
            "policy_evicted",
            "policy.evicted_by_source",
            Map,
            "source:str=@key tokens_mean:f64=@value",
            "mean tokens the replayed policy evicts per call, by source",
        ),
        WARNINGS,
    ];
}
