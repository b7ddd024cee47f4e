//! `ablate plan`: an arms table for a design, with its cost and power.
//!
//! Designs over k units:
//! - `loo`: the baseline and one arm per unit (k + 1 arms);
//! - `pairs`: the baseline, every single and every pair (1 + k + k(k−1)/2 arms): the pairwise
//!   interaction matrix;
//! - `factorial`: all 2^k subsets (k ≤ 12): exact Shapley values and interaction indices;
//! - `fractional`: a regular 2^(k−p) design of resolution ≥ V within 128 arms when one exists,
//!   else resolution IV (see [`crate::analysis::design`]): main effects and two-factor
//!   interactions by least squares on the ±1 coding.
//!
//! Cost: calls = arms × cases × repeats; tokens = Σ_arms (T − tokens removed) × cases × repeats
//! with T the full prompt's tokens per call; dollars = tokens/10⁶ × price.
//!
//! Power: with sd the standard deviation of per-case paired differences (given, or the median
//! over a pilot experiment's leave-one-out arms), a paired contrast of two arms detects
//! mde = (z(1−α/2) + z(0.8))·sd/√cases at 80% power, and detecting `threshold_drop` needs
//! ⌈((z(1−α/2) + z(0.8))·sd/threshold_drop)²⌉ cases (Miller 2024). In a factorial or fractional
//! design each main effect averages N/2 runs against N/2, so if run-to-run noise were independent
//! its mde would shrink by √(N/2) (`mde_main_effect`); case-level effect heterogeneity does not
//! average away, so treat that figure as optimistic.

pub mod sequential;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::design::{self, Fraction};
use crate::analysis::paired::MIN_UNITS_TO_DECIDE;
use crate::error::{Error, Result};
use crate::io::Experiment;
use crate::io::manifest::Guarantee;
use crate::io::units::Units;
use crate::stats::{dist, moments, percentile};

/// The kind of design.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DesignKind {
    /// Leave one out.
    Loo,
    /// Singles and pairs.
    Pairs,
    /// All 2^k subsets.
    Factorial,
    /// A regular fraction of resolution V (else IV).
    Fractional,
}

/// Settings of a plan.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// Which design.
    pub design: DesignKind,
    /// Units to vary (empty = every unit of the table).
    pub only: Vec<String>,
    /// Cases per arm.
    pub cases: usize,
    /// Repeats per case.
    pub repeats: u32,
    /// Full prompt tokens per call (default: Σ unit tokens).
    pub tokens_per_call: Option<f64>,
    /// Price per million input tokens.
    pub price_per_mtok: Option<f64>,
    /// Where the sd of per-case paired differences comes from, for power.
    pub sd: Option<SdSource>,
    /// Threshold to detect (default: the pilot's, else 0.005).
    pub threshold_drop: Option<f64>,
    /// Confidence level (α = 1 − confidence).
    pub confidence: f64,
    /// The guarantee the run's verdicts will rest on (for `min_certifiable_threshold`).
    pub guarantee: Guarantee,
    /// Whether the run will judge each arm on its own (`--per-arm`), not as one family.
    pub per_arm: bool,
}

/// The sd of per-case paired differences a plan's power rests on.
#[derive(Debug, Clone)]
pub enum SdSource {
    /// Given on the command line (`--sd`).
    Given(f64),
    /// Estimated from a pilot experiment (`--pilot DIR`), adjusted to the planned repeats.
    Pilot {
        /// The pilot's folder, for the report.
        dir: std::path::PathBuf,
        /// What the pilot measured.
        pilot: Pilot,
    },
}

impl SdSource {
    /// The sd at `repeats` repeats per case.
    pub fn sd(&self, repeats: u32) -> f64 {
        match self {
            SdSource::Given(sd) => *sd,
            SdSource::Pilot { pilot, .. } => pilot.sd_at(repeats),
        }
    }

    /// Where it came from, in words.
    pub fn describe(&self, repeats: u32) -> String {
        match self {
            SdSource::Given(_) => "--sd".into(),
            SdSource::Pilot { dir, pilot } => format!(
                "pilot {}: sd {:.4} at {:.0} repeats, {:.4} at {repeats}",
                dir.display(),
                pilot.sd,
                pilot.repeats,
                pilot.sd_at(repeats)
            ),
        }
    }

    /// The threshold the pilot was run with, if any.
    pub fn threshold_drop(&self) -> Option<f64> {
        match self {
            SdSource::Given(_) => None,
            SdSource::Pilot { pilot, .. } => Some(pilot.threshold_drop),
        }
    }
}

/// One planned arm.
#[derive(Debug, Clone, Serialize)]
pub struct PlanArm {
    /// Label.
    pub arm: String,
    /// Units removed.
    pub removed: Vec<String>,
    /// Prompt tokens per call in this arm.
    pub tokens_per_call: f64,
}

/// Generators, resolution and aliases of a fractional design.
#[derive(Debug, Clone, Serialize)]
pub struct FractionInfo {
    /// e.g. "2^(5-1)".
    pub name: String,
    /// Resolution (shortest defining word).
    pub resolution: usize,
    /// Generators, e.g. "E = ABCD".
    pub generators: Vec<String>,
    /// Defining relation words, e.g. "ABCDE".
    pub defining_relation: Vec<String>,
    /// Alias chains of main effects and two-factor interactions.
    pub aliases: Vec<String>,
    /// Letter → unit.
    pub factors: BTreeMap<String, String>,
}

