//! Every analysis the inputs support, in one pass: what `ablate report` writes as analysis.json.
//!
//! The core analyses (check, sweep, variance, interactions) always run. The others run when their
//! inputs exist (a mix, stress cases, units, budget arms, passages, shadow traffic, a context
//! log); when one cannot run on these inputs (say, a context log without model limits) the reason
//! is listed in `skipped` instead of failing the whole report.

pub use ablate_analysis::all::Analyses;

use crate::io::prelude::*;

use crate::analysis::Config;
use crate::analysis::check::{self};
use crate::analysis::context::{self, ContextOptions, ContextOutput};
use crate::analysis::curve::Pricing;
use crate::analysis::curve::{self, CurveOptions, CurveOutput};
use crate::analysis::decision::{self};
use crate::analysis::drill::{self, Drill};
use crate::analysis::interactions::{self, InteractionsOutput};
use crate::analysis::need::{self, NeedOptions, NeedOutput};
use crate::analysis::paired::{CaseSet, Paired};
use crate::analysis::plan::{self, ConfirmOutput, PlanOptions, PlanOutput};
use crate::analysis::record::{self, DecisionRecord, Upstream};
use crate::analysis::reweight::{self, ReweightOptions, ReweightOutput};
use crate::analysis::selector::{self, SelectorOutput};
use crate::analysis::sequential::{self, ReplayOutput, SequentialOptions};
use crate::analysis::shadow::{self, ShadowOptions, ShadowOutput};
use crate::analysis::stress::{self, StressOutput};
use crate::analysis::sweep::{self, SweepOutput};
use crate::analysis::variance::{self, VarianceOutput};
use crate::error::Result;
use crate::io::logs::{ContextLog, ShadowLog};
use crate::io::manifest::Guarantee;
use crate::io::{Experiment, Units};
use crate::verb::Verb;

/// The value of an optional analysis, or `None` with the reason noted in `skipped` when the data
/// does not support it. An internal failure (exit code 1, a bug) is returned, never hidden.
fn optional<T>(skipped: &mut Vec<String>, verb: Verb, r: Result<T>) -> Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.exit_code() == 1 => Err(e),
        Err(e) => {
            skipped.push(format!("{verb}: {e}"));
            Ok(None)
        }
    }
}

/// One analysis's result, set once by the task that computes it in [`run`]'s scope.
type Slot<T> = std::sync::OnceLock<T>;

/// Takes what a task put in its slot: every task of the scope has ended by then.
fn taken<T>(slot: Slot<T>) -> T {
    slot.into_inner()
        .expect("every task of the scope fills its slot")
}

/// Puts a task's result in its slot (each slot has one task).
fn fill<T>(slot: &Slot<T>, value: T) {
    let _ = slot.set(value);
}

/// What production traffic looks like to `report`: the mixes to weight to (empty: the
/// experiment's own mix table; several: raking), the stratum columns, and whether production
/// strata with no eval case are renormalised away rather than refused (as `reweight` and `need`
/// take them).
#[derive(Debug, Clone, Default)]
pub struct Production {
    /// `--mix` files (and a `--mix-from` log's counts), loaded.
    pub mixes: Vec<crate::io::Mix>,
    /// `--by` columns.
    pub by: Vec<String>,
    /// `--allow-unmeasured`.
    pub allow_unmeasured: bool,
}

