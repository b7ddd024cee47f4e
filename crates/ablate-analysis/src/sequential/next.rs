//! `ablate next`: the next batch of calls for the arms still open.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{State, WatchOutput};
use crate::io::Experiment;

/// One call to make: a (case, arm, repeat) the harness should run next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Call {
    /// Case id.
    pub case_id: String,
    /// Arm label.
    pub arm: String,
    /// Repeat number: continues after the highest the cell holds (from 0 for a new cell).
    pub repeat: u32,
}

/// Renumbers each cell's calls to continue from the highest repeat number the results hold for
/// it (`last`, from the results table): the calls of a cell are numbered from the count of its
/// repeats, which collides with a table numbered 1..K (as `import` numbers Inspect's epochs)
/// when its rows are appended. A cell numbered 0..K−1, or without rows, keeps its numbers.
///
/// # Errors
/// A call whose number would pass the largest repeat number (2³² − 1): the cell's rows are
/// numbered up to it, and a batch row could only repeat one of them. The error names the cell.
pub fn continue_numbering(
    calls: &mut [Call],
    last: &std::collections::HashMap<(String, String), i64>,
) -> std::result::Result<(), String> {
    let mut first: BTreeMap<(&str, &str), u32> = BTreeMap::new();
    for c in calls.iter() {
        let lowest = first.entry((&c.case_id, &c.arm)).or_insert(c.repeat);
        *lowest = (*lowest).min(c.repeat);
    }
    let shift: BTreeMap<(String, String), i64> = first
        .into_iter()
        .filter_map(|((case, arm), lowest)| {
            let key = (case.to_string(), arm.to_string());
            let next_free = last.get(&key)? + 1;
            (next_free > i64::from(lowest)).then(|| (key, next_free - i64::from(lowest)))
        })
        .collect();
    for c in calls.iter_mut() {
        if let Some(s) = shift.get(&(c.case_id.clone(), c.arm.clone())) {
            c.repeat = u32::try_from(i64::from(c.repeat) + s).map_err(|_| {
                format!(
                    "case {:?} in arm {:?} holds repeat numbers up to {}, so its next call would pass {}, the largest a repeat can have",
                    c.case_id,
                    c.arm,
                    last[&(c.case_id.clone(), c.arm.clone())],
                    u32::MAX
                )
            })?;
        }
    }
    Ok(())
}

/// What `ablate next` plans.
#[derive(Debug, Clone, Serialize)]
pub struct NextOutput {
    /// Calls asked for.
    pub budget: u64,
    /// Calls planned (≤ budget: only whole units are scheduled).
    pub planned: u64,
    /// The arms this batch schedules, and the units each gets calls for (units already complete
    /// are passed over, not counted; an open arm whose next unit did not fit the budget, or
    /// whose units are all read, is not listed).
    pub arms: BTreeMap<String, usize>,
    /// Arms still to decide (open), scheduled or not.
    pub open_arms: usize,
    /// Of the planned calls, those on the baseline (each unit needs its baseline too).
    pub baseline_calls: u64,
    /// The calls, in the watch's order, arm by arm in turn.
    pub calls: Vec<Call>,
    /// Warnings.
    pub warnings: Vec<crate::warning::Warning>,
}

/// The watch's warnings a batch repeats (see [`next`]).
const CARRIED: [&str; 3] = [
    "watch.extra_repeats",
    "watch.cases_added",
    "watch.other_experiment",
];

/// Most calls one batch of `next` holds (each call is a row in memory and in the file).
pub const MAX_BATCH_CALLS: u64 = 1_000_000;

/// Plans the next `budget` calls (at most [`MAX_BATCH_CALLS`]): units in the watch's order
/// ([`WatchOutput::order`]), in turn over the arms still to decide, each unit with the repeats
/// its cells lack in the arm and in the baseline. A unit that does not fit in what is left of
/// the budget ends that arm's share.
pub fn next(exp: &Experiment, w: &WatchOutput, budget: u64) -> NextOutput {
    let m = &exp.results.matrix;
    let base = exp.baseline_index();
    let units = &w.order.units;
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
            baseline_calls +=
                unit_calls(exp, unit, (a, label), r, &mut baseline_planned, &mut calls);
            planned += cost;
            next_unit[i] += 1;
            // A unit already complete (waiting behind an incomplete one) costs nothing and is
            // not one the batch runs: it is passed over, not counted.
            if cost > 0 {
                *per_arm.entry(label.to_string()).or_default() += 1;
            }
        }
    }
    // The watch's notes on what the batch rests on hold for it too: extra repeats not scheduled
    // (a retried call), cases added (the sequences continue), decisions set aside (another
    // experiment's: the arms they decided are open again and scheduled).
    let mut warnings: Vec<crate::warning::Warning> = w
        .warnings
        .iter()
        .filter(|x| CARRIED.contains(&x.code))
        .cloned()
        .collect();
    warnings.extend(next_warnings(
        w,
        (asked, budget),
        &exhausted,
        open.len(),
        calls.is_empty(),
        2 * r as usize * units.iter().map(Vec::len).max().unwrap_or(1),
    ));
    NextOutput {
        budget,
        planned,
        arms: per_arm,
        open_arms: open.len(),
        baseline_calls,
        calls,
        warnings,
    }
}

