//! The optional `samples` table: what a case's call looked like, for the report's drill-down.
//! One row per (case_id, arm, repeat): `input` (the prompt or question), `output` (the model's
//! answer) and `source` (where the sample came from: the log file and the harness's sample id, so
//! that a reader can open it in `inspect view` or promptfoo's viewer). `input`, `output` and
//! `source` are optional columns and may be null.
//!
//! Loading checks the keys only (case ids in the cases table, arms in the results, no repeated
//! (case_id, arm, repeat)); the text is read later, for the few cases the drill-down shows
//! ([`Samples::read`]), by a join pushed into the scan, so a large table is never held whole.

use std::collections::BTreeMap;

use polars::prelude::*;

use crate::error::{Error, Result, Row};
use crate::io::cases::Cases;
use crate::io::table::{self, Col, Kind, TableFile, collect_streaming};

pub use ablate_core::data::samples::*;

/// Reading the `samples` table: its keys at load, the text of a few cases for the drill-down.
pub trait SamplesRead {
    /// Reads a samples table's keys, checking its columns (the text columns, when present,
    /// text); [`SampleKeys::check`] then checks the keys against the cases and the results'
    /// arms. The two halves let the read run beside the results' load, which the check needs.
    ///
    /// # Errors
    /// A missing or mistyped column, or an unreadable file.
    fn read_keys(file: &TableFile) -> Result<SampleKeys>;

    /// The text of the first repeat (the lowest number) of each wanted (case_id, arm) that the
    /// table has. Only the wanted rows are read: the scan is joined to the wanted keys.
    ///
    /// # Errors
    /// The file cannot be read.
    fn read(&self, wanted: &[(String, String)]) -> Result<BTreeMap<(String, String), SampleText>>;
}

impl SamplesRead for Samples {
    fn read_keys(file: &TableFile) -> Result<SampleKeys> {
        let all = columns();
        // The text columns' types are checked from the schema; only the keys are read.
        let schema = table::schema(file, &["case_id", "arm", "input", "output", "source"])?;
        table::check_columns(file, &schema, &all)?;
        let t = table::read(file, &all[..3])?;
        Ok(SampleKeys {
            file: file.clone(),
            ids: t.strs("case_id")?,
            arms: t.strs("arm")?,
            repeats: t.ints("repeat")?,
        })
    }

    fn read(&self, wanted: &[(String, String)]) -> Result<BTreeMap<(String, String), SampleText>> {
        if wanted.is_empty() {
            return Ok(BTreeMap::new());
        }
        let path = &self.file.path;
        let keys = DataFrame::new(
            wanted.len(),
            vec![
                Column::new(
                    "case_id".into(),
                    wanted.iter().map(|w| w.0.as_str()).collect::<Vec<_>>(),
                ),
                Column::new(
                    "arm".into(),
                    wanted.iter().map(|w| w.1.as_str()).collect::<Vec<_>>(),
                ),
            ],
        )
        .map_err(|e| table::polars_unreadable(path, e))?;
        let mut lf = table::scan(&self.file, &["case_id", "arm", "input", "output", "source"])?;
        let schema = lf
            .collect_schema()
            .map_err(|e| table::polars_unreadable(path, e))?;
        let text = |name: &str| {
            if schema.contains(name) {
                col(name).cast(DataType::String)
            } else {
                lit(NULL).cast(DataType::String).alias(name)
            }
        };
        let lf = lf
            .select([
                col("case_id").cast(DataType::String),
                col("arm").cast(DataType::String),
                col("repeat").cast(DataType::Int64),
                text("input"),
                text("output"),
                text("source"),
            ])
            .join(
                keys.lazy(),
                [col("case_id"), col("arm")],
                [col("case_id"), col("arm")],
                JoinArgs::new(JoinType::Inner),
            );
        let t = table::Table {
            path: path.clone(),
            df: collect_streaming(lf, path)?,
        };
        let (ids, arms, repeats) = (
            t.opt_strs("case_id")?,
            t.opt_strs("arm")?,
            t.opt_ints("repeat")?,
        );
        let (inputs, outputs, sources) = (
            t.opt_strs("input")?,
            t.opt_strs("output")?,
            t.opt_strs("source")?,
        );
        // The lowest repeat of each (case_id, arm).
        let mut first: BTreeMap<(String, String), (i64, SampleText)> = BTreeMap::new();
        for i in 0..t.height() {
            let (Some(id), Some(arm), Some(repeat)) = (&ids[i], &arms[i], repeats[i]) else {
                continue;
            };
            let key = (id.clone(), arm.clone());
            if first.get(&key).is_some_and(|(r, _)| *r <= repeat) {
                continue;
            }
            let text = SampleText {
                input: inputs[i].clone(),
                output: outputs[i].clone(),
                source: sources[i].clone(),
            };
            first.insert(key, (repeat, text));
        }
        Ok(first
            .into_iter()
            .map(|(key, (_, text))| (key, text))
            .collect())
    }
}

/// A samples table's keys, read but not yet checked ([`Samples::read_keys`], then
/// [`SampleKeys::check`]).
#[derive(Debug)]
pub struct SampleKeys {
    file: TableFile,
    ids: Vec<String>,
    arms: Vec<String>,
    repeats: Vec<i64>,
}

impl SampleKeys {
    /// Checks the keys read by [`Samples::read_keys`]: every case in `cases`, every arm in
    /// `arms` (the results' arms), repeats not negative (the first bad row of the three), then
    /// each (case_id, arm, repeat) once.
    ///
    /// # Errors
    /// The first bad row, naming the column, the value and what to do.
    pub fn check(self, cases: &Cases, arms: &[String]) -> Result<Samples> {
        let path = &self.file.path;
        let known: std::collections::HashSet<&str> = arms.iter().map(String::as_str).collect();
        for (i, id) in self.ids.iter().enumerate() {
            cases.lookup(id, path, i)?;
            if !known.contains(self.arms[i].as_str()) {
                return Err(Error::BadValue {
                    path: path.clone(),
                    column: "arm".into(),
                    row: Row::at(i),
                    value: format!("\"{}\"", self.arms[i]),
                    problem: "this arm has no results".into(),
                    fix: "name an arm of the results table, or drop the row".into(),
                });
            }
            if self.repeats[i] < 0 {
                return Err(Error::BadValue {
                    path: path.clone(),
                    column: "repeat".into(),
                    row: Row::at(i),
                    value: self.repeats[i].to_string(),
                    problem: "repeats are numbered from 0 or 1".into(),
                    fix: "use the results table's repeat numbers".into(),
                });
            }
        }
        table::check_unique(
            path,
            "case_id, arm, repeat",
            self.ids
                .iter()
                .zip(&self.arms)
                .zip(&self.repeats)
                .map(|((id, arm), repeat)| (id, arm, repeat)),
        )?;
        Ok(Samples {
            rows: self.ids.len(),
            file: self.file,
        })
    }
}

/// The columns of a samples table.
fn columns() -> [Col; 6] {
    [
        Col::req("case_id", Kind::Str),
        Col::req("arm", Kind::Str),
        Col::req("repeat", Kind::Int),
        Col::opt("input", Kind::Str),
        Col::opt("output", Kind::Str),
        Col::opt("source", Kind::Str),
    ]
}
