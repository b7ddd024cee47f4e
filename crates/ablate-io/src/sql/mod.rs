//! `ablate sql`: the query that reduces raw tables to the unit of analysis inside the engine where
//! they live (DuckDB, Spark, Trino, BigQuery, Polars SQL), as warehouse-native experimentation
//! platforms do. `ablate VERB --from-aggregates FILE` then runs the statistics on the small result.
//!
//! For the verbs that rest on the case × arm matrix (sweep, variance, stress, reweight,
//! interactions, and everything `report` derives from them) the query returns one row per
//! (case_id, arm) with the sufficient statistics of its repeats:
//!
//! - `repeats` = n, `sum_score` = Σx, `sum_score2` = Σx², `passes` = #{x ≥ pass_mark};
//! - `min_score`, `max_score`, the lowest and highest single score (the range every interval is
//!   drawn in: a case's mean hides a single score beyond it);
//! - `sum_tokens_in`, `n_tokens_in` for the mean input tokens (unless `--no-tokens`);
//! - `pass_mark`, the constant the passes were counted against (checked on the way back in).
//!
//! From these, a cell's mean is Σx/n and its variance (Σx² − (Σx)²/n)/(n − 1), so every statistic
//! of those verbs is reproduced (churn from passes, within-case variance, lost cases, the
//! bootstrap over case means). Rows of the same (case_id, arm) add: partitions or days queried
//! separately merge by summing each sum and count and taking the extremes' minimum and maximum,
//! which the header comment of the query says.
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

/// A quoted identifier (a user's column or table name), in the dialect's own way:
///
/// - DuckDB, Trino and Polars: `"…"`, a `"` inside doubled (the SQL standard's rule);
/// - Spark: `` `…` ``, a backtick inside doubled (Spark SQL reference, "Identifiers");
/// - BigQuery: `` `…` ``, whose quoted identifiers take the escape sequences of string literals
///   (GoogleSQL "Lexical structure": "Quoted identifiers … have the same escape sequences as
///   string literals"), so a backtick is `` \` `` and a backslash `\\`; doubling would end it.
///
/// Names with control characters never get here: [`check_name`] refuses them first.
fn ident(d: Dialect, name: &str) -> String {
    match d {
        Dialect::Spark => format!("`{}`", name.replace('`', "``")),
        Dialect::BigQuery => format!("`{}`", name.replace('\\', "\\\\").replace('`', "\\`")),
        _ => format!("\"{}\"", name.replace('"', "\"\"")),
    }
}

/// A string literal: `'…'` with a `'` inside doubled (DuckDB, Polars; the file readers' path).
fn string_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Refuses a name that ablate would print into a query (a column, a table, a path) when it holds a
/// control character or a line or paragraph separator: in a `--` comment a line break ends the
/// comment and the rest would run as SQL.
///
/// # Errors
/// [`Error::Usage`] naming the option and the character.
pub fn check_name(flag: &str, name: &str) -> Result<()> {
    crate::io::logs::check_column_name(flag, name)
}

/// Whether a `--table` source is a file path (read by the dialect's file reader) rather than a
/// table name.
fn is_path(source: &str) -> bool {
    source.contains('/')
        || source.contains('\\')
        || source.ends_with(".parquet")
        || source.ends_with(".csv")
}

