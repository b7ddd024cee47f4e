//! `ablate curve`: quality against context budget, per selector (seed 001).
//!
//! Points are the arms with a `budget_ratio` (the baseline is the point at 1.0), grouped by
//! `selector`. For each point, over the main-set cases paired with the baseline:
//! retention = score(arm) / score(baseline), a ratio of means (a mean of per-case ratios would
//! divide by zero on cases the full context fails), with a CI from the joint bootstrap of the
//! ratio (every point of every curve sees the same resamples), or with `--bootstrap 0` the delta
//! method: R ± z·se(mean of yᵢ − R·xᵢ)/x̄. tokens = the arm's mean `tokens_in`
//! over its paired cases, else budget_ratio × the baseline's tokens (mean `tokens_in`, else Σ unit
//! tokens). `min_budget` is the smallest measured budget whose retention reaches
//! `quality_threshold` q; `min_budget_confident` the smallest whose retention is confidently at
//! least q (`retention_confident`): retention ≥ q exactly when the mean of zᵢ = yᵢ − q·xᵢ (arm
//! score minus q times the baseline's, per case) is ≥ 0, so that mean is judged by the sweep's
//! interval family ([`Intervals::family_under`], under the guarantee in force, at 1 − α/K over
//! the K budget arms, or each at its own level with `--per-arm`): confident when its low end is
//! ≥ 0.
//!
//! Cost (with a price and a request rate): daily = tokens/10⁶ × price × requests per day, at full
//! context and at the cheapest budget below full that its interval confirms
//! (`min_budget_confident`, over the selectors; none confirmed: no cost); savings per day, per
//! 30-day month and in percent, and whether that budget's arm also keeps its drop under the
//! decision's `threshold_drop` (`within_threshold_drop`: the sweep judges the same arm by that
//! threshold, and a budget that keeps 95% retention can still drop far more than it). Priced or
//! not, a selector whose confirmed budget's arm drops at least `threshold_drop` gets the warning
//! `curve.confirmed_budget_needed`, so the curve and the decision never disagree silently.

use serde::Serialize;

use crate::analysis::Config;
use crate::analysis::interval::{self, Interval};
use crate::analysis::paired::{self, CaseSet, Intervals, Paired, PairedArm, Sample};
use crate::io::Experiment;
use crate::stats::bootstrap::{Draws, RatioSums};
use crate::stats::estimate::CiMethod;
use crate::stats::moments;

/// Price settings for the cost calculator.
#[derive(Debug, Clone, Copy)]
pub struct Pricing {
    /// Dollars per million input tokens.
    pub price_per_mtok: f64,
    /// Requests per day.
    pub requests_per_day: f64,
}

/// One point of a curve.
#[derive(Debug, Clone, Serialize)]
pub struct CurvePoint {
    /// The arm.
    pub arm: String,
    /// Share of the full context's tokens the selector was allowed.
    pub budget_ratio: f64,
    /// Mean input tokens per call.
    pub tokens: Option<f64>,
    /// Mean score over the paired cases.
    pub score: f64,
    /// score / baseline score over the same cases.
    pub retention: Option<f64>,
    /// The retention's interval (`ci_low`, `ci_high`, `ci_level`, `ci_method`): the bootstrap's
    /// percentile interval, or the delta method's normal one with `--bootstrap 0`.
    #[serde(flatten, serialize_with = "interval::ci")]
    pub ci: Option<Interval>,
    /// Whether the retention is confidently at least `quality_threshold`: the family interval
    /// of the mean of yᵢ − q·xᵢ lies at or above 0 (see the module documentation); null when it
    /// is undefined (fewer than ten units, too few to confirm anything, as the sweep calls no arm
    /// confident below that; or the retention itself undefined: the baseline scores 0 on the
    /// arm's cases).
    pub retention_confident: Option<bool>,
}

