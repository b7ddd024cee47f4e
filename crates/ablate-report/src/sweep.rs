//! [`SweepOutput`] for people: the seed's table (arm · tokens · score · drop with its CI ·
//! verdict) with lost cases and churn, the churn floor under it, and the report's drops and churn
//! sections.

use std::fmt::Write;

use crate::analysis::sweep::SweepArm;
use crate::analysis::sweep::SweepOutput;
use crate::export::spec::Shape::{Map, One, Rows};
use crate::export::spec::{Export, TableSpec, WARNINGS, t};
use crate::report::charts::{Bar, Chart, ForestRow, GREY, verdict_color};
use crate::report::section::{Align, Cell, Page, Section, Table};
use crate::report::text::{num, percent_level, thousands};
use ablate_core::data::manifest::Guarantee;

/// The drops table: one row per arm.
fn drops_table(r: &SweepOutput) -> Table {
    let mut t = Table::new(&[
        "arm",
        "tokens_removed",
        "score",
        "drop",
        "ci_low",
        "ci_high",
        "ci_family_low",
        "ci_family_high",
        "p_holm",
        "verdict",
        "confidence",
        "lost_cases",
        "churn",
    ])
    .needs_first(&[
        "arm",
        "drop",
        "ci_family_low",
        "ci_family_high",
        "verdict",
        "confidence",
        "lost_cases",
        "churn",
        "tokens_removed",
        "score",
        "ci_low",
        "ci_high",
        "p_holm",
    ])
    .align(9, Align::Left)
    .align(10, Align::Left);
    for a in &r.arms {
        t.row(vec![
            a.arm.as_str().into(),
            Cell::num(a.tokens_removed, 0),
            Cell::num(Some(a.score), 3),
            Cell::num(Some(a.drop), 4),
            Cell::num(a.ci.map(|i| i.low), 4),
            Cell::num(a.ci.map(|i| i.high), 4),
            Cell::num(a.ci_family.map(|i| i.low), 4),
            Cell::num(a.ci_family.map(|i| i.high), 4),
            Cell::pval(a.p_holm),
            a.verdict.as_str().into(),
            a.confidence.as_str().into(),
            Cell::count(a.lost_cases),
            Cell::count_opt(a.churn),
        ]);
    }
    t
}

/// Whether each arm's own interval decides (`--per-arm`), rather than the family's.
fn per_arm(s: &SweepOutput) -> bool {
    s.family.procedure == "per-arm"
}

/// The report's sections: drop per arm with its interval (a forest plot centred on the threshold,
/// largest drop first; arms in `flipped` are marked), and churn per arm.
///
/// With `comparison` (no arm removes units: model or prompt versions) the words are the
/// decision's: worse and not worse than the baseline, instead of needed and removable.
pub fn sections(s: &SweepOutput, flipped: &[String], comparison: bool) -> Vec<Section> {
    let (arms, labels) = arms_by_block(s);
    let mut out = vec![Section {
        name: Page::Drops,
        title: "Drop per arm, with its confidence interval".into(),
        note: format!(
            "Paired drop (baseline − arm) on {} main-set cases with {}, {} {}. The axis is centred on the threshold agreed before the run ({}, red): {} Arms far beyond the threshold sit at the edge with their drop (▶). ⚑ marks a verdict that flips under production weights.",
            s.cases,
            if per_arm(s) {
                format!(
                    "each arm's own {} interval",
                    percent_level(s.confidence_level)
                )
            } else {
                "family-wise intervals (the ones that decide; the table also gives each arm's own)"
                    .into()
            },
            if comparison {
                "largest first."
            } else {
                "grouped by the block of the units removed ([block] starts a group), largest first."
            },
            s.family.note,
            crate::text::float_text(s.threshold_drop),
            if comparison {
                "dark orange is confidently worse than the baseline by more than the threshold, light orange worse but not settled, dark blue confidently not worse (within the threshold), light blue not worse but not settled."
            } else {
                "dark orange is confidently needed, light orange needed but not settled, dark blue confidently removable, light blue removable but not settled."
            }
        ),
        chart: Chart::Forest {
            title: "Drop per arm against the threshold".into(),
            x_desc: "drop in score (baseline − arm)".into(),
            rows: arms
                .iter()
                .zip(labels)
                .map(|(arm, label)| ForestRow {
                    label,
                    value: arm.drop,
                    // The interval that decides (each arm's own under --per-arm).
                    interval: arm.ci_family.map(|i| (i.low, i.high)),
                    color: verdict_color(arm.verdict, arm.confidence),
                    flag: flipped.contains(&arm.arm).then(|| "⚑".to_string()),
                    second: None,
                })
                .collect(),
            threshold: s.threshold_drop,
            sides: None,
            comparison,
        },
        table: drops_table(s).comparison(comparison),
    }];
    out.extend(churn_section(s));
    out
}

