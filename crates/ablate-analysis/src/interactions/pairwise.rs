//! The pairwise matrix: every arm removing exactly two units whose two single-unit arms were
//! measured; interaction = drop(pair) − drop(a) − drop(b), with a case-level se.

use std::collections::BTreeSet;

use crate::analysis::paired::{Paired, PairedArm};
use crate::io::Experiment;

use super::PairInteraction;

/// The removed set of every measured arm, when the arm removes exactly a fixed set of units: the
/// baseline removes the empty set; other arms with an empty `removed` list (budget and selector
/// arms, which remove different units on different cases) have none.
pub(super) fn removed_sets(exp: &Experiment) -> Vec<Option<BTreeSet<String>>> {
    let base = exp.baseline_index();
    (0..exp.results.arms.len())
        .map(|a| {
            let set: BTreeSet<String> = exp
                .arms
                .as_ref()
                .and_then(|t| t.get(&exp.results.arms[a]))
                .map(|s| s.removed.iter().cloned().collect())
                .unwrap_or_default();
            (a == base || !set.is_empty()).then_some(set)
        })
        .collect()
}

/// Every pair arm's interaction, each computed on its own (rayon; in the same order at any
/// thread count), sorted by its two units.
pub(super) fn pairwise(exp: &Experiment, paired: &Paired) -> Vec<PairInteraction> {
    use rayon::prelude::*;
    let m = &exp.results.matrix;
    let sets = removed_sets(exp);
    let single = |u: &String| {
        sets.iter()
            .position(|s| s.as_ref().is_some_and(|s| s.len() == 1 && s.contains(u)))
    };
    // (pair arm, its two units, their single-unit arms)
    let pairs: Vec<(usize, Vec<&String>, usize, usize)> = sets
        .iter()
        .enumerate()
        .filter_map(|(a, s)| {
            let units: Vec<&String> = s.as_ref().filter(|s| s.len() == 2)?.iter().collect();
            let (ua, ub) = (single(units[0])?, single(units[1])?);
            Some((a, units, ua, ub))
        })
        .collect();
    // Every arm's pairs the interactions read, built in passes over the matrix first.
    let wanted: BTreeSet<usize> = pairs.iter().flat_map(|p| [p.0, p.2, p.3]).collect();
    paired.arms(m, &wanted.into_iter().collect::<Vec<_>>());
    let scale = crate::analysis::paired::rounding_scale(exp);
    let mut out: Vec<PairInteraction> = pairs
        .par_iter()
        .filter_map(|(a, units, ua, ub)| {
            let a = *a;
            let (e, u) = interaction_values(paired.arms(m, &[a, *ua, *ub]));
            if e.is_empty() {
                return None;
            }
            let (interaction, se) = paired.mean_se(&e, &u);
            // Values that do not vary have an unknown variance, not a zero one.
            let se = se.filter(|_| !crate::stats::estimate::no_variation_at(&e, scale));
            Some(PairInteraction {
                a: units[0].clone(),
                b: units[1].clone(),
                arm: exp.results.arms[a].clone(),
                interaction,
                se,
            })
        })
        .collect();
    out.sort_by(|x, y| (&x.a, &x.b).cmp(&(&y.a, &y.b)));
    out
}

/// e = d_ab − d_a − d_b on the cases paired in all three arms (the pair's and each unit's
/// alone), with their units: a walk over the arms' paired drops (ascending positions), which
/// hold d = s_base − s_arm as the matrix gives it, so e is the same to the bit.
fn interaction_values(arms: Vec<&PairedArm>) -> (Vec<f64>, Vec<u32>) {
    let [ab, a, b] = [arms[0], arms[1], arms[2]];
    let (mut e, mut units) = (
        Vec::with_capacity(ab.pos.len()),
        Vec::with_capacity(ab.pos.len()),
    );
    let (mut j, mut k) = (0, 0);
    for (i, &p) in ab.pos.iter().enumerate() {
        while j < a.pos.len() && a.pos[j] < p {
            j += 1;
        }
        while k < b.pos.len() && b.pos[k] < p {
            k += 1;
        }
        if a.pos.get(j) == Some(&p) && b.pos.get(k) == Some(&p) {
            e.push(ab.drop[i] - a.drop[j] - b.drop[k]);
            units.push(ab.unit[i]);
        }
    }
    (e, units)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm(pos: &[usize], drop: &[f64]) -> PairedArm {
        PairedArm {
            pos: pos.to_vec(),
            drop: drop.to_vec(),
            unit: pos.iter().map(|&p| p as u32 + 10).collect(),
            ..PairedArm::default()
        }
    }

    /// Only the cases paired in all three arms count, each with its own three drops.
    #[test]
    fn interaction_values_walk_the_cases_all_three_arms_share() {
        let ab = arm(&[0, 1, 2, 4, 5], &[0.5, 0.4, 0.3, 0.2, 0.1]);
        let a = arm(&[0, 2, 3, 4, 5], &[0.1, 0.1, 9.0, 0.05, 0.0]);
        let b = arm(&[1, 2, 4], &[0.2, 0.1, 0.05]);
        let (e, units) = interaction_values(vec![&ab, &a, &b]);
        // Cases 2 and 4: 0.3 − 0.1 − 0.1 and 0.2 − 0.05 − 0.05.
        assert_eq!(e, vec![0.3 - 0.1 - 0.1, 0.2 - 0.05 - 0.05]);
        assert_eq!(units, vec![12, 14]);
    }
}
