//! `ablate stress`: the main set next to the stress slice.
//!
//! The stress slice (`stress = true` cases) over-samples the input shapes the main set barely
//! contains. For every arm, the main-set verdict is the sweep's own (drop, interval, verdict and
//! confidence are copied, never recomputed: one verdict per arm everywhere), and the stress slice
//! is judged the same way against `stress_threshold_drop`: its drop, se and interval by the
//! family interval under the sweep's guarantee ([`Intervals::family_under`]) over the sweep's
//! family (the arm's own interval with `--per-arm`), its verdict and confidence by [`judge`]. A cut `clears_both` only when it is confidently removable
//! on both.
//!
//! An arm of the decision family the slice leaves inconclusive gets `stress_cases_to_settle`:
//! the stress cases at which its stress verdict settles with 80% probability if its drop and
//! spread hold, by the routine of the decision's `cases_to_settle` (`settle::cases_to_clear`)
//! against `stress_threshold_drop`; null when settled, beyond 100 times the slice
//! (`stress_settleable` false), or undefined (the drops have no spread, or fewer than two units:
//! `stress_settleable` null).

use serde::Serialize;

use crate::analysis::Config;
use crate::analysis::decision::settle;
use crate::analysis::interval::{self, Interval};
use crate::analysis::paired::{self, CaseSet, Intervals, Paired};
use crate::analysis::sweep::SweepOutput;
use crate::analysis::vocab::{Confidence, Verdict, judge};
use crate::io::Experiment;
use crate::stats::dist;

/// One arm on both sets.
#[derive(Debug, Clone, Serialize)]
pub struct StressArm {
    /// Arm label.
    pub arm: String,
    /// Mean paired drop on the main set.
    pub drop_main: Option<f64>,
    /// Its standard error.
    pub se_main: Option<f64>,
    /// The sweep's interval that judges the main-set drop (its `ci_family`: family-wise, or the
    /// arm's own with `--per-arm`): `ci_main_family_low`, `ci_main_family_high`, …, at the level of
    /// `ci_stress_family_*`, so that the two sides compare like with like (it had been the sweep's
    /// per-arm 95% interval beside the stress slice's family interval).
    #[serde(flatten, serialize_with = "interval::ci_main_family")]
    pub ci_main_family: Option<Interval>,
    /// Mean paired drop on the stress slice.
    pub drop_stress: Option<f64>,
    /// Its standard error.
    pub se_stress: Option<f64>,
    /// The interval that judges the stress drop, family-wise like the sweep's (`ci_stress_family_low`,
    /// `ci_stress_family_high`, …).
    #[serde(flatten, serialize_with = "interval::ci_stress_family")]
    pub ci_stress_family: Option<Interval>,
    /// Verdict on the main set (threshold_drop): the sweep's.
    pub verdict_main: Option<Verdict>,
    /// Confidence of the main-set verdict: the sweep's.
    pub confidence_main: Option<Confidence>,
    /// Verdict on the stress slice (stress_threshold_drop).
    pub verdict_stress: Option<Verdict>,
    /// Confidence of the stress verdict.
    pub confidence_stress: Option<Confidence>,
    /// Confidently removable on both sets.
    pub clears_both: bool,
    /// Stress cases passing in the baseline and failing in the arm.
    pub lost_stress: usize,
    /// Total stress cases at which an inconclusive stress verdict settles with 80% probability
    /// if the drop and spread hold (the module documentation); null when settled, beyond 100
    /// times the slice, undefined, or the arm is outside the decision family.
    pub stress_cases_to_settle: Option<u64>,
    /// For an inconclusive stress verdict of an arm in the decision family: true when
    /// `stress_cases_to_settle` is a figure, false when it is beyond 100 times the slice, null
    /// when it cannot be estimated (the stress drops have no spread, or fewer than two units),
    /// or when nothing is to be settled (as the decision's `settleable`).
    pub stress_settleable: Option<bool>,
}

