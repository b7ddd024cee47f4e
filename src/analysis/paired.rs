//! Paired comparisons against the baseline: which cases take part, their resampling units
//! (clusters or cases), and per-arm paired values.
//!
//! A case takes part when it is in the chosen set (the main set, or the stress slice) and has
//! baseline results. A case missing from an arm is left out of that arm's pairs. The case is the
//! unit of analysis: repeats are averaged first (`s[i,a]`), and when `cases` has a `cluster` column
//! the cluster is the unit of the standard error and of the bootstrap (Miller 2024).

use std::collections::BTreeMap;

use crate::io::{CaseMatrix, Experiment};
use crate::stats::bootstrap::RatioSums;
use crate::stats::estimate::{self, Estimate};
use crate::stats::moments;

/// Which cases an analysis uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseSet {
    /// Cases with `stress = false` (every analysis but `stress`).
    Main,
    /// Cases with `stress = true`.
    Stress,
}

/// The cases of one comparison, with their resampling units.
#[derive(Debug, Clone)]
pub struct Paired {
    /// Case indices (into the cases table) in the set with baseline results, ascending.
    pub cases: Vec<usize>,
    /// Resampling unit of each of those cases.
    pub unit: Vec<u32>,
    /// Number of resampling units.
    pub n_units: usize,
    /// Whether the units are clusters (else each case is its own unit).
    pub clustered: bool,
    /// Baseline arm index.
    pub baseline: usize,
}

/// One arm's paired cases: positions into [`Paired::cases`] and the paired values.
#[derive(Debug, Clone, Default)]
pub struct PairedArm {
    /// Positions (into `Paired::cases`) of the cases present in the arm.
    pub pos: Vec<usize>,
    /// Baseline case means `s[i,base]`.
    pub base: Vec<f64>,
    /// Arm case means `s[i,a]`.
    pub arm: Vec<f64>,
    /// Drops `d[i] = s[i,base] − s[i,a]`.
    pub drop: Vec<f64>,
    /// Resampling unit of each paired case.
    pub unit: Vec<u32>,
}

impl Paired {
    /// The cases of `set` that have baseline results.
    pub fn new(exp: &Experiment, set: CaseSet) -> Paired {
        let m = &exp.results.matrix;
        let baseline = exp.baseline_index();
        let cases: Vec<usize> = (0..m.n_cases)
            .filter(|&c| exp.cases.stress[c] == (set == CaseSet::Stress) && m.present(c, baseline))
            .collect();
        let (unit, n_units, clustered) = match &exp.cases.cluster {
            Some(cluster) => {
                let mut ids: BTreeMap<&str, u32> = BTreeMap::new();
                for &c in &cases {
                    let next = ids.len() as u32;
                    ids.entry(cluster[c].as_str()).or_insert(next);
                }
                let unit = cases.iter().map(|&c| ids[cluster[c].as_str()]).collect();
                (unit, ids.len(), true)
            }
            None => ((0..cases.len() as u32).collect(), cases.len(), false),
        };
        Paired {
            cases,
            unit,
            n_units,
            clustered,
            baseline,
        }
    }

    /// The paired values of `arm`.
    pub fn arm(&self, m: &CaseMatrix, arm: usize) -> PairedArm {
        let mut out = PairedArm::default();
        for (p, &c) in self.cases.iter().enumerate() {
            if !m.present(c, arm) {
                continue;
            }
            let b = m.mean[m.cell(c, self.baseline)];
            let a = m.mean[m.cell(c, arm)];
            out.pos.push(p);
            out.base.push(b);
            out.arm.push(a);
            out.drop.push(b - a);
            out.unit.push(self.unit[p]);
        }
        out
    }

    /// Mean and se of per-case values whose units are `units` (clustered when the design is).
    pub fn mean_se(&self, values: &[f64], units: &[u32]) -> (f64, Option<f64>) {
        moments::mean_se(values, self.clustered.then_some(units))
    }

    /// The estimate of a mean of per-case `values` (drops, interactions) over their `units`:
    /// when at least two units all gave the same value, the exact bound of
    /// [`Estimate::no_variation`] for a quantity within `reach`; otherwise the joint-bootstrap
    /// percentile interval `bootstrap_ci` (`Some` when resamples were drawn) or the normal one.
    #[allow(clippy::too_many_arguments)]
    pub fn estimate(
        point: f64,
        se: Option<f64>,
        values: &[f64],
        units: &[u32],
        reach: (f64, f64),
        bootstrap_ci: Option<Option<(f64, f64)>>,
        confidence: f64,
    ) -> Estimate {
        let n_units = Paired::distinct_units(units);
        if n_units >= 2 && estimate::no_variation(values) {
            return Estimate::no_variation(point, n_units, reach.0, reach.1, confidence);
        }
        match bootstrap_ci {
            Some(ci) => Estimate::bootstrap(point, se, ci, confidence),
            None => Estimate::normal(point, se, confidence),
        }
    }

    /// Number of distinct units among `units`.
    pub fn distinct_units(units: &[u32]) -> usize {
        let mut u = units.to_vec();
        u.sort_unstable();
        u.dedup();
        u.len()
    }

    /// Adds a per-case mean statistic to bootstrap sums: numerator = value, denominator = 1 for
    /// each paired case.
    pub fn add_mean(&self, sums: &mut RatioSums, stat: usize, units: &[u32], values: &[f64]) {
        for (u, v) in units.iter().zip(values) {
            sums.add(*u as usize, stat, *v, 1.0);
        }
    }
}

/// The range scores can take: [min(0, lowest case mean), max(1, highest case mean)] over every
/// case and arm. Scores are taken as lying in [0, 1] unless the data shows otherwise.
pub fn score_bounds(m: &CaseMatrix) -> (f64, f64) {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for (i, &x) in m.mean.iter().enumerate() {
        if m.repeats[i] > 0 && x.is_finite() {
            lo = lo.min(x);
            hi = hi.max(x);
        }
    }
    (lo, hi)
}

/// Cases whose per-repeat pass/fail is not the same in all repeats, among `cases` in `arm`
/// (`None` when no case has more than one repeat).
pub fn churn(m: &CaseMatrix, cases: &[usize], arm: usize) -> Option<usize> {
    let mut any_repeated = false;
    let mut n = 0;
    for &c in cases {
        let cell = m.cell(c, arm);
        let k = m.repeats[cell];
        if k > 1 {
            any_repeated = true;
            let p = m.passes[cell];
            if p > 0 && p < k {
                n += 1;
            }
        }
    }
    any_repeated.then_some(n)
}

/// The most common number of repeats per case in `arm` over `cases` (ties go to the larger).
pub fn modal_repeats(m: &CaseMatrix, cases: &[usize], arm: usize) -> u32 {
    let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
    for &c in cases {
        let k = m.repeats[m.cell(c, arm)];
        if k > 0 {
            *counts.entry(k).or_default() += 1;
        }
    }
    counts
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(a.0.cmp(b.0)))
        .map(|(k, _)| *k)
        .unwrap_or(0)
}
