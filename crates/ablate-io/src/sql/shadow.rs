//! The shadow-traffic reduction: per (stratum, whether the request had a replay row) the integer
//! sums `ablate shadow` needs, log-spaced token histograms, and with a cluster column the
//! Poisson-bootstrap replicate sums (Chamandy et al., 2012).

use super::{Dialect, double, ident, int, table_ref, text};
use crate::error::{Error, Result};
use crate::stats::dist::poisson1_cdf;
use crate::stats::histogram::BINS_PER_DOUBLING;

/// What the shadow query needs to know about the log.
#[derive(Debug, Clone, Default)]
pub struct ShadowQuery {
    /// Stratum columns.
    pub by: Vec<String>,
    /// Cluster column for the Poisson bootstrap.
    pub cluster: Option<String>,
    /// Replicates of the Poisson bootstrap.
    pub replicates: usize,
    /// Whether the log has `score`.
    pub score: bool,
    /// Whether the log has `tokens_in`.
    pub tokens: bool,
}

/// Output columns the stratum columns may not be named.
const RESERVED: &[&str] = &["stat", "replay", "bin", "value"];

/// The prefix of the query's own names for the stratum columns. Inside the query the user's
/// columns are read once, in `per_request`, and renamed `"__ablate_by_0"`, `"__ablate_by_1"`,
/// …; only the last `SELECT` gives them their names back. So no stratum or cluster column can
/// meet one of the query's own columns (`bin_p`, `t_p`, `changed`, `paired`, `n`, `d`, `w`, `b`,
/// `u`, …: `--by bin_p` had grouped every production token count into one bin, and `--by w`,
/// `d`, `n`, `changed`, `paired` or `t_p` made the engine refuse an ambiguous column). A column
/// whose name starts with the prefix is refused.
const OWN_PREFIX: &str = "__ablate_";

/// The query's own name for stratum column `i`, quoted.
fn by_key(d: Dialect, i: usize) -> String {
    ident(d, &format!("{OWN_PREFIX}by_{i}"))
}

/// A uniform number in [0, 1) from the dialect's own 64-bit hash of `expr` (text): the low 53
/// bits, taken sign-safely (a mask or an unsigned remainder), over 2^53.
fn uniform(dialect: Dialect, expr: &str) -> Result<String> {
    let bits = match dialect {
        Dialect::DuckDb => format!("hash({expr}) % 9007199254740992"),
        Dialect::Spark => format!("xxhash64({expr}) & 9007199254740991"),
        Dialect::Trino => {
            format!("bitwise_and(from_big_endian_64(xxhash64(to_utf8({expr}))), 9007199254740991)")
        }
        Dialect::BigQuery => format!("FARM_FINGERPRINT({expr}) & 9007199254740991"),
        Dialect::Polars => {
            return Err(Error::Unsupported {
                what: "ablate sql shadow --cluster-by for Polars".into(),
                reason: "Polars SQL has no hash function to draw the replicate weights from".into(),
                fix: "run `ablate shadow --cluster-by COL` on the file directly (it streams in bounded memory), or emit the query for DuckDB or Spark".into(),
            });
        }
    };
    Ok(format!(
        "CAST({bits} AS {}) / 9007199254740992.0",
        double(dialect)
    ))
}

/// The replicate indexes 0..B as a one-column table `b`.
fn replicate_table(dialect: Dialect, b: usize) -> String {
    let last = b.saturating_sub(1);
    match dialect {
        Dialect::DuckDb => format!("SELECT range AS b FROM range(0, {b})"),
        Dialect::Spark => format!("SELECT explode(sequence(0, {last})) AS b"),
        Dialect::Trino => format!("SELECT b FROM UNNEST(sequence(0, {last})) AS t(b)"),
        Dialect::BigQuery => format!("SELECT b FROM UNNEST(GENERATE_ARRAY(0, {last})) AS b"),
        Dialect::Polars => String::new(),
    }
}

