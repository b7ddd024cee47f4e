//! Exact Shapley values and pairwise Shapley interaction indices when the arms cover all 2^k
//! subsets of k ≤ 12 units (v(T) = score with exactly the units T present).

use std::collections::BTreeSet;

use crate::analysis::paired::Paired;
use crate::io::Experiment;

use super::pairwise::removed_sets;
use super::{ShapleyOutput, ShapleyPair};
use crate::analysis::shapley;
use crate::error::{Error, Result};
use crate::stats::moments;

/// The largest unit set (2 ≤ k ≤ 12) whose every subset was measured as an arm's removed set
/// (the empty subset being the baseline's), with the arm of each subset (by bit mask).
pub(super) fn factorial_units(
    sets: &[Option<BTreeSet<String>>],
) -> Option<(Vec<String>, Vec<usize>)> {
    let mut best: Option<(Vec<String>, Vec<usize>)> = None;
    for s in sets.iter().flatten() {
        if best.as_ref().is_some_and(|b| b.0.len() >= s.len()) {
            continue;
        }
        if let Some(arm_of) = complete(s, sets) {
            best = Some((s.iter().cloned().collect(), arm_of));
        }
    }
    best
}

/// The arm of every subset of `s` (by bit mask over its units in order), when `s` has 2 to 12
/// units and every subset was measured; `None` otherwise.
fn complete(s: &BTreeSet<String>, sets: &[Option<BTreeSet<String>>]) -> Option<Vec<usize>> {
    let k = s.len();
    if !(2..=12).contains(&k) {
        return None;
    }
    let units: Vec<&String> = s.iter().collect();
    (0..(1usize << k))
        .map(|mask| {
            let want: BTreeSet<String> = (0..k)
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| units[i].clone())
                .collect();
            sets.iter().position(|x| x.as_ref() == Some(&want))
        })
        .collect()
}

/// The warning naming the complete factorials that get no Shapley values: only the largest
/// (`factorial_units`) is analysed, and one over other units (every subset of {C, D} beside
/// {A, B}'s) had been left out without a word.
pub(super) fn unanalysed_factorials(exp: &Experiment) -> Option<crate::warning::Warning> {
    let sets = removed_sets(exp);
    let (chosen, _) = factorial_units(&sets)?;
    let chosen: BTreeSet<&String> = chosen.iter().collect();
    let left_out: Vec<&BTreeSet<String>> = sets
        .iter()
        .flatten()
        .filter(|s| !s.iter().all(|u| chosen.contains(u)))
        .filter(|s| complete(s, &sets).is_some())
        .collect();
    // The largest of them only: every subset of a complete factorial is one too.
    let mut others: Vec<String> = left_out
        .iter()
        .filter(|s| !left_out.iter().any(|t| t.len() > s.len() && s.is_subset(t)))
        .map(|s| format!("{{{}}}", s.iter().cloned().collect::<Vec<_>>().join(", ")))
        .collect();
    others.sort();
    others.dedup();
    (!others.is_empty()).then(|| {
        crate::warning::Warning::new(
            "interactions.other_factorials",
            format!(
                "Shapley values are given for one complete factorial only, the largest ({{{}}}); the arms also cover every subset of {}, which get none: run `ablate interactions` on a copy whose arms table keeps only those arms to see them",
                chosen.iter().map(|u| u.as_str()).collect::<Vec<_>>().join(", "),
                others.join(", ")
            ),
        )
    })
}

pub(super) fn shapley_output(exp: &Experiment, paired: &Paired) -> Result<Option<ShapleyOutput>> {
    let m = &exp.results.matrix;
    let sets = removed_sets(exp);
    let Some((units, arm_of_removed)) = factorial_units(&sets) else {
        return Ok(None);
    };
    let k = units.len();
    let full = (1usize << k) - 1;
    let cases: Vec<usize> = paired
        .cases
        .iter()
        .copied()
        .filter(|&c| arm_of_removed.iter().all(|&a| m.present(c, a)))
        .collect();
    if cases.is_empty() {
        return Ok(None);
    }
    // v(T) for T = present units = complement of removed.
    let v: Vec<f64> = (0..=full)
        .map(|present| {
            let a = arm_of_removed[full & !present];
            moments::mean(
                &cases
                    .iter()
                    .map(|&c| m.mean[m.cell(c, a)])
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    let r = shapley::shapley(k, &v);
    let total = moments::sum(r.values.iter().copied());
    let expected = v[full] - v[0];
    if (total - expected).abs() > 1e-9 * (1.0 + expected.abs()) {
        return Err(Error::Invariant(format!(
            "Σ Shapley values {total} ≠ v(all) − v(none) {expected}"
        )));
    }
    Ok(Some(ShapleyOutput {
        values: units
            .iter()
            .cloned()
            .zip(r.values.iter().copied())
            .collect(),
        interactions: r
            .interactions
            .iter()
            .map(|(a, b, index)| ShapleyPair {
                a: units[*a].clone(),
                b: units[*b].clone(),
                index: *index,
            })
            .collect(),
        v_all: v[full],
        v_none: v[0],
        cases: cases.len(),
        units,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn factorial_detection_needs_every_subset() {
        let s = |u: &[&str]| {
            Some(
                u.iter()
                    .map(|x| x.to_string())
                    .collect::<BTreeSet<String>>(),
            )
        };
        // Arm 0 removes nothing by selection (a budget arm): it is not the empty set.
        let mut sets = vec![
            None,
            s(&[]),
            s(&["a"]),
            s(&["b"]),
            s(&["a", "b"]),
            s(&["c"]),
        ];
        let (units, arms) = factorial_units(&sets).unwrap();
        assert_eq!(units, vec!["a", "b"]);
        assert_eq!(arms, vec![1, 2, 3, 4]);
        sets.remove(4);
        assert!(factorial_units(&sets).is_none());
    }
}
