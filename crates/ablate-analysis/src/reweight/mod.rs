//! `ablate reweight`: what the eval's numbers mean for production traffic.
//!
//! The eval set weights every case equally, so its own composition silently acts as a claim about
//! traffic. Reweighting replaces that claim with production's shares.
//!
//! **Post-stratification** (one mix): strata h are the combinations of the stratum columns, W_h
//! the production share. For any per-case quantity x: x̂ = Σ_h W_h · mean_{i∈h} xᵢ, with
//! se = √(Σ_h W_h² s_h²/n_h) (s_h the sample sd within h; null, with a warning, when some weighted
//! stratum has fewer than 2 cases); clustered when the cases have clusters
//! ([`survey::post_stratified`]). Kish's effective sample size (Σw)²/Σw² with wᵢ = W_h/n_h says
//! what the weighting costs.
//!
//! **Raking** (several mixes, one dimension each): iterative proportional fitting of case weights
//! (Deming & Stephan 1940), from equal weights, until every margin is within 1e-10 of its target
//! (an error naming the margin if not within 1000 rounds); x̂ = Σ wᵢxᵢ/Σ wᵢ with the calibration
//! se of Deville & Särndal (1992), as the R survey package computes it for `rake`, clustered when
//! the cases have clusters ([`survey::raked_mean`]). A raking cell with one eval case gets a
//! warning. With a single dimension raking gives the post-stratified estimate.
//!
//! A production stratum with no eval case is an error naming it, unless `allow_unmeasured`: then
//! shares are renormalised over measured strata and `unmeasured_share` says what was dropped
//! (as R survey's `postStratify(partial = TRUE)`). Eval strata absent from the mix get weight 0 and
//! are listed.
//!
//! **Coverage** per stratum: eval_cases, eval_share = n_h/n, production_share, ratio =
//! production/eval share, status `unmeasured` (no eval cases), `under-sampled` (ratio ≥ 2),
//! `over-sampled` (ratio ≤ 0.5) or `ok`; `known_coverage_gap` names the most under-sampled stratum.
//!
//! An arm of the decision family that production leaves inconclusive gets
//! `production_cases_to_settle`: the main-set cases, drawn as the set's were, at which its
//! production verdict settles with 80% probability, by the routine of the decision's
//! `cases_to_settle` (`settle::cases_to_clear`) on the production family interval scaled to f
//! times the cases (the weighted se shrinks by √f, the design effect and the score part's
//! distribution stay, the t's degrees of freedom grow f-fold, which is cautious where they are
//! Satterthwaite's); null when settled, beyond 100 times the set (`production_settleable`
//! false) or undefined (no production se).

use rayon::prelude::*;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::decision::settle;
use crate::analysis::interval::{self, Interval};
use crate::analysis::paired::{
    CaseSet, Design, Intervals, MIN_UNITS_TO_DECIDE, Paired, PairedArm, Sample,
};
use crate::analysis::vocab::{Confidence, Verdict, judge};
use crate::error::{Error, Result};
use crate::io::manifest::Guarantee;
use crate::io::{Experiment, Mix};
use crate::stats::estimate::Estimate;
use crate::stats::moments;
use crate::stats::survey::{self, RAKE_MAX_ROUNDS};

mod strata;

pub use strata::{ProductionStrata, production_strata};
use strata::{Weighting, case_keys, choose_columns, coverage_gap, stratify};

/// Options of a reweighting run.
#[derive(Debug, Clone)]
pub struct ReweightOptions {
    /// Production mixes: one → post-stratification, several → raking (one column each).
    pub mixes: Vec<Mix>,
    /// Stratum columns to use (post-stratification; the mix is marginalised onto them).
    pub by: Vec<String>,
    /// Renormalise over measured strata instead of failing on unmeasured ones.
    pub allow_unmeasured: bool,
    /// Confidence level of the production drops' intervals.
    pub confidence: f64,
    /// Arms judged together (the sweep's family): a production verdict is confident when its
    /// interval at 1 − α/family clears the threshold.
    pub family: usize,
    /// Judge each arm at its own level instead (`--per-arm`).
    pub per_arm: bool,
    /// The guarantee the production verdicts rest on (`--guarantee`); `None`: the manifest's.
    pub guarantee: Option<crate::io::manifest::Guarantee>,
}

impl Default for ReweightOptions {
    fn default() -> Self {
        ReweightOptions {
            mixes: Vec::new(),
            by: Vec::new(),
            allow_unmeasured: false,
            confidence: 0.95,
            family: 1,
            per_arm: false,
            guarantee: None,
        }
    }
}

/// How the weights were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// One mix: stratum shares.
    PostStratified,
    /// Several one-dimensional mixes: iterative proportional fitting.
    Raked,
}

