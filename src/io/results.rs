//! The `results` table, aggregated once into a dense case × arm matrix.
//!
//! Rows are read through a projected lazy scan, case and arm ids are encoded to integers once,
//! and rows are bucketed per (case, arm) cell with a counting sort (O(rows)). Each cell then holds
//! the number of repeats, the mean score `s[i,a]` (compensated), the sample variance across repeats
//! and the number of repeats that pass (score ≥ pass_mark, or the optional `passed` column: the
//! harness's own pass/fail, which then decides churn, lost and gained cases and McNemar). Every
//! later analysis reads this matrix instead of the raw rows.

use std::collections::HashMap;

use std::path::PathBuf;

use crate::error::{Error, Result, Row};
use crate::io::arms::Arms;
use crate::io::cases::Cases;
use crate::io::table::{self, Col, Kind, TableFile, polars_unreadable};
use crate::stats::moments;

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

/// Largest score magnitude accepted: its square and a million-case sum of squares stay finite.
pub const MAX_SCORE: f64 = 1e100;

impl Results {
    /// Reads `results`, checks every row against `cases` (and `arms`, when there is an arms table),
    /// and aggregates the case × arm matrix. Arms are ordered as in the arms table, else by first
    /// appearance.
    ///
    /// # Errors
    /// Missing or mistyped columns; null values; NaN or infinite scores; negative `tokens_in`;
    /// case ids absent from `cases`; arms absent from `arms`; duplicate (case_id, arm, repeat) rows.
    pub fn load(
        file: &TableFile,
        cases: &Cases,
        pass_mark: f64,
        arms_table: Option<&Arms>,
    ) -> Result<Results> {
        let mut t = table::read_coded(
            file,
            &[
                Col::req("case_id", Kind::Str),
                Col::req("arm", Kind::Str),
                Col::req("repeat", Kind::Int),
                Col::req("score", Kind::Float),
                Col::opt("tokens_in", Kind::Int),
                Col::opt("passed", Kind::Bool),
            ],
            &["case_id", "arm"],
        )?;
        // One contiguous buffer per column, so scores and repeats are read in place, not copied.
        t.df.rechunk_mut_par();
        let path = t.path.clone();
        let n = t.height();
        let get = |name: &str| t.df.column(name).map_err(|e| polars_unreadable(&path, e));
        let case_col = get("case_id")?
            .cat32()
            .map_err(|e| polars_unreadable(&path, e))?;
        let arm_col = get("arm")?
            .cat32()
            .map_err(|e| polars_unreadable(&path, e))?;
        let (case_map, arm_map) = (case_col.get_mapping(), arm_col.get_mapping());
        let (case_codes, arm_codes) = (case_col.physical(), arm_col.physical());
        let repeat_col = get("repeat")?
            .i64()
            .map_err(|e| polars_unreadable(&path, e))?;
        let score_col = get("score")?
            .f64()
            .map_err(|e| polars_unreadable(&path, e))?;
        let null = |column: &str, row: usize| Error::BadValue {
            path: path.clone(),
            column: column.into(),
            row: Row::at(row),
            value: "null".into(),
            problem: "a value is required here".into(),
            fix: "fill in the missing value or drop the row".into(),
        };

        // Nulls first (rare), so that the hot loop below reads plain values.
        for (name, nulls, first) in [
            (
                "case_id",
                case_codes.null_count(),
                case_codes.iter().position(|v| v.is_none()),
            ),
            ("arm", arm_codes.null_count(), None),
            ("repeat", repeat_col.null_count(), None),
            ("score", score_col.null_count(), None),
        ] {
            if nulls > 0 {
                let row = first.or_else(|| match name {
                    "arm" => arm_codes.iter().position(|v| v.is_none()),
                    "repeat" => repeat_col.iter().position(|v| v.is_none()),
                    _ => score_col.iter().position(|v| v.is_none()),
                });
                return Err(null(name, row.unwrap_or(0)));
            }
        }
        let scores: &[f64] = score_col
            .cont_slice()
            .map_err(|e| polars_unreadable(&path, e))?;
        if let Some(row) = scores.iter().position(|s| !s.is_finite()) {
            return Err(Error::BadValue {
                path: path.clone(),
                column: "score".into(),
                row: Row::at(row),
                value: crate::io::table::float_text(scores[row]),
                problem: "scores must be finite numbers".into(),
                fix: "score failed calls (e.g. 0) instead of writing NaN, or drop the row".into(),
            });
        }
        // Squares of scores this large overflow the variance sums: a scale, not a score.
        if let Some(row) = scores.iter().position(|s| s.abs() > MAX_SCORE) {
            return Err(Error::BadValue {
                path: path.clone(),
                column: "score".into(),
                row: Row::at(row),
                value: crate::io::table::float_text(scores[row]),
                problem: format!("scores beyond ±{MAX_SCORE:e} overflow the variance sums"),
                fix: "put scores on a bounded scale (0 to 1, or 0 to 100) before the analysis"
                    .into(),
            });
        }
        let repeats: &[i64] = repeat_col
            .cont_slice()
            .map_err(|e| polars_unreadable(&path, e))?;

        // Encode ids: each distinct dictionary code is looked up once (a case in `cases`, an arm
        // in the arms table), then every row is one array index; no string per row.
        let case_codes = case_codes.rechunk();
        let arm_codes = arm_codes.rechunk();
        let case_codes: &[u32] = case_codes
            .cont_slice()
            .map_err(|e| polars_unreadable(&path, e))?;
        let arm_codes: &[u32] = arm_codes
            .cont_slice()
            .map_err(|e| polars_unreadable(&path, e))?;
        let text = |map: &polars::prelude::CategoricalMapping, code: u32| -> String {
            map.cat_to_str(code).unwrap_or_default().to_string()
        };
        const UNSEEN: u32 = u32::MAX;
        let mut case_of = vec![UNSEEN; case_map.num_cats_upper_bound()];
        let mut arm_of = vec![UNSEEN; arm_map.num_cats_upper_bound()];
        let mut arm_seen: Vec<String> = Vec::new();
        let mut case_code = Vec::with_capacity(n);
        let mut arm_code = Vec::with_capacity(n);
        for (row, (&c, &a)) in case_codes.iter().zip(arm_codes).enumerate() {
            let c = c as usize;
            if case_of[c] == UNSEEN {
                case_of[c] = cases.lookup(&text(case_map, c as u32), &path, row)?;
            }
            case_code.push(case_of[c]);
            let a = a as usize;
            if arm_of[a] == UNSEEN {
                let label = text(arm_map, a as u32);
                if let Some(table) = arms_table
                    && table.get(&label).is_none()
                {
                    return Err(Error::BadValue {
                        path: path.clone(),
                        column: "arm".into(),
                        row: Row::at(row),
                        value: format!("\"{label}\""),
                        problem: format!("this arm is not in {}", table.path.display()),
                        fix: "add a row for it to the arms table (with the units it removed)"
                            .into(),
                    });
                }
                table::check_id(&path, "arm", row, &label)?;
                arm_of[a] = arm_seen.len() as u32;
                arm_seen.push(label);
            }
            arm_code.push(arm_of[a]);
        }

        let arms = arm_order(arms_table, &arm_seen);
        let position: HashMap<&str, u32> = arms
            .iter()
            .enumerate()
            .map(|(i, a)| (a.as_str(), i as u32))
            .collect();
        let remap: Vec<u32> = arm_seen.iter().map(|a| position[a.as_str()]).collect();

        // tokens_in per row (NaN where null), averaged per cell below.
        let tokens: Option<Vec<f64>> = if t.has("tokens_in") {
            let col = get("tokens_in")?
                .i64()
                .map_err(|e| polars_unreadable(&path, e))?;
            let mut out = Vec::with_capacity(n);
            for (row, v) in col.iter().enumerate() {
                match v {
                    Some(v) if v < 0 => {
                        return Err(Error::BadValue {
                            path: path.clone(),
                            column: "tokens_in".into(),
                            row: Row::at(row),
                            value: v.to_string(),
                            problem: "must not be negative".into(),
                            fix: "token counts are zero or more; fix them where the results are made (the harness, or the script that wrote this file)".into(),
                        });
                    }
                    Some(v) => out.push(v as f64),
                    None => out.push(f64::NAN),
                }
            }
            Some(out)
        } else {
            None
        };
        // The harness's own pass/fail per row, when results carry it (no nulls).
        let passed: Option<Vec<bool>> = if t.has("passed") {
            let col = get("passed")?
                .bool()
                .map_err(|e| polars_unreadable(&path, e))?;
            if let Some(row) = col.iter().position(|v| v.is_none()) {
                return Err(null("passed", row));
            }
            Some(col.iter().map(|v| v.unwrap_or(false)).collect())
        } else {
            None
        };
        let arm_code: Vec<u32> = arm_code.iter().map(|a| remap[*a as usize]).collect();
        let matrix = aggregate(
            &path,
            cases.len(),
            arms.len(),
            &Rows {
                case: &case_code,
                arm: &arm_code,
                repeat: repeats,
                score: scores,
                tokens: tokens.as_deref(),
                passed: passed.as_deref(),
            },
            pass_mark,
            |row| {
                (
                    text(case_map, case_codes[row]),
                    text(arm_map, arm_codes[row]),
                )
            },
        )?;
        Ok(Results {
            path,
            rows: n,
            arms,
            matrix,
        })
    }

