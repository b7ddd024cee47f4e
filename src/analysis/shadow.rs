//! `ablate shadow`: changed behaviour of a candidate prompt on live traffic, above the noise
//! floor (Diffy's idea, with a confidence interval).
//!
//! Each request is served by `production`, by a second production run (`replay`) and by the
//! `candidate`. Per request with all three: changed = candidate answer ≠ production answer,
//! noise = replay answer ≠ production answer (what re-running production alone changes), and
//! d = changed − noise ∈ {−1, 0, 1}. excess_rate = mean d with se = sd(d)/√n and a normal interval
//! (n is large; the counts are integers, so the sums are exact). Without replay rows the noise is
//! unknown: changed_rate is reported and excess_rate is null. With `by` columns the same is done per
//! stratum, with one-sided p-values for excess > 0 (normal approximation; an exact sign test on the
//! discordant requests when the stratum shows no spread, e.g. 10 of 10 changed and none in
//! replay), Holm-adjusted across every stratum, and `flagged` when p_holm < 1 − confidence. Tokens: mean, p50, p95, p99 (linear
//! interpolation) per variant, and the mean saving.
//!
//! The file is never loaded whole: Polars streams it, keeping per request only a few numbers,
//! then per stratum only integer sums.

use polars::prelude::*;
use serde::Serialize;

use crate::error::{Error, Result, Row};
use crate::io::logs::ShadowLog;
use crate::io::table;
use crate::stats::dist;

/// The three variants.
pub const VARIANTS: [&str; 3] = ["production", "replay", "candidate"];

