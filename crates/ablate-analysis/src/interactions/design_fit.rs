//! Arms labelled with a `design` (as `ablate plan` writes them), fitted by least squares on the
//! ±1 coding (+1 = unit present): main effects and two-factor interactions where the design
//! separates them, per case, so each effect has a case-level se.

use std::collections::{BTreeMap, BTreeSet};

use crate::analysis::paired::Paired;
use crate::io::Experiment;

use super::pairwise::removed_sets;
use super::{DesignFit, Effect};
use crate::stats::moments;

pub(super) fn design_fits(
    exp: &Experiment,
    paired: &Paired,
    warnings: &mut Vec<crate::warning::Warning>,
) -> Vec<DesignFit> {
    let Some(arms) = &exp.arms else {
        return Vec::new();
    };
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for spec in &arms.specs {
        if let (Some(d), Some(a)) = (&spec.design, exp.results.arm_index(&spec.arm)) {
            groups.entry(d.as_str()).or_default().push(a);
        }
    }
    let sets = removed_sets(exp);
    groups
        .into_iter()
        .filter_map(|(design, runs)| {
            // Only arms that remove a fixed set of units can be runs of a two-level design.
            let runs: Vec<usize> = runs.into_iter().filter(|&a| sets[a].is_some()).collect();
            fit_design(exp, paired, design, &runs, &sets, warnings)
        })
        .collect()
}

