//! `ablate interactions`: do cuts add up?
//!
//! Leave-one-out drops are each measured with everything else still present, and nothing says
//! they add. For every composed arm S (see [`crate::analysis::cover`]) with components k, over the
//! main-set cases present in the baseline, S and every component:
//! - predicted_drop = Σ_k drop_k; predicted_score = baseline score − predicted_drop;
//! - `e[i] = d[i,S] − Σ_k d[i,k]`; interaction = mean e = measured_drop − predicted_drop, with
//!   se = sd(e)/√n (clustered when cases have clusters) and the CI the sweep would give a drop
//!   under the guarantee in force ([`crate::analysis::paired::Intervals::estimate_under`]);
//! - interaction_verdict = `super-additive` when the family interval's low end is above 0 (the
//!   joint cut costs more than its parts, as when two units carry the same fact), `sub-additive`
//!   when its high end is below 0, else `additive`. The family interval is the sweep's: under
//!   the guarantee in force, at 1 − α/K over the K composed arms (the arm's own level with
//!   `--per-arm`), the exact bound when every e is the same
//!   ([`crate::analysis::paired::Intervals::family_under`]);
//! - lost cases, by slice, and the cases lost *only jointly* (lost in S, passing in every
//!   component): where the interaction lives.
//!
//! The pairwise matrix lists every arm removing exactly two units whose two single-unit arms were
//! measured. When the arms cover all 2^k subsets of k ≤ 12 units, exact Shapley values and pairwise
//! Shapley interaction indices of v(T) = score with exactly T present are reported (with a check
//! that Σφ = v(U) − v(∅)). Arms carrying a `design` label (as written by `ablate plan`) are fitted
//! by least squares on the ±1 coding (+1 = unit present): main effects and two-factor interactions
//! (when the design can separate them), per case, so each effect has a case-level se.

use std::collections::{BTreeMap, BTreeSet};

use rayon::prelude::*;
use serde::Serialize;

use crate::analysis::Config;
use crate::analysis::cover::{self, Candidate};
use crate::analysis::paired::{CaseSet, Intervals, MIN_UNITS_TO_DECIDE, Paired, Sample};
use crate::error::Result;
use crate::io::Experiment;
use crate::io::manifest::Guarantee;
use crate::stats::bootstrap::{Draws, RatioSums};

use crate::stats::moments::{self, Neumaier};

mod design_fit;
mod factorial;
mod pairwise;

/// Whether a composed cut costs more or less than the sum of its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InteractionVerdict {
    /// ci_low > 0: the joint cut costs more than the sum of its parts.
    SuperAdditive,
    /// ci_high < 0: the joint cut costs less.
    SubAdditive,
    /// The CI contains 0.
    Additive,
    /// No interval could be computed (a single paired case or cluster), or fewer than
    /// [`MIN_UNITS_TO_DECIDE`] units, too few to decide whatever the interval: nothing can be
    /// said.
    Undetermined,
}

impl InteractionVerdict {
    /// Name used in tables.
    pub fn as_str(self) -> &'static str {
        match self {
            InteractionVerdict::SuperAdditive => "super-additive",
            InteractionVerdict::SubAdditive => "sub-additive",
            InteractionVerdict::Additive => "additive",
            InteractionVerdict::Undetermined => "undetermined",
        }
    }
}

