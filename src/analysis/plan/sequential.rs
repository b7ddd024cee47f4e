//! `ablate plan --sequential`: the calls a sequential run of a plan's arms is projected to make,
//! from a pilot experiment.

use serde::Serialize;

use super::{PlanArm, PlanOutput};
use crate::analysis::paired::{CaseSet, Paired};
use crate::io::Experiment;
use crate::stats::betting::expected_cases;
use crate::stats::{moments, percentile};

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
}

/// The pilot's arms with an arms-table entry and at least two paired cases: what they remove,
/// their mean drop and the sd of their per-case drops.
pub fn pilot_arms(pilot: &Experiment) -> Vec<PilotArm> {
    let m = &pilot.results.matrix;
    let paired = Paired::new(pilot, CaseSet::Main);
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
        out.push(PilotArm {
            removed,
            arm: label.clone(),
            drop: moments::mean(drops),
            sd: moments::sample_variance(drops).sqrt(),
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
    /// How the projection is made.
    pub note: &'static str,
    /// Per planned arm.
    pub arms: Vec<PlannedArm>,
}

/// Projects the calls of a sequential run of `plan`'s arms from a pilot: each arm's cases are
/// the point where its leading test at the threshold is expected to decide
/// ([`crate::stats::betting::expected_cases`], at α/arms, for case drops Normal(drop, sd²)),
/// capped at the planned cases. An arm the pilot
/// measured (same units removed) takes its drop and sd; the others take the pilot's median gap
/// and the plan's sd.
pub fn plan_sequential(plan: &PlanOutput, pilot: &Experiment, alpha: f64) -> SequentialPlan {
    let span = pilot.manifest.score_max - pilot.manifest.score_min;
    let thr = plan.threshold_drop;
    let measured = pilot_arms(pilot);
    let gaps: Vec<f64> = measured.iter().map(|x| (x.drop - thr).abs()).collect();
    let typical_gap = if gaps.is_empty() {
        thr.max(1e-3)
    } else {
        percentile::quantile(&gaps, 0.5)
    };
    let default_sd = plan.sd.unwrap_or_else(|| {
        let sds: Vec<f64> = measured.iter().map(|x| x.sd).collect();
        if sds.is_empty() {
            span / 4.0
        } else {
            percentile::quantile(&sds, 0.5)
        }
    });
    let others: Vec<&PlanArm> = plan.arms.iter().filter(|a| !a.removed.is_empty()).collect();
    let k = others.len().max(1);
    let n = plan.cases as u64;
    let r = u64::from(plan.repeats);
    let mut arms = Vec::new();
    let mut from_pilot = 0;
    for a in others {
        let mut removed = a.removed.clone();
        removed.sort();
        let (drop, sd, source) = match measured.iter().find(|x| x.removed == removed) {
            Some(x) => {
                from_pilot += 1;
                (x.drop, x.sd, format!("pilot arm {}", x.arm))
            }
            None => (thr + typical_gap, default_sd, "typical".to_string()),
        };
        let cases = expected_cases(drop, sd, thr, span, alpha / k as f64, n)
            .unwrap_or(n)
            .min(n);
        arms.push(PlannedArm {
            arm: a.arm.clone(),
            drop,
            sd,
            source,
            cases,
        });
    }
    let baseline = arms.iter().map(|a| a.cases).max().unwrap_or(0);
    let calls_expected = (arms.iter().map(|a| a.cases).sum::<u64>() + baseline) * r;
    let calls_fixed = plan.n_arms as u64 * n * r;
    SequentialPlan {
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
        note: "projection: each arm stops where its test at the threshold is expected to reach 1/α (case drops normal with the arm's drop and sd); the realised stopping time varies around it",
        arms,
    }
}
