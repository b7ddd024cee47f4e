//! Anytime-valid monitoring of a running ablation (`ablate watch`, `ablate next`, `watch
//! --replay`): stop paying for arms that are already decided.
//!
//! Each arm's paired drop is followed by a confidence sequence
//! ([`crate::stats::sequence::ConfidenceSequence`], PrPl-EB), valid at every sample size at once,
//! so the analyst may look after every batch. The unit is the case, or the cluster when cases have
//! a `cluster` column (the observation is then the cluster's mean drop). Units enter in one fixed
//! order, a permutation of the main set drawn from `--seed`, and an arm's sequence reads the
//! longest prefix of that order whose units are complete (every case with all R repeats in the
//! arm and the baseline); so the same table always gives the same sequence.
//!
//! States, against `threshold_drop`: **needed** when the lower bound is at or above it,
//! **removable** when the upper bound is below it, else **continue**. A decided arm stops: later
//! units are not read, and a re-run on more data gives the same decision. Decisions are also kept
//! in `.ablate-watch.json` in the folder ([`crate::io::watch_state`]), under the settings that made
//! them (seed, threshold, α, repeats, score range, arms): should the data under a decision change
//! (re-scored cases), the recorded decision stands, with a warning, until `--reopen`; decisions
//! made under other settings are never used.
//!
//! Multiplicity: each arm's sequence runs at α/K (Bonferroni over the K arms other than the
//! baseline), so the chance that any arm ever gets a wrong confident decision is at most
//! α = 1 − confidence. Holm's step-down would spend less, but its levels move as other arms
//! decide, and a decision made at one level must not be undone by another arm's data.

use std::collections::BTreeMap;

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::analysis::Config;
use crate::analysis::vocab::{Confidence, Verdict};
use crate::error::{Error, Result};
use crate::io::Experiment;
use crate::io::watch_state::{Decided, RecordedDecision, STATE_FILE, StateFile, WatchSettings};
use crate::stats::sequence::{ConfidenceSequence, projected_n};

/// An arm's state in a sequential run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// The lower bound is at or above the threshold.
    Needed,
    /// The upper bound is below the threshold.
    Removable,
    /// Not decided yet.
    Continue,
}

impl State {
    /// The label printed and written.
    pub fn label(self) -> &'static str {
        match self {
            State::Needed => "needed",
            State::Removable => "removable",
            State::Continue => "continue",
        }
    }
}

/// Settings of a sequential run.
#[derive(Debug, Clone)]
pub struct SequentialOptions {
    /// Family-wise error rate α (1 − confidence).
    pub alpha: f64,
    /// Seed of the unit order.
    pub seed: u64,
    /// Repeats per (case, arm); default: the most any cell of the table has.
    pub repeats: Option<u32>,
    /// Ignore the decisions recorded in the folder.
    pub reopen: bool,
}

impl SequentialOptions {
    /// From the global settings: α = 1 − confidence, the order from the seed.
    pub fn from_config(cfg: &Config, repeats: Option<u32>, reopen: bool) -> SequentialOptions {
        SequentialOptions {
            alpha: 1.0 - cfg.confidence,
            seed: cfg.seed,
            repeats,
            reopen,
        }
    }
}

/// One arm's sequence.
#[derive(Debug, Clone, Serialize)]
pub struct ArmSequence {
    /// Arm label.
    pub arm: String,
    /// needed, removable or continue.
    pub state: State,
    /// Units (cases, or clusters) in the sequence.
    pub units: usize,
    /// Cases in those units.
    pub cases: usize,
    /// Mean paired drop (baseline − arm) over those units; null before any.
    pub drop: Option<f64>,
    /// Lower bound of the confidence sequence.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
    /// Units read when the arm was decided (null while it continues).
    pub decided_at: Option<usize>,
    /// For arms that continue: the units the sequence is projected to need in all, from the
    /// current drop and variance (null when the drop sits on the threshold or no unit is in).
    pub projected_units: Option<u64>,
    /// projected_units − units.
    pub units_still_needed: Option<u64>,
    /// Whether the decision comes from `.ablate-watch.json` rather than this table.
    pub recorded: bool,
}