/// Coverage status of a stratum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Production traffic, no eval case.
    Unmeasured,
    /// Production share ≥ 2 × eval share.
    UnderSampled,
    /// Production share ≤ 0.5 × eval share.
    OverSampled,
    /// In between.
    Ok,
}

impl Status {
    fn of(eval_cases: usize, ratio: Option<f64>) -> Status {
        match ratio {
            _ if eval_cases == 0 => Status::Unmeasured,
            Some(r) if r >= 2.0 => Status::UnderSampled,
            Some(r) if r <= 0.5 => Status::OverSampled,
            _ => Status::Ok,
        }
    }

    /// Name used in tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Unmeasured => "unmeasured",
            Status::UnderSampled => "under-sampled",
            Status::OverSampled => "over-sampled",
            Status::Ok => "ok",
        }
    }
}

/// One stratum's coverage.
#[derive(Debug, Clone, Serialize)]
pub struct Coverage {
    /// Column → value.
    pub stratum: BTreeMap<String, String>,
    /// Main-set cases in the stratum.
    pub eval_cases: usize,
    /// eval_cases / main-set cases.
    pub eval_share: f64,
    /// Production share (as given, before any renormalisation).
    pub production_share: f64,
    /// production_share / eval_share (null when the stratum has no eval case).
    pub ratio: Option<f64>,
    /// unmeasured, under-sampled, over-sampled or ok.
    pub status: Status,
}

