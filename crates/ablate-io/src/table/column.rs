//! A table read into memory ([`Table`]) and its typed columns, with the value checks every loader shares.

use std::path::Path;
use std::path::PathBuf;

use polars::prelude::*;

use super::schema::{first_unparsable_cell, whole_numbers_to_int};
use super::{Col, Format, Kind, TableFile, check_columns, polars_unreadable, row_count, scan};
use crate::error::{Error, Result, Row};
use crate::text::float_text;

/// A table read into memory with its columns checked and cast to the types of their specs.
#[derive(Debug, Clone)]
pub struct Table {
    /// Where it came from.
    pub path: PathBuf,
    /// The projected, cast columns.
    pub df: DataFrame,
}

/// Reads the columns named by `specs` from a table (projection pushed into the scan).
///
/// # Errors
/// A required column is missing, a column has the wrong type, the file is unreadable or the table
/// has no rows.
pub fn read(file: &TableFile, specs: &[Col]) -> Result<Table> {
    read_coded(file, specs, &[])
}

/// As [`read`], with the text columns `coded` read as categoricals: one dictionary of distinct
/// values and a u32 code per row, instead of a string per row (for ids repeated over millions of
/// rows, such as results' case_id and arm).
///
/// # Errors
/// As [`read`].
pub fn read_coded(file: &TableFile, specs: &[Col], coded: &[&str]) -> Result<Table> {
    let text: Vec<&str> = specs
        .iter()
        .filter(|c| matches!(c.kind, Kind::Str | Kind::StrList))
        .map(|c| c.name.as_str())
        .collect();
    let mut lf = scan(file, &text)?;
    let schema = lf
        .collect_schema()
        .map_err(|e| polars_unreadable(&file.path, e))?;
    let exprs = match check_columns(file, &schema, specs) {
        // A header-only CSV infers every column as text; report it as empty, not as mistyped.
        Err(Error::WrongType { .. })
            if file.format == Format::Csv && row_count(lf.clone()) == Some(0) =>
        {
            return Err(Error::EmptyTable {
                path: file.path.clone(),
            });
        }
        // A CSV number column read as text: name the first cell that is not a number.
        Err(Error::WrongType { column, .. }) if file.format == Format::Csv => {
            let kind = specs
                .iter()
                .find(|s| s.name == column)
                .map_or(Kind::Float, |s| s.kind);
            return Err(first_unparsable_cell(file, &column, kind));
        }
        other => other?,
    };
    let categorical = DataType::from_categories(Categories::global());
    let mut df = lf
        .select(exprs)
        .with_columns(
            coded
                .iter()
                .map(|c| col(*c).cast(categorical.clone()))
                .collect::<Vec<_>>(),
        )
        .collect()
        .map_err(|e| polars_unreadable(&file.path, e))?;
    for spec in specs.iter().filter(|s| s.kind == Kind::Int) {
        if df
            .column(spec.name.as_str())
            .is_ok_and(|c| c.dtype().is_float())
        {
            whole_numbers_to_int(&mut df, &file.path, &spec.name)?;
        }
    }
    if df.height() == 0 {
        return Err(Error::EmptyTable {
            path: file.path.clone(),
        });
    }
    Ok(Table {
        path: file.path.clone(),
        df,
    })
}

/// Whether `c` may not appear in an id: a control character, or a Unicode noncharacter
/// (U+FDD0..=U+FDEF, and the last two code points of every plane, U+xFFFE and U+xFFFF). XML
/// cannot carry U+FFFE or U+FFFF (the report's SVG charts failed on them as an internal error),
/// and the others are reserved for a program's own use, never for interchange. The bidirectional
/// formatting characters too ([`crate::escape::is_bidi_control`]): in a name on a page or in a
/// terminal they reorder the text after them, ablate's own numbers included.
pub fn refused_in_id(c: char) -> bool {
    c.is_control()
        || crate::escape::is_bidi_control(c)
        || ('\u{FDD0}'..='\u{FDEF}').contains(&c)
        || (c as u32 & 0xFFFE) == 0xFFFE
}

/// Refuses an empty or blank id (a blank label everywhere it is shown), and control characters
/// (line breaks, tabs, escape codes) and Unicode noncharacters
/// ([`refused_in_id`]) in an id: control characters make distinct sets of ids hash alike in
/// `set_sha256` (ids are joined with line breaks) and corrupt terminal and report output, and
/// U+FFFE cannot be written in the report's charts.
///
/// # Errors
/// [`Error::BadValue`] naming the file, column, row and the id.
pub fn check_id(path: &Path, column: &str, row: usize, id: &str) -> Result<()> {
    if id.trim().is_empty() {
        return Err(Error::BadValue {
            path: path.to_path_buf(),
            column: column.into(),
            row: Row::at(row),
            value: format!("{id:?}"),
            problem: "an id may not be empty or only spaces: it would show as a blank label in every table and chart".into(),
            fix: "give every row an id with letters or digits where the table is made (the harness or the script that wrote it)".into(),
        });
    }
    if let Some(c) = id.chars().find(|&c| refused_in_id(c)) {
        return Err(Error::BadValue {
            path: path.to_path_buf(),
            column: column.into(),
            row: Row::at(row),
            value: format!("{id:?}"),
            problem: format!(
                "ids may not contain control characters (line breaks, tabs, escape codes, direction marks) or Unicode noncharacters (U+FFFE, U+FFFF, U+FDD0..U+FDEF); this one has U+{:04X}",
                c as u32
            ),
            fix: format!(
                "strip or replace them where {} is made (the harness or the script that wrote it), e.g. in pandas df[col].str.replace(r\"[\\x00-\\x1f\\x7f\\ufdd0-\\ufdef\\ufffe\\uffff]\", \" \", regex=True)",
                path.file_name().map_or_else(
                    || path.display().to_string(),
                    |n| n.to_string_lossy().into_owned()
                )
            ),
        });
    }
    Ok(())
}

