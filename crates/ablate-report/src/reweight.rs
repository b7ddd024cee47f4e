//! [`ReweightOutput`] for people: which verdicts flip under production weights and which strata
//! the set under-samples, and the report's production and coverage sections.

use std::fmt::Write;

use crate::analysis::reweight::{Method, ReweightOutput};
use crate::analysis::vocab::{Confidence, Verdict};
use crate::export::spec::Shape::{One, Rows};
use crate::export::spec::{Export, TableSpec, WARNINGS, t};
use crate::report::charts::{BLUE, Bar, Chart, ForestRow, GREY, ORANGE, Point, verdict_color};
use crate::report::section::{Align, Cell, Page, Section, Table};
use crate::report::text::{num, signed};

/// A verdict, or "—" when undefined.
pub(crate) fn verdict(v: Option<Verdict>) -> String {
    v.map_or("—".into(), |v| v.as_str().to_string())
}

fn method(r: &ReweightOutput) -> &'static str {
    match r.method {
        Method::PostStratified => "post-stratified",
        Method::Raked => "raked",
    }
}

/// Drops on the set next to drops in production, one row per arm.
fn production_table(r: &ReweightOutput) -> Table {
    let mut t = Table::new(&[
        "arm",
        "drop_eval",
        "verdict_eval",
        "drop_production",
        "se_production",
        "ci_production_low",
        "ci_production_high",
        "ci_production_family_low",
        "ci_production_family_high",
        "verdict_production",
        "confidence_production",
        "flipped",
        "production_cases_to_settle",
        "production_settleable",
    ])
    .needs_first(&[
        "arm",
        "drop_eval",
        "drop_production",
        "flipped",
        "verdict_production",
        "confidence_production",
        "ci_production_family_low",
        "ci_production_family_high",
        "verdict_eval",
        "se_production",
        "ci_production_low",
        "ci_production_high",
        "production_cases_to_settle",
        "production_settleable",
    ])
    .align(2, Align::Left)
    .align(9, Align::Left)
    .align(10, Align::Left)
    .align(11, Align::Left);
    for a in &r.arms {
        t.row(vec![
            a.arm.as_str().into(),
            Cell::num(Some(a.drop_eval), 4),
            a.verdict_eval.as_str().into(),
            Cell::num(a.drop_production, 4),
            Cell::num(a.se_production, 4),
            Cell::num(a.ci_production.map(|i| i.low), 4),
            Cell::num(a.ci_production.map(|i| i.high), 4),
            Cell::num(a.ci_production_family.map(|i| i.low), 4),
            Cell::num(a.ci_production_family.map(|i| i.high), 4),
            verdict(a.verdict_production).into(),
            a.confidence_production.map_or("—", |c| c.as_str()).into(),
            Cell::flag(
                Some(a.flipped),
                if a.flip_confident {
                    "← flips"
                } else if a.flipped {
                    "(point verdicts only)"
                } else {
                    ""
                },
            ),
            Cell::count_opt(a.production_cases_to_settle.map(|n| n as usize)),
            Cell::yes_no(a.production_settleable),
        ]);
    }
    t
}

/// Eval and production shares, one row per stratum.
fn coverage_table(r: &ReweightOutput) -> Table {
    let mut t = Table::new(&[
        "stratum",
        "eval_cases",
        "eval_share",
        "production_share",
        "ratio",
        "status",
    ])
    .align(5, Align::Left);
    for c in &r.coverage {
        t.row(vec![
            c.label().into(),
            Cell::count(c.eval_cases),
            Cell::num(Some(c.eval_share), 3),
            Cell::num(Some(c.production_share), 3),
            Cell::num(c.ratio, 2),
            c.status.as_str().into(),
        ]);
    }
    t
}

/// The report's sections: the set's drops next to production's, and coverage.
pub fn sections(r: &ReweightOutput, order: &[String]) -> Vec<Section> {
    let arms = crate::report::sweep::in_order(&r.arms, |a| &a.arm, order);
    // One row per arm: the set's drop (a grey ring, without its interval: the drops chart has
    // it) above production's (a dot coloured by its verdict, with the interval that judges it).
    let rows: Vec<ForestRow> = arms
        .into_iter()
        .map(|arm| ForestRow {
            label: arm.arm.clone(),
            value: arm.drop_eval,
            interval: None,
            color: GREY,
            flag: arm.flip_confident.then(|| "⚑".to_string()),
            second: arm
                .drop_production
                .zip(arm.verdict_production)
                .map(|(d, v)| Point {
                    value: d,
                    interval: arm
                        .ci_production_family
                        .map(|i| i.low)
                        .zip(arm.ci_production_family.map(|i| i.high)),
                    color: verdict_color(
                        v,
                        arm.confidence_production
                            .unwrap_or(Confidence::Inconclusive),
                    ),
                }),
        })
        .collect();
    let flips: Vec<&str> = r
        .arms
        .iter()
        .filter(|a| a.flip_confident)
        .map(|a| a.arm.as_str())
        .collect();
    let production = Section {
        name: Page::Production,
        title: "The set's drops next to production's".into(),
        note: format!(
            "One row per arm, in the drops chart's order: the set's drop (grey ring) above the drop {} to production shares by {} (dot), with the interval that judges it (family-wise, as the drops chart's; coloured by the production verdict and its confidence; ⚑: the verdict flips, confidently). {}",
            method(r),
            r.strata.join(" × "),
            if flips.is_empty() {
                "No verdict flips confidently.".to_string()
            } else {
                format!("Verdicts that flip: {}.", flips.join(", "))
            }
        ),
        chart: Chart::Forest {
            title: "Drop on the set vs in production".into(),
            x_desc: "drop".into(),
            rows,
            threshold: r.threshold_drop,
            sides: Some(("set".into(), "production".into())),
            comparison: false,
        },
        table: production_table(r),
    };
    let mut bars = Vec::new();
    for c in &r.coverage {
        let name = c.label();
        bars.push(Bar {
            label: format!("{name} · set"),
            value: c.eval_share,
            interval: None,
            color: BLUE,
        });
        bars.push(Bar {
            label: format!("{name} · production"),
            value: c.production_share,
            interval: None,
            color: ORANGE,
        });
    }
    let coverage = Section {
        name: Page::Coverage,
        title: "Coverage: the set's shares next to production's".into(),
        note: r
            .known_coverage_gap
            .as_ref()
            .map_or("No stratum is under-sampled.".into(), |g| {
                format!("Known coverage gap: {g}.")
            }),
        chart: Chart::Bars {
            title: "Share per stratum".into(),
            x_desc: "share".into(),
            bars,
            marks: Vec::new(),
        },
        table: coverage_table(r),
    };
    vec![production, coverage]
}

