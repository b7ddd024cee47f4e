//! What a column must hold ([`Col`], [`Kind`]) and the checks of a file's schema against it.

use std::path::Path;

use polars::prelude::*;

use super::{TableFile, polars_unreadable, scan};
use crate::error::{Error, Result, Row};
use crate::text::float_text;

/// The logical type a column must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Text. In CSV files every column named as text is read as text, so ids like `0007` survive.
    Str,
    /// Any integer type (read as i64).
    Int,
    /// Any floating-point or integer type (read as f64).
    Float,
    /// Boolean.
    Bool,
    /// A list of text values. In CSV, a text cell with values separated by `;` (empty = empty list).
    StrList,
}

impl Kind {
    /// The type in words, for error messages.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Str => "text",
            Kind::Int => "an integer",
            Kind::Float => "a number",
            Kind::Bool => "a boolean",
            Kind::StrList => "a list of text (in CSV: values separated by ';')",
        }
    }

    /// Whether a column of `dtype` can be read as this kind. Accepted beyond the exact type, because
    /// that is what pandas and pyarrow write: any integer or float width (float16 and decimals
    /// included, read as f64); integers stored as floats
    /// (pandas' float64 for an integer column with nulls; fractional values are refused when read);
    /// dictionary-encoded (categorical) text; large strings and lists; and an all-null column
    /// (pandas' `null` type for a column of `None`), which reads as nulls.
    pub(super) fn accepts(self, dtype: &DataType) -> bool {
        if matches!(dtype, DataType::Null) {
            return true;
        }
        match self {
            Kind::Str => is_text(dtype),
            Kind::Int | Kind::Float => dtype.is_integer() || dtype.is_float() || dtype.is_decimal(),
            Kind::Bool => matches!(dtype, DataType::Boolean),
            Kind::StrList => match dtype {
                DataType::List(inner) => {
                    matches!(inner.as_ref(), DataType::Null) || is_text(inner.as_ref())
                }
                DataType::String => true,
                _ => false,
            },
        }
    }

    /// The type a column of `dtype` is cast to in the scan. Integers stored as floats are read as
    /// f64 and checked for whole values afterwards ([`read`]), never truncated by a cast.
    fn target(self, dtype: &DataType) -> DataType {
        match self {
            Kind::Str => DataType::String,
            Kind::StrList => match dtype {
                DataType::String => DataType::String,
                _ => DataType::List(Box::new(DataType::String)),
            },
            Kind::Int if dtype.is_float() || dtype.is_decimal() => DataType::Float64,
            Kind::Int => DataType::Int64,
            Kind::Float => DataType::Float64,
            Kind::Bool => DataType::Boolean,
        }
    }

    /// The one-line fix in pandas terms for a column of this kind that has another type.
    fn pandas_fix(self, column: &str) -> String {
        match self {
            Kind::Str => format!("in pandas: df[\"{column}\"] = df[\"{column}\"].astype(str)"),
            Kind::Int => format!(
                "in pandas: df[\"{column}\"] = pd.to_numeric(df[\"{column}\"]).astype(\"Int64\")"
            ),
            // `.astype(float)` as well: pd.to_numeric leaves a bool column bool.
            Kind::Float => format!(
                "in pandas: df[\"{column}\"] = pd.to_numeric(df[\"{column}\"]).astype(float)"
            ),
            Kind::Bool => {
                format!("in pandas: df[\"{column}\"] = df[\"{column}\"].astype(\"boolean\")")
            }
            Kind::StrList => format!(
                "in pandas: df[\"{column}\"] = df[\"{column}\"].apply(list) (a list of strings per row), or in CSV the values joined with ';'"
            ),
        }
    }
}

/// Whether a type holds text: strings, or dictionary-encoded (categorical) strings.
pub fn is_text(dtype: &DataType) -> bool {
    matches!(
        dtype,
        DataType::String | DataType::Categorical(..) | DataType::Enum(..)
    )
}

