//! The shadow log reduced to sums ([`ShadowSums`]): by streaming the log in hash partitions of
//! request ids ([`sums`]), or from an engine's result of `ablate sql shadow`
//! ([`read_aggregates`]). `analysis::shadow::finish` turns the sums into the report.
//!
//! Streams a shadow log into [`ShadowSums`]: one Polars streaming pass per hash partition of
//! request ids (of clusters, with `cluster_by`), each holding only its share of the requests.

use std::collections::BTreeMap;

use polars::prelude::*;

use crate::error::{Error, Result, Row};
use crate::io::aggregates::LongTable;
use crate::io::logs::{self, ShadowLog};
use crate::io::table::{self, TableFile};
use crate::stats::dist::{poisson1_cdf, poisson1_weight};
use crate::stats::histogram::Counts;

/// What the scan of a shadow log needs to know.
#[derive(Debug, Clone)]
pub struct ShadowScan {
    /// Memory budget in bytes for the per-request state.
    pub memory: u64,
    /// Poisson-bootstrap replicates when the log has a cluster column.
    pub replicates: usize,
    /// Show a progress bar when the log takes more than one pass.
    pub progress: bool,
}

/// Input-token sums of one variant over the paired requests (both variants logged tokens).
#[derive(Debug, Clone, Default)]
pub struct TokenSums {
    /// Requests counted.
    pub n: u64,
    /// Σ tokens.
    pub sum: i128,
    /// Their distribution (exact values, or log bins from an engine).
    pub counts: Counts,
}

impl TokenSums {
    /// Adds another set of sums.
    pub fn merge(&mut self, o: &TokenSums) {
        self.n += o.n;
        self.sum += o.sum;
        self.counts.merge(&o.counts);
    }
}

/// Sufficient statistics of the complete requests of one stratum: everything the shadow
/// analysis needs, and all of it adds across partitions and days.
#[derive(Debug, Clone, Default)]
pub struct CellSums {
    /// Requests (production and candidate once each; replay once or never, as the cell says).
    pub requests: u64,
    /// Σ changed (candidate answer ≠ production answer).
    pub changed: u64,
    /// Σ noise (replay answer ≠ production answer).
    pub noise: u64,
    /// Σ (changed − noise)².
    pub d2: u64,
    /// Requests where both variants have a score.
    pub score_n: u64,
    /// Σ (candidate score − production score).
    pub score_delta: f64,
    /// Production, then candidate, input tokens.
    pub tokens: [TokenSums; 2],
    /// Per Poisson-bootstrap replicate b: (Σ w_b·d, Σ w_b) with w_b ~ Poisson(1) per cluster.
    pub replicates: Vec<(i64, i64)>,
    /// With clusters: clusters whose Σ d is above 0.
    pub clusters_up: u64,
    /// With clusters: clusters whose Σ d is below 0.
    pub clusters_down: u64,
}

impl CellSums {
    /// Adds another cell's sums.
    pub fn merge(&mut self, o: &CellSums) {
        self.requests += o.requests;
        self.changed += o.changed;
        self.noise += o.noise;
        self.d2 += o.d2;
        self.score_n += o.score_n;
        self.score_delta += o.score_delta;
        self.clusters_up += o.clusters_up;
        self.clusters_down += o.clusters_down;
        for (t, u) in self.tokens.iter_mut().zip(&o.tokens) {
            t.merge(u);
        }
        if self.replicates.len() < o.replicates.len() {
            self.replicates.resize(o.replicates.len(), (0, 0));
        }
        for (r, s) in self.replicates.iter_mut().zip(&o.replicates) {
            r.0 += s.0;
            r.1 += s.1;
        }
    }

    /// Σ d = Σ changed − Σ noise.
    pub fn d(&self) -> i64 {
        self.changed as i64 - self.noise as i64
    }
}

/// A stratum (its values of the `by` columns) and whether its requests had a replay row.
pub type CellKey = (Vec<String>, bool);

/// The whole log reduced: what `analysis::shadow::finish` turns into the report. Built by streaming the log
/// ([`sums`]) or from an engine's aggregates ([`read_aggregates`]).
#[derive(Debug, Clone, Default)]
pub struct ShadowSums {
    /// Complete requests per (stratum, replay present).
    pub cells: BTreeMap<CellKey, CellSums>,
    /// Requests missing production or candidate.
    pub incomplete: u64,
    /// Rows with variant = replay, over the whole log.
    pub replay_rows: u64,
    /// Poisson-bootstrap replicates (0 without clusters).
    pub replicates: usize,
    /// The cluster column, when the se is clustered.
    pub cluster: Option<String>,
}