impl Coverage {
    /// The stratum as `col=value, col=value`.
    pub fn label(&self) -> String {
        self.stratum
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The baseline on the eval set and in production.
#[derive(Debug, Clone, Serialize)]
pub struct ReweightBaseline {
    /// Equal-weight mean over the main set.
    pub score_eval: f64,
    /// Reweighted to production.
    pub score_production: Option<f64>,
    /// Its standard error.
    pub se_production: Option<f64>,
    /// Its normal interval, score_production ± z·se_production (`ci_production_low`, …).
    #[serde(flatten, serialize_with = "interval::ci_production")]
    pub ci_production: Option<Interval>,
}

/// One arm, eval next to production.
#[derive(Debug, Clone, Serialize)]
pub struct ReweightArm {
    /// Arm label.
    pub arm: String,
    /// Equal-weight mean drop over paired cases.
    pub drop_eval: f64,
    /// Drop reweighted to production.
    pub drop_production: Option<f64>,
    /// Its standard error.
    pub se_production: Option<f64>,
    /// Its normal interval, drop_production ± z·se_production (`ci_production_low`, …).
    #[serde(flatten, serialize_with = "interval::ci_production")]
    pub ci_production: Option<Interval>,
    /// Verdict on the eval set.
    pub verdict_eval: Verdict,
    /// Verdict in production (null when the production drop is undefined).
    pub verdict_production: Option<Verdict>,
    /// The interval that judges the production verdict (`ci_production_family_low`, …): normal,
    /// at 1 − α/family (the arm's own level with `--per-arm`).
    #[serde(flatten, serialize_with = "interval::ci_production_family")]
    pub ci_production_family: Option<Interval>,
    /// Whether the production verdict is confident (that interval wholly on its side).
    pub confidence_production: Option<Confidence>,
    /// Whether the two point verdicts differ.
    pub flipped: bool,
    /// Whether they differ and the production verdict is confident: a flip the decision lists.
    pub flip_confident: bool,
    /// For an arm of the decision family that production leaves inconclusive: the main-set
    /// cases, drawn as the set's were (every stratum and cluster in the same proportions), at
    /// which its production verdict settles with 80% probability if its production drop and
    /// spread hold, by the routine of the decision's `cases_to_settle` on the interval that
    /// judges in production (total cases, at least the set's). Null when settled, beyond 100
    /// times the set (`production_settleable` false) or undefined (no production se).
    pub production_cases_to_settle: Option<u64>,
    /// True with a `production_cases_to_settle`, false beyond reach, null when there is nothing
    /// to settle in production or the cases cannot be estimated (as `stress_settleable`).
    pub production_settleable: Option<bool>,
}

/// What `ablate reweight` reports.
#[derive(Debug, Clone, Serialize)]
pub struct ReweightOutput {
    /// Stratum columns.
    pub strata: Vec<String>,
    /// post-stratified or raked.
    pub method: Method,
    /// Kish effective sample size of the weights.
    pub effective_cases: f64,
    /// Production share of strata with no eval case (dropped under --allow-unmeasured).
    pub unmeasured_share: f64,
    /// Threshold agreed before the run.
    pub threshold_drop: f64,
    /// Main-set cases.
    pub cases: usize,
    /// The baseline.
    pub baseline: ReweightBaseline,
    /// Every other arm.
    pub arms: Vec<ReweightArm>,
    /// Coverage per stratum (per margin when raked).
    pub coverage: Vec<Coverage>,
    /// The most under-sampled stratum, as "6% turns=multi in set vs 23% in production".
    pub known_coverage_gap: Option<String>,
    /// Eval strata absent from the mix (weight 0).
    pub unweighted_strata: Vec<String>,
    /// Strata with fewer than 2 cases and similar notes.
    pub warnings: Vec<crate::warning::Warning>,
}

/// The production mixes to weight to: `--mix` files, else the experiment's `mix` table.
fn mixes_to_use(exp: &Experiment, opts: &ReweightOptions) -> Result<Vec<Mix>> {
    let mut mixes = opts.mixes.clone();
    if mixes.is_empty() {
        match &exp.mix {
            Some(mix) => mixes.push(mix.clone()),
            None => {
                return Err(Error::NotFound {
                    path: exp.dir.join("mix.parquet"),
                    fix: "reweighting needs production shares: add mix.parquet (or .csv) to the experiment, pass --mix FILE, or derive one with --mix-from LOG --by COL"
                        .into(),
                });
            }
        }
    }
    Ok(mixes)
}

/// How the cases are weighted: post-stratification to one mix (its crossed columns), or raking
/// to one margin per mix (one column each), with each case's stratum and each stratum's share.
fn weighting(
    exp: &Experiment,
    paired: &Paired,
    mixes: &[Mix],
    opts: &ReweightOptions,
) -> Result<(Method, Vec<String>, Vec<Weighting>)> {
    Ok(if mixes.len() == 1 {
        let mix = &mixes[0];
        let columns = choose_columns(exp, mix, &opts.by, !opts.mixes.is_empty())?;
        let keys = case_keys(exp, paired, &columns)?;
        (
            Method::PostStratified,
            columns.clone(),
            vec![stratify(mix, &columns, &keys, opts.allow_unmeasured)?],
        )
    } else {
        let mut columns = Vec::new();
        let mut margins = Vec::new();
        for mix in mixes {
            if mix.columns.len() != 1 {
                return Err(Error::Usage(format!(
                    "raking takes one stratum column per mix; {} has {} ({}). Pass crossed strata as a single mix instead",
                    mix.path.display(),
                    mix.columns.len(),
                    mix.columns.join(", ")
                )));
            }
            let keys = case_keys(exp, paired, &mix.columns)?;
            columns.push(mix.columns[0].clone());
            margins.push(stratify(mix, &mix.columns, &keys, opts.allow_unmeasured)?);
        }
        (Method::Raked, columns, margins)
    })
}

/// Each case's weight: its stratum's production share over its eval share (post-stratified), or
/// the raked weights (iterative proportional fitting to every margin).
fn case_weights(
    method: Method,
    weighting: &[Weighting],
    paired: &Paired,
    mixes: &[Mix],
    columns: &[String],
) -> Result<Vec<f64>> {
    Ok(match method {
        Method::PostStratified => weighting[0].weight.clone(),
        Method::Raked => {
            let margins: Vec<(Vec<usize>, Vec<f64>)> = weighting
                .iter()
                .map(|w| (w.stratum.clone(), w.share.clone()))
                .collect();
            survey::rake(&margins, paired.cases.len()).map_err(|(margin, dev)| {
                Error::Unsupported {
                    what: format!("raking to {} ({})", mixes[margin].path.display(), columns[margin]),
                    reason: format!("did not converge in {RAKE_MAX_ROUNDS} rounds; this margin is still {dev:.2e} from its target"),
                    fix: "the margins may be incompatible with the eval's cases (e.g. a combination production needs that the set lacks); pass the crossed strata as one mix, or drop a margin".into(),
                }
            })?
        }
    })
}

/// Warns about strata (or raking cells) that production needs and the set covers with one case.
fn thin_strata_warnings(
    method: Method,
    weighting: &[Weighting],
    paired: &Paired,
    warnings: &mut Vec<crate::warning::Warning>,
) {
    if method == Method::PostStratified {
        let w = &weighting[0];
        for c in &w.coverage {
            if c.eval_cases == 1 && c.production_share > 0.0 {
                warnings.push(crate::warning::Warning::new("reweight.single_case_stratum", format!(
                    "stratum {} has one eval case: its within-stratum variance is unknown, so production se is null",
                    c.label()
                )));
            }
        }
        if paired.clustered {
            // A stratum of several cases in one cluster: as one case, its variance between
            // clusters is unknown ([`survey::post_stratified`]).
            for h in survey::one_cluster_strata(&w.stratum, &w.share, &paired.unit) {
                let c = &w.coverage[h];
                if c.eval_cases > 1 {
                    warnings.push(crate::warning::Warning::new("reweight.single_cluster_stratum", format!(
                        "stratum {}'s {} eval cases are all in one cluster: its variance between clusters is unknown, so production se is null",
                        c.label(),
                        c.eval_cases
                    )));
                }
            }
        }
    }

    if method == Method::Raked {
        for c in weighting.iter().flat_map(|w| &w.coverage) {
            if c.eval_cases == 1 && c.production_share > 0.0 {
                warnings.push(crate::warning::Warning::new("reweight.single_case_cell", format!(
                    "raking cell {} has one eval case: its weight, and every raked figure, leans on that case",
                    c.label()
                )));
            }
        }
    }
}

/// The production estimate of a mean over some of the paired cases.
struct Estimator<'a> {
    method: Method,
    weighting: &'a [Weighting],
    weights: &'a [f64],
    paired: &'a Paired,
}

impl Estimator<'_> {
    /// The weighted mean of `x` (one value per position `pos` among the paired cases) and its se,
    /// clustered when the cases come in clusters (the paired units); `None` when a weighted
    /// stratum has no case.
    fn estimate(&self, pos: &[usize], x: &[f64]) -> (Option<f64>, Option<f64>) {
        let clusters: Option<Vec<u32>> = self
            .paired
            .clustered
            .then(|| pos.iter().map(|&p| self.paired.unit[p]).collect());
        match self.method {
            Method::PostStratified => {
                let w = &self.weighting[0];
                let strata: Vec<usize> = pos.iter().map(|&p| w.stratum[p]).collect();
                survey::post_stratified(x, &strata, &w.share, clusters.as_deref())
            }
            Method::Raked => {
                let w: Vec<f64> = pos.iter().map(|&p| self.weights[p]).collect();
                let margins: Vec<Vec<usize>> = self
                    .weighting
                    .iter()
                    .map(|m| pos.iter().map(|&p| m.stratum[p]).collect())
                    .collect();
                survey::raked_mean(x, &w, &margins, clusters.as_deref())
            }
        }
    }
}