/// One selector's curve.
#[derive(Debug, Clone, Serialize)]
pub struct Curve {
    /// Selector name.
    pub selector: String,
    /// Points by increasing budget, the full context (1.0) last.
    pub points: Vec<CurvePoint>,
    /// Smallest budget with retention ≥ quality_threshold.
    pub min_budget: Option<f64>,
    /// Smallest budget whose retention is confidently ≥ quality_threshold (`retention_confident`).
    pub min_budget_confident: Option<f64>,
}

/// Daily cost at full context and at the smallest budget confirmed to keep quality.
#[derive(Debug, Clone, Serialize)]
pub struct Cost {
    /// The selector whose min_budget_confident is used.
    pub selector: String,
    /// That budget.
    pub budget_ratio: f64,
    /// The arm measured at that budget.
    pub arm: String,
    /// Its paired drop on the main set (as the sweep reports it).
    pub drop: f64,
    /// Whether that drop is under the decision's `threshold_drop` (else the sweep calls the arm
    /// needed, whatever its retention).
    pub within_threshold_drop: bool,
    /// Dollars per day at full context.
    pub daily_full: f64,
    /// Dollars per day at the min budget.
    pub daily_at_min_budget: f64,
    /// daily_full − daily_at_min_budget.
    pub savings_daily: f64,
    /// savings_daily × 30.
    pub savings_monthly: f64,
    /// savings / daily_full × 100.
    pub savings_percent: f64,
}

/// What `ablate curve` reports.
#[derive(Debug, Clone, Serialize)]
pub struct CurveOutput {
    /// Retention target.
    pub quality_threshold: f64,
    /// One curve per selector.
    pub selectors: Vec<Curve>,
    /// Cost, when priced.
    pub cost: Option<Cost>,
    /// Notes.
    pub warnings: Vec<crate::warning::Warning>,
}

/// Settings of `ablate curve`.
#[derive(Debug, Clone, Default)]
pub struct CurveOptions {
    /// Seed, bootstrap resamples and confidence of the retention bands.
    pub config: Config,
    /// Price and traffic, for the cost; `None` leaves the cost out.
    pub pricing: Option<Pricing>,
}

/// (arm, selector, budget) of every budget arm other than the baseline, in the arms table's
/// order.
fn budget_arms(exp: &Experiment, base: usize) -> Vec<(usize, String, f64)> {
    let Some(arms) = &exp.arms else {
        return Vec::new();
    };
    arms.specs
        .iter()
        .filter_map(|spec| {
            let ratio = spec.budget_ratio?;
            let a = exp.results.arm_index(&spec.arm).filter(|&a| a != base)?;
            let selector = spec
                .selector
                .clone()
                .unwrap_or_else(|| "(no selector)".into());
            Some((a, selector, ratio))
        })
        .collect()
}

/// One joint bootstrap of every retention ratio Σarm/Σbase (none with `--bootstrap 0` or no
/// budget arm).
fn retention_draws(paired: &Paired, pairs: &[&PairedArm], cfg: &Config) -> Option<Draws> {
    (cfg.bootstrap > 0 && !pairs.is_empty()).then(|| {
        let mut sums = RatioSums::new(paired.n_units, pairs.len());
        for (k, p) in pairs.iter().enumerate() {
            for j in 0..p.pos.len() {
                sums.add(p.unit[j] as usize, k, p.arm[j], p.base[j]);
            }
        }
        cfg.resample(&sums)
    })
}

