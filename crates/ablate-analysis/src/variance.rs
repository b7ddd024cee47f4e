//! `ablate variance`: where the noise comes from, and what the set can detect.
//!
//! For each arm a (the baseline included), over main-set cases with results in a, with K the
//! arm's mean repeats per case:
//! - `within_case_var` = mean over cases of the sample variance across repeats (cases with ≥ 2
//!   repeats);
//! - `case_means_var` = sample variance of `s[i,a]`;
//! - `between_case_var` = case_means_var − within_case_var/K;
//! - `repeat_noise_share` = (within_case_var/K) / case_means_var (a method-of-moments estimate:
//!   below 0, and the share above 1, when the case means spread less than repeat noise; kept,
//!   with `variance.negative_between_case`);
//! - `mde` = (z(1−α/2) + z(0.8))·se(drop), the drop one arm's normal interval detects at 80%
//!   power, α = 1 − confidence (a per-arm figure of the noise, not of the decision);
//! - `cases_needed`: the total cases at which the arm's verdict settles with probability 0.8 if
//!   its drop and spread hold: the family interval that decides (under the guarantee in force,
//!   over the sweep's family) clears `threshold_drop`. The same routine, and the same figure, as
//!   the decision's `cases_to_settle` ([`crate::analysis::decision`]); fewer than the cases at
//!   hand when the arm is already settled; null with `settleable: false` beyond 100 times the set
//!   ("not within reach");
//! - both are null, with a warning, when the se is undefined (fewer than two cases or clusters)
//!   or when every paired drop is the same (the variance is unknown, not zero).
//!
//! Miller (2024): `Var(mean) = (Var(x) + E[σ²]/K)/n`, so more repeats only shrink the second term:
//! when repeat noise is a small share of the variance of case means, add cases, not repeats.

use rayon::prelude::*;
use serde::Serialize;

use crate::analysis::Config;
use crate::analysis::paired::{self, CaseSet, Paired};
use crate::io::Experiment;
use crate::stats::{dist, estimate, moments, percentile};

/// Power used for the minimum detectable effect.
pub const POWER: f64 = 0.8;

/// Variance decomposition and power of one arm.
#[derive(Debug, Clone, Serialize)]
pub struct VarianceArm {
    /// Arm label.
    pub arm: String,
    /// Mean over cases of the variance across repeats (null when no case has 2 repeats).
    pub within_case_var: Option<f64>,
    /// Sample variance of the case means.
    pub case_means_var: Option<f64>,
    /// case_means_var − within_case_var/K (null with one repeat: the repeat noise is unknown).
    pub between_case_var: Option<f64>,
    /// (within_case_var/K)/case_means_var: the share of the spread of case means that is repeat noise.
    pub repeat_noise_share: Option<f64>,
    /// Cases whose per-repeat pass/fail differs (null with one repeat).
    pub churn: Option<usize>,
    /// Minimum detectable drop at 80% power (null for the baseline).
    pub mde: Option<f64>,
    /// Total cases at which its verdict settles with probability 0.8 (the decision's
    /// `cases_to_settle`; null for the baseline, when undefined, or beyond reach).
    pub cases_needed: Option<u64>,
    /// False when `cases_needed` is beyond 100 times the set: "not within reach" (null for the
    /// baseline and when undefined).
    pub settleable: Option<bool>,
    /// Mean repeats per case (K).
    pub repeats_mean: f64,
    /// Cases with results in this arm.
    pub n: usize,
}

/// What `ablate variance` reports.
#[derive(Debug, Clone, Serialize)]
pub struct VarianceOutput {
    /// Threshold agreed before the run.
    pub threshold_drop: f64,
    /// Confidence level (α = 1 − confidence).
    pub confidence_level: f64,
    /// Power of the detectable-drop figures.
    pub power: f64,
    /// Main-set cases with baseline results.
    pub cases: usize,
    /// Clusters among those cases (null without a cluster column), as the sweep's: the units
    /// that more of shrink the se when cases come in clusters.
    pub clusters: Option<usize>,
    /// Median mde over the leave-one-out arms (one unit removed), else over all non-baseline arms.
    pub typical_mde: Option<f64>,
    /// Median cases_needed over the same arms (an arm beyond reach counts as more than any);
    /// null when that median is beyond reach.
    pub typical_cases_needed: Option<u64>,
    /// Every arm, the baseline first.
    pub arms: Vec<VarianceArm>,
    /// Arms whose power figures are undefined, and why.
    pub warnings: Vec<crate::warning::Warning>,
}

