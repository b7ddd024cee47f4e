//! The cases behind each arm's drop, for the report's drill-down: the main-set cases an arm
//! loses (pass in the baseline, fail in the arm) and gains (the reverse), each with its slice,
//! cluster and the two case means — what a reviewer opens first.
//!
//! "Pass" is [`crate::io::CaseMatrix::case_passes`], the rule `sweep` counts `lost_cases` and
//! `gained_cases` by, so the drill-down's totals are the sweep's. Lists are capped at
//! [`CASES_PER_ARM`] per direction (the totals are not), so the page stays a bounded size.

use serde::Serialize;

use crate::analysis::paired::{CaseSet, Paired};
use crate::io::Experiment;

/// Most cases listed per arm and direction (lost, gained); the totals count them all.
pub const CASES_PER_ARM: usize = 25;

/// One case an arm loses or gains.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ChangedCase {
    /// The case id.
    pub case_id: String,
    /// Its slice, when cases have one.
    pub slice: Option<String>,
    /// Its cluster, when cases have one.
    pub cluster: Option<String>,
    /// Its mean score in the baseline (over repeats).
    pub baseline_score: f64,
    /// Its mean score in the arm.
    pub arm_score: f64,
}

/// The cases one arm loses and gains.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ArmCases {
    /// The arm.
    pub arm: String,
    /// Cases lost, in case order, at most [`CASES_PER_ARM`].
    pub lost: Vec<ChangedCase>,
    /// Cases gained, in case order, at most [`CASES_PER_ARM`].
    pub gained: Vec<ChangedCase>,
    /// Every case lost (the sweep's `lost_cases`).
    pub lost_total: usize,
    /// Every case gained (the sweep's `gained_cases`).
    pub gained_total: usize,
}

/// The drill-down of every arm but the baseline, in the results' arm order.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Drill {
    /// The cap on each list.
    pub cases_per_arm: usize,
    /// One entry per arm.
    pub arms: Vec<ArmCases>,
}

/// The main-set cases each arm loses and gains, in one pass over the per-case matrix.
pub fn drill(exp: &Experiment) -> Drill {
    let m = &exp.results.matrix;
    let paired = Paired::new(exp, CaseSet::Main);
    let base = paired.baseline;
    let pass_mark = exp.manifest.pass_mark;
    let slice = exp.cases.slice();
    let cluster = exp.cases.cluster.as_ref();
    let arms: Vec<usize> = (0..m.n_arms).filter(|&a| a != base).collect();
    let mut out: Vec<ArmCases> = arms
        .iter()
        .map(|&a| ArmCases {
            arm: exp.results.arms[a].clone(),
            lost: Vec::new(),
            gained: Vec::new(),
            lost_total: 0,
            gained_total: 0,
        })
        .collect();
    let case = |c: usize, cell: usize| ChangedCase {
        case_id: exp.cases.ids[c].clone(),
        slice: slice.and_then(|s| s[c].clone()),
        cluster: cluster.map(|v| v[c].clone()),
        baseline_score: m.mean[m.cell(c, base)],
        arm_score: m.mean[cell],
    };
    for &c in &paired.cases {
        let pb = m.case_passes(m.cell(c, base), pass_mark);
        for (o, &a) in out.iter_mut().zip(&arms) {
            if !m.present(c, a) {
                continue;
            }
            let cell = m.cell(c, a);
            let pa = m.case_passes(cell, pass_mark);
            let (list, total) = match (pb, pa) {
                (true, false) => (&mut o.lost, &mut o.lost_total),
                (false, true) => (&mut o.gained, &mut o.gained_total),
                _ => continue,
            };
            *total += 1;
            if list.len() < CASES_PER_ARM {
                list.push(case(c, cell));
            }
        }
    }
    Drill {
        cases_per_arm: CASES_PER_ARM,
        arms: out,
    }
}
