//! `ablate watch --replay`: a complete experiment replayed sequentially, against the full run.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{SequentialOptions, State, watch};
use crate::analysis::vocab::{Confidence, Verdict};
use crate::error::Result;
use crate::io::Experiment;

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
    /// Calls a sequential run would have made: each decided arm's cases × repeats, every case of
    /// the set for an arm left undecided (a sequential run would have run it to the end), plus
    /// the baseline on every case any arm read.
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
    pub warnings: Vec<crate::warning::Warning>,
}

/// Replays a complete experiment in the seeded order: where each arm would have stopped, whether
/// it agrees with the full run, and the calls saved.
///
/// A complete cell has the design's repeats: `--repeats`, else the number most cells have (with
/// a warning when some cells have more), so that a retried call (one cell with a repeat more)
/// does not make every unit incomplete. An arm the replay leaves undecided is charged every case
/// of the set: the calls saved are those of the arms decided early, never of arms it could not
/// read.
///
/// # Errors
/// As [`watch`].
pub fn replay(
    exp: &Experiment,
    sweep: &crate::analysis::sweep::SweepOutput,
    opts: &SequentialOptions,
) -> Result<ReplayOutput> {
    let m = &exp.results.matrix;
    let (design, extra) = match opts.repeats {
        Some(r) => (r, None),
        None => design_repeats_of_complete(exp),
    };
    let opts = SequentialOptions {
        repeats: Some(design),
        ..opts.clone()
    };
    let w = watch(exp, &opts, None)?;
    let main_cases = (0..m.n_cases).filter(|&c| !exp.cases.stress[c]).count();
    let r = u64::from(w.repeats);
    let mut arms = Vec::new();
    let mut seq_calls = 0u64;
    let mut baseline_cases = 0usize;
    let mut warnings = w.warnings.clone();
    warnings.extend(extra);
    for s in &w.arms {
        let Some(full) = sweep.arms.iter().find(|f| f.arm == s.arm) else {
            continue;
        };
        if s.state == State::Continue && s.units < w.units_available {
            warnings.push(crate::warning::Warning::new(
                "replay.incomplete_units",
                format!(
                    "{}: only {} of {} units are complete in this table; the replay stops there",
                    s.arm, s.units, w.units_available
                ),
            ));
        }
        let agrees = match s.state {
            State::Continue => None,
            State::Needed => Some(full.verdict == Verdict::Needed),
            State::Removable => Some(full.verdict != Verdict::Needed),
        };
        // An undecided arm runs to the end of the set in a sequential run.
        let cases = if s.state == State::Continue {
            main_cases
        } else {
            s.cases
        };
        seq_calls += cases as u64 * r;
        baseline_cases = baseline_cases.max(cases);
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
    let calls_full = (arms.len() as u64 + 1) * main_cases as u64 * r;
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

/// The repeats of a complete experiment's design: the number most main-set cells with results
/// have (the larger on a tie; the stress slice may be run at other repeats), with a warning when
/// some cells have more (a retried call), whose extra rows still count in their cell's mean.
fn design_repeats_of_complete(exp: &Experiment) -> (u32, Option<crate::warning::Warning>) {
    let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
    for n in super::main_cell_repeats(exp).filter(|&n| n > 0) {
        *counts.entry(n).or_default() += 1;
    }
    let Some((&design, _)) = counts.iter().max_by_key(|&(n, cells)| (*cells, *n)) else {
        return (1, None);
    };
    let (more, most) = counts
        .range(design + 1..)
        .fold((0, design), |(cells, _), (&n, &c)| (cells + c, n));
    let warning = (more > 0).then(|| {
        crate::warning::Warning::new(
            "replay.extra_repeats",
            format!(
                "{more} (case, arm) cells of the main set have more than {design} repeats, the number most cells have (up to {most}: a retried call?); the replay takes {design} as the design's repeats (the extra rows still count in their cell's mean). Give --repeats to replay at another number"
            ),
        )
    });
    (design, warning)
}