/// The interval of one arm's retention: the bootstrap's percentile interval (`draws`, with the
/// arm's column), else the delta method's normal interval,
/// se(ȳ/x̄) = se of the mean of (yᵢ − R·xᵢ) / x̄, clustered like every other per-case mean.
/// Undefined with fewer than two resampling units or an undefined retention.
fn retention_interval(
    paired: &Paired,
    p: &PairedArm,
    retention: Option<f64>,
    draws: Option<(&Draws, usize)>,
    cfg: &Config,
) -> Option<Interval> {
    let r = retention.filter(|_| Paired::distinct_units(&p.unit) >= 2)?;
    match draws {
        Some((d, k)) => d
            .percentile_ci(k, cfg.confidence)
            .map(|(low, high)| Interval {
                low,
                high,
                level: cfg.confidence,
                method: CiMethod::BootstrapPercentile,
            }),
        None => {
            let residuals: Vec<f64> = p.arm.iter().zip(&p.base).map(|(y, x)| y - r * x).collect();
            let (_, se) = paired.mean_se(&residuals, &p.unit);
            let score_base = moments::mean(&p.base);
            Interval::normal(r, se.map(|s| s / score_base), cfg.confidence)
        }
    }
}

/// Whether arm `p`'s retention is confidently at least `q`: the family interval (under the
/// guarantee in force, over `family` arms) of the mean of zᵢ = yᵢ − q·xᵢ has its low end at or
/// above 0. `None` below [`paired::MIN_UNITS_TO_DECIDE`] units (too few to confirm anything).
fn clears_quality(
    exp: &Experiment,
    paired: &Paired,
    p: &PairedArm,
    q: f64,
    family: usize,
    cfg: &Config,
) -> Option<bool> {
    // Below the units at which any verdict is called confident, nothing is confirmed.
    if Paired::distinct_units(&p.unit) < paired::MIN_UNITS_TO_DECIDE {
        return None;
    }
    let z: Vec<f64> = p.arm.iter().zip(&p.base).map(|(y, x)| y - q * x).collect();
    let (point, se) = paired.mean_se(&z, &p.unit);
    let (lo, hi) = paired::experiment_score_bounds(exp);
    let sample = Sample {
        point,
        se,
        values: &z,
        units: &p.unit,
        reach: (lo - q * hi, hi - q * lo),
    };
    let guarantee = cfg.guarantee.unwrap_or(exp.manifest.guarantee);
    Intervals::new(&sample)
        .family_under(guarantee, family, cfg.confidence)
        .ci_low
        .map(|low| low >= 0.0)
}

/// The cheapest selector at its smallest budget below full confirmed to keep quality, against
/// the full prompt, per day and month at `price`; `drop_of` gives an arm's paired drop.
fn cost(
    curves: &[Curve],
    full_tokens: f64,
    price: Pricing,
    threshold_drop: f64,
    drop_of: &dyn Fn(&str) -> Option<f64>,
) -> Option<Cost> {
    let daily = |tokens: f64| tokens / 1e6 * price.price_per_mtok * price.requests_per_day;
    let best = curves
        .iter()
        .filter_map(|c| {
            let b = c.min_budget_confident.filter(|&b| b < 1.0)?;
            let point = c.points.iter().find(|p| p.budget_ratio == b)?;
            Some((c.selector.clone(), b, point.tokens?, point.arm.clone()))
        })
        .min_by(|x, y| x.2.total_cmp(&y.2))?;
    let (daily_full, at_min) = (daily(full_tokens), daily(best.2));
    let drop = drop_of(&best.3)?;
    Some(Cost {
        selector: best.0,
        budget_ratio: best.1,
        arm: best.3,
        drop,
        within_threshold_drop: drop < threshold_drop,
        daily_full,
        daily_at_min_budget: at_min,
        savings_daily: daily_full - at_min,
        savings_monthly: (daily_full - at_min) * 30.0,
        savings_percent: if daily_full > 0.0 {
            (1.0 - at_min / daily_full) * 100.0
        } else {
            0.0
        },
    })
}