/// Runs the variance analysis.
pub fn run(exp: &Experiment, cfg: &Config) -> VarianceOutput {
    let m = &exp.results.matrix;
    let paired = Paired::new(exp, CaseSet::Main);
    let base = paired.baseline;
    let threshold = exp.manifest.threshold_drop;
    let multiplier = dist::power_multiplier(cfg.confidence, POWER);
    let judged = Judged {
        family: if cfg.per_arm {
            1
        } else {
            crate::analysis::sweep::family_size(exp).max(1)
        },
        guarantee: cfg.guarantee.unwrap_or(exp.manifest.guarantee),
        confidence: cfg.confidence,
    };

    let mut order: Vec<usize> = vec![base];
    order.extend((0..m.n_arms).filter(|&a| a != base));
    // Every arm's pairs in passes over the matrix, before the arms are judged in parallel (each
    // would otherwise read the matrix an arm at a time).
    paired.arms(m, &order);
    // Each arm's power figures on its own (rayon, collected in arm order: the same output at any
    // thread count); the cases to settle search the family interval at many sizes.
    let power: Vec<Power> = order
        .par_iter()
        .map(|&a| {
            let mut warnings = Vec::new();
            let (mde, cases_needed) = if a == base {
                (None, None)
            } else {
                mde_and_cases_needed(exp, &paired, a, multiplier, &judged, &mut warnings)
            };
            (mde, cases_needed, warnings)
        })
        .collect();
    // The arms' columns in passes over the matrix, [`ARMS_PER_PASS`] arms a pass and the passes
    // in parallel, each column with the variance of its case means (collected in arm order: each
    // is the same whichever pass reads it).
    let columns: Vec<(Column, f64)> = order
        .par_chunks(ARMS_PER_PASS)
        .flat_map_iter(|block| {
            columns(m, &paired.cases, block).into_iter().map(|column| {
                let case_means_var = moments::sample_variance(&column.means);
                (column, case_means_var)
            })
        })
        .collect();
    let mut power = power.into_iter();
    let mut arms = Vec::with_capacity(order.len());
    let mut warnings = Vec::new();
    for (a, (column, case_means_var)) in order.iter().copied().zip(columns) {
        let Column {
            means,
            within,
            within_cases,
            repeats,
            churn,
        } = column;
        let k = if means.is_empty() {
            0.0
        } else {
            repeats.total() / means.len() as f64
        };
        // The compensated mean, as `moments::mean` of the variances in case order.
        let within_case_var = (within_cases > 0).then(|| within.total() / within_cases as f64);
        let case_means_var = Some(case_means_var).filter(|v| !v.is_nan());
        let between_case_var = match (case_means_var, within_case_var) {
            (Some(cm), Some(w)) => Some(cm - w / k),
            _ => None,
        };
        let repeat_noise_share = match (case_means_var, within_case_var) {
            (Some(cm), Some(w)) if cm > 0.0 => Some((w / k) / cm),
            _ => None,
        };
        let (mde, cases_needed, arm_warnings) = power.next().expect("power figures for every arm");
        warnings.extend(arm_warnings);
        // Method of moments: below 0 when the case means spread less than repeat noise alone
        // makes them (the true variance cannot be). Kept as the formula gives it, and said.
        if let (Some(b), Some(w)) = (between_case_var, within_case_var)
            && b < -1e-12 * (w / k)
        {
            warnings.push(negative_between(
                &exp.results.arms[a],
                b,
                repeat_noise_share,
            ));
        }
        let settleable = cases_needed.map(|c| c.is_some());
        arms.push(VarianceArm {
            arm: exp.results.arms[a].clone(),
            within_case_var,
            case_means_var,
            between_case_var,
            repeat_noise_share,
            churn,
            mde,
            cases_needed: cases_needed.flatten(),
            settleable,
            repeats_mean: k,
            n: means.len(),
        });
    }
    // "Typical" = the median over leave-one-out arms (one unit removed) when there are any: those
    // are the arms whose drops sit near the threshold; otherwise over every non-baseline arm.
    let single = |a: &VarianceArm| {
        exp.arms
            .as_ref()
            .and_then(|t| t.get(&a.arm))
            .is_some_and(|s| s.removed.len() == 1)
    };
    let typical: Vec<&VarianceArm> = if arms.iter().any(single) {
        arms.iter().filter(|a| single(a)).collect()
    } else {
        arms.iter().collect()
    };
    // One repeat per case: the repeat noise cannot be measured (the nulls say why).
    let unrepeated: Vec<&str> = arms
        .iter()
        .filter(|a| a.n > 0 && a.within_case_var.is_none())
        .map(|a| a.arm.as_str())
        .collect();
    if !unrepeated.is_empty() {
        warnings.push(crate::warning::Warning::new(
            "variance.one_repeat",
            format!(
                "{} of {} arms have one repeat per case ({}): their repeat noise is unknown, so within_case_var, between_case_var, repeat_noise_share and churn are undefined (null); run each case at least twice to measure it",
                unrepeated.len(),
                arms.len(),
                crate::text::some_names(&unrepeated, 5)
            ),
        ));
    }
    // Repeated, but every case mean alike: the share of their spread that is repeat noise is 0/0.
    let alike: Vec<&str> = arms
        .iter()
        .filter(|a| a.within_case_var.is_some() && a.case_means_var == Some(0.0))
        .map(|a| a.arm.as_str())
        .collect();
    if !alike.is_empty() {
        warnings.push(crate::warning::Warning::new(
            "variance.no_case_spread",
            format!(
                "{} arm(s) score every case alike on average ({}): repeat_noise_share (repeat noise over the case means' variance, 0/0 here) is undefined (null)",
                alike.len(),
                crate::text::some_names(&alike, 5)
            ),
        ));
    }
    let mdes: Vec<f64> = typical.iter().filter_map(|a| a.mde).collect();
    // Beyond reach counts as more than any figure (u64::MAX) in the median.
    let mut needed: Vec<u64> = typical
        .iter()
        .filter(|a| a.settleable.is_some())
        .map(|a| a.cases_needed.unwrap_or(u64::MAX))
        .collect();
    needed.sort_unstable();
    VarianceOutput {
        threshold_drop: threshold,
        confidence_level: cfg.confidence,
        power: POWER,
        cases: paired.cases.len(),
        clusters: paired.clustered.then_some(paired.n_units),
        typical_mde: (!mdes.is_empty()).then(|| percentile::quantile(&mdes, 0.5)),
        typical_cases_needed: median_needed(&needed),
        arms,
        warnings,
    }
}

