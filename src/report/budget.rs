//! Human rendering of the context-budget analyses: [`NeedOutput`], [`CurveOutput`] and
//! [`SelectorOutput`].

use std::fmt::Write;

use crate::analysis::curve::CurveOutput;
use crate::analysis::need::NeedOutput;
use crate::analysis::selector::SelectorOutput;
use crate::report::text::{Align, TextTable, thousands};
use crate::report::text::{fixed, num, signed};

fn percent(x: Option<f64>) -> String {
    x.map_or("—".into(), |v| format!("{:.0}%", 100.0 * v))
}

/// Renders the needed context fraction for a terminal.
pub fn human_need(r: &NeedOutput) -> String {
    let mut s = String::new();
    let mut t =
        TextTable::new(&["block", "rule", "needed", "sent", "needed share"]).align(1, Align::Left);
    for (block, b) in &r.by_block {
        t.row(vec![
            block.clone(),
            b.rule.clone(),
            thousands(b.needed_tokens_mean),
            thousands(b.total_tokens_mean),
            percent(
                (b.total_tokens_mean > 0.0).then(|| b.needed_tokens_mean / b.total_tokens_mean),
            ),
        ]);
    }
    t.row(vec![
        "total".into(),
        String::new(),
        thousands(r.needed_tokens_mean),
        thousands(r.total_tokens_mean),
        percent(Some(r.value)),
    ]);
    s.push_str(&t.render());
    let _ = writeln!(
        s,
        "\n{} tokens of the {} sent per request are needed: {:.0}% (over {} main-set cases){}.",
        thousands(r.needed_tokens_mean),
        thousands(r.total_tokens_mean),
        100.0 * r.value,
        r.cases,
        r.value_production
            .map(|v| format!("; {:.0}% weighted to production traffic", 100.0 * v))
            .unwrap_or_default()
    );
    if r.oracle {
        let _ = writeln!(
            s,
            "This is an oracle figure ({}): an upper bound on what any deployable selector can save, not a plan.",
            r.oracle_note.as_deref().unwrap_or_default()
        );
    }
    if !r.removable_units.is_empty() {
        let _ = writeln!(
            s,
            "units judged removable by a measured arm: {}",
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

/// Renders the budget curves for a terminal.
pub fn human_curve(r: &CurveOutput) -> String {
    let mut s = String::new();
    for c in &r.selectors {
        let _ = writeln!(s, "selector {}:", c.selector);
        let mut t = TextTable::new(&["budget", "tokens", "score", "retention", "CI"]);
        for p in &c.points {
            t.row(vec![
                format!("{:.2}", p.budget_ratio),
                p.tokens.map_or("—".into(), thousands),
                format!("{:.3}", p.score),
                p.retention
                    .map_or("—".into(), |r| format!("{:.1}%", 100.0 * r)),
                format!(
                    "[{}, {}]",
                    num(p.ci_low.map(|x| 100.0 * x), 1),
                    num(p.ci_high.map(|x| 100.0 * x), 1)
                ),
            ]);
        }
        s.push_str(&t.render());
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
                    "reaches {target} retention at budget {b:.2}, but no budget below full clears it confidently (CI lower end)\n"
                );
            }
            (Some(b), Some(bc)) => {
                let _ = writeln!(
                    s,
                    "reaches {target} retention at budget {b:.2}; confidently (CI lower end) at {bc:.2}\n"
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
            "cost with {} at budget {:.2}: ${} a day instead of ${} — saves ${} a day, ${} a month ({:.0}%)",
            c.selector,
            c.budget_ratio,
            thousands(c.daily_at_min_budget),
            thousands(c.daily_full),
            thousands(c.savings_daily),
            thousands(c.savings_monthly),
            c.savings_percent
        );
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// Renders the selector replay for a terminal.
pub fn human_selector(r: &SelectorOutput) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} main-set cases · passages {} tokens a case · oracle saving {} tokens ({:.0}%)\n",
        r.cases,
        thousands(r.full_tokens_mean),
        thousands(r.oracle_saving_mean),
        if r.full_tokens_mean > 0.0 {
            100.0 * r.oracle_saving_mean / r.full_tokens_mean
        } else {
            0.0
        }
    );
    let mut t = TextTable::new(&[
        "threshold",
        "kept",
        "saved",
        "recovery",
        "gold missed",
        "measured drop",
    ]);
    for p in &r.points {
        t.row(vec![
            format!("{:.2}", p.threshold),
            thousands(p.kept_tokens_mean),
            thousands(p.saving_mean),
            percent(p.recovery),
            p.gold_miss_rate
                .map_or("—".into(), |g| format!("{:.1}%", 100.0 * g)),
            p.measured_drop.map_or(String::new(), |d| signed(Some(d))),
        ]);
    }
    s.push_str(&t.render());
    for p in r.points.iter().filter(|p| p.measured_drop.is_some()) {
        let _ = writeln!(
            s,
            "threshold {:.2} recovers {} of the oracle saving, drops the gold passage on {} of cases, and measured a drop of {} ({})",
            p.threshold,
            percent(p.recovery),
            p.gold_miss_rate
                .map_or("—".into(), |g| format!("{:.1}%", 100.0 * g)),
            p.measured_drop.map_or("—".into(), |d| fixed(d, 4)),
            p.measured_arm.as_deref().unwrap_or_default()
        );
    }
    s
}
