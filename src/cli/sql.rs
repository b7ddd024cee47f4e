//! `ablate sql`: the reduction to run in the engine where the data lives.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use ablate::error::{Error, Result};
use ablate::io::manifest::Manifest;
use ablate::sql::{self, ContextQuery, Dialect, ShadowQuery, SqlOptions};
use ablate::verb::Verb;

use super::live::LimitArgs;
use super::{Global, refuse_json};

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
/// For the verbs that read an experiment (report included): one row per (case_id, arm) with the
/// repeats, the score sums and the lowest and highest score, whatever the number of repeats. For shadow and context: sums and
/// log-spaced histograms. Run the query in DuckDB, Spark, Trino, BigQuery or Polars, save the result
/// as Parquet or CSV, then run the verb with --from-aggregates (the folder still supplies
/// experiment.toml and the small tables). The queries and their accuracy: docs/scale.md.
#[derive(Debug, Args)]
pub(super) struct SqlArgs {
    /// The verb to reduce for: shadow, context, or any verb on an experiment folder (sweep,
    /// variance, stress, reweight, interactions, need, curve, selector, record, report, check:
    /// one query serves them all).
    verb: String,
    /// Experiment folder (experiment.toml for the pass mark; its shadow or context log, if any,
    /// for the columns). Required for the verbs on an experiment; optional for shadow and
    /// context, whose log may live in the warehouse alone, and for them it may be the log file
    /// itself (as `ablate shadow` and `ablate context` take it).
    dir: Option<PathBuf>,
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
    /// shadow: stratum column(s) (repeatable).
    #[arg(long = "by", value_name = "COL")]
    by: Vec<String>,
    /// shadow: column grouping requests into clusters (e.g. user), for Poisson-bootstrap
    /// replicate sums.
    #[arg(long, value_name = "COL")]
    cluster_by: Option<String>,
    /// shadow: Poisson-bootstrap replicates with --cluster-by.
    #[arg(long, default_value_t = ablate::analysis::shadow::DEFAULT_REPLICATES)]
    replicates: usize,
    /// shadow, context: an optional column the log does not have (score, tokens_in; step,
    /// model_limit, expected_output). Repeatable. Read from DIR's log when it has one.
    #[arg(long, value_name = "COL")]
    without: Vec<String>,
    /// context: the limits to write into the query (as `ablate context` takes them).
    #[command(flatten)]
    limits: LimitArgs,
}

/// Runs `ablate sql`.
pub(super) fn sql(args: SqlArgs, g: &Global) -> Result<String> {
    refuse_json(g, "sql", "a query for your engine")?;
    let verb = Verb::parse(&args.verb);
    let reduction = match verb {
        Some(Verb::Shadow) => sql::Reduction::Shadow,
        Some(Verb::Context) => sql::Reduction::Context,
        Some(v) if v.reads_matrix() => sql::Reduction::Matrix { verb: v.name() },
        _ => {
            return Err(Error::Usage(format!(
                "ablate sql {}: no reduction for this verb; there are reductions for {}, {} and {} (one row per case and arm)",
                args.verb,
                Verb::Shadow,
                Verb::Context,
                ablate::verb::matrix_verbs().join(", ")
            )));
        }
    };
    let log_verb = !matches!(reduction, sql::Reduction::Matrix { .. });
    // The logs' queries need no experiment.toml: a warehouse log may have no folder at all.
    let pass_mark = match (&args.dir, log_verb) {
        (_, true) => 0.5,
        (Some(dir), false) => Manifest::load(dir)?.pass_mark,
        (None, false) => {
            return Err(Error::Usage(format!(
                "ablate sql {} needs the experiment folder (its experiment.toml gives the pass mark): ablate sql {} DIR --dialect …",
                args.verb, args.verb
            )));
        }
    };
    let tables = table_sources(&args, reduction)?;
    let dialect = Dialect::from(args.dialect);
    let stem = log_stem(reduction);
    let present = if log_verb {
        log_columns(&args, stem)?
    } else {
        None
    };
    let has = |c: &str| {
        !args.without.iter().any(|w| w == c)
            && present
                .as_ref()
                .is_none_or(|cols| cols.iter().any(|x| x == c))
    };
    let limits = args.limits.policy()?;
    if args.cluster_by.is_some() && !(20..=100_000).contains(&args.replicates) {
        return Err(Error::Usage(format!(
            "--replicates {}: give between 20 and 100000 (200 is plenty for a standard error)",
            args.replicates
        )));
    }
    check_without(&args, reduction)?;
    sql::query(
        reduction,
        &SqlOptions {
            dialect,
            tables,
            pass_mark,
            tokens: !args.no_tokens,
            shadow: ShadowQuery {
                by: args.by.clone(),
                cluster: args.cluster_by.clone(),
                replicates: args.replicates,
                score: has("score"),
                tokens: has("tokens_in"),
            },
            context: ContextQuery {
                limits,
                step: has("step"),
                model_limit: has("model_limit"),
                expected_output: has("expected_output"),
            },
        },
    )
}