/// Arms read in one pass over the cases' rows ([`columns`]): the case-major matrix holds an
/// arm's values a row (every arm) apart, so reading arm by arm touched every row once per arm.
/// 32 arms are four cache lines of each of a row's arrays, read in order; with 8 a pass (one
/// line) the passes took twice the time, each row's lines fetched by a different pass.
const ARMS_PER_PASS: usize = 32;

/// One arm's values over the paired cases present in it, in case order.
struct Column {
    /// Their case means s[i,a] (one per case: `means.len()` is the arm's cases).
    means: Vec<f64>,
    /// Σ of their within-case variances, where defined (two repeats or more), compensated.
    within: moments::Neumaier,
    /// How many cases have one.
    within_cases: usize,
    /// Σ repeats, compensated.
    repeats: moments::Neumaier,
    /// Cases whose repeats disagree on pass/fail ([`paired::churn`]): `None` while no case has
    /// two repeats.
    churn: Option<usize>,
}

/// The columns of `arms` over `cases`, in one pass over the cases' rows.
fn columns(m: &crate::io::CaseMatrix, cases: &[usize], arms: &[usize]) -> Vec<Column> {
    let mut out: Vec<Column> = arms
        .iter()
        .map(|_| Column {
            means: Vec::new(),
            within: moments::Neumaier::default(),
            within_cases: 0,
            repeats: moments::Neumaier::default(),
            churn: None,
        })
        .collect();
    for &c in cases {
        let row = m.cell(c, 0);
        for (column, &a) in out.iter_mut().zip(arms) {
            let cell = row + a;
            if m.repeats[cell] > 0 {
                column.means.push(m.mean[cell]);
                if !m.var[cell].is_nan() {
                    column.within.add(m.var[cell]);
                    column.within_cases += 1;
                }
                column.repeats.add(f64::from(m.repeats[cell]));
                if let Some(churned) = paired::cell_churns(m, cell) {
                    *column.churn.get_or_insert(0) += usize::from(churned);
                }
            }
        }
    }
    out
}

