use crate::io::arms::Arms;

mod aggregates;
mod batch;
mod decode;
mod fold;
mod pages;
mod raw;

pub use ablate_core::data::results::*;

use crate::error::Result;
use crate::io::cases::Cases;
use crate::io::table::TableFile;

/// Reading the `results` table into the case × arm matrix of [`Results`], from the rows or from
/// an engine's aggregates.
pub trait ResultsLoad {
    /// Reads `results`, checks every row against `cases` (and `arms`, when there is an arms
    /// table), and folds the rows into the case × arm matrix. Arms are ordered as in the arms
    /// table, else by first appearance.
    ///
    /// Memory is the matrix plus a few row groups in flight, whatever the row count.
    ///
    /// # Errors
    /// Missing or mistyped columns; then, first kind first and within a kind the first row: null
    /// case_id, arm, repeat or score; NaN or infinite scores; scores beyond ±1e100; case ids
    /// absent from `cases` and arms absent from `arms`; negative `tokens_in`; null `passed`; and,
    /// when nothing else is wrong, the first row that repeats a (case_id, arm, repeat).
    fn load(
        file: &TableFile,
        cases: &Cases,
        pass_mark: f64,
        arms_table: Option<&Arms>,
    ) -> Result<Results>;

    /// Builds the matrix from an aggregates file, the output of `ablate sql` run in an engine
    /// (see the module `aggregates` for what each row must satisfy).
    ///
    /// # Errors
    /// Missing or mistyped columns; nulls; non-finite sums; counts below 1 or passes above
    /// repeats; sums no scores could give; a pass_mark other than the experiment's; case ids
    /// absent from `cases`; arms absent from `arms`.
    fn from_aggregates(
        file: &TableFile,
        cases: &Cases,
        pass_mark: f64,
        score_range: Option<(f64, f64)>,
        arms_table: Option<&Arms>,
    ) -> Result<Results>;
}

impl ResultsLoad for Results {
    fn load(
        file: &TableFile,
        cases: &Cases,
        pass_mark: f64,
        arms_table: Option<&Arms>,
    ) -> Result<Results> {
        raw::load(file, cases, pass_mark, arms_table)
    }

    fn from_aggregates(
        file: &TableFile,
        cases: &Cases,
        pass_mark: f64,
        score_range: Option<(f64, f64)>,
        arms_table: Option<&Arms>,
    ) -> Result<Results> {
        aggregates::from_aggregates(file, cases, pass_mark, score_range, arms_table)
    }
}

/// Largest score magnitude accepted: its square and a million-case sum of squares stay finite.
pub const MAX_SCORE: f64 = 1e100;

/// The matrix's arm order: the arms table's order, then arms it lacks by first appearance.
fn arm_order(arms_table: Option<&Arms>, seen: &[String]) -> Vec<String> {
    let mut arms: Vec<String> = arms_table
        .map(|t| t.labels())
        .unwrap_or_default()
        .into_iter()
        .filter(|a| seen.contains(a))
        .collect();
    for a in seen {
        if !arms.contains(a) {
            arms.push(a.clone());
        }
    }
    arms
}

/// The highest repeat number each (case_id, arm) of the results table holds, for the cells in
/// `cells` (others are left out): what `next` continues from, since an import numbers Inspect's
/// epochs 1..K while a table written by hand may number 0..K−1. One streamed pass.
///
/// # Errors
/// The table cannot be read.
pub fn last_repeats(
    file: &TableFile,
    cells: &std::collections::HashSet<(String, String)>,
) -> Result<std::collections::HashMap<(String, String), i64>> {
    use polars::prelude::*;
    let lf = crate::io::table::scan(file, &["case_id", "arm"])?
        .select([
            col("case_id").cast(DataType::String),
            col("arm").cast(DataType::String),
            col("repeat").cast(DataType::Int64),
        ])
        .group_by([col("case_id"), col("arm")])
        .agg([col("repeat").max()]);
    let df = crate::io::table::collect_streaming(lf, &file.path)?;
    let unreadable = |e| crate::io::table::polars_unreadable(&file.path, e);
    let cases = df
        .column("case_id")
        .and_then(|c| c.str().cloned())
        .map_err(unreadable)?;
    let arms = df
        .column("arm")
        .and_then(|c| c.str().cloned())
        .map_err(unreadable)?;
    let repeats = df
        .column("repeat")
        .and_then(|c| c.i64().cloned())
        .map_err(unreadable)?;
    let mut out = std::collections::HashMap::new();
    for ((case, arm), repeat) in cases.iter().zip(arms.iter()).zip(repeats.iter()) {
        if let (Some(case), Some(arm), Some(repeat)) = (case, arm, repeat) {
            let key = (case.to_string(), arm.to_string());
            if cells.contains(&key) {
                out.insert(key, repeat);
            }
        }
    }
    Ok(out)
}
