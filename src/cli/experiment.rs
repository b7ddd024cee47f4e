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
/// Reads experiment.toml and every table, checks their columns, types and values, and prints the
/// cases, arms, repeats, blocks and units, strata and the tables found, with a warning for anything
/// unbalanced. Exits 2 on the first error, naming the file, the column and the row. The other verbs
/// read only the tables they use, so run `check` once on a new folder. The tables and their
/// columns: docs/experiment.md.
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
    super::refuse_baseline_only(&exp)?;
    refuse_what_reweighting_refuses(&exp)?;
    let r = analysis::check::run(&exp);
    emit(g, Verb::Check.name(), &r, Some(&exp), report::check::human)
}

/// What `reweight`, `need`, `record` and `report` would refuse in the experiment's own mix (a
/// null stratum value in the cases, a mix column the strata leave out), `check` refuses too:
/// it had said "ok" of folders they then refused. A mix lacking a stratum column stays a
/// warning (`check.mix_lacks_strata`), and strata without eval cases are left to their warning.
fn refuse_what_reweighting_refuses(exp: &Experiment) -> Result<()> {
    use analysis::paired::{CaseSet, Paired};
    let Some(mix) = &exp.mix else {
        return Ok(());
    };
    if exp.strata().iter().all(|c| mix.columns.contains(c)) {
        let paired = Paired::new(exp, CaseSet::Main);
        analysis::reweight::production_strata(exp, &paired, true)?;
    }
    Ok(())
}

/// Every arm against the baseline: drops with confidence intervals, verdicts, churn, lost cases.
///
/// For each arm, on the main set: its score, the paired drop (baseline − arm) with its interval and
/// family-wise interval, the verdict against threshold_drop (needed or removable-on-this-set) and
/// whether the family interval settles it (confident or inconclusive), the cases it loses and
/// gains, and churn. Under the table: the churn floor, the family rule and the smallest threshold
/// these cases can certify. Intervals, guarantees and p-values: docs/statistics.md (drop, CI,
/// family).
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
/// For every arm: how much of the spread is repeat noise and how much is between cases, churn, the
/// smallest drop the set can detect at 80% power, and the cases that would settle the arm (the
/// same figure as the decision's cases_to_settle). Says plainly when the threshold is below what
/// the set can detect, and whether more repeats or more cases would help. Formulas:
/// docs/statistics.md (variance).
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
/// For every arm, the drop and its verdict on the main set (against threshold_drop) and on the
/// stress slice, the cases marked stress = true (against stress_threshold_drop), the stress cases
/// lost, and whether the cut is removable on both. Formulas: docs/statistics.md (stress).
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
/// Leave-one-out drops are each measured with everything else present, and they need not add: two
/// units carrying the same fact each look free to remove. For every composed arm: the drop its
/// parts predict, the drop measured, the difference with its verdict, and the cases lost only when
/// the parts are cut together. Also the pairwise matrix, exact Shapley values when the arms cover
/// every subset, and main effects for arms of a planned design. Formulas: docs/statistics.md
/// (interactions).
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
/// Adds up, per case, the tokens each block's need rule in experiment.toml keeps, and prints the
/// needed and sent tokens per block, the fraction needed, the same weighted to production, and
/// whether it is an oracle figure (from gold labels, so an upper bound on what a deployable
/// selector can save). Rules and formulas: docs/statistics.md (need).
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
/// One curve per selector over the arms with a budget_ratio: the retention (arm score / baseline
/// score) at each budget with its interval, the smallest budget that reaches quality_threshold and
/// the smallest the interval confirms. With --price-per-mtok and --requests-per-day: the daily cost
/// at full context and at the confirmed budget, and the saving. Formulas: docs/statistics.md
/// (curve).
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
    /// A price or request count that is 0, negative or non-finite, or one above
    /// [`super::MAX_PRICE_PER_MTOK`] or [`super::MAX_REQUESTS_PER_DAY`] (1e308 of each made the
    /// daily cost infinite and the saving NaN).
    pub(super) fn pricing(&self) -> Result<Option<analysis::curve::Pricing>> {
        use super::{MAX_PRICE_PER_MTOK, MAX_REQUESTS_PER_DAY};
        match (self.price_per_mtok, self.requests_per_day) {
            (Some(p), Some(r))
                if p > 0.0 && p <= MAX_PRICE_PER_MTOK && r > 0.0 && r <= MAX_REQUESTS_PER_DAY =>
            {
                Ok(Some(analysis::curve::Pricing {
                    price_per_mtok: p,
                    requests_per_day: r,
                }))
            }
            (Some(p), Some(r)) => Err(Error::Usage(format!(
                "--price-per-mtok {} --requests-per-day {}: give finite numbers above 0 (at 0 there is no cost to save, and the saving's percentage is 0/0), a price up to {MAX_PRICE_PER_MTOK:e} dollars per million tokens and up to {MAX_REQUESTS_PER_DAY:e} requests a day (so that the daily cost is a finite number)",
                ablate::text::float_text(p),
                ablate::text::float_text(r),
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
/// For thresholds 0.00, 0.05, …, 1.00 (and every selector_threshold an arm ran with), each case
/// keeps the passages scoring at or above the threshold: the tokens saved, the share of the
/// oracle's saving recovered, the cases whose gold passage is dropped, and the drop measured by the
/// arm run at that threshold. Formulas: docs/statistics.md (selector).
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
/// The claim and its value, with the set and the hash of its case ids, the threshold, the baseline,
/// the repeats and churn floor, the model and date, whether the figure is an oracle, whether a
/// composed cut was checked, the known coverage gap, the value in production, the stress slice's
/// verdicts, and ablate's version, seed and bootstrap. Always JSON. The fields: docs/tables.md.
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
