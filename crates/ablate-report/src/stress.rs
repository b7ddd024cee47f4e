//! [`StressOutput`] for people: which cuts clear both the main set and the stress slice, and the
//! report's stress section.

use std::fmt::Write;

use crate::analysis::stress::StressOutput;
use crate::analysis::vocab::{Confidence, Verdict};

/// A confidence as a table cell (— when undefined).
fn confidence(c: Option<Confidence>) -> String {
    c.map_or("—".into(), |c| c.as_str().into())
}
use crate::export::spec::Shape::{One, Rows};
use crate::export::spec::{Export, TableSpec, WARNINGS, t};
use crate::report::charts::{Chart, ForestRow, Point, verdict_color};
use crate::report::reweight::verdict;
use crate::report::section::{Align, Cell, Page, Section, Table};
use crate::stats::estimate::Interval;

/// The main set next to the stress slice, one row per arm.
fn table(r: &StressOutput) -> Table {
    let mut t = Table::new(&[
        "arm",
        "drop_main",
        "se_main",
        "ci_main_family_low",
        "ci_main_family_high",
        "verdict_main",
        "confidence_main",
        "drop_stress",
        "se_stress",
        "ci_stress_family_low",
        "ci_stress_family_high",
        "verdict_stress",
        "confidence_stress",
        "lost_stress",
        "clears_both",
        "stress_cases_to_settle",
        "stress_settleable",
    ])
    .needs_first(&[
        "arm",
        "drop_main",
        "drop_stress",
        "clears_both",
        "verdict_main",
        "verdict_stress",
        "confidence_main",
        "confidence_stress",
        "lost_stress",
        "se_main",
        "se_stress",
        "ci_main_family_low",
        "ci_main_family_high",
        "ci_stress_family_low",
        "ci_stress_family_high",
        "stress_cases_to_settle",
        "stress_settleable",
    ])
    .align(5, Align::Left)
    .align(6, Align::Left)
    .align(11, Align::Left)
    .align(12, Align::Left)
    .align(14, Align::Left);
    for a in &r.arms {
        t.row(vec![
            a.arm.as_str().into(),
            Cell::num(a.drop_main, 4),
            Cell::num(a.se_main, 4),
            Cell::num(a.ci_main_family.map(|i| i.low), 4),
            Cell::num(a.ci_main_family.map(|i| i.high), 4),
            verdict(a.verdict_main).into(),
            confidence(a.confidence_main).into(),
            Cell::num(a.drop_stress, 4),
            Cell::num(a.se_stress, 4),
            Cell::num(a.ci_stress_family.map(|i| i.low), 4),
            Cell::num(a.ci_stress_family.map(|i| i.high), 4),
            verdict(a.verdict_stress).into(),
            confidence(a.confidence_stress).into(),
            Cell::count(a.lost_stress),
            Cell::yes_no(Some(a.clears_both)),
            Cell::count_opt(a.stress_cases_to_settle.map(|n| n as usize)),
            Cell::yes_no(a.stress_settleable),
        ]);
    }
    t
}

/// The report's section: drops on the main set next to the stress slice.
pub fn sections(st: &StressOutput, order: &[String]) -> Vec<Section> {
    let arms = crate::report::sweep::in_order(&st.arms, |a| &a.arm, order);
    let point =
        |d: Option<f64>, ci: Option<Interval>, v: Option<Verdict>, c: Option<Confidence>| {
            Some(Point {
                value: d?,
                interval: ci.map(|i| (i.low, i.high)),
                color: verdict_color(v?, c.unwrap_or(Confidence::Inconclusive)),
            })
        };
    // One row per arm: the main set (ring) above the stress slice (dot); an arm measured on one
    // side only is a single dot.
    let rows: Vec<ForestRow> = arms
        .into_iter()
        .filter_map(|arm| {
            let main = point(
                arm.drop_main,
                arm.ci_main_family,
                arm.verdict_main,
                arm.confidence_main,
            );
            let stress = point(
                arm.drop_stress,
                arm.ci_stress_family,
                arm.verdict_stress,
                arm.confidence_stress,
            );
            let flips = arm.verdict_main.is_some()
                && arm.verdict_stress.is_some()
                && arm.verdict_main != arm.verdict_stress;
            let (first, second) = match (main, stress) {
                (Some(m), s) => (m, s),
                (None, Some(s)) => (s, None),
                (None, None) => return None,
            };
            Some(ForestRow {
                label: arm.arm.clone(),
                value: first.value,
                interval: first.interval,
                color: first.color,
                flag: flips.then(|| "↯".to_string()),
                second,
            })
        })
        .collect();
    vec![Section {
        name: Page::Stress,
        title: "Main set next to the stress slice".into(),
        note: format!(
            "{} main-set and {} stress cases; a cut must be confidently removable on both. One row per arm, in the drops chart's order: the main set (ring) above the stress slice (dot), each with its interval. The main-set verdicts are the sweep's (its interval for each arm); the stress slice is judged the same way (family-wise, unless the decision is per arm). Colours as in the drops chart, each side against its own threshold ({} main, {} stress; the axis is centred on the main one); ↯ marks an arm whose verdict differs between the two.",
            st.main_cases,
            st.stress_cases,
            crate::text::float_text(st.threshold_drop),
            crate::text::float_text(st.stress_threshold_drop)
        ),
        chart: Chart::Forest {
            title: "Drop on the main set vs the stress slice".into(),
            x_desc: "drop".into(),
            rows,
            threshold: st.threshold_drop,
            sides: Some(("main set".into(), "stress slice".into())),
            comparison: false,
        },
        table: table(st),
    }]
}

