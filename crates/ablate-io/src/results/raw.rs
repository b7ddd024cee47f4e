//! [`Results`] from the raw rows: one row per (case, arm, repeat), folded into the matrix.
//!
//! Rows come in [`Batch`]es from one of two readers: the Parquet page reader ([`pages`], for
//! the encodings writers use) or, for CSV and anything the page reader does not decode, a frame
//! Polars read. Batches are decoded in parallel and folded in file order ([`Fold`]), so any
//! thread count gives the same matrix to the bit, and so do both readers unless a cell's rows
//! straddle one reader's batch boundary (then its mean and variance can differ in the last bits).

use rayon::prelude::*;

use super::fold::{ArmLabels, Batch, Finish, Fold, Kind, NONE, Strings, labels_in_order};
use super::pages::{self, ParquetResults, Unsupported};
use super::{Results, arm_order};
use crate::error::{Error, Result, Row};
use crate::io::arms::Arms;
use crate::io::cases::Cases;
use crate::io::table::{self, Col, Format, Kind as ColKind, TableFile, polars_unreadable};

/// The columns of a results table.
fn specs() -> [Col; 6] {
    [
        Col::req("case_id", ColKind::Str),
        Col::req("arm", ColKind::Str),
        Col::req("repeat", ColKind::Int),
        Col::req("score", ColKind::Float),
        Col::opt("tokens_in", ColKind::Int),
        Col::opt("passed", ColKind::Bool),
    ]
}

/// Reads `results`, checks every row against `cases` (and `arms`, when there is an arms table),
/// and folds the rows into the case × arm matrix. Arms are ordered as in the arms table, else
/// by first appearance.
///
/// Memory is the matrix plus a few row groups in flight, whatever the row count.
///
/// # Errors
/// Missing or mistyped columns; then, first kind first and within a kind the first row: null
/// case_id, arm, repeat or score; NaN or infinite scores; scores beyond ±1e100; case ids
/// absent from `cases` and arms absent from `arms`; negative `tokens_in`; null `passed`; and,
/// when nothing else is wrong, the first row that repeats a (case_id, arm, repeat).
pub(super) fn load(
    file: &TableFile,
    cases: &Cases,
    pass_mark: f64,
    arms_table: Option<&Arms>,
) -> Result<Results> {
    let specs = specs();
    if file.format == Format::Parquet {
        // Polars' schema check names missing and mistyped columns, whichever reader reads.
        let schema = table::schema(file, &["case_id", "arm"])?;
        table::check_columns(file, &schema, &specs)?;
        if let Ok(parquet) = ParquetResults::open(&file.path)? {
            // Its columns and no rows: said as such, not as a baseline that names no arm.
            if parquet.rows() == 0 {
                return Err(Error::EmptyTable {
                    path: file.path.clone(),
                });
            }
            let source = Pages {
                parquet: &parquet,
                cases,
                path: &file.path,
            };
            match fold_rows(&source, file, cases, pass_mark, arms_table) {
                Err(Stop::Unsupported(_)) => {}
                Err(Stop::Error(e)) => return Err(e),
                Ok(results) => return Ok(results),
            }
        }
    }
    let frame = Frame::read(file, &specs, cases)?;
    fold_rows(&frame, file, cases, pass_mark, arms_table).map_err(|stop| match stop {
        Stop::Error(e) => e,
        Stop::Unsupported(Unsupported(why)) => Error::Unreadable {
            path: file.path.clone(),
            problem: why,
            fix: "check that the file is a complete Parquet or CSV table".into(),
        },
    })
}

/// Why a reader stopped.
enum Stop {
    /// The page reader cannot decode the file (Polars reads it instead).
    Unsupported(Unsupported),
    /// The data is wrong.
    Error(Error),
}

impl From<Unsupported> for Stop {
    fn from(u: Unsupported) -> Self {
        Stop::Unsupported(u)
    }
}

/// Rows in numbered batches, any of which can be decoded independently.
trait Source: Sync {
    /// Number of batches.
    fn batches(&self) -> usize;
    /// Whether rows carry `tokens_in` and `passed`.
    fn optional(&self) -> (bool, bool);
    /// Batch `k`.
    fn batch(&self, k: usize) -> pages::Decoding<Batch>;
    /// Batch `k`'s arm labels in order of first appearance, with their file rows.
    fn arm_labels(&self, k: usize) -> pages::Decoding<Vec<(String, usize)>>;
}