impl Estimator<'_> {
    /// What the intervals take beside the design se ([`Intervals::weighted`]), and whether it is
    /// the fallback. Post-stratified: the weighted mean's own delete-one-unit jackknife
    /// ([`survey::post_stratified_jackknife`]) and Satterthwaite's degrees of freedom
    /// ([`survey::post_stratified_df`]). Where either is undefined (a weighted stratum whose
    /// drops do not vary contributes no variance to the design se although its variance is
    /// unknown, not zero; one in a single cluster has no design se at all): the delete-one-unit
    /// jackknife of the unweighted values (the eval set's se, which counts every case's spread)
    /// and units − 1 degrees of freedom, the arm then judged for any score distribution. Raked:
    /// the eval set's jackknife (the raking is not redone per left-out unit) with
    /// Satterthwaite's df over the margins' crossed cells ([`crossed_cells`]) of known variance,
    /// falling back (the arm judged for any score distribution) only where a cell of unknown
    /// variance is weighed beyond [`UPWEIGHTED`] times its share of the arm's cases.
    fn design(&self, pos: &[usize], x: &[f64]) -> (Design, bool) {
        let units: Vec<u32> = pos.iter().map(|&p| self.paired.unit[p]).collect();
        let weights = self.case_weights(pos);
        let effective_units = Some(survey::kish_effective_units(&weights, &units));
        let weighting_deff = survey::kish_deff(&weights);
        // Found only where it is used: the fallback and raking.
        let set = || Design {
            jackknife: moments::jackknife_se(x, &units),
            df: None,
            effective_units,
            weighting_deff,
        };
        match self.method {
            Method::PostStratified => {
                let w = &self.weighting[0];
                let strata: Vec<usize> = pos.iter().map(|&p| w.stratum[p]).collect();
                let jackknife = survey::post_stratified_jackknife(x, &strata, &w.share, &units);
                let df = survey::post_stratified_df(
                    x,
                    &strata,
                    &w.share,
                    self.paired.clustered.then_some(&units[..]),
                );
                match (jackknife, df) {
                    (Some(_), Some(_)) => (
                        Design {
                            jackknife,
                            df,
                            effective_units,
                            weighting_deff,
                        },
                        false,
                    ),
                    _ => (set(), true),
                }
            }
            Method::Raked => {
                // The raked mean is a post-stratified mean over the margins' crossed cells, with
                // the cells' raked weight totals as their shares: Satterthwaite's df over those
                // cells (a heuristic for the raked se, which the set's jackknife floors: a thin
                // cell that carries the variance brings the df down; the coverage simulations
                // are its evidence). A cell whose variance is unknown (one unit, one cluster, or
                // drops that do not vary) is left out of the df; where production weighs it
                // beyond [`UPWEIGHTED`] times its share of the cases the set's se may be far
                // below its truth, and the arm falls back (judged for any score distribution).
                let (cells, mut share) = crossed_cells(self.weighting, pos, &weights);
                let clusters = self.paired.clustered.then_some(&units[..]);
                let mut cases = vec![0usize; share.len()];
                for &c in &cells {
                    cases[c] += 1;
                }
                let unknown = survey::unknown_variance_strata(x, &cells, &share, clusters);
                let n = pos.len() as f64;
                let fallback = unknown
                    .iter()
                    .any(|&h| share[h] > UPWEIGHTED * cases[h] as f64 / n);
                for h in unknown {
                    share[h] = 0.0;
                }
                // The se is the set's jackknife either way; the fallback judges the arm for any
                // score distribution ([`arm_row`]). Without any cell of known variance, units − 1.
                let df = survey::post_stratified_df(x, &cells, &share, clusters);
                (Design { df, ..set() }, fallback)
            }
        }
    }

    /// The weights of the cases at `pos`: post-stratified, W_h over the stratum's cases among
    /// them; raked, the raked weights.
    fn case_weights(&self, pos: &[usize]) -> Vec<f64> {
        match self.method {
            Method::PostStratified => {
                let w = &self.weighting[0];
                let strata: Vec<usize> = pos.iter().map(|&p| w.stratum[p]).collect();
                survey::post_stratified_weights(&strata, &w.share)
            }
            Method::Raked => pos.iter().map(|&p| self.weights[p]).collect(),
        }
    }
}

