//! The `results` table, aggregated once into a dense case × arm matrix.
//!
//! Parquet rows are read page by page with case and arm ids as dictionary codes (CSV and unusual
//! encodings through Polars), and folded batch by batch into per-(case, arm) accumulators, so
//! memory is bounded by the matrix. Each cell then holds the number of repeats, the mean score
//! `s[i,a]` (compensated), the sample variance across repeats (two-pass per run of rows, runs
//! merged by Chan et al.) and the number of repeats that pass (score ≥ pass_mark, or the
//! optional `passed` column: the harness's own pass/fail, which then decides churn, lost and
//! gained cases and McNemar). Every later analysis reads this matrix instead of the raw rows.

use std::path::PathBuf;

/// The per-case matrix of one experiment: cell `(case, arm)` at index `case * n_arms + arm`.
#[derive(Debug, Clone)]
pub struct CaseMatrix {
    /// Number of cases (rows of the matrix, the cases table's order).
    pub n_cases: usize,
    /// Number of arms (columns).
    pub n_arms: usize,
    /// Repeats per cell; 0 when the case is missing from the arm.
    pub repeats: Vec<u32>,
    /// Mean score over the repeats, `s[i,a]`; NaN when missing.
    pub mean: Vec<f64>,
    /// Sample variance of the score across repeats; NaN with fewer than 2 repeats.
    pub var: Vec<f64>,
    /// Repeats that pass: score ≥ pass_mark, or the `passed` column's flag when results have
    /// one (`pass_flags`).
    pub passes: Vec<u32>,
    /// Whether `passes` come from a `passed` column (the harness's own pass/fail) rather than
    /// score ≥ pass_mark.
    pub pass_flags: bool,
    /// Mean `tokens_in` over the cell's repeats, when results have that column (NaN where
    /// missing or null).
    pub tokens: Option<Vec<f64>>,
    /// The lowest and highest single score read, when the results are per call (`None` from
    /// an engine's per-cell sums, `--from-aggregates`, which hold only means).
    pub score_range: Option<(f64, f64)>,
}

impl CaseMatrix {
    /// Flat index of a cell.
    pub fn cell(&self, case: usize, arm: usize) -> usize {
        case * self.n_arms + arm
    }

    /// Whether the case has results in the arm.
    pub fn present(&self, case: usize, arm: usize) -> bool {
        self.repeats[self.cell(case, arm)] > 0
    }

    /// Whether a case passes in an arm (for lost and gained cases): its mean score ≥ pass_mark,
    /// or, with the harness's own flags (`pass_flags`), at least half its repeats passed.
    pub fn case_passes(&self, cell: usize, pass_mark: f64) -> bool {
        if self.pass_flags {
            2 * self.passes[cell] >= self.repeats[cell]
        } else {
            self.mean[cell] >= pass_mark
        }
    }

    /// The range scores can take: [min(lo₀, lowest score), max(hi₀, highest score)] over every
    /// score read ([`CaseMatrix::score_range`]; over the case means where only means were read),
    /// where [lo₀, hi₀] is `declared` (experiment.toml's `score_min` and `score_max`, when it
    /// sets them), else [0, 1]: scores are taken as lying in that range unless the data shows
    /// otherwise. A single score counts, not only its case's mean: a case scored 1.5 and 0.42
    /// (mean 0.96) shows that a case's mean can reach 1.5. A paired drop then lies in
    /// [lo − hi, hi − lo].
    pub fn score_bounds(&self, declared: Option<(f64, f64)>) -> (f64, f64) {
        let (mut lo, mut hi) = declared.unwrap_or((0.0, 1.0));
        if let Some((a, b)) = self.score_range {
            lo = lo.min(a);
            hi = hi.max(b);
        }
        for (i, &x) in self.mean.iter().enumerate() {
            if self.repeats[i] > 0 && x.is_finite() {
                lo = lo.min(x);
                hi = hi.max(x);
            }
        }
        (lo, hi)
    }
}

/// The validated results table.
#[derive(Debug, Clone)]
pub struct Results {
    /// Where it came from.
    pub path: PathBuf,
    /// Number of rows read.
    pub rows: usize,
    /// Arm labels; an arm's index here is its column in the matrix.
    pub arms: Vec<String>,
    /// The per-case matrix.
    pub matrix: CaseMatrix,
}

impl Results {
    /// Index of an arm label.
    pub fn arm_index(&self, arm: &str) -> Option<usize> {
        self.arms.iter().position(|a| a == arm)
    }
}
