//! `ablate watch`: every arm's sequence on the table as it stands, and the decisions to record.

use std::collections::BTreeMap;

use super::{
    ArmSequence, SequentialOptions, State, WatchOutput, arm_columns, check_bounds, design_repeats,
    settings, unit_order,
};
use crate::analysis::interval::Interval;
use crate::error::Result;
use crate::io::Experiment;
use crate::io::watch_state::{Decided, RecordedDecision, STATE_FILE, StateFile};
use crate::stats::estimate::CiMethod;
use crate::stats::sequence::{ConfidenceSequence, projected_n};

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
            warnings.push(crate::warning::Warning::new("watch.legacy_state", format!(
                "{STATE_FILE} was written by an earlier ablate that did not record the confidence level, repeats and arms of its decisions, so they are not used; this run records its own"
            )));
        }
        for other in file.others(&key) {
            warnings.push(crate::warning::Warning::new("watch.other_settings", format!(
                "{STATE_FILE} also holds decisions made under other settings ({}); this run ({}) neither uses nor changes them",
                other.describe(),
                key.describe()
            )));
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
            cs: Some(Interval {
                low: lower,
                high: upper,
                level: 1.0 - alpha_arm,
                method: CiMethod::ConfidenceSequence,
            }),
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
                warnings.push(crate::warning::Warning::new("watch.decision_kept", format!(
                    "{}: decided {} at {} units in an earlier run, but this table gives {}; the earlier decision stands (the data under it changed?). Run with --reopen to decide again from this table",
                    seq.arm,
                    r.state.label(),
                    r.units,
                    match seq.decided_at {
                        Some(n) => format!("{} at {n} units", seq.state.label()),
                        None => "no decision".into(),
                    }
                )));
            }
            seq.state = recorded_state;
            seq.decided_at = Some(r.units);
            seq.cs = seq.cs.map(|cs| Interval {
                low: r.lower,
                high: r.upper,
                ..cs
            });
            seq.projected_units = None;
            seq.units_still_needed = None;
            seq.recorded = true;
        }
        if seq.state == State::Continue
            && let Some(p) = seq.projected_units
            && p > units.len() as u64
        {
            warnings.push(crate::warning::Warning::new("watch.set_too_small", format!(
                "{}: projected to need about {p} {}s, more than the {} in the set; at this drop the set cannot settle it",
                seq.arm,
                unit_name,
                units.len()
            )));
        }
        out.push(seq);
    }
    if waiting_arms > 0 {
        warnings.push(crate::warning::Warning::new("watch.incomplete_units_waiting", format!(
            "in {waiting_arms} arms, complete {unit}s (up to {waiting_max}) lie past the first incomplete one in the seeded order and wait for it: a sequence reads its {unit}s in that order only, so that every look extends the same sequence. `ablate next` schedules the gaps first",
            unit = unit_name
        )));
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
                    lower: a.cs.map_or(f64::NEG_INFINITY, |cs| cs.low),
                    upper: a.cs.map_or(f64::INFINITY, |cs| cs.high),
                },
            ))
        })
        .collect()
}
