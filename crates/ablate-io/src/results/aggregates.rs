//! [`Results`] from an engine's reduction (`ablate sql`, `--from-aggregates`): one row per
//! (case, arm) with the sums the matrix needs, each checked against what scores could give.

use std::collections::HashMap;
use std::path::PathBuf;

use super::{CaseMatrix, MAX_SCORE, Results, arm_order};
use crate::error::{Error, Result, Row};
use crate::io::arms::Arms;
use crate::io::cases::Cases;
use crate::io::table::{self, Col, Kind, TableFile};

/// Builds the matrix from an aggregates file, the output of `ablate sql` run in an engine:
/// one row per (case_id, arm) with `repeats`, `sum_score`, `sum_score2`, `passes`,
/// `pass_mark` and optionally `sum_tokens_in`, `n_tokens_in` and `min_score`, `max_score` (the
/// lowest and highest single score; files written before ablate's query emitted them still load,
/// and the score range is then read from the case means). Rows of the same cell add (the query's
/// result over several partitions or days, stacked), and the extremes take their minimum and
/// maximum. A cell's mean is Σx/n and its variance (Σx² − (Σx)²/n)/(n − 1), floored at 0 against
/// rounding.
///
/// Every row is checked against what `k` scores could give, as the direct path checks each
/// score: Σx² ≥ 0 and (Σx)² ≤ k·Σx² (Cauchy–Schwarz: no negative variance beyond rounding),
/// |Σx| ≤ k·[`MAX_SCORE`]; with a score range declared in experiment.toml (`score_range`),
/// Σx between what p passes (each ≥ pass_mark) and k − p fails (each below it) can reach;
/// token sums not negative and counted over at most `repeats` calls; the extremes finite, with
/// k·min ≤ Σx ≤ k·max, min = max for one repeat, min below the pass mark when a repeat fails and
/// max at or above it when one passes, and inside a declared range (a score outside it is refused,
/// as on the direct path). Counts add with checked arithmetic, and a cell holds at most 2^32 − 1
/// repeats.
///
/// # Errors
/// Missing or mistyped columns; nulls; non-finite sums; counts below 1 or passes above
/// repeats; sums no scores could give; a pass_mark other than the experiment's; case ids
/// absent from `cases`; arms absent from `arms`.
pub(super) fn from_aggregates(
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
            Col::opt("min_score", Kind::Float),
            Col::opt("max_score", Kind::Float),
        ],
    )?;
    let rows = AggregateRows::read(&t)?;
    let arms = rows.arms(arms_table)?;
    let position: HashMap<&str, usize> = arms
        .iter()
        .enumerate()
        .map(|(i, a)| (a.as_str(), i))
        .collect();
    let n_arms = arms.len();
    let mut totals = CellTotals::new(cases.len() * n_arms);
    // The lowest and highest single score over every row, when every row has them (a stack of
    // an older query's output and a newer one's is read as the older: from the case means).
    let mut extremes: Option<(f64, f64)> = None;
    let mut every_row_has_them = rows.extremes.is_some();
    for row in 0..t.height() {
        let case = rows.case_id(row)?;
        let case = cases.lookup(case, &rows.path, row)? as usize;
        let arm = position[rows.arm[row].as_deref().unwrap_or_default()];
        let sums = rows.sums(row, pass_mark, score_range)?;
        match rows.extremes(row, sums, pass_mark, score_range)? {
            Some((lo, hi)) => {
                let (a, b) = extremes.unwrap_or((lo, hi));
                extremes = Some((a.min(lo), b.max(hi)));
            }
            None => every_row_has_them = false,
        }
        totals.add(&rows, row, case * n_arms + arm, sums)?;
    }
    let calls = totals.count.iter().sum::<u64>() as usize;
    let mut matrix = totals.into_matrix(cases.len(), n_arms, rows.tokens.is_some());
    matrix.score_range = extremes.filter(|_| every_row_has_them);
    Ok(Results {
        rows: calls,
        matrix,
        path: rows.path,
        arms,
    })
}

