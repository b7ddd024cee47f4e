//! Paired comparisons against the baseline: which cases take part, their resampling units
//! (clusters or cases), and per-arm paired values.
//!
//! A case takes part when it is in the chosen set (the main set, or the stress slice) and has
//! baseline results. A case missing from an arm is left out of that arm's pairs. The case is the
//! unit of analysis: repeats are averaged first (`s[i,a]`), and when `cases` has a `cluster` column
//! the cluster is the unit of the standard error and of the bootstrap (Miller 2024).

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;

use crate::io::manifest::Guarantee;
use crate::io::{CaseMatrix, Experiment};
use crate::stats::bootstrap::RatioSums;
use crate::stats::estimate::{self, CiMethod, Estimate};
use crate::stats::interval;
use crate::stats::moments;

/// Units (cases, or clusters) from which the percentile bootstrap sets a mean's interval; below,
/// the small-sample interval does ([`Paired::estimate`]). The percentile bootstrap covered only
/// 0.920–0.947 at 100 units (`benches/coverage.rs`, clustered continuous drops the lowest), while
/// the small-sample intervals cover ≥ 0.944 at every n measured; so the bootstrap is kept for
/// experiments far larger than any measured here.
pub const BOOTSTRAP_MIN_UNITS: usize = 100_000;

/// Arms whose paired values one pass over the per-case matrix builds ([`Paired::arms`]): the
/// passes run in parallel, and each writes five arrays per arm, so a pass over every arm at once
/// spread its writes over hundreds of arrays.
const ARMS_PER_BUILD: usize = 16;

/// Units (cases, or clusters) an arm needs before any verdict about it is called confident: with
/// fewer, the decision says "too few cases to decide", whatever the interval.
pub const MIN_UNITS_TO_DECIDE: usize = 10;

/// A mean of per-case values over their resampling units, ready for an interval.
#[derive(Debug, Clone, Copy)]
pub struct Sample<'a> {
    /// The mean (over cases).
    pub point: f64,
    /// Its standard error (clustered when the design is).
    pub se: Option<f64>,
    /// The per-case values.
    pub values: &'a [f64],
    /// Each value's resampling unit.
    pub units: &'a [u32],
    /// The range a value can take (for a drop of scores in [lo, hi]: [lo − hi, hi − lo]).
    pub reach: (f64, f64),
}

/// A sample's intervals at several levels ([`Paired::estimate`], [`Paired::family`]), sharing
/// what every level needs: the units, whether every value is the same, the score interval's
/// support, and for clusters the se and design effect (each found once, when first needed; for
/// an arm's drops once per experiment, [`Paired::drop_intervals`]).
pub struct Intervals<'a> {
    s: Sample<'a>,
    n_units: usize,
    flat: bool,
    spread: SpreadCell<'a>,
    /// Whether `s.se` is a design se other than the values' own ([`Intervals::weighted`]).
    designed: bool,
    /// For a design se: its jackknife floor, degrees of freedom and Kish's effective units and
    /// design effect ([`Intervals::weighted`]).
    design: Design,
    /// The range the estimated mean can take: every t interval is clipped to it (which keeps
    /// its coverage: the true mean is always inside). `s.reach`, except for a weighted
    /// estimate, whose recentred values have a shifted reach ([`Intervals::weighted`]).
    bounds: (f64, f64),
}

/// What the intervals of a weighted estimate take beside its design se
/// ([`Intervals::weighted`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Design {
    /// The weighted estimate's delete-one-unit jackknife se, which floors the design se as the
    /// jackknife floors a clustered se.
    pub jackknife: Option<f64>,
    /// The design se's effective degrees of freedom (Satterthwaite), for the t: below the
    /// units − 1 of an unweighted mean when thin strata carry the variance.
    pub df: Option<f64>,
    /// Kish's effective number of units of the weights, (Σ_g W_g)²/Σ_g W_g² over the units'
    /// weight totals W_g: what the weighting leaves of the sample whatever the drops' spread
    /// (three cases carrying 90% of production are about three units, however quiet). No
    /// verdict on fewer than ten is confident.
    pub effective_units: Option<f64>,
    /// Kish's design effect of the case weights, n·Σw²/(Σw)²: the least the score part's design
    /// effect may be, however small the design se from quiet thin strata.
    pub weighting_deff: Option<f64>,
}

/// Where an [`Intervals`] keeps its [`Spread`]: its own, or one kept with the experiment's
/// pairs and shared by every analysis that asks for the same arm's drops.
enum SpreadCell<'a> {
    Own(OnceLock<Spread>),
    Shared(&'a OnceLock<Spread>),
}

/// What [`Paired::drop_intervals`] keeps of an arm's drops for every analysis that asks: the
/// range they were asked with, their units, whether they all are the same, and their spread.
#[derive(Debug, Clone)]
struct DropParts {
    reach: (f64, f64),
    n_units: usize,
    flat: bool,
    spread: OnceLock<Spread>,
}

/// The level-free parts of the small-sample intervals (see [`Intervals`]).
#[derive(Debug, Clone)]
struct Spread {
    score: Option<interval::ScoreData>,
    /// With clusters: se_c, the larger of the sandwich and the jackknife se, and the design
    /// effect deff = max(1, se_c²/se_iid²); `None` when every case is its own unit.
    clustered: Option<(Option<f64>, f64)>,
}

