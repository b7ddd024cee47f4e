//! The pairwise matrix: every arm removing exactly two units whose two single-unit arms were
//! measured; interaction = drop(pair) − drop(a) − drop(b), with a case-level se.

use std::collections::BTreeSet;

use crate::analysis::paired::Paired;
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
    let base = paired.baseline;
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
    let mut out: Vec<PairInteraction> = pairs
        .par_iter()
        .filter_map(|(a, units, ua, ub)| {
            let (a, ua, ub) = (*a, *ua, *ub);
            let mut e = Vec::new();
            let mut u = Vec::new();
            for (p, &c) in paired.cases.iter().enumerate() {
                if [a, ua, ub].iter().all(|&x| m.present(c, x)) {
                    let b = m.mean[m.cell(c, base)];
                    let d = |x: usize| b - m.mean[m.cell(c, x)];
                    e.push(d(a) - d(ua) - d(ub));
                    u.push(paired.unit[p]);
                }
            }
            if e.is_empty() {
                return None;
            }
            let (interaction, se) = paired.mean_se(&e, &u);
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