/// Builds the curves.
pub fn run(exp: &Experiment, opts: &CurveOptions) -> CurveOutput {
    let (cfg, pricing) = (&opts.config, opts.pricing);
    let m = &exp.results.matrix;
    let paired = Paired::new(exp, CaseSet::Main);
    let base = paired.baseline;
    let threshold = exp.manifest.quality_threshold;
    let mut warnings = Vec::new();

    let budget_arms = budget_arms(exp, base);
    if budget_arms.is_empty() {
        warnings.push(crate::warning::Warning::new(
            "curve.no_budget_arms",
            "no arm has a budget_ratio: there is no curve to draw",
        ));
    }

    let mean_tokens = |a: usize, pos: &[usize]| -> Option<f64> {
        let t = m.tokens.as_ref()?;
        let v: Vec<f64> = pos
            .iter()
            .map(|&p| t[m.cell(paired.cases[p], a)])
            .filter(|x| !x.is_nan())
            .collect();
        (!v.is_empty()).then(|| moments::mean(&v))
    };
    let all: Vec<usize> = (0..paired.cases.len()).collect();
    let full_tokens =
        mean_tokens(base, &all).or_else(|| exp.units.as_ref().map(|u| u.total_tokens()));

    // Bootstrap of every retention ratio at once.
    let pairs: Vec<_> = budget_arms
        .iter()
        .map(|(a, _, _)| paired.arm(m, *a))
        .collect();
    let draws = retention_draws(&paired, &pairs, cfg);
    let family = if cfg.per_arm { 1 } else { pairs.len().max(1) };
    let few = pairs
        .iter()
        .filter(|p| Paired::distinct_units(&p.unit) < paired::MIN_UNITS_TO_DECIDE)
        .count();
    if few > 0 {
        warnings.push(crate::warning::Warning::new("curve.too_few_units", format!(
            "{few} budget arm(s) have fewer than {} units: too few to confirm that they keep quality (retention_confident is null), as the sweep calls no arm confident below that",
            paired::MIN_UNITS_TO_DECIDE
        )));
    }

    let mut selectors: Vec<String> = budget_arms.iter().map(|b| b.1.clone()).collect();
    selectors.sort();
    selectors.dedup();
    let base_score = moments::mean(
        &all.iter()
            .map(|&p| m.mean[m.cell(paired.cases[p], base)])
            .collect::<Vec<_>>(),
    );
    let mut curves = Vec::new();
    for selector in selectors {
        let mut points: Vec<CurvePoint> = Vec::new();
        for (k, (a, _, ratio)) in budget_arms
            .iter()
            .enumerate()
            .filter(|(_, b)| b.1 == selector)
        {
            let p = &pairs[k];
            let (score_arm, score_base) = (moments::mean(&p.arm), moments::mean(&p.base));
            // Undefined (not NaN, not 0) when the baseline scores 0 on these cases.
            let retention = (score_base > 0.0).then(|| score_arm / score_base);
            if retention.is_none() {
                warnings.push(crate::warning::Warning::new("curve.baseline_scores_zero", format!(
                    "arm {:?}: the baseline scores 0 on its paired cases, so its retention is undefined",
                    exp.results.arms[*a]
                )));
            }
            let ci = retention_interval(&paired, p, retention, draws.as_ref().map(|d| (d, k)), cfg);
            // Undefined retention is never confidently enough: nothing is retained of nothing.
            let retention_confident =
                retention.and_then(|_| clears_quality(exp, &paired, p, threshold, family, cfg));

            points.push(CurvePoint {
                arm: exp.results.arms[*a].clone(),
                budget_ratio: *ratio,
                tokens: mean_tokens(*a, &p.pos).or_else(|| full_tokens.map(|t| t * ratio)),
                score: score_arm,
                retention,
                ci,
                retention_confident,
            });
        }
        points.sort_by(|x, y| x.budget_ratio.total_cmp(&y.budget_ratio));
        points.push(CurvePoint {
            arm: exp.results.arms[base].clone(),
            budget_ratio: 1.0,
            tokens: full_tokens,
            score: base_score,
            retention: (base_score > 0.0).then_some(1.0),
            // The baseline against itself: retention 1 exactly, undefined (with its interval and
            // confidence) where the full-context score is 0.
            ci: (base_score > 0.0).then(|| Interval::exact(1.0, cfg.confidence)),
            retention_confident: (base_score > 0.0).then_some(threshold <= 1.0),
        });
        curves.push(Curve::of(selector, points, threshold));
    }

    let drop_of = |arm: &str| {
        let k = budget_arms
            .iter()
            .position(|(a, _, _)| exp.results.arms[*a] == arm)?;
        let p = &pairs[k];
        Some(moments::mean(&p.base) - moments::mean(&p.arm))
    };
    warnings.extend(confirmed_but_needed(
        &curves,
        threshold,
        exp.manifest.threshold_drop,
        &drop_of,
    ));
    let cost = pricing.and_then(|price| {
        cost(
            &curves,
            full_tokens?,
            price,
            exp.manifest.threshold_drop,
            &drop_of,
        )
    });
    if pricing.is_some() && cost.is_none() {
        warnings.push(crate::warning::Warning::new(
            "curve.no_cost",
            if full_tokens.is_none() || curves.iter().any(|c| c.min_budget_confident.is_some_and(|b| b < 1.0)) {
                "priced, but the cost is undefined (null): the tokens of the full prompt or of the smallest confirmed budget are unknown; give the results a tokens_in column, or the experiment a units table"
            } else {
                "priced, but the cost is undefined (null): no selector's budget below the full prompt is confirmed to keep quality, so there is no saving to price"
            },
        ));
    }
    CurveOutput {
        quality_threshold: threshold,
        selectors: curves,
        cost,
        warnings,
    }
}