impl<'a> Intervals<'a> {
    /// The intervals of `s`.
    pub fn new(s: &Sample<'a>) -> Intervals<'a> {
        let n_units = Paired::distinct_units(s.units);
        Intervals {
            s: *s,
            n_units,
            flat: n_units >= 2
                && estimate::no_variation_at(s.values, s.reach.0.abs().max(s.reach.1.abs())),
            spread: SpreadCell::Own(OnceLock::new()),
            designed: false,
            design: Design::default(),
            bounds: s.reach,
        }
    }

    /// The intervals of a weighted estimate (post-stratified or raked): `s.point` and `s.se` are
    /// the weighted mean and its design se, `s.values` the unweighted values recentred on that
    /// point. The se the intervals use is se_w = max(design se, `design.jackknife`), the weighted
    /// estimate's delete-one-unit jackknife se when given (as a clustered se is floored by its
    /// jackknife: the linearised se is biased down with few units or thin strata). Its design
    /// effect deff = max(1, se_w² / se_iid²) then scales the score part's critical value, as for
    /// clusters: the score interval of n/deff independent cases (Korn and Graubard, 1998),
    /// beside the t interval on se_w at `design.df` degrees of freedom (rounded down, at most
    /// units − 1; units − 1 when not given), clipped to `bounds`, the range the weighted mean
    /// can take. The design effect is at least `design.weighting_deff` (Kish's).
    pub fn weighted(s: &Sample<'a>, bounds: (f64, f64), design: Design) -> Intervals<'a> {
        Intervals {
            designed: true,
            design,
            bounds,
            ..Intervals::new(s)
        }
    }

    /// The sample's mean.
    pub fn point(&self) -> f64 {
        self.s.point
    }

    /// The sample's standard error as SPEC defines `se`: the plain se, or the clustered (CR1)
    /// one when the cases come in clusters. The normal guarantee's interval widens it to the
    /// larger of this and the jackknife se, inside the interval only.
    pub fn se(&self) -> Option<f64> {
        self.s.se
    }

    /// The sample's distinct units.
    pub fn units(&self) -> usize {
        self.n_units
    }

    /// [`Paired::estimate`] of the sample.
    pub fn estimate(&self, bootstrap_ci: Option<Option<(f64, f64)>>, confidence: f64) -> Estimate {
        let s = self.s;
        if self.flat {
            return Estimate::no_variation(s.point, self.n_units, s.reach.0, s.reach.1, confidence);
        }
        if self.n_units < BOOTSTRAP_MIN_UNITS {
            return self.small_sample(confidence);
        }
        match bootstrap_ci {
            Some(ci) => Estimate::bootstrap(s.point, s.se, ci, confidence),
            None => Estimate::normal(s.point, s.se, confidence),
        }
    }

    /// The arm's own interval at `confidence` under `guarantee`: [`Intervals::estimate`], except
    /// that under the normal approximation it is the t interval ([`Intervals::normal_family`] of
    /// one arm) at every size, so that the shown interval and the family interval that judges
    /// rest on the same guarantee and nest by level. (From 100,000 units it had been the
    /// percentile bootstrap, which need not lie within the family's t interval.)
    pub fn estimate_under(
        &self,
        guarantee: Guarantee,
        bootstrap_ci: Option<Option<(f64, f64)>>,
        confidence: f64,
    ) -> Estimate {
        match guarantee {
            Guarantee::Normal if !self.flat => self.normal_family(1, confidence),
            _ => self.estimate(bootstrap_ci, confidence),
        }
    }

    /// The family interval under `guarantee`: [`Intervals::family`] for any distribution, else
    /// [`Intervals::normal_family`].
    pub fn family_under(&self, guarantee: Guarantee, family: usize, confidence: f64) -> Estimate {
        match guarantee {
            Guarantee::AnyDistribution => self.family(family, confidence),
            Guarantee::Normal => self.normal_family(family, confidence),
        }
    }

    /// The family interval under the normal approximation, at 1 − α/K: point ± t(1 − α/2K;
    /// C − 1)·se, se the larger of the clustered sandwich (CR1) and the delete-one-cluster
    /// jackknife se (cases as clusters of one: the iid se, n − 1 degrees of freedom). With no
    /// variation, the exact bound (never a zero-width interval).
    pub fn normal_family(&self, family: usize, confidence: f64) -> Estimate {
        let level = 1.0 - (1.0 - confidence) / family.max(1) as f64;
        let s = self.s;
        if self.flat {
            return Estimate::no_variation(s.point, self.n_units, s.reach.0, s.reach.1, level);
        }
        let se = self.normal_se();
        let ci = self.t_part(se, 1.0, self.n_units, level);
        Estimate::with_interval(s.point, se, ci, CiMethod::T, level)
    }

    /// The family interval (under `guarantee`, at 1 − α/K) of a sample like this one, `factor`
    /// times as many cases and units with the same distribution of drops, centred on the same
    /// point: the se shrinks by √factor, the degrees of freedom grow, and the score part keeps
    /// the empirical distribution (its unseen-mass floor shrinks as 1/n). For sample-size
    /// planning (`cases_to_settle`); `None` without spread.
    pub fn family_scaled(
        &self,
        guarantee: Guarantee,
        factor: f64,
        family: usize,
        confidence: f64,
    ) -> Option<(f64, f64)> {
        let level = self.planning_level(family, confidence)?;
        match guarantee {
            Guarantee::AnyDistribution => self.any_distribution(factor, level).0,
            Guarantee::Normal => self.normal_scaled(factor, level),
        }
    }

    /// One end of [`Intervals::family_scaled`], the upper when `upper`: the same number, without
    /// the other end's root search ([`crate::analysis::plan`]'s certifiable threshold asks for
    /// the end facing the threshold; the sample-size searches ask
    /// [`Intervals::family_scaled_within`]).
    pub fn family_scaled_end(
        &self,
        guarantee: Guarantee,
        factor: f64,
        family: usize,
        confidence: f64,
        upper: bool,
    ) -> Option<f64> {
        let level = self.planning_level(family, confidence)?;
        let pick = |(a, b): (f64, f64)| if upper { b } else { a };
        match guarantee {
            Guarantee::AnyDistribution => {
                let (score, t) = self.scaled_parts(factor, level, |d, c| d.end(c, upper));
                let Some(t) = t else { return score };
                match (t.map(pick), score) {
                    (Some(t), Some(s)) => Some(if upper { t.max(s) } else { t.min(s) }),
                    (t, s) => t.or(s),
                }
            }
            Guarantee::Normal => self.normal_scaled(factor, level).map(pick),
        }
    }

    /// Whether [`Intervals::family_scaled_end`] lies within `room` of the point (at or below
    /// point + room for the upper end, at or above point − room for the lower), found without
    /// solving for the score part's end ([`interval::ScoreData::within`]): what the sample-size
    /// searches ask at each size. False where the end is undefined.
    pub fn family_scaled_within(
        &self,
        guarantee: Guarantee,
        factor: f64,
        family: usize,
        confidence: f64,
        upper: bool,
        room: f64,
    ) -> bool {
        let Some(level) = self.planning_level(family, confidence) else {
            return false;
        };
        let edge = if upper {
            self.s.point + room
        } else {
            self.s.point - room
        };
        let inside = |(a, b): (f64, f64)| if upper { b <= edge } else { a >= edge };
        match guarantee {
            Guarantee::AnyDistribution => {
                let (score, t) = self.scaled_parts(factor, level, |d, c| d.within(c, upper, edge));
                let Some(t) = t else {
                    return score.unwrap_or(false);
                };
                // The family interval is the wider of the two: within when both are.
                match (t.map(inside), score) {
                    (Some(t), Some(s)) => t && s,
                    (t, s) => t.or(s).unwrap_or(false),
                }
            }
            Guarantee::Normal => self.normal_scaled(factor, level).is_some_and(inside),
        }
    }

    /// The family level 1 − (1 − confidence)/family at which sample sizes are planned; `None`
    /// when the sample has no spread (every value the same, or fewer than two units).
    fn planning_level(&self, family: usize, confidence: f64) -> Option<f64> {
        (!self.flat && self.n_units >= 2).then(|| 1.0 - (1.0 - confidence) / family.max(1) as f64)
    }

    /// The any-distribution interval's parts at `factor` times the cases and `level`: `score`
    /// of the (scaled) score data with the critical value in force (for clusters scaled by
    /// √deff), and for clusters the t interval (`None` when every case is its own unit).
    #[allow(clippy::type_complexity)]
    fn scaled_parts<T>(
        &self,
        factor: f64,
        level: f64,
        score: impl FnOnce(&interval::ScoreData, f64) -> T,
    ) -> (Option<T>, Option<Option<(f64, f64)>>) {
        let spread = self.spread();
        let n_units = ((self.n_units as f64) * factor).round() as usize;
        let crit = interval::critical(n_units, level);
        let Some((se, deff)) = spread.clustered else {
            return (
                self.on_score(spread, factor, n_units, |d| score(d, crit)),
                None,
            );
        };
        let t = self.t_part(se, factor, n_units, level);
        let critical = crit * deff.sqrt();
        (
            self.on_score(spread, factor, n_units, |d| score(d, critical)),
            Some(t),
        )
    }

    /// The normal guarantee's interval at `factor` times the cases and `level`.
    fn normal_scaled(&self, factor: f64, level: f64) -> Option<(f64, f64)> {
        let units = ((self.n_units as f64) * factor).round().max(2.0) as usize;
        self.t_part(self.normal_se(), factor, units, level)
    }

    /// The normal guarantee's se: the clustered se_c (the larger of the sandwich and the
    /// jackknife), or the iid se when every case is its own unit.
    fn normal_se(&self) -> Option<f64> {
        let spread = self.spread();
        match spread.clustered {
            Some((se, _)) => se,
            None => self.s.se,
        }
    }

    /// Whether the normal approximation is doubtful for this sample: fewer units than
    /// Cochran's rule asks, n < 25·g₁², g₁ the skewness of the per-unit mean drops (Cochran
    /// 1977, §2.15), or than its analogue for the tails, n < 25·γ₂, γ₂ = b₂ − 3 their excess
    /// kurtosis (b₂ = m₄/m₂²): the two terms of order 1/n in the t statistic's Edgeworth
    /// expansion (Hall 1992, §2.6). Rare changes make it fail: with a share p of units changed,
    /// g₁² ≈ 1/p when the changes go one way and b₂ ≈ 1/p when they go both ways (losses and
    /// gains that cancel in g₁), so the rule asks for about 25 changed units. The family level's t
    /// quantile sits far in the tail (t(1 − 0.05/82) ≈ 3.4 for 41 arms), where heavy tails matter
    /// most: on the demo's own world (rare losses and gains, 397 clusters) the skewness rule alone
    /// stayed silent while the normal family's error was 0.18 (benches/README.md). A normal
    /// distribution of drops (g₁ = γ₂ = 0, where the t interval is exact) does not meet the rule
    /// (samples of it now and then do, through their sample moments); with b₂ itself in the rule
    /// (until 2026-12-07) most samples below 75 units did, and every one below 25 (b₂ ≥ 1).
    pub fn normal_doubtful(&self) -> bool {
        if self.flat || self.n_units < 2 {
            return false;
        }
        // Units are dense codes: each one's (Σ value, cases) in a vector indexed by it, its
        // mean in id order.
        let size = self
            .s
            .units
            .iter()
            .copied()
            .max()
            .map_or(0, |m| m as usize + 1);
        let mut by_unit = vec![(0.0f64, 0.0f64); size];
        for (&v, &u) in self.s.values.iter().zip(self.s.units) {
            let e = &mut by_unit[u as usize];
            *e = (e.0 + v, e.1 + 1.0);
        }
        let means: Vec<f64> = by_unit
            .iter()
            .filter(|(_, n)| *n > 0.0)
            .map(|(t, n)| t / n)
            .collect();
        let n = means.len() as f64;
        moments::skewness(&means).is_some_and(|g| n < 25.0 * g * g)
            || moments::kurtosis(&means).is_some_and(|b| n < 25.0 * (b - 3.0))
    }

    /// [`Paired::family`] of the sample.
    pub fn family(&self, family: usize, confidence: f64) -> Estimate {
        let level = 1.0 - (1.0 - confidence) / family.max(1) as f64;
        let s = self.s;
        if self.flat {
            Estimate::no_variation(s.point, self.n_units, s.reach.0, s.reach.1, level)
        } else {
            self.small_sample(level)
        }
    }

    /// The score interval (cases as units), or for clusters the wider of the t interval and the
    /// score interval on the effective sample size, at `level`.
    ///
    /// Clusters: se_c = max(sandwich se, delete-one-cluster jackknife se) (the sandwich is biased
    /// down with few, unequal clusters); the t interval is point ± t(1−α/2; C−1)·se_c. The score
    /// interval is taken with its critical value scaled by √deff, deff = max(1, se_c² / se_iid²),
    /// which is the score interval of n/deff independent cases (Korn and Graubard, 1998: effective
    /// sample size). It keeps the score interval's skew where changes are rare, which the t
    /// interval lacks in the far tails that Bonferroni over many arms reaches.
    fn small_sample(&self, level: f64) -> Estimate {
        let (ci, method) = self.any_distribution(1.0, level);
        Estimate::with_interval(self.s.point, self.s.se, ci, method, level)
    }

    /// `f` of the score data of a sample like this one with `factor` times the cases (this
    /// sample's own at 1: [`interval::ScoreData::scaled`] otherwise); `None` without score data
    /// or with fewer than two units.
    fn on_score<T>(
        &self,
        spread: &Spread,
        factor: f64,
        n_units: usize,
        f: impl FnOnce(&interval::ScoreData) -> T,
    ) -> Option<T> {
        let data = spread.score.as_ref().filter(|_| n_units >= 2)?;
        Some(if factor == 1.0 {
            f(data)
        } else {
            f(&data.scaled(self.s.values.len() as f64 * factor))
        })
    }

    /// The any-distribution interval of [`Intervals::small_sample`] for a sample like this one
    /// with `factor` times the cases and units (1: this sample), with the part that set its ends:
    /// `score` when the (effective-sample) score interval is the wider at both ends, else `t`.
    /// With more cases the se shrinks by √factor and the score part keeps the empirical
    /// distribution ([`interval::ScoreData::scaled`]).
    fn any_distribution(&self, factor: f64, level: f64) -> (Option<(f64, f64)>, CiMethod) {
        let (score, t) = self.scaled_parts(factor, level, |d, c| d.interval(c));
        let Some(t) = t else {
            return (score, CiMethod::Score);
        };
        match (t, score) {
            (Some((a, b)), Some((c, d))) => {
                let method = if c < a && d > b {
                    CiMethod::Score
                } else {
                    CiMethod::T
                };
                (Some((a.min(c), b.max(d))), method)
            }
            (Some(t), None) => (Some(t), CiMethod::T),
            (None, Some(sc)) => (Some(sc), CiMethod::Score),
            (None, None) => (None, CiMethod::T),
        }
    }

    /// point ± t(1 − α/2; df)·se/√factor, clipped to the range the mean can take (`bounds`): a
    /// t interval with few units reaches past it (drops 1, 1, ½ of 0/1 scores at K = 2 gave
    /// [−0.20, 1.87]). df = units − 1, or a weighted estimate's effective df (scaled by
    /// `factor`, rounded down, between 1 and units − 1).
    fn t_part(&self, se: Option<f64>, factor: f64, units: usize, level: f64) -> Option<(f64, f64)> {
        let (lo, hi) = self.bounds;
        let full = units.saturating_sub(1);
        let df = self
            .design
            .df
            .filter(|_| self.designed)
            .map_or(full, |d| ((d * factor).floor() as usize).max(1).min(full));
        interval::t(self.s.point, se.map(|v| v / factor.sqrt()), df, level)
            .map(|(a, b)| (a.max(lo), b.min(hi)))
    }

    /// The level-free parts, found the first time they are asked for (kept here, or with the
    /// experiment's pairs).
    fn spread(&self) -> &Spread {
        match &self.spread {
            SpreadCell::Own(cell) => cell.get_or_init(|| self.find_spread()),
            SpreadCell::Shared(cell) => cell.get_or_init(|| self.find_spread()),
        }
    }

    /// The level-free parts.
    fn find_spread(&self) -> Spread {
        let s = self.s;
        let clustered = (self.designed || self.n_units != s.values.len()).then(|| {
            // A design se is floored by the weighted estimate's own jackknife. The jackknife of
            // the values (unweighted, recentred) is the eval set's se, not the weighted
            // estimate's, and had floored it until 2026-12-07, so that weighting could never
            // narrow an interval.
            let se = if self.designed {
                match (s.se, self.design.jackknife) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, _) => a,
                }
            } else {
                match (s.se, moments::jackknife_se(s.values, s.units)) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                }
            };
            let (_, se_iid) = moments::mean_se(s.values, None);
            let deff = match (se, se_iid) {
                (Some(c), Some(i)) if i > 0.0 => (c / i).powi(2).max(1.0),
                _ => 1.0,
            };
            // A weighted sample is worth no more cases than its weights leave (Kish): a design
            // se from quiet thin strata can be tiny while a few cases carry the weight.
            let deff = match self.design.weighting_deff.filter(|_| self.designed) {
                Some(k) if k.is_finite() => deff.max(k),
                _ => deff,
            };
            (se, deff)
        });
        Spread {
            score: interval::ScoreData::new(s.values, s.reach.0, s.reach.1),
            clustered,
        }
    }
}

