//! Long-format aggregates written by an engine from `ablate sql shadow|context`: one row per
//! (stat, key columns, bin) with a value. Rows with the same stat, keys and bin add up (the query
//! over several partitions or days, stacked).

use std::path::PathBuf;

use crate::error::{Error, Result, Row};
use crate::io::table::{self, Col, Kind, TableFile};

/// One row of a long aggregates table.
#[derive(Debug, Clone)]
pub struct LongRow {
    /// Which statistic.
    pub stat: String,
    /// The key columns' values, in the order asked for.
    pub keys: Vec<String>,
    /// The bin (a histogram bin, a replicate index, a limit), 0 when unused.
    pub bin: i64,
    /// The value.
    pub value: f64,
    /// Its row in the file (for errors).
    pub row: usize,
}

/// A long aggregates table read and checked.
pub struct LongTable {
    /// The file.
    pub path: PathBuf,
    /// Its rows.
    pub rows: Vec<LongRow>,
}

impl LongTable {
    /// Reads `file` with text key columns `keys` and integer key columns `int_keys` (besides
    /// `stat`, `bin` and `value`); a row's keys are the text keys, then the integer keys written
    /// as text.
    ///
    /// # Errors
    /// Unreadable file, missing or mistyped columns, nulls, non-finite values.
    pub fn read(file: &TableFile, keys: &[&str], int_keys: &[&str]) -> Result<LongTable> {
        let mut specs = vec![
            Col::req("stat", Kind::Str),
            Col::req("bin", Kind::Int),
            Col::req("value", Kind::Float),
        ];
        specs.extend(keys.iter().map(|k| Col::req(*k, Kind::Str)));
        specs.extend(int_keys.iter().map(|k| Col::req(*k, Kind::Int)));
        let t = table::read(file, &specs)?;
        let stats = t.strs("stat")?;
        let bins = t.ints("bin")?;
        let values = t.finite_floats("value")?;
        let mut key_values = keys.iter().map(|k| t.strs(k)).collect::<Result<Vec<_>>>()?;
        for k in int_keys {
            key_values.push(t.ints(k)?.into_iter().map(|v| v.to_string()).collect());
        }
        let rows = (0..t.height())
            .map(|i| LongRow {
                stat: stats[i].clone(),
                keys: key_values.iter().map(|k| k[i].clone()).collect(),
                bin: bins[i],
                value: values[i],
                row: i,
            })
            .collect();
        Ok(LongTable {
            path: file.path.clone(),
            rows,
        })
    }

    /// The error for a bad row.
    pub fn bad(&self, r: &LongRow, problem: impl Into<String>) -> Error {
        Error::BadValue {
            path: self.path.clone(),
            column: "stat, value".into(),
            row: Row::at(r.row),
            value: format!("{} = {}", r.stat, crate::text::float_text(r.value)),
            problem: problem.into(),
            fix: "write this file with the query `ablate sql` prints, unchanged".into(),
        }
    }

    /// A row's value as a count (a whole, non-negative number).
    ///
    /// # Errors
    /// A fraction or a negative value.
    pub fn count(&self, r: &LongRow) -> Result<u64> {
        if !(0.0..=MAX_EXACT).contains(&r.value) || r.value.fract() != 0.0 {
            return Err(self.bad(
                r,
                format!("this statistic is a count: a whole number from 0 to {MAX_EXACT:e}"),
            ));
        }
        Ok(r.value as u64)
    }

    /// A row's value as a whole number (may be negative).
    ///
    /// # Errors
    /// A fraction, or a magnitude beyond 2^53.
    pub fn whole(&self, r: &LongRow) -> Result<i64> {
        if r.value.is_nan() || r.value.abs() > MAX_EXACT || r.value.fract() != 0.0 {
            return Err(self.bad(
                r,
                format!(
                    "this statistic is a sum of integers: a whole number within ±{MAX_EXACT:e}"
                ),
            ));
        }
        Ok(r.value as i64)
    }

    /// Adds `v` to a running count, refusing a sum that leaves u64 (rows that cannot come from
    /// one log).
    ///
    /// # Errors
    /// The sum overflows.
    pub fn add(&self, r: &LongRow, total: &mut u64, v: u64) -> Result<()> {
        *total = total
            .checked_add(v)
            .ok_or_else(|| self.bad(r, "the counts of this statistic add up beyond 2^64"))?;
        Ok(())
    }
}

/// Largest count read from an aggregates file: 2^53, the largest whole number a double holds
/// exactly (an engine writes the value column as a double).
pub const MAX_EXACT: f64 = 9_007_199_254_740_992.0;
