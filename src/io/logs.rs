//! Schemas of the two streamed tables, `shadow` and `context_log`. They can hold hundreds of
//! millions of rows, so loading an experiment only checks their columns and counts their rows; the
//! `shadow` and `context` verbs stream them.

use std::path::PathBuf;

use polars::prelude::*;

use crate::error::{Error, Result, Row};
use crate::io::table::{self, Col, Kind, TableFile};

/// Columns of `shadow`: one row per request and variant.
pub fn shadow_columns() -> Vec<Col> {
    vec![
        Col::req("request_id", Kind::Str),
        Col::req("variant", Kind::Str),
        Col::req("answer", Kind::Str),
        Col::opt("score", Kind::Float),
        Col::opt("tokens_in", Kind::Int),
    ]
}

/// Columns of `context_log`: one row per request, call and source item.
pub fn context_columns() -> Vec<Col> {
    vec![
        Col::req("request_id", Kind::Str),
        Col::req("source", Kind::Str),
        Col::req("tokens", Kind::Int),
        Col::opt("step", Kind::Int),
        Col::opt("mandatory", Kind::Bool),
        Col::opt("priority", Kind::Int),
        Col::opt("relevance", Kind::Float),
        Col::opt("content_hash", Kind::Str),
        Col::opt("model_limit", Kind::Int),
        Col::opt("expected_output", Kind::Int),
    ]
}

/// A value rule checked by streaming over a log: rows where `bad` holds are errors.
struct Rule {
    column: String,
    bad: fn(Expr) -> Expr,
    problem: &'static str,
}

fn negative(e: Expr) -> Expr {
    e.lt(lit(0))
}

fn not_finite(e: Expr) -> Expr {
    e.is_finite().not()
}

fn fractional(e: Expr) -> Expr {
    (e % lit(1.0)).neq(lit(0.0))
}

fn control_characters(e: Expr) -> Expr {
    e.str().contains(lit(r"[\x00-\x1F\x7F]"), false)
}

fn null(e: Expr) -> Expr {
    e.is_null()
}

/// Columns that may not hold nulls even though they are optional: a step of an agent call.
const NO_NULLS_WHEN_PRESENT: &[&str] = &["step"];

fn rules(specs: &[Col]) -> Vec<Rule> {
    let named = |n: &str| specs.iter().any(|c| c.name == n);
    let mut out: Vec<Rule> = specs
        .iter()
        .filter(|c| c.required || NO_NULLS_WHEN_PRESENT.contains(&c.name.as_str()))
        .map(|c| Rule {
            column: c.name.clone(),
            bad: null,
            problem: "a value is required here",
        })
        .collect();
    for column in [
        "tokens",
        "tokens_in",
        "expected_output",
        "model_limit",
        "step",
    ] {
        if named(column) {
            out.push(Rule {
                column: column.to_string(),
                bad: negative,
                problem: "must not be negative",
            });
        }
    }
    if named("request_id") {
        out.push(Rule {
            column: "request_id".into(),
            bad: control_characters,
            problem: "ids may not contain control characters (line breaks, tabs, escape codes)",
        });
    }
    for column in ["score", "relevance"] {
        if named(column) {
            out.push(Rule {
                column: column.to_string(),
                bad: not_finite,
                problem: "must be a finite number",
            });
        }
    }
    out
}

/// Finds the first row breaking a rule, streaming (only the rule's column is read).
fn first_violation(lf: &LazyFrame, path: &std::path::Path, rule: &Rule) -> Result<()> {
    let hit = lf
        .clone()
        .select([col(rule.column.as_str())])
        .with_row_index("__row", None)
        .filter((rule.bad)(col(rule.column.as_str())))
        .limit(1)
        .collect()
        .map_err(|e| table::polars_unreadable(path, e))?;
    if hit.height() == 0 {
        return Ok(());
    }
    let row = hit
        .column("__row")
        .ok()
        .and_then(|c| c.get(0).ok())
        .and_then(|v| v.extract::<u64>())
        .unwrap_or(0) as usize;
    let value = hit
        .column(rule.column.as_str())
        .ok()
        .and_then(|c| c.get(0).ok())
        .map(|v| v.to_string())
        .unwrap_or_default();
    Err(Error::BadValue {
        path: path.to_path_buf(),
        column: rule.column.clone(),
        row: Row::at(row),
        value,
        problem: rule.problem.into(),
        fix: "fix the logging, or drop the bad rows before the analysis".into(),
    })
}

/// What a schema check of a streamed table found.
#[derive(Debug, Clone)]
pub struct LogSummary {
    /// Where it is.
    pub path: PathBuf,
    /// Number of rows.
    pub rows: usize,
    /// Its column names.
    pub columns: Vec<String>,
}

