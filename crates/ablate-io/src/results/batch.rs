//! One batch of results rows, decoded and checked: its case and arm codes, scores, tokens and
//! passes, the runs of one cell it holds ([`Batch::summarise`]), and the problems found in it
//! ([`Problems`]); and the arm labels of a whole file ([`ArmLabels`]). [`super::fold::Fold`]
//! folds the batches into the matrix.

use std::collections::HashMap;
use std::path::Path;

use super::MAX_SCORE;
use super::fold::first_appearance;
use crate::error::{Error, Row};
use crate::io::arms::Arms;
use crate::io::cases::Cases;
use crate::io::table::check_id;
use crate::stats::moments::{mean_and_m2, mean_and_m2_of_four};
use crate::text::float_text;

/// A row's case or arm that could not be resolved (null or unknown): the row is not folded.
pub(super) const NONE: u32 = u32::MAX;

/// Text values stored end to end in one buffer: a row group's dictionary of 200,000 case ids is
/// one allocation, not 200,000.
#[derive(Debug, Default, Clone)]
pub(super) struct Strings {
    text: String,
    /// Where each value ends in `text`.
    ends: Vec<usize>,
}

impl Strings {
    /// An empty list with room for `values` values of `bytes` bytes in all.
    pub fn with_capacity(values: usize, bytes: usize) -> Self {
        Strings {
            text: String::with_capacity(bytes),
            ends: Vec::with_capacity(values),
        }
    }

    /// Appends a value.
    pub fn push(&mut self, value: &str) {
        self.text.push_str(value);
        self.ends.push(self.text.len());
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Value `i` (panics when out of range, as indexing does).
    pub fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }
}

impl<'a> FromIterator<&'a str> for Strings {
    fn from_iter<I: IntoIterator<Item = &'a str>>(values: I) -> Self {
        let mut out = Strings::default();
        for v in values {
            out.push(v);
        }
        out
    }
}

/// One slice of the results' rows, ids resolved.
#[derive(Debug, Default)]
pub(super) struct Batch {
    /// The file row of the batch's first row (0-based).
    pub first_row: usize,
    /// Each row's case: its index in the cases table, or [`NONE`].
    pub case: Vec<u32>,
    /// Each row's arm, as an index into `arm_labels`, or [`NONE`].
    pub arm: Vec<u32>,
    /// The batch's arm labels in order of first appearance.
    pub arm_labels: Vec<String>,
    /// Each row's repeat.
    pub repeat: Vec<i64>,
    /// Each row's score.
    pub score: Vec<f64>,
    /// The lowest and highest score of the batch's rows, once [`Batch::check_scores`] has run
    /// (`None` before, or with no score but NaN).
    pub score_range: Option<(f64, f64)>,
    /// Each row's `tokens_in` (NaN for null), when the file has the column.
    pub tokens: Option<Vec<f64>>,
    /// Each row's `passed` flag, when the file has the column.
    pub passed: Option<Vec<bool>>,
    /// Problems found while reading the batch.
    pub problems: Problems,
    /// The batch's runs of rows of one cell, summarised ([`Batch::summarise`]).
    pub runs: Option<Vec<Run>>,
}

/// A run of a batch's consecutive rows of one (case, arm), summarised where the batch was
/// decoded (in parallel across batches), so that the fold in file order only merges runs.
#[derive(Debug, Clone, Copy)]
pub(super) struct Run {
    /// The run's first row in the batch.
    pub start: u32,
    /// One past its last row.
    pub end: u32,
    /// The scores' compensated mean and `M₂`, as [`mean_and_m2`] gives them.
    pub mean: f64,
    pub m2: f64,
    /// Rows that passed.
    pub passes: u32,
    /// The run's Σ`tokens_in` over rows that have one, added in row order from 0, and their
    /// number (0 without the column).
    pub tokens: f64,
    pub tokens_n: u32,
    /// The run's repeats as bits, when each is in 0..31 and none appears twice; else `None`,
    /// and the fold checks the run's repeats row by row.
    pub repeats: Option<u32>,
}