/// What `ablate watch` reports.
#[derive(Debug, Clone, Serialize)]
pub struct WatchOutput {
    /// The confidence sequence used.
    pub method: &'static str,
    /// case or cluster.
    pub unit: &'static str,
    /// The agreed threshold.
    pub threshold_drop: f64,
    /// Family-wise α.
    pub alpha: f64,
    /// Each arm's level: α / arms.
    pub alpha_per_arm: f64,
    /// Seed of the unit order.
    pub seed: u64,
    /// Repeats per (case, arm) a unit needs to enter.
    pub repeats: u32,
    /// Score bounds (experiment.toml score_min, score_max).
    pub score_min: f64,
    /// Upper score bound.
    pub score_max: f64,
    /// Units in the main set.
    pub units_available: usize,
    /// Result rows (calls) in the table, main set.
    pub calls_made: u64,
    /// Every arm but the baseline.
    pub arms: Vec<ArmSequence>,
    /// Warnings.
    pub warnings: Vec<String>,
}

/// The units of the main set, in the seeded order: each a list of case indices.
pub fn unit_order(exp: &Experiment, seed: u64) -> (Vec<Vec<usize>>, bool) {
    let main: Vec<usize> = (0..exp.cases.ids.len())
        .filter(|&c| !exp.cases.stress[c])
        .collect();
    // Sorted before the shuffle (clusters by cluster id, cases by case id), so that the order
    // depends only on the seed and the ids, not on the order of the cases table's rows.
    let (mut units, clustered): (Vec<Vec<usize>>, bool) = match &exp.cases.cluster {
        Some(cluster) => {
            let mut by: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
            for &c in &main {
                by.entry(cluster[c].as_str()).or_default().push(c);
            }
            (by.into_values().collect(), true)
        }
        None => {
            let mut cases = main;
            cases.sort_by(|&a, &b| exp.cases.ids[a].cmp(&exp.cases.ids[b]));
            (cases.into_iter().map(|c| vec![c]).collect(), false)
        }
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    units.shuffle(&mut rng);
    (units, clustered)
}

/// The arms to follow, baseline excluded: the arms table's (in its order) when there is one, so
/// that arms not started yet are there with no units, else the results'; each with its column
/// in the matrix when it has results.
fn arm_columns(exp: &Experiment) -> Vec<(String, Option<usize>)> {
    let base = exp.baseline_index();
    let labels: Vec<String> = match &exp.arms {
        Some(t) => {
            let mut l = t.labels();
            for a in &exp.results.arms {
                if !l.contains(a) {
                    l.push(a.clone());
                }
            }
            l
        }
        None => exp.results.arms.clone(),
    };
    labels
        .into_iter()
        .filter(|l| *l != exp.results.arms[base])
        .map(|l| {
            let idx = exp.results.arm_index(&l);
            (l, idx)
        })
        .collect()
}

/// The repeats a complete cell has: the option, else the most any cell of the table has (≥ 1).
fn design_repeats(exp: &Experiment, opt: Option<u32>) -> u32 {
    opt.unwrap_or_else(|| {
        exp.results
            .matrix
            .repeats
            .iter()
            .copied()
            .max()
            .unwrap_or(1)
            .max(1)
    })
}

/// Checks every cell mean against [score_min, score_max].
fn check_bounds(exp: &Experiment) -> Result<()> {
    let m = &exp.results.matrix;
    let (lo, hi) = (exp.manifest.score_min, exp.manifest.score_max);
    for c in 0..m.n_cases {
        for a in 0..m.n_arms {
            let cell = m.cell(c, a);
            if m.repeats[cell] > 0 && !(m.mean[cell] >= lo && m.mean[cell] <= hi) {
                return Err(Error::Usage(format!(
                    "{}: case {} in arm {} scores {} on average, outside [score_min, score_max] = [{lo}, {hi}]; the confidence sequence needs the score's true bounds: set score_min and score_max in experiment.toml",
                    exp.results.path.display(),
                    exp.cases.ids[c],
                    exp.results.arms[a],
                    m.mean[cell]
                )));
            }
        }
    }
    Ok(())
}

/// The settings a decision of this run depends on besides the data (the key of its entry in
/// `.ablate-watch.json`): seed, threshold, α, repeats, score bounds and the arms compared.
pub fn settings(exp: &Experiment, opts: &SequentialOptions) -> WatchSettings {
    let mut arms: Vec<String> = arm_columns(exp).into_iter().map(|(l, _)| l).collect();
    arms.sort();
    WatchSettings {
        seed: opts.seed,
        threshold_drop: exp.manifest.threshold_drop,
        alpha: opts.alpha,
        repeats: design_repeats(exp, opts.repeats),
        score_min: exp.manifest.score_min,
        score_max: exp.manifest.score_max,
        arms,
    }
}

impl State {
    fn from_decided(d: Decided) -> State {
        match d {
            Decided::Needed => State::Needed,
            Decided::Removable => State::Removable,
        }
    }
}

/// Follows every arm's sequence on the table as it stands.
///
/// # Errors
/// A mean score outside [score_min, score_max]; α outside (0, 1).
pub fn watch(
    exp: &Experiment,
    opts: &SequentialOptions,
    state: Option<&StateFile>,
) -> Result<WatchOutput> {
    check_bounds(exp)?;
    let m = &exp.results.matrix;
    let base = exp.baseline_index();
    let repeats = design_repeats(exp, opts.repeats);
    let (units, clustered) = unit_order(exp, opts.seed);
    let unit_name = if clustered { "cluster" } else { "case" };
    let arms = arm_columns(exp);
    let k = arms.len().max(1);
    let alpha_arm = opts.alpha / k as f64;
    let span = exp.manifest.score_max - exp.manifest.score_min;
    let thr = exp.manifest.threshold_drop;
    let complete =
        |c: usize, a: Option<usize>| a.is_some_and(|a| m.repeats[m.cell(c, a)] >= repeats);
    let mut warnings = Vec::new();
    let key = settings(exp, opts);
    let recorded = state.and_then(|f| f.decisions_for(&key));
    if let Some(file) = state {
        if file.legacy {
            warnings.push(format!(
                "{STATE_FILE} was written by an earlier ablate that did not record the confidence level, repeats and arms of its decisions, so they are not used; this run records its own"
            ));
        }
        for other in file.others(&key) {
            warnings.push(format!(
                "{STATE_FILE} also holds decisions made under other settings ({}); this run ({}) neither uses nor changes them",
                other.describe(),
                key.describe()
            ));
        }
    }

    let mut out = Vec::with_capacity(arms.len());
    let (mut waiting_max, mut waiting_arms) = (0usize, 0usize);
    for (label, a) in &arms {
        let a = *a;
        let mut cs = ConfidenceSequence::new(-span, span, alpha_arm);
        let mut state = State::Continue;
        let mut used = 0usize;
        let mut cases = 0usize;
        let mut decided_at = None;
        let unit_complete = |unit: &Vec<usize>| {
            unit.iter()
                .all(|&c| complete(c, Some(base)) && complete(c, a))
        };
        for (u, unit) in units.iter().enumerate() {
            let Some(a) = a.filter(|_| unit_complete(unit)) else {
                let waiting = units[u..].iter().filter(|x| unit_complete(x)).count();
                if waiting > 0 {
                    waiting_max = waiting_max.max(waiting);
                    waiting_arms += 1;
                }
                break;
            };
            let d = unit
                .iter()
                .map(|&c| m.mean[m.cell(c, base)] - m.mean[m.cell(c, a)])
                .sum::<f64>()
                / unit.len() as f64;
            cs.push(d);
            used += 1;
            cases += unit.len();
            let (lo, hi) = cs.bounds();
            if lo >= thr {
                state = State::Needed;
            } else if hi < thr {
                state = State::Removable;
            }
            if state != State::Continue {
                decided_at = Some(used);
                break;
            }
        }
        let (lower, upper) = cs.bounds();
        let drop = cs.mean();
        let (projected_units, units_still_needed) = match (state, drop) {
            (State::Continue, Some(d)) => {
                let cap = (units.len() as u64).saturating_mul(100).max(10_000);
                let p = projected_n((d - thr).abs(), cs.variance(), 2.0 * span, alpha_arm, cap)
                    .map(|p| p.max(used as u64 + 1));
                (p, p.map(|p| p - used as u64))
            }
            _ => (None, None),
        };
        let mut seq = ArmSequence {
            arm: label.clone(),
            state,
            units: used,
            cases,
            drop,
            lower,
            upper,
            decided_at,
            projected_units,
            units_still_needed,
            recorded: false,
        };
        if let Some(r) = recorded.and_then(|r| r.get(&seq.arm))
            && !opts.reopen
        {
            let recorded_state = State::from_decided(r.state);
            if seq.state != recorded_state || seq.decided_at != Some(r.units) {
                warnings.push(format!(
                    "{}: decided {} at {} units in an earlier run, but this table gives {}; the earlier decision stands (the data under it changed?). Run with --reopen to decide again from this table",
                    seq.arm,
                    r.state.label(),
                    r.units,
                    match seq.decided_at {
                        Some(n) => format!("{} at {n} units", seq.state.label()),
                        None => "no decision".into(),
                    }
                ));
            }
            seq.state = recorded_state;
            seq.decided_at = Some(r.units);
            seq.lower = r.lower;
            seq.upper = r.upper;
            seq.projected_units = None;
            seq.units_still_needed = None;
            seq.recorded = true;
        }
        if seq.state == State::Continue
            && let Some(p) = seq.projected_units
            && p > units.len() as u64
        {
            warnings.push(format!(
                "{}: projected to need about {p} {}s, more than the {} in the set; at this drop the set cannot settle it",
                seq.arm,
                unit_name,
                units.len()
            ));
        }
        out.push(seq);
    }
    if waiting_arms > 0 {
        warnings.push(format!(
            "in {waiting_arms} arms, complete {unit}s (up to {waiting_max}) lie past the first incomplete one in the seeded order and wait for it: a sequence reads its {unit}s in that order only, so that every look extends the same sequence. `ablate next` schedules the gaps first",
            unit = unit_name
        ));
    }
    let main_calls: u64 = (0..m.n_cases)
        .filter(|&c| !exp.cases.stress[c])
        .map(|c| {
            (0..m.n_arms)
                .map(|a| u64::from(m.repeats[m.cell(c, a)]))
                .sum::<u64>()
        })
        .sum();
    Ok(WatchOutput {
        method: "predictable-plug-in empirical-Bernstein confidence sequence (Waudby-Smith & Ramdas 2024), Bonferroni across arms",
        unit: unit_name,
        threshold_drop: thr,
        alpha: opts.alpha,
        alpha_per_arm: alpha_arm,
        seed: opts.seed,
        repeats,
        score_min: exp.manifest.score_min,
        score_max: exp.manifest.score_max,
        units_available: units.len(),
        calls_made: main_calls,
        arms: out,
        warnings,
    })
}

/// The decisions of a watch, to record under its [`settings`].
pub fn decisions(w: &WatchOutput) -> BTreeMap<String, RecordedDecision> {
    w.arms
        .iter()
        .filter_map(|a| {
            let state = match a.state {
                State::Needed => Decided::Needed,
                State::Removable => Decided::Removable,
                State::Continue => return None,
            };
            Some((
                a.arm.clone(),
                RecordedDecision {
                    state,
                    units: a.decided_at?,
                    lower: a.lower,
                    upper: a.upper,
                },
            ))
        })
        .collect()
}

/// One call to make: a (case, arm, repeat) the harness should run next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Call {
    /// Case id.
    pub case_id: String,
    /// Arm label.
    pub arm: String,
    /// Repeat number: continues from the repeats the cell already has, from 0.
    pub repeat: u32,
}