    /// Builds the matrix from an aggregates file, the output of `ablate sql` run in an engine:
    /// one row per (case_id, arm) with `repeats`, `sum_score`, `sum_score2`, `passes`,
    /// `pass_mark` and optionally `sum_tokens_in`, `n_tokens_in`. Rows of the same cell add (the
    /// query's result over several partitions or days, stacked). A cell's mean is Σx/n and its
    /// variance (Σx² − (Σx)²/n)/(n − 1), floored at 0 against rounding.
    ///
    /// Every row is checked against what `k` scores could give, as the direct path checks each
    /// score: Σx² ≥ 0 and (Σx)² ≤ k·Σx² (Cauchy–Schwarz: no negative variance beyond rounding),
    /// |Σx| ≤ k·[`MAX_SCORE`]; with a score range declared in experiment.toml (`score_range`),
    /// Σx between what p passes (each ≥ pass_mark) and k − p fails (each below it) can reach;
    /// token sums not negative and counted over at most `repeats` calls. Counts add with checked
    /// arithmetic, and a cell holds at most 2^32 − 1 repeats.
    ///
    /// # Errors
    /// Missing or mistyped columns; nulls; non-finite sums; counts below 1 or passes above
    /// repeats; sums no scores could give; a pass_mark other than the experiment's; case ids
    /// absent from `cases`; arms absent from `arms`.
    pub fn from_aggregates(
        file: &TableFile,
        cases: &Cases,
        pass_mark: f64,
        score_range: Option<(f64, f64)>,
        arms_table: Option<&Arms>,
    ) -> Result<Results> {
        let t = table::read(
            file,
            &[
                Col::req("case_id", Kind::Str),
                Col::req("arm", Kind::Str),
                Col::req("repeats", Kind::Int),
                Col::req("sum_score", Kind::Float),
                Col::req("sum_score2", Kind::Float),
                Col::req("passes", Kind::Int),
                Col::req("pass_mark", Kind::Float),
                Col::opt("sum_tokens_in", Kind::Float),
                Col::opt("n_tokens_in", Kind::Int),
            ],
        )?;
        let path = t.path.clone();
        let n = t.height();
        let bad = |column: &str, row: usize, value: String, problem: &str| Error::BadValue {
            path: path.clone(),
            column: column.into(),
            row: Row::at(row),
            value,
            problem: problem.into(),
            fix: "write this file with the query `ablate sql` prints, unchanged".into(),
        };
        let strs = |name: &str| -> Result<Vec<Option<String>>> {
            Ok(t.df
                .column(name)
                .and_then(|c| c.str().cloned())
                .map_err(|e| polars_unreadable(&path, e))?
                .iter()
                .map(|v| v.map(str::to_string))
                .collect())
        };
        let ints = |name: &str| -> Result<Vec<Option<i64>>> {
            Ok(t.df
                .column(name)
                .and_then(|c| c.i64().cloned())
                .map_err(|e| polars_unreadable(&path, e))?
                .iter()
                .collect())
        };
        let floats = |name: &str| -> Result<Vec<Option<f64>>> {
            Ok(t.df
                .column(name)
                .and_then(|c| c.f64().cloned())
                .map_err(|e| polars_unreadable(&path, e))?
                .iter()
                .collect())
        };
        let case_ids = strs("case_id")?;
        let arm_ids = strs("arm")?;
        let repeats = ints("repeats")?;
        let s1 = floats("sum_score")?;
        let s2 = floats("sum_score2")?;
        let passes = ints("passes")?;
        let marks = floats("pass_mark")?;
        let tokens = if t.has("sum_tokens_in") && t.has("n_tokens_in") {
            Some((floats("sum_tokens_in")?, ints("n_tokens_in")?))
        } else {
            None
        };

        // Arms: the arms table's order, then the rest by first appearance.
        let mut seen: Vec<String> = Vec::new();
        for (row, a) in arm_ids.iter().enumerate() {
            let a = a
                .as_deref()
                .ok_or_else(|| bad("arm", row, "null".into(), "a value is required here"))?;
            if !seen.iter().any(|x| x == a) {
                if let Some(table) = arms_table
                    && table.get(a).is_none()
                {
                    return Err(bad(
                        "arm",
                        row,
                        format!("\"{a}\""),
                        "this arm is not in the experiment's arms table",
                    ));
                }
                table::check_id(&path, "arm", row, a)?;
                seen.push(a.to_string());
            }
        }
        let arms = arm_order(arms_table, &seen);
        let position: HashMap<&str, usize> = arms
            .iter()
            .enumerate()
            .map(|(i, a)| (a.as_str(), i))
            .collect();

        let n_arms = arms.len();
        let cells = cases.len() * n_arms;
        let (mut count, mut sum, mut sum2, mut pass) = (
            vec![0u64; cells],
            vec![0.0; cells],
            vec![0.0; cells],
            vec![0u64; cells],
        );
        let (mut tok_sum, mut tok_n) = (vec![0.0; cells], vec![0u64; cells]);
        for row in 0..n {
            let case = case_ids[row]
                .as_deref()
                .ok_or_else(|| bad("case_id", row, "null".into(), "a value is required here"))?;
            let case = cases.lookup(case, &path, row)? as usize;
            let arm = position[arm_ids[row].as_deref().unwrap_or_default()];
            let k = repeats[row].filter(|k| *k >= 1).ok_or_else(|| {
                bad(
                    "repeats",
                    row,
                    format!("{:?}", repeats[row]),
                    "every row counts at least one repeat",
                )
            })?;
            let (x1, x2) = match (s1[row], s2[row]) {
                (Some(a), Some(b)) if a.is_finite() && b.is_finite() => (a, b),
                (a, b) => {
                    return Err(bad(
                        "sum_score, sum_score2",
                        row,
                        format!("{a:?}, {b:?}"),
                        "sums must be finite numbers",
                    ));
                }
            };
            let p = passes[row].filter(|p| (0..=k).contains(p)).ok_or_else(|| {
                bad(
                    "passes",
                    row,
                    format!("{:?}", passes[row]),
                    "passes are between 0 and repeats",
                )
            })?;
            if marks[row] != Some(pass_mark) {
                return Err(Error::BadValue {
                    path: path.clone(),
                    column: "pass_mark".into(),
                    row: Row::at(row),
                    value: format!("{:?}", marks[row]),
                    problem: format!(
                        "passes were counted against this pass mark, the experiment's is {pass_mark}"
                    ),
                    fix: "rerun the query `ablate sql` prints for this experiment".into(),
                });
            }
            check_sums(k, x1, x2, p, pass_mark, score_range).map_err(|problem| {
                bad(
                    "sum_score, sum_score2, passes",
                    row,
                    format!(
                        "repeats = {k}, sum_score = {}, sum_score2 = {}, passes = {p}",
                        table::float_text(x1),
                        table::float_text(x2)
                    ),
                    &problem,
                )
            })?;
            let c = case * n_arms + arm;
            count[c] = count[c]
                .checked_add(k as u64)
                .filter(|&n| n <= u64::from(u32::MAX))
                .ok_or_else(|| {
                    bad(
                        "repeats",
                        row,
                        k.to_string(),
                        "the repeats of this (case_id, arm) add up to more than 2^32 − 1",
                    )
                })?;
            sum[c] += x1;
            sum2[c] += x2;
            pass[c] += p as u64;
            if let Some((ts, tn)) = &tokens {
                match (ts[row], tn[row]) {
                    (Some(s), Some(m)) if m > 0 => {
                        if !(s.is_finite() && s >= 0.0) || m > k {
                            return Err(bad(
                                "sum_tokens_in, n_tokens_in",
                                row,
                                format!("{}, {m}", table::float_text(s)),
                                "token sums are finite and not negative, counted over at most `repeats` calls",
                            ));
                        }
                        tok_sum[c] += s;
                        tok_n[c] += m as u64;
                    }
                    (_, Some(m)) if m < 0 => {
                        return Err(bad(
                            "n_tokens_in",
                            row,
                            m.to_string(),
                            "a count is not negative",
                        ));
                    }
                    _ => {}
                }
            }
        }
        let mut m = CaseMatrix {
            n_cases: cases.len(),
            n_arms,
            repeats: vec![0; cells],
            mean: vec![f64::NAN; cells],
            var: vec![f64::NAN; cells],
            passes: vec![0; cells],
            pass_flags: false,
            tokens: tokens.as_ref().map(|_| vec![f64::NAN; cells]),
        };
        for c in 0..cells {
            if count[c] == 0 {
                continue;
            }
            let k = count[c] as f64;
            m.repeats[c] = count[c] as u32;
            m.mean[c] = sum[c] / k;
            if count[c] >= 2 {
                m.var[c] = ((sum2[c] - sum[c] * sum[c] / k) / (k - 1.0)).max(0.0);
            }
            m.passes[c] = pass[c] as u32;
            if let Some(t) = m.tokens.as_mut()
                && tok_n[c] > 0
            {
                t[c] = tok_sum[c] / tok_n[c] as f64;
            }
        }
        Ok(Results {
            path,
            rows: count.iter().sum::<u64>() as usize,
            arms,
            matrix: m,
        })
    }

