//! What each arm of the sweep changes case by case: the cases it loses and gains, by slice, and
//! its churn.

use std::collections::BTreeMap;

use crate::analysis::paired::{self, Paired, PairedArm};
use crate::io::Experiment;

/// The cases an arm loses (pass in the baseline, fail in the arm) and gains, the lost ones by
/// slice, whether every pair is a single 0/1 (or pass/fail) outcome, as McNemar's test needs,
/// and the arm's churn ([`paired::churn`]).
pub(super) struct Changes {
    pub(super) lost: usize,
    pub(super) gained: usize,
    pub(super) lost_by_slice: BTreeMap<String, usize>,
    pub(super) binary: bool,
    pub(super) churn: Option<usize>,
}

impl Changes {
    /// The changes of every arm in `arms` (whose paired cases are `pairs`), in one pass over the
    /// per-case matrix, row by row as it is laid out.
    pub(super) fn all(
        exp: &Experiment,
        paired: &Paired,
        pairs: &[&PairedArm],
        arms: &[usize],
        pass_mark: f64,
    ) -> Vec<Changes> {
        let m = &exp.results.matrix;
        let base = paired.baseline;
        let slice = exp.cases.slice();
        let k = arms.len();
        let (mut lost, mut gained, mut binary) = (vec![0; k], vec![0; k], vec![true; k]);
        let (mut churned, mut repeated) = (vec![0; k], vec![false; k]);
        // Counted by borrowed name; owned names only for the slices that lost a case.
        let mut lost_by_slice: Vec<BTreeMap<&str, usize>> = vec![BTreeMap::new(); k];
        // Each arm's next paired case (pairs list the cases present, in order).
        let mut next = vec![0; k];
        let zero_one = |x: f64| x == 0.0 || x == 1.0;
        for (pos, &c) in paired.cases.iter().enumerate() {
            let base_cell = m.cell(c, base);
            let pb = m.case_passes(base_cell, pass_mark);
            for (i, &a) in arms.iter().enumerate() {
                let cell = m.cell(c, a);
                if let Some(churns) = paired::cell_churns(m, cell) {
                    repeated[i] = true;
                    churned[i] += usize::from(churns);
                }
                let p = &pairs[i];
                let j = next[i];
                if p.pos.get(j) != Some(&pos) {
                    continue;
                }
                next[i] += 1;
                let pa = m.case_passes(cell, pass_mark);
                if pb && !pa {
                    lost[i] += 1;
                    if let Some(v) = slice {
                        let name = v[c].as_deref().unwrap_or("(no slice)");
                        *lost_by_slice[i].entry(name).or_insert(0) += 1;
                    }
                }
                gained[i] += usize::from(!pb && pa);
                let single = m.repeats[base_cell] == 1 && m.repeats[cell] == 1;
                // Paired binary outcomes: the harness's pass/fail when results carry it, else
                // 0/1 scores.
                binary[i] &=
                    single && (m.pass_flags || (zero_one(p.base[j]) && zero_one(p.arm[j])));
            }
        }
        (0..k)
            .map(|i| Changes {
                lost: lost[i],
                gained: gained[i],
                lost_by_slice: lost_by_slice[i]
                    .iter()
                    .map(|(name, n)| (name.to_string(), *n))
                    .collect(),
                binary: binary[i],
                churn: repeated[i].then_some(churned[i]),
            })
            .collect()
    }
}