/// What `ablate next` plans.
#[derive(Debug, Clone, Serialize)]
pub struct NextOutput {
    /// Calls asked for.
    pub budget: u64,
    /// Calls planned (≤ budget: only whole units are scheduled).
    pub planned: u64,
    /// Arms still to decide, and the units each gets in this batch.
    pub arms: BTreeMap<String, usize>,
    /// Of the planned calls, those on the baseline (each unit needs its baseline too).
    pub baseline_calls: u64,
    /// The calls, in the seeded order, arm by arm in turn.
    pub calls: Vec<Call>,
    /// Warnings.
    pub warnings: Vec<String>,
}

/// Most calls one batch of `next` holds (each call is a row in memory and in the file).
pub const MAX_BATCH_CALLS: u64 = 1_000_000;

/// Plans the next `budget` calls (at most [`MAX_BATCH_CALLS`]): units in the seeded order, in turn over the arms still to
/// decide, each unit with the repeats its cells lack in the arm and in the baseline. A unit that
/// does not fit in what is left of the budget ends that arm's share.
pub fn next(
    exp: &Experiment,
    w: &WatchOutput,
    opts: &SequentialOptions,
    budget: u64,
) -> NextOutput {
    let m = &exp.results.matrix;
    let base = exp.baseline_index();
    let (units, _) = unit_order(exp, opts.seed);
    let have = |c: usize, a: Option<usize>| a.map_or(0, |a| m.repeats[m.cell(c, a)]);
    let open: Vec<(Option<usize>, &str, usize)> = w
        .arms
        .iter()
        .filter(|s| s.state == State::Continue)
        .map(|s| (exp.results.arm_index(&s.arm), s.arm.as_str(), s.units))
        .collect();
    let mut next_unit: Vec<usize> = open.iter().map(|&(_, _, u)| u).collect();
    let mut done = vec![false; open.len()];
    let mut baseline_planned = vec![false; m.n_cases];
    let mut calls = Vec::new();
    let mut planned = 0u64;
    let mut baseline_calls = 0u64;
    let mut per_arm: BTreeMap<String, usize> = BTreeMap::new();
    let mut exhausted: Vec<&str> = Vec::new();
    let r = w.repeats;
    let asked = budget;
    let budget = budget.min(MAX_BATCH_CALLS);
    while done.iter().any(|d| !d) {
        for (i, &(a, label, _)) in open.iter().enumerate() {
            if done[i] {
                continue;
            }
            let Some(unit) = units.get(next_unit[i]) else {
                done[i] = true;
                if !per_arm.contains_key(label) {
                    exhausted.push(label);
                }
                continue;
            };
            let mut cost = 0u64;
            for &c in unit {
                cost += u64::from(r.saturating_sub(have(c, a)));
                if !baseline_planned[c] {
                    cost += u64::from(r.saturating_sub(have(c, Some(base))));
                }
            }
            if planned + cost > budget {
                done[i] = true;
                continue;
            }
            for &c in unit {
                if !baseline_planned[c] {
                    baseline_planned[c] = true;
                    for rep in have(c, Some(base))..r {
                        calls.push(Call {
                            case_id: exp.cases.ids[c].clone(),
                            arm: exp.results.arms[base].clone(),
                            repeat: rep,
                        });
                        baseline_calls += 1;
                    }
                }
                for rep in have(c, a)..r {
                    calls.push(Call {
                        case_id: exp.cases.ids[c].clone(),
                        arm: label.to_string(),
                        repeat: rep,
                    });
                }
            }
            planned += cost;
            next_unit[i] += 1;
            *per_arm.entry(label.to_string()).or_default() += 1;
        }
    }
    let mut warnings = Vec::new();
    if asked > budget {
        warnings.push(format!(
            "a batch holds at most {MAX_BATCH_CALLS} calls; {asked} were asked for. Run the batch, then `ablate next` again"
        ));
    }
    if !exhausted.is_empty() {
        warnings.push(format!(
            "{}: every {} of the set has already been run for {}, and the arm is still not decided: the set is exhausted for it. Add cases to settle it, or accept it as not settled",
            exhausted.join(", "),
            w.unit,
            if exhausted.len() == 1 { "it" } else { "each" }
        ));
    }
    if open.is_empty() {
        warnings.push("every arm is decided: nothing left to run".into());
    } else if calls.is_empty() && exhausted.len() < open.len() {
        warnings.push(format!(
            "no whole unit fits in {budget} calls (a unit needs up to {} calls); give more --calls",
            2 * r as usize * units.iter().map(Vec::len).max().unwrap_or(1)
        ));
    }
    NextOutput {
        budget,
        planned,
        arms: per_arm,
        baseline_calls,
        calls,
        warnings,
    }
}

