//! A production mix: one row per production stratum, with its `share` (summing to 1) or its
//! `count`. Every text column is a stratum column; together they name the stratum.

use crate::error::{Error, Result, Row};
use crate::io::table::{self, Col, Kind, TableFile};
use crate::stats::moments;

pub use ablate_core::data::mix::*;

/// Reading a production mix into [`Mix`]: from a `mix` table, or counted from a log.
pub trait MixLoad {
    /// Reads and validates a mix table.
    ///
    /// # Errors
    /// No text column; neither `share` nor `count`; nulls; negative or non-finite shares; shares
    /// that do not sum to 1 within 1e-6; counts summing to 0; duplicate strata.
    fn load(file: &TableFile) -> Result<Mix>;

    /// Derives a mix by counting a production log's rows per combination of the `by` columns
    /// (streamed by Polars: only those columns are read). When the log has a `variant` column
    /// (a shadow-traffic file), only `production` rows are counted.
    ///
    /// # Errors
    /// Unreadable log, `by` columns missing or not text, null stratum values, no rows.
    fn from_log(file: &TableFile, by: &[String]) -> Result<Mix>;
}

impl MixLoad for Mix {
    fn load(file: &TableFile) -> Result<Mix> {
        let schema = table::schema(file, &[])?;
        // The weight is never a stratum, even when a CSV cell made it text (`most`): its check
        // then names the cell that is not a number.
        let is_weight = |name: &str| name == "share" || name == "count";
        let columns: Vec<String> = schema
            .iter()
            .filter(|(name, dtype)| table::is_text(dtype) && !is_weight(name))
            .map(|(name, _)| name.to_string())
            .collect();
        // A stratum written as numbers (turns = 1/2) is a column of the wrong type, not a
        // missing one.
        if columns.is_empty()
            && let Some((name, dtype)) = schema.iter().find(|(name, _)| !is_weight(name))
        {
            return Err(Error::WrongType {
                path: file.path.clone(),
                column: name.to_string(),
                expected: "text (a stratum column, e.g. turns = single/multi)",
                found: dtype.to_string(),
                fix: format!(
                    "stratum values are text, in the mix and in the cases alike; in pandas: df[\"{name}\"] = df[\"{name}\"].astype(str)"
                ),
            });
        }
        if columns.is_empty() {
            return Err(Error::MissingColumn {
                path: file.path.clone(),
                column: "(a stratum column)".into(),
                expected: "text, e.g. turns = single/multi",
                found: column_names(&schema),
                hint: String::new(),
            });
        }
        let has_share = schema.get("share").is_some();
        let weight_col = weight_column(file, &schema)?;
        let mut specs: Vec<Col> = columns
            .iter()
            .map(|c| Col::req(c.clone(), Kind::Str))
            .collect();
        specs.push(weight_col);
        let t = table::read(file, &specs)?;

        let weights: Vec<f64> = if has_share {
            t.finite_floats("share")?
        } else {
            t.ints("count")?.into_iter().map(|c| c as f64).collect()
        };
        let weight_name = if has_share { "share" } else { "count" };
        table::check_non_negative(&t.path, weight_name, &weights)?;
        let total = moments::sum(weights.iter().copied());
        if has_share && (total - 1.0).abs() > SHARE_TOLERANCE {
            return Err(Error::BadValue {
                path: t.path.clone(),
                column: "share".into(),
                row: Row::none(),
                value: format!("sum = {total}"),
                problem: format!("shares must sum to 1 (within {SHARE_TOLERANCE})"),
                fix:
                    "rescale the shares, or give raw `count`s instead and let ablate normalise them"
                        .into(),
            });
        }
        if total <= 0.0 {
            return Err(Error::BadValue {
                path: t.path.clone(),
                column: weight_name.into(),
                row: Row::none(),
                value: format!("sum = {total}"),
                problem: "the total weight is zero".into(),
                fix: "at least one stratum needs production traffic".into(),
            });
        }
        let mut value_columns = Vec::new();
        for c in &columns {
            value_columns.push(t.strs(c)?);
        }
        let strata: Vec<Stratum> = (0..t.height())
            .map(|i| Stratum {
                values: value_columns.iter().map(|v| v[i].clone()).collect(),
                share: weights[i] / total,
            })
            .collect();
        table::check_unique(
            &t.path,
            &columns.join(", "),
            strata.iter().map(|s| s.values.clone()),
        )?;
        Ok(Mix {
            path: t.path,
            columns,
            strata,
            from_counts: !has_share,
        })
    }

