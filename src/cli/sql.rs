//! `ablate sql`: the reduction to run in the engine where the data lives.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use ablate::error::{Error, Result};
use ablate::io::manifest::Manifest;
use ablate::sql::{self, Dialect, SqlOptions};

use super::Global;

/// SQL engines.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum DialectArg {
    Duckdb,
    Spark,
    Trino,
    Bigquery,
    Polars,
}

/// Print the SQL that reduces raw results to what a verb needs, to run where the data lives.
///
/// For sweep, variance, stress, reweight and interactions (and everything report derives from
/// them): one row per (case_id, arm) with repeats, sum_score, sum_score2, passes (score ≥ the
/// experiment's pass_mark), pass_mark, and the tokens_in sum and count. At most cases × arms
/// rows, whatever the number of repeats. Results over separate partitions or days merge by
/// addition. Run the query in DuckDB, Spark (`spark-sql -f q.sql`, or `spark.sql(open("q.sql").read())`
/// in a notebook), Trino, BigQuery or Polars, save the result as Parquet or CSV, then:
///   ablate sweep DIR --from-aggregates agg.parquet
/// DIR still supplies experiment.toml, cases, arms, units and mix; the answers are those of the
/// direct run (counts exactly, estimates to rounding).
#[derive(Debug, Args)]
pub(super) struct SqlArgs {
    /// The verb to reduce for: any verb on an experiment folder (sweep, variance, stress,
    /// reweight, interactions, need, curve, selector, record, report, check); the query is the
    /// same for all of them.
    verb: String,
    /// Experiment folder (for experiment.toml: the pass mark).
    #[arg(default_value = "notebooks-data/support-eval-v3")]
    dir: PathBuf,
    /// The engine.
    #[arg(long, value_enum)]
    dialect: DialectArg,
    /// Where a table lives: NAME=TABLE (e.g. results=lake.evals.results) or NAME=PATH to a
    /// Parquet file (DuckDB, Spark, Polars) or CSV (DuckDB, Polars). Repeatable.
    #[arg(long = "table", value_name = "NAME=SOURCE")]
    tables: Vec<String>,
    /// The results table has no tokens_in column: leave the token sums out.
    #[arg(long)]
    no_tokens: bool,
}

/// Runs `ablate sql`.
pub(super) fn sql(args: SqlArgs, _g: &Global) -> Result<String> {
    let manifest = Manifest::load(&args.dir)?;
    let mut tables = BTreeMap::new();
    for t in &args.tables {
        let (name, source) = t.split_once('=').ok_or_else(|| {
            Error::Usage(format!(
                "--table {t}: write NAME=SOURCE, e.g. --table results=lake.evals.results"
            ))
        })?;
        if name != "results" {
            return Err(Error::Usage(format!(
                "--table {name}=…: the query reads only `results`; the experiment folder supplies the other tables"
            )));
        }
        tables.insert(name.to_string(), source.to_string());
    }
    let dialect = match args.dialect {
        DialectArg::Duckdb => Dialect::DuckDb,
        DialectArg::Spark => Dialect::Spark,
        DialectArg::Trino => Dialect::Trino,
        DialectArg::Bigquery => Dialect::BigQuery,
        DialectArg::Polars => Dialect::Polars,
    };
    sql::query(
        &args.verb,
        &SqlOptions {
            dialect,
            tables,
            pass_mark: manifest.pass_mark,
            tokens: !args.no_tokens,
        },
    )
}