/// What `ablate plan` reports (and writes as an arms table).
#[derive(Debug, Clone, Serialize)]
pub struct PlanOutput {
    /// loo, pairs, factorial or fractional.
    pub design: DesignKind,
    /// The label written in the arms table's `design` column.
    pub design_label: String,
    /// Units varied.
    pub units: Vec<String>,
    /// Number of arms, baseline included.
    pub n_arms: usize,
    /// Cases per arm.
    pub cases: usize,
    /// Repeats per case.
    pub repeats: u32,
    /// Model calls: arms × cases × repeats.
    pub calls: u64,
    /// Input tokens over all calls.
    pub tokens: f64,
    /// Dollars, when a price was given.
    pub cost: Option<f64>,
    /// sd of per-case paired differences used for power.
    pub sd: Option<f64>,
    /// Where sd came from.
    pub sd_source: Option<String>,
    /// Threshold to detect.
    pub threshold_drop: f64,
    /// Minimum detectable drop of a paired contrast at 80% power.
    pub mde: Option<f64>,
    /// Optimistic mde of a main effect in a factorial or fractional design.
    pub mde_main_effect: Option<f64>,
    /// Cases needed to detect threshold_drop with one paired contrast at 80% power (not the
    /// family interval that decides: `cases_to_certify`), never fewer than the 10 units a run
    /// needs to decide anything.
    pub cases_to_detect: Option<u64>,
    /// The guarantee `min_certifiable_threshold` is computed for.
    pub guarantee: Guarantee,
    /// The smallest threshold at which an arm whose mean drop is zero, with the spread the
    /// pilot's arms show (the median arm's), would be confidently removable with these cases
    /// and this family (the plan's arms, baseline aside; one arm with `--per-arm`): the median
    /// upper half-width of the family intervals planned at these cases and repeats
    /// ([`Pilot::certifiable`]). From `--sd` alone, the normal approximation's
    /// t(1 − α/2K; n − 1)·sd/√n, which under `any-distribution` is a lower bound
    /// (`min_certifiable_is_lower_bound`). Null without `--sd` or `--pilot`.
    pub min_certifiable_threshold: Option<f64>,
    /// Whether `min_certifiable_threshold` is only a lower bound (any-distribution from `--sd`
    /// alone: its width depends on the distribution of drops, which a pilot shows).
    pub min_certifiable_is_lower_bound: bool,
    /// Cases per arm at which `min_certifiable_threshold` reaches the threshold (null when it
    /// already does, beyond 100 times the planned cases, or unknown).
    pub cases_to_certify: Option<u64>,
    /// Warnings: a threshold below what the run can certify (`plan.threshold_uncertifiable`).
    pub warnings: Vec<crate::warning::Warning>,
    /// Fraction details (fractional designs).
    pub fraction: Option<FractionInfo>,
    /// The arms.
    pub arms: Vec<PlanArm>,
    /// With `--sequential`: the calls a sequential run (`ablate watch`/`next`) is projected to
    /// make, next to the fixed design's.
    pub sequential: Option<sequential::SequentialPlan>,
}

fn label(removed: &[String]) -> String {
    if removed.is_empty() {
        "baseline".into()
    } else {
        format!("without-{}", removed.join("+"))
    }
}

/// What a pilot experiment says about noise.
#[derive(Debug, Clone, PartialEq)]
pub struct Pilot {
    /// sd of per-case paired differences: the median over the pilot's leave-one-out arms (every
    /// non-baseline arm when none removes exactly one unit).
    pub sd: f64,
    /// Mean within-case variance of the baseline's repeats (0 with one repeat).
    pub within_case_var: f64,
    /// The pilot's repeats per case.
    pub repeats: f64,
    /// The pilot's threshold_drop.
    pub threshold_drop: f64,
    /// The chosen arms' paired drops, for what a run like it can certify
    /// ([`Pilot::certifiable`]).
    pub drops: Vec<PilotDrops>,
    /// Its main-set clusters, when its cases come in clusters (null when each case is its own
    /// unit): below two, no se, and nothing to plan from.
    pub clusters: Option<usize>,
}

/// One pilot arm's paired drops and their units.
#[derive(Debug, Clone, PartialEq)]
pub struct PilotDrops {
    /// Per-case drops.
    pub values: Vec<f64>,
    /// Each drop's resampling unit.
    pub units: Vec<u32>,
    /// Their mean's se (clustered when the pilot's cases are).
    pub se: Option<f64>,
    /// The range a drop can take.
    pub reach: (f64, f64),
}