/// The arms of the drops chart, top to bottom (see `arms_by_block`): the order every per-arm
/// chart follows.
pub fn chart_order(s: &SweepOutput) -> Vec<String> {
    arms_by_block(s).0.iter().map(|a| a.arm.clone()).collect()
}

/// `items` in the drops chart's `order` (by their arm name); items not in it follow, as given.
pub fn in_order<'a, T>(
    items: &'a [T],
    arm: impl Fn(&T) -> &String,
    order: &[String],
) -> Vec<&'a T> {
    let rank = |t: &T| {
        order
            .iter()
            .position(|o| o == arm(t))
            .unwrap_or(order.len())
    };
    let mut out: Vec<&T> = items.iter().collect();
    out.sort_by_key(|t| rank(t));
    out
}

/// The arms but the baseline grouped by block (the block with the largest drop first; arms
/// without one last), largest drop first within each; and their chart labels, "[block] arm" on
/// the first arm of each group.
fn arms_by_block(s: &SweepOutput) -> (Vec<&SweepArm>, Vec<String>) {
    let mut arms: Vec<&SweepArm> = s.arms.iter().filter(|a| a.arm != s.baseline_arm).collect();
    let top = |block: &Option<String>| {
        arms.iter()
            .filter(|a| &a.block == block)
            .map(|a| a.drop)
            .fold(f64::NEG_INFINITY, f64::max)
    };
    let mut order: Vec<(Option<String>, f64)> = Vec::new();
    for a in &arms {
        if !order.iter().any(|(b, _)| *b == a.block) {
            order.push((a.block.clone(), top(&a.block)));
        }
    }
    order.sort_by(|x, y| x.0.is_none().cmp(&y.0.is_none()).then(y.1.total_cmp(&x.1)));
    let rank = |b: &Option<String>| order.iter().position(|(o, _)| o == b).unwrap_or(0);
    arms.sort_by(|a, b| {
        rank(&a.block)
            .cmp(&rank(&b.block))
            .then(b.drop.total_cmp(&a.drop))
    });
    let mut previous: Option<&Option<String>> = None;
    let labels: Vec<String> = arms
        .iter()
        .map(|a| {
            let first = previous != Some(&a.block);
            previous = Some(&a.block);
            match (&a.block, first) {
                (Some(b), true) => format!("[{b}] {}", a.arm),
                _ => a.arm.clone(),
            }
        })
        .collect();
    (arms, labels)
}

/// The churn chart and table, when some arm has churn.
fn churn_section(s: &SweepOutput) -> Option<Section> {
    let mut t = Table::new(&["arm", "churn"]);
    let mut bars = Vec::new();
    for arm in &s.arms {
        if let Some(c) = arm.churn {
            t.row(vec![arm.arm.as_str().into(), Cell::count(c)]);
            bars.push(Bar {
                label: arm.arm.clone(),
                value: c as f64,
                interval: None,
                color: GREY,
            });
        }
    }
    (!bars.is_empty()).then(|| Section {
        name: Page::Churn,
        title: "Churn per arm: cases whose pass/fail changes between repeats".into(),
        note: s.churn_baseline.map_or(String::new(), |c| {
            format!("The baseline's churn ({c} cases) is the noise floor of lost cases.")
        }),
        chart: Chart::Bars {
            title: "Churn per arm".into(),
            x_desc: "cases".into(),
            bars,
            marks: s
                .churn_baseline
                .map(|c| vec![(c as f64, format!("baseline churn {c}"))])
                .unwrap_or_default(),
        },
        table: t,
    })
}

