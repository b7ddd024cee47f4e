//! `ablate sweep`: every arm against the baseline, on the main set.
//!
//! For arm a with paired cases i (present in both arms; stress cases excluded):
//! - `score` = `mean_i s[i,a]`; `drop` = `mean_i d[i]` with `d[i] = s[i,base] − s[i,a]`;
//! - `se` = sd(d)/√n, or the clustered se `√(C/(C−1)·Σ_c(Σ_{i∈c}(d[i] − drop))²)/n`;
//! - `rho` = Pearson(s[·,base], s[·,a]), how much pairing buys;
//! - CI (`ci_low`, `ci_high`, `ci_level`, `ci_method`: an [`Interval`], each arm on its own): percentile bootstrap over cases (clusters),
//!   one joint resample for all arms, from
//!   [`BOOTSTRAP_MIN_UNITS`](crate::analysis::paired::BOOTSTRAP_MIN_UNITS) units up (100,000: in
//!   practice never); with `--bootstrap 0`, drop ± z·se there. Below that many units the score
//!   interval (cases) or the wider of the t and effective-sample score intervals (clusters),
//!   which hold at every size measured ([`Paired::estimate`]); under the normal guarantee the
//!   clustered t interval at every size instead ([`paired::Intervals::estimate_under`]). When
//!   every paired case has the same drop (no spread), the se is null and the CI is the exact bound of
//!   [`crate::stats::estimate::Estimate::no_variation`] (`ci_method` `exact-bound`), and the
//!   p-value is an exact sign test over the units;
//! - family CI (`ci_family_low`, `ci_family_high`, …): the same arm's interval at level
//!   1 − α/K for the K arms compared (Bonferroni over score or t intervals, [`Paired::family`]),
//!   so that all K hold at once with probability ≥ 1 − α: the arms of one run are one family of
//!   claims about what to delete;
//! - `verdict` = needed if drop ≥ threshold_drop else removable-on-this-set; `confidence` =
//!   confident when the family CI (with `--per-arm`, the score or t interval at 1 − α) lies
//!   wholly on the verdict's side (ci_low ≥ threshold for needed, ci_high < threshold for removable: a
//!   non-inferiority result) and the arm has at least
//!   [`MIN_UNITS_TO_DECIDE`] units, else
//!   inconclusive ([`crate::analysis::vocab::judge`]);
//! - one-sided p for drop > 0 (normal approximation), Holm-adjusted across the run's arms;
//!   `mcnemar_p`, the exact McNemar test, when every paired score is 0/1 with one repeat (or every
//!   paired case has one repeat and results carry the harness's `passed` flags);
//! - `lost_cases` (pass in baseline, fail in arm), `gained_cases`, `lost_by_slice`, `churn`
//!   (cases whose per-repeat pass/fail differs), `missing_cases`. A case passes when its mean
//!   score ≥ pass_mark, or, when results have a `passed` column, when at least half its repeats
//!   passed ([`crate::io::CaseMatrix::case_passes`]).
//!
//! References: Miller, "Adding Error Bars to Evals" (2024) for case-level and clustered errors and
//! paired differences; Holm (1979); McNemar (1947).
//!
//! Cost: one pass over the case × arm matrix per bootstrap resample, O(B·n·arms); the family
//! intervals, O(n log n) per arm.

use crate::io::manifest::Guarantee;
mod changes;
use changes::Changes;

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::Serialize;

use crate::analysis::Config;
use crate::analysis::interval::{self, Interval};
use crate::analysis::paired::{self, CaseSet, MIN_UNITS_TO_DECIDE, Paired, PairedArm};
use crate::io::{CaseMatrix, Experiment};
use crate::stats::bootstrap::{Draws, RatioSums};
use crate::stats::dist;
use crate::stats::estimate::CiMethod;
use crate::stats::moments;

use crate::analysis::vocab::{Confidence, Verdict, judge};

/// The baseline's score on the main set.
#[derive(Debug, Clone, Serialize)]
pub struct BaselineScore {
    /// Mean of `s[i,base]` over the main set.
    pub score: f64,
    /// Its standard error (clustered when the cases have clusters); null when undefined (fewer
    /// than two units, or every case scored alike: `sweep.baseline_no_spread`).
    pub se: Option<f64>,
}