/// Renders the reweighting for a terminal.
pub fn human(r: &ReweightOutput) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} to production by {} · {} cases · Kish effective cases {:.0}",
        method(r),
        r.strata.join(" × "),
        r.cases,
        r.effective_cases
    );
    if r.unmeasured_share > 0.0 {
        let _ = writeln!(
            s,
            "warning: {:.1}% of production traffic falls in strata with no eval case and was left out (--allow-unmeasured)",
            100.0 * r.unmeasured_share
        );
    }
    let _ = writeln!(
        s,
        "baseline {:.3} on the set → {} (se {}) in production\n",
        r.baseline.score_eval,
        num(r.baseline.score_production, 3),
        num(r.baseline.se_production, 3)
    );
    let flips: Vec<_> = r.arms.iter().filter(|a| a.flip_confident).collect();
    let point_only = r
        .arms
        .iter()
        .filter(|a| a.flipped && !a.flip_confident)
        .count();
    if flips.is_empty() {
        let _ = writeln!(
            s,
            "No verdict flips confidently under production weights{}.\n",
            if point_only > 0 {
                format!(
                    " ({point_only} point verdict(s) differ, with intervals across the threshold)"
                )
            } else {
                String::new()
            }
        );
    } else {
        let _ = writeln!(
            s,
            "{} verdict(s) flip confidently under production weights:",
            flips.len()
        );
        for a in &flips {
            let _ = writeln!(
                s,
                "  {}: drop {} on the set ({}) → {} in production ({})",
                a.arm,
                signed(Some(a.drop_eval)),
                a.verdict_eval.as_str(),
                signed(a.drop_production),
                verdict(a.verdict_production)
            );
        }
        let _ = writeln!(s);
    }
    s.push_str(&production_table(r).text());
    let _ = writeln!(s);
    s.push_str(&coverage_table(r).text());
    match &r.known_coverage_gap {
        Some(gap) => {
            let _ = writeln!(s, "known coverage gap: {gap}");
        }
        None => {
            let _ = writeln!(
                s,
                "no stratum is under-sampled (production share ≥ 2× eval share)"
            );
        }
    }
    if !r.unweighted_strata.is_empty() {
        let _ = writeln!(
            s,
            "eval strata absent from the mix (weight 0): {}",
            r.unweighted_strata.join("; ")
        );
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// The tables `--export` writes for [`ReweightOutput`].
impl Export for ReweightOutput {
    const TABLES: &'static [TableSpec] = &[
        t(
            "summary",
            "",
            One,
            "strata:list<str> method:str effective_cases:f64 unmeasured_share:f64 threshold_drop:f64 \
             cases:i64 known_coverage_gap:str unweighted_strata:list<str> \
             baseline_score_eval:f64=baseline.score_eval \
             baseline_score_production:f64=baseline.score_production \
             baseline_se_production:f64=baseline.se_production \
             baseline_ci_production_low:f64=baseline.ci_production_low \
             baseline_ci_production_high:f64=baseline.ci_production_high \
             baseline_ci_production_level:f64=baseline.ci_production_level \
             baseline_ci_production_method:str=baseline.ci_production_method",
            "the weighting and the baseline under production weights",
        ),
        t(
            "arms",
            "arms",
            Rows,
            "arm:str drop_eval:f64 drop_production:f64 se_production:f64 ci_production_low:f64 \
             ci_production_high:f64 ci_production_level:f64 ci_production_method:str verdict_eval:str \
             verdict_production:str ci_production_family_low:f64 ci_production_family_high:f64 \
             ci_production_family_level:f64 ci_production_family_method:str confidence_production:str \
             flipped:bool flip_confident:bool production_cases_to_settle:i64 \
             production_settleable:bool",
            "one row per arm: the drop on the set and under production weights",
        ),
        t(
            "coverage",
            "coverage",
            Rows,
            "stratum:str eval_cases:i64 eval_share:f64 production_share:f64 ratio:f64 status:str",
            "one row per stratum (`column=value, …`): set share against production share",
        ),
        WARNINGS,
    ];
}