/// Runs `each` on every batch index, a window of them in parallel, and hands the results to
/// `fold` in order; the next window is decoded while the last is folded.
fn in_order<T: Send>(
    n: usize,
    each: impl Fn(usize) -> pages::Decoding<T> + Sync,
    mut fold: impl FnMut(T) + Send,
) -> pages::Decoding<()> {
    let window = 2 * rayon::current_num_threads().max(1);
    let decode = |start: usize| -> Vec<pages::Decoding<T>> {
        (start..(start + window).min(n))
            .into_par_iter()
            .map(&each)
            .collect()
    };
    let mut pending = decode(0);
    let mut start = 0;
    while !pending.is_empty() {
        start += window;
        let (next, folded) = rayon::join(
            || decode(start),
            || -> pages::Decoding<()> {
                for item in pending {
                    fold(item?);
                }
                Ok(())
            },
        );
        folded?;
        pending = next;
    }
    Ok(())
}

/// Folds every batch of `source`: first its arm labels (the matrix's columns), then its rows.
/// Batches are decoded a window at a time in parallel and folded in file order.
fn fold_rows(
    source: &impl Source,
    file: &TableFile,
    cases: &Cases,
    pass_mark: f64,
    arms_table: Option<&Arms>,
) -> std::result::Result<Results, Stop> {
    let n = source.batches();
    let mut labels = ArmLabels::default();
    in_order(
        n,
        |k| source.arm_labels(k),
        |batch| labels.add(batch, &file.path, arms_table),
    )?;
    let (tokens, passed) = source.optional();
    let arms = arm_order(arms_table, &labels.labels);
    let mut fold = Fold::new(cases.len(), arms, pass_mark, tokens, passed);
    fold.note(labels.problems);
    // Each batch's runs are summarised where it is decoded, in parallel; the fold merges them
    // in file order.
    in_order(
        n,
        |k| {
            source.batch(k).map(|mut batch| {
                batch.summarise(pass_mark);
                batch
            })
        },
        |batch| fold.add(batch),
    )?;
    let rows = fold.rows();
    match fold.finish() {
        Ok((arms, matrix)) => Ok(Results {
            path: file.path.clone(),
            rows,
            arms,
            matrix,
        }),
        Err(Finish::Problem(e)) => Err(Stop::Error(e)),
        Err(Finish::Duplicate(d)) => {
            // Rare: read again up to the repeated row to name the row it repeats.
            let mut earlier = None;
            'batches: for k in 0..n {
                let b = source.batch(k)?;
                for i in 0..b.len().min(d.row.saturating_sub(b.first_row)) {
                    let arm = b.arm[i];
                    if b.case[i] == d.case
                        && b.repeat[i] == d.repeat
                        && arm != NONE
                        && b.arm_labels[arm as usize] == d.arm
                    {
                        earlier = Some(b.first_row + i);
                        break 'batches;
                    }
                }
            }
            Err(Stop::Error(Error::BadValue {
                path: file.path.clone(),
                column: "case_id, arm, repeat".into(),
                row: Row::at(d.row),
                value: format!("(\"{}\", \"{}\", {})", cases.ids[d.case as usize], d.arm, d.repeat),
                problem: format!(
                    "duplicate row (same key as row {})",
                    earlier.map_or_else(|| "?".into(), |r| (r + 1).to_string())
                ),
                fix: "each (case_id, arm, repeat) must appear once; number repeats 0..K-1 or drop the copy"
                    .into(),
            }))
        }
    }
}

/// The Parquet page reader's row groups as batches.
struct Pages<'a> {
    parquet: &'a ParquetResults,
    cases: &'a Cases,
    path: &'a std::path::Path,
}

impl Source for Pages<'_> {
    fn batches(&self) -> usize {
        self.parquet.row_groups()
    }
    fn optional(&self) -> (bool, bool) {
        self.parquet.has_optional()
    }
    fn batch(&self, k: usize) -> pages::Decoding<Batch> {
        self.parquet.batch(k, self.cases, self.path)
    }
    fn arm_labels(&self, k: usize) -> pages::Decoding<Vec<(String, usize)>> {
        self.parquet.arm_labels(k)
    }
}

/// Rows per batch of a frame.
const FRAME_BATCH: usize = 1 << 20;

/// A results table Polars read (CSV, or Parquet the page reader does not decode), its ids as
/// categorical codes.
struct Frame<'a> {
    path: std::path::PathBuf,
    height: usize,
    case: Vec<u32>,
    arm: Vec<u32>,
    /// Each case code's text.
    case_text: Strings,
    /// Each arm code's text.
    arm_text: Strings,
    repeat: polars::prelude::Int64Chunked,
    score: polars::prelude::Float64Chunked,
    tokens: Option<polars::prelude::Int64Chunked>,
    passed: Option<polars::prelude::BooleanChunked>,
    cases: &'a Cases,
}

