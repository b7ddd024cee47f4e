//! `ablate sql`: the query that reduces raw tables to the unit of analysis inside the engine where
//! they live (DuckDB, Spark, Trino, BigQuery, Polars SQL), as warehouse-native experimentation
//! platforms do. `ablate VERB --from-aggregates FILE` then runs the statistics on the small result.
//!
//! For the verbs that rest on the case × arm matrix (sweep, variance, stress, reweight,
//! interactions, and everything `report` derives from them) the query returns one row per
//! (case_id, arm) with the sufficient statistics of its repeats:
//!
//! - `repeats` = n, `sum_score` = Σx, `sum_score2` = Σx², `passes` = #{x ≥ pass_mark};
//! - `sum_tokens_in`, `n_tokens_in` for the mean input tokens (unless `--no-tokens`);
//! - `pass_mark`, the constant the passes were counted against (checked on the way back in).
//!
//! From these, a cell's mean is Σx/n and its variance (Σx² − (Σx)²/n)/(n − 1), so every statistic
//! of those verbs is reproduced (churn from passes, within-case variance, lost cases, the
//! bootstrap over case means). Rows of the same (case_id, arm) add: partitions or days queried
//! separately merge by summing each column, which the header comment of the query says.
//!
//! `shadow` and `context` reduce their production logs to long tables of sums and log-spaced
//! histograms ([`shadow`], [`context`]); those too merge by addition.

pub mod context;
pub mod shadow;

use std::collections::BTreeMap;
use std::fmt;

use crate::error::{Error, Result};
pub use context::ContextQuery;
pub use shadow::ShadowQuery;

/// SQL engines `ablate sql` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// DuckDB.
    DuckDb,
    /// Spark SQL.
    Spark,
    /// Trino (and Presto).
    Trino,
    /// Google BigQuery.
    BigQuery,
    /// Polars SQL.
    Polars,
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dialect::DuckDb => "duckdb",
            Dialect::Spark => "spark",
            Dialect::Trino => "trino",
            Dialect::BigQuery => "bigquery",
            Dialect::Polars => "polars",
        })
    }
}

/// The verbs whose input reduces to the case × arm matrix (every verb on an experiment folder:
/// `report` and `record` rest on the same matrix).
pub const MATRIX_VERBS: &[&str] = &[
    "sweep",
    "variance",
    "stress",
    "reweight",
    "interactions",
    "need",
    "curve",
    "selector",
    "record",
    "report",
    "check",
];

/// Settings of the emitted query.
#[derive(Debug, Clone)]
pub struct SqlOptions {
    /// The engine.
    pub dialect: Dialect,
    /// Table name → the user's table or file (`--table results=warehouse.evals.results`).
    pub tables: BTreeMap<String, String>,
    /// The experiment's pass mark (from experiment.toml).
    pub pass_mark: f64,
    /// Whether results has `tokens_in`.
    pub tokens: bool,
    /// For `shadow`: the log's strata, clusters and columns.
    pub shadow: ShadowQuery,
    /// For `context`: the log's columns and the limits.
    pub context: ContextQuery,
}

/// The dialect's text type.
fn text(d: Dialect) -> &'static str {
    match d {
        Dialect::Spark | Dialect::BigQuery => "STRING",
        _ => "VARCHAR",
    }
}

/// The dialect's double type.
fn double(d: Dialect) -> &'static str {
    match d {
        Dialect::BigQuery => "FLOAT64",
        _ => "DOUBLE",
    }
}

/// The dialect's 64-bit integer type.
fn int(d: Dialect) -> &'static str {
    match d {
        Dialect::BigQuery => "INT64",
        _ => "BIGINT",
    }
}

/// A quoted identifier (a user's column name).
fn ident(d: Dialect, name: &str) -> String {
    match d {
        Dialect::Spark | Dialect::BigQuery => format!("`{}`", name.replace('`', "``")),
        _ => format!("\"{}\"", name.replace('"', "\"\"")),
    }
}

