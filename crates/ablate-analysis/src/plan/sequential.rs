//! `ablate plan --sequential`: the calls a sequential run of a plan's arms is projected to make,
//! from a pilot experiment.
//!
//! The units are those `watch` would use: single cases, or, when the pilot's cases have a
//! `cluster` column, clusters the size of the pilot's. With clusters each unit bets on its total
//! S − thr·n, bounded by the largest pilot cluster's cases (as `watch` bounds it), so the
//! projection is made on cluster totals, not on single cases: a pilot arm's own totals, or for an
//! arm the pilot did not measure, totals built on the pilot's cluster sizes.

use serde::Serialize;

use super::{PlanArm, PlanOutput};
use crate::analysis::paired::{CaseSet, Paired};
use crate::io::Experiment;
use crate::stats::betting::{ThresholdTests, expected_cases};
use crate::stats::{moments, percentile};
use crate::warning::Warning;

/// One arm a pilot measured, by the units it removes.
#[derive(Debug, Clone, PartialEq)]
pub struct PilotArm {
    /// The units it removes, sorted.
    pub removed: Vec<String>,
    /// Its label in the pilot.
    pub arm: String,
    /// Mean paired drop on the main set.
    pub drop: f64,
    /// Sample sd of the per-case paired drops.
    pub sd: f64,
    /// With clusters: each cluster's total paired drop S and its paired cases n.
    pub clusters: Option<Vec<(f64, usize)>>,
}

/// The pilot's arms with an arms-table entry and at least two paired cases: what they remove,
/// their mean drop and the sd of their per-case drops; `paired` is the pilot's main set.
pub fn pilot_arms(pilot: &Experiment, paired: &Paired) -> Vec<PilotArm> {
    let m = &pilot.results.matrix;
    let mut out = Vec::new();
    for a in (0..m.n_arms).filter(|&a| a != paired.baseline) {
        let label = &pilot.results.arms[a];
        let Some(spec) = pilot.arms.as_ref().and_then(|t| t.get(label)) else {
            continue;
        };
        let drops = &paired.arm(m, a).drop;
        if drops.len() < 2 {
            continue;
        }
        let mut removed = spec.removed.clone();
        removed.sort();
        let pairs = paired.arm(m, a);
        out.push(PilotArm {
            removed,
            arm: label.clone(),
            drop: moments::mean(drops),
            sd: moments::sample_variance(drops).sqrt(),
            clusters: paired
                .clustered
                .then(|| unit_totals(&pairs.drop, &pairs.unit, paired.n_units)),
        });
    }
    out
}

/// One planned arm's projected sequential cost.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedArm {
    /// Planned arm label.
    pub arm: String,
    /// The drop assumed: the pilot's for an arm removing the same units, else the typical one.
    pub drop: f64,
    /// sd of per-case paired drops assumed.
    pub sd: f64,
    /// Where the drop comes from: `pilot arm <label>` or `typical`.
    pub source: String,
    /// Units (cases, or clusters) its sequence is projected to read.
    pub units: u64,
    /// Cases its sequence is projected to read (the whole set when it would not stop earlier).
    pub cases: u64,
}

/// The expected cost of running a plan sequentially (`ablate plan --sequential`).
#[derive(Debug, Clone, Serialize)]
pub struct SequentialPlan {
    /// Calls of the fixed design: arms × cases × repeats.
    pub calls_fixed: u64,
    /// Calls a sequential run is projected to make: Σ arms' cases × repeats, plus the baseline
    /// on every case any arm reads.
    pub calls_expected: u64,
    /// 1 − expected/fixed.
    pub saving: f64,
    /// Arms projected to stop before the whole set.
    pub arms_stopping_early: usize,
    /// Planned arms whose drop the pilot measured.
    pub arms_from_pilot: usize,
    /// |drop − threshold| assumed for the others: the median over the pilot's arms.
    pub typical_gap: f64,
    /// The unit a sequential run reads: `case`, or `cluster` when the pilot's cases have
    /// clusters.
    pub unit: &'static str,
    /// The most cases a unit has (the pilot's largest cluster; 1 for cases): the tests' bound.
    pub max_unit_cases: usize,
    /// Mean cases per unit (the pilot's mean cluster; 1 for cases).
    pub mean_unit_cases: f64,
    /// How the projection is made.
    pub note: &'static str,
    /// Per planned arm.
    pub arms: Vec<PlannedArm>,
    /// What the projection assumes beyond the pilot (`plan.sequential_typical`); moved into
    /// the plan's warnings.
    #[serde(skip)]
    pub warnings: Vec<Warning>,
}