/// The log-bin expression of an integer column (NULL stays NULL; 0 is bin −1).
pub(super) fn log_bin(dialect: Dialect, c: &str) -> String {
    format!(
        "CASE WHEN {c} IS NULL THEN NULL WHEN {c} < 1 THEN -1 ELSE CAST(FLOOR(LN(CAST({c} AS {d})) / 0.6931471805599453 * {BINS_PER_DOUBLING} + 0.000000001) AS {i}) END",
        d = double(dialect),
        i = int(dialect),
    )
}

/// The shadow query.
///
/// # Errors
/// A stratum or cluster column that `ablate shadow` would refuse, or named like an output column; a cluster column for Polars (no hash function).
pub(super) fn query(opts: &super::SqlOptions, q: &ShadowQuery) -> Result<String> {
    let d = opts.dialect;
    check_names(q)?;
    let shadow = table_ref("shadow", opts)?;
    // The user's names (in the first and the last SELECT only) and the query's own for them.
    let by: Vec<String> = q.by.iter().map(|c| ident(d, c)).collect();
    let own: Vec<String> = (0..by.len()).map(|i| by_key(d, i)).collect();
    let keys: Vec<String> = own.iter().cloned().chain(["replay".into()]).collect();
    let out_keys: Vec<String> = by.iter().cloned().chain(["replay".into()]).collect();
    let rows = StatRows {
        key_list: keys.join(", "),
        empty_keys: own
            .iter()
            .map(|c| format!("CAST('' AS {}) AS {c}, ", text(d)))
            .collect(),
        int: int(d),
        double: double(d),
    };
    let mut parts = cell_rows(&rows, q);
    parts.extend(global_rows(&rows));
    if !q.by.is_empty() {
        parts.push(rows.incomplete_per_stratum(&own));
    }
    if !q.by.is_empty() || q.cluster.is_some() {
        parts.push(disagreeing_row(&rows));
    }
    let mut ctes = vec![
        format!(
            "per_request AS (\n  SELECT\n    {}\n  FROM {shadow}\n  GROUP BY request_id\n)",
            per_request_columns(d, q, &by, &own).join(",\n    ")
        ),
        format!(
            "complete AS (\n  SELECT\n    {}\n  FROM per_request\n  WHERE n_p = 1 AND n_c = 1 AND n_r <= 1\n)",
            complete_columns(d, q, &own).join(",\n    ")
        ),
    ];
    if q.cluster.is_some() {
        ctes.extend(cluster_ctes(d, q, &rows.key_list)?);
        parts.extend(cluster_rows(&rows));
    }
    let renamed: String = own
        .iter()
        .zip(&by)
        .map(|(k, c)| format!("{k} AS {c}, "))
        .collect();
    Ok(format!(
        "{header}WITH {ctes}\nSELECT stat, {renamed}replay, bin, value\nFROM (\n{union}\n) stat_rows\nORDER BY stat, {out_list}, bin\n",
        header = header(d, q, &out_keys),
        ctes = ctes.join(",\n"),
        union = parts.join("\nUNION ALL\n"),
        out_list = out_keys.join(", "),
    ))
}

/// `ablate shadow`'s own rules for the stratum and cluster names (no duplicates, none of the
/// log's own columns, no control characters: they are printed into the query and its
/// comments), none named like an output column, and none with the query's own prefix.
fn check_names(q: &ShadowQuery) -> Result<()> {
    crate::io::logs::check_shadow_keys(&q.by, q.cluster.as_deref())?;
    for c in q.by.iter().chain(&q.cluster) {
        if c.to_ascii_lowercase().starts_with(OWN_PREFIX) {
            return Err(Error::Usage(format!(
                "--by/--cluster-by {c}: names starting with {OWN_PREFIX} are the query's own; rename the column in a view first"
            )));
        }
        if RESERVED.contains(&c.to_ascii_lowercase().as_str()) {
            return Err(Error::Usage(format!(
                "--by/--cluster-by {c}: the aggregates have a column of that name ({}); rename the column in a view first",
                RESERVED.join(", ")
            )));
        }
    }
    Ok(())
}

