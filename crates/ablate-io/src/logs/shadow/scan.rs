//! Streams a shadow log into [`ShadowSums`]: one Polars streaming pass per hash partition of
//! request ids (of clusters, with `cluster_by`), each holding only its share of the requests.

use std::collections::BTreeMap;

use polars::prelude::*;

use super::{CellKey, CellSums, ShadowScan, ShadowSums, TokenSums};
use crate::error::{Error, Result, Row};
use crate::io::logs::{self, ShadowLog};
use crate::io::table;
use crate::stats::dist::{poisson1_cdf, poisson1_weight};

/// Memory per request held by a pass (Polars' group-by state for the request id, the hashed
/// answers and a few numbers; then the per-request frame): 500–700 bytes measured on
/// `ablate simulate` logs, with headroom.
pub const BYTES_PER_REQUEST: u64 = 800;

fn variant(v: &str) -> Expr {
    col("variant").eq(lit(v))
}

fn get_i64(df: &DataFrame, column: &str, row: usize) -> i64 {
    df.column(column)
        .ok()
        .and_then(|c| c.get(row).ok())
        .and_then(|v| v.extract::<i64>())
        .unwrap_or(0)
}

fn ints(df: &DataFrame, name: &str) -> PolarsResult<Vec<Option<i64>>> {
    Ok(df
        .column(name)?
        .cast(&DataType::Int64)?
        .i64()?
        .iter()
        .collect())
}

fn texts(df: &DataFrame, name: &str) -> PolarsResult<Vec<String>> {
    Ok(df
        .column(name)?
        .cast(&DataType::String)?
        .str()?
        .iter()
        .map(|v| v.unwrap_or_default().to_string())
        .collect())
}

/// The cell keys of a grouped frame: the `by` values and the replay flag, per row.
fn keys(df: &DataFrame, by: &[String]) -> PolarsResult<Vec<CellKey>> {
    let cols = by
        .iter()
        .map(|c| texts(df, c))
        .collect::<PolarsResult<Vec<_>>>()?;
    let replay = ints(df, "replay")?;
    Ok((0..df.height())
        .map(|i| {
            (
                cols.iter().map(|c| c[i].clone()).collect(),
                replay[i] == Some(1),
            )
        })
        .collect())
}

