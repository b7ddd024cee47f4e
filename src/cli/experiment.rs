//! Verbs on an experiment folder: check, sweep, variance, stress, interactions, need, curve,
//! selector and record.

use ablate::io::prelude::*;
use ablate::verb::Verb;
use std::path::PathBuf;

use clap::Args;

use ablate::analysis;
use ablate::error::{Error, Result};
use ablate::io::Experiment;
use ablate::report;

use super::{Apply as _, Global, config, emit, emit_warned, load};

/// Validate an experiment folder and print what it holds.
///
/// Reads experiment.toml and every table, checks columns, types and values (NaN or infinite
/// scores, duplicate rows, case ids the cases table lacks, arms missing from arms, units missing
/// from units, negative tokens, mix shares that do not sum to 1, empty, truncated or non-Parquet
/// files) and prints cases (main and stress), arms, repeats, blocks and units, strata and the
/// tables present, with warnings for unbalanced repeats and cases missing from arms. Exits 2 on
/// the first error. Shadow and context logs are checked for columns only, so this stays fast on
/// large logs. The other verbs read only the tables they use (`sweep` skips case_units, mix,
/// passages and the logs), so run `check` once on a new folder.
#[derive(Debug, Args)]
pub(super) struct CheckArgs {
    /// Experiment folder.
    dir: PathBuf,
    #[command(flatten)]
    aggregates: super::Aggregates,
    #[command(flatten)]
    export: super::Export,
}

/// Runs `ablate check`.
pub(super) fn check(args: CheckArgs, g: &Global) -> Result<String> {
    let CheckArgs { dir, .. } = args;
    let exp = Experiment::load_from(&dir, g.from_aggregates.as_deref())?;
    let m = &exp.results.matrix;
    let base = exp.baseline_index();
    if !(0..m.n_arms)
        .filter(|&a| a != base)
        .any(|a| (0..m.n_cases).any(|c| m.present(c, a)))
    {
        return Err(ablate::error::Error::BadValue {
            path: exp.results.path.clone(),
            column: "arm".into(),
            row: ablate::error::Row::none(),
            value: format!("\"{}\"", exp.manifest.baseline_arm),
            problem: "the results hold the baseline only: there is nothing to compare it with".into(),
            fix: "add the arms' results (import their logs together with the baseline's, or name arms with `ablate import … --arm NAME=GLOB`), or plan and run arms with `ablate plan` and `ablate next`".into(),
        });
    }
    let r = analysis::check::run(&exp);
    emit(g, Verb::Check.name(), &r, Some(&exp), report::check::human)
}

/// Every arm against the baseline: drops with confidence intervals, verdicts, churn, lost cases.
///
/// For each arm, on the main set (stress cases excluded) and over the cases it shares with the
/// baseline: score, paired drop (baseline − arm) with its standard error (clustered when cases
/// have a `cluster` column), a percentile-bootstrap CI (cases or clusters resampled, one joint
/// resample for every arm; --bootstrap 0 gives drop ± z·se), the correlation rho of baseline and
/// arm case means, a one-sided p for drop > 0 Holm-adjusted across arms, an exact McNemar p for
/// 0/1 scores with one repeat, the verdict against threshold_drop (needed if drop ≥ threshold)
/// and whether the CI is wholly on the verdict's side (confident) or not (inconclusive); tokens
/// removed, lost and gained cases, lost cases by slice, churn and missing cases. The churn
/// floor (baseline cases whose pass/fail changes between repeats) is printed under the table.
/// Cost: one pass over the case × arm matrix per resample; 10,000 resamples of 500 cases × 40
/// arms take well under a second.
#[derive(Debug, Args)]
pub(super) struct SweepArgs {
    /// Experiment folder.
    dir: PathBuf,
    #[command(flatten)]
    opts: super::MatrixOptions,
}

