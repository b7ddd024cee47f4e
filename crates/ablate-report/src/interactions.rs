//! [`InteractionsOutput`] for people: composed cuts against the sum of their parts, pairwise
//! interactions, Shapley values and design fits, and the report's interactions section.

use std::fmt::Write;

use crate::analysis::interactions::{
    Effect, InteractionVerdict, InteractionsOutput, ShapleyOutput,
};
use crate::export::spec::Shape::{Map, Rows};
use crate::export::spec::{Export, TableSpec, WARNINGS, t};
use crate::report::charts::{Bar, Chart, GREY, ORANGE};
use crate::report::section::{Align, Cell, Page, Section, Table};
use crate::report::text::num;

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
    let mut t = Table::new(&[title, "effect of keeping", "se"]);
    for e in effects {
        t.row(vec![e.term.clone(), signed(e.effect), num(e.se, 4)]);
    }
    t.text()
}

/// Composed cuts, one row per composed arm.
fn composed_table(r: &InteractionsOutput) -> Table {
    let mut t = Table::new(&[
        "arm",
        "components",
        "predicted_drop",
        "measured_drop",
        "interaction",
        "ci_family_low",
        "ci_family_high",
        "interaction_verdict",
        "lost_cases",
        "lost_only_jointly",
        "lost_by_slice",
    ])
    .needs_first(&[
        "arm",
        "predicted_drop",
        "measured_drop",
        "interaction",
        "interaction_verdict",
        "ci_family_low",
        "ci_family_high",
    ])
    .align(1, Align::Left)
    .align(7, Align::Left)
    .align(10, Align::Left);
    for c in &r.composed {
        t.row(vec![
            c.arm.as_str().into(),
            c.components.join(" + ").into(),
            Cell::num(Some(c.predicted_drop), 4),
            Cell::num(Some(c.measured_drop), 4),
            Cell::num(Some(c.interaction), 4),
            Cell::num(c.ci_family.map(|i| i.low), 4),
            Cell::num(c.ci_family.map(|i| i.high), 4),
            c.interaction_verdict.as_str().into(),
            Cell::count(c.lost_cases),
            Cell::count(c.lost_only_jointly),
            c.lost_by_slice
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
                .into(),
        ]);
    }
    t
}