/// The `per_request` columns: the stratum columns `by` (their largest value, under the query's
/// own names `own`) and the cluster, and per variant its row count and answer (and score and
/// tokens, when logged).
fn per_request_columns(d: Dialect, q: &ShadowQuery, by: &[String], own: &[String]) -> Vec<String> {
    let tx = text(d);
    let variant = |v: &str, e: &str| format!("CASE WHEN variant = '{v}' THEN {e} END");
    let mut columns = vec!["request_id".to_string()];
    for (c, k) in by.iter().zip(own) {
        columns.push(format!("CAST(MAX({c}) AS {tx}) AS {k}"));
    }
    if let Some(c) = &q.cluster {
        columns.push(format!("CAST(MAX({}) AS {tx}) AS cluster_key", ident(d, c)));
    }
    // Rows of one request that disagree on a stratum or the cluster (counted, then refused).
    let mut keys: Vec<String> = by.to_vec();
    keys.extend(q.cluster.iter().map(|c| ident(d, c)));
    let differ: Vec<String> = keys
        .iter()
        .map(|c| format!("MIN({c}) <> MAX({c})"))
        .collect();
    if !differ.is_empty() {
        columns.push(format!(
            "CASE WHEN {} THEN 1 ELSE 0 END AS disagreeing",
            differ.join(" OR ")
        ));
    }
    for (v, s) in [("production", "p"), ("replay", "r"), ("candidate", "c")] {
        columns.push(format!(
            "SUM(CASE WHEN variant = '{v}' THEN 1 ELSE 0 END) AS n_{s}"
        ));
        columns.push(format!("MAX({}) AS a_{s}", variant(v, "answer")));
    }
    for (logged, column, short) in [(q.score, "score", "s"), (q.tokens, "tokens_in", "t")] {
        if logged {
            for (v, s) in [("production", "p"), ("candidate", "c")] {
                columns.push(format!("MAX({}) AS {short}_{s}", variant(v, column)));
            }
        }
    }
    columns
}

/// The `complete` columns: the keys (the query's own names `own`), the replay flag, `changed`,
/// `noise`, and the score delta and paired tokens (with their log bins) when logged.
fn complete_columns(d: Dialect, q: &ShadowQuery, own: &[String]) -> Vec<String> {
    let mut columns = own.to_vec();
    if q.cluster.is_some() {
        columns.push("cluster_key".into());
    }
    columns.push("n_r AS replay".into());
    columns.push("CASE WHEN a_c <> a_p THEN 1 ELSE 0 END AS changed".into());
    columns.push("CASE WHEN n_r = 1 AND a_r <> a_p THEN 1 ELSE 0 END AS noise".into());
    if q.score {
        columns.push("s_c - s_p AS score_delta".into());
    }
    if q.tokens {
        columns.push(
            "CASE WHEN t_p IS NOT NULL AND t_c IS NOT NULL THEN 1 ELSE 0 END AS paired".into(),
        );
        columns.push("t_p".into());
        columns.push("t_c".into());
        columns.push(format!("{} AS bin_p", log_bin(d, "t_p")));
        columns.push(format!("{} AS bin_c", log_bin(d, "t_c")));
    }
    columns
}

/// The `SELECT`s of the long-format stat rows, all with the same columns.
struct StatRows {
    /// The cell keys: the stratum columns (by the query's own names) and `replay`.
    key_list: String,
    /// Empty stratum values (by the query's own names), for the whole-log rows.
    empty_keys: String,
    /// The dialect's integer and double types.
    int: &'static str,
    double: &'static str,
}

impl StatRows {
    /// One stat per group of `group`, from `from`.
    fn grouped(&self, stat: &str, bin: &str, value: &str, from: &str, group: &str) -> String {
        let (key_list, int, double) = (&self.key_list, self.int, self.double);
        format!(
            "SELECT '{stat}' AS stat, {key_list}, CAST({bin} AS {int}) AS bin, CAST({value} AS {double}) AS value FROM {from} GROUP BY {group}"
        )
    }

    /// One stat per cell of the complete requests.
    fn cell(&self, stat: &str, value: &str) -> String {
        self.grouped(stat, "0", value, "complete", &self.key_list)
    }