/// One arm against the baseline.
#[derive(Debug, Clone, Serialize)]
pub struct SweepArm {
    /// Arm label.
    pub arm: String,
    /// Units it removed (from the arms table; empty when there is none).
    pub removed: Vec<String>,
    /// The block of the units it removes (from the units table): null without units or when it
    /// removes none, `mixed` when they span blocks.
    pub block: Option<String>,
    /// Mean score of the arm over its paired cases.
    pub score: f64,
    /// Mean paired drop (baseline − arm); positive = the arm does worse.
    pub drop: f64,
    /// Standard error of the drop.
    pub se: Option<f64>,
    /// The drop's interval at the run's level (`ci_low`, `ci_high`, `ci_level`, `ci_method`;
    /// method `bootstrap-percentile`, `normal`, `score`, `t` or `exact-bound`).
    #[serde(flatten, serialize_with = "interval::ci")]
    pub ci: Option<Interval>,
    /// The family-wise interval that judges the verdict (`ci_family_*`): level 1 − α/K over the
    /// K arms compared (the run's own level with `--per-arm`).
    #[serde(flatten, serialize_with = "interval::ci_family")]
    pub ci_family: Option<Interval>,
    /// Resampling units (cases, or clusters) among the paired cases.
    pub units: usize,
    /// Correlation of baseline and arm case means.
    pub rho: Option<f64>,
    /// One-sided p-value for drop > 0, Holm-adjusted across the arms of this run.
    pub p_holm: Option<f64>,
    /// Exact McNemar p (two-sided) when every paired score is 0/1 with one repeat and the cases are
    /// not clustered (McNemar assumes independent pairs; null, with a warning, under clusters).
    pub mcnemar_p: Option<f64>,
    /// needed or removable-on-this-set.
    pub verdict: Verdict,
    /// confident or inconclusive: from the family-wise interval (the arm's own with
    /// `--per-arm`) under the guarantee in force, and never confident below `min_units` units.
    pub confidence: Confidence,
    /// Whether the arm is in the decision family (experiment.toml's `decide`; every arm without
    /// it). An arm outside is described (drop, intervals at the family's level) but not judged:
    /// its confidence is `inconclusive` and the decision leaves it out.
    pub in_family: bool,
    /// Under `guarantee = "normal"`: the confidence the any-distribution interval gives, so that
    /// a verdict confident only under the normal approximation says so; `None` under
    /// any-distribution.
    pub confidence_any_distribution: Option<Confidence>,
    /// Mean tokens per request the arm removes (units table, else the paired fall in `tokens_in`).
    pub tokens_removed: Option<f64>,
    /// Paired cases passing in the baseline and failing in the arm.
    pub lost_cases: usize,
    /// Paired cases failing in the baseline and passing in the arm.
    pub gained_cases: usize,
    /// Main-set cases whose per-repeat pass/fail differs in this arm (null with one repeat).
    pub churn: Option<usize>,
    /// Main-set baseline cases with no results in this arm.
    pub missing_cases: usize,
    /// Lost cases per `slice` (slices with at least one).
    pub lost_by_slice: BTreeMap<String, usize>,
    /// Paired cases.
    pub n: usize,
}

/// The family of claims a sweep judges together.
#[derive(Debug, Clone, Serialize)]
pub struct Family {
    /// Arms judged together (K): the arms compared with the baseline that experiment.toml's
    /// `decide` selects; 0 when it selects none.
    pub size: usize,
    /// The level every verdict's interval holds at together: 1 − α.
    pub level: f64,
    /// Each family interval's own level, 1 − α/K (under `--per-arm`, the run's own 1 − α).
    pub level_per_arm: f64,
    /// `bonferroni-score` (the family intervals decide, any distribution), `bonferroni-t` (the
    /// family's clustered t intervals decide, normal approximation) or `per-arm` (`--per-arm`:
    /// each arm's own interval decides).
    pub procedure: &'static str,
    /// The guarantee the verdicts rest on: `any-distribution` or `normal`.
    pub guarantee: Guarantee,
    /// What this experiment can certify: the smallest threshold at which an arm whose mean drop
    /// is zero, with the spread of the median arm (the median of the deciding intervals' upper
    /// half-widths, hi − drop: the family's, or each arm's own with `--per-arm`), would be
    /// confidently removable with these cases, this family and this guarantee. Below it an arm
    /// of typical spread cannot be certified removable (one that varies less can); `None`
    /// without arms.
    pub min_certifiable_threshold: Option<f64>,
    /// One line for the report: the family size and the procedure.
    pub note: String,
}

