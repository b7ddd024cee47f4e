//! `ablate reweight`: what the eval's numbers mean for production traffic.
//!
//! The eval set weights every case equally, so its own composition silently acts as a claim about
//! traffic. Reweighting replaces that claim with production's shares.
//!
//! **Post-stratification** (one mix): strata h are the combinations of the stratum columns, W_h
//! the production share. For any per-case quantity x: x̂ = Σ_h W_h · mean_{i∈h} xᵢ, with
//! se = √(Σ_h W_h² s_h²/n_h) (s_h the sample sd within h; null, with a warning, when some weighted
//! stratum has fewer than 2 cases). Kish's effective sample size (Σw)²/Σw² with wᵢ = W_h/n_h says
//! what the weighting costs.
//!
//! **Raking** (several mixes, one dimension each): iterative proportional fitting of case weights
//! (Deming & Stephan 1940), from equal weights, until every margin is within 1e-10 of its target
//! (an error naming the margin if not within 1000 rounds); x̂ = Σ wᵢxᵢ/Σ wᵢ with the linearised se
//! √(n/(n−1)·Σ (wᵢ(xᵢ − x̂))²)/Σ wᵢ, treating the weights as fixed. With a single dimension raking
//! gives the post-stratified estimate.
//!
//! A production stratum with no eval case is an error naming it, unless `allow_unmeasured`: then
//! shares are renormalised over measured strata and `unmeasured_share` says what was dropped
//! (as R survey's `postStratify(partial = TRUE)`). Eval strata absent from the mix get weight 0 and
//! are listed.
//!
//! **Coverage** per stratum: eval_cases, eval_share = n_h/n, production_share, ratio =
//! production/eval share, status `unmeasured` (no eval cases), `under-sampled` (ratio ≥ 2),
//! `over-sampled` (ratio ≤ 0.5) or `ok`; `known_coverage_gap` names the most under-sampled stratum.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::analysis::paired::{CaseSet, Paired};
use crate::analysis::sweep::Verdict;
use crate::error::{Error, Result, Row};
use crate::io::{Experiment, Mix};
use crate::stats::moments::{self, Neumaier};

/// Convergence tolerance of raking on every margin.
pub const RAKE_TOLERANCE: f64 = 1e-10;
/// Maximum raking rounds.
pub const RAKE_MAX_ROUNDS: usize = 1000;

/// Options of a reweighting run.
#[derive(Debug, Clone, Default)]
pub struct ReweightOptions {
    /// Production mixes: one → post-stratification, several → raking (one column each).
    pub mixes: Vec<Mix>,
    /// Stratum columns to use (post-stratification; the mix is marginalised onto them).
    pub by: Vec<String>,
    /// Renormalise over measured strata instead of failing on unmeasured ones.
    pub allow_unmeasured: bool,
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
    /// Verdict on the eval set.
    pub verdict_eval: Verdict,
    /// Verdict in production (null when the production drop is undefined).
    pub verdict_production: Option<Verdict>,
    /// Whether the two verdicts differ.
    pub flipped: bool,
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
    pub warnings: Vec<String>,
}

/// A stratum key: the values of the stratum columns.
type Key = Vec<String>;