impl<'a> Frame<'a> {
    /// Reads the table with Polars.
    ///
    /// # Errors
    /// As [`table::read_coded`].
    fn read(file: &TableFile, specs: &[Col], cases: &'a Cases) -> Result<Self> {
        // `read_coded` refuses a table with no rows, so a baseline that names no arm is never
        // blamed for an empty table.
        let t = table::read_coded(file, specs, &["case_id", "arm"])?;
        let path = t.path.clone();
        let unreadable = |e| polars_unreadable(&path, e);
        let get = |name: &str| t.df.column(name).map_err(unreadable);
        let codes = |name: &str| -> Result<(Vec<u32>, Strings)> {
            let column = get(name)?.cat32().map_err(unreadable)?;
            let map = column.get_mapping();
            let text = (0..map.num_cats_upper_bound() as u32)
                .map(|c| map.cat_to_str(c).unwrap_or_default())
                .collect();
            let codes = column
                .physical()
                .iter()
                .map(|v| v.unwrap_or(NONE))
                .collect();
            Ok((codes, text))
        };
        let (case, case_text) = codes("case_id")?;
        let (arm, arm_text) = codes("arm")?;
        let optional = |name: &str| t.has(name).then(|| get(name)).transpose();
        Ok(Frame {
            height: t.height(),
            case,
            arm,
            case_text,
            arm_text,
            repeat: get("repeat")?.i64().map_err(unreadable)?.clone(),
            score: get("score")?.f64().map_err(unreadable)?.clone(),
            tokens: optional("tokens_in")?
                .map(|c| c.i64().cloned())
                .transpose()
                .map_err(unreadable)?,
            passed: optional("passed")?
                .map(|c| c.bool().cloned())
                .transpose()
                .map_err(unreadable)?,
            cases,
            path,
        })
    }
}