/// Projects the calls of a sequential run of `plan`'s arms from a pilot: each arm's units are
/// the point where its leading test at the threshold is expected to decide, at α/arms, capped at
/// the planned set. An arm the pilot measured (same units removed) takes its drop and sd, the
/// others the pilot's median gap and the plan's sd. Units are single cases
/// ([`crate::stats::betting::expected_cases`], case drops Normal(drop, sd²)), or clusters when
/// the pilot has them ([`ThresholdTests::expected_units_like`] on cluster totals bounded by the
/// pilot's largest cluster: the arm's own totals on the pilot, else n·drop + √n·sd·z on each
/// pilot cluster of n cases); a cluster's cases are counted at the pilot's mean size.
///
/// # Errors
/// The warning (`plan.sequential_undefined`) that says why there is no projection: the pilot
/// measures no arm (no arms table, or no arm with two paired cases), so every drop would be
/// invented; or a spread it would rest on is unknown (a pilot arm, or the pilot as a whole, whose
/// paired drops do not vary), which no figure may stand in for.
pub fn plan_sequential(
    plan: &PlanOutput,
    pilot: &Experiment,
    alpha: f64,
) -> Result<SequentialPlan, Warning> {
    let span = pilot.manifest.score_max - pilot.manifest.score_min;
    let thr = plan.threshold_drop;
    let paired = Paired::new(pilot, CaseSet::Main);
    let measured = pilot_arms(pilot, &paired);
    let undefined = |why: String| {
        Warning::new(
            "plan.sequential_undefined",
            format!("no sequential projection (sequential is null): {why}"),
        )
    };
    if paired.clustered && paired.n_units < 2 {
        let c = paired.n_units;
        return Err(undefined(format!(
            "the pilot's cases come in {c} cluster{}, so its drops have no se to project a sequence from",
            if c == 1 { "" } else { "s" }
        )));
    }
    if measured.is_empty() {
        return Err(undefined(
            "the pilot measures no arm ablate can read a drop from (an arms table naming what each arm removes, and two paired cases per arm); a projection would rest on invented drops".into(),
        ));
    }
    let spread = |sd: f64| sd.is_finite() && sd > 0.0;
    let gaps: Vec<f64> = measured.iter().map(|x| (x.drop - thr).abs()).collect();
    let typical_gap = percentile::quantile(&gaps, 0.5);
    let sds: Vec<f64> = measured
        .iter()
        .map(|x| x.sd)
        .filter(|&s| spread(s))
        .collect();
    let default_sd = match plan.sd.filter(|&s| spread(s)) {
        Some(sd) => sd,
        None if !sds.is_empty() => percentile::quantile(&sds, 0.5),
        None => {
            return Err(undefined(
                "the pilot's paired drops have no spread, so how long a sequence runs cannot be projected (its spread is unknown, not zero)".into(),
            ));
        }
    };
    let sizes = cluster_sizes(&paired);
    let max_unit_cases = sizes
        .as_ref()
        .and_then(|s| s.iter().max().copied())
        .unwrap_or(1);
    let mean_unit_cases = sizes
        .as_ref()
        .filter(|s| !s.is_empty())
        .map_or(1.0, |s| s.iter().sum::<usize>() as f64 / s.len() as f64);
    let others: Vec<&PlanArm> = plan.arms.iter().filter(|a| !a.removed.is_empty()).collect();
    let k = others.len().max(1);
    let alpha_arm = alpha / k as f64;
    let n = plan.cases as u64;
    let planned_units = ((n as f64 / mean_unit_cases).ceil() as u64).max(1);
    let r = u64::from(plan.repeats);
    let mut arms = Vec::new();
    let mut from_pilot = 0;
    for a in others {
        let mut removed = a.removed.clone();
        removed.sort();
        let pilot_arm = measured.iter().find(|x| x.removed == removed);
        let (drop, sd, source) = match pilot_arm {
            Some(x) if !spread(x.sd) => {
                return Err(undefined(format!(
                    "the pilot's arm {} ({}) has the same drop on every case, so its spread is unknown (not zero)",
                    x.arm, a.arm
                )));
            }
            Some(x) => {
                from_pilot += 1;
                (x.drop, x.sd, format!("pilot arm {}", x.arm))
            }
            None => (thr + typical_gap, default_sd, "typical".to_string()),
        };
        let (units, cases) = match &sizes {
            None => {
                let cases = expected_cases(drop, sd, thr, span, alpha_arm, n)
                    .unwrap_or(n)
                    .min(n);
                (cases, cases)
            }
            Some(sizes) if thr.abs() < span => {
                let totals = match pilot_arm.and_then(|x| x.clusters.clone()) {
                    Some(t) => t,
                    None => modelled_totals(sizes, drop, sd, span),
                };
                let tests = ThresholdTests::new(thr, span, max_unit_cases, alpha_arm);
                let units = tests
                    .expected_units_like(&totals, planned_units)
                    .unwrap_or(planned_units)
                    .min(planned_units);
                let cases = ((units as f64 * mean_unit_cases).round() as u64).min(n);
                (units, if units == planned_units { n } else { cases })
            }
            Some(_) => (planned_units, n),
        };
        arms.push(PlannedArm {
            arm: a.arm.clone(),
            drop,
            sd,
            source,
            units,
            cases,
        });
    }
    let mut warnings = Vec::new();
    if from_pilot == 0 {
        warnings.push(Warning::new(
            "plan.sequential_typical",
            format!(
                "the pilot measured none of the planned arms (none removes the same units): every projection assumes the pilot's median gap to the threshold ({}) and sd ({}), not a measured arm's",
                crate::text::num(Some(typical_gap), 4),
                crate::text::num(Some(default_sd), 4)
            ),
        ));
    }
    let baseline = arms.iter().map(|a| a.cases).max().unwrap_or(0);
    let calls_expected = (arms.iter().map(|a| a.cases).sum::<u64>() + baseline) * r;
    let calls_fixed = plan.n_arms as u64 * n * r;
    Ok(SequentialPlan {
        calls_fixed,
        calls_expected,
        saving: if calls_fixed > 0 {
            1.0 - calls_expected as f64 / calls_fixed as f64
        } else {
            0.0
        },
        arms_stopping_early: arms.iter().filter(|a| a.cases < n).count(),
        arms_from_pilot: from_pilot,
        typical_gap,
        unit: if sizes.is_some() { "cluster" } else { "case" },
        max_unit_cases,
        mean_unit_cases,
        note: if sizes.is_some() {
            "projection: each arm stops where its test at the threshold is expected to reach 1/α, on cluster totals like the pilot's (bounded by its largest cluster); the realised stopping time varies around it"
        } else {
            "projection: each arm stops where its test at the threshold is expected to reach 1/α (case drops normal with the arm's drop and sd); the realised stopping time varies around it"
        },
        arms,
        warnings,
    })
}