/// Runs every analysis the experiment supports. `step` is called with the verb of each analysis
/// as its work starts, from the thread that runs it (for a progress bar).
///
/// The analyses are independent given the sweep, and each gives the same bits at any thread
/// count, so they run side by side as tasks of one `rayon::scope` (`side_by_side`). Then the
/// logs are streamed alone among the heavy analyses, so that their memory budget holds, while
/// the decision record and the decision, which read only the outputs above, are put together
/// beside them (`logs_beside_decision`).
///
/// # Errors
/// Errors of the core analyses (the optional ones are listed in `skipped`), and internal failures
/// of any.
pub fn run(
    exp: &Experiment,
    cfg: &Config,
    pricing: Option<Pricing>,
    production: &Production,
    step: impl Fn(Verb) + Sync,
) -> Result<Analyses> {
    let mut skipped = Vec::new();
    step(Verb::Check);
    // The pairs every analysis below reads, built before they start, beside the check.
    let (check, ()) = rayon::join(
        || check::run(exp),
        || Paired::new(exp, CaseSet::Main).build_all(&exp.results.matrix),
    );
    let slots = side_by_side(exp, cfg, pricing, production, &step);
    let sweep = taken(slots.sweep);
    let (variance, curve, drill) = (
        taken(slots.variance),
        taken(slots.curve),
        taken(slots.drill),
    );
    let stress = taken(slots.stress);
    // Errors are taken in the order the analyses were listed before they ran side by side.
    let interactions = taken(slots.interactions)?;
    let reweight = optional_of(&mut skipped, Verb::Reweight, taken(slots.reweight))?;
    let need = optional_of(&mut skipped, Verb::Need, taken(slots.need))?;
    let selector = optional_of(&mut skipped, Verb::Selector, taken(slots.selector))?;
    let judged = Judged {
        sweep: &sweep,
        stress: stress.as_ref(),
        reweight: reweight.as_ref(),
        interactions: &interactions,
        need: need.as_ref(),
    };
    let logs = logs_beside_decision(exp, cfg, pricing, &judged, &step);
    skipped.extend(logs.skipped);
    Ok(Analyses {
        check,
        decision: logs.decision,
        sweep,
        variance,
        reweight,
        stress,
        interactions,
        need,
        curve,
        selector,
        shadow: logs.shadow?,
        context: logs.context?,
        record: logs.record,
        drill: drill?,
        skipped,
    })
}

/// One named slot per analysis of [`side_by_side`]'s scope.
#[derive(Default)]
struct Slots {
    sweep: Slot<SweepOutput>,
    reweight: Slot<Option<Result<ReweightOutput>>>,
    stress: Slot<Option<StressOutput>>,
    need: Slot<Option<Result<NeedOutput>>>,
    selector: Slot<Option<Result<SelectorOutput>>>,
    variance: Slot<VarianceOutput>,
    interactions: Slot<Result<InteractionsOutput>>,
    curve: Slot<Option<CurveOutput>>,
    drill: Slot<Result<Drill>>,
}

/// The analyses that read the per-case matrix, as tasks of one `rayon::scope`, each filling its
/// slot: those that rest on the sweep's verdicts (reweight's family, stress, need, selector)
/// start when it is done, the others (variance, interactions, the budget curve, the drill-down)
/// beside it from the start.
fn side_by_side(
    exp: &Experiment,
    cfg: &Config,
    pricing: Option<Pricing>,
    production: &Production,
    step: &(impl Fn(Verb) + Sync),
) -> Slots {
    let slots = Slots::default();
    let slots_ref = &slots;
    rayon::scope(|s| {
        s.spawn(move |s| {
            step(Verb::Sweep);
            let sweep = sweep::run(exp, cfg);
            let family = sweep.family.size;
            fill(&slots_ref.sweep, sweep);
            let sweep = slots_ref.sweep.get().expect("the sweep ran");
            s.spawn(move |_| {
                step(Verb::Reweight);
                fill(
                    &slots_ref.reweight,
                    reweight_of(exp, cfg, family, production),
                );
            });
            s.spawn(move |_| {
                step(Verb::Stress);
                let stress = (exp.cases.stress_count() > 0).then(|| stress::run(exp, sweep, cfg));
                fill(&slots_ref.stress, stress);
            });
            s.spawn(move |_| {
                step(Verb::Need);
                let need = exp.units.as_ref().map(|_| {
                    let allow_unmeasured = production.allow_unmeasured;
                    need::run(exp, sweep, &NeedOptions { allow_unmeasured })
                });
                fill(&slots_ref.need, need);
            });
            s.spawn(move |_| {
                step(Verb::Selector);
                let selector = exp.passages.as_ref().map(|_| selector::run(exp, sweep));
                fill(&slots_ref.selector, selector);
            });
        });
        s.spawn(move |_| {
            step(Verb::Variance);
            fill(&slots_ref.variance, variance::run(exp, cfg));
        });
        s.spawn(move |_| {
            step(Verb::Interactions);
            fill(&slots_ref.interactions, interactions::run(exp, cfg));
        });
        s.spawn(move |_| {
            step(Verb::Curve);
            let options = CurveOptions {
                config: cfg.clone(),
                pricing,
            };
            let curve = has_budget_arms(exp).then(|| curve::run(exp, &options));
            fill(&slots_ref.curve, curve);
        });
        s.spawn(move |_| fill(&slots_ref.drill, drill_of(exp)));
    });
    slots
}

