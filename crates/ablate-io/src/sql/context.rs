//! The context-log reduction: per-call size histogram, overflow and soft-limit counts against the
//! hard limit, the step/size sums for the growth slope, and tokens per source.

use super::{Dialect, double, ident, int, literal, table_ref};
use crate::error::{Error, Result};
use crate::io::logs::context::Policy;

/// What the context query needs to know about the log.
#[derive(Debug, Clone, Default)]
pub struct ContextQuery {
    /// Limits for calls the log gives none, and the buffer, margin and soft ratio.
    pub limits: Policy,
    /// Whether the log has `step`.
    pub step: bool,
    /// Whether the log has `model_limit`.
    pub model_limit: bool,
    /// Whether the log has `expected_output`.
    pub expected_output: bool,
}

/// The limits a query was written with, as one text key: the aggregates carry it so that
/// `--from-aggregates` can check it against the limits it is run with.
pub fn limits_key(p: &Policy) -> String {
    let opt = |v: Option<i64>| v.map_or("none".to_string(), |v| v.to_string());
    format!(
        "model_limit={};expected_output={};output_buffer={};safety_margin={};soft_limit_ratio={}",
        opt(p.model_limit),
        opt(p.expected_output),
        p.output_buffer,
        p.safety_margin,
        literal(p.soft_limit_ratio)
    )
}

/// The context query.
///
/// # Errors
/// No model limit in the log and none given.
pub(super) fn query(opts: &super::SqlOptions, q: &ContextQuery) -> Result<String> {
    let d = opts.dialect;
    let log = table_ref("context_log", opts)?;
    let p = &q.limits;
    if !q.model_limit && p.model_limit.is_none() {
        return Err(Error::Unsupported {
            what: "ablate sql context".into(),
            reason: "the log has no model_limit column and no --model-limit was given, so the hard input limit is unknown".into(),
            fix: "give --model-limit (and --expected-output)".into(),
        });
    }
    let (call_cols, keys, hard) = call_columns(q);
    let mut sized = vec![
        "size".to_string(),
        format!("{hard} AS hard"),
        format!("{} AS size_bin", super::shadow::log_bin(d, "size")),
    ];
    if q.step {
        sized.push("step".into());
    }
    Ok(format!(
        "{header}WITH calls AS (
  SELECT
    {call_cols}
  FROM {log}
  GROUP BY {keys}
),
sized AS (
  SELECT
    {sized}
  FROM calls
)
{union}
ORDER BY stat, {key}, bin
",
        header = header(d, q),
        call_cols = call_cols.join(",\n    "),
        keys = keys.join(", "),
        sized = sized.join(",\n    "),
        union = stat_rows(d, q, &log).join("\nUNION ALL\n"),
        key = ident(d, "key"),
    ))
}

/// The `calls` columns and group keys, and the hard-limit expression over them:
/// model_limit − (expected_output + buffer) − margin, with the log's columns when it has them
/// and the limits' values otherwise.
fn call_columns(q: &ContextQuery) -> (Vec<String>, Vec<String>, String) {
    let p = &q.limits;
    let mut call_cols = vec!["request_id".to_string()];
    let mut keys = vec!["request_id".to_string()];
    if q.step {
        call_cols.push("step".into());
        keys.push("step".into());
    }
    call_cols.push("SUM(tokens) AS size".into());
    let fallback = |v: Option<i64>| v.map_or("NULL".to_string(), |v| v.to_string());
    let model = if q.model_limit {
        call_cols.push("MAX(model_limit) AS model_limit".into());
        format!("COALESCE(model_limit, {})", fallback(p.model_limit))
    } else {
        fallback(p.model_limit)
    };
    let expected = if q.expected_output {
        call_cols.push("MAX(expected_output) AS expected_output".into());
        format!(
            "COALESCE(expected_output, {})",
            p.expected_output.unwrap_or(0)
        )
    } else {
        p.expected_output.unwrap_or(0).to_string()
    };
    let hard = format!(
        "{model} - ({expected} + {}) - {}",
        p.output_buffer, p.safety_margin
    );
    (call_cols, keys, hard)
}