/// Each unit's total of `values` and its count, for values whose units are `unit` (< `n_units`);
/// units with no value are left out.
fn unit_totals(values: &[f64], unit: &[u32], n_units: usize) -> Vec<(f64, usize)> {
    let mut totals = vec![(0.0, 0usize); n_units];
    for (&v, &u) in values.iter().zip(unit) {
        let t = &mut totals[u as usize];
        t.0 += v;
        t.1 += 1;
    }
    totals.retain(|t| t.1 > 0);
    totals
}

/// The pilot's main-set clusters' case counts (cases with baseline results), from its `paired`
/// main set, or None when its cases have no clusters.
fn cluster_sizes(paired: &Paired) -> Option<Vec<usize>> {
    paired.clustered.then(|| {
        // Every unit numbered by `Paired` has at least one case.
        let mut sizes = vec![0; paired.n_units];
        for &u in &paired.unit {
            sizes[u as usize] += 1;
        }
        sizes
    })
}

/// Cluster totals for an arm the pilot did not measure: on each pilot cluster of n cases,
/// n·drop + √n·sd·z (its cases' drops independent Normal(drop, sd²)), clamped to the reach
/// n·[−span, span]; z runs over normal quantiles in a low-discrepancy order (the golden-ratio
/// sequence), so that cluster size and z are not paired by rank.
fn modelled_totals(sizes: &[usize], drop: f64, sd: f64, span: f64) -> Vec<(f64, usize)> {
    const GOLDEN: f64 = 0.618_033_988_749_894_9;
    sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let u = ((i as f64 + 0.5) * GOLDEN).fract();
            let z = crate::stats::dist::z_quantile(u.clamp(1e-9, 1.0 - 1e-9));
            let n_f = n as f64;
            let s = (n_f * drop + n_f.sqrt() * sd * z).clamp(-n_f * span, n_f * span);
            (s, n)
        })
        .collect()
}