impl Family {
    /// The family of `size` arms at `confidence`, judged family-wise unless `per_arm`, under
    /// `guarantee`.
    pub fn new(size: usize, confidence: f64, per_arm: bool, guarantee: Guarantee) -> Family {
        let alpha = 1.0 - confidence;
        // Under --per-arm each arm's interval holds at the run's own level.
        let level_per_arm = if per_arm {
            confidence
        } else {
            1.0 - alpha / size.max(1) as f64
        };
        let pct = crate::text::percent_level;
        Family {
            size,
            level: confidence,
            level_per_arm,
            min_certifiable_threshold: None,
            procedure: match (per_arm, guarantee) {
                (true, _) => "per-arm",
                (false, Guarantee::AnyDistribution) => "bonferroni-score",
                (false, Guarantee::Normal) => "bonferroni-t",
            },
            guarantee,
            note: if size == 0 {
                "no arm is judged (no arm with paired cases is in the decision family), so no verdict is confident".into()
            } else if per_arm {
                format!(
                    "each of the {size} arms is judged at its own {} (--per-arm): across them, the chance of some wrong confident verdict is up to {:.0}%",
                    pct(confidence),
                    100.0 * (1.0 - confidence.powi(size.max(1) as i32))
                )
            } else if size == 1 {
                // One arm: no family to share the error over.
                match guarantee {
                    Guarantee::AnyDistribution => format!(
                        "1 arm judged: a confident verdict holds at {} for any score distribution (its score or t interval)",
                        pct(confidence)
                    ),
                    Guarantee::Normal => format!(
                        "1 arm judged under the normal approximation: a confident verdict holds at {} as the clustered t interval does (asymptotic)",
                        pct(confidence)
                    ),
                }
            } else {
                match guarantee {
                    Guarantee::AnyDistribution => format!(
                        "{size} arms judged as one family: every confident verdict holds together at {} for any score distribution (each arm's interval at 1 − {:.2}/{size}, Bonferroni over score or t intervals)",
                        pct(confidence),
                        alpha
                    ),
                    Guarantee::Normal => format!(
                        "{size} arms judged as one family under the normal approximation: every confident verdict holds together at {} as the clustered t intervals do (each at 1 − {:.2}/{size}, Bonferroni; asymptotic)",
                        pct(confidence),
                        alpha
                    ),
                }
            },
        }
    }
}

/// What `ablate sweep` reports.
#[derive(Debug, Clone, Serialize)]
pub struct SweepOutput {
    /// Eval set name.
    pub set: String,
    /// Baseline arm label.
    pub baseline_arm: String,
    /// Threshold agreed before the run.
    pub threshold_drop: f64,
    /// Main-set cases with baseline results.
    pub cases: usize,
    /// Most common repeats per case in the baseline.
    pub repeats: u32,
    /// Baseline churn: the noise floor of lost cases (null with one repeat).
    pub churn_baseline: Option<usize>,
    /// Number of clusters (null without a cluster column).
    pub clusters: Option<usize>,
    /// Confidence level of the intervals.
    pub confidence_level: f64,
    /// Bootstrap resamples (0 = normal intervals).
    pub bootstrap: usize,
    /// Seed of the resamples.
    pub seed: u64,
    /// How the verdicts' confidence is controlled across the arms.
    pub family: Family,
    /// Units (cases, or clusters) an arm needs before a verdict is called confident.
    pub min_units: usize,
    /// The baseline's score.
    pub baseline: BaselineScore,
    /// Every other arm.
    pub arms: Vec<SweepArm>,
    /// Arms left out (no paired case) and similar notes.
    pub warnings: Vec<crate::warning::Warning>,
}