/// The selectors whose smallest confirmed budget below full (`min_budget_confident`) has an arm
/// that drops at least the decision's `threshold_drop` on the set: the curve says that budget
/// keeps quality, and the sweep judges the same arm needed. Said whether or not the cost is
/// priced, so that the two never disagree silently.
fn confirmed_but_needed(
    curves: &[Curve],
    quality_threshold: f64,
    threshold_drop: f64,
    drop_of: &dyn Fn(&str) -> Option<f64>,
) -> Vec<crate::warning::Warning> {
    curves
        .iter()
        .filter_map(|c| {
            let b = c.min_budget_confident.filter(|&b| b < 1.0)?;
            let point = c.points.iter().find(|p| p.budget_ratio == b)?;
            let drop = drop_of(&point.arm).filter(|&d| d >= threshold_drop)?;
            Some(crate::warning::Warning::new(
                "curve.confirmed_budget_needed",
                format!(
                    "selector {:?}: budget {b:.2} keeps {:.0}% retention confidently, but its arm {:?} drops {drop:+.4} on the set, not under the decision's threshold_drop ({threshold_drop}): the sweep judges that arm by the threshold, so the decision keeps the full context; read the sweep's verdict for the arm before cutting to this budget",
                    c.selector,
                    100.0 * quality_threshold,
                    point.arm,
                ),
            ))
        })
        .collect()
}

impl Curve {
    /// A selector's curve from its points (budget order, the baseline last): the smallest budget
    /// whose retention reaches the quality threshold, and the smallest whose interval's lower
    /// bound does.
    fn of(selector: String, points: Vec<CurvePoint>, threshold: f64) -> Curve {
        // A retention is a ratio of means: 0.5225 / 0.55 is 0.9499999999999998 in floating
        // point, and had missed a quality threshold of 0.95 it meets. Within 1e-12 (relative)
        // of the threshold counts as reaching it.
        let reaches = |r: f64| r >= threshold - 1e-12 * threshold.abs().max(1.0);
        let min_budget = points
            .iter()
            .find(|p| p.retention.is_some_and(reaches))
            .map(|p| p.budget_ratio);
        let min_budget_confident = points
            .iter()
            .find(|p| p.retention_confident == Some(true))
            .map(|p| p.budget_ratio);
        Curve {
            selector,
            points,
            min_budget,
            min_budget_confident,
        }
    }
}