impl Pilot {
    /// The smallest threshold a run with `cases` cases per arm, `repeats` repeats per case and
    /// `family` judged arms can certify under `guarantee`: the median over the pilot's arms of
    /// the upper half-width of the family interval planned at f = cases/pilot cases
    /// ([`crate::analysis::paired::Intervals::family_scaled`]), each sample's spread kept.
    /// Under the normal approximation, at other repeats than the pilot's, at f/g², the cases at
    /// the pilot's repeats whose se is the plan's (g the arm's sd factor, by the repeat-noise
    /// rule of [`Pilot::sd_at`]); under any distribution the repeats are not counted, since the
    /// score interval's width is set by what could hide among the units, not by their spread
    /// (real runs of the demo's world at 1, 3 and 10 repeats certify 0.0182, 0.0188, 0.0185).
    /// An arm whose units at these cases (its pilot units × f) number fewer than
    /// [`MIN_UNITS_TO_DECIDE`] counts not: none is called confident there. `None` when no arm
    /// counts.
    pub fn certifiable(
        &self,
        cases: usize,
        repeats: u32,
        family: usize,
        guarantee: Guarantee,
        confidence: f64,
    ) -> Option<f64> {
        use crate::analysis::paired::{Intervals, Paired, Sample};
        let up: Vec<f64> = self
            .drops
            .iter()
            .filter_map(|d| {
                let sample = Sample {
                    point: moments::mean(&d.values),
                    se: d.se,
                    values: &d.values,
                    units: &d.units,
                    reach: d.reach,
                };
                let f = cases as f64 / d.values.len().max(1) as f64;
                if (Paired::distinct_units(&d.units) as f64 * f) < MIN_UNITS_TO_DECIDE as f64 {
                    return None;
                }
                let factor = match guarantee {
                    Guarantee::Normal => f / self.spread_factor(&d.values, repeats).powi(2),
                    Guarantee::AnyDistribution => f,
                };
                Intervals::new(&sample)
                    .family_scaled_end(guarantee, factor, family, confidence, true)
                    .map(|h| h - sample.point)
            })
            .filter(|h| h.is_finite())
            .collect();
        (!up.is_empty()).then(|| percentile::quantile(&up, 0.5))
    }

    /// The units (cases, or clusters) a planned case brings, as the pilot's arms show them: the
    /// most over arms of distinct units / paired cases (1 without clusters). A run of n cases
    /// per arm has about n times this many units.
    pub fn units_per_case(&self) -> f64 {
        use crate::analysis::paired::Paired;
        self.drops
            .iter()
            .filter(|d| !d.values.is_empty())
            .map(|d| Paired::distinct_units(&d.units) as f64 / d.values.len() as f64)
            .fold(0.0, f64::max)
    }

    /// How much an arm's drops (`values`, at the pilot's repeats) spread at `repeats` repeats, as
    /// a factor on their sd: g = √(v'/v), v their variance and v' = [`Pilot::variance_at`] of
    /// it. 1 at the pilot's own repeats, or without spread.
    fn spread_factor(&self, values: &[f64], repeats: u32) -> f64 {
        let v = moments::sample_variance(values);
        if f64::from(repeats.max(1)) == self.repeats || v.is_nan() || v <= 0.0 {
            return 1.0;
        }
        (self.variance_at(v, repeats) / v).sqrt()
    }

    /// A variance of paired differences measured at the pilot's repeats, moved to `repeats`: a
    /// difference of two case means carries repeat noise 2w/K (Miller 2024), w the baseline's
    /// within-case variance, so with the pilot's noise part ν = min(2w/K_pilot, v) (at most the
    /// whole measured variance), v' = (v − ν) + ν·K_pilot/K, never below 0.
    fn variance_at(&self, variance: f64, repeats: u32) -> f64 {
        let noise = (2.0 * self.within_case_var / self.repeats).min(variance);
        ((variance - noise) + noise * self.repeats / repeats.max(1) as f64).max(0.0)
    }

    /// The sd of paired differences at `repeats` repeats: a difference of two case means carries
    /// repeat noise 2w/K (Miller 2024), w the baseline's within-case variance, so with the
    /// pilot's noise part ν = min(2w/K_pilot, sd²) (at most the whole measured variance),
    /// sd'² = (sd² − ν) + ν·K_pilot/K: the measured sd at the pilot's repeats, never 0 while it
    /// varies. (sd² − 2w/K_pilot + 2w/K floored at 0 had called a pilot of binary scores
    /// "without spread" at 3 repeats, where it gave 0.21 at 2; flooring only the between-case
    /// part had given more than the measured sd at the pilot's own repeats.)
    pub fn sd_at(&self, repeats: u32) -> f64 {
        self.variance_at(self.sd * self.sd, repeats).sqrt()
    }
}