/// Runs `ablate sweep`.
pub(super) fn sweep(args: SweepArgs, g: &Global) -> Result<String> {
    let SweepArgs { dir, .. } = args;
    let exp = load(&dir, g, Verb::Sweep)?;
    let r = analysis::sweep::run(&exp, &config(g));
    emit_warned(g, Verb::Sweep, &r, &exp, report::sweep::human)
}

/// Repeat variance, churn, the minimum detectable drop and the cases needed.
///
/// For every arm (the baseline included): within-case variance across repeats, variance of
/// case means, between-case variance (case-means variance − within/K), the share of the spread
/// that is repeat noise, churn, the minimum detectable drop at 80% power
/// ((z(1−α/2) + z(0.8))·se of the drop) and the cases needed to detect threshold_drop. Says
/// plainly when the threshold is below what the set can detect, and whether more repeats or
/// more cases would help (Miller 2024: Var(mean) = (Var(x) + E[σ²]/K)/n).
#[derive(Debug, Args)]
pub(super) struct VarianceArgs {
    /// Experiment folder.
    dir: PathBuf,
    #[command(flatten)]
    opts: super::MatrixOptions,
}

/// Runs `ablate variance`.
pub(super) fn variance(args: VarianceArgs, g: &Global) -> Result<String> {
    let VarianceArgs { dir, .. } = args;
    let exp = load(&dir, g, Verb::Variance)?;
    let r = analysis::variance::run(&exp, &config(g));
    emit_warned(g, Verb::Variance, &r, &exp, report::variance::human)
}

/// The main set next to the stress slice: a cut must clear both thresholds.
///
/// For every arm, the paired drop and its se on the main set (verdict against threshold_drop)
/// and on the stress slice, the cases marked stress = true (verdict against
/// stress_threshold_drop), the stress cases lost, and whether the cut is removable on both.
#[derive(Debug, Args)]
pub(super) struct StressArgs {
    /// Experiment folder.
    dir: PathBuf,
    #[command(flatten)]
    opts: super::MatrixOptions,
}

/// Runs `ablate stress`.
pub(super) fn stress(args: StressArgs, g: &Global) -> Result<String> {
    let StressArgs { dir, .. } = args;
    let exp = load(&dir, g, Verb::Stress)?;
    let sweep = analysis::sweep::run(&exp, &config(g));
    let r = analysis::stress::run(&exp, &sweep, &config(g));
    emit_warned(g, Verb::Stress, &r, &exp, report::stress::human)
}

/// Composed cuts against the sum of their parts; pairwise interactions; Shapley values.
///
/// Leave-one-out drops are each measured with everything else present, and they need not add:
/// two units carrying the same fact each look free to remove. For every composed arm (explicit
/// `components` in the arms table, or else the exact cover of its removed units by the fewest
/// other measured arms) it reports the predicted drop (sum of the parts) and score, the measured
/// ones, the interaction (measured − predicted) with se and joint-bootstrap CI, super-additive /
/// sub-additive / additive, the lost cases by slice, the cases lost only when the parts are cut
/// together, and where the loss concentrates. Also: the pairwise matrix (every two-unit arm whose
/// singles were measured); exact Shapley values and interaction indices when the arms cover all
/// 2^k subsets of k ≤ 12 units; and, for arms labelled with a `design` (ablate plan), main
/// effects and two-factor interactions by least squares with case-level se.
#[derive(Debug, Args)]
pub(super) struct InteractionsArgs {
    /// Experiment folder.
    dir: PathBuf,
    #[command(flatten)]
    opts: super::MatrixOptions,
}

/// Runs `ablate interactions`.
pub(super) fn interactions(args: InteractionsArgs, g: &Global) -> Result<String> {
    let InteractionsArgs { dir, .. } = args;
    let exp = load(&dir, g, Verb::Interactions)?;
    let r = analysis::interactions::run(&exp, &config(g))?;
    emit_warned(g, Verb::Interactions, &r, &exp, report::interactions::human)
}