/// The report's section: predicted against measured composed cuts (none without a composed arm).
pub fn sections(i: &InteractionsOutput) -> Vec<Section> {
    if i.composed.is_empty() {
        return Vec::new();
    }
    let mut bars = Vec::new();
    for c in &i.composed {
        bars.push(Bar {
            label: format!("{} · predicted", c.arm),
            value: c.predicted_drop,
            interval: None,
            color: GREY,
        });
        bars.push(Bar {
            label: format!("{} · measured", c.arm),
            value: c.measured_drop,
            interval: None,
            color: ORANGE,
        });
    }
    let notes: Vec<String> = i
        .composed
        .iter()
        .filter(|c| c.interaction_verdict == InteractionVerdict::SuperAdditive)
        .map(|c| {
            format!(
                "{} is super-additive{}",
                c.arm,
                c.concentration
                    .as_ref()
                    .map(|w| format!(": {w}"))
                    .unwrap_or_default()
            )
        })
        .collect();
    vec![Section {
        name: Page::Interactions,
        title: "Composed cuts: the sum of the parts against the measured cut".into(),
        // The bars' colours, in words: on a phone the labels lose their " · predicted" and
        // " · measured" before the arms' names.
        note: format!(
            "Grey bars are the sum of the parts' drops (predicted), orange the cut measured as one arm. {}",
            if notes.is_empty() {
                "Every composed cut is additive.".to_string()
            } else {
                notes.join("; ") + "."
            }
        ),
        chart: Chart::Bars {
            title: "Predicted (sum of parts) vs measured drop".into(),
            x_desc: "drop".into(),
            bars,
            marks: Vec::new(),
        },
        table: composed_table(i),
    }]
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
        // The terminal leaves out the two long text columns and the lost-case counts (about 220
        // columns wide with them); the non-additive cuts below name their parts and their lost
        // cases, and --json and the report's CSV keep every column.
        s.push_str(
            &composed_table(r)
                .without(&[
                    "components",
                    "lost_by_slice",
                    "lost_cases",
                    "lost_only_jointly",
                ])
                .text(),
        );
        let _ = writeln!(
            s,
            "(Each cut's parts and its lost cases, by slice and only jointly: --json, or the report's interactions CSV.)"
        );
        for c in r
            .composed
            .iter()
            .filter(|c| c.interaction_verdict != InteractionVerdict::Additive)
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
        let mut t = Table::new(&["a", "b", "interaction", "se"]).align(1, Align::Left);
        for p in &r.pairwise {
            t.row(vec![
                p.a.clone(),
                p.b.clone(),
                signed(p.interaction),
                num(p.se, 4),
            ]);
        }
        s.push_str(&t.text());
    }
    if let Some(sh) = &r.shapley {
        s.push_str(&shapley_text(sh));
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

/// The Shapley values and interaction indexes, for a terminal.
fn shapley_text(sh: &ShapleyOutput) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nShapley values over the full factorial of {} units ({} cases): v(all) {:.3}, v(none) {:.3}",
        sh.units.len(),
        sh.cases,
        sh.v_all,
        sh.v_none
    );
    let mut t = Table::new(&["unit", "value"]);
    for (u, v) in &sh.values {
        t.row(vec![u.clone(), signed(*v)]);
    }
    s.push_str(&t.text());
    let mut t = Table::new(&["a", "b", "index"]).align(1, Align::Left);
    for p in &sh.interactions {
        t.row(vec![p.a.clone(), p.b.clone(), signed(p.index)]);
    }
    s.push_str(&t.text());
    let _ = writeln!(
        s,
        "(negative index: the two units substitute for each other — redundant copies of something)"
    );
    s
}

/// The tables `--export` writes for [`InteractionsOutput`].
impl Export for InteractionsOutput {
    const TABLES: &'static [TableSpec] = &[
        t(
            "composed",
            "composed",
            Rows,
            "arm:str removed:list<str> components:list<str> predicted_drop:f64 measured_drop:f64 \
             predicted_score:f64 measured_score:f64 interaction:f64 se:f64 ci_low:f64 ci_high:f64 \
             ci_level:f64 ci_method:str ci_family_low:f64 ci_family_high:f64 ci_family_level:f64 \
             ci_family_method:str interaction_verdict:str lost_cases:i64 lost_only_jointly:i64 \
             concentration:str n:i64 explicit_components:bool",
            "one row per composed arm: measured against the sum of its parts",
        ),
        t(
            "composed_lost_by_slice",
            "composed[].lost_by_slice",
            Map,
            "arm:str=^arm slice:str=@key lost_cases:i64=@value",
            "cases each composed arm loses, per slice",
        ),
        t(
            "composed_lost_only_jointly_by_slice",
            "composed[].lost_only_jointly_by_slice",
            Map,
            "arm:str=^arm slice:str=@key lost_cases:i64=@value",
            "cases each composed arm loses that none of its parts loses alone, per slice",
        ),
        t(
            "pairwise",
            "pairwise",
            Rows,
            "a:str b:str arm:str interaction:f64 se:f64",
            "one row per measured pair of units",
        ),
        t(
            "shapley",
            "shapley.values",
            Map,
            "unit:str=@key value:f64=@value",
            "Shapley value per unit (full factorials only)",
        ),
        t(
            "shapley_interactions",
            "shapley.interactions",
            Rows,
            "a:str b:str index:f64",
            "Shapley interaction index per pair",
        ),
        t(
            "design_effects",
            "designs[].main_effects",
            Rows,
            "design:str=^design term:str effect:f64 se:f64",
            "main effects of each designed experiment",
        ),
        t(
            "design_interactions",
            "designs[].two_factor",
            Rows,
            "design:str=^design term:str effect:f64 se:f64",
            "two-factor interactions of each designed experiment",
        ),
        WARNINGS,
    ];
}