/// The judged analyses that the decision record and the decision read.
struct Judged<'a> {
    sweep: &'a SweepOutput,
    stress: Option<&'a StressOutput>,
    reweight: Option<&'a ReweightOutput>,
    interactions: &'a InteractionsOutput,
    need: Option<&'a NeedOutput>,
}

/// What [`logs_beside_decision`] gives.
struct Logs {
    shadow: Result<Option<ShadowOutput>>,
    context: Result<Option<ContextOutput>>,
    skipped: Vec<String>,
    record: Option<DecisionRecord>,
    decision: decision::Decision,
}

/// The logs, streamed alone among the heavy analyses (their memory budget holds), beside the
/// decision record and the decision. Nothing is computed twice: without stress cases the stress
/// part is empty, as `record` gives it.
fn logs_beside_decision(
    exp: &Experiment,
    cfg: &Config,
    pricing: Option<Pricing>,
    judged: &Judged,
    step: &(impl Fn(Verb) + Sync),
) -> Logs {
    let (((shadow, context), skipped), (record, decision)) = rayon::join(
        || {
            let mut skipped = Vec::new();
            step(Verb::Shadow);
            let shadow = shadow_of(exp, cfg, &mut skipped);
            step(Verb::Context);
            let context = context_of(exp, cfg, &mut skipped);
            ((shadow, context), skipped)
        },
        || {
            step(Verb::Record);
            let record = judged.need.map(|need| {
                let st = judged
                    .stress
                    .cloned()
                    .unwrap_or_else(|| stress::run(exp, judged.sweep, cfg));
                record::run(
                    exp,
                    &Upstream {
                        need,
                        sweep: judged.sweep,
                        interactions: judged.interactions,
                        reweight: judged.reweight,
                        stress: &st,
                    },
                    cfg,
                )
            });
            let decision = decision::run(
                exp,
                judged.sweep,
                judged.stress,
                judged.reweight,
                judged.interactions,
                pricing,
            );
            (record, decision)
        },
    );
    if exp.shadow.is_some() || exp.context_log.is_some() {
        // The logs' passes set the allocator for their budget; what follows (the charts' pixel
        // buffers) is faster with it set back.
        crate::io::logs::allocator_for_speed();
    }
    Logs {
        shadow,
        context,
        skipped,
        record,
        decision,
    }
}

/// [`optional`] of an analysis that ran only when its inputs exist (`None` when they do not).
fn optional_of<T>(
    skipped: &mut Vec<String>,
    verb: Verb,
    r: Option<Result<T>>,
) -> Result<Option<T>> {
    Ok(r.map(|r| optional(skipped, verb, r)).transpose()?.flatten())
}

/// The cases each arm loses and gains, with their samples' text when the experiment has a
/// `samples` table (only the listed cases' rows are read).
fn drill_of(exp: &Experiment) -> Result<Drill> {
    let d = drill::drill(exp);
    match &exp.samples {
        Some(samples) => {
            let texts = samples.read(&d.wanted())?;
            Ok(d.with_samples(&texts))
        }
        None => Ok(d),
    }
}