/// Mean tokens the arm removes: Σ units.tokens of its removed units, else the mean over its
/// paired main-set cases of the fall in `tokens_in` from the baseline.
pub fn tokens_removed(exp: &Experiment, paired: &Paired, arm: usize) -> Option<f64> {
    let label = &exp.results.arms[arm];
    let removed = exp
        .arms
        .as_ref()
        .and_then(|a| a.get(label))
        .map(|s| &s.removed);
    if let (Some(removed), Some(units)) = (removed, &exp.units)
        && !removed.is_empty()
    {
        return Some(moments::sum(
            removed
                .iter()
                .filter_map(|u| units.index.get(u).map(|&i| units.specs[i].tokens)),
        ));
    }
    let m = &exp.results.matrix;
    let tokens = m.tokens.as_ref()?;
    let diffs: Vec<f64> = paired
        .cases
        .iter()
        .filter(|&&c| m.present(c, arm))
        .map(|&c| tokens[m.cell(c, paired.baseline)] - tokens[m.cell(c, arm)])
        .filter(|d| !d.is_nan())
        .collect();
    (!diffs.is_empty()).then(|| moments::mean(&diffs))
}

/// The block of the units an arm removes: their common block, `mixed` when they span several,
/// `None` without a units table, without removed units, or with a unit the table lacks.
fn block_of(exp: &Experiment, arm: &str) -> Option<String> {
    let units = exp.units.as_ref()?;
    let removed = &exp.arms.as_ref()?.get(arm)?.removed;
    let mut blocks = removed
        .iter()
        .map(|u| units.index.get(u).map(|&i| units.specs[i].block.as_str()));
    let first = blocks.next()??;
    for b in blocks {
        if b? != first {
            return Some("mixed".into());
        }
    }
    Some(first.to_string())
}

/// The arms a sweep judges together, K: every other arm sharing a main-set case with the
/// baseline that experiment.toml's `decide` selects (0 when it selects none). The family the
/// verdicts are judged in ([`Family`]).
pub fn family_size(exp: &Experiment) -> usize {
    let m = &exp.results.matrix;
    let paired = Paired::new(exp, CaseSet::Main);
    (0..m.n_arms)
        .filter(|&a| a != paired.baseline)
        .filter(|&a| paired.cases.iter().any(|&c| m.present(c, a)))
        .filter(|&a| in_family(exp, a))
        .count()
}

/// Whether arm `a` is in the decision family (experiment.toml's `decide`): only such an arm's
/// verdict may be confident, in the sweep, on the stress slice and in production.
pub fn in_family(exp: &Experiment, a: usize) -> bool {
    let name = &exp.results.arms[a];
    exp.manifest.decides(name, &removed_units(exp, name))
}

/// The arms other than the baseline that share a main-set case with it; each other arm gets a
/// warning and is left out.
fn arms_with_pairs(
    exp: &Experiment,
    paired: &Paired,
    warnings: &mut Vec<crate::warning::Warning>,
) -> Vec<usize> {
    let m = &exp.results.matrix;
    (0..m.n_arms)
        .filter(|&a| a != paired.baseline)
        .filter(|&a| {
            let n = paired.cases.iter().filter(|&&c| m.present(c, a)).count();
            if n == 0 {
                warnings.push(crate::warning::Warning::new(
                    "sweep.arm_without_pairs",
                    format!(
                        "arm {:?} shares no main-set case with the baseline; it is left out",
                        exp.results.arms[a]
                    ),
                ));
            }
            n > 0
        })
        .collect()
}

/// The joint bootstrap of every arm's mean drop (one resample of units for all arms), or none
/// with `--bootstrap 0`.
fn bootstrap_draws(paired: &Paired, pairs: &[&PairedArm], cfg: &Config) -> Option<Draws> {
    (cfg.bootstrap > 0).then(|| {
        let mut sums = RatioSums::new(paired.n_units, pairs.len());
        for (k, p) in pairs.iter().enumerate() {
            paired.add_mean(&mut sums, k, &p.unit, &p.drop);
        }
        cfg.resample(&sums)
    })
}