/// Appends the calls of one unit (its cases) for arm `a` (labelled `label`): the repeats each
/// cell lacks up to `r`, first in the baseline when its baseline is not yet planned. Returns the
/// number of baseline calls added.
fn unit_calls(
    exp: &Experiment,
    unit: &[usize],
    (a, label): (Option<usize>, &str),
    r: u32,
    baseline_planned: &mut [bool],
    calls: &mut Vec<Call>,
) -> u64 {
    let m = &exp.results.matrix;
    let base = exp.baseline_index();
    let have = |c: usize, a: Option<usize>| a.map_or(0, |a| m.repeats[m.cell(c, a)]);
    let mut baseline_calls = 0;
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
    baseline_calls
}

/// The batch's warnings: capped at the batch limit, arms whose set is exhausted, every arm
/// decided, or a budget too small for one whole unit (of up to `max_unit_calls` calls).
fn next_warnings(
    w: &WatchOutput,
    (asked, budget): (u64, u64),
    exhausted: &[&str],
    open: usize,
    no_calls: bool,
    max_unit_calls: usize,
) -> Vec<crate::warning::Warning> {
    let mut warnings = Vec::new();
    if asked > budget {
        warnings.push(crate::warning::Warning::new("next.batch_capped", format!(
            "a batch holds at most {MAX_BATCH_CALLS} calls; {asked} were asked for. Run the batch, then `ablate next` again"
        )));
    }
    if !exhausted.is_empty() {
        warnings.push(crate::warning::Warning::new("next.set_exhausted", format!(
            "{}: every {} of the set has already been run for {}, and the arm is still not decided: the set is exhausted for it. Add cases to settle it, or accept it as not settled",
            exhausted.join(", "),
            w.unit,
            if exhausted.len() == 1 { "it" } else { "each" }
        )));
    }
    if open == 0 {
        warnings.push(crate::warning::Warning::new(
            "next.all_decided",
            "every arm is decided: nothing left to run",
        ));
    } else if no_calls && exhausted.len() < open {
        warnings.push(crate::warning::Warning::new("next.budget_too_small", format!(
            "no whole unit fits in {budget} calls (a unit needs up to {} calls); give more --calls",
            max_unit_calls
        )));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell numbered 1..K by an import gets K + 1 next, not K (which it holds); one numbered
    /// 0..K−1, or new, keeps the count's numbers.
    #[test]
    fn calls_continue_after_the_highest_repeat_a_cell_holds() {
        let call = |case: &str, arm: &str, repeat| Call {
            case_id: case.into(),
            arm: arm.into(),
            repeat,
        };
        // Two repeats in each cell: (c1, a) numbered 1, 2; (c2, a) numbered 0, 1; c3 new.
        let mut calls = vec![
            call("c1", "a", 2),
            call("c1", "a", 3),
            call("c2", "a", 2),
            call("c3", "a", 0),
        ];
        let last = std::collections::HashMap::from([
            (("c1".to_string(), "a".to_string()), 2),
            (("c2".to_string(), "a".to_string()), 1),
        ]);
        continue_numbering(&mut calls, &last).unwrap();
        let repeats: Vec<u32> = calls.iter().map(|c| c.repeat).collect();
        assert_eq!(repeats, [3, 4, 2, 0]);
        // A cell numbered up to the largest repeat number has no next one: refused, named
        // (it had been clamped, and the batch repeated an existing row).
        let mut calls = vec![call("c9", "a", 2)];
        let last = std::collections::HashMap::from([(
            ("c9".to_string(), "a".to_string()),
            i64::from(u32::MAX),
        )]);
        let err = continue_numbering(&mut calls, &last).unwrap_err();
        assert!(
            err.contains("\"c9\"") && err.contains("4294967295"),
            "{err}"
        );
    }
}
