//! `ablate watch --replay`: a complete experiment replayed sequentially, against the full run.

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
    pub warnings: Vec<crate::warning::Warning>,
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