/// How a table is referenced: for a file path, the dialect's file reader with the path as a string
/// literal; otherwise a table name, dotted (`catalog.schema.table`), each part quoted as an
/// identifier. Nothing else is accepted: a source such as `(SELECT …) t; COPY …` is refused, so no
/// text of the user's becomes a second statement.
///
/// # Errors
/// A source with a control character, or that is neither a path nor a dotted name; a file path
/// for an engine that reads tables only.
fn table_ref(name: &str, opts: &SqlOptions) -> Result<String> {
    let source = opts.tables.get(name).map_or(name, String::as_str);
    check_name(&format!("--table {name}="), source)?;
    if !is_path(source) {
        let parts: Vec<&str> = source.split('.').collect();
        let bad = |p: &&str| {
            p.is_empty()
                || p.chars().any(|c| {
                    c.is_whitespace() || matches!(c, ';' | '(' | ')' | ',' | '\'' | '"' | '`')
                })
        };
        if parts.iter().any(bad) {
            return Err(Error::Usage(format!(
                "--table {name}={source}: give a table name (e.g. lake.evals.{name}: parts separated by dots, without spaces, quotes, semicolons or brackets) or the path of a Parquet or CSV file; a query is not accepted"
            )));
        }
        let quoted: Vec<String> = parts.iter().map(|p| ident(opts.dialect, p)).collect();
        return Ok(quoted.join("."));
    }
    let quoted = string_literal(source);
    let csv = source.ends_with(".csv");
    match (opts.dialect, csv) {
        (Dialect::DuckDb, false) => Ok(format!("read_parquet({quoted})")),
        (Dialect::DuckDb, true) => Ok(format!("read_csv_auto({quoted})")),
        (Dialect::Spark, false) => Ok(format!("parquet.{}", ident(Dialect::Spark, source))),
        (Dialect::Polars, false) => Ok(format!("read_parquet({quoted})")),
        (Dialect::Polars, true) => Ok(format!("read_csv({quoted})")),
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

/// What a query reduces: the shadow log, the context log, or the results to the case × arm
/// matrix (for the verb named, which reads it: `ablate::verb::matrix_verbs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduction<'a> {
    /// The results, to one row per (case, arm), for `ablate <verb> --from-aggregates`.
    Matrix {
        /// The verb the reduction is for (named in the query's comments).
        verb: &'a str,
    },
    /// The shadow log, to sums per stratum (and replicate).
    Shadow,
    /// The context log, to sums per group.
    Context,
}

/// The query for `reduction`.
///
/// # Errors
/// A file path for an engine that reads tables only.
pub fn query(reduction: Reduction, opts: &SqlOptions) -> Result<String> {
    let verb = match reduction {
        Reduction::Shadow => return shadow::query(opts, &opts.shadow),
        Reduction::Context => return context::query(opts, &opts.context),
        Reduction::Matrix { verb } => verb,
    };
    let results = table_ref("results", opts)?;
    let pm = literal(opts.pass_mark);
    let tokens = if opts.tokens {
        "\n  SUM(tokens_in) AS sum_tokens_in,\n  COUNT(tokens_in) AS n_tokens_in,"
    } else {
        ""
    };
    Ok(format!(
        "-- ablate {version} · sufficient statistics for `ablate {verb} --from-aggregates FILE` ({dialect})
-- One row per (case_id, arm): repeats, sum_score, sum_score2, passes (score >= pass_mark),
-- the lowest and highest score{tok}.
-- Results of this query over separate partitions or days merge by addition: stack them, or
-- GROUP BY case_id, arm, SUM the sums and counts, MIN min_score and MAX max_score
-- (pass_mark must be the same).
-- Save the result as Parquet or CSV and run: ablate {verb} DIR --from-aggregates FILE
SELECT
  case_id,
  arm,
  COUNT(*) AS repeats,
  SUM(score) AS sum_score,
  SUM(score * score) AS sum_score2,
  SUM(CASE WHEN score >= {pm} THEN 1 ELSE 0 END) AS passes,
  MIN(score) AS min_score,
  MAX(score) AS max_score,{tokens}
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
            .insert("results".into(), "my-proj.evals.results".into());
        assert_eq!(
            table_ref("results", &o).unwrap(),
            "`my-proj`.`evals`.`results`"
        );
        o.dialect = Dialect::Trino;
        assert_eq!(
            table_ref("results", &o).unwrap(),
            "\"my-proj\".\"evals\".\"results\""
        );
        for bad in [
            "(SELECT 1) t; COPY x TO 'y.csv'; SELECT 1",
            "a..b",
            "a b",
            "lake.evals.results\n--",
        ] {
            o.tables.insert("results".into(), bad.into());
            assert!(table_ref("results", &o).is_err(), "{bad:?}");
        }
        o.dialect = Dialect::DuckDb;
        o.tables
            .insert("results".into(), "/data/it's.parquet".into());
        assert_eq!(
            table_ref("results", &o).unwrap(),
            "read_parquet('/data/it''s.parquet')"
        );
        assert_eq!(literal(1.0), "1.0");
        assert_eq!(literal(0.5), "0.5");
    }

    #[test]
    fn identifiers_follow_each_dialects_quoting() {
        assert_eq!(ident(Dialect::DuckDb, "a\"b"), "\"a\"\"b\"");
        assert_eq!(ident(Dialect::Trino, "a\"b"), "\"a\"\"b\"");
        assert_eq!(ident(Dialect::Polars, "a\"b"), "\"a\"\"b\"");
        assert_eq!(ident(Dialect::Spark, "a`b"), "`a``b`");
        assert_eq!(ident(Dialect::BigQuery, "a`b"), "`a\\`b`");
        assert_eq!(ident(Dialect::BigQuery, "a\\`"), "`a\\\\\\``");
    }

    #[test]
    fn the_query_says_how_it_merges() {
        let q = query(Reduction::Matrix { verb: "sweep" }, &opts(Dialect::Trino)).unwrap();
        assert!(q.contains("merge by addition"));
        assert!(q.contains("GROUP BY case_id, arm"));
        assert!(q.contains("score >= 0.5"));
        assert!(q.contains("MIN(score) AS min_score") && q.contains("MAX(score) AS max_score"));
        assert!(q.contains("MIN min_score and MAX max_score"));
    }
}