impl ShadowSums {
    /// Adds another partition's sums.
    pub fn merge(&mut self, o: ShadowSums) {
        for (k, c) in o.cells {
            self.cells.entry(k).or_default().merge(&c);
        }
        self.incomplete += o.incomplete;
        self.replay_rows += o.replay_rows;
        self.replicates = self.replicates.max(o.replicates);
        if self.cluster.is_none() {
            self.cluster = o.cluster;
        }
    }
}

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
    let bar = logs::pass_bar(passes, opts.progress, "shadow: partitions of the log");
    for pass in 0..passes {
        let part = if passes > 1 {
            lf.clone().filter(logs::partition(split_by, pass, passes))
        } else {
            lf.clone()
        };
        let one = partition_sums(part.clone(), by, cluster, opts.replicates, has)
            .map_err(|e| table::polars_unreadable(&path, e))?;
        if one.duplicates > 0 {
            // Looked up in this partition only: the whole log may not fit.
            return Err(duplicate_error(&part, &path)?);
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
    // Per row, each variant's values in their own columns (null on the other variants' rows), so
    // that the group-by needs only sums and maxima: reductions Polars' streaming engine keeps as
    // a few numbers per request, instead of gathering each request's rows.
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
    // A request's stratum (and cluster) is the largest value on its rows, as the SQL takes it.
    for c in by.iter().map(String::as_str).chain(cluster) {
        rows.push(col(c));
        aggs.push(col(c).max());
    }
    let mut per_request = part
        .select(rows)
        .group_by([col("request_id")])
        .agg(aggs)
        .drop(cols(["request_id"]))
        .collect_with_engine(Engine::Streaming)?
        .unwrap_single();
    if has("score") {
        per_request = per_request
            .lazy()
            .with_column((col("s_c") - col("s_p")).alias("sd"))
            .collect()?;
    }

    let n = |c: &str| col(c).cast(DataType::Int64);
    let complete = n("n_p")
        .eq(lit(1))
        .and(n("n_c").eq(lit(1)))
        .and(n("n_r").lt_eq(lit(1)));
    let duplicate = n("n_p")
        .gt(lit(1))
        .or(n("n_r").gt(lit(1)))
        .or(n("n_c").gt(lit(1)));
    let status = per_request
        .clone()
        .lazy()
        .select([
            duplicate.clone().cast(DataType::Int64).sum().alias("dup"),
            complete
                .clone()
                .not()
                .and(duplicate.clone().not())
                .cast(DataType::Int64)
                .sum()
                .alias("incomplete"),
        ])
        .collect()?;
    let duplicates = get_i64(&status, "dup", 0) as u64;
    if duplicates > 0 {
        return Ok(PartitionSums {
            sums: ShadowSums::default(),
            duplicates,
        });
    }
    let changed = col("h_c").neq(col("h_p")).cast(DataType::Int64);
    let noise = col("h_r")
        .neq(col("h_p"))
        .fill_null(lit(false))
        .cast(DataType::Int64);
    let cells = per_request
        .lazy()
        .filter(complete)
        .with_columns([
            n("n_r").alias("replay"),
            changed.clone().alias("changed"),
            noise.clone().alias("noise"),
            (changed - noise).alias("d"),
        ])
        .collect()?;
    let mut key_cols: Vec<Expr> = by.iter().map(|c| col(c.as_str())).collect();
    key_cols.push(col("replay"));

    let mut aggs = vec![
        len().alias("requests"),
        col("changed").sum(),
        col("noise").sum(),
        col("d").abs().sum().alias("d2"),
    ];
    let paired_tokens = has("tokens_in");
    let token_filter = || col("t_p").is_not_null().and(col("t_c").is_not_null());
    if has("score") {
        aggs.push(col("sd").count().alias("score_n"));
        aggs.push(col("sd").sum().alias("score_delta"));
    }
    if paired_tokens {
        for v in ["t_p", "t_c"] {
            aggs.push(
                token_filter()
                    .cast(DataType::Int64)
                    .sum()
                    .alias(format!("{v}_n")),
            );
            aggs.push(
                col(v)
                    .filter(token_filter())
                    .cast(DataType::Int64)
                    .sum()
                    .alias(format!("{v}_sum")),
            );
        }
    }
    let grouped = cells
        .clone()
        .lazy()
        .group_by(key_cols.clone())
        .agg(aggs)
        .collect()?;
    let mut out: BTreeMap<CellKey, CellSums> = BTreeMap::new();
    let cell_keys = keys(&grouped, by)?;
    let column = |name: &str| ints(&grouped, name);
    let (requests, changed, noise, d2) = (
        column("requests")?,
        column("changed")?,
        column("noise")?,
        column("d2")?,
    );
    let score = if has("score") {
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
    for (i, key) in cell_keys.into_iter().enumerate() {
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

    // Exact token counts per cell: one row per (cell, value).
    if paired_tokens {
        for (slot, v) in ["t_p", "t_c"].into_iter().enumerate() {
            let mut k = key_cols.clone();
            k.push(col(v).alias("value"));
            let df = cells
                .clone()
                .lazy()
                .filter(token_filter())
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
    }

    // Poisson-bootstrap replicate sums: per cluster, its requests and Σ d, weighted by
    // w_b ~ Poisson(1) from a hash of (cluster, b).
    if let Some(cluster) = cluster {
        let mut k = key_cols.clone();
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
    }
    for c in out.values_mut() {
        for t in &mut c.tokens {
            t.counts.binned = false;
        }
    }
    Ok(PartitionSums {
        sums: ShadowSums {
            cells: out,
            incomplete: get_i64(&status, "incomplete", 0) as u64,
            replay_rows: 0,
            replicates: 0,
            cluster: None,
        },
        duplicates: 0,
    })
}

/// The error for a request with a variant twice, naming the first such request.
fn duplicate_error(lf: &LazyFrame, path: &std::path::Path) -> Result<Error> {
    let dup = table::collect_streaming(
        lf.clone()
            .group_by([col("request_id"), col("variant")])
            .agg([len().alias("n")])
            .filter(col("n").gt(lit(1)))
            .sort(["request_id"], SortMultipleOptions::default())
            .select([col("request_id")])
            .limit(1),
        path,
    )?;
    let id = dup
        .column("request_id")
        .ok()
        .and_then(|c| c.get(0).ok())
        .map(|v| v.to_string())
        .unwrap_or_default();
    Ok(Error::BadValue {
        path: path.to_path_buf(),
        column: "request_id, variant".into(),
        row: Row::none(),
        value: id,
        problem: "this request has a variant more than once".into(),
        fix: "keep one row per request and variant".into(),
    })
}

// [`ShadowSums`] from an engine's result of `ablate sql shadow`.

/// Reads shadow aggregates broken down by `by` (columns of the file; strata the file has but `by`
/// leaves out are summed over). `cluster` names the query's cluster column in the report.
///
/// # Errors
/// Unreadable file; missing columns; unknown statistics; counts that are not whole numbers;
/// requests with a variant twice (the query counts them).
pub fn read_aggregates(
    file: &TableFile,
    by: &[String],
    cluster: Option<&str>,
) -> Result<ShadowSums> {
    let keys: Vec<&str> = by.iter().map(String::as_str).collect();
    if !crate::io::table::schema(file, &[])?
        .iter_names()
        .any(|c| c.as_str() == "replay")
    {
        return Err(Error::Usage(format!(
            "{}: not shadow aggregates (no `replay` column); write them with the query `ablate sql shadow` prints",
            file.path.display()
        )));
    }
    let t = LongTable::read(file, &keys, &["replay"])?;
    let mut sums = ShadowSums::default();
    let mut duplicates = 0u64;
    for r in &t.rows {
        let (stratum, replay) = r.keys.split_at(by.len());
        let key = (stratum.to_vec(), replay[0].trim() == "1");
        let global = |sums: &mut ShadowSums, v: u64, stat: &str| match stat {
            "incomplete" => sums.incomplete += v,
            "replay_rows" => sums.replay_rows += v,
            _ => {}
        };
        match r.stat.as_str() {
            "incomplete" | "replay_rows" => global(&mut sums, t.count(r)?, &r.stat),
            "duplicates" => duplicates += t.count(r)?,
            "score_delta" => sums.cells.entry(key).or_default().score_delta += r.value,
            "replicate_d" | "replicate_n" => {
                let b = usize::try_from(r.bin)
                    .map_err(|_| t.bad(r, "a replicate index must be 0 or more"))?;
                let v = t.whole(r)?;
                let c = sums.cells.entry(key).or_default();
                if c.replicates.len() <= b {
                    c.replicates.resize(b + 1, (0, 0));
                }
                if r.stat == "replicate_d" {
                    c.replicates[b].0 += v;
                } else {
                    c.replicates[b].1 += v;
                }
                sums.replicates = sums.replicates.max(b + 1);
            }
            stat => {
                let v = t.count(r)?;
                let c: &mut CellSums = sums.cells.entry(key).or_default();
                match stat {
                    "requests" => t.add(r, &mut c.requests, v)?,
                    "changed" => t.add(r, &mut c.changed, v)?,
                    "noise" => t.add(r, &mut c.noise, v)?,
                    "d2" => t.add(r, &mut c.d2, v)?,
                    "score_n" => t.add(r, &mut c.score_n, v)?,
                    "clusters_up" => t.add(r, &mut c.clusters_up, v)?,
                    "clusters_down" => t.add(r, &mut c.clusters_down, v)?,
                    "tokens_production_n" => t.add(r, &mut c.tokens[0].n, v)?,
                    "tokens_candidate_n" => t.add(r, &mut c.tokens[1].n, v)?,
                    "tokens_production_sum" => c.tokens[0].sum += i128::from(v),
                    "tokens_candidate_sum" => c.tokens[1].sum += i128::from(v),
                    "tokens_production_hist" => c.tokens[0].counts.add(r.bin, v),
                    "tokens_candidate_hist" => c.tokens[1].counts.add(r.bin, v),
                    other => {
                        return Err(t.bad(
                            r,
                            format!("`{other}` is not a statistic of the shadow query"),
                        ));
                    }
                }
            }
        }
    }
    if duplicates > 0 {
        return Err(Error::BadValue {
            path: t.path.clone(),
            column: "stat".into(),
            row: crate::error::Row::none(),
            value: format!("duplicates = {duplicates}"),
            problem: "requests with a variant more than once".into(),
            fix: "keep one row per request and variant in the log, then rerun the query".into(),
        });
    }
    check_cells(&sums, &t.path)?;
    // Cells made only of global rows (empty strata) hold nothing.
    sums.cells.retain(|_, c| {
        c.requests > 0 || c.tokens.iter().any(|t| t.n > 0) || !c.replicates.is_empty()
    });
    for c in sums.cells.values_mut() {
        for tok in &mut c.tokens {
            tok.counts.binned = true;
        }
        if c.replicates.len() < sums.replicates {
            c.replicates.resize(sums.replicates, (0, 0));
        }
    }
    if sums.replicates > 0 {
        sums.cluster = Some(cluster.unwrap_or("the query's --cluster-by column").into());
    }
    Ok(sums)
}

/// The counts of each cell against each other, as one log would give them: changed, noise,
/// d2 = #(changed ≠ noise), score_n and the token counts at most the requests, and d2 between
/// |changed − noise| and changed + noise.
///
/// # Errors
/// The first cell whose counts no log could give, named by its stratum.
fn check_cells(sums: &ShadowSums, path: &std::path::Path) -> Result<()> {
    for ((stratum, replay), c) in &sums.cells {
        let problem = if c.changed > c.requests {
            Some(format!(
                "changed = {} exceeds requests = {}",
                c.changed, c.requests
            ))
        } else if c.noise > c.requests {
            Some(format!(
                "noise = {} exceeds requests = {}",
                c.noise, c.requests
            ))
        } else if c.d2 > c.changed + c.noise || c.d2 < c.changed.abs_diff(c.noise) {
            Some(format!(
                "d2 = {} is not between |changed − noise| = {} and changed + noise = {}",
                c.d2,
                c.changed.abs_diff(c.noise),
                c.changed + c.noise
            ))
        } else if c.score_n > c.requests {
            Some(format!(
                "score_n = {} exceeds requests = {}",
                c.score_n, c.requests
            ))
        } else {
            c.tokens.iter().find(|t| t.n > c.requests).map(|tok| {
                format!(
                    "a token count n = {} exceeds requests = {}",
                    tok.n, c.requests
                )
            })
        };
        if let Some(problem) = problem {
            return Err(Error::BadValue {
                path: path.to_path_buf(),
                column: "stat, value".into(),
                row: crate::error::Row::none(),
                value: format!(
                    "stratum [{}], replay = {}",
                    stratum.join(", "),
                    u8::from(*replay)
                ),
                problem: format!("{problem}: no log gives these sums"),
                fix: "write this file with the query `ablate sql` prints, unchanged (partitions merge by adding every statistic)".into(),
            });
        }
    }
    Ok(())
}