/// The `SELECT`s of the long-format stat rows: (stat, key, bin, value, FROM clause) each.
fn stat_rows(d: Dialect, q: &ContextQuery, log: &str) -> Vec<String> {
    let (dbl, i64t, k) = (double(d), int(d), ident(d, "key"));
    let row = |(stat, key, bin, value, rest): (&str, &str, &str, &str, &str)| {
        format!(
            "SELECT '{stat}' AS stat, {key} AS {k}, CAST({bin} AS {i64t}) AS bin, CAST({value} AS {dbl}) AS value FROM {rest}"
        )
    };
    let ok = "sized WHERE hard > 0";
    let (by_bin, by_hard) = (
        format!("{ok} GROUP BY size_bin"),
        format!("{ok} GROUP BY hard"),
    );
    let utilisation = format!("COALESCE(SUM(CAST(size AS {dbl}) / hard), 0)");
    let soft = format!(
        "COALESCE(SUM(CASE WHEN size > ROUND({} * hard, 6) THEN 1 ELSE 0 END), 0)",
        literal(q.limits.soft_limit_ratio)
    );
    let overflow = "COALESCE(SUM(CASE WHEN size > hard THEN 1 ELSE 0 END), 0)";
    let limits = format!("'{}'", limits_key(&q.limits));
    let by_source = format!("{log} GROUP BY source");
    let mut rows = vec![
        ("calls", "''", "0", "COUNT(*)", ok),
        ("size_sum", "''", "0", "COALESCE(SUM(size), 0)", ok),
        ("size_hist", "''", "size_bin", "COUNT(*)", by_bin.as_str()),
        ("hard_calls", "''", "hard", "COUNT(*)", by_hard.as_str()),
        ("utilisation_sum", "''", "0", utilisation.as_str(), ok),
        ("overflow", "''", "0", overflow, ok),
        ("soft_crossing", "''", "0", soft.as_str(), ok),
        (
            "missing_limit",
            "''",
            "0",
            "COUNT(*)",
            "sized WHERE hard IS NULL",
        ),
        (
            "nonpositive_limit",
            "''",
            "0",
            "COUNT(*)",
            "sized WHERE hard <= 0",
        ),
        ("limits", limits.as_str(), "0", "COUNT(*)", "sized"),
        (
            "source_tokens",
            "source",
            "0",
            "SUM(tokens)",
            by_source.as_str(),
        ),
    ];
    if q.step {
        rows.extend([
            ("step_sum", "''", "0", "COALESCE(SUM(step), 0)", ok),
            ("step2_sum", "''", "0", "COALESCE(SUM(step * step), 0)", ok),
            (
                "size_step_sum",
                "''",
                "0",
                "COALESCE(SUM(size * step), 0)",
                ok,
            ),
        ]);
    }
    rows.into_iter().map(row).collect()
}

/// The query's comment header: what a call is, what each stat is, how results merge, and the
/// command to run.
fn header(d: Dialect, q: &ContextQuery) -> String {
    let p = &q.limits;
    format!(
        "-- ablate {version} · sufficient statistics for `ablate context --from-aggregates FILE` ({d})
-- A call is (request_id{step_doc}); its size is the sum of its items' tokens and its hard input
-- limit is model_limit − (expected_output + {buffer}) − {margin} (limits: {limits}).
-- Long format: one row per (stat, key, bin) with a value. Stats: calls, size_sum, size_hist
-- (bin k holds sizes in [2^(k/16), 2^((k+1)/16)), bin −1 holds 0: percentiles read from it are
-- within 2^(1/16) − 1 = 4.4%), hard_calls (bin = the hard limit), utilisation_sum = Σ size/hard,
-- overflow (size > hard), soft_crossing (size > ROUND({soft} · hard, 6)){steps_doc}, source_tokens (key =
-- source), missing_limit and nonpositive_limit (calls that cannot be analysed), limits (key =
-- the limits this query used).
-- Results of this query over separate partitions or days merge by addition: stack them, or
-- GROUP BY stat, key, bin and SUM(value). Partition by request_id, so that a call is never split.
-- Save the result as Parquet or CSV and run: ablate context DIR --from-aggregates FILE
",
        version = env!("CARGO_PKG_VERSION"),
        step_doc = if q.step { ", step" } else { "" },
        buffer = p.output_buffer,
        margin = p.safety_margin,
        limits = limits_key(p),
        soft = literal(p.soft_limit_ratio),
        steps_doc = if q.step {
            ", step_sum, step2_sum, size_step_sum (for the growth slope)"
        } else {
            ""
        },
    )
}