/// Which cases an analysis uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseSet {
    /// Cases with `stress = false` (every analysis but `stress`).
    Main,
    /// Cases with `stress = true`.
    Stress,
}

/// The cases of one comparison, with their resampling units, and each arm's paired values once
/// asked for. One per experiment and case set, shared by every analysis ([`Paired::new`]).
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
    /// Each arm's paired values (by arm index), built the first time an analysis asks.
    arms: Vec<OnceLock<PairedArm>>,
    /// Each arm's mean paired drop and its se ([`Paired::drop_mean_se`]), found the first time
    /// an analysis asks.
    drop_moments: Vec<OnceLock<(f64, Option<f64>)>>,
    /// What each arm's drops' intervals share ([`Paired::drop_intervals`]), found the first time
    /// an analysis asks.
    drop_parts: Vec<OnceLock<DropParts>>,
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
    /// The cases of `set` that have baseline results: built once per experiment and set, and
    /// shared (with the paired values of every arm asked for) by every analysis that asks.
    pub fn new(exp: &Experiment, set: CaseSet) -> Arc<Paired> {
        exp.derived
            .get_or_init(set as u64, || Paired::build(exp, set))
    }

    /// The cases of `set` that have baseline results, and their units.
    fn build(exp: &Experiment, set: CaseSet) -> Paired {
        let m = &exp.results.matrix;
        let baseline = exp.baseline_index();
        let cases: Vec<usize> = (0..m.n_cases)
            .filter(|&c| exp.cases.stress[c] == (set == CaseSet::Stress) && m.present(c, baseline))
            .collect();
        let (unit, n_units, clustered) = match &exp.cases.cluster_code {
            Some(code) => {
                // Units numbered in order of first appearance among these cases, by the
                // clusters' codes (no name compared).
                let mut unit_of = vec![u32::MAX; code.iter().max().map_or(0, |m| *m as usize + 1)];
                let mut n_units = 0u32;
                let unit = cases
                    .iter()
                    .map(|&c| {
                        let u = &mut unit_of[code[c] as usize];
                        if *u == u32::MAX {
                            *u = n_units;
                            n_units += 1;
                        }
                        *u
                    })
                    .collect();
                (unit, n_units as usize, true)
            }
            None => ((0..cases.len() as u32).collect(), cases.len(), false),
        };
        Paired {
            cases,
            unit,
            n_units,
            clustered,
            baseline,
            arms: (0..m.n_arms).map(|_| OnceLock::new()).collect(),
            drop_moments: (0..m.n_arms).map(|_| OnceLock::new()).collect(),
            drop_parts: (0..m.n_arms).map(|_| OnceLock::new()).collect(),
        }
    }

    /// Whether a mean over these units takes its interval from the percentile bootstrap (at
    /// least [`BOOTSTRAP_MIN_UNITS`] units; [`Paired::estimate`]): below, no resample needs to
    /// be drawn for it.
    pub fn bootstraps_means(&self) -> bool {
        self.n_units >= BOOTSTRAP_MIN_UNITS
    }

    /// The paired values of `arm` (built once; `m` is the experiment's matrix).
    pub fn arm(&self, m: &CaseMatrix, arm: usize) -> &PairedArm {
        self.arms[arm].get_or_init(|| self.build_arms(m, &[arm]).pop().unwrap_or_default())
    }

    /// The paired values of each of `arms`: those not built yet in passes over the per-case
    /// matrix (row by row, as it is laid out), 16 arms a pass, the passes in parallel; the others
    /// as built before. Each arm's values are the same whichever pass builds them.
    pub fn arms(&self, m: &CaseMatrix, arms: &[usize]) -> Vec<&PairedArm> {
        let missing: Vec<usize> = arms
            .iter()
            .copied()
            .filter(|&a| self.arms[a].get().is_none())
            .collect();
        let built: Vec<PairedArm> = missing
            .par_chunks(ARMS_PER_BUILD)
            .flat_map_iter(|chunk| self.build_arms(m, chunk))
            .collect();
        for (a, built) in missing.iter().zip(built) {
            // Another analysis may have built it meanwhile: the values are the same.
            let _ = self.arms[*a].set(built);
        }
        arms.iter().map(|&a| self.arm(m, a)).collect()
    }

    /// Builds the paired values of every arm ([`Paired::arms`]): what `report` does once, with
    /// every thread, before its analyses start side by side (each of which would otherwise
    /// build them on its own thread, several at once).
    pub fn build_all(&self, m: &CaseMatrix) {
        let all: Vec<usize> = (0..m.n_arms).collect();
        self.arms(m, &all);
    }

    /// The paired values of each of `arms`, in one pass over the per-case matrix.
    fn build_arms(&self, m: &CaseMatrix, arms: &[usize]) -> Vec<PairedArm> {
        if arms.is_empty() {
            return Vec::new();
        }
        let n = self.cases.len();
        let mut out: Vec<PairedArm> = arms
            .iter()
            .map(|_| PairedArm {
                pos: Vec::with_capacity(n),
                base: Vec::with_capacity(n),
                arm: Vec::with_capacity(n),
                drop: Vec::with_capacity(n),
                unit: Vec::with_capacity(n),
            })
            .collect();
        for (p, &c) in self.cases.iter().enumerate() {
            let b = m.mean[m.cell(c, self.baseline)];
            for (o, &arm) in out.iter_mut().zip(arms) {
                if !m.present(c, arm) {
                    continue;
                }
                let a = m.mean[m.cell(c, arm)];
                o.pos.push(p);
                o.base.push(b);
                o.arm.push(a);
                o.drop.push(b - a);
                o.unit.push(self.unit[p]);
            }
        }
        out
    }

    /// The mean and se of `arm`'s paired drops ([`Paired::mean_se`] of [`PairedArm::drop`]),
    /// found once and shared: the sweep's estimate and variance's power rest on the same one.
    pub fn drop_mean_se(&self, m: &CaseMatrix, arm: usize) -> (f64, Option<f64>) {
        *self.drop_moments[arm].get_or_init(|| {
            let p = self.arm(m, arm);
            self.mean_se(&p.drop, &p.unit)
        })
    }

    /// `arm`'s paired drops as a [`Sample`] (their mean and se from [`Paired::drop_mean_se`]),
    /// each within `reach`.
    pub fn drop_sample(&self, m: &CaseMatrix, arm: usize, reach: (f64, f64)) -> Sample<'_> {
        let (point, se) = self.drop_mean_se(m, arm);
        let p = self.arm(m, arm);
        Sample {
            point,
            se,
            values: &p.drop,
            units: &p.unit,
            reach,
        }
    }

    /// The intervals of `arm`'s paired drops ([`Paired::drop_sample`] within `reach`), sharing
    /// with every analysis that asks for the same arm and reach what every level needs (the
    /// units, the score data's support, the jackknife se): the sweep, variance's power, the
    /// decision's cases to settle each judge the same arm's drops. A `reach` other than the one
    /// first asked for gets intervals of its own.
    pub fn drop_intervals(&self, m: &CaseMatrix, arm: usize, reach: (f64, f64)) -> Intervals<'_> {
        let sample = self.drop_sample(m, arm, reach);
        let parts = self.drop_parts[arm].get_or_init(|| {
            let own = Intervals::new(&sample);
            DropParts {
                reach,
                n_units: own.n_units,
                flat: own.flat,
                spread: OnceLock::new(),
            }
        });
        if parts.reach != reach {
            return Intervals::new(&sample);
        }
        Intervals {
            s: sample,
            n_units: parts.n_units,
            flat: parts.flat,
            spread: SpreadCell::Shared(&parts.spread),
            designed: false,
            design: Design::default(),
            bounds: reach,
        }
    }

    /// Mean and se of per-case values whose units are `units` (clustered when the design is).
    pub fn mean_se(&self, values: &[f64], units: &[u32]) -> (f64, Option<f64>) {
        moments::mean_se(values, self.clustered.then_some(units))
    }

    /// The estimate of a mean of per-case `values` (drops, interactions) over their `units`, at
    /// `confidence`:
    ///
    /// - when at least two units all gave the same value, the exact bound of
    ///   [`Estimate::no_variation`] for a quantity within `reach`;
    /// - below [`BOOTSTRAP_MIN_UNITS`] units, an interval that holds at that size: the score
    ///   interval ([`interval::score`], t critical value) when every case is its own unit; when
    ///   cases come in clusters, the wider of the t interval (C − 1 degrees of freedom) on the
    ///   larger of the clustered se and the delete-one-cluster jackknife se
    ///   ([`moments::jackknife_se`]) and the score interval on the effective sample size;
    /// - otherwise the joint-bootstrap percentile interval `bootstrap_ci` (`Some` when resamples
    ///   were drawn) or the normal one.
    ///
    /// The percentile bootstrap is too narrow with few units: with 3 to 10 cases it called an arm
    /// whose true drop sat on the threshold confident in 16–19% of experiments at 95%
    /// (`benches/coverage.rs` measures every method on binary, three-valued and continuous
    /// scores, with and without clusters).
    pub fn estimate(
        s: &Sample<'_>,
        bootstrap_ci: Option<Option<(f64, f64)>>,
        confidence: f64,
    ) -> Estimate {
        Intervals::new(s).estimate(bootstrap_ci, confidence)
    }

    /// The family-wise interval of one of `family` means judged together: the interval of
    /// [`Paired::estimate`] at level 1 − (1 − confidence)/family (Bonferroni), by the small-sample
    /// interval of [`Paired::estimate`] at every size (the joint bootstrap's max-|t| band exceeded α when discordant
    /// cases are rare: `benches/coverage.rs`). Holding all of them at once has probability at
    /// least `confidence`. The estimate's `confidence` is that per-interval level.
    pub fn family(s: &Sample<'_>, family: usize, confidence: f64) -> Estimate {
        Intervals::new(s).family(family, confidence)
    }

    /// Number of distinct units among `units`.
    pub fn distinct_units(units: &[u32]) -> usize {
        // Units are dense codes (below the number of units), so a flag per code counts them.
        let size = units.iter().copied().max().map_or(0, |m| m as usize + 1);
        let mut seen = vec![false; size];
        units
            .iter()
            .filter(|&&u| !std::mem::replace(&mut seen[u as usize], true))
            .count()
    }

    /// Adds a per-case mean statistic to bootstrap sums: numerator = value, denominator = 1 for
    /// each paired case.
    pub fn add_mean(&self, sums: &mut RatioSums, stat: usize, units: &[u32], values: &[f64]) {
        for (u, v) in units.iter().zip(values) {
            sums.add(*u as usize, stat, *v, 1.0);
        }
    }
}