/// How many times its share of the cases production may weigh a raking cell whose variance is
/// unknown (one unit, one cluster, or drops that do not vary) before the arm falls back: a cell
/// of 4% of the set weighed 36% in production, its five cases all dropping 0 while its true drop
/// was 0.25, had made a truly needed arm confidently removable in 20% of experiments.
const UPWEIGHTED: f64 = 2.0;

/// The raking margins' crossed cells of the cases at `pos` (a dense code per case, in order of
/// first appearance) and each cell's share of the case weights `weights` (Σw in the cell / Σw).
fn crossed_cells(margins: &[Weighting], pos: &[usize], weights: &[f64]) -> (Vec<usize>, Vec<f64>) {
    let mut code: std::collections::HashMap<Vec<usize>, usize> = std::collections::HashMap::new();
    let cells: Vec<usize> = pos
        .iter()
        .map(|&p| {
            let key: Vec<usize> = margins.iter().map(|m| m.stratum[p]).collect();
            let next = code.len();
            *code.entry(key).or_insert(next)
        })
        .collect();
    let mut totals = vec![0.0; code.len()];
    for (&c, &w) in cells.iter().zip(weights) {
        totals[c] += w;
    }
    let all = moments::sum(totals.iter().copied());
    let share = totals
        .iter()
        .map(|t| if all > 0.0 { t / all } else { 0.0 })
        .collect();
    (cells, share)
}

