//! Human rendering of the live-traffic analyses: [`ShadowOutput`] and [`ContextOutput`].

use std::fmt::Write;

use crate::analysis::shadow::ShadowOutput;
use crate::report::text::{Align, TextTable, thousands};
use crate::report::text::{num, pval};

fn pct(x: Option<f64>) -> String {
    x.map_or("—".into(), |v| format!("{:.2}%", 100.0 * v))
}

/// Renders the shadow analysis for a terminal.
pub fn human_shadow(r: &ShadowOutput) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} requests with every variant",
        thousands(r.requests as f64)
    );
    let _ = writeln!(
        s,
        "candidate changed the answer on {} of requests; replay (production against itself) on {}",
        pct(Some(r.changed_rate)),
        pct(r.noise_rate)
    );
    if let Some(e) = r.excess_rate {
        let _ = writeln!(
            s,
            "excess change above the noise floor: {} (se {}, {} CI [{}, {}])",
            pct(Some(e)),
            pct(r.se),
            crate::report::text::percent_level(r.confidence_level),
            pct(r.ci_low),
            pct(r.ci_high)
        );
    }
    if !r.by_stratum.is_empty() {
        let _ = writeln!(s);
        let mut t = TextTable::new(&[
            "stratum", "requests", "changed", "noise", "excess", "se", "p_holm", "",
        ])
        .align(7, Align::Left);
        for st in &r.by_stratum {
            t.row(vec![
                st.stratum.clone(),
                thousands(st.requests as f64),
                pct(Some(st.changed_rate)),
                pct(st.noise_rate),
                pct(st.excess_rate),
                pct(st.se),
                pval(st.p_holm),
                if st.flagged {
                    "← changed beyond noise".into()
                } else {
                    String::new()
                },
            ]);
        }
        s.push_str(&t.render());
    }
    if let (Some(p), Some(c)) = (&r.tokens.production, &r.tokens.candidate) {
        let _ = writeln!(s);
        let mut t = TextTable::new(&["tokens", "mean", "p50", "p95", "p99"]);
        for (name, v) in [("production", p), ("candidate", c)] {
            t.row(vec![
                name.into(),
                thousands(v.mean),
                thousands(v.p50),
                thousands(v.p95),
                thousands(v.p99),
            ]);
        }
        s.push_str(&t.render());
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

/// Renders the context-size analysis for a terminal.
pub fn human_context(r: &crate::analysis::context::ContextOutput) -> String {
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
        pct(Some(r.overflow_rate)),
        pct(Some(r.soft_crossing_rate))
    );
    if let Some(g) = r.growth_per_step {
        let _ = writeln!(s, "growth: {} tokens per agent step", thousands(g));
    }
    let _ = writeln!(s);
    let mut t = TextTable::new(&["source", "share of tokens"]);
    let mut parts: Vec<_> = r.composition.iter().collect();
    parts.sort_by(|a, b| b.1.total_cmp(a.1));
    for (source, share) in parts {
        t.row(vec![source.clone(), format!("{:.1}%", 100.0 * share)]);
    }
    s.push_str(&t.render());
    if let Some(p) = &r.policy {
        let _ = writeln!(
            s,
            "\npolicy replay over {} calls: {} CONTEXT_BUDGET_EXCEEDED (mandatory items alone over the limit); the rest admit {} tokens on average, saving {}",
            thousands(p.calls as f64),
            thousands(p.overflow_count as f64),
            thousands(p.admitted_mean),
            thousands(p.saving_mean)
        );
        let mut t = TextTable::new(&["evicted from", "tokens per call"]);
        for (source, tokens) in &p.evicted_by_source {
            t.row(vec![source.clone(), thousands(*tokens)]);
        }
        s.push_str(&t.render());
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}