    /// Index of an arm label.
    pub fn arm_index(&self, arm: &str) -> Option<usize> {
        self.arms.iter().position(|a| a == arm)
    }
}

/// What `k` scores with `p` passes could give as Σx = `s1` and Σx² = `s2` (see
/// [`Results::from_aggregates`]); the problem in words when they could not.
fn check_sums(
    k: i64,
    s1: f64,
    s2: f64,
    p: i64,
    pass_mark: f64,
    score_range: Option<(f64, f64)>,
) -> std::result::Result<(), String> {
    let kf = k as f64;
    // Rounding in an engine's sums: relative 1e-9 of the magnitudes involved.
    let slack = |x: f64| 1e-9 * x.abs().max(1.0);
    if s2 < -slack(s2) {
        return Err("a sum of squares is not negative".into());
    }
    if s1.abs() > kf * MAX_SCORE || s2 > kf * MAX_SCORE * MAX_SCORE {
        return Err(format!(
            "scores beyond ±{MAX_SCORE:e} overflow the variance sums"
        ));
    }
    if s1 * s1 > kf * s2 + slack(kf * s2) {
        return Err(format!(
            "(Σx)² > repeats · Σx², which no {k} scores give (their variance would be negative)"
        ));
    }
    if let Some((lo, hi)) = score_range {
        let (pf, ff) = (p as f64, (k - p) as f64);
        let least = pf * pass_mark.max(lo) + ff * lo;
        let most = pf * hi + ff * pass_mark.min(hi);
        if s1 < kf * lo - slack(s1) || s1 > kf * hi + slack(s1) {
            return Err(format!(
                "the scores' sum is outside what {k} scores in [score_min, score_max] = [{lo}, {hi}] give"
            ));
        }
        if s1 < least - slack(least) || s1 > most + slack(most) {
            return Err(format!(
                "{p} passes (scores ≥ pass_mark {pass_mark}) and {} fails in [{lo}, {hi}] give a sum between {least} and {most}",
                k - p
            ));
        }
    }
    Ok(())
}

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