/// The one-sided p for drop > 0: the normal approximation from the se, or, when every unit
/// moved the same way (`flat`), the exact sign test over the units.
fn p_positive(flat: bool, drop: f64, se: Option<f64>, units: usize) -> f64 {
    if flat {
        if drop > 0.0 {
            dist::sign_test_greater(units as u64, 0)
        } else {
            1.0
        }
    } else {
        se.map_or(f64::NAN, |s| dist::p_one_sided_positive(drop, s))
    }
}

/// What judging one arm of the sweep reads.
struct OneArm<'a> {
    exp: &'a Experiment,
    cfg: &'a Config,
    paired: &'a Paired,
    draws: Option<&'a Draws>,
    family_size: usize,
    /// The score range's ends.
    bounds: (f64, f64),
    threshold: f64,
    guarantee: Guarantee,
}

impl OneArm<'_> {
    /// Arm `a` (the `k`-th judged) with its pairs and changes: its row of the sweep, its p-value
    /// for Holm's step-down, its warning when its drops have no spread, whether its scores are
    /// binary, and whether the normal approximation is doubtful for it (under `normal`).
    fn judge(
        &self,
        k: usize,
        a: usize,
        p: &PairedArm,
        changes: Changes,
        in_family: bool,
    ) -> (SweepArm, f64, Option<crate::warning::Warning>, bool, bool) {
        let (exp, cfg, paired, m) = (self.exp, self.cfg, self.paired, &self.exp.results.matrix);
        let (lo, hi, threshold, family_size) = (
            self.bounds.0,
            self.bounds.1,
            self.threshold,
            self.family_size,
        );
        let draws = self.draws;
        let intervals = paired.drop_intervals(m, a, (lo - hi, hi - lo));
        let drop = intervals.point();
        let est = intervals.estimate_under(
            self.guarantee,
            draws.as_ref().map(|d| d.percentile_ci(k, cfg.confidence)),
            cfg.confidence,
        );
        let fam = intervals.family_under(self.guarantee, family_size, cfg.confidence);
        let units = intervals.units();
        let flat = est.ci_method == CiMethod::ExactBound;
        let warning = flat.then(|| no_spread(&exp.results.arms[a], drop, units, paired.clustered));
        // The se column is the sample's (plain, or clustered CR1) under either guarantee, as
        // SPEC defines it and `variance` plans with; the normal interval's wider se_c (with the
        // jackknife) stays inside the interval. Undefined where the estimate's is.
        let se = est.se.and(intervals.se());
        // The verdict's interval: the family's, or with --per-arm the arm's own at 1 − α by
        // the small-sample interval (the percentile bootstrap, once the arm's CI from 100
        // units, called 6.7% of arms on the threshold confident at 95% with 100 binary
        // cases: ties).
        let judged = if cfg.per_arm {
            intervals.family_under(self.guarantee, 1, cfg.confidence)
        } else {
            fam
        };
        let (verdict, mut confidence) = judge(drop, threshold, &judged, units);
        if !in_family {
            confidence = Confidence::Inconclusive;
        }
        let confidence_any_distribution = (self.guarantee == Guarantee::Normal).then(|| {
            let any = intervals.family(if cfg.per_arm { 1 } else { family_size }, cfg.confidence);
            match in_family {
                true => judge(drop, threshold, &any, units).1,
                false => Confidence::Inconclusive,
            }
        });
        let doubtful = self.guarantee == Guarantee::Normal && intervals.normal_doubtful();
        let binary = changes.binary;
        let arm = SweepArm {
            arm: exp.results.arms[a].clone(),
            removed: removed_units(exp, &exp.results.arms[a]),
            block: block_of(exp, &exp.results.arms[a]),
            score: moments::mean(&p.arm),
            drop,
            se,
            ci: est.interval(),
            // The interval that judges: the family's, or under --per-arm the arm's own.
            ci_family: judged.interval(),
            units,
            rho: moments::pearson(&p.base, &p.arm),
            p_holm: None,
            mcnemar_p: (binary && !paired.clustered)
                .then(|| dist::mcnemar_exact(changes.lost as u64, changes.gained as u64)),
            verdict,
            confidence,
            in_family,
            confidence_any_distribution,
            tokens_removed: tokens_removed(exp, paired, a),
            lost_cases: changes.lost,
            gained_cases: changes.gained,
            churn: changes.churn,
            missing_cases: paired.cases.len() - p.pos.len(),
            lost_by_slice: changes.lost_by_slice,
            n: p.pos.len(),
        };
        (
            arm,
            p_positive(flat, drop, se, units),
            warning,
            binary,
            doubtful,
        )
    }
}