    /// The incomplete requests per stratum (`own`: the stratum columns by the query's own
    /// names), so that a stratum none of whose requests is complete can be named. Requests with
    /// a null stratum value are left out (they name no stratum, and a null key is refused).
    fn incomplete_per_stratum(&self, own: &[String]) -> String {
        let (own_list, int, double) = (own.join(", "), self.int, self.double);
        let named: String = own
            .iter()
            .map(|c| format!(" AND {c} IS NOT NULL"))
            .collect();
        format!(
            "SELECT 'incomplete_stratum' AS stat, {own_list}, CAST(0 AS {int}) AS replay, CAST(0 AS {int}) AS bin, CAST(COUNT(*) AS {double}) AS value FROM per_request WHERE {INCOMPLETE}{named} GROUP BY {own_list}"
        )
    }

    /// One stat for the whole log, from the per-request rows that pass `filter`.
    fn global(&self, stat: &str, value: &str, filter: &str) -> String {
        let (empty_keys, int, double) = (&self.empty_keys, self.int, self.double);
        format!(
            "SELECT '{stat}' AS stat, {empty_keys}CAST(0 AS {int}) AS replay, CAST(0 AS {int}) AS bin, CAST({value} AS {double}) AS value FROM per_request{filter}"
        )
    }
}

/// The per-cell stats: requests, changed, noise, d2, and the score and token sums when logged.
fn cell_rows(rows: &StatRows, q: &ShadowQuery) -> Vec<String> {
    let mut parts = vec![
        rows.cell("requests", "COUNT(*)"),
        rows.cell("changed", "SUM(changed)"),
        rows.cell("noise", "SUM(noise)"),
        rows.cell("d2", "SUM((changed - noise) * (changed - noise))"),
    ];
    if q.score {
        parts.push(rows.cell("score_n", "COUNT(score_delta)"));
        parts.push(rows.cell("score_delta", "COALESCE(SUM(score_delta), 0)"));
    }
    if q.tokens {
        for (v, s) in [("production", "p"), ("candidate", "c")] {
            parts.push(rows.cell(&format!("tokens_{v}_n"), "SUM(paired)"));
            parts.push(rows.cell(
                &format!("tokens_{v}_sum"),
                &format!("COALESCE(SUM(CASE WHEN paired = 1 THEN t_{s} ELSE 0 END), 0)"),
            ));
            parts.push(rows.grouped(
                &format!("tokens_{v}_hist"),
                &format!("bin_{s}"),
                "COUNT(*)",
                "complete WHERE paired = 1",
                &format!("{}, bin_{s}", rows.key_list),
            ));
        }
    }
    parts
}

/// A request missing production or candidate (not one with a variant twice).
const INCOMPLETE: &str =
    "NOT (n_p = 1 AND n_c = 1 AND n_r <= 1) AND n_p <= 1 AND n_r <= 1 AND n_c <= 1";

/// The whole-log stats: incomplete and duplicated requests, and the replay rows.
fn global_rows(rows: &StatRows) -> Vec<String> {
    vec![
        rows.global("incomplete", "COUNT(*)", &format!(" WHERE {INCOMPLETE}")),
        rows.global(
            "duplicates",
            "COUNT(*)",
            " WHERE n_p > 1 OR n_r > 1 OR n_c > 1",
        ),
        rows.global("replay_rows", "COALESCE(SUM(n_r), 0)", ""),
    ]
}

/// The whole-log count of requests whose rows disagree on a stratum or the cluster, when the
/// query groups by any.
fn disagreeing_row(rows: &StatRows) -> String {
    rows.global("disagreeing", "COALESCE(SUM(disagreeing), 0)", "")
}