/// What `ablate stress` reports.
#[derive(Debug, Clone, Serialize)]
pub struct StressOutput {
    /// Stress cases with baseline results.
    pub stress_cases: usize,
    /// Main-set cases with baseline results.
    pub main_cases: usize,
    /// The stress slice's units: its cases, or its clusters under `cluster_by` (0 without
    /// stress cases). Not in the JSON; the decision reads it (`stress_too_few_units`).
    #[serde(skip)]
    pub stress_units: usize,
    /// Threshold on the main set.
    pub threshold_drop: f64,
    /// Threshold on the stress slice.
    pub stress_threshold_drop: f64,
    /// Every non-baseline arm.
    pub arms: Vec<StressArm>,
    /// Why stress fields are null: no stress case (`stress.no_stress_cases`), arms never run on
    /// the stress slice (`stress.arm_without_stress_results`), arms whose stress drops do not
    /// vary (`stress.no_spread`), arms with too few stress units to be called confident
    /// (`stress.too_few_units`).
    pub warnings: Vec<crate::warning::Warning>,
}

/// Runs the comparison, with the main-set verdicts of `sweep`. Without stress cases every stress
/// field is null and nothing clears both (with the warning `stress.no_stress_cases`).
pub fn run(exp: &Experiment, sweep: &SweepOutput, cfg: &Config) -> StressOutput {
    let m = &exp.results.matrix;
    let main = Paired::new(exp, CaseSet::Main);
    let stress = Paired::new(exp, CaseSet::Stress);
    let (t_main, t_stress) = (
        exp.manifest.threshold_drop,
        exp.manifest.stress_threshold_drop,
    );
    let (lo, hi) = paired::experiment_score_bounds(exp);
    let pass_mark = exp.manifest.pass_mark;
    let family = sweep.family.size;
    let (mut flat, mut few, mut unpaired) = (Vec::new(), 0, Vec::new());
    let arms: Vec<StressArm> = (0..m.n_arms)
        .filter(|&a| a != main.baseline)
        .map(|a| {
            let label = &exp.results.arms[a];
            let swept = sweep.arms.iter().find(|s| &s.arm == label);
            let p = stress.arm(m, a);
            let (mut drop_stress, mut se_stress, mut ci_stress) = (None, None, None);
            let (mut verdict_stress, mut confidence_stress, mut lost_stress) = (None, None, 0);
            let (mut stress_cases_to_settle, mut stress_settleable) = (None, None);
            if p.pos.is_empty() && !stress.cases.is_empty() {
                unpaired.push(label.clone());
            }
            if !p.pos.is_empty() {
                let sample = stress.drop_sample(m, a, (lo - hi, hi - lo));
                let drop = sample.point;
                let intervals = Intervals::new(&sample);
                let e = intervals.family_under(
                    sweep.family.guarantee,
                    if cfg.per_arm { 1 } else { family },
                    cfg.confidence,
                );
                let units = Paired::distinct_units(&p.unit);
                let (v, mut c) = judge(drop, t_stress, &e, units);
                if units < paired::MIN_UNITS_TO_DECIDE {
                    few += 1;
                }
                if e.se.is_none() {
                    flat.push(label.clone());
                }
                // An arm outside the decision family is described, never judged confident.
                if !crate::analysis::sweep::in_family(exp, a) {
                    c = Confidence::Inconclusive;
                }
                lost_stress = p
                    .pos
                    .iter()
                    .filter(|&&pos| {
                        let c = stress.cases[pos];
                        m.case_passes(m.cell(c, stress.baseline), pass_mark)
                            && !m.case_passes(m.cell(c, a), pass_mark)
                    })
                    .count();
                // Only an arm the decision judges can be settled (one outside the family is
                // never confident).
                if c == Confidence::Inconclusive
                    && crate::analysis::sweep::in_family(exp, a)
                    && let Some(se) = e.se.and(intervals.se()).filter(|s| *s > 0.0)
                {
                    let within = settle::facing_within(
                        &intervals,
                        t_stress,
                        sweep.family.guarantee,
                        if cfg.per_arm { 1 } else { family },
                        cfg.confidence,
                    );
                    stress_cases_to_settle = settle::cases_to_clear(
                        drop,
                        t_stress,
                        se,
                        (p.pos.len(), units),
                        dist::z_quantile(crate::analysis::decision::POWER),
                        &within,
                    )
                    .map(|n| n.max(p.pos.len() as u64));
                    stress_settleable = Some(stress_cases_to_settle.is_some());
                }
                // The sample's se (plain or CR1, as the sweep's): null where the drops do not
                // vary (the interval is then the exact bound).
                (drop_stress, se_stress, ci_stress) =
                    (Some(drop), e.se.and(intervals.se()), e.interval());
                (verdict_stress, confidence_stress) = (Some(v), Some(c));
            }
            let removable_confident = |v: Option<Verdict>, c: Option<Confidence>| {
                v == Some(Verdict::Removable) && c == Some(Confidence::Confident)
            };
            let (verdict_main, confidence_main) =
                (swept.map(|s| s.verdict), swept.map(|s| s.confidence));
            StressArm {
                arm: label.clone(),
                drop_main: swept.map(|s| s.drop),
                se_main: swept.and_then(|s| s.se),
                // The interval that judged the main-set verdict: the family's, or under
                // --per-arm the arm's own (the sweep's `ci_family` either way).
                ci_main_family: swept.and_then(|s| s.ci_family),
                drop_stress,
                se_stress,
                ci_stress_family: ci_stress,
                verdict_main,
                confidence_main,
                verdict_stress,
                confidence_stress,
                clears_both: removable_confident(verdict_main, confidence_main)
                    && removable_confident(verdict_stress, confidence_stress),
                lost_stress,
                stress_cases_to_settle,
                stress_settleable,
            }
        })
        .collect();
    StressOutput {
        stress_cases: stress.cases.len(),
        main_cases: main.cases.len(),
        stress_units: stress.n_units,
        threshold_drop: t_main,
        stress_threshold_drop: t_stress,
        arms,
        warnings: warnings(
            stress.cases.is_empty(),
            &unpaired,
            &flat,
            few,
            stress.clustered,
        ),
    }
}