impl Table {
    /// Number of rows.
    pub fn height(&self) -> usize {
        self.df.height()
    }

    /// Whether the table has a column (after projection: an optional column that was present).
    pub fn has(&self, name: &str) -> bool {
        self.df.column(name).is_ok()
    }

    fn column(&self, name: &str) -> Result<&Column> {
        self.df.column(name).map_err(|_| Error::MissingColumn {
            path: self.path.clone(),
            column: name.to_string(),
            expected: "a column",
            found: self
                .df
                .get_column_names()
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            hint: String::new(),
        })
    }

    /// A text column as Polars holds it, for iterating without copying.
    pub fn str_column(&self, name: &str) -> Result<&StringChunked> {
        self.column(name)?
            .str()
            .map_err(|e| polars_unreadable(&self.path, e))
    }

    /// The error for a null where a value is required.
    pub fn null_error(&self, name: &str, row: usize, what: &str) -> Error {
        Error::BadValue {
            path: self.path.clone(),
            column: name.to_string(),
            row: Row::at(row),
            value: "null".into(),
            problem: format!("a value is required here ({what})"),
            fix: "fill in the missing value or drop the row".into(),
        }
    }

    /// A text column with no nulls.
    pub fn strs(&self, name: &str) -> Result<Vec<String>> {
        self.opt_strs(name)?
            .into_iter()
            .enumerate()
            .map(|(i, v)| v.ok_or_else(|| self.null_error(name, i, "text")))
            .collect()
    }

    /// A text column that may hold nulls.
    pub fn opt_strs(&self, name: &str) -> Result<Vec<Option<String>>> {
        let c = self.column(name)?;
        let ca = c.str().map_err(|e| polars_unreadable(&self.path, e))?;
        Ok(ca.iter().map(|v| v.map(str::to_string)).collect())
    }

    /// An integer column that may hold nulls.
    pub fn opt_ints(&self, name: &str) -> Result<Vec<Option<i64>>> {
        let c = self.column(name)?;
        let ca = c.i64().map_err(|e| polars_unreadable(&self.path, e))?;
        Ok(ca.iter().collect())
    }

    /// A float column that may hold nulls (values unchecked).
    pub fn opt_floats(&self, name: &str) -> Result<Vec<Option<f64>>> {
        let c = self.column(name)?;
        let ca = c.f64().map_err(|e| polars_unreadable(&self.path, e))?;
        Ok(ca.iter().collect())
    }

    /// An integer column with no nulls.
    pub fn ints(&self, name: &str) -> Result<Vec<i64>> {
        self.opt_ints(name)?
            .into_iter()
            .enumerate()
            .map(|(i, v)| v.ok_or_else(|| self.null_error(name, i, "an integer")))
            .collect()
    }

    /// A float column with no nulls and only finite values.
    ///
    /// # Errors
    /// Nulls, NaN or infinite values (the first one is named).
    pub fn finite_floats(&self, name: &str) -> Result<Vec<f64>> {
        let c = self.column(name)?;
        let ca = c.f64().map_err(|e| polars_unreadable(&self.path, e))?;
        let mut out = Vec::with_capacity(ca.len());
        for (i, v) in ca.iter().enumerate() {
            match v {
                None => return Err(self.null_error(name, i, "a number")),
                Some(x) if !x.is_finite() => {
                    return Err(Error::BadValue {
                        path: self.path.clone(),
                        column: name.into(),
                        row: Row::at(i),
                        value: float_text(x),
                        problem: "values must be finite numbers".into(),
                        fix: "fix or drop the row; a failed call should be scored, not left as NaN"
                            .into(),
                    });
                }
                Some(x) => out.push(x),
            }
        }
        Ok(out)
    }

    /// A boolean column of an optional flag: a null means "not given", false.
    pub fn flags(&self, name: &str) -> Result<Vec<bool>> {
        let c = self.column(name)?;
        let ca = c.bool().map_err(|e| polars_unreadable(&self.path, e))?;
        Ok(ca.iter().map(|v| v.unwrap_or(false)).collect())
    }