/// The `--table NAME=SOURCE` overrides: the query reads one table, and only it may be named.
fn table_sources(args: &SqlArgs, reduction: sql::Reduction) -> Result<BTreeMap<String, String>> {
    let mut tables = BTreeMap::new();
    for t in &args.tables {
        let (name, source) = t.split_once('=').ok_or_else(|| {
            Error::Usage(format!(
                "--table {t}: write NAME=SOURCE, e.g. --table results=lake.evals.results"
            ))
        })?;
        let reads = log_stem(reduction);
        if name != reads {
            return Err(Error::Usage(format!(
                "--table {name}=…: the {} query reads only `{reads}`; the experiment folder supplies the other tables",
                args.verb
            )));
        }
        tables.insert(name.to_string(), source.to_string());
    }
    Ok(tables)
}

impl From<DialectArg> for Dialect {
    fn from(d: DialectArg) -> Dialect {
        match d {
            DialectArg::Duckdb => Dialect::DuckDb,
            DialectArg::Spark => Dialect::Spark,
            DialectArg::Trino => Dialect::Trino,
            DialectArg::Bigquery => Dialect::BigQuery,
            DialectArg::Polars => Dialect::Polars,
        }
    }
}

/// The log's columns: from the log file given, or from the folder's log `stem` when it has one
/// (`None` without either: then every optional column but `--without` is assumed).
///
/// # Errors
/// A path that does not exist (a mistyped path had silently left every column assumed).
fn log_columns(args: &SqlArgs, stem: &str) -> Result<Option<Vec<String>>> {
    let Some(path) = args.dir.as_ref() else {
        return Ok(None);
    };
    let file = if path.is_dir() {
        ablate::io::table::find(path, stem)?
    } else if path.is_file() {
        Some(ablate::io::table::TableFile::at(path.clone()))
    } else {
        return Err(Error::Usage(format!(
            "{}: no such file or folder; give the experiment folder or the log file itself",
            path.display()
        )));
    };
    Ok(match file {
        Some(file) => Some(
            ablate::io::table::schema(&file, &[])?
                .iter_names()
                .map(|n| n.to_string())
                .collect(),
        ),
        None => None,
    })
}

/// The table a log reduction reads (`shadow` or `context_log`; `results` for the matrix).
fn log_stem(reduction: sql::Reduction) -> &'static str {
    match reduction {
        sql::Reduction::Shadow => "shadow",
        sql::Reduction::Context => "context_log",
        sql::Reduction::Matrix { .. } => "results",
    }
}

/// `--without` names only the verb's optional columns.
fn check_without(args: &SqlArgs, reduction: sql::Reduction) -> Result<()> {
    let optional: &[&str] = match reduction {
        sql::Reduction::Shadow => &["score", "tokens_in"],
        sql::Reduction::Context => &["step", "model_limit", "expected_output"],
        sql::Reduction::Matrix { .. } => &[],
    };
    if let Some(w) = args
        .without
        .iter()
        .find(|w| !optional.contains(&w.as_str()))
    {
        return Err(Error::Usage(format!(
            "--without {w}: the {} query's optional columns are {}",
            args.verb,
            if optional.is_empty() {
                "none (use --no-tokens for results without tokens_in)".to_string()
            } else {
                optional.join(", ")
            }
        )));
    }
    Ok(())
}

impl super::VerbArgs for SqlArgs {
    fn paths(&self) -> super::IoPaths {
        match &self.dir {
            Some(dir) => super::IoPaths::experiment(dir),
            None => super::IoPaths::default(),
        }
    }

    fn apply(&self, _g: &mut super::Global) {}
}