/// A streamed table whose columns and values have been checked: a lazy scan of the spec's columns
/// (cast to their kinds), ready for an analysis to aggregate.
pub struct CheckedLog {
    /// The projected, cast scan.
    pub lf: LazyFrame,
    /// The file's schema (before projection).
    pub schema: SchemaRef,
    /// Row count and columns.
    pub summary: LogSummary,
}

impl CheckedLog {
    /// Whether the file has a column.
    pub fn has(&self, column: &str) -> bool {
        self.schema.get(column).is_some()
    }
}

/// Checks a streamed table's columns against `specs`, its values (no negative token counts, no
/// NaN or infinite scores or relevances) and counts its rows, streaming.
///
/// # Errors
/// Unreadable file, missing or mistyped columns, the first bad value, no rows.
pub fn summarise(file: &TableFile, specs: &[Col]) -> Result<LogSummary> {
    Ok(open(file, specs)?.summary)
}

/// As [`summarise`], and returns the checked scan for analysis.
///
/// # Errors
/// As [`summarise`].
pub fn open(file: &TableFile, specs: &[Col]) -> Result<CheckedLog> {
    let text: Vec<&str> = specs
        .iter()
        .filter(|c| c.kind == Kind::Str)
        .map(|c| c.name.as_str())
        .collect();
    let mut lf = table::scan(file, &text)?;
    let schema = lf
        .collect_schema()
        .map_err(|e| table::polars_unreadable(&file.path, e))?;
    let exprs = table::check_columns(&file.path, &schema, specs)?;
    let mut checked = lf.clone().select(exprs);
    // Integers stored as floats (pandas, with nulls) are read as f64: each value must be whole,
    // then the column is an integer column like any other.
    let float_ints: Vec<&str> = specs
        .iter()
        .filter(|c| c.kind == Kind::Int)
        .filter(|c| {
            schema
                .get(c.name.as_str())
                .is_some_and(|d| d.is_float() || d.is_decimal())
        })
        .map(|c| c.name.as_str())
        .collect();
    let mut all_rules = rules(specs);
    all_rules.extend(float_ints.iter().map(|c| Rule {
        column: (*c).to_string(),
        bad: fractional,
        problem: "this column holds whole numbers (it is stored as floats, as pandas does for integers with nulls)",
    }));
    for rule in all_rules {
        if schema.get(rule.column.as_str()).is_some() {
            first_violation(&checked, &file.path, &rule)?;
        }
    }
    if !float_ints.is_empty() {
        checked = checked.with_columns(
            float_ints
                .iter()
                .map(|c| col(*c).cast(DataType::Int64))
                .collect::<Vec<_>>(),
        );
    }
    let rows = table::row_count(lf).unwrap_or(0);
    if rows == 0 {
        return Err(Error::EmptyTable {
            path: file.path.clone(),
        });
    }
    Ok(CheckedLog {
        lf: checked,
        summary: LogSummary {
            path: file.path.clone(),
            rows,
            columns: schema.iter_names().map(|n| n.to_string()).collect(),
        },
        schema,
    })
}

/// A shadow-traffic log opened for `ablate shadow`: columns and values checked, projected to the
/// shadow columns and the stratum columns `by`.
pub struct ShadowLog {
    /// The checked scan.
    pub log: CheckedLog,
    /// Stratum columns, each a required text column of the log.
    pub by: Vec<String>,
}

impl ShadowLog {
    /// Opens `file` as a shadow log broken down by `by`.
    ///
    /// # Errors
    /// A `by` column given twice or naming one of the log's own columns (usage); unreadable file,
    /// missing or mistyped columns, the first bad value.
    pub fn open(file: &TableFile, by: &[String]) -> Result<ShadowLog> {
        let mut specs = shadow_columns();
        for (i, c) in by.iter().enumerate() {
            if by[..i].contains(c) {
                return Err(Error::Usage(format!(
                    "--by {c} is given twice; give each stratum column once"
                )));
            }
            if specs.iter().any(|s| s.name == *c) {
                return Err(Error::Usage(format!(
                    "--by {c}: `{c}` is one of the shadow log's own columns, not a stratum; use a column that describes the request (e.g. --by turns)"
                )));
            }
        }
        specs.extend(by.iter().map(|c| Col::req(c.clone(), Kind::Str)));
        Ok(ShadowLog {
            log: open(file, &specs)?,
            by: by.to_vec(),
        })
    }
}

/// A context log opened for `ablate context`: columns and values checked, projected to the
/// context columns.
pub struct ContextLog {
    /// The checked scan.
    pub log: CheckedLog,
}

impl ContextLog {
    /// Opens `file` as a context log.
    ///
    /// # Errors
    /// Unreadable file, missing or mistyped columns, the first bad value.
    pub fn open(file: &TableFile) -> Result<ContextLog> {
        Ok(ContextLog {
            log: open(file, &context_columns())?,
        })
    }
}