impl Source for Frame<'_> {
    fn batches(&self) -> usize {
        self.height.div_ceil(FRAME_BATCH)
    }
    fn optional(&self) -> (bool, bool) {
        (self.tokens.is_some(), self.passed.is_some())
    }
    fn arm_labels(&self, k: usize) -> pages::Decoding<Vec<(String, usize)>> {
        let first_row = k * FRAME_BATCH;
        let arm = &self.arm[first_row..first_row + FRAME_BATCH.min(self.height - first_row)];
        Ok(labels_in_order(arm, &self.arm_text, first_row))
    }
    fn batch(&self, k: usize) -> pages::Decoding<Batch> {
        let first_row = k * FRAME_BATCH;
        let len = FRAME_BATCH.min(self.height - first_row);
        let rows = first_row..first_row + len;
        let path = self.path.as_path();
        let mut b = Batch {
            first_row,
            ..Batch::default()
        };
        let null_at = |mut valid: Box<dyn Iterator<Item = bool> + '_>| {
            valid.position(|ok| !ok).map(|i| first_row + i)
        };

        b.set_ids(
            (&self.case[rows.clone()], &self.case_text),
            (&self.arm[rows], &self.arm_text),
            self.cases,
            path,
        );

        let repeat = self.repeat.slice(first_row as i64, len);
        if let Some(row) = null_at(Box::new(repeat.iter().map(|v| v.is_some()))) {
            b.problems.null(Kind::NullRepeat, path, "repeat", row);
        }
        b.repeat = repeat.iter().map(|v| v.unwrap_or(0)).collect();
        let score = self.score.slice(first_row as i64, len);
        if let Some(row) = null_at(Box::new(score.iter().map(|v| v.is_some()))) {
            b.problems.null(Kind::NullScore, path, "score", row);
        }
        b.score = score.iter().map(|v| v.unwrap_or(0.0)).collect();
        b.check_scores(path);

        if let Some(tokens) = &self.tokens {
            let tokens = tokens.slice(first_row as i64, len);
            if let Some((i, t)) = tokens
                .iter()
                .enumerate()
                .find_map(|(i, t)| t.filter(|t| pages::bad_tokens(*t)).map(|t| (i, t)))
            {
                let row = first_row + i;
                b.problems
                    .note(Kind::BadTokens, row, pages::bad_tokens_error(path, row, t));
            }
            b.tokens = Some(
                tokens
                    .iter()
                    .map(|t| t.map_or(f64::NAN, |t| t as f64))
                    .collect(),
            );
        }
        if let Some(passed) = &self.passed {
            let passed = passed.slice(first_row as i64, len);
            if let Some(row) = null_at(Box::new(passed.iter().map(|v| v.is_some()))) {
                b.problems.null(Kind::NullPassed, path, "passed", row);
            }
            b.passed = Some(passed.iter().map(|v| v.unwrap_or(false)).collect());
        }
        Ok(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::prelude::*;
    use std::path::{Path, PathBuf};

    fn fixture(variant: &str) -> PathBuf {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/fixtures/pandas")
            .join(variant)
    }

    /// Reads a fixture's results with the page reader (None when it hands the file to Polars)
    /// and with Polars.
    fn both(variant: &str) -> (Option<Results>, Results) {
        let dir = fixture(variant);
        let cases = Cases::load(&TableFile::at(dir.join("cases.parquet"))).unwrap();
        let file = TableFile::at(dir.join("results.parquet"));
        let parquet = ParquetResults::open(&file.path).unwrap().ok();
        let pages = parquet.as_ref().and_then(|parquet| {
            let source = Pages {
                parquet,
                cases: &cases,
                path: &file.path,
            };
            match fold_rows(&source, &file, &cases, 0.5, None) {
                Ok(r) => Some(r),
                Err(Stop::Unsupported(_)) => None,
                Err(Stop::Error(e)) => panic!("{variant}: {e}"),
            }
        });
        let frame = Frame::read(&file, &specs(), &cases).unwrap();
        let polars = match fold_rows(&frame, &file, &cases, 0.5, None) {
            Ok(r) => r,
            Err(Stop::Error(e)) => panic!("{variant}: {e}"),
            Err(Stop::Unsupported(Unsupported(why))) => panic!("{variant}: {why}"),
        };
        (pages, polars)
    }

    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn the_page_reader_and_polars_give_the_same_matrix_bit_for_bit() {
        // Written by pyarrow (dictionary, plain fallback, pages v2, snappy, narrow and unsigned
        // widths, large strings) and by DuckDB: the page reader decodes each.
        for variant in ["categorical", "widths", "large", "encodings", "duckdb"] {
            let (pages, polars) = both(variant);
            let pages = pages.unwrap_or_else(|| panic!("{variant}: not read by pages"));
            assert_eq!(pages.arms, polars.arms, "{variant}");
            assert_eq!(pages.rows, polars.rows, "{variant}");
            let (a, b) = (&pages.matrix, &polars.matrix);
            assert_eq!(a.repeats, b.repeats, "{variant}");
            assert_eq!(bits(&a.mean), bits(&b.mean), "{variant}");
            assert_eq!(bits(&a.var), bits(&b.var), "{variant}");
            assert_eq!(a.passes, b.passes, "{variant}");
            assert!(a.score_range.is_some(), "{variant}");
            assert_eq!(a.score_range, b.score_range, "{variant}");
            assert_eq!(
                a.tokens.as_deref().map(bits),
                b.tokens.as_deref().map(bits),
                "{variant}"
            );
            assert!(a.repeats.iter().all(|r| *r == 2), "{variant}");
        }
        // Integers stored as floats and decimal scores are Polars' to read (and check).
        for variant in ["nullable", "exotic"] {
            assert!(both(variant).0.is_none(), "{variant}");
        }
    }

    /// Writes `results` twice (Parquet through Polars' writer, which the page reader reads, and
    /// CSV, which Polars reads) and loads both: the same matrix or the same error.
    fn load_both(mut results: polars::prelude::DataFrame) -> (Result<Results>, Result<Results>) {
        use polars::prelude::*;
        let dir = tempfile::tempdir().unwrap();
        let mut cases = df!("case_id" => ["c0", "c1", "c2"]).unwrap();
        let cases_path = dir.path().join("cases.csv");
        CsvWriter::new(std::fs::File::create(&cases_path).unwrap())
            .finish(&mut cases)
            .unwrap();
        let cases = Cases::load(&TableFile::at(&cases_path)).unwrap();
        let parquet = dir.path().join("results.parquet");
        ParquetWriter::new(std::fs::File::create(&parquet).unwrap())
            .with_row_group_size(Some(4))
            .finish(&mut results)
            .unwrap();
        assert!(
            ParquetResults::open(&parquet).unwrap().is_ok(),
            "the page reader reads Polars' files"
        );
        let csv = dir.path().join("results.csv");
        CsvWriter::new(std::fs::File::create(&csv).unwrap())
            .finish(&mut results)
            .unwrap();
        let load = |p: &Path| Results::load(&TableFile::at(p), &cases, 0.5, None);
        (load(&parquet), load(&csv))
    }

    /// The error, with the file's name and CSV's line numbers taken out.
    fn message(r: Result<Results>) -> String {
        let mut text = r
            .map(|_| "loaded".to_string())
            .unwrap_or_else(|e| e.to_string())
            .replace("results.parquet", "results.*")
            .replace("results.csv", "results.*");
        if let Some(start) = text.find(" (line ")
            && text[start + 7..].starts_with(|c: char| c.is_ascii_digit())
            && let Some(end) = text[start..].find(')')
        {
            text.replace_range(start..start + end + 1, "");
        }
        text
    }

    #[test]
    fn both_readers_report_the_same_first_problem() {
        use polars::prelude::*;
        let results = || {
            df!(
                "case_id" => ["c0", "c0", "c1", "c1", "c2", "c2", "c0", "c1", "c2", "c0"],
                "arm" => ["a", "a", "a", "a", "a", "a", "b", "b", "b", "b"],
                "repeat" => [0i64, 1, 0, 1, 0, 1, 0, 0, 0, 1],
                "score" => [1.0, 0.0, 0.5, 1.0, 0.25, 0.75, 1.0, 0.0, 1.0, 1.0],
                "tokens_in" => [Some(10i64), Some(12), None, Some(9), Some(9), Some(9), Some(5), Some(5), Some(5), Some(6)]
            )
            .unwrap()
        };
        let (parquet, csv) = load_both(results());
        let (p, c) = (parquet.unwrap(), csv.unwrap());
        assert_eq!(bits(&p.matrix.mean), bits(&c.matrix.mean));
        assert_eq!(bits(&p.matrix.var), bits(&c.matrix.var));
        assert_eq!(
            p.matrix.tokens.as_deref().map(bits),
            c.matrix.tokens.as_deref().map(bits)
        );
        // Case c0 in arm a: scores 1 and 0, mean 0.5, variance 0.5, tokens (10 + 12)/2.
        assert_eq!((p.matrix.mean[0], p.matrix.var[0]), (0.5, 0.5));
        assert_eq!(p.matrix.tokens.as_ref().unwrap()[0], 11.0);

        let set = |df: &mut DataFrame, column: &str, row: usize, value: AnyValue| {
            let mut s = df.column(column).unwrap().as_materialized_series().clone();
            let mut values: Vec<AnyValue> = s.iter().collect();
            values[row] = value;
            s = Series::from_any_values(column.into(), &values, false).unwrap();
            df.replace(column, s.into()).unwrap();
        };
        type Mutation = Box<dyn Fn(&mut DataFrame)>;
        let mutations: Vec<(&str, Mutation, &[&str])> = vec![
            (
                "null case",
                Box::new(move |d| set(d, "case_id", 3, AnyValue::Null)),
                &["`case_id`", "row 4", "null"],
            ),
            (
                "null score beats an unknown case",
                Box::new(move |d| {
                    set(d, "case_id", 1, AnyValue::String("c9"));
                    set(d, "score", 8, AnyValue::Null);
                }),
                &["`score`", "row 9", "null"],
            ),
            (
                "NaN",
                Box::new(move |d| set(d, "score", 5, AnyValue::Float64(f64::NAN))),
                &["`score`", "row 6", "NaN"],
            ),
            (
                "huge",
                Box::new(move |d| set(d, "score", 2, AnyValue::Float64(1e300))),
                &["`score`", "row 3", "1e300"],
            ),
            (
                "unknown case",
                Box::new(move |d| set(d, "case_id", 7, AnyValue::String("c9"))),
                &["`case_id`", "row 8", "\"c9\""],
            ),
            (
                "control characters in an arm",
                Box::new(move |d| set(d, "arm", 9, AnyValue::String("b\n"))),
                &["`arm`", "row 10", "control"],
            ),
            (
                "negative tokens",
                Box::new(move |d| set(d, "tokens_in", 6, AnyValue::Int64(-1))),
                &["`tokens_in`", "row 7", "-1"],
            ),
            (
                "duplicate",
                Box::new(move |d| set(d, "repeat", 9, AnyValue::Int64(0))),
                &["row 10", "same key as row 7", "(\"c0\", \"b\", 0)"],
            ),
            (
                "repeat beyond 63 duplicated",
                Box::new(move |d| {
                    set(d, "repeat", 0, AnyValue::Int64(100));
                    set(d, "repeat", 1, AnyValue::Int64(100));
                }),
                &["row 2", "same key as row 1"],
            ),
        ];
        for (name, mutate, needles) in mutations {
            let mut df = results();
            mutate(&mut df);
            let (parquet, csv) = load_both(df);
            let (p, c) = (message(parquet), message(csv));
            assert_eq!(p, c, "{name}");
            for needle in needles {
                assert!(p.contains(needle), "{name}: {needle} not in {p}");
            }
        }
    }
}