/// Runs the reweighting.
///
/// # Errors
/// No mix; stratum columns missing from cases or the mix; null stratum values; production strata
/// with no eval case (unless allowed); several mixes that are not one-dimensional; raking that does
/// not converge.
pub fn run(exp: &Experiment, opts: &ReweightOptions) -> Result<ReweightOutput> {
    let m = &exp.results.matrix;
    let paired = Paired::new(exp, CaseSet::Main);
    let threshold = exp.manifest.threshold_drop;
    let mixes = mixes_to_use(exp, opts)?;
    let mut warnings = Vec::new();
    let (method, columns, weighting) = weighting(exp, &paired, &mixes, opts)?;
    let weights = case_weights(method, &weighting, &paired, &mixes, &columns)?;
    let effective_cases = survey::kish_effective_n(&weights);

    thin_strata_warnings(method, &weighting, &paired, &mut warnings);
    if paired.clustered && paired.n_units < 2 {
        warnings.push(crate::warning::Warning::new(
            "reweight.one_cluster",
            "every paired case is in one cluster: the production se of the baseline and of every arm is undefined (null), and so are their intervals; no arm is called confident in production",
        ));
    }
    let est = Estimator {
        method,
        weighting: &weighting,
        weights: &weights,
        paired: &paired,
    };
    let estimate = |pos: &[usize], x: &[f64]| est.estimate(pos, x);

    let base = paired.baseline;
    let all: Vec<usize> = (0..paired.cases.len()).collect();
    let base_scores: Vec<f64> = paired
        .cases
        .iter()
        .map(|&c| m.mean[m.cell(c, base)])
        .collect();
    let (score_production, se_base) = estimate(&all, &base_scores);
    // No spread among the weighted cases: the se is undefined, not a measured 0 (a zero-width
    // interval had been printed).
    let se_base = se_base.filter(|&se| {
        if se == 0.0 {
            warnings.push(crate::warning::Warning::new(
                "reweight.no_spread",
                "the baseline scores every weighted case alike: its production se is undefined (null), and so is its interval",
            ));
        }
        se > 0.0
    });
    let baseline = ReweightBaseline {
        score_eval: moments::mean(&base_scores),
        score_production,
        se_production: se_base,
        ci_production: score_production.and_then(|p| Interval::normal(p, se_base, opts.confidence)),
    };

    let baseline_has_se = baseline.se_production.is_some();
    // Each arm on its own (rayon, collected in arm order: the same output at any thread count).
    // Their pairs first, in passes over the matrix (built already when `report` runs this).
    let others: Vec<usize> = (0..m.n_arms).filter(|&a| a != base).collect();
    let pairs = paired.arms(m, &others);
    let rows: Vec<(Option<crate::warning::Warning>, ReweightArm, bool, bool)> = others
        .par_iter()
        .zip(pairs.par_iter())
        .filter_map(|(&a, &p)| {
            if p.pos.is_empty() {
                return None;
            }
            let (drop_production, se_production) = estimate(&p.pos, &p.drop);
            let arm = &exp.results.arms[a];
            let warning = match (drop_production, se_production) {
                (None, _) => Some(crate::warning::Warning::new("reweight.arm_missing_stratum", format!(
                    "arm {arm:?} has no case in a weighted stratum; its production drop is undefined"
                ))),
                (Some(d), Some(0.0)) => Some(crate::warning::Warning::new("reweight.no_spread", format!(
                    "arm {arm:?}: every weighted case has the same drop ({d}); the production se is undefined (null) and the interval is the exact bound"
                ))),
                // Its own single-case stratum (the baseline's, or one cluster, is said once above).
                (Some(_), None) if baseline_has_se => Some(crate::warning::Warning::new("reweight.arm_single_case_stratum", format!(
                    "arm {arm:?} has one paired case, or cases in one cluster, in a weighted stratum (its other cases lack results): that stratum's variance is unknown, so its production se and intervals are undefined (null)"
                ))),
                _ => None,
            };
            // The resampling units that carry weight in production: cases of strata with no
            // production share say nothing of the production drop.
            let weighted_units: Vec<u32> = p
                .unit
                .iter()
                .zip(&p.pos)
                .filter(|&(_, &pos)| weights[pos] > 0.0)
                .map(|(&u, _)| u)
                .collect();
            let (design, fallback) = est.design(&p.pos, &p.drop);
            let weighted = Paired::distinct_units(&weighted_units);
            // Enough units, but the weights leave fewer than a verdict needs.
            let few = weighted >= MIN_UNITS_TO_DECIDE
                && drop_production.is_some()
                && design
                    .effective_units
                    .is_some_and(|e| e < MIN_UNITS_TO_DECIDE as f64);
            let row = arm_row(
                exp,
                opts,
                &exp.results.arms[a],
                p,
                weighted,
                Production {
                    drop: drop_production,
                    se: se_production,
                    design,
                    fallback,
                },
            );
            Some((warning, row, fallback && se_production.is_some(), few))
        })
        .collect();
    let mut arms = Vec::with_capacity(rows.len());
    let (mut fell_back, mut few) = (Vec::new(), Vec::new());
    for (warning, row, fallback, few_units) in rows {
        warnings.extend(warning);
        if fallback {
            fell_back.push(row.arm.clone());
        }
        if few_units {
            few.push(row.arm.clone());
        }
        arms.push(row);
    }
    warnings.extend(arms_named(&few).map(|arms| {
        crate::warning::Warning::new(
            "reweight.few_effective_units",
            format!("{arms} rest in production on fewer than {MIN_UNITS_TO_DECIDE} effective units (Kish: a few cases carry most of the production share), so their production verdicts stay inconclusive and their intervals are rough; more cases in the strata production weighs most would settle them"),
        )
    }));
    warnings.extend(arms_named(&fell_back).map(|arms| match method {
        Method::PostStratified => crate::warning::Warning::new(
            "reweight.thin_stratum",
            format!("{arms} have a weighted stratum whose drops do not vary: its variance is unknown, not zero, so their production intervals use the eval set's se and units − 1 degrees of freedom, and are judged for any score distribution whatever the guarantee (the set's se can be narrower than that stratum's truth); more cases in that stratum would narrow them"),
        ),
        Method::Raked => crate::warning::Warning::new(
            "reweight.thin_cell",
            format!("{arms} have a raking cell (a combination of the margins' strata) that production weighs more than {UPWEIGHTED} times its share of the set and whose variance is unknown (one case, one cluster, or drops that do not vary), so their production intervals are judged for any score distribution whatever the guarantee (the set's se can be narrower than that cell's truth); more cases in the combinations production weighs most would narrow them"),
        ),
    }));

    let coverage: Vec<Coverage> = weighting.iter().flat_map(|w| w.coverage.clone()).collect();
    let unmeasured_share = weighting
        .iter()
        .map(|w| w.unmeasured_share)
        .fold(0.0, f64::max);
    Ok(ReweightOutput {
        strata: columns,
        method,
        effective_cases,
        unmeasured_share,
        threshold_drop: threshold,
        cases: paired.cases.len(),
        baseline,
        arms,
        known_coverage_gap: coverage_gap(&coverage),
        coverage,
        unweighted_strata: weighting
            .iter()
            .flat_map(|w| w.unweighted.clone())
            .collect(),
        warnings,
    })
}