/// The warning `sweep.normal_doubtful` naming the arms (of `of`) whose drops are too skewed or heavy-tailed for
/// their number of units for the normal approximation to be trusted ([`paired::Intervals::normal_doubtful`]).
fn normal_doubtful(arms: &[String], of: usize) -> Option<crate::warning::Warning> {
    const SHOWN: usize = 8;
    (!arms.is_empty()).then(|| {
        crate::warning::Warning::new(
            "sweep.normal_doubtful",
            format!(
                "the normal approximation is doubtful for {} of {of} arm(s) ({}{}): their drops are skewed or heavy-tailed (few units changed) for their number of units (Cochran's rule, n < 25·skewness², and n < 25·excess kurtosis), where the t interval's family-wise error can far exceed α; judge them with --guarantee any-distribution, or run more cases",
                arms.len(),
                arms.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", "),
                if arms.len() > SHOWN { ", …" } else { "" }
            ),
        )
    })
}

/// The family's `min_certifiable_threshold`: the median over arms (with spread) of the upper
/// half-width, hi − drop, of the interval that decides: the family interval, or with `per_arm`
/// each arm's own interval (which judges then). Each half-width counts at most `span`, the most
/// a drop can be (scores in [lo, hi]: hi − lo): an arm that changes nothing has no interval above
/// it, so a figure above the score range (an arm with a negative drop whose interval was
/// clipped at the range's end) says nothing about what can be certified. Arms with fewer than
/// [`MIN_UNITS_TO_DECIDE`] units count not: none of them is called confident at any threshold.
fn min_certifiable(arms: &[SweepArm], span: f64) -> Option<f64> {
    let mut up: Vec<f64> = arms
        .iter()
        .filter(|a| a.in_family && a.se.is_some_and(|s| s > 0.0))
        .filter(|a| a.units >= MIN_UNITS_TO_DECIDE)
        .filter_map(|a| {
            // `ci_family` is the interval that decides, under --per-arm too.
            a.ci_family.map(|i| (i.high - a.drop).min(span))
        })
        .filter(|h| h.is_finite())
        .collect();
    if up.is_empty() {
        return None;
    }
    up.sort_by(f64::total_cmp);
    let n = up.len();
    Some(if n % 2 == 1 {
        up[n / 2]
    } else {
        (up[n / 2 - 1] + up[n / 2]) / 2.0
    })
}