    fn from_log(file: &TableFile, by: &[String]) -> Result<Mix> {
        use polars::prelude::*;
        if by.is_empty() {
            return Err(Error::Usage(
                "--mix-from needs --by COL (the log's stratum columns to count)".into(),
            ));
        }
        let mut text: Vec<&str> = by.iter().map(String::as_str).collect();
        text.push("variant");
        let mut lf = table::scan(file, &text)?;
        let schema = lf
            .collect_schema()
            .map_err(|e| table::polars_unreadable(&file.path, e))?;
        let specs: Vec<Col> = by.iter().map(|c| Col::req(c.clone(), Kind::Str)).collect();
        table::check_columns(file, &schema, &specs)?;
        if matches!(schema.get("variant"), Some(DataType::String)) {
            lf = lf.filter(col("variant").eq(lit("production")));
        }
        let keys: Vec<Expr> = by.iter().map(|c| col(c.as_str())).collect();
        let counted = lf
            .select(keys.clone())
            .group_by(keys)
            .agg([len().alias("__count")])
            .sort(
                by.iter().map(String::as_str).collect::<Vec<_>>(),
                SortMultipleOptions::default(),
            )
            .collect()
            .map_err(|e| table::polars_unreadable(&file.path, e))?;
        let t = table::Table {
            path: file.path.clone(),
            df: counted,
        };
        if t.height() == 0 {
            return Err(Error::EmptyTable {
                path: file.path.clone(),
            });
        }
        let mut columns = Vec::new();
        for c in by {
            columns.push(t.strs(c).map_err(|_| Error::BadValue {
                path: file.path.clone(),
                column: c.clone(),
                row: Row::none(),
                value: "null".into(),
                problem: "some rows have no stratum value".into(),
                fix: "fill in the stratum of every logged request".into(),
            })?);
        }
        let counts: Vec<f64> = t
            .ints("__count")
            .or_else(|_| {
                let c =
                    t.df.column("__count")
                        .map_err(|e| table::polars_unreadable(&file.path, e))?;
                let c = c
                    .cast(&DataType::Int64)
                    .map_err(|e| table::polars_unreadable(&file.path, e))?;
                Ok::<Vec<i64>, Error>(
                    c.i64()
                        .map_err(|e| table::polars_unreadable(&file.path, e))?
                        .iter()
                        .map(|v| v.unwrap_or(0))
                        .collect(),
                )
            })?
            .into_iter()
            .map(|v| v as f64)
            .collect();
        let total = moments::sum(counts.iter().copied());
        let strata = (0..t.height())
            .map(|i| Stratum {
                values: columns.iter().map(|v| v[i].clone()).collect(),
                share: counts[i] / total,
            })
            .collect();
        Ok(Mix {
            path: file.path.clone(),
            columns: by.to_vec(),
            strata,
            from_counts: true,
        })
    }
}

/// Tolerance on Σ share = 1.
pub const SHARE_TOLERANCE: f64 = 1e-6;

/// The file's columns, for a message: `a, b, c`.
fn column_names(schema: &polars::prelude::Schema) -> String {
    schema
        .iter_names()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The weight column: `share` or `count`, not both and not neither.
fn weight_column(file: &TableFile, schema: &polars::prelude::Schema) -> Result<Col> {
    let has_share = schema.get("share").is_some();
    let has_count = schema.get("count").is_some();
    match (has_share, has_count) {
        (true, true) => Err(Error::Unreadable {
            path: file.path.clone(),
            problem: "it has both `share` and `count` columns, and they could disagree".into(),
            fix: "keep one of them: shares summing to 1, or raw counts".into(),
        }),
        (true, false) => Ok(Col::req("share", Kind::Float)),
        (false, true) => Ok(Col::req("count", Kind::Int)),
        (false, false) => Err(Error::MissingColumn {
            path: file.path.clone(),
            column: "share".into(),
            expected: "a number per stratum summing to 1 (or give `count` instead)",
            found: column_names(schema),
            hint: super::table::near_miss("share", schema),
        }),
    }
}
