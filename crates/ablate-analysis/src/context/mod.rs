//! `ablate context`: prompt size as an architecture metric (seed 002).
//!
//! A call is a (request_id, step) pair (each request is one call when the log has no `step`); its
//! size is the Σ of its items' tokens. Reported: mean, p50, p95, p99 (linear interpolation) and max
//! size; the composition of all tokens by source; the hard input limit
//! hard = model_limit − (expected_output + output_buffer) − safety_margin (per call from the log's
//! model_limit and expected_output, else from the policy or flags; output_buffer and safety_margin
//! default to 1000) and the soft limit (0.75 × hard by default); utilisation = mean of size/hard,
//! overflow_rate = share of calls above hard, soft_crossing_rate = share above soft; and
//! growth_per_step = the least-squares slope of size on step.
//!
//! With a policy, each call is replayed through the budget manager of seed 002: items are
//! deduplicated by content_hash, mandatory items go first, and when they alone exceed the hard
//! limit the call fails with CONTEXT_BUDGET_EXCEEDED (counted, never truncated); optional items
//! are then admitted by priority (lower first), then relevance (higher first), while they fit their
//! source's budget and the remaining global budget.
//!
//! The log is reduced to [`ContextSums`] (exact size counts, integer sums, the replay's token sums),
//! in as many hash partitions of request ids as fit the memory budget, each streamed by Polars;
//! the replay holds the items of one partition at a time. An engine can compute the same sums,
//! with sizes in log-spaced bins (`ablate sql context`).

pub use crate::io::logs::context::{
    ContextOptions, ContextSums, Policy, ReplaySums, StepSums, hard_limit,
};

use std::collections::BTreeMap;

use serde::Serialize;

use crate::stats::histogram::BINS_PER_DOUBLING;

/// One bin of the call-size histogram.
#[derive(Debug, Clone, Serialize)]
pub struct SizeBin {
    /// Lower edge (tokens, inclusive).
    pub lo: f64,
    /// Upper edge (exclusive, inclusive for the last bin).
    pub hi: f64,
    /// Calls in the bin.
    pub calls: u64,
}

/// Size percentiles of calls.
#[derive(Debug, Clone, Serialize)]
pub struct SizeStats {
    /// Mean tokens per call.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest call.
    pub max: f64,
}

/// The budget manager's replay.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyReplay {
    /// Calls whose mandatory items alone exceed the hard limit (CONTEXT_BUDGET_EXCEEDED).
    pub overflow_count: u64,
    /// Mean tokens admitted per call that fits: null when no call fits (`context.no_call_fits`).
    pub admitted_mean: Option<f64>,
    /// Mean tokens evicted (deduplicated or over budget) per call that fits, by source: with the
    /// admitted tokens they add up to the calls' size. Empty when no call fits.
    pub evicted_by_source: BTreeMap<String, f64>,
    /// Mean (size − admitted) per call that fits: null when no call fits.
    pub saving_mean: Option<f64>,
    /// Calls replayed.
    pub calls: u64,
}

/// What `ablate context` reports.
#[derive(Debug, Clone, Serialize)]
pub struct ContextOutput {
    /// Calls.
    pub calls: u64,
    /// Call size statistics.
    pub size: SizeStats,
    /// Share of all tokens by source (empty, with the warning `context.no_tokens`, when the
    /// calls count no tokens at all).
    pub composition: BTreeMap<String, f64>,
    /// Hard input limit (the median over calls when it varies).
    pub hard_limit: f64,
    /// Whether calls have different hard limits.
    pub hard_limit_varies: bool,
    /// Mean of size / hard limit.
    pub utilisation: f64,
    /// Share of calls above the hard limit.
    pub overflow_rate: f64,
    /// Share of calls above the soft limit.
    pub soft_crossing_rate: f64,
    /// Least-squares slope of call size on step (null without steps).
    pub growth_per_step: Option<f64>,
    /// Call sizes in 20 equal bins from 0 to the largest call.
    pub histogram: Vec<SizeBin>,
    /// Bound on the size percentiles' relative error: null when exact (read from the log),
    /// 2^(1/16) − 1 when read from an engine's log-spaced bins.
    pub percentile_error: Option<f64>,
    /// Budget manager replay (with a policy).
    pub policy: Option<PolicyReplay>,
    /// Things to know, e.g. a policy budget for a source the log never mentions.
    pub warnings: Vec<crate::warning::Warning>,
}

