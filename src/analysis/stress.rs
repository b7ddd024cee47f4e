//! `ablate stress`: the main set next to the stress slice.
//!
//! The stress slice (`stress = true` cases) over-samples the input shapes the main set barely
//! contains. For every arm, the paired drop and its se are computed separately on the main set
//! (verdict against `threshold_drop`) and on the stress slice (verdict against
//! `stress_threshold_drop`); a cut `clears_both` only when it is removable on both. The se follows
//! the sweep's rule (plain, or clustered when cases have clusters).

use serde::Serialize;

use crate::analysis::Config;
use crate::analysis::paired::{CaseSet, Paired};
use crate::analysis::vocab::Verdict;
use crate::io::Experiment;
use crate::stats::estimate::Estimate;

/// One arm on both sets.
#[derive(Debug, Clone, Serialize)]
pub struct StressArm {
    /// Arm label.
    pub arm: String,
    /// Mean paired drop on the main set.
    pub drop_main: Option<f64>,
    /// Its standard error.
    pub se_main: Option<f64>,
    /// Normal interval of the main-set drop (lower, upper).
    pub ci_main: Option<(f64, f64)>,
    /// Mean paired drop on the stress slice.
    pub drop_stress: Option<f64>,
    /// Its standard error.
    pub se_stress: Option<f64>,
    /// Normal interval of the stress drop (lower, upper).
    pub ci_stress: Option<(f64, f64)>,
    /// Verdict on the main set (threshold_drop).
    pub verdict_main: Option<Verdict>,
    /// Verdict on the stress slice (stress_threshold_drop).
    pub verdict_stress: Option<Verdict>,
    /// Removable on both sets.
    pub clears_both: bool,
    /// Stress cases passing in the baseline and failing in the arm.
    pub lost_stress: usize,
}

/// What `ablate stress` reports.
#[derive(Debug, Clone, Serialize)]
pub struct StressOutput {
    /// Stress cases with baseline results.
    pub stress_cases: usize,
    /// Main-set cases with baseline results.
    pub main_cases: usize,
    /// Threshold on the main set.
    pub threshold_drop: f64,
    /// Threshold on the stress slice.
    pub stress_threshold_drop: f64,
    /// Every non-baseline arm.
    pub arms: Vec<StressArm>,
}

/// Runs the comparison. Without stress cases every stress field is null and nothing clears both.
/// Intervals are normal, drop ± z(1 − (1 − confidence)/2)·se, at `cfg.confidence`.
pub fn run(exp: &Experiment, cfg: &Config) -> StressOutput {
    let confidence = cfg.confidence;
    let m = &exp.results.matrix;
    let interval = |drop: Option<f64>, se: Option<f64>| {
        let e = Estimate::normal(drop?, se, confidence);
        e.ci_low.zip(e.ci_high)
    };
    let main = Paired::new(exp, CaseSet::Main);
    let stress = Paired::new(exp, CaseSet::Stress);
    let (t_main, t_stress) = (
        exp.manifest.threshold_drop,
        exp.manifest.stress_threshold_drop,
    );
    let pass_mark = exp.manifest.pass_mark;
    let arms = (0..m.n_arms)
        .filter(|&a| a != main.baseline)
        .map(|a| {
            let side = |set: &Paired, threshold: f64| {
                let p = set.arm(m, a);
                if p.pos.is_empty() {
                    return (None, None, None, 0);
                }
                let (drop, se) = set.mean_se(&p.drop, &p.unit);
                let lost = p
                    .base
                    .iter()
                    .zip(&p.arm)
                    .filter(|(b, s)| **b >= pass_mark && **s < pass_mark)
                    .count();
                (Some(drop), se, Some(Verdict::of(drop, threshold)), lost)
            };
            let (drop_main, se_main, verdict_main, _) = side(&main, t_main);
            let (drop_stress, se_stress, verdict_stress, lost_stress) = side(&stress, t_stress);
            StressArm {
                arm: exp.results.arms[a].clone(),
                drop_main,
                se_main,
                ci_main: interval(drop_main, se_main),
                drop_stress,
                se_stress,
                ci_stress: interval(drop_stress, se_stress),
                verdict_main,
                verdict_stress,
                clears_both: verdict_main == Some(Verdict::Removable)
                    && verdict_stress == Some(Verdict::Removable),
                lost_stress,
            }
        })
        .collect();
    StressOutput {
        stress_cases: stress.cases.len(),
        main_cases: main.cases.len(),
        threshold_drop: t_main,
        stress_threshold_drop: t_stress,
        arms,
    }
}