/// The columns of an aggregates file, read once.
struct AggregateRows {
    path: PathBuf,
    case_id: Vec<Option<String>>,
    arm: Vec<Option<String>>,
    repeats: Vec<Option<i64>>,
    sum_score: Vec<Option<f64>>,
    sum_score2: Vec<Option<f64>>,
    passes: Vec<Option<i64>>,
    pass_mark: Vec<Option<f64>>,
    /// `sum_tokens_in` and `n_tokens_in`, when the file has both.
    tokens: Option<TokenColumns>,
    /// `min_score` and `max_score`, when the file has them (one without the other is refused).
    extremes: Option<ExtremeColumns>,
}

/// `min_score` and `max_score`, per row.
type ExtremeColumns = (Vec<Option<f64>>, Vec<Option<f64>>);

/// `sum_tokens_in` and `n_tokens_in`, per row.
type TokenColumns = (Vec<Option<f64>>, Vec<Option<i64>>);

/// One row's checked sums: its repeats k, Σx, Σx² and passes.
#[derive(Clone, Copy)]
struct RowSums {
    k: i64,
    sum: f64,
    sum2: f64,
    passes: i64,
}

impl AggregateRows {
    fn read(t: &table::Table) -> Result<AggregateRows> {
        Ok(AggregateRows {
            case_id: t.opt_strs("case_id")?,
            arm: t.opt_strs("arm")?,
            repeats: t.opt_ints("repeats")?,
            sum_score: t.opt_floats("sum_score")?,
            sum_score2: t.opt_floats("sum_score2")?,
            passes: t.opt_ints("passes")?,
            pass_mark: t.opt_floats("pass_mark")?,
            tokens: if t.has("sum_tokens_in") && t.has("n_tokens_in") {
                Some((t.opt_floats("sum_tokens_in")?, t.opt_ints("n_tokens_in")?))
            } else {
                None
            },
            // One of the two alone names the other as missing.
            extremes: if t.has("min_score") || t.has("max_score") {
                Some((t.opt_floats("min_score")?, t.opt_floats("max_score")?))
            } else {
                None
            },
            path: t.path.clone(),
        })
    }

    /// A bad value in `column` at `row`; the fix is to rerun the emitted query unchanged.
    fn bad(&self, column: &str, row: usize, value: String, problem: &str) -> Error {
        Error::BadValue {
            path: self.path.clone(),
            column: column.into(),
            row: Row::at(row),
            value,
            problem: problem.into(),
            fix: "write this file with the query `ablate sql` prints, unchanged".into(),
        }
    }

    fn case_id(&self, row: usize) -> Result<&str> {
        self.case_id[row]
            .as_deref()
            .ok_or_else(|| self.bad("case_id", row, "null".into(), "a value is required here"))
    }

    /// The arms: the arms table's order, then the rest by first appearance. Every arm is checked
    /// once: not null, in the arms table (when there is one), and a valid id.
    fn arms(&self, arms_table: Option<&Arms>) -> Result<Vec<String>> {
        let mut seen: Vec<String> = Vec::new();
        for (row, a) in self.arm.iter().enumerate() {
            let a = a
                .as_deref()
                .ok_or_else(|| self.bad("arm", row, "null".into(), "a value is required here"))?;
            if !seen.iter().any(|x| x == a) {
                if let Some(table) = arms_table
                    && table.get(a).is_none()
                {
                    return Err(self.bad(
                        "arm",
                        row,
                        format!("\"{a}\""),
                        "this arm is not in the experiment's arms table",
                    ));
                }
                table::check_id(&self.path, "arm", row, a)?;
                seen.push(a.to_string());
            }
        }
        Ok(arm_order(arms_table, &seen))
    }