/// Runs the sweep.
pub fn run(exp: &Experiment, cfg: &Config) -> SweepOutput {
    let m = &exp.results.matrix;
    let paired = Paired::new(exp, CaseSet::Main);
    let base = paired.baseline;
    let threshold = exp.manifest.threshold_drop;
    let pass_mark = exp.manifest.pass_mark;
    let guarantee = cfg.guarantee.unwrap_or(exp.manifest.guarantee);
    let (lo, hi) = paired::experiment_score_bounds(exp);
    let mut warnings = Vec::new();

    let arm_ids = arms_with_pairs(exp, &paired, &mut warnings);
    let pairs = paired.arms(m, &arm_ids);
    let changes = Changes::all(exp, &paired, &pairs, &arm_ids, pass_mark);
    // The drops' resamples, where an interval uses them: not under the normal approximation,
    // whose intervals are the t at every size.
    let draws = (paired.bootstraps_means() && guarantee == Guarantee::AnyDistribution)
        .then(|| bootstrap_draws(&paired, &pairs, cfg))
        .flatten();

    let judged: Vec<bool> = arm_ids.iter().map(|&a| in_family(exp, a)).collect();
    // K, as reported: 0 when `decide` selects no arm. The intervals divide α by at least 1.
    let judged_arms = judged.iter().filter(|&&j| j).count();
    let family_size = judged_arms.max(1);
    // Each arm's estimates on its own (rayon; collected in arm order, so the output is the same
    // at any thread count).
    let per_arm: Vec<(SweepArm, f64, Option<crate::warning::Warning>, bool, bool)> = arm_ids
        .par_iter()
        .zip(pairs.par_iter())
        .zip(changes.into_par_iter())
        .zip(judged.par_iter())
        .enumerate()
        .map(|(k, (((&a, p), changes), &in_family))| {
            let on = OneArm {
                exp,
                cfg,
                paired: &paired,
                draws: draws.as_ref(),
                family_size,
                bounds: (lo, hi),
                threshold,
                guarantee,
            };
            on.judge(k, a, p, changes, in_family)
        })
        .collect();
    let mut arms = Vec::with_capacity(per_arm.len());
    let mut p_raw = Vec::with_capacity(per_arm.len());
    let mut mcnemar_withheld = false;
    let mut doubtful = Vec::new();
    for (arm, p, warning, binary, doubt) in per_arm {
        if doubt {
            doubtful.push(arm.arm.clone());
        }
        arms.push(arm);
        p_raw.push(p);
        warnings.extend(warning);
        mcnemar_withheld |= binary;
    }
    warnings.extend(normal_doubtful(&doubtful, arms.len()));
    let mut family = Family::new(judged_arms, cfg.confidence, cfg.per_arm, guarantee);
    family.min_certifiable_threshold = min_certifiable(&arms, hi - lo);
    if family.min_certifiable_threshold.is_none() && arms.iter().any(|a| a.in_family) {
        // Said, not a bare null: the figure is a median over arms with spread and enough units.
        let spread = arms
            .iter()
            .any(|a| a.in_family && a.se.is_some_and(|s| s > 0.0));
        warnings.push(crate::warning::Warning::new(
            "sweep.not_certifiable",
            if spread {
                format!(
                    "every arm of the family with spread has fewer than {MIN_UNITS_TO_DECIDE} units, and none is called confident below that at any threshold, so min_certifiable_threshold is undefined (null)"
                )
            } else {
                "no arm of the family has drops with spread (an se), so min_certifiable_threshold, the median arm's interval above its drop, is undefined (null)".to_string()
            },
        ));
    }
    warnings.extend(sweep_warnings(&arms, paired.clustered, mcnemar_withheld));
    set_holm(&mut arms, &p_raw);
    let baseline = BaselineScore::of(m, &paired);
    if baseline.se.is_none() && paired.n_units >= 2 {
        warnings.push(crate::warning::Warning::new(
            "sweep.baseline_no_spread",
            format!(
                "the baseline scores every paired case alike ({}): its se is undefined (null)",
                baseline.score
            ),
        ));
    }
    let churn_baseline = paired::churn(m, &paired.cases, base);
    warnings.extend(undefined_warnings(
        &arms,
        churn_baseline.is_none(),
        paired.clustered,
        paired.n_units,
    ));

    SweepOutput {
        set: exp.manifest.set.clone(),
        baseline_arm: exp.manifest.baseline_arm.clone(),
        threshold_drop: threshold,
        cases: paired.cases.len(),
        repeats: paired::modal_repeats(m, &paired.cases, base),
        churn_baseline,
        clusters: paired.clustered.then_some(paired.n_units),
        confidence_level: cfg.confidence,
        bootstrap: cfg.bootstrap,
        seed: cfg.seed,
        family,
        min_units: MIN_UNITS_TO_DECIDE,
        baseline,
        arms,
        warnings,
    }
}

impl BaselineScore {
    /// The baseline's mean score over the paired cases, with its (clustered) se.
    fn of(m: &CaseMatrix, paired: &Paired) -> BaselineScore {
        let scores: Vec<f64> = paired
            .cases
            .iter()
            .map(|&c| m.mean[m.cell(c, paired.baseline)])
            .collect();
        let (score, se) = paired.mean_se(&scores, &paired.unit);
        // Every case scored alike: the se is undefined, not a measured 0.
        let se = se.filter(|&se| se > 0.0);
        BaselineScore { score, se }
    }
}

/// The units an arm removes, from the arms table (none without one).
fn removed_units(exp: &Experiment, arm: &str) -> Vec<String> {
    exp.arms
        .as_ref()
        .and_then(|t| t.get(arm))
        .map(|s| s.removed.clone())
        .unwrap_or_default()
}

