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
//! replay; with clusters, on the clusters whose Σ d is above or below 0), Holm-adjusted across
//! every stratum, and `flagged` when p_holm < 1 − confidence. Tokens: mean, p50, p95, p99 (linear
//! interpolation) per variant, and the mean saving.
//!
//! With a cluster column (`cluster_by`, e.g. the user), requests of one cluster are not
//! independent: the se is then the sd over B Poisson-bootstrap replicates of Σ w·d / Σ w, where
//! each cluster's weight w ~ Poisson(1) comes from a hash of (cluster, replicate) (Chamandy et
//! al., 2012), so replicate sums computed on separate partitions or days add up.
//!
//! The file is never loaded whole: it is reduced to [`ShadowSums`] (integer sums per stratum, exact
//! token counts) in as many hash partitions of request ids as fit the memory budget, each
//! streamed by Polars; an engine can compute the same sums (`ablate sql shadow`).

pub use crate::io::logs::shadow::{CellKey, CellSums, ShadowScan, ShadowSums, TokenSums};

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::analysis::interval::{self, Interval};
use crate::error::{Error, Result, Row};
use crate::stats::histogram::BINS_PER_DOUBLING;
use crate::stats::{dist, moments};

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
    /// Bound on the percentiles' relative error: null when exact (read from the log), 2^(1/16) − 1
    /// when read from an engine's log-spaced bins.
    pub percentile_error: Option<f64>,
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
    /// Normal interval of the excess rate, excess ± z·se (`ci_low`, `ci_high`, `ci_level`,
    /// `ci_method`; null without an se).
    #[serde(flatten, serialize_with = "interval::ci")]
    pub ci: Option<Interval>,
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
    /// Normal interval of the excess rate, excess ± z·se (`ci_low`, `ci_high`, `ci_level`,
    /// `ci_method`; null without an se).
    #[serde(flatten, serialize_with = "interval::ci")]
    pub ci: Option<Interval>,
    /// Confidence level.
    pub confidence_level: f64,
    /// How the standard errors were computed: independent requests, or a Poisson bootstrap over
    /// clusters.
    pub se_method: String,
    /// Per stratum, when `by` columns were given.
    pub by_stratum: Vec<ShadowStratum>,
    /// Tokens per variant and the saving.
    pub tokens: ShadowTokens,
    /// Mean candidate score − production score (null without scores).
    pub score_delta: Option<f64>,
    /// Requests left out because a variant was missing.
    pub incomplete_requests: u64,
    /// Notes, e.g. that the noise floor is unknown.
    pub warnings: Vec<crate::warning::Warning>,
}

/// Settings of `ablate shadow`.
#[derive(Debug, Clone)]
pub struct ShadowOptions {
    /// Confidence level of the intervals, in (0, 1).
    pub confidence: f64,
    /// Memory budget in bytes for the per-request state: the log is read in as many hash
    /// partitions of request ids (or of clusters) as keep each pass under it.
    pub memory: u64,
    /// Poisson-bootstrap replicates when the log has a cluster column.
    pub replicates: usize,
    /// Show a progress bar when the log takes more than one pass.
    pub progress: bool,
}

pub use crate::io::logs::DEFAULT_MEMORY;

/// Default number of Poisson-bootstrap replicates.
pub const DEFAULT_REPLICATES: usize = 200;

impl Default for ShadowOptions {
    fn default() -> Self {
        ShadowOptions {
            confidence: 0.95,
            memory: DEFAULT_MEMORY,
            replicates: DEFAULT_REPLICATES,
            progress: false,
        }
    }
}

/// The standard error of a mean from Poisson-bootstrap replicates: the sample sd over replicates
/// of Σ w·d / Σ w (replicates with Σ w = 0 skipped); undefined with fewer than two or no spread.
fn replicate_se(reps: &[(i64, i64)]) -> Option<f64> {
    let means: Vec<f64> = reps
        .iter()
        .filter(|(_, w)| *w > 0)
        .map(|(d, w)| *d as f64 / *w as f64)
        .collect();
    if means.len() < 2 {
        return None;
    }
    let sd = moments::sample_variance(&means).sqrt();
    (sd > 0.0).then_some(sd)
}

struct Rates {
    changed: f64,
    noise: Option<f64>,
    excess: Option<f64>,
    se: Option<f64>,
}

fn rates(c: &CellSums, has_replay: bool, clustered: bool) -> Rates {
    let n = c.requests as f64;
    let changed = c.changed as f64 / n;
    if !has_replay {
        return Rates {
            changed,
            noise: None,
            excess: None,
            se: None,
        };
    }
    let (s, s2) = (c.d() as f64, c.d2 as f64);
    let mean = s / n;
    let se = if clustered {
        replicate_se(&c.replicates)
    } else {
        // No spread (every request moved the same way) leaves the se undefined, not zero.
        let var = if n >= 2.0 {
            ((s2 - s * s / n) / (n - 1.0)).max(0.0)
        } else {
            0.0
        };
        (var > 0.0).then(|| var.sqrt() / n.sqrt())
    };
    Rates {
        changed,
        noise: Some(c.noise as f64 / n),
        excess: Some(mean),
        se,
    }
}