/// One column a table reader asks for.
#[derive(Debug, Clone)]
pub struct Col {
    /// Column name.
    pub name: String,
    /// Expected type.
    pub kind: Kind,
    /// Whether the table is invalid without it.
    pub required: bool,
}

impl Col {
    /// A required column.
    pub fn req(name: impl Into<String>, kind: Kind) -> Self {
        Col {
            name: name.into(),
            kind,
            required: true,
        }
    }
    /// An optional column.
    pub fn opt(name: impl Into<String>, kind: Kind) -> Self {
        Col {
            name: name.into(),
            kind,
            required: false,
        }
    }
}

/// The error for a CSV column that should hold numbers (or booleans) but has a cell that is not
/// one: the first such cell, with its row. Falls back to the column-level type error.
pub(super) fn first_unparsable_cell(file: &TableFile, column: &str, kind: Kind) -> Error {
    let fallback = || Error::WrongType {
        path: file.path.clone(),
        column: column.into(),
        expected: kind.describe(),
        found: "text".into(),
        fix: kind.pandas_fix(column),
    };
    let Ok(lf) = scan(file, &[column]) else {
        return fallback();
    };
    let Ok(df) = lf.select([col(column)]).collect() else {
        return fallback();
    };
    let Ok(cells) = df.column(column).and_then(|c| c.str().cloned()) else {
        return fallback();
    };
    let parses = |t: &str| {
        let t = t.trim();
        match kind {
            Kind::Int => {
                t.parse::<i64>().is_ok() || t.parse::<f64>().is_ok_and(|x| x.fract() == 0.0)
            }
            // `nan`, `inf`, `Infinity` parse in Rust but not in the CSV reader (which read the
            // column as text for them): the cell is named by row, not the column as text.
            Kind::Float => t.parse::<f64>().is_ok_and(f64::is_finite),
            Kind::Bool => matches!(
                t.to_ascii_lowercase().as_str(),
                "true" | "false" | "0" | "1"
            ),
            Kind::Str | Kind::StrList => true,
        }
    };
    match cells
        .iter()
        .enumerate()
        .find(|(_, v)| v.is_some_and(|t| !parses(t)))
    {
        Some((row, Some(value))) => {
            // `nan` or `inf` as text: a number, but not a finite one.
            let non_finite = kind == Kind::Float && value.trim().parse::<f64>().is_ok();
            Error::BadValue {
                path: file.path.clone(),
                column: column.into(),
                row: Row::at(row),
                value: format!("{value:?}"),
                problem: match kind {
                    Kind::Bool => "expected a boolean: true or false, or 1 or 0".into(),
                    Kind::Float if non_finite => format!(
                        "expected {}, found {value:?}, which is not a finite number",
                        kind.describe()
                    ),
                    _ => format!("expected {}, found text", kind.describe()),
                },
                fix: if non_finite {
                    "write a finite number (score a failed call, e.g. 0, instead of NaN), or drop the row"
                    .into()
                } else {
                    format!(
                        "write a value, or leave the cell empty (no quotes) where one may be missing; {}",
                        kind.pandas_fix(column)
                    )
                },
            }
        }
        // Every cell reads as a boolean, in two forms: true/false beside 1/0.
        _ if kind == Kind::Bool => Error::WrongType {
            path: file.path.clone(),
            column: column.into(),
            expected: kind.describe(),
            found: "text mixing true/false with 1/0".into(),
            fix: "write every cell in one form: true and false, or 1 and 0".into(),
        },
        _ => fallback(),
    }
}

