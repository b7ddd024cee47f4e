//! [`Results`] from the raw rows: one row per (case, arm, repeat), aggregated into the matrix.

use std::collections::HashMap;

use super::{CaseMatrix, MAX_SCORE, Results, Rows, arm_order};
use crate::error::{Error, Result, Row};
use crate::io::arms::Arms;
use crate::io::cases::Cases;
use crate::io::table::{self, Col, Kind, TableFile, polars_unreadable};
use crate::stats::moments;

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