/// The warnings that explain null or never-confident stress fields.
fn warnings(
    no_cases: bool,
    unpaired: &[String],
    flat: &[String],
    few: usize,
    clustered: bool,
) -> Vec<crate::warning::Warning> {
    use crate::warning::Warning;
    let mut warnings = Vec::new();
    if no_cases {
        warnings.push(Warning::new(
            "stress.no_stress_cases",
            "no case with baseline results is marked stress = true: every stress field is null and no cut can clear both sets; mark the stress slice's cases with stress = true in the cases table",
        ));
    }
    if !unpaired.is_empty() {
        warnings.push(Warning::new(
            "stress.arm_without_stress_results",
            format!(
                "{} arm(s) have no result on a stress case the baseline has ({}): their stress fields are null and they cannot clear both sets; run them on the stress slice",
                unpaired.len(),
                crate::text::some_names(&unpaired.iter().map(String::as_str).collect::<Vec<_>>(), 10)
            ),
        ));
    }
    if !flat.is_empty() {
        warnings.push(Warning::new(
            "stress.no_spread",
            format!(
                "{} arm(s) have no spread in their stress drops (one {}, or the same drop on every one: {}): their stress se is undefined (null), and their interval is the exact bound (null with a single {}, which bounds nothing)",
                flat.len(),
                if clustered { "cluster" } else { "case" },
                crate::text::some_names(&flat.iter().map(String::as_str).collect::<Vec<_>>(), 10),
                if clustered { "cluster" } else { "case" },
            ),
        ));
    }
    if few > 0 {
        warnings.push(Warning::new(
            "stress.too_few_units",
            format!(
                "{few} arm(s) have fewer than {} stress {}: too few to decide, so none of them is called confident on the stress slice whatever its interval",
                paired::MIN_UNITS_TO_DECIDE,
                if clustered { "clusters" } else { "cases" }
            ),
        ));
    }
    warnings
}