/// "N arm(s) (a, b, …)", naming the first ten of `arms`; none without arms.
fn arms_named(arms: &[String]) -> Option<String> {
    (!arms.is_empty()).then(|| {
        let names: Vec<&str> = arms.iter().map(String::as_str).collect();
        format!(
            "{} arm(s) ({})",
            arms.len(),
            crate::text::some_names(&names, 10)
        )
    })
}

/// An arm's production drop, its design se and what its intervals take beside it.
struct Production {
    drop: Option<f64>,
    se: Option<f64>,
    design: Design,
    /// Whether the design fell back ([`Estimator::design`]: post-stratified, a weighted stratum
    /// of unknown variance, the se then the eval set's; raked, a crossed cell of unknown variance
    /// weighed up beyond [`UPWEIGHTED`]): the normal approximation has nothing to rest on in that
    /// stratum or cell, and the arm is judged for any score distribution whatever the guarantee.
    fallback: bool,
}

/// One arm's drop on the eval set and in production (with `estimate`'s production drop and se),
/// their verdicts, and the production confidence judged family-wise (unless `--per-arm`).
///
/// The production intervals are the sweep's ([`Intervals::estimate`] shown,
/// [`Intervals::family_under`] judging) of the weighted estimate ([`Intervals::weighted`]): the
/// arm's drops recentred on the production drop, with the production se (post-stratified or
/// raked, clustered when the cases are) floored by its jackknife and with its degrees of freedom
/// (`production.design`, [`Estimator::design`]), whose design effect widens the score part.
/// Under `any-distribution` that is the small-sample interval on the effective sample size,
/// under `normal` the t interval; with no spread the exact bound on the
/// units that carry weight (`weighted_units`: a case of a stratum with no production share is no
/// evidence of the production drop), never a zero-width interval; undefined (inconclusive) with
/// fewer than two such units, or without a production se (a weighted stratum with one case).
/// Only an arm in the decision family ([`crate::analysis::sweep::in_family`]) may be confident.
fn arm_row(
    exp: &Experiment,
    opts: &ReweightOptions,
    arm: &str,
    p: &PairedArm,
    weighted_units: usize,
    production: Production,
) -> ReweightArm {
    let Production {
        drop: drop_production,
        se: se_production,
        design,
        fallback,
    } = production;
    let in_family = exp
        .results
        .arm_index(arm)
        .is_some_and(|a| crate::analysis::sweep::in_family(exp, a));
    let threshold = exp.manifest.threshold_drop;
    let drop_eval = moments::mean(&p.drop);
    // A weighted stratum whose drops do not vary has an unknown variance, and the eval set's se
    // that stands for it can be far narrower than the truth where that stratum carries the
    // losses (a thin stratum of 36% production share whose five cases dropped 0 while its true
    // drop was 0.25 gave confident removals in 19-28% of experiments under `normal`): judged for
    // any score distribution, as under `any-distribution`, whatever the guarantee.
    let guarantee = if fallback {
        Guarantee::AnyDistribution
    } else {
        opts.guarantee.unwrap_or(exp.manifest.guarantee)
    };
    let weighted = drop_production.is_some();
    // No more units than the weights leave (Kish): a verdict on fewer than ten is never
    // confident, as the sweep's.
    let units = design
        .effective_units
        .map_or(weighted_units, |e| weighted_units.min(e.floor() as usize));
    let scale = crate::analysis::paired::rounding_scale(exp);
    // Drops the same up to rounding, overall or within every weighted stratum (a weighted se
    // of rounding alone: 1e-18).
    let rounding = crate::stats::estimate::SAME_VALUE * scale;
    let no_spread = crate::stats::estimate::no_variation_at(&p.drop, scale)
        || se_production.is_some_and(|se| se <= rounding);
    // No spread: the exact bound on two or more weighted units; with fewer, nothing bounds the
    // drop (the interval is undefined, the verdict inconclusive).
    let flat = units >= 2 && no_spread;
    let (lo, hi) = crate::analysis::paired::experiment_score_bounds(exp);
    // The unweighted drops recentred on the production drop: the weighting's design effect
    // (in se_production) widens their intervals ([`Intervals::weighted`]).
    let shift = drop_production.map_or(0.0, |d| d - drop_eval);
    let recentred: Vec<f64> = p.drop.iter().map(|d| d + shift).collect();
    let level = |family: usize| 1.0 - (1.0 - opts.confidence) / family as f64;
    // One set of intervals for the shown and the judging interval (their spread found once).
    // Without a production se (a weighted stratum with one case), nothing bounds the production
    // drop: no interval, and the verdict stays inconclusive.
    let intervals = drop_production
        .filter(|_| weighted && !no_spread && se_production.is_some())
        .map(|d| {
            Intervals::weighted(
                &Sample {
                    point: d,
                    se: se_production,
                    values: &recentred,
                    units: &p.unit,
                    reach: (lo - hi + shift, hi - lo + shift),
                },
                (lo - hi, hi - lo),
                design,
            )
        });
    // `family`: None for the shown interval (as the sweep's `ci`), Some(K) for the judging one.
    let at = |family: Option<usize>| match (drop_production, &intervals) {
        (Some(d), _) if flat => {
            Estimate::no_variation(d, units, lo - hi, hi - lo, level(family.unwrap_or(1)))
        }
        (Some(_), Some(intervals)) => match family {
            None => intervals.estimate_under(guarantee, None, opts.confidence),
            Some(k) => intervals.family_under(guarantee, k, opts.confidence),
        },
        _ => Estimate::normal(f64::NAN, None, opts.confidence),
    };
    let production_ci = at(None);
    let verdict_eval = Verdict::of(drop_eval, threshold);
    let verdict_production = drop_production.map(|d| Verdict::of(d, threshold));
    let judging = at(Some(if opts.per_arm { 1 } else { opts.family.max(1) }));
    // An arm outside the decision family (experiment.toml's `decide`) is described, never judged
    // confident, so its flip never reaches the decision.
    let confidence_production = drop_production.map(|d| match in_family {
        true => judge(d, threshold, &judging, units).1,
        false => Confidence::Inconclusive,
    });
    let flipped = verdict_production.is_some_and(|v| v != verdict_eval);
    // Only an arm the decision judges can be settled (one outside the family is never
    // confident), and only with a production se (no spread, or a one-case stratum: undefined).
    let (mut production_cases_to_settle, mut production_settleable) = (None, None);
    if let (Some(d), Some(se), Some(intervals)) = (
        drop_production,
        se_production.filter(|&se| se > rounding),
        intervals.as_ref(),
    ) && in_family
        && confidence_production == Some(Confidence::Inconclusive)
    {
        let family = if opts.per_arm { 1 } else { opts.family.max(1) };
        let within =
            settle::facing_within(intervals, threshold, guarantee, family, opts.confidence);
        production_cases_to_settle = settle::cases_to_clear(
            d,
            threshold,
            se,
            (p.pos.len(), units),
            crate::stats::dist::z_quantile(crate::analysis::decision::POWER),
            &within,
        )
        .map(|n| n.max(p.pos.len() as u64));
        production_settleable = Some(production_cases_to_settle.is_some());
    }
    ReweightArm {
        arm: arm.to_string(),
        drop_eval,
        drop_production,
        // Undefined without spread (the interval is then the exact bound), not a measured 0.
        se_production: se_production.filter(|&se| se > rounding),
        ci_production: production_ci.interval(),
        verdict_eval,
        verdict_production,
        ci_production_family: judging.interval(),
        confidence_production,
        flipped,
        flip_confident: flipped && confidence_production == Some(Confidence::Confident),
        production_cases_to_settle,
        production_settleable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn margin(stratum: Vec<usize>) -> Weighting {
        Weighting {
            weight: Vec::new(),
            stratum,
            share: Vec::new(),
            coverage: Vec::new(),
            unmeasured_share: 0.0,
            unweighted: Vec::new(),
        }
    }

    /// Two margins' crossed cells, by hand: cases 0..5 at (A, B) = (0,0), (1,0), (0,0), (1,1),
    /// (0,1), (1,1); among positions 1..6 the cells come in order of first appearance, and each
    /// cell's share is its raked weights' total over all.
    #[test]
    fn crossed_cells_by_hand() {
        let margins = [
            margin(vec![0, 1, 0, 1, 0, 1]),
            margin(vec![0, 0, 0, 1, 1, 1]),
        ];
        let pos = [1, 2, 3, 4, 5];
        let weights = [1.0, 2.0, 3.0, 4.0, 10.0];
        let (cells, share) = crossed_cells(&margins, &pos, &weights);
        // (1,0), (0,0), (1,1), (0,1), (1,1)
        assert_eq!(cells, vec![0, 1, 2, 3, 2]);
        let total = 20.0;
        assert_eq!(
            share,
            vec![1.0 / total, 2.0 / total, 13.0 / total, 4.0 / total]
        );
    }
}