/// Per-case needed tokens (oracle) and the needed context fraction.
///
/// Adds up, per main-set case, the tokens each block's rule in experiment.toml keeps: always
/// (every unit), needed_units (units no measured arm within the block showed removable),
/// through_gold_rank (passages down to the case's gold passage; all when it was not retrieved)
/// and when:<column>=<value>. Unit tokens come from case_units, else units. Reports needed and
/// sent tokens per block, the fraction needed / sent, the same weighted to the production mix,
/// and whether it is an oracle figure (gold labels are not available at serve time, so it is an
/// upper bound on what any deployable selector can save).
#[derive(Debug, Args)]
pub(super) struct NeedArgs {
    /// Experiment folder.
    dir: PathBuf,
    /// Leave production strata with no eval case out of value_production instead of failing.
    #[arg(long)]
    allow_unmeasured: bool,
    #[command(flatten)]
    opts: super::MatrixOptions,
}

/// Runs `ablate need`.
pub(super) fn need(args: NeedArgs, g: &Global) -> Result<String> {
    let NeedArgs {
        dir,
        allow_unmeasured,
        ..
    } = args;
    let exp = load(&dir, g, Verb::Need)?;
    let r = analysis::all::need_only(&exp, &config(g), allow_unmeasured)?;
    emit_warned(g, Verb::Need, &r, &exp, report::need::human)
}

/// Quality-vs-budget curves per selector; the smallest budget keeping quality; cost.
///
/// Points are the arms with a budget_ratio (the baseline is 1.0), one curve per selector.
/// Retention = arm score / baseline score over paired cases (a ratio of means, so cases the
/// full context fails do not divide by zero), with a joint-bootstrap CI. Reports the smallest
/// budget reaching quality_threshold and the smallest that confidently does (the family
/// interval of arm score − quality_threshold × baseline score, as sweep judges drops). With
/// --price-per-mtok and --requests-per-day: daily cost at full context and at that budget, and
/// the savings per day, month and in percent.
#[derive(Debug, Args)]
pub(super) struct CurveArgs {
    /// Experiment folder.
    dir: PathBuf,
    #[command(flatten)]
    pricing: PricingArgs,
    #[command(flatten)]
    opts: super::MatrixOptions,
}

/// Prices for the cost figures (`curve`, and the decision in `report`).
#[derive(Debug, Args)]
pub(super) struct PricingArgs {
    /// Dollars per million input tokens.
    #[arg(long, requires = "requests_per_day")]
    price_per_mtok: Option<f64>,
    /// Requests per day.
    #[arg(long, requires = "price_per_mtok")]
    requests_per_day: Option<f64>,
}

impl PricingArgs {
    /// The pricing, when both flags are given.
    ///
    /// # Errors
    /// A negative or non-finite price or request count, or one above
    /// [`super::MAX_PRICE_PER_MTOK`] or [`super::MAX_REQUESTS_PER_DAY`] (1e308 of each made the
    /// daily cost infinite and the saving NaN).
    pub(super) fn pricing(&self) -> Result<Option<analysis::curve::Pricing>> {
        use super::{MAX_PRICE_PER_MTOK, MAX_REQUESTS_PER_DAY};
        match (self.price_per_mtok, self.requests_per_day) {
            (Some(p), Some(r))
                if (0.0..=MAX_PRICE_PER_MTOK).contains(&p)
                    && (0.0..=MAX_REQUESTS_PER_DAY).contains(&r) =>
            {
                Ok(Some(analysis::curve::Pricing {
                    price_per_mtok: p,
                    requests_per_day: r,
                }))
            }
            (Some(p), Some(r)) => Err(Error::Usage(format!(
                "--price-per-mtok {} --requests-per-day {}: give finite numbers, 0 or more, a price up to {MAX_PRICE_PER_MTOK:e} dollars per million tokens and up to {MAX_REQUESTS_PER_DAY:e} requests a day (so that the daily cost is a finite number)",
                ablate::io::table::float_text(p),
                ablate::io::table::float_text(r),
            ))),
            _ => Ok(None),
        }
    }
}