/// How a table is referenced: a name as given, or for a file path a dialect's file reader.
fn table_ref(name: &str, opts: &SqlOptions) -> Result<String> {
    let source = opts.tables.get(name).map_or(name, String::as_str);
    let is_path = source.contains('/') || source.ends_with(".parquet") || source.ends_with(".csv");
    if !is_path {
        return Ok(source.to_string());
    }
    let quoted = source.replace('\'', "''");
    let csv = source.ends_with(".csv");
    match (opts.dialect, csv) {
        (Dialect::DuckDb, false) => Ok(format!("read_parquet('{quoted}')")),
        (Dialect::DuckDb, true) => Ok(format!("read_csv_auto('{quoted}')")),
        (Dialect::Spark, false) => Ok(format!("parquet.`{}`", source.replace('`', "``"))),
        (Dialect::Polars, false) => Ok(format!("read_parquet('{quoted}')")),
        (Dialect::Polars, true) => Ok(format!("read_csv('{quoted}')")),
        (d, _) => Err(Error::Usage(format!(
            "--table {name}={source}: {d} reads tables, not files; give a table name (or, for Spark, a Parquet path)"
        ))),
    }
}

/// A float literal every dialect reads as a double.
fn literal(x: f64) -> String {
    let s = format!("{x:?}");
    if s.contains('.') || s.contains('e') {
        s
    } else {
        format!("{s}.0")
    }
}

/// The query for `verb`.
///
/// # Errors
/// A verb whose reduction is not written yet; a file path for an engine that reads tables only.
pub fn query(verb: &str, opts: &SqlOptions) -> Result<String> {
    match verb {
        "shadow" => return shadow::query(opts, &opts.shadow),
        "context" => return context::query(opts, &opts.context),
        v if !MATRIX_VERBS.contains(&v) => {
            return Err(Error::Usage(format!(
                "ablate sql {verb}: no reduction for this verb; there are reductions for shadow, context and {} (one row per case and arm)",
                MATRIX_VERBS.join(", ")
            )));
        }
        _ => {}
    }
    let results = table_ref("results", opts)?;
    let pm = literal(opts.pass_mark);
    let tokens = if opts.tokens {
        "\n  SUM(tokens_in) AS sum_tokens_in,\n  COUNT(tokens_in) AS n_tokens_in,"
    } else {
        ""
    };
    Ok(format!(
        "-- ablate {version} · sufficient statistics for `ablate {verb} --from-aggregates FILE` ({dialect})
-- One row per (case_id, arm): repeats, sum_score, sum_score2, passes (score >= pass_mark){tok}.
-- Results of this query over separate partitions or days merge by addition: stack them, or
-- GROUP BY case_id, arm and SUM every other column (pass_mark must be the same).
-- Save the result as Parquet or CSV and run: ablate {verb} DIR --from-aggregates FILE
SELECT
  case_id,
  arm,
  COUNT(*) AS repeats,
  SUM(score) AS sum_score,
  SUM(score * score) AS sum_score2,
  SUM(CASE WHEN score >= {pm} THEN 1 ELSE 0 END) AS passes,{tokens}
  {pm} AS pass_mark
FROM {results}
GROUP BY case_id, arm
ORDER BY case_id, arm
",
        version = env!("CARGO_PKG_VERSION"),
        dialect = opts.dialect,
        tok = if opts.tokens {
            ", and the tokens_in sum and count"
        } else {
            ""
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(dialect: Dialect) -> SqlOptions {
        SqlOptions {
            dialect,
            tables: BTreeMap::new(),
            pass_mark: 0.5,
            tokens: true,
            shadow: ShadowQuery::default(),
            context: ContextQuery::default(),
        }
    }

    #[test]
    fn tables_and_files_are_referenced_per_dialect() {
        let mut o = opts(Dialect::DuckDb);
        o.tables.insert("results".into(), "/data/r.parquet".into());
        assert_eq!(
            table_ref("results", &o).unwrap(),
            "read_parquet('/data/r.parquet')"
        );
        o.dialect = Dialect::Spark;
        assert_eq!(
            table_ref("results", &o).unwrap(),
            "parquet.`/data/r.parquet`"
        );
        o.dialect = Dialect::BigQuery;
        assert!(table_ref("results", &o).is_err());
        o.tables
            .insert("results".into(), "proj.evals.results".into());
        assert_eq!(table_ref("results", &o).unwrap(), "proj.evals.results");
        assert_eq!(literal(1.0), "1.0");
        assert_eq!(literal(0.5), "0.5");
    }

    #[test]
    fn the_query_says_how_it_merges() {
        let q = query("sweep", &opts(Dialect::Trino)).unwrap();
        assert!(q.contains("merge by addition"));
        assert!(q.contains("GROUP BY case_id, arm"));
        assert!(q.contains("score >= 0.5"));
        assert!(query("plan", &opts(Dialect::Trino)).is_err());
    }
}