/// A uniform number in [0, 1) from a cluster's hash and a replicate index (SplitMix64 finaliser).
fn uniform(h: u64, b: u64) -> f64 {
    let mut z = h ^ (b.wrapping_add(1)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Reduces the log to sums, in as many partitions as `opts.memory` needs.
pub fn sums(shadow: &ShadowLog, opts: &ShadowScan) -> Result<ShadowSums> {
    let log = &shadow.log;
    let by = shadow.by.as_slice();
    let path = log.summary.path.clone();
    let lf = log.lf.clone();
    let has = |c: &str| log.has(c);

    // Unknown variants, and the rows of each variant: one light scan of one column.
    let counts = table::collect_streaming(
        lf.clone().select([
            variant("production").sum().alias("p"),
            variant("replay").sum().alias("r"),
            variant("candidate").sum().alias("c"),
            len().alias("rows"),
        ]),
        &path,
    )?;
    let (np, nr, nc) = (
        get_i64(&counts, "p", 0),
        get_i64(&counts, "r", 0),
        get_i64(&counts, "c", 0),
    );
    if np + nr + nc < get_i64(&counts, "rows", 0) {
        let unknown = table::collect_streaming(
            lf.clone()
                .select([col("variant")])
                .with_row_index("__row", None)
                .filter(
                    variant("production")
                        .not()
                        .and(variant("replay").not())
                        .and(variant("candidate").not()),
                )
                .limit(1),
            &path,
        )?;
        let value = unknown
            .column("variant")
            .ok()
            .and_then(|c| c.get(0).ok())
            .map(|v| v.to_string())
            .unwrap_or_default();
        return Err(Error::BadValue {
            path: path.clone(),
            column: "variant".into(),
            row: Row::at(get_i64(&unknown, "__row", 0) as usize),
            value,
            problem: "variants are production, replay or candidate".into(),
            fix: "rename the variant, or filter other experiments out of the file".into(),
        });
    }

    let cluster = shadow.cluster.as_deref();
    let split_by = cluster.unwrap_or("request_id");
    let passes = logs::passes(np.max(nc) as u64, BYTES_PER_REQUEST, opts.memory);
    let mut total = ShadowSums {
        replay_rows: nr as u64,
        replicates: if cluster.is_some() {
            opts.replicates
        } else {
            0
        },
        cluster: cluster.map(str::to_string),
        ..ShadowSums::default()
    };
    logs::allocator_for_budget();
    let bar = logs::pass_bar(passes, opts.progress, "shadow: partitions of the log");
    for pass in 0..passes {
        let part = if passes > 1 {
            lf.clone().filter(logs::partition(split_by, pass, passes))
        } else {
            lf.clone()
        };
        let one = partition_sums(part, by, cluster, opts.replicates, has)
            .map_err(|e| table::polars_unreadable(&path, e))?;
        if one.duplicates > 0 || one.disagreeing {
            // Looked up in this partition only (the whole log may not fit), its rows numbered
            // as in the file.
            let numbered = lf.clone().with_row_index("__row", None);
            let numbered = if passes > 1 {
                numbered.filter(logs::partition(split_by, pass, passes))
            } else {
                numbered
            };
            if one.duplicates > 0 {
                return Err(duplicate_error(&numbered, &path)?);
            }
            let columns: Vec<&str> = by.iter().map(String::as_str).chain(cluster).collect();
            return Err(disagreement_error(&numbered, &path, &columns)?);
        }
        total.merge(one.sums);
        logs::release_freed_memory();
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(total)
}

struct PartitionSums {
    sums: ShadowSums,
    duplicates: u64,
    /// Whether some request's rows disagree on a stratum or cluster.
    disagreeing: bool,
}

/// The sums of one partition: group its rows by request, then reduce the requests (held in
/// memory: this partition's share only) to per-cell sums.
fn partition_sums(
    part: LazyFrame,
    by: &[String],
    cluster: Option<&str>,
    replicates: usize,
    has: impl Fn(&str) -> bool,
) -> PolarsResult<PartitionSums> {
    let mut per_request = per_request(part, by, cluster, &has)?;
    let (duplicates, incomplete) = request_status(&per_request)?;
    let disagreeing = per_request
        .column(DISAGREE)?
        .bool()?
        .iter()
        .any(|d| d == Some(true));
    per_request.drop_in_place(DISAGREE)?;
    if duplicates > 0 || disagreeing {
        return Ok(PartitionSums {
            sums: ShadowSums::default(),
            duplicates,
            disagreeing,
        });
    }
    let incomplete_by_stratum = incomplete_by_stratum(&per_request, by)?;
    let cells = complete_requests(per_request)?;
    let paired_tokens = has("tokens_in");
    let mut out = cell_sums(&cells, by, has("score"), paired_tokens)?;
    if paired_tokens {
        add_token_counts(&mut out, &cells, by)?;
    }
    if let Some(cluster) = cluster {
        add_cluster_replicates(&mut out, cells, by, cluster, replicates)?;
    }
    for c in out.values_mut() {
        for t in &mut c.tokens {
            t.counts.binned = false;
        }
    }
    Ok(PartitionSums {
        sums: ShadowSums {
            cells: out,
            incomplete,
            incomplete_by_stratum,
            replay_rows: 0,
            replicates: 0,
            cluster: None,
        },
        duplicates: 0,
        disagreeing: false,
    })
}

/// The prefix of a stratum column's least value per request (a control character: no column
/// name of the user's has one).
const LEAST: &str = "\u{1}least:";

/// Whether a request's rows disagree on a stratum or cluster column.
const DISAGREE: &str = "\u{1}disagree";

/// One row per request: its rows per variant (`n_p`, `n_r`, `n_c`), each variant's hashed answer,
/// score and tokens, its stratum and cluster, and the score delta `sd`.
///
/// Each variant's values go in their own columns (null on the other variants' rows), so the
/// group-by needs only sums and maxima: reductions Polars' streaming engine keeps as a few numbers
/// per request, instead of gathering each request's rows.
fn per_request(
    part: LazyFrame,
    by: &[String],
    cluster: Option<&str>,
    has: &impl Fn(&str) -> bool,
) -> PolarsResult<DataFrame> {
    let on = |v: &str, e: Expr| when(variant(v)).then(e).otherwise(lit(NULL));
    let mut rows = vec![
        col("request_id"),
        variant("production").cast(DataType::UInt32).alias("n_p"),
        variant("replay").cast(DataType::UInt32).alias("n_r"),
        variant("candidate").cast(DataType::UInt32).alias("n_c"),
    ];
    let mut aggs = vec![col("n_p").sum(), col("n_r").sum(), col("n_c").sum()];
    let mut per_variant = |name: &str, v: &str, e: Expr| {
        rows.push(on(v, e).alias(name));
        aggs.push(col(name).max());
    };
    per_variant("h_p", "production", logs::hash64("answer"));
    per_variant("h_r", "replay", logs::hash64("answer"));
    per_variant("h_c", "candidate", logs::hash64("answer"));
    if has("score") {
        per_variant("s_p", "production", col("score"));
        per_variant("s_c", "candidate", col("score"));
    }
    if has("tokens_in") {
        per_variant("t_p", "production", col("tokens_in"));
        per_variant("t_c", "candidate", col("tokens_in"));
    }
    // A request's stratum (and cluster) is the value on its rows, which must agree: the largest
    // and the smallest are kept, and `disagree` counts the requests where they differ.
    let mut disagree = lit(false);
    for c in by.iter().map(String::as_str).chain(cluster) {
        rows.push(col(c));
        aggs.push(col(c).max());
        aggs.push(col(c).min().alias(format!("{LEAST}{c}")));
        disagree = disagree.or(col(c).neq(col(format!("{LEAST}{c}"))));
    }
    let least: Vec<String> = by
        .iter()
        .map(String::as_str)
        .chain(cluster)
        .map(|c| format!("{LEAST}{c}"))
        .collect();
    let per_request = part
        .select(rows)
        .group_by([col("request_id")])
        .agg(aggs)
        .drop(cols(["request_id"]))
        .with_column(disagree.alias(DISAGREE))
        .drop(cols(least))
        .collect_with_engine(Engine::Streaming)?
        .unwrap_single();
    if has("score") {
        return per_request
            .lazy()
            .with_column((col("s_c") - col("s_p")).alias("sd"))
            .collect();
    }
    Ok(per_request)
}

/// A per-request row count as a signed integer.
fn n(c: &str) -> Expr {
    col(c).cast(DataType::Int64)
}

/// A request with one production row, one candidate row and at most one replay row.
fn complete() -> Expr {
    n("n_p")
        .eq(lit(1))
        .and(n("n_c").eq(lit(1)))
        .and(n("n_r").lt_eq(lit(1)))
}

/// A request with some variant on more than one row.
fn duplicate() -> Expr {
    n("n_p")
        .gt(lit(1))
        .or(n("n_r").gt(lit(1)))
        .or(n("n_c").gt(lit(1)))
}

/// The requests with a variant twice, and the incomplete ones (not duplicated, but missing a
/// production or candidate row).
fn request_status(per_request: &DataFrame) -> PolarsResult<(u64, u64)> {
    let status = per_request
        .clone()
        .lazy()
        .select([
            duplicate().cast(DataType::Int64).sum().alias("dup"),
            complete()
                .not()
                .and(duplicate().not())
                .cast(DataType::Int64)
                .sum()
                .alias("incomplete"),
        ])
        .collect()?;
    Ok((
        get_i64(&status, "dup", 0) as u64,
        get_i64(&status, "incomplete", 0) as u64,
    ))
}

/// The incomplete requests per stratum (none without strata; a request with a null stratum value
/// names no stratum, as in the SQL path).
fn incomplete_by_stratum(
    per_request: &DataFrame,
    by: &[String],
) -> PolarsResult<BTreeMap<Vec<String>, u64>> {
    if by.is_empty() {
        return Ok(BTreeMap::new());
    }
    let named = by
        .iter()
        .fold(lit(true), |acc, c| acc.and(col(c.as_str()).is_not_null()));
    let grouped = per_request
        .clone()
        .lazy()
        .filter(complete().not().and(duplicate().not()).and(named))
        .group_by(by.iter().map(|c| col(c.as_str())).collect::<Vec<_>>())
        .agg([len().cast(DataType::Int64).alias("n")])
        .collect()?;
    let columns = by
        .iter()
        .map(|c| texts(&grouped, c))
        .collect::<PolarsResult<Vec<_>>>()?;
    let n = ints(&grouped, "n")?;
    Ok((0..grouped.height())
        .map(|i| {
            (
                columns.iter().map(|c| c[i].clone()).collect(),
                n[i].unwrap_or(0) as u64,
            )
        })
        .collect())
}

/// The complete requests, each with its replay flag, whether the candidate's answer changed
/// (`changed`), whether the replay's did (`noise`), and `d = changed − noise`.
fn complete_requests(per_request: DataFrame) -> PolarsResult<DataFrame> {
    let changed = col("h_c").neq(col("h_p")).cast(DataType::Int64);
    let noise = col("h_r")
        .neq(col("h_p"))
        .fill_null(lit(false))
        .cast(DataType::Int64);
    per_request
        .lazy()
        .filter(complete())
        .with_columns([
            n("n_r").alias("replay"),
            changed.clone().alias("changed"),
            noise.clone().alias("noise"),
            (changed - noise).alias("d"),
        ])
        .collect()
}

/// The group-by keys of a cell: the `by` columns and the replay flag.
fn key_exprs(by: &[String]) -> Vec<Expr> {
    let mut keys: Vec<Expr> = by.iter().map(|c| col(c.as_str())).collect();
    keys.push(col("replay"));
    keys
}

/// Requests whose production and candidate both logged their tokens.
fn tokens_paired() -> Expr {
    col("t_p").is_not_null().and(col("t_c").is_not_null())
}

/// Per cell: requests, changed, noise, Σ|d|, and (when logged) the score deltas and the paired
/// token sums.
fn cell_sums(
    cells: &DataFrame,
    by: &[String],
    score: bool,
    paired_tokens: bool,
) -> PolarsResult<BTreeMap<CellKey, CellSums>> {
    let mut aggs = vec![
        len().alias("requests"),
        col("changed").sum(),
        col("noise").sum(),
        col("d").abs().sum().alias("d2"),
    ];
    if score {
        aggs.push(col("sd").count().alias("score_n"));
        aggs.push(col("sd").sum().alias("score_delta"));
    }
    if paired_tokens {
        for v in ["t_p", "t_c"] {
            aggs.push(
                tokens_paired()
                    .cast(DataType::Int64)
                    .sum()
                    .alias(format!("{v}_n")),
            );
            aggs.push(
                col(v)
                    .filter(tokens_paired())
                    .cast(DataType::Int64)
                    .sum()
                    .alias(format!("{v}_sum")),
            );
        }
    }
    let grouped = cells
        .clone()
        .lazy()
        .group_by(key_exprs(by))
        .agg(aggs)
        .collect()?;
    let column = |name: &str| ints(&grouped, name);
    let (requests, changed, noise, d2) = (
        column("requests")?,
        column("changed")?,
        column("noise")?,
        column("d2")?,
    );
    let score = if score {
        Some((
            column("score_n")?,
            grouped
                .column("score_delta")?
                .cast(&DataType::Float64)?
                .f64()?
                .iter()
                .collect::<Vec<_>>(),
        ))
    } else {
        None
    };
    let tokens = if paired_tokens {
        Some([
            (column("t_p_n")?, column("t_p_sum")?),
            (column("t_c_n")?, column("t_c_sum")?),
        ])
    } else {
        None
    };
    let mut out: BTreeMap<CellKey, CellSums> = BTreeMap::new();
    for (i, key) in keys(&grouped, by)?.into_iter().enumerate() {
        let c = out.entry(key).or_default();
        let u = |v: &[Option<i64>]| v[i].unwrap_or(0) as u64;
        c.requests = u(&requests);
        c.changed = u(&changed);
        c.noise = u(&noise);
        c.d2 = u(&d2);
        if let Some((sn, sd)) = &score {
            c.score_n = u(sn);
            c.score_delta = sd[i].unwrap_or(0.0);
        }
        if let Some(t) = &tokens {
            for (slot, (tn, ts)) in c.tokens.iter_mut().zip(t) {
                slot.n = u(tn);
                slot.sum = i128::from(ts[i].unwrap_or(0));
            }
        }
    }
    Ok(out)
}

/// Exact token counts per cell, production then candidate: one row per (cell, value).
fn add_token_counts(
    out: &mut BTreeMap<CellKey, CellSums>,
    cells: &DataFrame,
    by: &[String],
) -> PolarsResult<()> {
    for (slot, v) in ["t_p", "t_c"].into_iter().enumerate() {
        let mut k = key_exprs(by);
        k.push(col(v).alias("value"));
        let df = cells
            .clone()
            .lazy()
            .filter(tokens_paired())
            .group_by(k)
            .agg([len().alias("n")])
            .collect()?;
        let (ks, vals, ns) = (keys(&df, by)?, ints(&df, "value")?, ints(&df, "n")?);
        for (i, key) in ks.into_iter().enumerate() {
            let t: &mut TokenSums = &mut out.entry(key).or_default().tokens[slot];
            t.counts
                .add(vals[i].unwrap_or(0), ns[i].unwrap_or(0) as u64);
        }
    }
    Ok(())
}

/// Poisson-bootstrap replicate sums: per cluster, its requests and Σ d, weighted by
/// w_b ~ Poisson(1) from a hash of (cluster, b); and the clusters whose Σ d is up or down.
fn add_cluster_replicates(
    out: &mut BTreeMap<CellKey, CellSums>,
    cells: DataFrame,
    by: &[String],
    cluster: &str,
    replicates: usize,
) -> PolarsResult<()> {
    let mut k = key_exprs(by);
    k.push(col(cluster));
    let df = cells
        .lazy()
        .group_by(k)
        .agg([len().alias("n"), col("d").sum().alias("d")])
        .with_column(logs::hash64(cluster).alias("h"))
        .collect()?;
    let (ks, ns, ds) = (keys(&df, by)?, ints(&df, "n")?, ints(&df, "d")?);
    let hashes: Vec<u64> = df
        .column("h")?
        .u64()?
        .iter()
        .map(|h| h.unwrap_or(0))
        .collect();
    let cdf = poisson1_cdf();
    for (i, key) in ks.into_iter().enumerate() {
        let c = out.entry(key).or_default();
        if c.replicates.len() < replicates {
            c.replicates.resize(replicates, (0, 0));
        }
        let (n, d) = (ns[i].unwrap_or(0), ds[i].unwrap_or(0));
        if d > 0 {
            c.clusters_up += 1;
        } else if d < 0 {
            c.clusters_down += 1;
        }
        for (b, r) in c.replicates.iter_mut().enumerate() {
            let w = poisson1_weight(uniform(hashes[i], b as u64), &cdf);
            r.0 += w * d;
            r.1 += w * n;
        }
    }
    Ok(())
}

/// The first request (by its first row), in the first stratum or cluster column where some
/// request's rows give two values, as an error naming that row (`lf` numbers its rows as the
/// file does, in `__row`): a request is in one stratum, and taking one of the values would file
/// it silently under a stratum some of its rows deny.
///
/// # Errors
/// The log cannot be read.
fn disagreement_error(lf: &LazyFrame, path: &std::path::Path, columns: &[&str]) -> Result<Error> {
    for &c in columns {
        let found = table::collect_streaming(
            lf.clone()
                .group_by([col("request_id")])
                .agg([
                    col(c).n_unique().alias("k"),
                    col(c).min().alias("least"),
                    col(c).max().alias("most"),
                    col("__row").min().alias("first"),
                ])
                .filter(col("k").gt(lit(1)))
                .sort(["first"], SortMultipleOptions::default())
                .limit(1),
            path,
        )?;
        if found.height() == 0 {
            continue;
        }
        let text = |name: &str| {
            found
                .column(name)
                .ok()
                .and_then(|c| c.get(0).ok())
                .map(|v| v.get_str().map_or_else(|| v.to_string(), str::to_string))
                .unwrap_or_default()
        };
        let first = found
            .column("first")
            .ok()
            .and_then(|c| c.cast(&DataType::UInt64).ok())
            .and_then(|c| c.u64().ok().and_then(|c| c.get(0)))
            .map(|i| i as usize);
        return Ok(Error::BadValue {
            path: path.to_path_buf(),
            column: c.to_string(),
            row: first.map_or_else(Row::none, Row::at),
            value: format!("request {:?}", text("request_id")),
            problem: format!(
                "its rows give {c} \"{}\" and \"{}\": a request is in one stratum (and one cluster), so its production, replay and candidate rows must agree",
                text("least"),
                text("most")
            ),
            fix: format!("give every row of a request the same {c}"),
        });
    }
    Err(Error::Invariant(
        "a request's rows disagree on a stratum, yet no column shows it".into(),
    ))
}

/// The error for a request with a variant twice: the row that repeats a (request, variant)
/// pair first, with the row it repeats (`lf` numbers its rows as the file does, in `__row`).
fn duplicate_error(lf: &LazyFrame, path: &std::path::Path) -> Result<Error> {
    let dup = table::collect_streaming(
        lf.clone()
            .group_by([col("request_id"), col("variant")])
            .agg([
                len().alias("n"),
                col("__row").min().alias("first"),
                col("__row")
                    .sort(SortOptions::default())
                    .slice(lit(1), lit(1))
                    .first()
                    .alias("again"),
            ])
            .filter(col("n").gt(lit(1)))
            .sort(["again"], SortMultipleOptions::default())
            .limit(1),
        path,
    )?;
    let text = |name: &str| {
        dup.column(name)
            .ok()
            .and_then(|c| c.get(0).ok())
            .map(|v| v.get_str().map_or_else(|| v.to_string(), str::to_string))
            .unwrap_or_default()
    };
    let index = |name: &str| {
        dup.column(name)
            .ok()
            .and_then(|c| c.cast(&DataType::UInt64).ok())
            .and_then(|c| c.u64().ok().and_then(|c| c.get(0)))
            .map(|i| i as usize)
    };
    let (first, again) = (index("first"), index("again"));
    Ok(Error::BadValue {
        path: path.to_path_buf(),
        column: "request_id, variant".into(),
        row: again.map_or_else(Row::none, Row::at),
        value: text("request_id"),
        problem: format!(
            "this request has variant \"{}\" more than once{}",
            text("variant"),
            first
                .map(|f| format!(" (first on row {})", f + 1))
                .unwrap_or_default()
        ),
        fix: "keep one row per request and variant".into(),
    })
}