/// The encoded rows of a results table, column by column.
struct Rows<'a> {
    case: &'a [u32],
    arm: &'a [u32],
    repeat: &'a [i64],
    score: &'a [f64],
    tokens: Option<&'a [f64]>,
    passed: Option<&'a [bool]>,
}

/// Buckets rows by cell (counting sort) and computes each cell's statistics.
///
/// # Errors
/// A duplicate (case, arm, repeat); the error names the earliest row that repeats a key.
fn aggregate(
    path: &std::path::Path,
    n_cases: usize,
    n_arms: usize,
    rows_in: &Rows<'_>,
    pass_mark: f64,
    describe: impl Fn(usize) -> (String, String),
) -> Result<CaseMatrix> {
    let (case_code, arm_code, repeat, score) =
        (rows_in.case, rows_in.arm, rows_in.repeat, rows_in.score);
    let cells = n_cases * n_arms;
    let cell_of = |row: usize| case_code[row] as usize * n_arms + arm_code[row] as usize;
    // Each cell's rows as a range of `order`. Files usually hold each cell's repeats in one run;
    // then `order` is the identity and no sort is needed. Otherwise a counting sort builds it.
    let mut start = vec![0usize; cells];
    let mut count = vec![0usize; cells];
    let mut contiguous = true;
    let mut previous = usize::MAX;
    for row in 0..case_code.len() {
        let c = cell_of(row);
        if c != previous {
            if count[c] > 0 {
                contiguous = false;
                break;
            }
            start[c] = row;
            previous = c;
        }
        count[c] += 1;
    }
    // When each cell's rows are one run (the usual layout), a cell's rows are `start..start+count`
    // and no index is built: at 10M rows that saves a 40 MB identity vector and its page faults.
    let order: Option<Vec<u32>> = if contiguous {
        None
    } else {
        count.iter_mut().for_each(|n| *n = 0);
        for row in 0..case_code.len() {
            count[cell_of(row)] += 1;
        }
        let mut next = 0;
        for c in 0..cells {
            start[c] = next;
            next += count[c];
        }
        let mut fill = start.clone();
        let mut order = vec![0u32; case_code.len()];
        for row in 0..case_code.len() {
            let c = cell_of(row);
            order[fill[c]] = row as u32;
            fill[c] += 1;
        }
        Some(order)
    };

    let mut m = CaseMatrix {
        n_cases,
        n_arms,
        repeats: vec![0; cells],
        mean: vec![f64::NAN; cells],
        var: vec![f64::NAN; cells],
        passes: vec![0; cells],
        pass_flags: rows_in.passed.is_some(),
        tokens: rows_in.tokens.map(|_| vec![f64::NAN; cells]),
    };
    let mut duplicate: Option<(usize, usize)> = None; // (later row, earlier row)
    let mut values = Vec::new();
    let mut cell_rows: Vec<u32> = Vec::new();
    for c in 0..cells {
        if count[c] == 0 {
            continue;
        }
        let span = start[c]..start[c] + count[c];
        cell_rows.clear();
        match &order {
            None => cell_rows.extend(span.map(|r| r as u32)),
            Some(order) => cell_rows.extend_from_slice(&order[span]),
        }
        let rows = &mut cell_rows[..];
        // Rows within a cell are in file order; sort by repeat (stable) to find duplicates, unless
        // they already are (the usual case).
        if !rows.is_sorted_by_key(|r| repeat[*r as usize]) {
            rows.sort_by_key(|r| repeat[*r as usize]);
        }
        for w in rows.windows(2) {
            if repeat[w[0] as usize] == repeat[w[1] as usize] {
                let (a, b) = (w[0] as usize, w[1] as usize);
                let later = (a.max(b), a.min(b));
                if duplicate.is_none_or(|d| later.0 < d.0) {
                    duplicate = Some(later);
                }
            }
        }
        values.clear();
        values.extend(rows.iter().map(|r| score[*r as usize]));
        m.repeats[c] = values.len() as u32;
        m.mean[c] = moments::mean(&values);
        m.var[c] = moments::sample_variance(&values);
        m.passes[c] = match rows_in.passed {
            Some(flags) => rows.iter().filter(|r| flags[**r as usize]).count() as u32,
            None => values.iter().filter(|s| **s >= pass_mark).count() as u32,
        };
        if let (Some(cell_tokens), Some(t)) = (m.tokens.as_mut(), rows_in.tokens) {
            values.clear();
            values.extend(rows.iter().map(|r| t[*r as usize]).filter(|x| !x.is_nan()));
            if !values.is_empty() {
                cell_tokens[c] = moments::mean(&values);
            }
        }
    }
    if let Some((later, earlier)) = duplicate {
        let (case, arm) = describe(later);
        return Err(Error::BadValue {
            path: path.to_path_buf(),
            column: "case_id, arm, repeat".into(),
            row: Row::at(later),
            value: format!("(\"{case}\", \"{arm}\", {})", repeat[later]),
            problem: format!("duplicate row (same key as row {})", earlier + 1),
            fix: "each (case_id, arm, repeat) must appear once; number repeats 0..K-1 or drop the copy"
                .into(),
        });
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregate_computes_cells_and_finds_duplicates() {
        // 2 cases × 2 arms; case 1 has no row in arm 1.
        let case = [0, 0, 0, 1, 0];
        let arm = [0, 0, 1, 0, 1];
        let rep = [0, 1, 0, 0, 1];
        let score = [1.0, 0.0, 1.0, 0.25, 1.0];
        let tokens = [100.0, 200.0, 50.0, 10.0, f64::NAN];
        let rows = Rows {
            case: &case,
            arm: &arm,
            repeat: &rep,
            score: &score,
            tokens: Some(&tokens),
            passed: None,
        };
        let m = aggregate(std::path::Path::new("r"), 2, 2, &rows, 0.5, |_| {
            Default::default()
        })
        .unwrap();
        let t = m.tokens.as_ref().unwrap();
        assert_eq!(t[0], 150.0);
        assert_eq!(
            t[1], 50.0,
            "a null tokens_in is left out of its cell's mean"
        );
        assert_eq!(t[2], 10.0);
        assert!(t[3].is_nan(), "missing cell");
        assert_eq!(m.repeats, vec![2, 2, 1, 0]);
        assert_eq!(m.mean[0], 0.5);
        assert_eq!(m.var[0], 0.5);
        assert_eq!(m.passes, vec![1, 2, 0, 0]);
        assert!(m.mean[3].is_nan());
        assert!(!m.present(1, 1));

        let rows = Rows {
            case: &[0, 1, 0, 1],
            arm: &[0, 0, 0, 0],
            repeat: &[0, 0, 0, 0],
            score: &[1.0; 4],
            tokens: None,
            passed: None,
        };
        let dup = aggregate(std::path::Path::new("r"), 2, 2, &rows, 0.5, |_| {
            ("c".into(), "a".into())
        })
        .unwrap_err()
        .to_string();
        assert!(
            dup.contains("row 3") && dup.contains("same key as row 1"),
            "{dup}"
        );
    }
}