/// The cluster CTEs: per cluster its requests and Σ d (`clusters`), the replicate indexes, and
/// each (cluster, replicate)'s Poisson(1) weight drawn through the CDF ladder (`weighted`).
fn cluster_ctes(d: Dialect, q: &ShadowQuery, key_list: &str) -> Result<Vec<String>> {
    let cdf = poisson1_cdf();
    let mut ladder = String::from("CASE");
    for (k, c) in cdf.iter().enumerate() {
        ladder.push_str(&format!(" WHEN u < {} THEN {k}", super::literal(*c)));
    }
    ladder.push_str(&format!(" ELSE {} END", cdf.len()));
    let u = uniform(
        d,
        &format!(
            "CONCAT(cluster_key, '#', CAST(replicates.b AS {}))",
            text(d)
        ),
    )?;
    Ok(vec![
        format!(
            "clusters AS (\n  SELECT {key_list}, cluster_key, COUNT(*) AS n, SUM(changed - noise) AS d\n  FROM complete\n  GROUP BY {key_list}, cluster_key\n)"
        ),
        format!("replicates AS (\n  {}\n)", replicate_table(d, q.replicates)),
        format!(
            "weighted AS (\n  SELECT {key_list}, b, n, d, {ladder} AS w\n  FROM (\n    SELECT clusters.*, replicates.b AS b, {u} AS u\n    FROM clusters CROSS JOIN replicates\n  ) drawn\n)"
        ),
    ])
}

/// The cluster stats: the replicate sums per b, and the clusters up and down.
fn cluster_rows(rows: &StatRows) -> Vec<String> {
    let per_b = format!("{}, b", rows.key_list);
    vec![
        rows.grouped("replicate_d", "b", "SUM(w * d)", "weighted", &per_b),
        rows.grouped("replicate_n", "b", "SUM(w * n)", "weighted", &per_b),
        rows.grouped(
            "clusters_up",
            "0",
            "SUM(CASE WHEN d > 0 THEN 1 ELSE 0 END)",
            "clusters",
            &rows.key_list,
        ),
        rows.grouped(
            "clusters_down",
            "0",
            "SUM(CASE WHEN d < 0 THEN 1 ELSE 0 END)",
            "clusters",
            &rows.key_list,
        ),
    ]
}

/// The query's comment header: what each stat is, how results merge, and the command to run.
fn header(d: Dialect, q: &ShadowQuery, keys: &[String]) -> String {
    let cluster_note = match &q.cluster {
        Some(c) => format!(
            "\n-- Replicates: w_b ~ Poisson(1) per cluster of `{c}`, from this engine's 64-bit hash of\n-- (cluster, b) through the Poisson(1) CDF; replicate_d = Σ w_b·(changed − noise) and\n-- replicate_n = Σ w_b·requests, per b = 0..{}. The same cluster draws the same weights on every\n-- partition, so replicate sums add across partitions and days too. clusters_up and
-- clusters_down count the clusters whose Σ(changed − noise) is above and below 0 (the sign test
-- when the replicates show no spread); they add across partitions of clusters, not across days
-- that split a cluster.",
            q.replicates.saturating_sub(1)
        ),
        None => String::new(),
    };
    format!(
        "-- ablate {version} · sufficient statistics for `ablate shadow --from-aggregates FILE` ({d})
-- Long format: one row per (stat, {keys_doc}, bin) with a value. `replay` = 1 for requests
-- that had a replay row. Stats: requests, changed, noise, d2 = Σ(changed − noise)²{score_doc}{token_doc};
-- and incomplete, duplicates, replay_rows and, with strata or clusters, disagreeing (requests
-- whose rows give a stratum or cluster two values: ablate refuses them) (whole log); with
-- strata, incomplete_stratum (the incomplete requests per stratum).
-- Token histograms: bin k holds tokens in [2^(k/16), 2^((k+1)/16)) (bin −1 holds 0), so
-- percentiles read from them are within 2^(1/16) − 1 = 4.4% of the exact value.{cluster_note}
-- Results of this query over separate partitions or days merge by addition: stack them, or
-- GROUP BY stat, {keys_doc}, bin and SUM(value).
-- Save the result as Parquet or CSV and run: ablate shadow DIR --from-aggregates FILE{by_doc}
",
        version = env!("CARGO_PKG_VERSION"),
        keys_doc = keys.join(", "),
        score_doc = if q.score {
            ",\n-- score_n, score_delta (Σ candidate − production score)"
        } else {
            ""
        },
        token_doc = if q.tokens {
            ",\n-- tokens_{production,candidate}_{n,sum,hist} over requests where both logged tokens"
        } else {
            ""
        },
        by_doc = q
            .by
            .iter()
            .map(|c| format!(" --by {c}"))
            .chain(q.cluster.iter().map(|c| format!(" --cluster-by {c}")))
            .collect::<String>(),
    )
}