/// Renders the sweep for a terminal.
pub fn human(r: &SweepOutput) -> String {
    let mut s = String::new();
    // The intervals the arms actually carry, in words.
    let methods: std::collections::BTreeSet<&str> = r
        .arms
        .iter()
        .filter_map(|a| a.ci)
        .map(|i| i.method.as_str())
        .collect();
    // Under the normal approximation the t interval is the one interval; under any
    // distribution, with clusters, the wider of it and the effective-sample score interval.
    let normal = r.family.guarantee == Guarantee::Normal;
    let clustered = r.clusters.is_some();
    let mut ci: Vec<String> = methods
        .iter()
        .map(|m| match *m {
            "bootstrap-percentile" => {
                format!("bootstrap, {} resamples", thousands(r.bootstrap as f64))
            }
            "score" | "t" if clustered && !normal => {
                "the wider of a clustered t and an effective-sample score interval".to_string()
            }
            "score" => "score interval".to_string(),
            "t" if clustered => "clustered t".to_string(),
            "t" => "t".to_string(),
            "exact-bound" => "exact bound where nothing varies".to_string(),
            "normal" => "normal approximation".to_string(),
            other => other.to_string(),
        })
        .collect();
    ci.dedup();
    let ci = ci.join("; ");
    // No arm with an interval (one case, one cluster): said, not an empty "()".
    let ci = if ci.is_empty() {
        "none defined".to_string()
    } else {
        ci
    };
    let _ = writeln!(
        s,
        "{} · {} cases{} · {} repeat{} · threshold_drop {} · {} CI ({ci})",
        r.set,
        r.cases,
        r.clusters
            .map(|c| format!(" in {c} clusters"))
            .unwrap_or_default(),
        r.repeats,
        if r.repeats == 1 { "" } else { "s" },
        crate::text::float_text(r.threshold_drop),
        percent_level(r.confidence_level)
    );
    let _ = writeln!(
        s,
        "baseline \"{}\" scores {:.3} (se {})\n",
        r.baseline_arm,
        r.baseline.score,
        num(r.baseline.se, 3)
    );
    s.push_str(&drops_table(r).text());
    let _ = writeln!(s);
    match r.churn_baseline {
        Some(c) => {
            let _ = writeln!(
                s,
                "churn floor: {c} cases change pass/fail between repeats of the baseline; an arm's lost cases at or below that are indistinguishable from noise."
            );
        }
        None => {
            let _ = writeln!(
                s,
                "churn floor: unknown (one repeat per case); run repeats to measure it."
            );
        }
    }
    let _ = writeln!(
        s,
        "verdict: needed when drop ≥ {}; confident when the whole {} is on the verdict's side (a confident removable is a non-inferiority result) and the arm has at least {} {}.\nfamily: {}.",
        crate::text::float_text(r.threshold_drop),
        if per_arm(r) {
            format!("{} CI", percent_level(r.confidence_level))
        } else {
            "family interval (ci_family_low, ci_family_high)".to_string()
        },
        r.min_units,
        if r.clusters.is_some() {
            "clusters"
        } else {
            "cases"
        },
        r.family.note
    );
    if let Some(m) = r.family.min_certifiable_threshold {
        let _ = writeln!(
            s,
            "certifiable: with these cases, this family and this guarantee, an arm of typical spread can be shown removable only above a threshold of about {}{}; one that varies less, lower.",
            num(Some(m), 4),
            crate::report::decision::times_threshold(m, r.threshold_drop)
        );
    }
    for a in r.arms.iter().filter(|a| a.missing_cases > 0) {
        let _ = writeln!(
            s,
            "note: \"{}\" is missing {} cases; they are left out of its pairs.",
            a.arm, a.missing_cases
        );
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// The tables `--export` writes for [`SweepOutput`].
impl Export for SweepOutput {
    const TABLES: &'static [TableSpec] = &[
        t(
            "summary",
            "",
            One,
            "set:str baseline_arm:str threshold_drop:f64 cases:i64 repeats:i64 churn_baseline:i64 \
             clusters:i64 confidence_level:f64 bootstrap:i64 seed:i64 min_units:i64 \
             family_size:i64=family.size family_level_per_arm:f64=family.level_per_arm \
             family_procedure:str=family.procedure family_guarantee:str=family.guarantee \
             family_min_certifiable_threshold:f64=family.min_certifiable_threshold \
             family_note:str=family.note \
             baseline_score:f64=baseline.score baseline_se:f64=baseline.se",
            "the baseline and the run's settings",
        ),
        t(
            "arms",
            "arms",
            Rows,
            "arm:str removed:list<str> block:str score:f64 drop:f64 se:f64 ci_low:f64 ci_high:f64 \
             ci_level:f64 ci_method:str ci_family_low:f64 ci_family_high:f64 ci_family_level:f64 \
             ci_family_method:str units:i64 rho:f64 p_holm:f64 \
             mcnemar_p:f64 verdict:str confidence:str in_family:bool confidence_any_distribution:str \
             tokens_removed:f64 lost_cases:i64 \
             gained_cases:i64 churn:i64 missing_cases:i64 n:i64",
            "one row per arm: the paired drop against the baseline, its CI and verdict",
        ),
        t(
            "lost_by_slice",
            "arms[].lost_by_slice",
            Map,
            "arm:str=^arm slice:str=@key lost_cases:i64=@value",
            "cases each arm loses, per slice",
        ),
        WARNINGS,
    ];
}