/// The range scores can take, [min(lo₀, lowest score), max(hi₀, highest score)] over every
/// case and arm of the experiment's results, [lo₀, hi₀] the declared `score_min` and
/// `score_max` (else [0, 1]; [`crate::io::CaseMatrix::score_bounds`]): found once per
/// experiment and kept with it (a pass over every cell of the case × arm matrix, which per-arm
/// callers repeated for every arm: at 20,000 cases × 100 arms, a third of `report`'s time).
pub fn experiment_score_bounds(exp: &Experiment) -> (f64, f64) {
    /// The cached value's own type (the cache is keyed by type).
    struct ScoreBounds((f64, f64));
    exp.derived
        .get_or_init(0, || {
            ScoreBounds(
                exp.results
                    .matrix
                    .score_bounds(exp.manifest.declared_score_range()),
            )
        })
        .0
}

/// The size of the experiment's scores, max(|lo|, |hi|) of [`experiment_score_bounds`]: the
/// scale a drop's rounding is relative to ([`estimate::no_variation_at`]).
pub fn rounding_scale(exp: &Experiment) -> f64 {
    let (lo, hi) = experiment_score_bounds(exp);
    lo.abs().max(hi.abs())
}

/// Cases whose per-repeat pass/fail is not the same in all repeats, among `cases` in `arm`
/// (`None` when no case has more than one repeat).
pub fn churn(m: &CaseMatrix, cases: &[usize], arm: usize) -> Option<usize> {
    let mut any_repeated = false;
    let mut n = 0;
    for &c in cases {
        if let Some(churned) = cell_churns(m, m.cell(c, arm)) {
            any_repeated = true;
            n += usize::from(churned);
        }
    }
    any_repeated.then_some(n)
}