impl Batch {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.case.len()
    }

    /// Sets the rows' cases and arms from dictionary codes into `case_text` and `arm_text`
    /// ([`NONE`] for a null). Each dictionary entry a row uses is looked up once (a case in
    /// `cases`), never a string per row; nulls and unknown cases are noted at their first row.
    /// Cases are found with [`Cases::index_near`] from the last one found.
    pub fn set_ids(
        &mut self,
        (case, case_text): (&[u32], &Strings),
        (arm, arm_text): (&[u32], &Strings),
        cases: &Cases,
        path: &Path,
    ) {
        let first_row = self.first_row;
        if let Some(i) = case.iter().position(|c| *c == NONE) {
            self.problems
                .null(Kind::NullCase, path, "case_id", first_row + i);
        }
        let (local, used) = first_appearance(case, case_text.len());
        let mut last = 0;
        let resolved: Vec<u32> = used
            .iter()
            .map(|&(code, row)| {
                let id = case_text.get(code as usize);
                match cases.index_near(id, last) {
                    Some(index) => {
                        last = index as usize;
                        index
                    }
                    None => {
                        if let Err(e) = cases.lookup(id, path, first_row + row) {
                            self.problems.note(Kind::Id, first_row + row, e);
                        }
                        NONE
                    }
                }
            })
            .collect();
        self.case = local
            .iter()
            .map(|&l| {
                if l == NONE {
                    NONE
                } else {
                    resolved[l as usize]
                }
            })
            .collect();
        if let Some(i) = arm.iter().position(|a| *a == NONE) {
            self.problems
                .null(Kind::NullArm, path, "arm", first_row + i);
        }
        let (local, used) = first_appearance(arm, arm_text.len());
        self.arm = local;
        self.arm_labels = used
            .into_iter()
            .map(|(code, _)| arm_text.get(code as usize).to_string())
            .collect();
    }

    /// Finds the batch's runs of rows of one cell and summarises each: the scores' moments
    /// (four runs of one length at a time, [`mean_and_m2_of_four`], to the same bits as one at a
    /// time), the passes (`passed`, else a score of at least `pass_mark`) and the repeats seen.
    pub fn summarise(&mut self, pass_mark: f64) {
        let mut runs = Vec::new();
        let mut i = 0;
        while i < self.len() {
            let (case, arm) = (self.case[i], self.arm[i]);
            let mut end = i + 1;
            while end < self.len() && self.case[end] == case && self.arm[end] == arm {
                end += 1;
            }
            let passes = match &self.passed {
                Some(flags) => flags[i..end].iter().filter(|f| **f).count(),
                None => self.score[i..end]
                    .iter()
                    .filter(|s| **s >= pass_mark)
                    .count(),
            } as u32;
            let mut bits = 0u32;
            let distinct = self.repeat[i..end].iter().all(|&r| match u32::try_from(r) {
                Ok(r) if r < 32 => {
                    let fresh = bits & (1 << r) == 0;
                    bits |= 1 << r;
                    fresh
                }
                _ => false,
            });
            let (mut tokens, mut tokens_n) = (0.0, 0);
            if let Some(values) = &self.tokens {
                for &t in values[i..end].iter().filter(|t| !t.is_nan()) {
                    tokens += t;
                    tokens_n += 1;
                }
            }
            runs.push(Run {
                start: i as u32,
                end: end as u32,
                mean: 0.0,
                m2: 0.0,
                passes,
                tokens,
                tokens_n,
                repeats: distinct.then_some(bits),
            });
            i = end;
        }
        let scores = |r: &Run| &self.score[r.start as usize..r.end as usize];
        let length = |r: &Run| r.end - r.start;
        let mut k = 0;
        while k < runs.len() {
            if k + 4 <= runs.len()
                && runs[k + 1..k + 4]
                    .iter()
                    .all(|r| length(r) == length(&runs[k]))
            {
                let four = mean_and_m2_of_four([
                    scores(&runs[k]),
                    scores(&runs[k + 1]),
                    scores(&runs[k + 2]),
                    scores(&runs[k + 3]),
                ]);
                for (run, (mean, m2)) in runs[k..k + 4].iter_mut().zip(four) {
                    (run.mean, run.m2) = (mean, m2);
                }
                k += 4;
            } else {
                (runs[k].mean, runs[k].m2) = mean_and_m2(scores(&runs[k]));
                k += 1;
            }
        }
        self.runs = Some(runs);
    }

    /// Checks the scores (finite, within ±[`MAX_SCORE`]) and records the first bad one, and
    /// their range ([`Batch::score_range`]): one pass when every score is good.
    pub fn check_scores(&mut self, path: &Path) {
        let (mut lo, mut hi, mut nan) = (f64::INFINITY, f64::NEG_INFINITY, false);
        for &s in &self.score {
            lo = lo.min(s);
            hi = hi.max(s);
            nan |= s.is_nan();
        }
        self.score_range = (lo <= hi).then_some((lo, hi));
        if !nan && lo >= -MAX_SCORE && hi <= MAX_SCORE {
            return;
        }
        type Check = (Kind, fn(f64) -> bool, String, &'static str);
        let checks: [Check; 2] = [
            (
                Kind::NonFinite,
                |s| !s.is_finite(),
                "scores must be finite numbers".into(),
                "score failed calls (e.g. 0) instead of writing NaN, or drop the row",
            ),
            // Squares of scores this large overflow the variance sums: a scale, not a score.
            (
                Kind::TooLarge,
                |s| s.abs() > MAX_SCORE,
                format!("scores beyond ±{MAX_SCORE:e} overflow the variance sums"),
                "put scores on a bounded scale (0 to 1, or 0 to 100) before the analysis",
            ),
        ];
        for (kind, bad, problem, fix) in checks {
            if let Some(i) = self.score.iter().position(|s| bad(*s)) {
                let row = self.first_row + i;
                self.problems.note(
                    kind,
                    row,
                    Error::BadValue {
                        path: path.to_path_buf(),
                        column: "score".into(),
                        row: Row::at(row),
                        value: float_text(self.score[i]),
                        problem,
                        fix: fix.into(),
                    },
                );
            }
        }
    }
}