/// The median of sorted figures, `u64::MAX` standing for "beyond reach": `None` when empty or
/// when the median touches a figure beyond reach.
fn median_needed(sorted: &[u64]) -> Option<u64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let (a, b) = (sorted[(n - 1) / 2], sorted[n / 2]);
    (b != u64::MAX).then(|| (a as f64 / 2.0 + b as f64 / 2.0).ceil() as u64)
}

/// What the verdicts are judged at: the sweep's family size, guarantee and confidence.
struct Judged {
    family: usize,
    guarantee: crate::io::manifest::Guarantee,
    confidence: f64,
}

/// An arm's minimum detectable effect, cases needed (`Some(None)`: beyond reach) and the warnings
/// that say why either is undefined.
type Power = (
    Option<f64>,
    Option<Option<u64>>,
    Vec<crate::warning::Warning>,
);

/// An arm's minimum detectable effect (multiplier · se) and the cases at which its verdict
/// settles (`Some(None)` beyond reach); both undefined, with a warning, when the drops do not
/// vary or the se is undefined.
fn mde_and_cases_needed(
    exp: &Experiment,
    paired: &Paired,
    a: usize,
    multiplier: f64,
    judged: &Judged,
    warnings: &mut Vec<crate::warning::Warning>,
) -> (Option<f64>, Option<Option<u64>>) {
    use crate::analysis::decision::settle;
    let m = &exp.results.matrix;
    let threshold = exp.manifest.threshold_drop;
    let p = paired.arm(m, a);
    let (_, se) = paired.drop_mean_se(m, a);
    let label = &exp.results.arms[a];
    let too_few = || {
        crate::warning::Warning::new(
            "variance.too_few_units",
            format!(
                "arm {label:?}: fewer than two {} with results, so the se is undefined: mde and cases_needed are undefined",
                if paired.clustered {
                    "clusters"
                } else {
                    "cases"
                }
            ),
        )
    };
    // One unit shows no spread because it cannot: that is too few units, not no spread.
    if Paired::distinct_units(&p.unit) < 2 {
        warnings.push(too_few());
        (None, None)
    } else if estimate::no_variation_at(&p.drop, paired::rounding_scale(exp)) {
        warnings.push(crate::warning::Warning::new("variance.no_spread", format!(
            "arm {label:?}: every paired case has the same drop, so its variance is unknown (not zero): mde and cases_needed are undefined"
        )));
        (None, None)
    } else if let Some(se) = se.filter(|s| *s > 0.0) {
        let (lo, hi) = paired::experiment_score_bounds(exp);
        let intervals = paired.drop_intervals(m, a, (lo - hi, hi - lo));
        let within = settle::facing_within(
            &intervals,
            threshold,
            judged.guarantee,
            judged.family,
            judged.confidence,
        );
        let needed = settle::cases_to_clear(
            intervals.point(),
            threshold,
            se,
            (p.drop.len(), Paired::distinct_units(&p.unit)),
            dist::z_quantile(POWER),
            &within,
        );
        (Some(multiplier * se), Some(needed))
    } else {
        warnings.push(too_few());
        (None, None)
    }
}

/// The warning for an arm whose between-case variance comes out below 0 (`share`: its
/// repeat_noise_share, above 1 when defined; undefined when the case means do not vary).
fn negative_between(arm: &str, between: f64, share: Option<f64>) -> crate::warning::Warning {
    crate::warning::Warning::new(
        "variance.negative_between_case",
        format!(
            "arm {arm:?}: between_case_var is {} and repeat_noise_share {}: its case means vary less than repeat noise alone would make them, so this method-of-moments estimate falls below 0, which a variance cannot; read them as 0 and 100% (the differences between cases are not distinguishable from repeat noise); the values are kept as their formulas give them",
            crate::text::num(Some(between), 5),
            share.map_or(
                "is undefined (the case means do not vary)".into(),
                |s| format!("is {}", crate::text::percent(Some(s), 1))
            ),
        ),
    )
}