/// Whether a cell's repeats disagree on pass/fail; `None` with fewer than two repeats.
pub fn cell_churns(m: &CaseMatrix, cell: usize) -> Option<bool> {
    let (k, p) = (m.repeats[cell], m.passes[cell]);
    (k > 1).then_some(p > 0 && p < k)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sample<'a>(values: &'a [f64], units: &'a [u32], se: Option<f64>) -> Sample<'a> {
        Sample {
            point: moments::mean(values),
            se,
            values,
            units,
            reach: (-1.0, 1.0),
        }
    }

    #[test]
    fn the_normal_family_interval_is_the_t_interval_by_hand() {
        // Drops 0.1, 0.2, 0, 0.3, 0.1: mean 0.14, sd √(0.052/4) = 0.114018, se 0.050990;
        // t(0.975; 4) = 2.776445 (tables): 0.14 ± 0.141571.
        let values = [0.1, 0.2, 0.0, 0.3, 0.1];
        let units = [0, 1, 2, 3, 4];
        let se = (0.052f64 / 4.0).sqrt() / 5f64.sqrt();
        let s = sample(&values, &units, Some(se));
        let e = Intervals::new(&s).normal_family(1, 0.95);
        let (lo, hi) = e.interval().map(|i| (i.low, i.high)).unwrap();
        assert!((lo - (0.14 - 2.776445 * se)).abs() < 1e-5, "{lo}");
        assert!((hi - (0.14 + 2.776445 * se)).abs() < 1e-5, "{hi}");
        assert_eq!(e.ci_method, CiMethod::T);
        // K = 10 at 95%: t(1 − 0.0025; 4) = 5.597568.
        let e = Intervals::new(&s).normal_family(10, 0.95);
        let hi = e.interval().unwrap().high;
        assert!((hi - (0.14 + 5.597568 * se)).abs() < 1e-5, "{hi}");
        // Narrower than the any-distribution interval on these continuous drops.
        let any = Intervals::new(&s).family(1, 0.95).interval().unwrap();
        assert!(any.high - any.low > 2.0 * 2.776445 * se - 1e-9);
    }

    #[test]
    fn the_normal_family_interval_stays_within_the_range_of_a_drop() {
        // Drops 1, 1, 0.5 of scores in [0, 1]: mean 5/6, sd √(1/12), se 1/6. At K = 2, 95%:
        // t(1 − 0.0125; 2) = 6.205347, so 5/6 ± 1.034225 = [−0.200891, 1.867558], whose upper
        // end no drop can reach: clipped to 1 (the reach), the lower end kept.
        let values = [1.0, 1.0, 0.5];
        let units = [0, 1, 2];
        let s = sample(&values, &units, Some(1.0 / 6.0));
        let iv = Intervals::new(&s);
        let i = iv.normal_family(2, 0.95).interval().unwrap();
        assert!(
            (i.low - (5.0 / 6.0 - 6.205347 / 6.0)).abs() < 1e-5,
            "{}",
            i.low
        );
        assert_eq!(i.high, 1.0);
        // The planned interval at the same size is the same interval.
        assert_eq!(
            iv.family_scaled(Guarantee::Normal, 1.0, 2, 0.95).unwrap().1,
            1.0
        );
        // A weighted estimate is clipped to the bounds it is given, not to its shifted reach.
        let shifted = Sample {
            reach: (-0.5, 1.5),
            ..s
        };
        let w = Intervals::weighted(&shifted, (-1.0, 1.0), Design::default());
        assert_eq!(w.normal_family(2, 0.95).interval().unwrap().high, 1.0);
    }

    #[test]
    fn the_planned_interval_at_the_same_size_is_the_family_interval() {
        // Clusters of two cases: the any-distribution interval at factor 1 is the family
        // interval itself, and at factor 4 it is narrower (about half as wide, a bit less as
        // the score part's floor shrinks as 1/n).
        let values = [0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, -1.0, 0.0, 0.0, 1.0, 0.0];
        let units = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5];
        let (point, se) = moments::mean_se(&values, Some(&units));
        let s = Sample {
            point,
            se,
            values: &values,
            units: &units,
            reach: (-1.0, 1.0),
        };
        let iv = Intervals::new(&s);
        for g in [Guarantee::AnyDistribution, Guarantee::Normal] {
            let at1 = iv.family_scaled(g, 1.0, 3, 0.95).unwrap();
            let fam = iv.family_under(g, 3, 0.95).interval().unwrap();
            assert!(
                (at1.0 - fam.low).abs() < 1e-9 && (at1.1 - fam.high).abs() < 1e-9,
                "{g:?}"
            );
            let at4 = iv.family_scaled(g, 4.0, 3, 0.95).unwrap();
            assert!(at4.1 - at4.0 < 0.6 * (at1.1 - at1.0), "{g:?}");
            // One end alone is the same number, to the bit, clustered or not.
            for f in [0.5, 1.0, 4.0, 37.5] {
                let both = iv.family_scaled(g, f, 3, 0.95).unwrap();
                assert_eq!(iv.family_scaled_end(g, f, 3, 0.95, false), Some(both.0));
                assert_eq!(iv.family_scaled_end(g, f, 3, 0.95, true), Some(both.1));
            }
        }
        let cases: Vec<u32> = (0..12).collect();
        let s = Sample { units: &cases, ..s };
        let iv = Intervals::new(&s);
        for f in [0.5, 1.0, 4.0] {
            let both = iv
                .family_scaled(Guarantee::AnyDistribution, f, 3, 0.95)
                .unwrap();
            let ends = (
                iv.family_scaled_end(Guarantee::AnyDistribution, f, 3, 0.95, false),
                iv.family_scaled_end(Guarantee::AnyDistribution, f, 3, 0.95, true),
            );
            assert_eq!(ends, (Some(both.0), Some(both.1)));
        }
    }

    /// `family_scaled_within` answers what comparing `family_scaled_end` with point ± room
    /// answers, without the end's root search: clustered and not, under both guarantees, at
    /// several sizes, both ends, rooms on either side of each end (and where an end reaches the
    /// bound of the range).
    #[test]
    fn within_room_is_the_end_compared_with_the_room() {
        let values = [
            0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, -1.0, 0.0, 0.0, 1.0, 0.0, 0.5, 0.0,
        ];
        let clustered = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6];
        let cases: Vec<u32> = (0..values.len() as u32).collect();
        let mut checked = 0;
        for units in [&clustered[..], &cases[..]] {
            let (point, se) = moments::mean_se(&values, Some(units));
            let s = Sample {
                point,
                se,
                values: &values,
                units,
                reach: (-1.0, 1.0),
            };
            let iv = Intervals::new(&s);
            for g in [Guarantee::AnyDistribution, Guarantee::Normal] {
                for f in [0.5, 1.0, 4.0, 37.5, 2000.0] {
                    for upper in [false, true] {
                        let end = iv.family_scaled_end(g, f, 3, 0.95, upper).unwrap();
                        let half = (end - point).abs();
                        for room in [0.0, half * 0.5, half * 0.999, half * 1.001, half * 2.0, 3.0] {
                            let within = iv.family_scaled_within(g, f, 3, 0.95, upper, room);
                            assert_eq!(
                                within,
                                half <= room,
                                "{g:?} f {f} upper {upper} end {end} room {room}"
                            );
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 2 * 2 * 5 * 2 * 6);
    }

    #[test]
    fn no_spread_keeps_the_exact_bound_under_the_normal_guarantee() {
        let values = [0.0; 30];
        let units: Vec<u32> = (0..30).collect();
        let s = sample(&values, &units, Some(0.0));
        let e = Intervals::new(&s).normal_family(5, 0.95);
        assert_eq!(e.ci_method, CiMethod::ExactBound);
        let i = e.interval().unwrap();
        assert!(i.high > 0.0, "never a zero-width interval");
    }

    #[test]
    fn the_normal_approximation_is_doubted_where_changes_are_rare() {
        // 400 units, 6 changed by a full point: g1² ≈ 1/p = 66, 25·g1² ≫ 400.
        let mut rare = vec![0.0; 400];
        for v in rare.iter_mut().take(6) {
            *v = 1.0;
        }
        let units: Vec<u32> = (0..400).collect();
        let s = sample(&rare, &units, None);
        assert!(Intervals::new(&s).normal_doubtful());
        // 400 continuous drops of moderate skew (a shifted uniform: g1 = 0): not doubted.
        let cont: Vec<f64> = (0..400).map(|i| (i as f64 / 399.0 - 0.5) * 0.2).collect();
        let s = sample(&cont, &units, None);
        assert!(!Intervals::new(&s).normal_doubtful());
    }

    #[test]
    fn normal_drops_are_not_doubted_at_sixty_units_nor_below_twenty_five() {
        // Normal quantiles at (i + ½)/n: skewness 0, kurtosis just under 3. With b₂ itself in
        // the rule (n < 25·b₂ = 75) both had been doubted; their excess kurtosis is about 0.
        for n in [12_usize, 60] {
            let values: Vec<f64> = (0..n)
                .map(|i| 0.02 + 0.1 * crate::stats::dist::z_quantile((i as f64 + 0.5) / n as f64))
                .collect();
            let b2 = moments::kurtosis(&values).unwrap();
            assert!((2.0..3.0).contains(&b2), "{b2}");
            let units: Vec<u32> = (0..n as u32).collect();
            let s = sample(&values, &units, None);
            assert!(!Intervals::new(&s).normal_doubtful(), "n = {n}");
        }
        // Losses and gains of a full point on 10% of 60 units each way: g₁ = 0, b₂ = 5, so
        // n < 25·(b₂ − 3) = 50 fails at 40 units and holds at 60.
        for (n, doubted) in [(40_usize, true), (60, false)] {
            let values: Vec<f64> = (0..n)
                .map(|i| match i * 10 / n {
                    0 => 1.0,
                    1 => -1.0,
                    _ => 0.0,
                })
                .collect();
            let units: Vec<u32> = (0..n as u32).collect();
            let s = sample(&values, &units, None);
            assert_eq!(Intervals::new(&s).normal_doubtful(), doubted, "n = {n}");
        }
    }
}