/// The kinds of problem, in the order they are reported: the first kind found anywhere in the
/// file wins, and within a kind the first row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    /// A null case_id.
    NullCase,
    /// A null arm.
    NullArm,
    /// A null repeat.
    NullRepeat,
    /// A null score.
    NullScore,
    /// A NaN or infinite score.
    NonFinite,
    /// A score beyond ±[`MAX_SCORE`].
    TooLarge,
    /// A case not in the cases table, or an arm not in the arms table or with control characters.
    Id,
    /// A `tokens_in` that is negative or above 10¹².
    BadTokens,
    /// A null `passed`.
    NullPassed,
}

const KINDS: usize = Kind::NullPassed as usize + 1;

/// The first problem of each [`Kind`]: its row and its error.
#[derive(Debug, Default)]
pub(super) struct Problems {
    pub first: [Option<(usize, Error)>; KINDS],
}

impl Problems {
    /// Records a problem unless one of its kind was found at an earlier row.
    pub fn note(&mut self, kind: Kind, row: usize, error: Error) {
        let slot = &mut self.first[kind as usize];
        if slot.as_ref().is_none_or(|(r, _)| row < *r) {
            *slot = Some((row, error));
        }
    }

    /// Records a null at `row` in one of the required columns.
    pub fn null(&mut self, kind: Kind, path: &Path, column: &str, row: usize) {
        self.note(
            kind,
            row,
            Error::BadValue {
                path: path.to_path_buf(),
                column: column.into(),
                row: Row::at(row),
                value: "null".into(),
                problem: "a value is required here".into(),
                fix: "fill in the missing value or drop the row".into(),
            },
        );
    }

