//! Human rendering of [`InteractionsOutput`] and [`PlanOutput`].

use std::fmt::Write;

use crate::analysis::interactions::{Effect, InteractionsOutput};
use crate::analysis::plan::PlanOutput;
use crate::report::text::{Align, TextTable, num, thousands};

fn signed(v: f64) -> String {
    crate::report::text::signed(Some(v))
}

fn by_slice(m: &std::collections::BTreeMap<String, usize>) -> String {
    let mut v: Vec<_> = m.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn effects_table(title: &str, effects: &[Effect]) -> String {
    let mut t = TextTable::new(&[title, "effect of keeping", "se"]);
    for e in effects {
        t.row(vec![e.term.clone(), signed(e.effect), num(e.se, 4)]);
    }
    t.render()
}

/// Renders the interaction analysis for a terminal.
pub fn human(r: &InteractionsOutput) -> String {
    let mut s = String::new();
    if r.composed.is_empty() {
        let _ = writeln!(
            s,
            "No composed arm: measure a cut of several units as its own arm, next to arms for its parts, to see whether the parts add up."
        );
    } else {
        let _ = writeln!(
            s,
            "Composed cuts: the sum of the parts' drops (predicted) against the cut measured as one arm.\n"
        );
        let mut t = TextTable::new(&[
            "arm",
            "parts",
            "predicted",
            "measured",
            "interaction",
            "CI",
            "verdict",
            "lost",
            "only jointly",
        ])
        .align(6, Align::Left);
        for c in &r.composed {
            t.row(vec![
                c.arm.clone(),
                c.components.len().to_string(),
                format!("{:.3}", c.predicted_score),
                format!("{:.3}", c.measured_score),
                signed(c.interaction),
                format!("[{}, {}]", num(c.ci_low, 4), num(c.ci_high, 4)),
                c.interaction_verdict.as_str().into(),
                c.lost_cases.to_string(),
                c.lost_only_jointly.to_string(),
            ]);
        }
        s.push_str(&t.render());
        for c in r
            .composed
            .iter()
            .filter(|c| c.interaction_verdict.as_str() != "additive")
        {
            let _ = writeln!(
                s,
                "\n{}: {} ({})",
                c.arm,
                c.interaction_verdict.as_str(),
                c.components.join(" + ")
            );
            let _ = writeln!(
                s,
                "  predicted score {:.3} (drop {}), measured {:.3} (drop {})",
                c.predicted_score,
                signed(c.predicted_drop),
                c.measured_score,
                signed(c.measured_drop)
            );
            if let Some(where_) = &c.concentration {
                let _ = writeln!(s, "  {where_}");
            }
            if c.lost_only_jointly > 0 {
                let _ = writeln!(
                    s,
                    "  {} lost only when the parts are cut together: {}",
                    c.lost_only_jointly,
                    by_slice(&c.lost_only_jointly_by_slice)
                );
            }
        }
    }
    if !r.pairwise.is_empty() {
        let _ = writeln!(
            s,
            "\nPairwise interactions (drop of the pair − the two single drops):"
        );
        let mut t = TextTable::new(&["a", "b", "interaction", "se"]).align(1, Align::Left);
        for p in &r.pairwise {
            t.row(vec![
                p.a.clone(),
                p.b.clone(),
                signed(p.interaction),
                num(p.se, 4),
            ]);
        }
        s.push_str(&t.render());
    }
    if let Some(sh) = &r.shapley {
        let _ = writeln!(
            s,
            "\nShapley values over the full factorial of {} units ({} cases): v(all) {:.3}, v(none) {:.3}",
            sh.units.len(),
            sh.cases,
            sh.v_all,
            sh.v_none
        );
        let mut t = TextTable::new(&["unit", "φ (score contributed)"]);
        for (u, v) in &sh.values {
            t.row(vec![u.clone(), signed(*v)]);
        }
        s.push_str(&t.render());
        let mut t = TextTable::new(&["a", "b", "interaction index"]).align(1, Align::Left);
        for p in &sh.interactions {
            t.row(vec![p.a.clone(), p.b.clone(), signed(p.index)]);
        }
        s.push_str(&t.render());
        let _ = writeln!(
            s,
            "(negative index: the two units substitute for each other — redundant copies of something)"
        );
    }
    for d in &r.designs {
        let _ = writeln!(
            s,
            "\nDesign \"{}\": {} runs, {} units, {} cases",
            d.design,
            d.runs,
            d.units.len(),
            d.cases
        );
        s.push_str(&effects_table("main effect", &d.main_effects));
        if !d.two_factor.is_empty() {
            s.push_str(&effects_table("two-factor interaction", &d.two_factor));
        }
        if let Some(n) = &d.note {
            let _ = writeln!(s, "note: {n}");
        }
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// Renders a plan for a terminal.
pub fn human_plan(r: &PlanOutput, written: Option<&str>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} over {} units: {} arms × {} cases × {} repeats = {} calls, {} input tokens{}",
        r.design_label,
        r.units.len(),
        r.n_arms,
        r.cases,
        r.repeats,
        thousands(r.calls as f64),
        thousands(r.tokens),
        r.cost.map(|c| format!(", ${c:.2}")).unwrap_or_default()
    );
    if let Some(f) = &r.fraction {
        let _ = writeln!(
            s,
            "\n{} resolution {} · generators {}",
            f.name,
            roman(f.resolution),
            f.generators.join(", ")
        );
        let _ = writeln!(
            s,
            "defining relation: I = {}",
            f.defining_relation.join(" = ")
        );
        let _ = writeln!(
            s,
            "factors: {}",
            f.factors
                .iter()
                .map(|(l, u)| format!("{l} = {u}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(s, "aliases:");
        for a in &f.aliases {
            let _ = writeln!(s, "  {a}");
        }
    }
    match (r.mde, r.sd) {
        (Some(mde), Some(sd)) => {
            let _ = writeln!(
                s,
                "\npower (sd of paired differences {sd:.4}{}): a paired contrast detects {mde:.4} at 80% power; detecting {} needs {} cases{}",
                r.sd_source
                    .as_ref()
                    .map(|x| format!(", from {x}"))
                    .unwrap_or_default(),
                r.threshold_drop,
                r.cases_needed.map_or("—".into(), |n| thousands(n as f64)),
                r.mde_main_effect
                    .map(|m| format!(
                        "; a main effect of this design detects about {m:.4} (optimistic)"
                    ))
                    .unwrap_or_default()
            );
        }
        _ => {
            let _ = writeln!(
                s,
                "\npower: give --sd S or --pilot DIR to see the detectable drop and the cases needed"
            );
        }
    }
    match written {
        Some(path) => {
            let _ = writeln!(s, "\nwrote the arms table to {path}");
        }
        None => {
            let _ = writeln!(
                s,
                "\narms (write them with --out arms.parquet or arms.csv):"
            );
            let mut t = TextTable::new(&["arm", "removed", "tokens/call"]).align(1, Align::Left);
            for a in &r.arms {
                t.row(vec![
                    a.arm.clone(),
                    a.removed.join(", "),
                    thousands(a.tokens_per_call),
                ]);
            }
            s.push_str(&t.render());
        }
    }
    s
}

fn roman(n: usize) -> String {
    match n {
        3 => "III".into(),
        4 => "IV".into(),
        5 => "V".into(),
        6 => "VI".into(),
        7 => "VII".into(),
        8 => "VIII".into(),
        _ => n.to_string(),
    }
}