    /// The row's repeats, sums and passes, checked against each other, the pass mark and the
    /// score range (see [`check_sums`]).
    fn sums(&self, row: usize, pass_mark: f64, score_range: Option<(f64, f64)>) -> Result<RowSums> {
        let required =
            |column: &str| self.bad(column, row, "null".into(), "a value is required here");
        let k = self.repeats[row].ok_or_else(|| required("repeats"))?;
        if k < 1 {
            return Err(self.bad(
                "repeats",
                row,
                k.to_string(),
                "every row counts at least one repeat",
            ));
        }
        let (sum, sum2) = match (self.sum_score[row], self.sum_score2[row]) {
            (Some(a), Some(b)) if a.is_finite() && b.is_finite() => (a, b),
            (a, b) => {
                let shown =
                    |x: Option<f64>| x.map_or_else(|| "null".into(), crate::text::float_text);
                return Err(self.bad(
                    "sum_score, sum_score2",
                    row,
                    format!("{}, {}", shown(a), shown(b)),
                    "sums must be finite numbers",
                ));
            }
        };
        let passes = self.passes[row].ok_or_else(|| required("passes"))?;
        if !(0..=k).contains(&passes) {
            return Err(self.bad(
                "passes",
                row,
                format!("{passes} (repeats = {k})"),
                "passes are between 0 and repeats",
            ));
        }
        let mark = self.pass_mark[row].ok_or_else(|| required("pass_mark"))?;
        if mark != pass_mark {
            return Err(Error::BadValue {
                path: self.path.clone(),
                column: "pass_mark".into(),
                row: Row::at(row),
                value: crate::text::float_text(mark),
                problem: format!(
                    "passes were counted against this pass mark, the experiment's is {pass_mark}"
                ),
                fix: "rerun the query `ablate sql` prints for this experiment".into(),
            });
        }
        check_sums(k, sum, sum2, passes, pass_mark, score_range).map_err(|problem| {
            self.bad(
                "sum_score, sum_score2, passes",
                row,
                format!(
                    "repeats = {k}, sum_score = {}, sum_score2 = {}, passes = {passes}",
                    crate::text::float_text(sum),
                    crate::text::float_text(sum2)
                ),
                &problem,
            )
        })?;
        Ok(RowSums {
            k,
            sum,
            sum2,
            passes,
        })
    }

    /// The row's lowest and highest single score (`min_score`, `max_score`), checked against its
    /// repeats, sum and passes and against a declared range; `None` when the file has no such
    /// columns or the row leaves both empty (an older query's row, stacked with newer ones).
    fn extremes(
        &self,
        row: usize,
        s: RowSums,
        pass_mark: f64,
        score_range: Option<(f64, f64)>,
    ) -> Result<Option<(f64, f64)>> {
        let Some((mins, maxs)) = &self.extremes else {
            return Ok(None);
        };
        let shown = |x: Option<f64>| x.map_or_else(|| "null".into(), crate::text::float_text);
        let (lo, hi) = match (mins[row], maxs[row]) {
            (Some(a), Some(b)) if a.is_finite() && b.is_finite() => (a, b),
            // A row of an older query's output, stacked with newer ones.
            (None, None) => return Ok(None),
            (a, b) => {
                return Err(self.bad(
                    "min_score, max_score",
                    row,
                    format!("{}, {}", shown(a), shown(b)),
                    "the lowest and highest scores must be finite numbers",
                ));
            }
        };
        if let Some((a, b)) = score_range
            && (lo < a || hi > b)
        {
            let (column, value) = if lo < a {
                ("min_score", lo)
            } else {
                ("max_score", hi)
            };
            return Err(Error::BadValue {
                path: self.path.clone(),
                column: column.into(),
                row: Row::at(row),
                value: crate::text::float_text(value),
                problem: format!("a score is outside {}", table::declared_range(a, b)),
                fix: table::OUTSIDE_RANGE_FIX.into(),
            });
        }
        let k = s.k as f64;
        let slack = |x: f64| 1e-9 * x.abs().max(1.0);
        // An engine may compare a 32-bit score column with the pass mark at 32 bits: 0.7 as
        // FLOAT is 0.699999988 read back as a double, yet counted a pass. Such a score is within
        // a 32-bit epsilon of the pass mark, not evidence of a wrong row.
        let near_mark = f64::from(f32::EPSILON) * pass_mark.abs().max(1.0);
        let problem = if lo > hi {
            Some("the lowest score is above the highest".to_string())
        } else if s.sum < k * lo - slack(k * lo) || s.sum > k * hi + slack(k * hi) {
            Some(format!(
                "{} repeats between {} and {} cannot sum to {}",
                s.k,
                crate::text::float_text(lo),
                crate::text::float_text(hi),
                crate::text::float_text(s.sum)
            ))
        } else if s.k == 1 && hi - lo > slack(hi) {
            Some("one repeat has one score: its lowest and highest are the same".into())
        } else if s.passes < s.k && lo >= pass_mark + near_mark {
            Some(format!(
                "{} of {} repeats fail (score below pass_mark {pass_mark}), yet the lowest score is not below it",
                s.k - s.passes,
                s.k
            ))
        } else if s.passes > 0 && hi < pass_mark - near_mark {
            Some(format!(
                "{} repeats pass (score ≥ pass_mark {pass_mark}), yet the highest score is below it",
                s.passes
            ))
        } else {
            None
        };
        match problem {
            Some(problem) => Err(self.bad(
                "min_score, max_score",
                row,
                format!(
                    "{}, {} (repeats = {}, sum_score = {}, passes = {})",
                    crate::text::float_text(lo),
                    crate::text::float_text(hi),
                    s.k,
                    crate::text::float_text(s.sum),
                    s.passes
                ),
                &problem,
            )),
            None => Ok(Some((lo, hi))),
        }
    }
}