    /// A boolean column; nulls are an error.
    pub fn bools(&self, name: &str) -> Result<Vec<bool>> {
        let c = self.column(name)?;
        let ca = c.bool().map_err(|e| polars_unreadable(&self.path, e))?;
        ca.iter()
            .enumerate()
            .map(|(i, v)| v.ok_or_else(|| self.null_error(name, i, "true or false")))
            .collect()
    }

    /// A list-of-text column (Parquet `list<str>`, or CSV text split on `;`). Nulls read as empty lists
    /// in CSV and are an error in Parquet.
    pub fn str_lists(&self, name: &str) -> Result<Vec<Vec<String>>> {
        self.lists(name, false)
    }

    /// A list-of-text column of an optional column: a null row means "not given", an empty list.
    pub fn opt_str_lists(&self, name: &str) -> Result<Vec<Vec<String>>> {
        self.lists(name, true)
    }

    fn lists(&self, name: &str, null_is_empty: bool) -> Result<Vec<Vec<String>>> {
        let c = self.column(name)?;
        match c.dtype() {
            DataType::String => Ok(self
                .opt_strs(name)?
                .into_iter()
                .map(|v| split_list(v.as_deref().unwrap_or("")))
                .collect()),
            _ => {
                let ca = c.list().map_err(|e| polars_unreadable(&self.path, e))?;
                let mut out = Vec::with_capacity(ca.len());
                for (i, s) in ca.series_iter().enumerate() {
                    let Some(s) = s else {
                        if null_is_empty {
                            out.push(Vec::new());
                            continue;
                        }
                        return Err(self.null_error(name, i, "a list, maybe empty"));
                    };
                    if s.dtype() == &DataType::Null {
                        out.push(Vec::new());
                        continue;
                    }
                    let inner = s.str().map_err(|e| polars_unreadable(&self.path, e))?;
                    let mut items = Vec::with_capacity(inner.len());
                    for v in inner.iter() {
                        match v {
                            Some(v) => items.push(v.to_string()),
                            None => return Err(self.null_error(name, i, "list items")),
                        }
                    }
                    out.push(items);
                }
                Ok(out)
            }
        }
    }
}

/// Splits a CSV list cell: `a;b;c` → `[a, b, c]`, blank → `[]`. Items are trimmed.
pub fn split_list(cell: &str) -> Vec<String> {
    cell.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Reports the first repeated key in a list of keys (rows in file order).
///
/// # Errors
/// [`Error::BadValue`] naming the key columns, the row of the second occurrence and the key.
pub fn check_unique<K: std::hash::Hash + Eq + std::fmt::Debug>(
    path: &Path,
    columns: &str,
    keys: impl IntoIterator<Item = K>,
) -> Result<()> {
    let keys = keys.into_iter();
    let mut seen = polars::prelude::PlHashMap::with_capacity(keys.size_hint().0);
    for (i, k) in keys.enumerate() {
        if let Some(first) = seen.get(&k) {
            return Err(Error::BadValue {
                path: path.to_path_buf(),
                column: columns.into(),
                row: Row::at(i),
                value: format!("{k:?}"),
                problem: format!("duplicate key (first seen at row {})", first + 1),
                fix: "each key must appear once; drop or merge the duplicate rows".into(),
            });
        }
        seen.insert(k, i);
    }
    Ok(())
}

/// Refuses a token count that is negative or above [`crate::logs::MAX_TOKENS`] (10¹², beyond any
/// context window: larger ones overflow the sums they enter to infinity), naming the first row.
/// One pass over the values.
///
/// # Errors
/// [`Error::BadValue`] naming the file, column, row and value.
pub fn check_token_counts(path: &Path, column: &str, values: &[f64]) -> Result<()> {
    let most = crate::logs::MAX_TOKENS as f64;
    let Some((i, &v)) = values
        .iter()
        .enumerate()
        .find(|(_, v)| **v < 0.0 || **v > most)
    else {
        return Ok(());
    };
    let (problem, fix) = if v < 0.0 {
        ("must not be negative", "token counts are zero or more")
    } else {
        (
            "is more than 10^12 tokens, beyond any context window (sums of such counts overflow)",
            "token counts are zero to 10^12",
        )
    };
    Err(Error::BadValue {
        path: path.to_path_buf(),
        column: column.into(),
        row: Row::at(i),
        value: float_text(v),
        problem: problem.into(),
        fix: format!(
            "{fix}; fix them where the table is made (the harness, or the script that wrote it)"
        ),
    })
}

/// Checks that a column of numbers has no negative value.
///
/// # Errors
/// The first negative value, with its row.
pub fn check_non_negative(path: &Path, column: &str, values: &[f64]) -> Result<()> {
    if let Some((i, v)) = values.iter().enumerate().find(|(_, v)| **v < 0.0) {
        return Err(Error::BadValue {
            path: path.to_path_buf(),
            column: column.into(),
            row: Row::at(i),
            value: float_text(*v),
            problem: "must not be negative".into(),
            fix: "counts and shares are zero or more; fix them where the table is made (the script that wrote it)".into(),
        });
    }
    Ok(())
}