    pub fn merge(&mut self, other: Problems) {
        for (kind, found) in other.first.into_iter().enumerate() {
            if let Some((row, error)) = found {
                let slot = &mut self.first[kind];
                if slot.as_ref().is_none_or(|(r, _)| row < *r) {
                    *slot = Some((row, error));
                }
            }
        }
    }

    /// The problem to report: the first kind, its first row.
    pub fn into_error(self) -> Option<Error> {
        self.first.into_iter().flatten().next().map(|(_, e)| e)
    }
}

/// A duplicate (case, arm, repeat): the later row and its key.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Duplicate {
    /// The file row that repeats a key.
    pub row: usize,
    /// The key: case index, arm label, repeat.
    pub case: u32,
    /// The arm's label.
    pub arm: String,
    /// The repeat.
    pub repeat: i64,
}

/// The arms of a results file, found before its rows are folded: labels in order of first
/// appearance, each checked (against the arms table, and for control characters) at its first
/// row.
#[derive(Debug, Default)]
pub(super) struct ArmLabels {
    /// Labels in order of first appearance.
    pub labels: Vec<String>,
    index: HashMap<String, usize>,
    /// Problems with the labels.
    pub problems: Problems,
}

impl ArmLabels {
    /// Adds the labels of the next batch (in file order), each with its file row.
    pub fn add(&mut self, batch: Vec<(String, usize)>, path: &Path, arms_table: Option<&Arms>) {
        for (label, row) in batch {
            if self.index.contains_key(&label) {
                continue;
            }
            if let Some(table) = arms_table
                && table.get(&label).is_none()
            {
                self.problems.note(
                    Kind::Id,
                    row,
                    Error::BadValue {
                        path: path.to_path_buf(),
                        column: "arm".into(),
                        row: Row::at(row),
                        value: format!("\"{label}\""),
                        problem: format!("this arm is not in {}", table.path.display()),
                        fix: "add a row for it to the arms table (with the units it removed)"
                            .into(),
                    },
                );
            } else if let Err(e) = check_id(path, "arm", row, &label) {
                self.problems.note(Kind::Id, row, e);
            }
            self.index.insert(label.clone(), self.labels.len());
            self.labels.push(label);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch of `scores` from file row 10, checked.
    fn checked(scores: &[f64]) -> Batch {
        let mut b = Batch {
            first_row: 10,
            score: scores.to_vec(),
            ..Batch::default()
        };
        b.check_scores(Path::new("results.csv"));
        b
    }

    /// The first problem's text, if any.
    fn problem(b: Batch) -> Option<String> {
        b.problems.into_error().map(|e| e.to_string())
    }

    #[test]
    fn check_scores_keeps_the_range_and_finds_the_first_bad_score() {
        let good = checked(&[0.5, 1.5, -0.25]);
        assert_eq!(good.score_range, Some((-0.25, 1.5)));
        assert!(problem(good).is_none());
        let empty = checked(&[]);
        assert_eq!(empty.score_range, None);
        assert!(problem(empty).is_none());
        // A NaN among good scores: the range of the good ones, and the NaN's row.
        let nan = checked(&[0.5, f64::NAN, 0.75]);
        assert_eq!(nan.score_range, Some((0.5, 0.75)));
        let text = problem(nan).expect("a NaN is a problem");
        assert!(text.contains("finite"), "{text}");
        assert!(checked(&[f64::NAN]).score_range.is_none());
        for bad in [f64::INFINITY, f64::NEG_INFINITY, 1e101, -1e101] {
            assert!(problem(checked(&[0.5, bad])).is_some(), "{bad}");
        }
    }
}