/// Per (case, arm) cell: repeats, Σx, Σx², passes, and the token sum over its calls that logged
/// tokens.
struct CellTotals {
    count: Vec<u64>,
    sum: Vec<f64>,
    sum2: Vec<f64>,
    pass: Vec<u64>,
    tok_sum: Vec<f64>,
    tok_n: Vec<u64>,
}

impl CellTotals {
    fn new(cells: usize) -> CellTotals {
        CellTotals {
            count: vec![0; cells],
            sum: vec![0.0; cells],
            sum2: vec![0.0; cells],
            pass: vec![0; cells],
            tok_sum: vec![0.0; cells],
            tok_n: vec![0; cells],
        }
    }

    /// Adds one checked row to cell `c`, with checked counts and its token sums.
    fn add(&mut self, rows: &AggregateRows, row: usize, c: usize, s: RowSums) -> Result<()> {
        self.count[c] = self.count[c]
            .checked_add(s.k as u64)
            .filter(|&n| n <= u64::from(u32::MAX))
            .ok_or_else(|| {
                rows.bad(
                    "repeats",
                    row,
                    s.k.to_string(),
                    "the repeats of this (case_id, arm) add up to more than 2^32 − 1",
                )
            })?;
        self.sum[c] += s.sum;
        self.sum2[c] += s.sum2;
        self.pass[c] += s.passes as u64;
        let Some((ts, tn)) = &rows.tokens else {
            return Ok(());
        };
        match (ts[row], tn[row]) {
            (Some(sum), Some(m)) if m > 0 => {
                if !(sum.is_finite() && sum >= 0.0) || m > s.k {
                    return Err(rows.bad(
                        "sum_tokens_in, n_tokens_in",
                        row,
                        format!("{}, {m}", crate::text::float_text(sum)),
                        "token sums are finite and not negative, counted over at most `repeats` calls",
                    ));
                }
                self.tok_sum[c] += sum;
                self.tok_n[c] += m as u64;
            }
            (_, Some(m)) if m < 0 => {
                return Err(rows.bad("n_tokens_in", row, m.to_string(), "a count is not negative"));
            }
            _ => {}
        }
        Ok(())
    }

    /// The case × arm matrix: per cell its mean Σx/k, variance (Σx² − (Σx)²/k)/(k − 1) (k ≥ 2,
    /// clamped at 0), passes and mean tokens.
    fn into_matrix(self, n_cases: usize, n_arms: usize, tokens: bool) -> CaseMatrix {
        let cells = n_cases * n_arms;
        let mut m = CaseMatrix {
            n_cases,
            n_arms,
            repeats: vec![0; cells],
            mean: vec![f64::NAN; cells],
            var: vec![f64::NAN; cells],
            passes: vec![0; cells],
            pass_flags: false,
            tokens: tokens.then(|| vec![f64::NAN; cells]),
            // Set by the caller from `min_score` and `max_score`, when the file has them.
            score_range: None,
        };
        for c in 0..cells {
            if self.count[c] == 0 {
                continue;
            }
            let k = self.count[c] as f64;
            m.repeats[c] = self.count[c] as u32;
            m.mean[c] = self.sum[c] / k;
            if self.count[c] >= 2 {
                m.var[c] = ((self.sum2[c] - self.sum[c] * self.sum[c] / k) / (k - 1.0)).max(0.0);
            }
            m.passes[c] = self.pass[c] as u32;
            if let Some(t) = m.tokens.as_mut()
                && self.tok_n[c] > 0
            {
                t[c] = self.tok_sum[c] / self.tok_n[c] as f64;
            }
        }
        m
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