fn label(columns: &[String], key: &[String]) -> String {
    columns
        .iter()
        .zip(key)
        .map(|(c, v)| format!("{c}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The stratum key of every paired case.
fn case_keys(exp: &Experiment, paired: &Paired, columns: &[String]) -> Result<Vec<Key>> {
    let mut values = Vec::new();
    for c in columns {
        let v = exp.cases.attributes.get(c).ok_or_else(|| Error::BadValue {
            path: exp.cases.path.clone(),
            column: c.clone(),
            row: Row::none(),
            value: format!("`{c}`"),
            problem: "the stratum column is not a text column of the cases table".into(),
            fix: "add the column to cases, or choose other strata (--by, or `strata` in experiment.toml)"
                .into(),
        })?;
        values.push(v);
    }
    paired
        .cases
        .iter()
        .map(|&i| {
            values
                .iter()
                .zip(columns)
                .map(|(v, c)| {
                    v[i].clone().ok_or_else(|| Error::BadValue {
                        path: exp.cases.path.clone(),
                        column: c.clone(),
                        row: Row::at(i),
                        value: "null".into(),
                        problem: "a stratum value is missing, so the case cannot be weighted"
                            .into(),
                        fix: "fill in the stratum of every main-set case".into(),
                    })
                })
                .collect()
        })
        .collect()
}

/// The mix marginalised onto `columns`: key → share, in first-appearance order.
fn marginal(mix: &Mix, columns: &[String]) -> Result<Vec<(Key, f64, usize)>> {
    let idx: Vec<usize> = columns
        .iter()
        .map(|c| {
            mix.columns
                .iter()
                .position(|m| m == c)
                .ok_or_else(|| Error::BadValue {
                    path: mix.path.clone(),
                    column: c.clone(),
                    row: Row::none(),
                    value: format!("`{c}`"),
                    problem: format!(
                        "the mix has no such stratum column (it has {})",
                        mix.columns.join(", ")
                    ),
                    fix: "give a mix with that column, or choose strata the mix has".into(),
                })
        })
        .collect::<Result<_>>()?;
    let mut out: Vec<(Key, f64, usize)> = Vec::new();
    for (row, s) in mix.strata.iter().enumerate() {
        let key: Key = idx.iter().map(|&i| s.values[i].clone()).collect();
        match out.iter_mut().find(|(k, _, _)| *k == key) {
            Some(e) => e.1 += s.share,
            None => out.push((key, s.share, row)),
        }
    }
    Ok(out)
}

/// Per-case weights and the coverage of one margin (or the crossed strata).
struct Weighting {
    /// Weight of each paired case (Σ over cases of a measured stratum h = W_h).
    weight: Vec<f64>,
    /// Stratum id of each paired case, for post-stratification.
    stratum: Vec<usize>,
    /// Normalised production share per stratum id.
    share: Vec<f64>,
    coverage: Vec<Coverage>,
    unmeasured_share: f64,
    unweighted: Vec<String>,
}

/// Builds strata from one margin: checks unmeasured strata, renormalises, computes coverage.
fn stratify(
    mix: &Mix,
    columns: &[String],
    keys: &[Key],
    allow_unmeasured: bool,
) -> Result<Weighting> {
    let production = marginal(mix, columns)?;
    let n = keys.len();
    let mut ids: HashMap<&Key, usize> = HashMap::new();
    let mut strata: Vec<Key> = production.iter().map(|p| p.0.clone()).collect();
    for (i, (k, _, _)) in production.iter().enumerate() {
        ids.insert(k, i);
    }
    let mut eval_only: Vec<Key> = keys
        .iter()
        .filter(|k| !ids.contains_key(k))
        .cloned()
        .collect();
    eval_only.sort();
    eval_only.dedup();
    strata.extend(eval_only.iter().cloned());
    let index: HashMap<&Key, usize> = strata.iter().enumerate().map(|(i, k)| (k, i)).collect();
    let stratum: Vec<usize> = keys.iter().map(|k| index[k]).collect();
    let mut counts = vec![0usize; strata.len()];
    for &s in &stratum {
        counts[s] += 1;
    }
    let mut raw_share: Vec<f64> = production.iter().map(|p| p.1).collect();
    raw_share.resize(strata.len(), 0.0);

    let mut unmeasured = 0.0;
    for (i, (key, share, row)) in production.iter().enumerate() {
        if counts[i] == 0 && *share > 0.0 {
            if !allow_unmeasured {
                return Err(Error::BadValue {
                    path: mix.path.clone(),
                    column: columns.join(", "),
                    row: Row::at(*row),
                    value: label(columns, key),
                    problem: format!(
                        "this production stratum ({:.1}% of traffic) has no eval case, so its behaviour is unknown",
                        100.0 * share
                    ),
                    fix: "add eval cases for it, or pass --allow-unmeasured to renormalise over measured strata (the dropped share is reported)"
                        .into(),
                });
            }
            unmeasured += share;
        }
    }
    let measured_total: f64 = moments::sum(
        (0..strata.len())
            .filter(|&i| counts[i] > 0)
            .map(|i| raw_share[i]),
    );
    if measured_total <= 0.0 {
        return Err(Error::BadValue {
            path: mix.path.clone(),
            column: columns.join(", "),
            row: Row::none(),
            value: format!("{:.1}% unmeasured", 100.0 * unmeasured),
            problem:
                "no production stratum with traffic has an eval case, so nothing can be reweighted"
                    .into(),
            fix: "check that the mix's stratum values match the cases table's (spelling, case)"
                .into(),
        });
    }
    let share: Vec<f64> = (0..strata.len())
        .map(|i| {
            if counts[i] > 0 && measured_total > 0.0 {
                raw_share[i] / measured_total
            } else {
                0.0
            }
        })
        .collect();
    let weight = stratum
        .iter()
        .map(|&s| share[s] / counts[s] as f64)
        .collect();
    let coverage = strata
        .iter()
        .enumerate()
        .map(|(i, key)| {
            let eval_share = counts[i] as f64 / n.max(1) as f64;
            let ratio = (counts[i] > 0).then(|| raw_share[i] / eval_share);
            Coverage {
                stratum: columns.iter().cloned().zip(key.iter().cloned()).collect(),
                eval_cases: counts[i],
                eval_share,
                production_share: raw_share[i],
                ratio,
                status: Status::of(counts[i], ratio),
            }
        })
        .collect();
    Ok(Weighting {
        weight,
        stratum,
        share,
        coverage,
        unmeasured_share: unmeasured,
        unweighted: eval_only.iter().map(|k| label(columns, k)).collect(),
    })
}

/// Post-stratified estimate of per-case values `x` at paired positions `pos`:
/// (Σ_h W_h·mean_h, √(Σ_h W_h² s_h²/n_h)). The estimate is `None` when a weighted stratum has no
/// case among `pos`; the se is `None` when one has fewer than 2.
pub fn post_stratified(x: &[f64], strata: &[usize], share: &[f64]) -> (Option<f64>, Option<f64>) {
    let mut groups: Vec<Vec<f64>> = vec![Vec::new(); share.len()];
    for (v, &s) in x.iter().zip(strata) {
        groups[s].push(*v);
    }
    let mut est = Neumaier::default();
    let mut var = Neumaier::default();
    let mut se_defined = true;
    for (h, g) in groups.iter().enumerate() {
        if share[h] == 0.0 {
            continue;
        }
        if g.is_empty() {
            return (None, None);
        }
        est.add(share[h] * moments::mean(g));
        if g.len() < 2 {
            se_defined = false;
        } else {
            var.add(share[h] * share[h] * moments::sample_variance(g) / g.len() as f64);
        }
    }
    (
        Some(est.total()),
        se_defined.then(|| var.total().max(0.0).sqrt()),
    )
}

/// Weighted mean Σwx/Σw and its linearised se √(n/(n−1)·Σ(w(x − x̂))²)/Σw.
pub fn weighted_mean(x: &[f64], w: &[f64]) -> (Option<f64>, Option<f64>) {
    let total = moments::sum(w.iter().copied());
    if total <= 0.0 {
        return (None, None);
    }
    let est = moments::sum(x.iter().zip(w).map(|(x, w)| x * w)) / total;
    let n = w.iter().filter(|w| **w > 0.0).count();
    if n < 2 {
        return (Some(est), None);
    }
    let ss = moments::sum(x.iter().zip(w).map(|(x, w)| (w * (x - est)).powi(2)));
    (
        Some(est),
        Some((n as f64 / (n - 1) as f64 * ss).sqrt() / total),
    )
}

/// Iterative proportional fitting: case weights whose margins match every target.
///
/// `margins[m]` = (category of each case, target share per category). Starts from weights 1.
///
/// # Errors
/// Returns the index of the margin furthest from its target when 1000 rounds do not bring every
/// margin within 1e-10.
pub fn rake(
    margins: &[(Vec<usize>, Vec<f64>)],
    n: usize,
) -> std::result::Result<Vec<f64>, (usize, f64)> {
    let mut w = vec![1.0; n];
    let deviation = |w: &[f64]| -> (usize, f64) {
        let total = moments::sum(w.iter().copied());
        let mut worst = (0, 0.0f64);
        for (m, (cat, target)) in margins.iter().enumerate() {
            let mut sums = vec![Neumaier::default(); target.len()];
            for (i, &c) in cat.iter().enumerate() {
                sums[c].add(w[i]);
            }
            for (g, t) in target.iter().enumerate() {
                let d = (sums[g].total() / total - t).abs();
                if d > worst.1 {
                    worst = (m, d);
                }
            }
        }
        worst
    };
    for _ in 0..RAKE_MAX_ROUNDS {
        for (cat, target) in margins {
            let total = moments::sum(w.iter().copied());
            let mut sums = vec![Neumaier::default(); target.len()];
            for (i, &c) in cat.iter().enumerate() {
                sums[c].add(w[i]);
            }
            let factor: Vec<f64> = target
                .iter()
                .zip(&sums)
                .map(|(t, s)| {
                    if s.total() > 0.0 {
                        t * total / s.total()
                    } else {
                        0.0
                    }
                })
                .collect();
            for (i, &c) in cat.iter().enumerate() {
                w[i] *= factor[c];
            }
        }
        if deviation(&w).1 < RAKE_TOLERANCE {
            return Ok(w);
        }
    }
    Err(deviation(&w))
}

/// The most under-sampled stratum in the seed's wording.
fn coverage_gap(coverage: &[Coverage]) -> Option<String> {
    let describe = |c: &Coverage| {
        let name = c.label();
        format!(
            "{:.0}% {name} in set vs {:.0}% in production",
            100.0 * c.eval_share,
            100.0 * c.production_share
        )
    };
    let unmeasured = coverage
        .iter()
        .filter(|c| c.status == Status::Unmeasured)
        .max_by(|a, b| a.production_share.total_cmp(&b.production_share));
    if let Some(c) = unmeasured {
        return Some(describe(c));
    }
    coverage
        .iter()
        .filter(|c| c.status == Status::UnderSampled)
        .max_by(|a, b| a.ratio.unwrap_or(0.0).total_cmp(&b.ratio.unwrap_or(0.0)))
        .map(describe)
}

/// The stratum columns of a post-stratification: `by` when given; else the experiment's strata
/// (manifest `strata`, else `slice`) when the mix has them; else, for a mix given explicitly (or
/// when the manifest names no strata), the mix's own text columns.
///
/// # Errors
/// The experiment's own mix lacks the strata the manifest names.
fn choose_columns(
    exp: &Experiment,
    mix: &Mix,
    by: &[String],
    explicit_mix: bool,
) -> Result<Vec<String>> {
    let strata = exp.strata();
    if !by.is_empty() {
        Ok(by.to_vec())
    } else if !strata.is_empty() && strata.iter().all(|c| mix.columns.contains(c)) {
        Ok(strata)
    } else if !explicit_mix && exp.manifest.strata.is_some() {
        Err(Error::BadValue {
            path: mix.path.clone(),
            column: strata.join(", "),
            row: Row::none(),
            value: format!("mix columns: {}", mix.columns.join(", ")),
            problem: "the mix lacks the experiment's strata (experiment.toml `strata`)".into(),
            fix: "add those columns to the mix, change `strata`, or choose columns with --by"
                .into(),
        })
    } else {
        Ok(mix.columns.clone())
    }
}

/// Production strata of the experiment's own mix, for post-stratifying other per-case
/// quantities (the needed-context fraction).
#[derive(Debug, Clone)]
pub struct ProductionStrata {
    /// Stratum columns.
    pub columns: Vec<String>,
    /// Stratum id of each of the paired cases.
    pub stratum: Vec<usize>,
    /// Production share per stratum id (renormalised over measured strata; 0 for eval-only ones).
    pub share: Vec<f64>,
    /// Production share of strata with no eval case (left out).
    pub unmeasured_share: f64,
}

/// The experiment mix's strata over `paired`'s cases; `None` when the experiment has no mix.
/// A production stratum with no eval case is an error unless `allow_unmeasured`; then it is left
/// out and reported in `unmeasured_share`.
///
/// # Errors
/// As [`run`]: stratum columns missing from cases or mix, null stratum values, unmeasured strata
/// (unless allowed), nothing measured.
pub fn production_strata(
    exp: &Experiment,
    paired: &Paired,
    allow_unmeasured: bool,
) -> Result<Option<ProductionStrata>> {
    let Some(mix) = &exp.mix else {
        return Ok(None);
    };
    let columns = choose_columns(exp, mix, &[], false)?;
    let keys = case_keys(exp, paired, &columns)?;
    let w = stratify(mix, &columns, &keys, allow_unmeasured)?;
    Ok(Some(ProductionStrata {
        columns,
        stratum: w.stratum,
        share: w.share,
        unmeasured_share: w.unmeasured_share,
    }))
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
    let mut warnings = Vec::new();

    let (method, columns, weighting) = if mixes.len() == 1 {
        let mix = &mixes[0];
        let columns = choose_columns(exp, mix, &opts.by, !opts.mixes.is_empty())?;
        let keys = case_keys(exp, &paired, &columns)?;
        (
            Method::PostStratified,
            columns.clone(),
            vec![stratify(mix, &columns, &keys, opts.allow_unmeasured)?],
        )
    } else {
        let mut columns = Vec::new();
        let mut margins = Vec::new();
        for mix in &mixes {
            if mix.columns.len() != 1 {
                return Err(Error::Usage(format!(
                    "raking takes one stratum column per mix; {} has {} ({}). Pass crossed strata as a single mix instead",
                    mix.path.display(),
                    mix.columns.len(),
                    mix.columns.join(", ")
                )));
            }
            let keys = case_keys(exp, &paired, &mix.columns)?;
            columns.push(mix.columns[0].clone());
            margins.push(stratify(mix, &mix.columns, &keys, opts.allow_unmeasured)?);
        }
        (Method::Raked, columns, margins)
    };

    let weights: Vec<f64> = match method {
        Method::PostStratified => weighting[0].weight.clone(),
        Method::Raked => {
            let margins: Vec<(Vec<usize>, Vec<f64>)> = weighting
                .iter()
                .map(|w| (w.stratum.clone(), w.share.clone()))
                .collect();
            rake(&margins, paired.cases.len()).map_err(|(margin, dev)| {
                Error::Usage(format!(
                    "raking did not converge in {RAKE_MAX_ROUNDS} rounds: margin {} ({}) is still {dev:.2e} from its target. The margins may be incompatible with the eval's cases (e.g. a combination production needs that the set lacks)",
                    mixes[margin].path.display(),
                    columns[margin]
                ))
            })?
        }
    };
    let sum_w = moments::sum(weights.iter().copied());
    let sum_w2 = moments::sum(weights.iter().map(|w| w * w));
    let effective_cases = if sum_w2 > 0.0 {
        sum_w * sum_w / sum_w2
    } else {
        0.0
    };

    if method == Method::PostStratified {
        for c in &weighting[0].coverage {
            if c.eval_cases == 1 && c.production_share > 0.0 {
                warnings.push(format!(
                    "stratum {} has one eval case: its within-stratum variance is unknown, so production se is null",
                    c.label()
                ));
            }
        }
    }

    let estimate = |pos: &[usize], x: &[f64]| -> (Option<f64>, Option<f64>) {
        match method {
            Method::PostStratified => {
                let strata: Vec<usize> = pos.iter().map(|&p| weighting[0].stratum[p]).collect();
                post_stratified(x, &strata, &weighting[0].share)
            }
            Method::Raked => {
                let w: Vec<f64> = pos.iter().map(|&p| weights[p]).collect();
                weighted_mean(x, &w)
            }
        }
    };

    let base = paired.baseline;
    let all: Vec<usize> = (0..paired.cases.len()).collect();
    let base_scores: Vec<f64> = paired
        .cases
        .iter()
        .map(|&c| m.mean[m.cell(c, base)])
        .collect();
    let (score_production, se_base) = estimate(&all, &base_scores);
    let baseline = ReweightBaseline {
        score_eval: moments::mean(&base_scores),
        score_production,
        se_production: se_base,
    };

    let mut arms = Vec::new();
    for a in (0..m.n_arms).filter(|&a| a != base) {
        let p = paired.arm(m, a);
        if p.pos.is_empty() {
            continue;
        }
        let drop_eval = moments::mean(&p.drop);
        let (drop_production, se_production) = estimate(&p.pos, &p.drop);
        if drop_production.is_none() {
            warnings.push(format!(
                "arm \"{}\" has no case in a weighted stratum; its production drop is undefined",
                exp.results.arms[a]
            ));
        }
        let verdict_eval = Verdict::of(drop_eval, threshold);
        let verdict_production = drop_production.map(|d| Verdict::of(d, threshold));
        arms.push(ReweightArm {
            arm: exp.results.arms[a].clone(),
            drop_eval,
            drop_production,
            se_production,
            verdict_eval,
            verdict_production,
            flipped: verdict_production.is_some_and(|v| v != verdict_eval),
        });
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn post_stratified_two_strata_by_hand() {
        // Stratum 0: 1, 3 (mean 2, s² 2); stratum 1: 10, 12, 14 (mean 12, s² 4).
        // W = 0.25, 0.75 → 0.5 + 9 = 9.5 ; se² = 0.0625·2/2 + 0.5625·4/3 = 0.0625 + 0.75.
        let x = [1.0, 3.0, 10.0, 12.0, 14.0];
        let s = [0, 0, 1, 1, 1];
        let (est, se) = post_stratified(&x, &s, &[0.25, 0.75]);
        assert!((est.unwrap() - 9.5).abs() < 1e-12);
        assert!((se.unwrap() - (0.0625f64 + 0.75).sqrt()).abs() < 1e-12);
        // A one-case stratum: estimate defined, se not.
        let (est, se) = post_stratified(&[1.0, 10.0, 12.0], &[0, 1, 1], &[0.5, 0.5]);
        assert!((est.unwrap() - 6.0).abs() < 1e-12);
        assert!(se.is_none());
        // A weighted stratum with no case: undefined.
        assert_eq!(post_stratified(&[1.0], &[0], &[0.5, 0.5]), (None, None));
    }

    #[test]
    fn own_shares_change_nothing() {
        let x = [0.0, 1.0, 1.0, 0.0, 1.0];
        let s = [0, 0, 1, 1, 1];
        let (est, _) = post_stratified(&x, &s, &[0.4, 0.6]);
        assert!((est.unwrap() - moments::mean(&x)).abs() < 1e-15);
    }

    #[test]
    fn ipf_two_by_two_known_answer() {
        // Four cases, one per cell of rows {a, b} × columns {x, y}; targets rows 0.3/0.7 and
        // columns 0.6/0.4. With one case per cell and equal start, IPF converges to the
        // independence table: w ∝ row·col → 0.18, 0.12, 0.42, 0.28.
        let rows = vec![0, 0, 1, 1];
        let cols = vec![0, 1, 0, 1];
        let w = rake(&[(rows, vec![0.3, 0.7]), (cols, vec![0.6, 0.4])], 4).unwrap();
        let total: f64 = w.iter().sum();
        let want = [0.18, 0.12, 0.42, 0.28];
        for (wi, t) in w.iter().zip(want) {
            assert!((wi / total - t).abs() < 1e-9, "{w:?}");
        }
    }

    #[test]
    fn ipf_single_dimension_equals_post_stratification() {
        let cat = vec![0, 0, 1, 1, 1];
        let x = [1.0, 3.0, 10.0, 12.0, 14.0];
        let w = rake(&[(cat.clone(), vec![0.25, 0.75])], 5).unwrap();
        let (raked, _) = weighted_mean(&x, &w);
        let (post, _) = post_stratified(&x, &cat, &[0.25, 0.75]);
        assert!((raked.unwrap() - post.unwrap()).abs() < 1e-12);
    }

    #[test]
    fn ipf_incompatible_margins_fail() {
        // Category 1 of margin B holds no case, yet it needs 50%.
        let r = rake(&[(vec![0, 0], vec![1.0]), (vec![0, 0], vec![0.5, 0.5])], 2);
        assert_eq!(r.unwrap_err().0, 1);
    }

    #[test]
    fn weighted_mean_se_by_hand() {
        // Equal weights: se = s/√n.
        let x = [1.0, 2.0, 3.0, 4.0];
        let (est, se) = weighted_mean(&x, &[1.0; 4]);
        assert_eq!(est, Some(2.5));
        let (_, plain) = moments::mean_se(&x, None);
        assert!((se.unwrap() - plain.unwrap()).abs() < 1e-12);
    }
}