/// A composed arm measured against the sum of its parts.
#[derive(Debug, Clone, Serialize)]
pub struct ComposedArm {
    /// Arm label.
    pub arm: String,
    /// Units it removes.
    pub removed: Vec<String>,
    /// The arms it is composed of.
    pub components: Vec<String>,
    /// Σ of the components' drops.
    pub predicted_drop: f64,
    /// The composed arm's own drop.
    pub measured_drop: f64,
    /// Baseline score − predicted_drop.
    pub predicted_score: f64,
    /// The composed arm's score.
    pub measured_score: f64,
    /// measured_drop − predicted_drop.
    pub interaction: f64,
    /// Its standard error: null when the interaction values do not vary (unknown, not zero) or
    /// with fewer than two units.
    pub se: Option<f64>,
    /// Its interval (`ci_low`, `ci_high`, `ci_level`, `ci_method`).
    #[serde(flatten, serialize_with = "crate::analysis::interval::ci")]
    pub ci: Option<crate::analysis::interval::Interval>,
    /// The interval that judges it (`ci_family_low`, …): the sweep's family interval under the
    /// guarantee in force, at 1 − α/K over the K composed arms (the arm's own level with
    /// `--per-arm`).
    #[serde(flatten, serialize_with = "crate::analysis::interval::ci_family")]
    pub ci_family: Option<crate::analysis::interval::Interval>,
    /// super-additive, sub-additive or additive, by `ci_family`.
    pub interaction_verdict: InteractionVerdict,
    /// Cases passing in the baseline and failing in the composed arm.
    pub lost_cases: usize,
    /// Lost cases by slice.
    pub lost_by_slice: BTreeMap<String, usize>,
    /// Lost cases that pass in every component: lost only when the parts are cut together.
    pub lost_only_jointly: usize,
    /// Those cases by slice.
    pub lost_only_jointly_by_slice: BTreeMap<String, usize>,
    /// Where the loss concentrates, e.g. "22 of 26 lost cases are in refunds/out-of-window".
    pub concentration: Option<String>,
    /// Cases used (present in the baseline, the arm and every component).
    pub n: usize,
    /// Whether the components came from the arms table (else from the exact-cover search).
    pub explicit_components: bool,
}

/// One cell of the pairwise interaction matrix.
#[derive(Debug, Clone, Serialize)]
pub struct PairInteraction {
    /// First unit (a < b).
    pub a: String,
    /// Second unit.
    pub b: String,
    /// The arm removing both.
    pub arm: String,
    /// drop(ab) − drop(a) − drop(b), over the cases present in all three arms.
    pub interaction: f64,
    /// Its standard error: null when the values do not vary (unknown, not zero) or with fewer
    /// than two units.
    pub se: Option<f64>,
}

/// A Shapley interaction index.
#[derive(Debug, Clone, Serialize)]
pub struct ShapleyPair {
    /// First unit.
    pub a: String,
    /// Second unit.
    pub b: String,
    /// I_ab.
    pub index: f64,
}

/// Shapley attribution of the score over a full factorial.
#[derive(Debug, Clone, Serialize)]
pub struct ShapleyOutput {
    /// The k units of the factorial.
    pub units: Vec<String>,
    /// φ per unit: the unit's average contribution to the score.
    pub values: BTreeMap<String, f64>,
    /// Pairwise interaction indices.
    pub interactions: Vec<ShapleyPair>,
    /// v(U): score with every unit present.
    pub v_all: f64,
    /// v(∅): score with none of them.
    pub v_none: f64,
    /// Cases present in all 2^k arms.
    pub cases: usize,
}

/// An effect estimated from a designed experiment.
#[derive(Debug, Clone, Serialize)]
pub struct Effect {
    /// The unit (main effect) or units (two-factor interaction), joined by `×`.
    pub term: String,
    /// Effect on the score of keeping the unit(s): 2β on the ±1 coding.
    pub effect: f64,
    /// Its standard error (case level): null when the effect is the same on every case, or with
    /// one unit (`interactions.design_no_spread`).
    pub se: Option<f64>,
}

/// Least-squares fit of a designed experiment's arms.
#[derive(Debug, Clone, Serialize)]
pub struct DesignFit {
    /// Design label from the arms table.
    pub design: String,
    /// Factors (units).
    pub units: Vec<String>,
    /// Runs (arms) in the design.
    pub runs: usize,
    /// Cases present in every run.
    pub cases: usize,
    /// Main effects.
    pub main_effects: Vec<Effect>,
    /// Two-factor interactions (empty when the design aliases them with main effects or each
    /// other).
    pub two_factor: Vec<Effect>,
    /// What could not be estimated, and why.
    pub note: Option<String>,
}

/// What `ablate interactions` reports.
#[derive(Debug, Clone, Serialize)]
pub struct InteractionsOutput {
    /// Composed arms.
    pub composed: Vec<ComposedArm>,
    /// Pairwise interactions.
    pub pairwise: Vec<PairInteraction>,
    /// Shapley values when a full factorial was run.
    pub shapley: Option<ShapleyOutput>,
    /// Designed experiments found in the arms table.
    pub designs: Vec<DesignFit>,
    /// Notes on arms that could not be analysed.
    pub warnings: Vec<crate::warning::Warning>,
}

/// A composed arm and the arms it is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Composition {
    /// The composed arm (index in the results matrix).
    pub arm: usize,
    /// Its components.
    pub components: Vec<usize>,
    /// Whether the components were given in the arms table.
    pub explicit: bool,
}