/// Turns the reduced log into the report: rates, intervals, per-stratum tests, tokens.
///
/// # Errors
/// No request with every variant needed.
pub fn finish(
    sums: &ShadowSums,
    by: &[String],
    opts: &ShadowOptions,
    path: &Path,
) -> Result<ShadowOutput> {
    let confidence = opts.confidence;
    let has_replay = sums.replay_rows > 0;
    let clustered = sums.replicates > 0;
    let mut all = CellSums::default();
    let mut strata: BTreeMap<&Vec<String>, CellSums> = BTreeMap::new();
    let mut incomplete = sums.incomplete;
    let mut left_out: BTreeMap<&Vec<String>, u64> = sums
        .incomplete_by_stratum
        .iter()
        .map(|(k, n)| (k, *n))
        .collect();
    for ((key, replay), c) in &sums.cells {
        if *replay != has_replay {
            // With replay rows in the log, a request without one is incomplete.
            incomplete += c.requests;
            *left_out.entry(key).or_default() += c.requests;
            continue;
        }
        all.merge(c);
        strata.entry(key).or_default().merge(c);
    }
    // The strata whose requests were all left out have no row of their own.
    left_out.retain(|k, n| *n > 0 && !strata.contains_key(k));
    let n = all.requests;
    if n == 0 {
        return Err(Error::BadValue {
            path: path.to_path_buf(),
            column: "variant".into(),
            row: Row::none(),
            value: format!("{incomplete} requests"),
            problem: if has_replay {
                "no request has all three variants (production, replay and candidate)".into()
            } else {
                "no request has both a production and a candidate row".into()
            },
            fix: "log the candidate beside production for the same request_id".into(),
        });
    }
    let overall = rates(&all, has_replay, clustered);
    let by_stratum = if by.is_empty() {
        Vec::new()
    } else {
        stratum_rows(&strata, by, has_replay, clustered, confidence)
    };
    let tokens = token_summary(&all);
    let mut warnings = warnings(has_replay, incomplete, tokens.percentile_error);
    if !by.is_empty() && !left_out.is_empty() {
        warnings.push(strata_left_out(&left_out, by, has_replay));
    }
    let flat_strata: Vec<&str> = by_stratum
        .iter()
        .filter(|s| s.excess_rate.is_some() && s.se.is_none())
        .map(|s| s.stratum.as_str())
        .collect();
    if let Some(w) = no_spread(
        overall.excess.is_some() && overall.se.is_none(),
        &flat_strata,
        clustered,
    ) {
        warnings.push(w);
    }
    let se_method = match &sums.cluster {
        Some(c) if clustered => format!(
            "Poisson bootstrap over clusters of `{c}` ({} replicates)",
            sums.replicates
        ),
        _ => "independent requests".into(),
    };
    Ok(ShadowOutput {
        requests: n,
        changed_rate: overall.changed,
        noise_rate: overall.noise,
        excess_rate: overall.excess,
        se: overall.se,
        ci: overall
            .excess
            .and_then(|e| Interval::normal(e, overall.se, confidence)),
        confidence_level: confidence,
        se_method,
        by_stratum,
        tokens,
        score_delta: (all.score_n > 0).then(|| all.score_delta / all.score_n as f64),
        incomplete_requests: incomplete,
        warnings,
    })
}

/// One row per stratum, each flagged when its Holm-adjusted one-sided p-value (excess > 0) is
/// below 1 − confidence. Every stratum with a replay stays in the family.
fn stratum_rows(
    strata: &BTreeMap<&Vec<String>, CellSums>,
    by: &[String],
    has_replay: bool,
    clustered: bool,
    confidence: f64,
) -> Vec<ShadowStratum> {
    let mut p = Vec::new();
    let mut rows = Vec::new();
    for (key, c) in strata {
        let r = rates(c, has_replay, clustered);
        p.push(stratum_p(&r, c, clustered));
        rows.push(ShadowStratum {
            stratum: stratum_name(by, key),
            requests: c.requests,
            changed_rate: r.changed,
            noise_rate: r.noise,
            excess_rate: r.excess,
            se: r.se,
            ci: r.excess.and_then(|e| Interval::normal(e, r.se, confidence)),
            p_holm: None,
            flagged: false,
        });
    }
    let defined: Vec<usize> = (0..p.len()).filter(|&i| !p[i].is_nan()).collect();
    let adjusted = dist::holm(&defined.iter().map(|&i| p[i]).collect::<Vec<_>>());
    for (i, q) in defined.into_iter().zip(adjusted) {
        rows[i].p_holm = Some(q);
        rows[i].flagged = q < 1.0 - confidence;
    }
    rows
}

