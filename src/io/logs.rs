//! Schemas of the two streamed tables, `shadow` and `context_log`. They can hold hundreds of
//! millions of rows, so loading an experiment only checks their columns and counts their rows; the
//! `shadow` and `context` verbs stream them.

use std::path::PathBuf;

use crate::error::{Error, Result};
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

/// Checks a streamed table's columns against `specs` and counts its rows (a streaming count).
///
/// # Errors
/// Unreadable file, missing or mistyped columns, no rows.
pub fn summarise(file: &TableFile, specs: &[Col]) -> Result<LogSummary> {
    let text: Vec<&str> = specs
        .iter()
        .filter(|c| c.kind == Kind::Str)
        .map(|c| c.name.as_str())
        .collect();
    let mut lf = table::scan(file, &text)?;
    let schema = lf
        .collect_schema()
        .map_err(|e| table::polars_unreadable(&file.path, e))?;
    table::check_columns(&file.path, &schema, specs)?;
    let rows = table::row_count(lf).unwrap_or(0);
    if rows == 0 {
        return Err(Error::EmptyTable {
            path: file.path.clone(),
        });
    }
    Ok(LogSummary {
        path: file.path.clone(),
        rows,
        columns: schema.iter_names().map(|n| n.to_string()).collect(),
    })
}