/// The composed arms of an experiment, and notes on arms that could not be used.
pub fn composed_arms(exp: &Experiment) -> (Vec<Composition>, Vec<crate::warning::Warning>) {
    let mut warnings = Vec::new();
    let Some(arms) = &exp.arms else {
        return (Vec::new(), warnings);
    };
    let base = exp.baseline_index();
    let measured: Vec<usize> = (0..exp.results.arms.len()).filter(|&a| a != base).collect();
    let removed_of = |a: usize| -> BTreeSet<&str> {
        arms.get(&exp.results.arms[a])
            .map(|s| s.removed.iter().map(String::as_str).collect())
            .unwrap_or_default()
    };
    let candidates: Vec<Candidate> = measured
        .iter()
        .map(|&a| Candidate {
            label: exp.results.arms[a].as_str(),
            removed: removed_of(a),
        })
        .collect();
    let mut out = Vec::new();
    for &a in &measured {
        let spec = arms.get(&exp.results.arms[a]);
        let explicit = spec.map(|s| s.components.clone()).unwrap_or_default();
        if !explicit.is_empty() {
            let idx: Vec<usize> = explicit
                .iter()
                .filter_map(|c| exp.results.arm_index(c))
                .collect();
            if idx.len() != explicit.len() {
                warnings.push(crate::warning::Warning::new(
                    "interactions.components_without_results",
                    format!(
                        "arm {:?} lists components without results; it is not analysed as composed",
                        exp.results.arms[a]
                    ),
                ));
                continue;
            }
            let union: BTreeSet<&str> = idx.iter().flat_map(|&c| removed_of(c)).collect();
            if union != removed_of(a) {
                warnings.push(crate::warning::Warning::new("interactions.components_mismatch", format!(
                    "arm {:?}: its components together remove {:?}, not what the arm removes; the interaction is still computed against them",
                    exp.results.arms[a], union
                )));
            }
            out.push(Composition {
                arm: a,
                components: idx,
                explicit: true,
            });
            continue;
        }
        let target = removed_of(a);
        if target.len() < 2 {
            continue;
        }
        if let Some(labels) = cover::best_cover(&target, &candidates) {
            let components = labels
                .iter()
                .filter_map(|l| exp.results.arm_index(l))
                .collect();
            out.push(Composition {
                arm: a,
                components,
                explicit: false,
            });
        }
    }
    (out, warnings)
}

/// One composed arm's paired cases (present in the baseline, the arm and every component):
/// e[i] = d_S[i] − Σ_k d_k[i] and each case's unit, the compensated sums of the baseline's, the
/// arm's and each component's case means over those cases, and the cases the arm loses.
struct Work {
    arm: usize,
    components: Vec<usize>,
    explicit: bool,
    e: Vec<f64>,
    units: Vec<u32>,
    base_sum: Neumaier,
    arm_sum: Neumaier,
    component_sums: Vec<Neumaier>,
    /// Cases passing in the baseline and failing in the arm, each with whether it passes in
    /// every component (lost only jointly).
    lost: Vec<(usize, bool)>,
}

impl Work {
    /// The mean over the paired cases of a sum of case means.
    fn mean(&self, sum: &Neumaier) -> f64 {
        sum.total() / self.e.len() as f64
    }
}

