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

pub(super) fn pairwise(exp: &Experiment, paired: &Paired) -> Vec<PairInteraction> {
    let m = &exp.results.matrix;
    let base = paired.baseline;
    let sets = removed_sets(exp);
    let single = |u: &String| {
        sets.iter()
            .position(|s| s.as_ref().is_some_and(|s| s.len() == 1 && s.contains(u)))
    };
    let mut out = Vec::new();
    for (a, s) in sets.iter().enumerate() {
        let Some(s) = s.as_ref().filter(|s| s.len() == 2) else {
            continue;
        };
        let units: Vec<&String> = s.iter().collect();
        let (Some(ua), Some(ub)) = (single(units[0]), single(units[1])) else {
            continue;
        };
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
            continue;
        }
        let (interaction, se) = paired.mean_se(&e, &u);
        out.push(PairInteraction {
            a: units[0].clone(),
            b: units[1].clone(),
            arm: exp.results.arms[a].clone(),
            interaction,
            se,
        });
    }
    out.sort_by(|x, y| (&x.a, &x.b).cmp(&(&y.a, &y.b)));
    out
}