/// The warning for an arm whose paired drops are all equal: no se, an exact-bound interval.
fn no_spread(arm: &str, drop: f64, units: usize, clustered: bool) -> crate::warning::Warning {
    crate::warning::Warning::new(
        "sweep.no_spread",
        format!(
            "arm {arm:?}: every paired case has the same drop ({drop}); the se is undefined and the interval is the exact bound for {} {}",
            units,
            if clustered { "clusters" } else { "cases" }
        ),
    )
}

/// Warnings over all arms: McNemar withheld with clusters, and arms with too few units to decide.
fn sweep_warnings(
    arms: &[SweepArm],
    clustered: bool,
    mcnemar_withheld: bool,
) -> Vec<crate::warning::Warning> {
    let mut warnings = Vec::new();
    if clustered && mcnemar_withheld {
        warnings.push(crate::warning::Warning::new("sweep.mcnemar_with_clusters", "mcnemar_p is not reported: the cases come in clusters, and McNemar's test assumes independent pairs (p_holm uses the clustered se)",));
    }
    let few = arms
        .iter()
        .filter(|a| a.units < MIN_UNITS_TO_DECIDE)
        .count();
    if few > 0 {
        warnings.push(crate::warning::Warning::new("sweep.too_few_units", format!(
            "{few} arm(s) have fewer than {MIN_UNITS_TO_DECIDE} {}: too few to decide, so none of them is called confident whatever its interval",
            if clustered { "clusters" } else { "cases" }
        )));
    }
    warnings
}

/// Warnings for fields the data leave undefined: rho where the arm or the baseline scores every
/// paired case alike (`sweep.rho_undefined`), churn with one repeat per case
/// (`sweep.one_repeat`), and every se, interval and p with one unit (`sweep.one_unit`).
fn undefined_warnings(
    arms: &[SweepArm],
    baseline_once: bool,
    clustered: bool,
    units: usize,
) -> Vec<crate::warning::Warning> {
    let mut warnings = Vec::new();
    let no_rho: Vec<&str> = arms
        .iter()
        .filter(|a| a.rho.is_none() && a.units >= 2)
        .map(|a| a.arm.as_str())
        .collect();
    if !no_rho.is_empty() {
        warnings.push(crate::warning::Warning::new(
            "sweep.rho_undefined",
            format!(
                "{} arm(s) have no rho ({}): the arm, or the baseline, scores every paired case alike, so their correlation is undefined (null)",
                no_rho.len(),
                crate::text::some_names(&no_rho, 5)
            ),
        ));
    }
    let once = arms.iter().filter(|a| a.churn.is_none()).count();
    if baseline_once || once > 0 {
        warnings.push(crate::warning::Warning::new(
            "sweep.one_repeat",
            format!(
                "{}{} ran each case once: churn (cases whose repeats disagree on pass/fail) is undefined (null) there; run 2 or more repeats to measure the noise floor",
                if baseline_once { "the baseline" } else { "" },
                match (baseline_once, once) {
                    (_, 0) => String::new(),
                    (true, n) => format!(" and {n} arm(s)"),
                    (false, n) => format!("{n} arm(s)"),
                }
            ),
        ));
    }
    if units < 2 {
        warnings.push(crate::warning::Warning::new(
            "sweep.one_unit",
            format!(
                "the paired cases are one {}: every se, interval and p_holm is undefined (null), and no arm can be called confident",
                if clustered { "cluster" } else { "case" }
            ),
        ));
    }
    warnings
}

/// Holm's adjustment over the arms with a defined one-sided p-value (`p_raw`, NaN where
/// undefined), into each arm's `p_holm`.
fn set_holm(arms: &mut [SweepArm], p_raw: &[f64]) {
    let defined: Vec<usize> = (0..p_raw.len()).filter(|&i| !p_raw[i].is_nan()).collect();
    let adjusted = dist::holm(&defined.iter().map(|&i| p_raw[i]).collect::<Vec<_>>());
    for (i, p) in defined.into_iter().zip(adjusted) {
        arms[i].p_holm = Some(p);
    }
}