/// Replaces a float column that should hold integers (pandas writes an integer column with nulls
/// as float64) by its Int64 version, after checking that every value is a whole number.
///
/// # Errors
/// The first fractional, infinite or out-of-range value, with its row.
pub(super) fn whole_numbers_to_int(df: &mut DataFrame, path: &Path, name: &str) -> Result<()> {
    let unreadable = |e| polars_unreadable(path, e);
    let floats = df
        .column(name)
        .map_err(unreadable)?
        .f64()
        .map_err(unreadable)?;
    let mut ints: Vec<Option<i64>> = Vec::with_capacity(floats.len());
    for (i, v) in floats.iter().enumerate() {
        match v {
            None => ints.push(None),
            Some(x) if x.is_nan() => ints.push(None),
            Some(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => ints.push(Some(x as i64)),
            Some(x) => {
                return Err(Error::BadValue {
                    path: path.to_path_buf(),
                    column: name.into(),
                    row: Row::at(i),
                    value: float_text(x),
                    problem: "this column holds whole numbers (it is stored as floats, as pandas does for integers with nulls)".into(),
                    fix: format!(
                        "fix the value; in pandas, df[\"{name}\"].astype(\"Int64\") keeps integers with nulls as integers"
                    ),
                });
            }
        }
    }
    let column = Column::new(name.into(), ints);
    df.with_column(column).map_err(unreadable)?;
    Ok(())
}

/// A sentence naming a column of `schema` that is `wanted` but for capitals or surrounding
/// spaces (`Case_ID`, `case_id `), as spreadsheets and hand-written headers leave them; "" when
/// none is.
pub fn near_miss(wanted: &str, schema: &Schema) -> String {
    schema
        .iter_names()
        .find(|n| n.as_str() != wanted && n.trim().eq_ignore_ascii_case(wanted))
        .map(|n| {
            format!(
                ". `{}` differs from `{wanted}` only in capitals or spaces: rename it to `{wanted}` (names are exact)",
                crate::text::truncate(n, 80)
            )
        })
        .unwrap_or_default()
}

/// A CSV read as one column whose name holds `;`, a tab or `|`: a file written with another
/// separator (a spreadsheet in a locale with decimal commas writes `;`). Said as such, rather
/// than as a missing column beside one named `unit;block;tokens`.
fn other_separator(file: &TableFile, schema: &Schema) -> Option<Error> {
    if file.format != super::Format::Csv || schema.len() != 1 {
        return None;
    }
    let name = schema.iter_names().next()?;
    let (sep, word) = [(';', "semicolons"), ('\t', "tabs"), ('|', "bars")]
        .into_iter()
        .find(|(c, _)| name.contains(*c))?;
    Some(Error::Unreadable {
        path: file.path.clone(),
        problem: format!(
            "reads as one column, `{}`: its fields are separated by {word} ({sep:?}), and ablate reads comma-separated CSV",
            crate::text::truncate(name, 80)
        ),
        fix: "save it as comma-separated CSV (a spreadsheet's \"CSV UTF-8 (comma delimited)\"), or as Parquet".into(),
    })
}

/// Checks every spec against a schema and returns the projection (with casts) to read.
///
/// An integer column stored in a type wider than i64 (unsigned 64-bit, 128-bit) is read when
/// every value fits: Polars' cast would turn the others into nulls without a word, so the first
/// value beyond i64 is refused here, with its row (`refuse_beyond_i64`).
///
/// # Errors
/// Missing required columns, mistyped columns, integers beyond i64, and integers other than 0
/// and 1 in a boolean column. (A CSV column empty in every row is read as nulls.)
pub fn check_columns(file: &TableFile, schema: &Schema, specs: &[Col]) -> Result<Vec<Expr>> {
    let path = file.path.as_path();
    refuse_repeated_columns(file, schema, specs)?;
    let mut exprs = Vec::new();
    for spec in specs {
        match schema.get(spec.name.as_str()) {
            None if spec.required => {
                if let Some(e) = other_separator(file, schema) {
                    return Err(e);
                }
                return Err(Error::MissingColumn {
                    path: path.to_path_buf(),
                    column: spec.name.clone(),
                    expected: spec.kind.describe(),
                    found: schema
                        .iter_names()
                        .map(|n| n.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    hint: near_miss(&spec.name, schema),
                });
            }
            None => {}
            Some(dtype) => {
                // A CSV column left empty in every row is inferred as text: it holds no value,
                // like pandas' all-null column, whatever its kind.
                let empty_csv_column = file.format == super::Format::Csv
                    && matches!(dtype, DataType::String)
                    && !matches!(spec.kind, Kind::Str | Kind::StrList)
                    && all_empty(file, &spec.name)?;
                let dtype = if empty_csv_column {
                    &DataType::Null
                } else {
                    dtype
                };
                // Booleans written as 1 and 0 (CSV from R, SQL or spreadsheets; Parquet from
                // tools without a boolean type): read when every value is one of the two.
                if spec.kind == Kind::Bool && dtype.is_integer() {
                    refuse_beyond_zero_one(file, &spec.name)?;
                    exprs.push(col(spec.name.as_str()).cast(DataType::Boolean));
                    continue;
                }
                if !spec.kind.accepts(dtype) {
                    return Err(Error::WrongType {
                        path: path.to_path_buf(),
                        column: spec.name.clone(),
                        expected: spec.kind.describe(),
                        found: format!("{dtype}"),
                        fix: spec.kind.pandas_fix(&spec.name),
                    });
                }
                if spec.kind == Kind::Int
                    && matches!(
                        dtype,
                        DataType::UInt64 | DataType::UInt128 | DataType::Int128
                    )
                {
                    refuse_beyond_i64(file, &spec.name, dtype)?;
                }
                let target = spec.kind.target(dtype);
                exprs.push(col(spec.name.as_str()).cast(target));
            }
        }
    }
    Ok(exprs)
}

/// Refuses the first value of an integer column that i64 cannot hold (a column stored as
/// unsigned 64-bit or 128-bit integers): the rows where the value is present but its cast to
/// i64 is null. Reads that one column, only for those rare types.
///
/// # Errors
/// [`Error::BadValue`] naming the file, column, row and value; an unreadable file.
fn refuse_beyond_i64(file: &TableFile, name: &str, dtype: &DataType) -> Result<()> {
    let lost = col(name)
        .is_not_null()
        .and(col(name).cast(DataType::Int64).is_null());
    let problem = match file.format {
        super::Format::Parquet => format!(
            "beyond the largest integer ablate reads, {} (the column is stored as {dtype})",
            i64::MAX
        ),
        super::Format::Csv => {
            format!("beyond the largest integer ablate reads, {}", i64::MAX)
        }
    };
    refuse_first_where(
        file,
        name,
        lost,
        problem,
        "fix the value or drop the row; no count, repeat or size reaches it".into(),
    )
}

/// Whether a CSV column has no value in any row (every cell empty).
///
/// # Errors
/// The file cannot be read.
fn all_empty(file: &TableFile, name: &str) -> Result<bool> {
    let any = scan(file, &[name])?
        .select([col(name).is_not_null().any(true).alias("any")])
        .collect()
        .map_err(|e| polars_unreadable(&file.path, e))?;
    Ok(any.column("any").ok().and_then(|c| c.bool().ok()?.get(0)) != Some(true))
}

/// Refuses the first value other than 0 and 1 in an integer column read as booleans.
///
/// # Errors
/// [`Error::BadValue`] naming the file, column, row and value; an unreadable file.
fn refuse_beyond_zero_one(file: &TableFile, name: &str) -> Result<()> {
    let other = col(name).neq(lit(0)).and(col(name).neq(lit(1)));
    refuse_first_where(
        file,
        name,
        other,
        "expected a boolean: true or false, or 1 or 0".into(),
        format!(
            "write 1 (true) or 0 (false), or leave the cell empty where the value is unknown; {}",
            Kind::Bool.pandas_fix(name)
        ),
    )
}

/// Refuses the first row of column `name` where `condition` holds ([`first_row_where`]), with
/// its value, `problem` and `fix`.
///
/// # Errors
/// [`Error::BadValue`] naming the file, column, row and value; an unreadable file.
/// Refuses a CSV header that names one of the columns ablate reads twice (`score,score`, as a
/// join or a concatenation in a notebook writes it): which one holds the values is ambiguous.
/// Polars reads the second as `<name>_duplicated_<n>`; it had been dropped without a word.
fn refuse_repeated_columns(file: &TableFile, schema: &Schema, specs: &[Col]) -> Result<()> {
    for spec in specs {
        let copy = format!("{}_duplicated_", spec.name);
        if schema.get(spec.name.as_str()).is_some()
            && schema.iter_names().any(|n| n.starts_with(copy.as_str()))
        {
            return Err(Error::Unreadable {
                path: file.path.clone(),
                problem: format!(
                    "the header names column `{}` more than once, so which one holds its values is ambiguous",
                    spec.name
                ),
                fix: format!(
                    "keep one `{}` column (or rename the others) where the file is written",
                    spec.name
                ),
            });
        }
    }
    Ok(())
}

/// Refuses the first row whose `score` lies outside [lo, hi], the range experiment.toml declares
/// (`score_min`, `score_max`): every interval is drawn in that range, so a score beyond it is
/// either a typo in the range or a score on another scale. A streamed scan.
///
/// # Errors
/// [`Error::BadValue`] naming the row and the score; the file cannot be read.
pub fn refuse_scores_outside(file: &TableFile, lo: f64, hi: f64) -> Result<()> {
    refuse_first_where(
        file,
        "score",
        col("score")
            .cast(DataType::Float64)
            .lt(lit(lo))
            .or(col("score").cast(DataType::Float64).gt(lit(hi))),
        format!("is outside {}", declared_range(lo, hi)),
        OUTSIDE_RANGE_FIX.into(),
    )
}

/// The declared score range in words, for a refusal of a score beyond it (per call here, per
/// cell from an engine's aggregates).
pub fn declared_range(lo: f64, hi: f64) -> String {
    format!(
        "[score_min, score_max] = [{lo}, {hi}], the range experiment.toml declares the scores take"
    )
}

/// What to do about a score outside the declared range.
pub const OUTSIDE_RANGE_FIX: &str = "set score_min and score_max in experiment.toml to the score's true range (every interval is drawn in it), or fix the score";

fn refuse_first_where(
    file: &TableFile,
    name: &str,
    condition: Expr,
    problem: String,
    fix: String,
) -> Result<()> {
    match first_row_where(file, name, condition)? {
        None => Ok(()),
        Some((row, value)) => Err(Error::BadValue {
            path: file.path.clone(),
            column: name.into(),
            row: Row::at(row),
            value,
            problem,
            fix,
        }),
    }
}

/// The first row of column `name` where `condition` holds (null counts as not), with the value
/// as text: a streamed scan that keeps that one row, so a large log is never held in memory.
///
/// # Errors
/// The file cannot be read.
fn first_row_where(
    file: &TableFile,
    name: &str,
    condition: Expr,
) -> Result<Option<(usize, String)>> {
    let unreadable = |e| polars_unreadable(&file.path, e);
    let found = scan(file, &[])?
        .select([col(name)])
        .with_row_index("row", None)
        .filter(condition)
        .select([col("row"), col(name).cast(DataType::String).alias("value")])
        .limit(1);
    let found = super::collect_streaming(found, &file.path)?;
    if found.height() == 0 {
        return Ok(None);
    }
    let row = found
        .column("row")
        .and_then(|c| c.cast(&DataType::UInt64))
        .and_then(|c| c.u64().map(|v| v.get(0)))
        .map_err(unreadable)?
        .unwrap_or(0) as usize;
    let value = found
        .column("value")
        .and_then(|c| c.str().map(|v| v.get(0).unwrap_or_default().to_string()))
        .map_err(unreadable)?;
    Ok(Some((row, value)))
}