/// Renders the stress comparison for a terminal.
pub fn human(r: &StressOutput) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "main set {} cases (threshold {}) · stress slice {} cases (threshold {})\n",
        r.main_cases,
        crate::text::float_text(r.threshold_drop),
        r.stress_cases,
        crate::text::float_text(r.stress_threshold_drop)
    );
    if r.stress_cases == 0 {
        let _ = writeln!(
            s,
            "There is no stress slice (no case has stress = true): build one from the shapes the main set under-samples."
        );
        return s;
    }
    s.push_str(&table(r).text());
    let caught: Vec<&str> = r
        .arms
        .iter()
        .filter(|a| {
            // As the decision record's `needed_only_on_stress`: confidently needed there.
            a.verdict_main == Some(Verdict::Removable)
                && a.verdict_stress == Some(Verdict::Needed)
                && a.confidence_stress == Some(Confidence::Confident)
        })
        .map(|a| a.arm.as_str())
        .collect();
    if !caught.is_empty() {
        let _ = writeln!(
            s,
            "\nremovable on the main set but confidently needed on the stress slice: {}",
            caught.join(", ")
        );
    }
    // Held back by the slice alone: what would settle it there.
    let open: Vec<String> = r
        .arms
        .iter()
        .filter(|a| {
            a.verdict_main == Some(Verdict::Removable)
                && a.confidence_main == Some(Confidence::Confident)
                && a.confidence_stress == Some(Confidence::Inconclusive)
        })
        .map(|a| match (a.stress_cases_to_settle, a.stress_settleable) {
            (Some(n), _) => format!(
                "{} (~{} stress cases would settle it{}, with 80% probability)",
                a.arm,
                crate::text::thousands(n as f64),
                a.verdict_stress
                    .map_or(String::new(), |v| format!(" {}", v.settles_as(false)))
            ),
            (None, Some(false)) => format!("{} (not within reach: beyond 100 times the slice)", a.arm),
            (None, _) => format!(
                "{} (the stress drops have no spread, or the slice has one unit: the cases that would settle it cannot be estimated)",
                a.arm
            ),
        })
        .collect();
    if !open.is_empty() {
        let _ = writeln!(
            s,
            "\nconfidently removable on the main set, not settled on the stress slice: {}",
            open.join(", ")
        );
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

/// The tables `--export` writes for [`StressOutput`].
impl Export for StressOutput {
    const TABLES: &'static [TableSpec] = &[
        t(
            "summary",
            "",
            One,
            "main_cases:i64 stress_cases:i64 threshold_drop:f64 stress_threshold_drop:f64",
            "the two sets and their thresholds",
        ),
        t(
            "arms",
            "arms",
            Rows,
            "arm:str drop_main:f64 se_main:f64 ci_main_family_low:f64 ci_main_family_high:f64 ci_main_family_level:f64 \
             ci_main_family_method:str drop_stress:f64 se_stress:f64 ci_stress_family_low:f64 ci_stress_family_high:f64 \
             ci_stress_family_level:f64 ci_stress_family_method:str verdict_main:str confidence_main:str verdict_stress:str \
             confidence_stress:str clears_both:bool lost_stress:i64 stress_cases_to_settle:i64 \
             stress_settleable:bool",
            "one row per arm: main set against the stress slice",
        ),
        WARNINGS,
    ];
}