/// Runs `ablate curve`.
pub(super) fn curve(args: CurveArgs, g: &Global) -> Result<String> {
    let CurveArgs { dir, pricing, .. } = args;
    let pricing = pricing.pricing()?;
    let exp = load(&dir, g, Verb::Curve)?;
    let r = analysis::curve::run(
        &exp,
        &analysis::curve::CurveOptions {
            config: config(g),
            pricing,
        },
    );
    emit_warned(g, Verb::Curve, &r, &exp, report::curve::human)
}

/// Replay a reranker-threshold selector: saving vs the oracle saving, gold misses, measured cost.
///
/// For thresholds 0.00, 0.05, …, 1.00 (and every selector_threshold an arm was run with), each
/// main-set case keeps the passages scoring at or above the threshold. Reports kept and saved
/// passage tokens, recovery (saving / oracle saving, where the oracle keeps passages down to the
/// gold one), the share of cases whose gold passage is dropped, and the drop measured by the arm
/// run at that threshold.
#[derive(Debug, Args)]
pub(super) struct SelectorArgs {
    /// Experiment folder.
    dir: PathBuf,
    #[command(flatten)]
    opts: super::MatrixOptions,
}

/// Runs `ablate selector`.
pub(super) fn selector(args: SelectorArgs, g: &Global) -> Result<String> {
    let SelectorArgs { dir, .. } = args;
    let exp = load(&dir, g, Verb::Selector)?;
    let r = analysis::all::selector_only(&exp, &config(g))?;
    emit_warned(g, Verb::Selector, &r, &exp, report::selector::human)
}

/// The decision record (JSON): the needed context fraction with what produced it.
///
/// claim, value, needed and sent tokens, the set and the SHA-256 of its sorted case ids (first
/// 16 hex digits: `LC_ALL=C sort ids.txt | sha256sum` reproduces it), cases, threshold, baseline score,
/// repeats, churn floor, model, measured_at, whether the figure is an oracle (and why), whether
/// a composed cut was measured and checked, the known coverage gap, the value weighted to
/// production, the stress slice's verdicts, and ablate's version, seed and bootstrap. Always JSON.
#[derive(Debug, Args)]
pub(super) struct RecordArgs {
    /// Experiment folder.
    dir: PathBuf,
    /// Leave production strata with no eval case out (reported as unmeasured_share) instead of failing.
    #[arg(long)]
    allow_unmeasured: bool,
    #[command(flatten)]
    opts: super::MatrixOptions,
}

/// Runs `ablate record`.
pub(super) fn record(args: RecordArgs, g: &Global) -> Result<String> {
    let RecordArgs {
        dir,
        allow_unmeasured,
        ..
    } = args;
    let exp = load(&dir, g, Verb::Record)?;
    let r = analysis::all::record_only(&exp, &config(g), allow_unmeasured)?;
    if g.export.is_some() {
        super::export(g, Verb::Record.name(), &super::to_value(&r)?, Some(&exp))?;
    }
    report::json(&r)
}

impl super::VerbArgs for CheckArgs {
    fn paths(&self) -> super::IoPaths {
        super::IoPaths::experiment(&self.dir)
    }

    fn apply(&self, g: &mut super::Global) {
        self.aggregates.apply(g);
        self.export.apply(g);
    }
}

/// The arguments of the verbs that read one experiment folder (`dir`) with the matrix options
/// (`opts`): they read that folder and apply those options.
macro_rules! matrix_verb_args {
    ($($args:ty),* $(,)?) => {$(
        impl super::VerbArgs for $args {
            fn paths(&self) -> super::IoPaths {
                super::IoPaths::experiment(&self.dir)
            }

            fn apply(&self, g: &mut super::Global) {
                self.opts.apply(g);
            }
        }
    )*};
}

matrix_verb_args!(
    SweepArgs,
    VarianceArgs,
    StressArgs,
    InteractionsArgs,
    NeedArgs,
    CurveArgs,
    SelectorArgs,
    RecordArgs,
);
