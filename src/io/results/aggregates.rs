//! [`Results`] from an engine's reduction (`ablate sql`, `--from-aggregates`): one row per
//! (case, arm) with the sums the matrix needs, each checked against what scores could give.

use std::collections::HashMap;

use super::{CaseMatrix, MAX_SCORE, Results, arm_order};
use crate::error::{Error, Result, Row};
use crate::io::arms::Arms;
use crate::io::cases::Cases;
use crate::io::table::{self, Col, Kind, TableFile, polars_unreadable};

impl Results {
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