/// Reads noise figures from a pilot experiment; `None` when no arm besides the baseline has two
/// paired cases.
pub fn pilot(exp: &Experiment) -> Option<Pilot> {
    use crate::analysis::paired::{CaseSet, Paired};
    let m = &exp.results.matrix;
    let paired = Paired::new(exp, CaseSet::Main);
    let arms: Vec<usize> = (0..m.n_arms).filter(|&a| a != paired.baseline).collect();
    let single = |a: &usize| {
        exp.arms
            .as_ref()
            .and_then(|t| t.get(&exp.results.arms[*a]))
            .is_some_and(|s| s.removed.len() == 1)
    };
    let chosen: Vec<usize> = if arms.iter().any(single) {
        arms.into_iter().filter(single).collect()
    } else {
        arms
    };
    let sds: Vec<f64> = chosen
        .iter()
        .map(|&a| moments::sample_variance(&paired.arm(m, a).drop).sqrt())
        .filter(|s| s.is_finite())
        .collect();
    // Arms whose drops do not vary say nothing of the spread (unknown, not 0): the median is
    // over the others, unless none varies (then the pilot has no spread, and `run` says so).
    let varying: Vec<f64> = sds.iter().copied().filter(|&s| s > 0.0).collect();
    let sds = if varying.is_empty() { sds } else { varying };
    let (lo, hi) = crate::analysis::paired::experiment_score_bounds(exp);
    let drops = chosen
        .iter()
        .map(|&a| {
            let p = paired.arm(m, a);
            PilotDrops {
                values: p.drop.clone(),
                units: p.unit.clone(),
                se: paired.drop_mean_se(m, a).1,
                reach: (lo - hi, hi - lo),
            }
        })
        .collect();
    if sds.is_empty() {
        return None;
    }
    let base = paired.baseline;
    let within: Vec<f64> = paired
        .cases
        .iter()
        .map(|&c| m.var[m.cell(c, base)])
        .filter(|v| !v.is_nan())
        .collect();
    let repeats = moments::mean(
        &paired
            .cases
            .iter()
            .map(|&c| m.repeats[m.cell(c, base)] as f64)
            .collect::<Vec<_>>(),
    );
    Some(Pilot {
        clusters: paired.clustered.then_some(paired.n_units),
        sd: percentile::quantile(&sds, 0.5),
        within_case_var: if within.is_empty() {
            0.0
        } else {
            moments::mean(&within)
        },
        repeats,
        threshold_drop: exp.manifest.threshold_drop,
        drops,
    })
}

