//! The cases behind each arm's drop, for the report's drill-down: the main-set cases an arm
//! loses (pass in the baseline, fail in the arm) and gains (the reverse), each with its slice,
//! cluster and the two case means — what a reviewer opens first.
//!
//! "Pass" is [`crate::io::CaseMatrix::case_passes`], the rule `sweep` counts `lost_cases` and
//! `gained_cases` by, so the drill-down's totals are the sweep's. Lists are capped at
//! [`CASES_PER_ARM`] per direction (the totals are not), and with a `samples` table each listed
//! case carries its input and the two outputs (baseline and arm, their first repeat), each cut
//! to [`TEXT_CHARS`] characters, so the page stays a bounded size.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::paired::{CaseSet, Paired};
use crate::io::Experiment;
use crate::io::samples::SampleText;

/// Most cases listed per arm and direction (lost, gained); the totals count them all.
pub const CASES_PER_ARM: usize = 25;

/// Most characters of a sample's input or output shown; longer text is cut with "…".
pub const TEXT_CHARS: usize = 600;

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
    /// The input of its baseline sample (else the arm's), cut to [`TEXT_CHARS`]; with a
    /// `samples` table.
    pub input: Option<String>,
    /// The baseline's output, cut to [`TEXT_CHARS`].
    pub baseline_output: Option<String>,
    /// The arm's output, cut to [`TEXT_CHARS`].
    pub arm_output: Option<String>,
    /// Where the arm's sample came from (else the baseline's): log file and sample id.
    pub source: Option<String>,
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
    /// The baseline arm.
    pub baseline_arm: String,
    /// The cap on each list.
    pub cases_per_arm: usize,
    /// The cap on each sample text, in characters.
    pub text_chars: usize,
    /// Whether the listed cases carry their samples' text (the experiment has a `samples`
    /// table).
    pub samples: bool,
    /// One entry per arm.
    pub arms: Vec<ArmCases>,
}

impl Drill {
    /// The (case_id, arm) pairs whose samples the listed cases show: each listed case in the
    /// baseline and in its arm, each once.
    pub fn wanted(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .arms
            .iter()
            .flat_map(|a| {
                a.lost.iter().chain(&a.gained).flat_map(|c| {
                    [
                        (c.case_id.clone(), self.baseline_arm.clone()),
                        (c.case_id.clone(), a.arm.clone()),
                    ]
                })
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Fills each listed case's input and outputs from `texts` (by case_id and arm), each cut
    /// to [`TEXT_CHARS`].
    pub fn with_samples(mut self, texts: &BTreeMap<(String, String), SampleText>) -> Drill {
        let cut = |t: &String| crate::text::cut_chars(t, TEXT_CHARS);
        for a in &mut self.arms {
            for c in a.lost.iter_mut().chain(a.gained.iter_mut()) {
                let base = texts.get(&(c.case_id.clone(), self.baseline_arm.clone()));
                let arm = texts.get(&(c.case_id.clone(), a.arm.clone()));
                c.input = base
                    .and_then(|s| s.input.as_ref())
                    .or_else(|| arm.and_then(|s| s.input.as_ref()))
                    .map(cut);
                c.baseline_output = base.and_then(|s| s.output.as_ref()).map(cut);
                c.arm_output = arm.and_then(|s| s.output.as_ref()).map(cut);
                c.source = arm
                    .and_then(|s| s.source.clone())
                    .or_else(|| base.and_then(|s| s.source.clone()));
            }
        }
        self.samples = true;
        self
    }
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
        input: None,
        baseline_output: None,
        arm_output: None,
        source: None,
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
        baseline_arm: exp.results.arms[base].clone(),
        cases_per_arm: CASES_PER_ARM,
        text_chars: TEXT_CHARS,
        samples: false,
        arms: out,
    }
}

#[cfg(test)]
mod tests {

    use crate::text::cut_chars;

    #[test]
    fn long_text_is_cut_to_the_cap_with_an_ellipsis() {
        assert_eq!(cut_chars("short", 10), "short");
        assert_eq!(cut_chars("abcdef", 4), "abc…");
        assert_eq!(cut_chars("日本語テキスト", 4).chars().count(), 4);
    }
}