/// For each composed arm, its cases paired with every component and the baseline, e[i] there,
/// the arms' score sums and the lost cases; an arm with none gets a warning and is left out.
///
/// Passes over the paired cases, [`ARMS_PER_PASS`] composed arms per pass and the passes in
/// parallel: each case's row of the case-major matrix is read once a pass, not once per composed
/// arm and quantity. The sums are added in case order, so each mean is `moments::mean` of the
/// same values, to the bit, whichever pass computes it.
fn interaction_samples(
    exp: &Experiment,
    paired: &Paired,
    composed_ids: Vec<Composition>,
    warnings: &mut Vec<crate::warning::Warning>,
) -> Vec<Work> {
    let m = &exp.results.matrix;
    let pass_mark = exp.manifest.pass_mark;
    let base = paired.baseline;
    let mut all: Vec<Work> = composed_ids
        .into_iter()
        .map(
            |Composition {
                 arm,
                 components,
                 explicit,
             }| Work {
                arm,
                component_sums: vec![Neumaier::default(); components.len()],
                components,
                explicit,
                e: Vec::new(),
                units: Vec::new(),
                base_sum: Neumaier::default(),
                arm_sum: Neumaier::default(),
                lost: Vec::new(),
            },
        )
        .collect();
    // Composed arms present, with every component, in every paired case (the usual design) take
    // their values from the prebuilt pairs; the others from passes over the matrix.
    let (mut whole, mut partial): (Vec<&mut Work>, Vec<&mut Work>) = {
        let needed = arms_read(all.iter());
        let built = paired.arms(m, &needed);
        let complete: BTreeSet<usize> = needed
            .iter()
            .zip(&built)
            .filter(|(_, p)| p.pos.len() == paired.cases.len())
            .map(|(&a, _)| a)
            .collect();
        all.iter_mut().partition(|w| {
            complete.contains(&w.arm) && w.components.iter().all(|k| complete.contains(k))
        })
    };
    from_pairs(exp, paired, &mut whole);
    partial.par_chunks_mut(ARMS_PER_PASS).for_each(|chunk| {
        for (p, &c) in paired.cases.iter().enumerate() {
            let row = m.cell(c, 0);
            let present = |a: usize| m.repeats[row + a] > 0;
            let passes = |a: usize| m.case_passes(row + a, pass_mark);
            let b = m.mean[row + base];
            let base_passes = passes(base);
            let d = |a: usize| b - m.mean[row + a];
            for w in chunk.iter_mut() {
                if !present(w.arm) || !w.components.iter().all(|&k| present(k)) {
                    continue;
                }
                let parts = moments::sum(w.components.iter().map(|&k| d(k)));
                w.e.push(d(w.arm) - parts);
                w.units.push(paired.unit[p]);
                w.base_sum.add(b);
                w.arm_sum.add(m.mean[row + w.arm]);
                for (sum, &k) in w.component_sums.iter_mut().zip(&w.components) {
                    sum.add(m.mean[row + k]);
                }
                if base_passes && !passes(w.arm) {
                    w.lost.push((c, w.components.iter().all(|&k| passes(k))));
                }
            }
        }
    });
    let mut work = Vec::new();
    for w in all {
        if w.e.is_empty() {
            warnings.push(crate::warning::Warning::new(
                "interactions.composed_without_pairs",
                format!(
                    "composed arm {:?} shares no case with all its components; left out",
                    exp.results.arms[w.arm]
                ),
            ));
            continue;
        }
        work.push(w);
    }
    work
}

/// Composed arms whose samples one pass over the cases builds ([`interaction_samples`]).
const ARMS_PER_PASS: usize = 16;

/// The arms `work` reads (each composed arm and its components), ascending, each once.
fn arms_read<'a>(work: impl Iterator<Item = &'a Work>) -> Vec<usize> {
    let mut arms: Vec<usize> = work
        .flat_map(|w| std::iter::once(w.arm).chain(w.components.iter().copied()))
        .collect();
    arms.sort_unstable();
    arms.dedup();
    arms
}

/// [`interaction_samples`] for composed arms that, with every component, are present in every
/// paired case: e from the prebuilt paired drops, the score sums found once per arm (each runs
/// over every paired case in case order, so it is the per-case pass's sum, to the bit) and the
/// lost cases from each case's pass/fail. The arms in parallel.
fn from_pairs(exp: &Experiment, paired: &Paired, whole: &mut [&mut Work]) {
    let m = &exp.results.matrix;
    let pass_mark = exp.manifest.pass_mark;
    let base = paired.baseline;
    let arms = arms_read(whole.iter().map(|w| &**w));
    let Some(&first) = arms.first() else {
        return;
    };
    let compensated = |values: &[f64]| {
        let mut sum = Neumaier::default();
        values.iter().for_each(|&x| sum.add(x));
        sum
    };
    let sums: BTreeMap<usize, Neumaier> = arms
        .par_iter()
        .map(|&a| (a, compensated(&paired.arm(m, a).arm)))
        .collect();
    let base_sum = compensated(&paired.arm(m, first).base);
    whole.par_iter_mut().for_each(|w| {
        let drops = |a: usize| paired.arm(m, a).drop.as_slice();
        let (joint, parts) = (
            drops(w.arm),
            w.components.iter().map(|&k| drops(k)).collect::<Vec<_>>(),
        );
        w.e = (0..joint.len())
            .map(|i| joint[i] - moments::sum(parts.iter().map(|d| d[i])))
            .collect();
        w.units = paired.unit.clone();
        w.base_sum = base_sum;
        w.arm_sum = sums[&w.arm];
        w.component_sums = w.components.iter().map(|k| sums[k]).collect();
        for &c in &paired.cases {
            let row = m.cell(c, 0);
            let passes = |a: usize| m.case_passes(row + a, pass_mark);
            if passes(base) && !passes(w.arm) {
                w.lost.push((c, w.components.iter().all(|&k| passes(k))));
            }
        }
    });
}