/// The units the design varies: `--unit`s (each once), else every unit; and at least one case
/// and one repeat.
fn chosen_units<'a>(
    units: &'a Units,
    opts: &PlanOptions,
) -> Result<Vec<&'a crate::io::units::UnitSpec>> {
    let chosen: Vec<&crate::io::units::UnitSpec> = if opts.only.is_empty() {
        units.specs.iter().collect()
    } else {
        opts.only
            .iter()
            .map(|u| {
                units.index.get(u).map(|&i| &units.specs[i]).ok_or_else(|| {
                    Error::Usage(format!(
                        "--unit {u}: no such unit in {} (units: {})",
                        units.path.display(),
                        units
                            .specs
                            .iter()
                            .map(|s| s.unit.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })
            })
            .collect::<Result<_>>()?
    };
    let k = chosen.len();
    if k == 0 {
        return Err(Error::Usage("the design needs at least one unit".into()));
    }
    if let Some(dup) = opts
        .only
        .iter()
        .enumerate()
        .find(|(i, u)| opts.only[..*i].contains(u))
        .map(|(_, u)| u)
    {
        return Err(Error::Usage(format!(
            "--unit {dup} is given twice; each unit is one factor of the design"
        )));
    }
    if opts.cases == 0 || opts.repeats == 0 {
        return Err(Error::Usage(format!(
            "--cases {} --repeats {}: a design needs at least one case and one repeat",
            opts.cases, opts.repeats
        )));
    }
    Ok(chosen)
}

/// The arms of the design, each as the units it removes (the baseline removes none), with the
/// design's label and, for a fraction, its generators and aliases.
fn design_arms(
    kind: DesignKind,
    names: &[String],
) -> Result<(Vec<Vec<String>>, String, Option<FractionInfo>)> {
    let k = names.len();
    let subsets: Vec<Vec<String>>;
    let mut fraction_info = None;
    let design_label;
    match kind {
        DesignKind::Loo => {
            subsets = std::iter::once(Vec::new())
                .chain(names.iter().map(|u| vec![u.clone()]))
                .collect();
            design_label = format!("loo-{k}");
        }
        DesignKind::Pairs => {
            let mut s: Vec<Vec<String>> = std::iter::once(Vec::new())
                .chain(names.iter().map(|u| vec![u.clone()]))
                .collect();
            for a in 0..k {
                for b in (a + 1)..k {
                    s.push(vec![names[a].clone(), names[b].clone()]);
                }
            }
            subsets = s;
            design_label = format!("pairs-{k}");
        }
        DesignKind::Factorial => {
            if k > 12 {
                return Err(Error::Usage(format!(
                    "a full factorial of {k} units needs 2^{k} arms; use at most 12 units (--unit), or --design fractional"
                )));
            }
            subsets = (0..(1usize << k))
                .map(|mask| {
                    (0..k)
                        .filter(|i| mask & (1 << i) != 0)
                        .map(|i| names[i].clone())
                        .collect()
                })
                .collect();
            design_label = format!("factorial-2^{k}");
        }
        DesignKind::Fractional => {
            let f: Fraction = design::find_fraction(k).ok_or_else(|| {
                Error::Usage(if k <= 3 {
                    format!(
                        "a fraction needs at least 4 units; with {k} units run --design factorial ({} arms)",
                        1usize << k
                    )
                } else {
                    format!(
                        "no regular fraction of resolution IV or better exists for {k} units within {} arms; choose at most 64 units with --unit, or split them into groups and plan each",
                        design::MAX_RUNS
                    )
                })
            })?;
            subsets = f
                .levels()
                .iter()
                .map(|row| {
                    (0..k)
                        .filter(|&i| row[i] < 0)
                        .map(|i| names[i].clone())
                        .collect()
                })
                .collect();
            let name = format!("2^({}-{})", k, k - f.m);
            design_label = format!("fractional-{name}");
            fraction_info = Some(FractionInfo {
                name,
                resolution: f.resolution,
                generators: f.generator_text(),
                defining_relation: f
                    .defining_relation()
                    .iter()
                    .map(|w| design::word(*w))
                    .collect(),
                aliases: f.aliases(),
                factors: (0..k)
                    .map(|i| (design::letter(i), names[i].clone()))
                    .collect(),
            });
        }
    }
    Ok((subsets, design_label, fraction_info))
}

/// Builds the plan.
///
/// # Errors
/// Unknown or repeated units in `only`; fewer than 1 unit; zero cases or repeats; tokens per
/// call below the chosen units' tokens; factorial with k > 12; fractional with k < 4 or no design
/// within 128 runs; a call count beyond 2^64.
pub fn run(units: &Units, opts: &PlanOptions) -> Result<PlanOutput> {
    let mut warnings = Vec::new();
    // A pilot of one cluster has no se (as `variance` says): its cases' sd is not a figure of
    // how a run over clusters varies, so nothing is planned from it.
    let one_cluster = match &opts.sd {
        Some(SdSource::Pilot { pilot, .. }) => pilot.clusters.filter(|&c| c < 2),
        _ => None,
    };
    if let Some(c) = one_cluster {
        warnings.push(crate::warning::Warning::new(
            "plan.too_few_clusters",
            format!(
                "the pilot's cases come in {c} cluster{}: its drops have no se, so sd, mde, cases_to_detect, min_certifiable_threshold and cases_to_certify are undefined (null); a pilot over at least two clusters (ten or more for a useful figure) gives them",
                if c == 1 { "" } else { "s" }
            ),
        ));
    }
    // A pilot whose paired drops have no spread (every case scored alike in every arm, or the
    // repeat adjustment takes it to 0) gives no sd to plan from: the mde and the cases needed
    // are undefined, not 0 ("needs 0 cases" had been printed).
    let sd = opts
        .sd
        .as_ref()
        .filter(|_| one_cluster.is_none())
        .map(|s| s.sd(opts.repeats))
        .filter(|&sd| {
            let spread = sd.is_finite() && sd > 0.0;
            if !spread {
                warnings.push(crate::warning::Warning::new(
                    "plan.no_spread",
                    format!(
                        "the pilot's paired drops have no spread (sd {sd} at {} repeats), so the detectable drop and the cases to detect it are undefined (mde and cases_to_detect null): a pilot on cases that vary (or --sd from a past run) gives them",
                        opts.repeats
                    ),
                ));
            }
            spread
        });
    let sd_source = opts.sd.as_ref().map(|s| s.describe(opts.repeats));
    let chosen = chosen_units(units, opts)?;
    let names: Vec<String> = chosen.iter().map(|u| u.unit.clone()).collect();
    let full = opts.tokens_per_call.unwrap_or_else(|| units.total_tokens());
    let removable: f64 = moments::sum(chosen.iter().map(|u| u.tokens));
    if !(full.is_finite() && full >= removable) {
        return Err(Error::Usage(format!(
            "--tokens-per-call {full} is less than the {removable} tokens the chosen units hold, so an arm removing them would send negative tokens; give the full prompt's tokens per call"
        )));
    }
    let tokens_of = |removed: &[String]| {
        full - moments::sum(
            removed
                .iter()
                .filter_map(|r| units.index.get(r).map(|&i| units.specs[i].tokens)),
        )
    };
    let (subsets, design_label, fraction_info) = design_arms(opts.design, &names)?;
    let arms: Vec<PlanArm> = subsets
        .iter()
        .map(|r| PlanArm {
            arm: label(r),
            removed: r.clone(),
            tokens_per_call: tokens_of(r),
        })
        .collect();
    let too_big = || {
        Error::Usage(format!(
            "{} arms × {} cases × {} repeats is more calls than can be counted (over 2^64); plan fewer cases or repeats",
            arms.len(),
            opts.cases,
            opts.repeats
        ))
    };
    let per_arm_calls = (opts.cases as u64)
        .checked_mul(u64::from(opts.repeats))
        .ok_or_else(too_big)?;
    let calls = (arms.len() as u64)
        .checked_mul(per_arm_calls)
        .ok_or_else(too_big)?;
    let tokens = moments::sum(arms.iter().map(|a| a.tokens_per_call)) * per_arm_calls as f64;
    let threshold = opts
        .threshold_drop
        .or_else(|| opts.sd.as_ref().and_then(SdSource::threshold_drop))
        .unwrap_or(0.005);
    let multiplier = dist::power_multiplier(opts.confidence, crate::analysis::variance::POWER);
    let mde = sd.map(|sd| multiplier * sd / (opts.cases.max(1) as f64).sqrt());
    // Judged each on its own, an arm's interval is at 1 − α: a family of one.
    let family = if opts.per_arm {
        1
    } else {
        arms.len().saturating_sub(1).max(1)
    };
    let certifiable = Certifiable::of(opts, sd, family);
    // The units the planned cases bring: clusters at the pilot's cases per cluster.
    let per_case = match &opts.sd {
        Some(SdSource::Pilot { pilot, .. }) => Some(pilot.units_per_case()),
        _ => None,
    }
    .filter(|&u| u > 0.0)
    .unwrap_or(1.0);
    let planned_units = opts.cases as f64 * per_case;
    if planned_units < MIN_UNITS_TO_DECIDE as f64 {
        let clusters = if per_case < 1.0 {
            format!(
                " (about {} clusters, at the pilot's {:.1} cases per cluster)",
                planned_units.floor(),
                1.0 / per_case
            )
        } else {
            String::new()
        };
        let least = (MIN_UNITS_TO_DECIDE as f64 / per_case).ceil();
        warnings.push(crate::warning::Warning::new(
            "plan.too_few_cases",
            format!(
                "{} cases per arm{clusters} cannot decide any arm: no verdict is called confident below {MIN_UNITS_TO_DECIDE} units (cases, or clusters), so nothing is certifiable (null); plan at least {}",
                opts.cases,
                crate::text::thousands(least)
            ),
        ));
    }
    // A pilot whose arms give no interval to plan from (their drops have no spread, or no se)
    // certifies nothing: said, not a bare null.
    if certifiable.threshold.is_none()
        && sd.is_some()
        && planned_units >= MIN_UNITS_TO_DECIDE as f64
        && matches!(opts.sd, Some(SdSource::Pilot { .. }))
    {
        warnings.push(crate::warning::Warning::new(
            "plan.not_certifiable",
            "the pilot's arms give no interval to plan from (their drops have no spread, or no se): min_certifiable_threshold and cases_to_certify are undefined (null)",
        ));
    }
    if let Some(t) = certifiable.threshold
        && threshold < t
    {
        warnings.push(crate::warning::Warning::new(
            "plan.threshold_uncertifiable",
            certifiable.warning(threshold, opts, family),
        ));
    }
    let n_runs = arms.len() as f64;
    let mde_main_effect = match opts.design {
        DesignKind::Factorial | DesignKind::Fractional => mde.map(|m| m / (n_runs / 2.0).sqrt()),
        _ => None,
    };
    Ok(PlanOutput {
        design: opts.design,
        design_label,
        units: names,
        n_arms: arms.len(),
        cases: opts.cases,
        repeats: opts.repeats,
        calls,
        tokens,
        cost: opts.price_per_mtok.map(|p| tokens / 1e6 * p),
        sd,
        sd_source,
        threshold_drop: threshold,
        mde,
        mde_main_effect,
        // None ("—") when it cannot be counted: a threshold of 0, or more cases than 2^53 (an
        // `as u64` of infinity had printed 18,446,744,073,709,551,616).
        cases_to_detect: sd
            .filter(|_| threshold > 0.0)
            .map(|sd| (multiplier * sd / threshold).powi(2).ceil())
            .filter(|n| n.is_finite() && *n <= 9_007_199_254_740_992.0)
            // Never fewer than a run needs to decide anything.
            .map(|n| (n as u64).max(MIN_UNITS_TO_DECIDE as u64)),
        guarantee: opts.guarantee,
        min_certifiable_threshold: certifiable.threshold,
        min_certifiable_is_lower_bound: certifiable.lower_bound,
        cases_to_certify: certifiable.cases_to(threshold),
        warnings,
        fraction: fraction_info,
        arms,
        sequential: None,
    })
}

/// What a planned run can certify ([`PlanOutput::min_certifiable_threshold`]), as a function of
/// its cases per arm.
struct Certifiable<'a> {
    opts: &'a PlanOptions,
    sd: Option<f64>,
    family: usize,
    /// At the planned cases.
    threshold: Option<f64>,
    lower_bound: bool,
}

impl<'a> Certifiable<'a> {
    fn of(opts: &'a PlanOptions, sd: Option<f64>, family: usize) -> Certifiable<'a> {
        let mut c = Certifiable {
            opts,
            sd,
            family,
            threshold: None,
            lower_bound: false,
        };
        c.threshold = c.at(opts.cases);
        c.lower_bound = c.threshold.is_some()
            && opts.guarantee == Guarantee::AnyDistribution
            && !matches!(opts.sd, Some(SdSource::Pilot { .. }));
        c
    }

    /// The smallest certifiable threshold with `cases` cases per arm: from the pilot's drops
    /// ([`Pilot::certifiable`]), else t(1 − α/2K; n − 1)·sd/√n.
    fn at(&self, cases: usize) -> Option<f64> {
        let o = self.opts;
        // Below the units at which any verdict is called confident, nothing is certifiable.
        if cases < MIN_UNITS_TO_DECIDE {
            return None;
        }
        match &o.sd {
            Some(SdSource::Pilot { pilot, .. }) => {
                pilot.certifiable(cases, o.repeats, self.family, o.guarantee, o.confidence)
            }
            _ => {
                let sd = self.sd?;
                let level = 1.0 - (1.0 - o.confidence) / self.family as f64;
                let (_, h) = crate::stats::interval::t(
                    0.0,
                    Some(sd / (cases as f64).sqrt()),
                    cases.saturating_sub(1),
                    level,
                )?;
                Some(h)
            }
        }
    }

    /// The fewest cases per arm (by bisection, up to 100 times the planned cases) at which the
    /// certifiable threshold is at most `threshold`; `None` when the plan already certifies it
    /// or beyond that.
    fn cases_to(&self, threshold: f64) -> Option<u64> {
        let planned = self.opts.cases.max(2);
        let fits = |n: usize| self.at(n).is_some_and(|t| t <= threshold);
        // Already certified, or not within 100 times the planned cases (or no spread known).
        // Null at the planned cases (fewer than can decide) is not "already".
        if self.threshold.is_some_and(|t| t <= threshold) || fits(planned) || !fits(planned * 100) {
            return None;
        }
        Some(crate::analysis::decision::settle::fewest(
            planned as u64,
            planned as u64 * 100,
            |n| fits(n as usize),
        ))
    }

    /// The warning for a threshold below what the plan can certify.
    fn warning(&self, threshold: f64, opts: &PlanOptions, family: usize) -> String {
        let t = self.threshold.unwrap_or(f64::NAN);
        let under = match opts.guarantee {
            Guarantee::Normal => "the normal approximation",
            Guarantee::AnyDistribution if self.lower_bound => {
                "the normal approximation; any-distribution needs more"
            }
            Guarantee::AnyDistribution => "any score distribution",
        };
        let fix = match self.cases_to(threshold) {
            Some(n) => format!(
                "plan about {} cases per arm, judge fewer arms, or agree a larger threshold",
                crate::text::thousands(n as f64)
            ),
            None => "more than 100 times these cases would be needed: judge fewer arms, or agree a larger threshold".into(),
        };
        let judged = if opts.per_arm {
            "each arm judged on its own (--per-arm)".to_string()
        } else {
            format!("{family} arms judged together")
        };
        format!(
            "threshold_drop {} is below the smallest threshold {} cases per arm can certify with {judged} ({t:.4}, under {under}): no arm of this run can be confidently removable; {fix}",
            crate::text::float_text(threshold),
            crate::text::thousands(opts.cases as f64)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_subset_predicted_to_pass_takes_the_smallest_drops() {
        let c = |arm: &str, d: f64| {
            (
                arm.to_string(),
                vec![arm.trim_start_matches("without-").to_string()],
                d,
            )
        };
        let comps = [
            c("without-a", 0.003),
            c("without-b", 0.001),
            c("without-c", 0.002),
        ];
        // 0.001 + 0.002 = 0.003 < 0.005; adding 0.003 reaches 0.006.
        let (units, arm, drop) = largest_passing(&comps, 0.005).unwrap();
        assert_eq!(units, ["b", "c"]);
        assert_eq!(arm, "without-b+c");
        assert!((drop - 0.003).abs() < 1e-15);
        assert_eq!(largest_passing(&[c("without-a", 0.01)], 0.005), None);
    }

    #[test]
    fn certifiable_threshold_from_sd_by_hand() {
        // K = 4 arms at 95%: t(1 − 0.05/8; 99) = 2.5441614 (scipy.stats.t.ppf), times 0.1/√100.
        let opts = PlanOptions {
            design: DesignKind::Loo,
            only: Vec::new(),
            cases: 100,
            repeats: 1,
            tokens_per_call: None,
            price_per_mtok: None,
            sd: Some(SdSource::Given(0.1)),
            threshold_drop: None,
            confidence: 0.95,
            guarantee: Guarantee::Normal,
            per_arm: false,
        };
        let c = Certifiable::of(&opts, Some(0.1), 4);
        assert!((c.threshold.unwrap() - 0.025_441_614).abs() < 1e-7);
        assert!(!c.lower_bound);
        // The fewest cases that certify 0.02: the first n whose threshold is ≤ 0.02.
        let n = c.cases_to(0.02).unwrap() as usize;
        assert!(
            c.at(n).unwrap() <= 0.02 && c.at(n - 1).unwrap() > 0.02,
            "{n}"
        );
        assert_eq!(c.cases_to(0.03), None, "already certifiable");
        let any = PlanOptions {
            guarantee: Guarantee::AnyDistribution,
            ..opts
        };
        assert!(Certifiable::of(&any, Some(0.1), 4).lower_bound);
    }

    #[test]
    fn pilot_sd_moves_with_repeats() {
        let p = Pilot {
            sd: 0.1,
            within_case_var: 0.03,
            repeats: 3.0,
            threshold_drop: 0.005,
            drops: Vec::new(),
            clusters: None,
        };
        // 2w/3 = 0.02 exceeds sd² = 0.01: the noise part is all of it (ν = 0.01), so sd' is
        // 0.1 at 3 repeats as measured, √(0.01·3/6) at 6 and √(0.01·3) at 1. Never 0.
        assert!((p.sd_at(3) - 0.1).abs() < 1e-12);
        assert!((p.sd_at(6) - 0.005f64.sqrt()).abs() < 1e-12);
        assert!((p.sd_at(1) - 0.03f64.sqrt()).abs() < 1e-12);
        // No spread measured: none at any repeats.
        let flat = Pilot {
            sd: 0.0,
            ..p.clone()
        };
        assert_eq!(flat.sd_at(6), 0.0);
        // With a between-case part: sd² − 2w/K_pilot kept, the repeat noise moved to K.
        let q = Pilot {
            sd: 0.3,
            ..p.clone()
        };
        assert!((q.sd_at(3) - 0.3).abs() < 1e-12);
        assert!((q.sd_at(6) - (0.09f64 - 0.02 + 0.01).sqrt()).abs() < 1e-12);
    }
}

/// What `ablate plan --confirm` proposes: the arm that measures the decision's cut candidates
/// together.
#[derive(Debug, Clone, Serialize)]
pub struct ConfirmOutput {
    /// The units of the joint cut.
    pub units: Vec<String>,
    /// The arm to run (its label), or the measured arm when it was measured already.
    pub arm: Option<String>,
    /// Whether an arm removing exactly these units was measured.
    pub measured: bool,
    /// The drop the candidates' arms predict together (measured: the measured drop).
    pub drop: f64,
    /// Main-set cases the arm needs to clear the threshold with 80% probability, if its drop is
    /// the predicted one.
    pub cases_to_settle: Option<u64>,
    /// Calls: cases × repeats for the new arm (its baseline cells are already run).
    pub calls: Option<u64>,
    /// What to do next, in words.
    pub note: String,
    /// Not measured and predicted to fail (the components' drops sum to the threshold or
    /// more): the joint cut is not proposed; `units` and `arm` are then the largest subset of
    /// its components predicted to pass (fewest-drop components first), when there is one.
    pub predicted_to_fail: bool,
    /// The drop the whole joint cut predicts, when `predicted_to_fail` (`drop` is then the
    /// subset's).
    pub joint_drop: Option<f64>,
}

/// The largest subset of `components` (arm, units, drop) whose drops sum under `threshold`:
/// the smallest drops first. Its units (sorted), its arm label and its predicted drop; `None`
/// when no component alone passes.
fn largest_passing(
    components: &[(String, Vec<String>, f64)],
    threshold: f64,
) -> Option<(Vec<String>, String, f64)> {
    let mut sorted: Vec<&(String, Vec<String>, f64)> = components.iter().collect();
    sorted.sort_by(|a, b| a.2.total_cmp(&b.2).then(a.0.cmp(&b.0)));
    let (mut units, mut total) = (Vec::new(), 0.0);
    for (_, u, d) in sorted {
        if total + d >= threshold {
            break;
        }
        total += d;
        units.extend(u.iter().cloned());
    }
    if units.is_empty() {
        return None;
    }
    units.sort();
    units.dedup();
    let arm = format!("without-{}", units.join("+"));
    Some((units, arm, total))
}

/// The arm that confirms `decision`'s joint cut.
///
/// # Errors
/// The decision has no cut candidates.
pub fn confirm(
    exp: &Experiment,
    decision: &crate::analysis::decision::Decision,
) -> Result<ConfirmOutput> {
    let Some(j) = &decision.joint_cut else {
        return Err(Error::Usage(format!(
            "{}: the decision has no cut candidates (no arm is confidently removable), so there is no joint cut to confirm; `ablate report` says what would settle the open arms",
            exp.dir.display()
        )));
    };
    let repeats = u64::from(crate::analysis::paired::modal_repeats(
        &exp.results.matrix,
        &(0..exp.results.matrix.n_cases).collect::<Vec<_>>(),
        exp.baseline_index(),
    ))
    .max(1);
    let threshold = exp.manifest.threshold_drop;
    if !j.measured && j.drop >= threshold {
        let components: Vec<(String, Vec<String>, f64)> = j
            .components
            .iter()
            .filter_map(|c| {
                decision
                    .cut
                    .iter()
                    .chain(&decision.inconclusive)
                    .find(|a| &a.arm == c)
                    .map(|a| (a.arm.clone(), a.removed.clone(), a.drop))
            })
            .collect();
        let subset = largest_passing(&components, threshold);
        let threshold = crate::text::float_text(threshold);
        let note = match &subset {
            Some((units, arm, drop)) => format!(
                "do not run {}: its arms predict a drop of {:.4} together, at or beyond the threshold {threshold}. The largest subset predicted to pass is {} (predicted drop {drop:.4}): add {arm} to the arms table and run it; `ablate next` schedules it",
                j.arm,
                j.drop,
                units.join(", ")
            ),
            None => format!(
                "do not run {}: its arms predict a drop of {:.4} together, at or beyond the threshold {threshold}, and no one of them passes alone",
                j.arm, j.drop
            ),
        };
        return Ok(ConfirmOutput {
            units: subset.as_ref().map_or_else(Vec::new, |s| s.0.clone()),
            arm: subset.as_ref().map(|s| s.1.clone()),
            measured: false,
            drop: subset.as_ref().map_or(j.drop, |s| s.2),
            cases_to_settle: None,
            calls: None,
            note,
            predicted_to_fail: true,
            joint_drop: Some(j.drop),
        });
    }
    let note = if j.measured {
        format!(
            "already measured as {}{}",
            j.arm,
            if j.cleared {
                ": the decision cuts it"
            } else {
                "; the decision says what it still lacks"
            }
        )
    } else {
        match j.cases_to_settle {
            Some(n) => format!(
                "add {} to the arms table and run it on at least {n} main-set cases ({repeats} repeats each); `ablate next` schedules it",
                j.arm
            ),
            None => format!(
                "add {} to the arms table and run it; their arms predict a drop of {:.4} together, too close to (or beyond) the threshold {} for a sample-size estimate",
                j.arm,
                j.drop,
                crate::text::float_text(exp.manifest.threshold_drop)
            ),
        }
    };
    Ok(ConfirmOutput {
        units: j.units.clone(),
        arm: Some(j.arm.clone()),
        measured: j.measured,
        drop: j.drop,
        cases_to_settle: j.cases_to_settle,
        calls: j.cases_to_settle.map(|n| n.saturating_mul(repeats)),
        note,
        predicted_to_fail: false,
        joint_drop: None,
    })
}