/// Token statistics of one variant.
#[derive(Debug, Clone, Serialize)]
pub struct TokenStats {
    /// Mean input tokens.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// Tokens per variant.
#[derive(Debug, Clone, Serialize)]
pub struct ShadowTokens {
    /// Production.
    pub production: Option<TokenStats>,
    /// Candidate.
    pub candidate: Option<TokenStats>,
    /// production mean − candidate mean.
    pub saving_mean: Option<f64>,
}

/// One stratum.
#[derive(Debug, Clone, Serialize)]
pub struct ShadowStratum {
    /// Column → value, joined as `col=value, …`.
    pub stratum: String,
    /// Requests with every variant.
    pub requests: u64,
    /// Share whose candidate answer changed.
    pub changed_rate: f64,
    /// Share whose replay answer changed (null without replay).
    pub noise_rate: Option<f64>,
    /// changed − noise (null without replay).
    pub excess_rate: Option<f64>,
    /// Its standard error.
    pub se: Option<f64>,
    /// Normal interval of the excess rate (null without an se).
    pub ci_low: Option<f64>,
    /// Upper end.
    pub ci_high: Option<f64>,
    /// One-sided p for excess > 0, Holm-adjusted across strata.
    pub p_holm: Option<f64>,
    /// p_holm < 1 − confidence.
    pub flagged: bool,
}

/// What `ablate shadow` reports.
#[derive(Debug, Clone, Serialize)]
pub struct ShadowOutput {
    /// Requests with every variant needed (production and candidate, and replay when present).
    pub requests: u64,
    /// Share whose candidate answer differs from production's.
    pub changed_rate: f64,
    /// Share whose replay answer differs from production's (null without replay rows).
    pub noise_rate: Option<f64>,
    /// changed − noise.
    pub excess_rate: Option<f64>,
    /// Its standard error.
    pub se: Option<f64>,
    /// Lower end of its interval (normal).
    pub ci_low: Option<f64>,
    /// Upper end.
    pub ci_high: Option<f64>,
    /// Confidence level.
    pub confidence_level: f64,
    /// Per stratum, when `by` columns were given.
    pub by_stratum: Vec<ShadowStratum>,
    /// Tokens per variant and the saving.
    pub tokens: ShadowTokens,
    /// Mean candidate score − production score (null without scores).
    pub score_delta: Option<f64>,
    /// Requests left out because a variant was missing.
    pub incomplete_requests: u64,
    /// Notes, e.g. that the noise floor is unknown.
    pub warnings: Vec<String>,
}

fn variant(v: &str) -> Expr {
    col("variant").eq(lit(v))
}

fn of(column: &str, v: &str) -> Expr {
    col(column).filter(variant(v)).first()
}

fn get_i64(df: &DataFrame, column: &str, row: usize) -> i64 {
    df.column(column)
        .ok()
        .and_then(|c| c.get(row).ok())
        .and_then(|v| v.extract::<i64>())
        .unwrap_or(0)
}

fn get_f64(df: &DataFrame, column: &str, row: usize) -> Option<f64> {
    df.column(column)
        .ok()
        .and_then(|c| c.get(row).ok())
        .and_then(|v| v.extract::<f64>())
}

/// Settings of `ablate shadow`.
#[derive(Debug, Clone, Copy)]
pub struct ShadowOptions {
    /// Confidence level of the intervals, in (0, 1).
    pub confidence: f64,
}

impl Default for ShadowOptions {
    fn default() -> Self {
        ShadowOptions { confidence: 0.95 }
    }
}

/// Runs the shadow analysis on a shadow-traffic log opened by [`ShadowLog::open`] (its stratum
/// columns are the log's `by`).
///
/// # Errors
/// Unknown variants; a request with a variant twice; no request with both production and
/// candidate rows; a failure reading the file while streaming.
pub fn run(shadow: &ShadowLog, opts: &ShadowOptions) -> Result<ShadowOutput> {
    let confidence = opts.confidence;
    let log = &shadow.log;
    let by = shadow.by.as_slice();
    let path = log.summary.path.clone();
    let lf = log.lf.clone();
    let has = |c: &str| log.has(c);

    // Unknown variants.
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
    if unknown.height() > 0 {
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

    // Per request: one row, a few numbers.
    let mut aggs = vec![
        variant("production").sum().alias("n_p"),
        variant("replay").sum().alias("n_r"),
        variant("candidate").sum().alias("n_c"),
        of("answer", "candidate")
            .neq(of("answer", "production"))
            .alias("changed"),
        of("answer", "replay")
            .neq(of("answer", "production"))
            .alias("noise"),
    ];
    if has("score") {
        aggs.push((of("score", "candidate") - of("score", "production")).alias("score_delta"));
    }
    if has("tokens_in") {
        aggs.push(of("tokens_in", "production").alias("tokens_production"));
        aggs.push(of("tokens_in", "candidate").alias("tokens_candidate"));
    }
    for c in by {
        aggs.push(col(c.as_str()).first());
    }
    let per_request = lf.clone().group_by([col("request_id")]).agg(aggs);

    // Whether replay rows exist at all: a light scan of one column.
    let has_replay = {
        let n = table::collect_streaming(
            lf.clone().select([variant("replay").sum().alias("n")]),
            &path,
        )?;
        get_i64(&n, "n", 0) > 0
    };
    let complete = if has_replay {
        col("n_p")
            .eq(lit(1))
            .and(col("n_r").eq(lit(1)))
            .and(col("n_c").eq(lit(1)))
    } else {
        col("n_p").eq(lit(1)).and(col("n_c").eq(lit(1)))
    };
    let duplicate = col("n_p")
        .gt(lit(1))
        .or(col("n_r").gt(lit(1)))
        .or(col("n_c").gt(lit(1)));
    let d = col("changed").cast(DataType::Int64) - col("noise").cast(DataType::Int64);
    // Integer sums of the rates: over the rows where `filter` holds, or every row when `None`.
    let rate_aggs = |filter: Option<Expr>| {
        let only = |e: Expr| match &filter {
            Some(f) => e.filter(f.clone()),
            None => e,
        };
        vec![
            match &filter {
                Some(f) => f.clone().cast(DataType::Int64).sum().alias("n"),
                None => len().alias("n"),
            },
            only(col("changed").cast(DataType::Int64))
                .sum()
                .alias("changed"),
            only(col("noise").cast(DataType::Int64))
                .sum()
                .alias("noise"),
            only(d.clone()).sum().alias("d"),
            only(d.clone() * d.clone()).sum().alias("d2"),
        ]
    };

    // One pass over the per-request frame for every overall figure.
    let mut summary_aggs = rate_aggs(Some(complete.clone()));
    summary_aggs.push(len().alias("total"));
    summary_aggs.push(
        duplicate
            .clone()
            .cast(DataType::Int64)
            .sum()
            .alias("duplicates"),
    );
    let token_filter = complete
        .clone()
        .and(col("tokens_production").is_not_null())
        .and(col("tokens_candidate").is_not_null());
    if has("tokens_in") {
        for v in ["production", "candidate"] {
            let c = || col(format!("tokens_{v}").as_str()).filter(token_filter.clone());
            summary_aggs.push(c().count().alias(format!("{v}_n").as_str()));
            summary_aggs.push(c().sum().alias(format!("{v}_sum").as_str()));
            for (q, name) in [(0.5, "p50"), (0.95, "p95"), (0.99, "p99")] {
                summary_aggs.push(
                    c().cast(DataType::Float64)
                        .quantile(lit(q), QuantileMethod::Linear)
                        .alias(format!("{v}_{name}").as_str()),
                );
            }
        }
    }
    if has("score") {
        summary_aggs.push(
            col("score_delta")
                .filter(complete.clone())
                .mean()
                .alias("score_delta"),
        );
    }
    let overall = table::collect_streaming(per_request.clone().select(summary_aggs), &path)?;

    // A variant twice for one request is a duplicate (the request is looked up only then).
    if get_i64(&overall, "duplicates", 0) > 0 {
        let dup = table::collect_streaming(
            per_request
                .clone()
                .filter(duplicate)
                .select([col("request_id")])
                .limit(1),
            &path,
        )?;
        let id = dup
            .column("request_id")
            .ok()
            .and_then(|c| c.get(0).ok())
            .map(|v| v.to_string())
            .unwrap_or_default();
        return Err(Error::BadValue {
            path: path.clone(),
            column: "request_id, variant".into(),
            row: Row::none(),
            value: id,
            problem: "this request has a variant more than once".into(),
            fix: "keep one row per request and variant".into(),
        });
    }
    let total_requests = get_i64(&overall, "total", 0) as u64;
    let n = get_i64(&overall, "n", 0) as u64;
    if n == 0 {
        return Err(Error::BadValue {
            path: path.clone(),
            column: "variant".into(),
            row: Row::none(),
            value: format!("{total_requests} requests"),
            problem: if has_replay {
                "no request has all three variants (production, replay and candidate)".into()
            } else {
                "no request has both a production and a candidate row".into()
            },
            fix: "log the candidate beside production for the same request_id".into(),
        });
    }

    struct Rates {
        changed: f64,
        noise: Option<f64>,
        excess: Option<f64>,
        se: Option<f64>,
    }
    let rates = |df: &DataFrame, row: usize| -> Rates {
        let n = get_i64(df, "n", row) as f64;
        let changed = get_i64(df, "changed", row) as f64 / n;
        if !has_replay {
            return Rates {
                changed,
                noise: None,
                excess: None,
                se: None,
            };
        }
        let (s, s2) = (get_i64(df, "d", row) as f64, get_i64(df, "d2", row) as f64);
        let mean = s / n;
        // No spread (every request moved the same way) leaves the se undefined, not zero.
        let var = if n >= 2.0 {
            ((s2 - s * s / n) / (n - 1.0)).max(0.0)
        } else {
            0.0
        };
        let se = (var > 0.0).then(|| var.sqrt() / n.sqrt());
        Rates {
            changed,
            noise: Some(get_i64(df, "noise", row) as f64 / n),
            excess: Some(mean),
            se,
        }
    };
    let all = rates(&overall, 0);
    let z = dist::z_two_sided(confidence);

    let mut by_stratum = Vec::new();
    if !by.is_empty() {
        let df = table::collect_streaming(
            per_request
                .clone()
                .filter(complete.clone())
                .group_by(by.iter().map(|c| col(c.as_str())).collect::<Vec<_>>())
                .agg(rate_aggs(None))
                .sort(
                    by.iter().map(String::as_str).collect::<Vec<_>>(),
                    SortMultipleOptions::default(),
                ),
            &path,
        )?;
        let mut p = Vec::new();
        for row in 0..df.height() {
            let r = rates(&df, row);
            let label = by
                .iter()
                .map(|c| {
                    let v = df
                        .column(c)
                        .ok()
                        .and_then(|x| x.get(row).ok())
                        .map(|v| v.to_string().trim_matches('"').to_string())
                        .unwrap_or_default();
                    format!("{c}={v}")
                })
                .collect::<Vec<_>>()
                .join(", ");
            // With spread, the normal approximation. Without (every request moved the same way,
            // or one request), an exact sign test on the discordant requests: d ∈ {−1, 0, 1}, so
            // Σd = pos − neg and Σd² = pos + neg. Every stratum with a replay stays in the family.
            p.push(match (r.excess, r.se) {
                (Some(e), Some(s)) if s > 0.0 => dist::p_one_sided_positive(e, s),
                (Some(_), _) => {
                    let (d, d2) = (get_i64(&df, "d", row), get_i64(&df, "d2", row));
                    dist::sign_test_greater(((d2 + d) / 2) as u64, ((d2 - d) / 2) as u64)
                }
                _ => f64::NAN,
            });
            by_stratum.push(ShadowStratum {
                stratum: label,
                requests: get_i64(&df, "n", row) as u64,
                changed_rate: r.changed,
                noise_rate: r.noise,
                excess_rate: r.excess,
                se: r.se,
                ci_low: r.excess.zip(r.se).map(|(e, s)| e - z * s),
                ci_high: r.excess.zip(r.se).map(|(e, s)| e + z * s),
                p_holm: None,
                flagged: false,
            });
        }
        let defined: Vec<usize> = (0..p.len()).filter(|&i| !p[i].is_nan()).collect();
        let adjusted = dist::holm(&defined.iter().map(|&i| p[i]).collect::<Vec<_>>());
        for (i, q) in defined.into_iter().zip(adjusted) {
            by_stratum[i].p_holm = Some(q);
            by_stratum[i].flagged = q < 1.0 - confidence;
        }
    }

    // Tokens per variant over the complete requests where both logged them (a paired saving),
    // with exact integer sums for the means.
    let token_stats = |v: &str| -> Option<TokenStats> {
        let n = get_i64(&overall, &format!("{v}_n"), 0);
        (n > 0).then(|| TokenStats {
            mean: get_i64(&overall, &format!("{v}_sum"), 0) as f64 / n as f64,
            p50: get_f64(&overall, &format!("{v}_p50"), 0).unwrap_or(f64::NAN),
            p95: get_f64(&overall, &format!("{v}_p95"), 0).unwrap_or(f64::NAN),
            p99: get_f64(&overall, &format!("{v}_p99"), 0).unwrap_or(f64::NAN),
        })
    };
    let tokens = if has("tokens_in") {
        let (production, candidate) = (token_stats("production"), token_stats("candidate"));
        ShadowTokens {
            saving_mean: production
                .as_ref()
                .zip(candidate.as_ref())
                .map(|(p, c)| p.mean - c.mean),
            production,
            candidate,
        }
    } else {
        ShadowTokens {
            production: None,
            candidate: None,
            saving_mean: None,
        }
    };
    let score_delta = if has("score") {
        get_f64(&overall, "score_delta", 0)
    } else {
        None
    };

    let mut warnings = Vec::new();
    if !has_replay {
        warnings.push(
            "no replay rows: the noise floor (production against itself) is unknown, so changed_rate cannot be separated from sampling noise; log a second production run as `replay`".into(),
        );
    }
    let incomplete = total_requests - n;
    if incomplete > 0 {
        warnings.push(format!(
            "{incomplete} requests lack a variant and are left out"
        ));
    }
    Ok(ShadowOutput {
        requests: n,
        changed_rate: all.changed,
        noise_rate: all.noise,
        excess_rate: all.excess,
        se: all.se,
        ci_low: all.excess.zip(all.se).map(|(e, s)| e - z * s),
        ci_high: all.excess.zip(all.se).map(|(e, s)| e + z * s),
        confidence_level: confidence,
        by_stratum,
        tokens,
        score_delta,
        incomplete_requests: incomplete,
        warnings,
    })
}
