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
/// (the empty subset being the baseline's).
pub(super) fn factorial_units(
    sets: &[Option<BTreeSet<String>>],
) -> Option<(Vec<String>, Vec<usize>)> {
    let mut best: Option<(Vec<String>, Vec<usize>)> = None;
    for s in sets.iter().flatten() {
        let k = s.len();
        if !(2..=12).contains(&k) || best.as_ref().is_some_and(|b| b.0.len() >= k) {
            continue;
        }
        let units: Vec<String> = s.iter().cloned().collect();
        // arm_of[mask] = the arm removing exactly the units in `mask`.
        let mut arm_of = Vec::with_capacity(1 << k);
        for mask in 0..(1usize << k) {
            let want: BTreeSet<String> = (0..k)
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| units[i].clone())
                .collect();
            match sets.iter().position(|x| x.as_ref() == Some(&want)) {
                Some(a) => arm_of.push(a),
                None => break,
            }
        }
        if arm_of.len() == 1 << k {
            best = Some((units, arm_of));
        }
    }
    best
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