/// One design's fit: main effects and two-factor interactions when the runs separate them,
/// else main effects only (with a note), else nothing (with a warning). `None` also for fewer
/// than two runs or two complete cases.
fn fit_design(
    exp: &Experiment,
    paired: &Paired,
    design: &str,
    runs: &[usize],
    sets: &[Option<BTreeSet<String>>],
    warnings: &mut Vec<crate::warning::Warning>,
) -> Option<DesignFit> {
    let m = &exp.results.matrix;
    let units: Vec<String> = runs
        .iter()
        .flat_map(|&a| sets[a].iter().flatten().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let k = units.len();
    if k == 0 || runs.len() < 2 {
        return None;
    }
    // The coded level of unit u in run a: −1 when the arm removes it, +1 when it keeps it.
    let x = |a: usize, u: usize| {
        if sets[a].as_ref().is_some_and(|s| s.contains(&units[u])) {
            -1.0
        } else {
            1.0
        }
    };
    let mains: Vec<Vec<usize>> = (0..k).map(|u| vec![u]).collect();
    let pairs: Vec<Vec<usize>> = (0..k)
        .flat_map(|a| ((a + 1)..k).map(move |b| vec![a, b]))
        .collect();
    // Columns: intercept + terms; rows: runs.
    let design_matrix = |terms: &[Vec<usize>]| -> Vec<Vec<f64>> {
        runs.iter()
            .map(|&a| {
                std::iter::once(1.0)
                    .chain(terms.iter().map(|t| t.iter().map(|&u| x(a, u)).product()))
                    .collect()
            })
            .collect()
    };
    let with_pairs: Vec<Vec<usize>> = mains.iter().chain(pairs.iter()).cloned().collect();
    let (terms, solver, note) = match least_squares(&design_matrix(&with_pairs)) {
        Some(a) => (with_pairs, a, None),
        None => match least_squares(&design_matrix(&mains)) {
            Some(a) => (
                mains,
                a,
                Some("two-factor interactions are aliased in this design (resolution < V, or too few runs); main effects only, each possibly aliased with two-factor interactions".to_string()),
            ),
            None => {
                warnings.push(crate::warning::Warning::new("interactions.design_not_estimable", format!(
                    "design \"{design}\": its runs cannot separate the main effects of its {k} units; not fitted"
                )));
                return None;
            }
        },
    };
    let cases: Vec<(usize, usize)> = paired
        .cases
        .iter()
        .enumerate()
        .filter(|(_, c)| runs.iter().all(|&a| m.present(**c, a)))
        .map(|(p, c)| (p, *c))
        .collect();
    if cases.len() < 2 {
        return None;
    }
    let unit_ids: Vec<u32> = cases.iter().map(|(p, _)| paired.unit[*p]).collect();
    // Effect of term t per case: 2 · Σ_r A[t+1][r] · mean(case, run r); then its mean and SE.
    let effect = |t: usize| -> Effect {
        let per_case: Vec<f64> = cases
            .iter()
            .map(|&(_, c)| {
                2.0 * moments::sum(
                    runs.iter()
                        .enumerate()
                        .map(|(r, &a)| solver[t + 1][r] * m.mean[m.cell(c, a)]),
                )
            })
            .collect();
        let (effect, se) = paired.mean_se(&per_case, &unit_ids);
        // The same effect on every case (or one unit): the se is undefined, not a measured 0.
        let se = se.filter(|s| *s > 0.0);
        Effect {
            term: terms[t]
                .iter()
                .map(|&u| units[u].as_str())
                .collect::<Vec<_>>()
                .join(" × "),
            effect,
            se,
        }
    };
    let all: Vec<Effect> = (0..terms.len()).map(effect).collect();
    let flat: Vec<&str> = all
        .iter()
        .filter(|e| e.se.is_none())
        .map(|e| e.term.as_str())
        .collect();
    if !flat.is_empty() {
        warnings.push(crate::warning::Warning::new(
            "interactions.design_no_spread",
            format!(
                "design \"{design}\": {} effect(s) have no spread over the cases ({}): their se is undefined (null)",
                flat.len(),
                flat.join(", ")
            ),
        ));
    }
    let (main_effects, two_factor): (Vec<Effect>, Vec<Effect>) = all
        .into_iter()
        .enumerate()
        .partition(|(i, _)| terms[*i].len() == 1)
        .map2();
    Some(DesignFit {
        design: design.to_string(),
        units,
        runs: runs.len(),
        cases: cases.len(),
        main_effects,
        two_factor,
        note,
    })
}

/// The least-squares solver A = (X'X)⁻¹ X' (p × runs) of a design matrix X (runs × p); `None`
/// when there are fewer runs than columns or X'X is singular (aliased terms).
fn least_squares(design: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let p = design.first().map_or(0, Vec::len);
    if design.len() < p {
        return None;
    }
    let xtx: Vec<Vec<f64>> = (0..p)
        .map(|i| {
            (0..p)
                .map(|j| design.iter().map(|r| r[i] * r[j]).sum())
                .collect()
        })
        .collect();
    let inv = crate::stats::linalg::invert_symmetric(&xtx)?;
    Some(
        (0..p)
            .map(|i| {
                design
                    .iter()
                    .map(|r| (0..p).map(|j| inv[i][j] * r[j]).sum())
                    .collect()
            })
            .collect(),
    )
}

/// Drops the indices of a partitioned `(index, value)` pair of vectors.
trait Map2<T> {
    fn map2(self) -> (Vec<T>, Vec<T>);
}

impl<T> Map2<T> for (Vec<(usize, T)>, Vec<(usize, T)>) {
    fn map2(self) -> (Vec<T>, Vec<T>) {
        (
            self.0.into_iter().map(|(_, v)| v).collect(),
            self.1.into_iter().map(|(_, v)| v).collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::least_squares;

    #[test]
    fn least_squares_solves_a_full_two_by_two_factorial() {
        // Runs (−,−), (+,−), (−,+), (+,+); columns 1, A, B, AB: X is orthogonal with X'X = 4I,
        // so the solver is X'/4.
        let x = [
            [1.0, -1.0, -1.0, 1.0],
            [1.0, 1.0, -1.0, -1.0],
            [1.0, -1.0, 1.0, -1.0],
            [1.0, 1.0, 1.0, 1.0],
        ];
        let design: Vec<Vec<f64>> = x.iter().map(|r| r.to_vec()).collect();
        let a = least_squares(&design).unwrap();
        for i in 0..4 {
            for r in 0..4 {
                assert!((a[i][r] - x[r][i] / 4.0).abs() < 1e-12, "{i} {r}");
            }
        }
        // y = 3 + 2A − B: the coefficients come back.
        let y: Vec<f64> = x.iter().map(|r| 3.0 + 2.0 * r[1] - r[2]).collect();
        let beta: Vec<f64> = a
            .iter()
            .map(|row| row.iter().zip(&y).map(|(p, q)| p * q).sum())
            .collect();
        for (b, want) in beta.iter().zip([3.0, 2.0, -1.0, 0.0]) {
            assert!((b - want).abs() < 1e-12);
        }
        // Two runs cannot fit four columns; aliased columns are singular.
        assert!(least_squares(&design[..2]).is_none());
        let aliased: Vec<Vec<f64>> = x.iter().map(|r| vec![1.0, r[1], r[1]]).collect();
        assert!(least_squares(&aliased).is_none());
    }
}