/// Turns the reduced log into the report.
pub fn finish(sums: &ContextSums, policy: Option<&Policy>) -> ContextOutput {
    let n = sums.calls;
    let nf = n.max(1) as f64;
    let size = SizeStats {
        mean: if n > 0 {
            sums.size_sum as f64 / n as f64
        } else {
            f64::NAN
        },
        p50: sums.sizes.quantile(0.5),
        p95: sums.sizes.quantile(0.95),
        p99: sums.sizes.quantile(0.99),
        max: sums.sizes.max(),
    };
    // Least squares from sums: slope = (n·Σxy − Σx·Σy) / (n·Σx² − (Σx)²), exact in integers.
    let growth_per_step = sums.steps.and_then(|s| {
        let n = i128::from(n);
        let den = n * s.xx - s.x * s.x;
        (den > 0).then(|| (n * s.xy - s.x * sums.size_sum) as f64 / den as f64)
    });
    let all: i128 = sums.sources.values().sum();
    let mut warnings = Vec::new();
    // Shares of no tokens at all are undefined: the composition is left empty, with a warning
    // (shares of 0 that summed to 0 had been printed).
    let composition: BTreeMap<String, f64> = if all > 0 {
        sums.sources
            .iter()
            .map(|(s, t)| (s.clone(), *t as f64 / all as f64))
            .collect()
    } else {
        if n > 0 {
            warnings.push(crate::warning::Warning::new(
                "context.no_tokens",
                "every item of every call counts 0 tokens: the composition by source is undefined, and left empty",
            ));
        }
        BTreeMap::new()
    };
    if sums.steps.is_some() && growth_per_step.is_none() && n > 0 {
        warnings.push(crate::warning::Warning::new(
            "context.one_step",
            "every call is at the same step: the growth per step is undefined (null)",
        ));
    }
    if let Some(pol) = policy {
        for source in pol
            .budgets
            .keys()
            .filter(|s| !sums.sources.contains_key(*s))
        {
            warnings.push(crate::warning::Warning::new("context.unknown_budget_source", format!(
                "the policy budgets source \"{source}\", which the log never mentions (a typo?); it limits nothing. Sources in the log: {}",
                sums.sources.keys().cloned().collect::<Vec<_>>().join(", ")
            )));
        }
    }
    let percentile_error = sums.sizes.error_bound();
    if let Some(e) = percentile_error {
        warnings.push(crate::warning::Warning::new("context.binned_sizes", format!(
            "size percentiles, the largest call and the histogram come from log-spaced bins ({BINS_PER_DOUBLING} per doubling): percentiles are within {} of the exact value",
            crate::text::percent(Some(e), 1)
        )));
    }
    // Means over the calls that fit; undefined (not 0) when none does.
    let per = |x: i128, n: u64| (n > 0).then(|| x as f64 / n as f64);
    if let Some(r) = sums
        .replay
        .as_ref()
        .filter(|r| r.fitting == 0 && r.calls > 0)
    {
        warnings.push(crate::warning::Warning::new(
            "context.no_call_fits",
            format!(
                "in the policy replay no call fits: the mandatory items of all {} calls exceed the hard limit, so the admitted and saved tokens per call are undefined (null)",
                r.calls
            ),
        ));
    }
    let policy_replay = sums.replay.as_ref().map(|r| PolicyReplay {
        overflow_count: r.overflow,
        admitted_mean: per(r.admitted, r.fitting),
        evicted_by_source: r
            .evicted
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), per(*v, r.fitting)?)))
            .collect(),
        saving_mean: per(r.saving, r.fitting),
        calls: r.calls,
    });
    ContextOutput {
        calls: n,
        size,
        composition,
        hard_limit: sums.hard.quantile(0.5),
        hard_limit_varies: sums.hard.counts.len() > 1,
        utilisation: sums.utilisation_total() / nf,
        overflow_rate: sums.overflow as f64 / nf,
        soft_crossing_rate: sums.soft_crossing as f64 / nf,
        growth_per_step,
        histogram: sums
            .sizes
            .equal_bins(20)
            .into_iter()
            .map(|(lo, hi, calls)| SizeBin { lo, hi, calls })
            .collect(),
        percentile_error,
        policy: policy_replay,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Calls of no tokens have no composition (not shares of 0 that sum to 0), and calls all at
    /// one step no growth per step; each says why.
    #[test]
    fn no_tokens_and_one_step_are_undefined_with_a_warning() {
        let mut sums = ContextSums {
            calls: 3,
            // Three calls at step 2: Σx = 6, Σx² = 12, so n·Σx² − (Σx)² = 0.
            steps: Some(StepSums {
                x: 6,
                xx: 12,
                xy: 0,
            }),
            ..ContextSums::default()
        };
        sums.sources.insert("system".into(), 0);
        sums.sources.insert("tools".into(), 0);
        let out = finish(&sums, None);
        assert!(out.composition.is_empty(), "{:?}", out.composition);
        assert_eq!(out.growth_per_step, None);
        let codes: Vec<&str> = out.warnings.iter().map(|w| w.code).collect();
        assert_eq!(codes, ["context.no_tokens", "context.one_step"]);

        sums.sources.insert("tools".into(), 30);
        let out = finish(&sums, None);
        assert_eq!(out.composition["tools"], 1.0);
        assert_eq!(out.composition["system"], 0.0);
    }
}