/// A stratum as the report names it: `column=value` per `by` column, joined by ", ".
fn stratum_name(by: &[String], key: &[String]) -> String {
    by.iter()
        .zip(key)
        .map(|(col, v)| format!("{col}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A stratum's one-sided p-value that its excess is above 0. With spread, the normal
/// approximation. Without (every request moved the same way, or one request), an exact sign
/// test on the discordant requests: d ∈ {−1, 0, 1}, so Σd = pos − neg and Σd² = pos + neg.
/// With clusters the units are the clusters: 30 changed requests of one user are one
/// observation, not 30. NaN without a replay.
fn stratum_p(r: &Rates, c: &CellSums, clustered: bool) -> f64 {
    match (r.excess, r.se) {
        (Some(e), Some(s)) if s > 0.0 => dist::p_one_sided_positive(e, s),
        (Some(_), _) if clustered => dist::sign_test_greater(c.clusters_up, c.clusters_down),
        (Some(_), _) => {
            let (d, d2) = (c.d(), c.d2 as i64);
            dist::sign_test_greater(((d2 + d) / 2) as u64, ((d2 - d) / 2) as u64)
        }
        _ => f64::NAN,
    }
}

/// Tokens per variant over the complete requests where both logged them (a paired saving), with
/// exact integer sums for the means.
fn token_summary(all: &CellSums) -> ShadowTokens {
    let token_stats = |t: &TokenSums| -> Option<TokenStats> {
        (t.n > 0).then(|| TokenStats {
            mean: t.sum as f64 / t.n as f64,
            p50: t.counts.quantile(0.5),
            p95: t.counts.quantile(0.95),
            p99: t.counts.quantile(0.99),
        })
    };
    let (production, candidate) = (token_stats(&all.tokens[0]), token_stats(&all.tokens[1]));
    let percentile_error = if production.is_some() {
        all.tokens[0].counts.error_bound()
    } else {
        None
    };
    ShadowTokens {
        saving_mean: production
            .as_ref()
            .zip(candidate.as_ref())
            .map(|(p, c)| p.mean - c.mean),
        production,
        candidate,
        percentile_error,
    }
}

/// The warning for an excess rate without spread, overall (`overall`) or in the strata named in
/// `strata`: one request or cluster, or every one moved the same way. Its se and interval are
/// undefined (null), not 0; a stratum's p then comes from the exact sign test.
fn no_spread(overall: bool, strata: &[&str], clustered: bool) -> Option<crate::warning::Warning> {
    if !overall && strata.is_empty() {
        return None;
    }
    let unit = if clustered { "cluster" } else { "request" };
    let mut parts = Vec::new();
    if overall {
        parts.push("the excess rate".to_string());
    }
    if !strata.is_empty() {
        parts.push(format!(
            "{} strata ({}), whose p comes from an exact sign test",
            strata.len(),
            // "; " between strata: a stratum of several columns is itself "a=x, b=y".
            strata[..strata.len().min(10)].join("; ")
                + if strata.len() > 10 { "; …" } else { "" }
        ));
    }
    Some(crate::warning::Warning::new(
        "shadow.no_spread",
        format!(
            "no spread in {}: a single {unit}, or every {unit} moved the same way against production and replay, so the se and interval are undefined (null), not 0",
            parts.join(" and in ")
        ),
    ))
}

/// The warning naming the strata none of whose requests is complete (`left_out`: each with its
/// incomplete requests): they have no row in `by_stratum`, so the breakdown says nothing of them.
fn strata_left_out(
    left_out: &BTreeMap<&Vec<String>, u64>,
    by: &[String],
    has_replay: bool,
) -> crate::warning::Warning {
    let named: Vec<String> = left_out
        .iter()
        .take(10)
        .map(|(key, n)| {
            let noun = if *n == 1 { "request" } else { "requests" };
            format!("{} ({n} {noun})", stratum_name(by, key))
        })
        .collect();
    let variants = if has_replay {
        "production, replay and candidate"
    } else {
        "production and candidate"
    };
    crate::warning::Warning::new(
        "shadow.strata_left_out",
        format!(
            "{} {} no request with {variants} and no row in by_stratum: {}{}; log the missing variants for them",
            left_out.len(),
            if left_out.len() == 1 {
                "stratum has"
            } else {
                "strata have"
            },
            named.join("; "),
            if left_out.len() > 10 { "; …" } else { "" }
        ),
    )
}

/// The warnings: no replay rows, incomplete requests, binned percentiles.
fn warnings(
    has_replay: bool,
    incomplete: u64,
    percentile_error: Option<f64>,
) -> Vec<crate::warning::Warning> {
    let mut warnings = Vec::new();
    if !has_replay {
        warnings.push(crate::warning::Warning::new("shadow.no_replay", "no replay rows: the noise floor (production against itself) is unknown, so changed_rate cannot be separated from sampling noise; log a second production run as `replay`",));
    }
    if incomplete > 0 {
        warnings.push(crate::warning::Warning::new(
            "shadow.incomplete_requests",
            format!("{incomplete} requests lack a variant and are left out"),
        ));
    }
    if let Some(e) = percentile_error {
        warnings.push(crate::warning::Warning::new("shadow.binned_percentiles", format!(
            "token percentiles come from log-spaced bins ({BINS_PER_DOUBLING} per doubling): each is within {} of the exact value",
            crate::text::percent(Some(e), 1)
        )));
    }
    warnings
}