/// The reweighted drops, when the experiment has a production mix or `production` gives some
/// (`None` without); judged across the sweep's family of `family` arms.
fn reweight_of(
    exp: &Experiment,
    cfg: &Config,
    family: usize,
    production: &Production,
) -> Option<Result<ReweightOutput>> {
    if production.mixes.is_empty() {
        exp.mix.as_ref()?;
    }
    let opts = ReweightOptions {
        mixes: production.mixes.clone(),
        by: production.by.clone(),
        allow_unmeasured: production.allow_unmeasured,
        confidence: cfg.confidence,
        family,
        per_arm: cfg.per_arm,
        guarantee: cfg.guarantee,
    };
    Some(reweight::run(exp, &opts))
}

/// Whether an arm other than the baseline has a budget ratio (the budget curve's input).
/// Whether `verb` on `exp` draws bootstrap resamples, so that `--bootstrap`'s floor
/// B ≥ 10/(1 − confidence) ([`crate::analysis::min_bootstrap`]) applies: a drop's interval uses
/// them only from [`BOOTSTRAP_MIN_UNITS`](crate::analysis::paired::BOOTSTRAP_MIN_UNITS) cases or
/// clusters of the main set under the any-distribution guarantee (`guarantee`, else the
/// experiment's), and `curve`'s retention (also in `report`) whenever there are budget arms.
/// Otherwise no resample is drawn and `--bootstrap` is not used.
pub fn draws_resamples(exp: &Experiment, verb: Verb, guarantee: Option<Guarantee>) -> bool {
    let paired = crate::analysis::paired::Paired::new(exp, crate::analysis::paired::CaseSet::Main);
    let any_distribution =
        guarantee.unwrap_or(exp.manifest.guarantee) == Guarantee::AnyDistribution;
    (verb.reads_matrix() && paired.bootstraps_means() && any_distribution)
        || (matches!(verb, Verb::Curve | Verb::Report) && has_budget_arms(exp))
}

fn has_budget_arms(exp: &Experiment) -> bool {
    exp.arms.as_ref().is_some_and(|a| {
        a.specs
            .iter()
            .any(|s| s.budget_ratio.is_some() && s.arm != exp.manifest.baseline_arm)
    })
}

/// The shadow analysis of the experiment's shadow log, by the strata the log has.
fn shadow_of(
    exp: &Experiment,
    cfg: &Config,
    skipped: &mut Vec<String>,
) -> Result<Option<ShadowOutput>> {
    let Some(log) = &exp.shadow else {
        return Ok(None);
    };
    let by: Vec<String> = exp
        .strata()
        .into_iter()
        .filter(|c| log.columns.contains(c))
        .collect();
    let opts = ShadowOptions {
        confidence: cfg.confidence,
        memory: cfg.memory,
        progress: cfg.progress,
        ..ShadowOptions::default()
    };
    optional(
        skipped,
        Verb::Shadow,
        ShadowLog::reopen(log, &by, None).and_then(|log| shadow::run(&log, &opts)),
    )
}

/// The context analysis of the experiment's context log.
fn context_of(
    exp: &Experiment,
    cfg: &Config,
    skipped: &mut Vec<String>,
) -> Result<Option<ContextOutput>> {
    let Some(log) = &exp.context_log else {
        return Ok(None);
    };
    let opts = ContextOptions {
        memory: cfg.memory,
        progress: cfg.progress,
        ..ContextOptions::default()
    };
    optional(
        skipped,
        Verb::Context,
        ContextLog::reopen(log).and_then(|log| context::run(&log, &opts)),
    )
}

/// Sweep verdicts without a bootstrap: what `need` and `selector` rest on. Drops are point
/// estimates and confidence is family-wise (score and t intervals, which no resample changes),
/// so they are the sweep's at any bootstrap count; with `--per-arm` the arms' own intervals are
/// then normal rather than bootstrap percentile ones.
fn verdicts(exp: &Experiment, cfg: &Config) -> SweepOutput {
    sweep::run(
        exp,
        &Config {
            bootstrap: 0,
            ..cfg.clone()
        },
    )
}