/// One arm of a replay.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayArm {
    /// Arm label.
    pub arm: String,
    /// The sequential decision (continue: not decided with every unit of the set).
    pub state: State,
    /// Units read when it stopped (every unit when it did not).
    pub stopped_at: usize,
    /// Cases in those units.
    pub cases: usize,
    /// The full run's verdict (sweep).
    pub full_verdict: Verdict,
    /// The full run's confidence: confident or inconclusive.
    pub full_confidence: Confidence,
    /// Whether the sequential decision says what the full run's verdict says (null when the
    /// sequence did not decide).
    pub agrees: Option<bool>,
}

/// What `ablate watch --replay` reports.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayOutput {
    /// The sequences' settings, as `watch` reports them.
    pub method: &'static str,
    /// case or cluster.
    pub unit: &'static str,
    /// Threshold.
    pub threshold_drop: f64,
    /// Family-wise α.
    pub alpha: f64,
    /// Seed of the order.
    pub seed: u64,
    /// Repeats per call cell.
    pub repeats: u32,
    /// Arms, baseline excluded.
    pub arms: Vec<ReplayArm>,
    /// Calls of the full design on the main set: (arms + baseline) × cases × repeats.
    pub calls_full: u64,
    /// Calls a sequential run would have made: each arm's cases × repeats, plus the baseline on
    /// every case any arm read.
    pub calls_sequential: u64,
    /// 1 − sequential/full.
    pub saving: f64,
    /// Arms decided.
    pub decided: usize,
    /// Decided arms whose decision agrees with the full run's verdict.
    pub agreeing: usize,
    /// Decided arms whose full-run verdict is confident and agrees.
    pub agreeing_confident: usize,
    /// Warnings.
    pub warnings: Vec<String>,
}