/// One joint bootstrap of every composed arm's mean e (none with `--bootstrap 0`, below the
/// units at which an interval uses it, [`Paired::bootstraps_means`], or under the normal
/// approximation, whose intervals are the t at every size).
fn interaction_draws(
    paired: &Paired,
    work: &[Work],
    cfg: &Config,
    guarantee: Guarantee,
) -> Option<Draws> {
    let used = paired.bootstraps_means() && guarantee == Guarantee::AnyDistribution;
    (cfg.bootstrap > 0 && !work.is_empty() && used).then(|| {
        let mut sums = RatioSums::new(paired.n_units, work.len());
        for (k, w) in work.iter().enumerate() {
            paired.add_mean(&mut sums, k, &w.units, &w.e);
        }
        cfg.resample(&sums)
    })
}

/// The cases a composed arm loses (pass in the baseline, fail in the arm), and those lost only
/// jointly (every component alone still passes), overall and by slice.
struct Lost {
    lost: usize,
    jointly: usize,
    lost_by_slice: BTreeMap<String, usize>,
    jointly_by_slice: BTreeMap<String, usize>,
}

impl Lost {
    fn of(exp: &Experiment, w: &Work) -> Lost {
        let slice = exp.cases.slice();
        let mut lost_by_slice = BTreeMap::new();
        let mut jointly_by_slice = BTreeMap::new();
        let name = |c: usize| slice.and_then(|v| v[c].as_deref()).unwrap_or("(no slice)");
        for &(c, jointly) in &w.lost {
            if slice.is_some() {
                *lost_by_slice.entry(name(c)).or_insert(0) += 1;
                if jointly {
                    *jointly_by_slice.entry(name(c)).or_insert(0) += 1;
                }
            }
        }
        let owned = |counts: BTreeMap<&str, usize>| {
            counts
                .into_iter()
                .map(|(k, n)| (k.to_string(), n))
                .collect()
        };
        Lost {
            lost: w.lost.len(),
            jointly: w.lost.iter().filter(|(_, j)| *j).count(),
            lost_by_slice: owned(lost_by_slice),
            jointly_by_slice: owned(jointly_by_slice),
        }
    }
}