/// `ablate plan`: the design, and with a pilot to project from, the calls a sequential run of
/// it is expected to make (at α = 1 − confidence).
///
/// # Errors
/// As [`plan::run`].
pub fn plan(
    units: &Units,
    opts: &PlanOptions,
    sequential_pilot: Option<&Experiment>,
) -> Result<PlanOutput> {
    let mut r = plan::run(units, opts)?;
    if let Some(pilot) = sequential_pilot {
        match plan::sequential::plan_sequential(&r, pilot, 1.0 - opts.confidence) {
            Ok(mut projection) => {
                if opts.per_arm {
                    // watch refuses --per-arm: the projection is of the run it will make.
                    r.warnings.push(crate::warning::Warning::new(
                        "plan.sequential_family_wise",
                        "the sequential projection is family-wise (each arm at α/K) whatever --per-arm: watch always decides every arm as one family",
                    ));
                }
                r.warnings.append(&mut projection.warnings);
                r.sequential = Some(projection);
            }
            Err(why) => r.warnings.push(why),
        }
    }
    Ok(r)
}

/// `ablate plan --confirm`: every analysis, then the arm that confirms the decision's joint cut.
///
/// # Errors
/// As [`run`] and [`plan::confirm`].
pub fn confirm(exp: &Experiment, cfg: &Config) -> Result<ConfirmOutput> {
    let analyses = run(exp, cfg, None, &Production::default(), |_| {})?;
    plan::confirm(exp, &analyses.decision)
}

/// `ablate watch --replay`: the fixed-sample sweep it is compared with, then the replay.
///
/// # Errors
/// As [`sequential::replay`].
pub fn replay(exp: &Experiment, cfg: &Config, opts: &SequentialOptions) -> Result<ReplayOutput> {
    sequential::replay(exp, &sweep::run(exp, cfg), opts)
}

/// `ablate need` alone: the sweep verdicts it rests on, then the needed fraction.
///
/// # Errors
/// As [`need::run`].
pub fn need_only(exp: &Experiment, cfg: &Config, allow_unmeasured: bool) -> Result<NeedOutput> {
    need::run(exp, &verdicts(exp, cfg), &NeedOptions { allow_unmeasured })
}

/// `ablate selector` alone: the sweep drops it rests on, then the replay.
///
/// # Errors
/// As [`selector::run`].
pub fn selector_only(exp: &Experiment, cfg: &Config) -> Result<SelectorOutput> {
    selector::run(exp, &verdicts(exp, cfg))
}

/// `ablate record` alone: every analysis the record rests on, each run once.
///
/// # Errors
/// As `need` (a units table is required), `interactions` and `reweight` (a mix that does not fit
/// the cases, unless `allow_unmeasured`).
pub fn record_only(
    exp: &Experiment,
    cfg: &Config,
    allow_unmeasured: bool,
) -> Result<DecisionRecord> {
    let sweep = sweep::run(exp, cfg);
    let need = need::run(exp, &sweep, &NeedOptions { allow_unmeasured })?;
    let interactions = interactions::run(exp, cfg)?;
    let reweight = match &exp.mix {
        Some(_) => Some(reweight::run(
            exp,
            &ReweightOptions {
                allow_unmeasured,
                confidence: cfg.confidence,
                family: sweep.family.size,
                per_arm: cfg.per_arm,
                guarantee: cfg.guarantee,
                ..ReweightOptions::default()
            },
        )?),
        None => None,
    };
    Ok(record::run(
        exp,
        &Upstream {
            need: &need,
            sweep: &sweep,
            interactions: &interactions,
            reweight: reweight.as_ref(),
            stress: &stress::run(exp, &sweep, cfg),
        },
        cfg,
    ))
}