/// Replays a complete experiment in the seeded order: where each arm would have stopped, whether
/// it agrees with the full run, and the calls saved.
///
/// # Errors
/// As [`watch`].
pub fn replay(
    exp: &Experiment,
    sweep: &crate::analysis::sweep::SweepOutput,
    opts: &SequentialOptions,
) -> Result<ReplayOutput> {
    let w = watch(exp, opts, None)?;
    let m = &exp.results.matrix;
    let main_cases = (0..m.n_cases).filter(|&c| !exp.cases.stress[c]).count() as u64;
    let r = u64::from(w.repeats);
    let mut arms = Vec::new();
    let mut seq_calls = 0u64;
    let mut baseline_cases = 0usize;
    let mut warnings = w.warnings.clone();
    for s in &w.arms {
        let Some(full) = sweep.arms.iter().find(|f| f.arm == s.arm) else {
            continue;
        };
        if s.state == State::Continue && s.units < w.units_available {
            warnings.push(format!(
                "{}: only {} of {} units are complete in this table; the replay stops there",
                s.arm, s.units, w.units_available
            ));
        }
        let agrees = match s.state {
            State::Continue => None,
            State::Needed => Some(full.verdict == Verdict::Needed),
            State::Removable => Some(full.verdict != Verdict::Needed),
        };
        seq_calls += s.cases as u64 * r;
        baseline_cases = baseline_cases.max(s.cases);
        arms.push(ReplayArm {
            arm: s.arm.clone(),
            state: s.state,
            stopped_at: s.units,
            cases: s.cases,
            full_verdict: full.verdict,
            full_confidence: full.confidence,
            agrees,
        });
    }
    seq_calls += baseline_cases as u64 * r;
    let calls_full = (arms.len() as u64 + 1) * main_cases * r;
    let decided = arms.iter().filter(|a| a.agrees.is_some()).count();
    let agreeing = arms.iter().filter(|a| a.agrees == Some(true)).count();
    let agreeing_confident = arms
        .iter()
        .filter(|a| a.agrees == Some(true) && a.full_confidence == Confidence::Confident)
        .count();
    Ok(ReplayOutput {
        method: w.method,
        unit: w.unit,
        threshold_drop: w.threshold_drop,
        alpha: w.alpha,
        seed: w.seed,
        repeats: w.repeats,
        arms,
        calls_full,
        calls_sequential: seq_calls,
        saving: if calls_full > 0 {
            1.0 - seq_calls as f64 / calls_full as f64
        } else {
            0.0
        },
        decided,
        agreeing,
        agreeing_confident,
        warnings,
    })
}