/// Runs the interaction analysis.
///
/// # Errors
/// Only if the Shapley efficiency check fails (a bug: Σφ must equal v(U) − v(∅)).
pub fn run(exp: &Experiment, cfg: &Config) -> Result<InteractionsOutput> {
    let paired = Paired::new(exp, CaseSet::Main);
    let (lo, hi) = crate::analysis::paired::experiment_score_bounds(exp);
    let (composed_ids, mut warnings) = composed_arms(exp);

    let work = interaction_samples(exp, &paired, composed_ids, &mut warnings);

    let guarantee = cfg.guarantee.unwrap_or(exp.manifest.guarantee);
    let draws = interaction_draws(&paired, &work, cfg, guarantee);
    let family = if cfg.per_arm { 1 } else { work.len().max(1) };

    // Each composed arm on its own (rayon; collected in order, the same at any thread count),
    // beside the pairwise interactions, Shapley values and designed-experiment fits, which are
    // independent of it and of each other.
    let composed_arms = || -> Vec<ComposedArm> {
        work.par_iter()
            .enumerate()
            .map(|(k, w)| {
                let base_score = w.mean(&w.base_sum);
                let measured_score = w.mean(&w.arm_sum);
                let measured_drop = base_score - measured_score;
                let predicted_drop =
                    moments::sum(w.component_sums.iter().map(|sum| base_score - w.mean(sum)));
                let (interaction, se) = paired.mean_se(&w.e, &w.units);
                // e = Σ_k s_k − s_S − (k − 1)·s_base over the scores s ∈ [lo, hi]: within
                // ±k·(hi − lo) for k components.
                let reach = w.components.len() as f64 * (hi - lo);
                let sample = Sample {
                    point: interaction,
                    se,
                    values: &w.e,
                    units: &w.units,
                    reach: (-reach, reach),
                };
                let intervals = Intervals::new(&sample);
                // The shown interval follows the guarantee, as the sweep's: under the normal
                // approximation the t, which nests in the family interval that judges.
                let est = intervals.estimate_under(
                    guarantee,
                    draws.as_ref().map(|d| d.percentile_ci(k, cfg.confidence)),
                    cfg.confidence,
                );
                let judging = intervals.family_under(guarantee, family, cfg.confidence);
                let interaction_verdict = match (judging.ci_low, judging.ci_high) {
                    // Too few units to call anything, whatever the interval (as the sweep).
                    _ if intervals.units() < MIN_UNITS_TO_DECIDE => {
                        InteractionVerdict::Undetermined
                    }
                    (Some(l), _) if l > 0.0 => InteractionVerdict::SuperAdditive,
                    (_, Some(h)) if h < 0.0 => InteractionVerdict::SubAdditive,
                    (Some(_), Some(_)) => InteractionVerdict::Additive,
                    _ => InteractionVerdict::Undetermined,
                };
                let Lost {
                    lost,
                    jointly,
                    lost_by_slice,
                    jointly_by_slice,
                } = Lost::of(exp, w);
                let concentration = lost_by_slice
                    .iter()
                    .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
                    .filter(|_| lost > 0)
                    .map(|(slice, n)| format!("{n} of {lost} lost cases are in {slice}"));
                let label = |a: usize| exp.results.arms[a].clone();
                ComposedArm {
                    arm: label(w.arm),
                    removed: exp
                        .arms
                        .as_ref()
                        .and_then(|t| t.get(&exp.results.arms[w.arm]))
                        .map(|s| s.removed.clone())
                        .unwrap_or_default(),
                    components: w.components.iter().map(|&c| label(c)).collect(),
                    predicted_drop,
                    measured_drop,
                    predicted_score: base_score - predicted_drop,
                    measured_score,
                    interaction,
                    // The clustered se of the mean, as the sweep's and the pairwise table's
                    // (under `normal` the interval's own se is the larger of it and the
                    // jackknife, and had been shown here instead); null when the values do not
                    // vary (the exact bound judges then; the variance is unknown, not zero).
                    se: est.se.and(se),
                    ci: est.interval(),
                    ci_family: judging.interval(),
                    interaction_verdict,
                    lost_cases: lost,
                    lost_by_slice,
                    lost_only_jointly: jointly,
                    lost_only_jointly_by_slice: jointly_by_slice,
                    concentration,
                    n: w.e.len(),
                    explicit_components: w.explicit,
                }
            })
            .collect()
    };
    let ((composed, pairwise), (shapley, (designs, design_warnings))) = rayon::join(
        || rayon::join(composed_arms, || pairwise::pairwise(exp, &paired)),
        || {
            rayon::join(
                || factorial::shapley_output(exp, &paired),
                || {
                    let mut w = Vec::new();
                    (design_fit::design_fits(exp, &paired, &mut w), w)
                },
            )
        },
    );
    warnings.extend(design_warnings);
    warnings.extend(factorial::unanalysed_factorials(exp));
    let few = work
        .iter()
        .filter(|w| Paired::distinct_units(&w.units) < MIN_UNITS_TO_DECIDE)
        .count();
    if few > 0 {
        warnings.push(crate::warning::Warning::new(
            "interactions.too_few_units",
            format!(
                "{few} composed arm(s) have fewer than {MIN_UNITS_TO_DECIDE} {}: too few to decide, so their interaction is undetermined whatever its interval (as the sweep calls no arm confident below that)",
                if paired.clustered { "clusters" } else { "cases" }
            ),
        ));
    }
    for c in composed.iter().filter(|c| c.se.is_none() && c.n > 0) {
        warnings.push(crate::warning::Warning::new(
            "interactions.no_spread",
            format!(
                "composed arm {:?}: its interaction does not vary over the cases (or has fewer than two units), so its se is undefined (not zero); its interval is the exact bound",
                c.arm
            ),
        ));
    }
    Ok(InteractionsOutput {
        pairwise,
        shapley: shapley?,
        designs,
        composed,
        warnings,
    })
}
