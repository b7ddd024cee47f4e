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

pub mod aggregates;
mod scan;

pub use scan::{BYTES_PER_ROW, BYTES_PER_ROW_REPLAY};

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::io::logs::ContextLog;
use crate::stats::histogram::{BINS_PER_DOUBLING, Counts};

/// The budget policy: limits and per-source budgets.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Model context window, for calls whose log has none.
    pub model_limit: Option<i64>,
    /// Expected output tokens, for calls whose log has none.
    pub expected_output: Option<i64>,
    /// Reserved on top of the expected output.
    #[serde(default = "default_margin")]
    pub output_buffer: i64,
    /// Kept free below the model limit.
    #[serde(default = "default_margin")]
    pub safety_margin: i64,
    /// Soft limit as a share of the hard limit.
    #[serde(default = "default_soft")]
    pub soft_limit_ratio: f64,
    /// Cap on the whole input, below the hard limit (optional).
    pub global_budget: Option<i64>,
    /// Token budget per source (sources not listed are limited only by the global budget).
    #[serde(default)]
    pub budgets: BTreeMap<String, i64>,
}

fn default_margin() -> i64 {
    1000
}

fn default_soft() -> f64 {
    0.75
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            model_limit: None,
            expected_output: None,
            output_buffer: 1000,
            safety_margin: 1000,
            soft_limit_ratio: 0.75,
            global_budget: None,
            budgets: BTreeMap::new(),
        }
    }
}

impl Policy {
    /// Checks the ranges: a soft-limit ratio in (0, 1], a positive model limit, no negative expected
    /// output, buffer, margin or budget.
    ///
    /// # Errors
    /// A value out of range, naming its key.
    pub fn validate(&self, path: &Path) -> Result<()> {
        let bad = |key: &str, problem: String| Error::Manifest {
            path: path.to_path_buf(),
            key: key.into(),
            problem,
            fix: "see `ablate context --help` for the policy keys".into(),
        };
        if !(self.soft_limit_ratio > 0.0 && self.soft_limit_ratio <= 1.0) {
            return Err(bad(
                "soft_limit_ratio",
                format!("{} is outside (0, 1]", self.soft_limit_ratio),
            ));
        }
        for (key, v) in [
            ("output_buffer", self.output_buffer),
            ("safety_margin", self.safety_margin),
        ] {
            if v < 0 {
                return Err(bad(key, format!("{v} is negative")));
            }
        }
        if let Some(m) = self.model_limit.filter(|m| *m <= 0) {
            return Err(bad(
                "model_limit",
                format!("{m} is not a positive token count"),
            ));
        }
        for (key, v) in [
            ("expected_output", self.expected_output),
            ("global_budget", self.global_budget),
        ] {
            if let Some(v) = v.filter(|v| *v < 0) {
                return Err(bad(key, format!("{v} is negative")));
            }
        }
        if let Some((source, b)) = self.budgets.iter().find(|(_, b)| **b < 0) {
            return Err(bad(
                &format!("budgets.{source}"),
                format!("{b} is negative"),
            ));
        }
        Ok(())
    }

    /// Reads a policy from TOML.
    ///
    /// # Errors
    /// Unreadable file, bad TOML, unknown keys or wrong types (the message names the key).
    pub fn load(path: &Path) -> Result<Policy> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let text = String::from_utf8(bytes).map_err(|e| Error::Manifest {
            path: path.to_path_buf(),
            key: "(encoding)".into(),
            problem: format!(
                "not UTF-8 text (byte {} is invalid)",
                e.utf8_error().valid_up_to() + 1
            ),
            fix: "save the policy as UTF-8".into(),
        })?;
        let policy: Policy = toml::from_str(&text).map_err(|e: toml::de::Error| Error::Manifest {
            path: path.to_path_buf(),
            key: "(policy)".into(),
            problem: e.message().to_string(),
            fix: "keys: model_limit, expected_output, output_buffer, safety_margin, soft_limit_ratio, global_budget, [budgets] source = tokens".into(),
        })?;
        policy.validate(path)?;
        Ok(policy)
    }
}

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
    /// Mean tokens admitted per call that fits.
    pub admitted_mean: f64,
    /// Mean tokens evicted (deduplicated or over budget) per call that fits, by source: with the
    /// admitted tokens they add up to the calls' size.
    pub evicted_by_source: BTreeMap<String, f64>,
    /// Mean (size − admitted) per call that fits.
    pub saving_mean: f64,
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
    /// Share of all tokens by source.
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
    pub warnings: Vec<String>,
}

/// Settings of `ablate context`.
#[derive(Debug, Clone)]
pub struct ContextOptions {
    /// A budget policy to replay; its limits take the place of `limits`.
    pub policy: Option<Policy>,
    /// Limits for calls the log gives none (from the command line), and the defaults.
    pub limits: Policy,
    /// Memory budget in bytes: the log is read in as many hash partitions of request ids as keep
    /// each pass under it.
    pub memory: u64,
    /// Show a progress bar when the log takes more than one pass.
    pub progress: bool,
}

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions {
            policy: None,
            limits: Policy::default(),
            memory: crate::analysis::shadow::DEFAULT_MEMORY,
            progress: false,
        }
    }
}

impl ContextOptions {
    /// The limits in force: the policy's when one is given, else the command line's.
    pub fn effective_limits(&self) -> Policy {
        match &self.policy {
            None => self.limits.clone(),
            Some(p) => Policy {
                model_limit: p.model_limit.or(self.limits.model_limit),
                expected_output: p.expected_output.or(self.limits.expected_output),
                ..p.clone()
            },
        }
    }
}

/// Σ step, Σ step², Σ size·step over calls: with the call count and Σ size, the least-squares
/// slope of size on step.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepSums {
    /// Σ x.
    pub x: i128,
    /// Σ x².
    pub xx: i128,
    /// Σ x·y.
    pub xy: i128,
}

/// The budget manager's replay, as sums that add across partitions.
#[derive(Debug, Clone, Default)]
pub struct ReplaySums {
    /// Calls replayed.
    pub calls: u64,
    /// Calls whose mandatory items alone overflow.
    pub overflow: u64,
    /// Calls that fit.
    pub fitting: u64,
    /// Σ admitted tokens over calls that fit.
    pub admitted: i128,
    /// Σ (size − admitted) over calls that fit.
    pub saving: i128,
    /// Σ evicted tokens by source over calls that fit.
    pub evicted: BTreeMap<String, i128>,
}

impl ReplaySums {
    fn merge(&mut self, o: ReplaySums) {
        self.calls += o.calls;
        self.overflow += o.overflow;
        self.fitting += o.fitting;
        self.admitted += o.admitted;
        self.saving += o.saving;
        for (k, v) in o.evicted {
            *self.evicted.entry(k).or_insert(0) += v;
        }
    }
}

/// The whole log reduced: what [`finish`] turns into the report. Built by streaming the log
/// ([`run`]) or from an engine's aggregates ([`aggregates::read`]).
#[derive(Debug, Clone, Default)]
pub struct ContextSums {
    /// Calls.
    pub calls: u64,
    /// Σ size.
    pub size_sum: i128,
    /// Call sizes (exact, or log bins from an engine).
    pub sizes: Counts,
    /// Calls per hard limit.
    pub hard: Counts,
    /// Σ size / hard.
    pub utilisation_sum: f64,
    /// Calls above their hard limit.
    pub overflow: u64,
    /// Calls above their soft limit.
    pub soft_crossing: u64,
    /// Step sums, when the log has steps.
    pub steps: Option<StepSums>,
    /// Tokens per source.
    pub sources: BTreeMap<String, i128>,
    /// The policy replay, with a policy.
    pub replay: Option<ReplaySums>,
}

impl ContextSums {
    /// Adds another partition's sums (sources are counted once, over the whole log).
    pub fn merge(&mut self, o: ContextSums) {
        self.calls += o.calls;
        self.size_sum += o.size_sum;
        self.sizes.merge(&o.sizes);
        self.hard.merge(&o.hard);
        self.utilisation_sum += o.utilisation_sum;
        self.overflow += o.overflow;
        self.soft_crossing += o.soft_crossing;
        if let Some(s) = o.steps {
            let t = self.steps.get_or_insert_default();
            t.x += s.x;
            t.xx += s.xx;
            t.xy += s.xy;
        }
        for (k, v) in o.sources {
            *self.sources.entry(k).or_insert(0) += v;
        }
        if let Some(r) = o.replay {
            self.replay.get_or_insert_default().merge(r);
        }
    }
}

/// Analyses a context log opened by [`ContextLog::open`], streaming it in hash partitions of
/// request ids that fit `opts.memory`.
///
/// # Errors
/// Unreadable file, bad columns or values, no model limit known for some call, hard limits ≤ 0.
pub fn run(context: &ContextLog, opts: &ContextOptions) -> Result<ContextOutput> {
    let sums = scan::sums(context, opts)?;
    Ok(finish(&sums, opts.policy.as_ref()))
}

/// The hard input limit of a call from its logged (or fallback) model limit and expected output:
/// model_limit − (expected_output + output_buffer) − safety_margin.
///
/// # Errors
/// No model limit; a limit that leaves no input budget.
pub fn hard_limit(
    model: Option<i64>,
    expected: Option<i64>,
    p: &Policy,
    path: &Path,
) -> Result<i64> {
    let m = model.ok_or_else(|| Error::Unsupported {
        what: format!("context analysis of {}", path.display()),
        reason: "a call has no model_limit, so its hard input limit is unknown".into(),
        fix: "log model_limit, or give --model-limit or a policy with model_limit".into(),
    })?;
    let h = m - (expected.unwrap_or(0) + p.output_buffer) - p.safety_margin;
    if h <= 0 {
        return Err(Error::Unsupported {
            what: format!("context analysis of {}", path.display()),
            reason: format!(
                "model_limit {m} leaves no input budget after expected output {}, output buffer {} and safety margin {}",
                expected.unwrap_or(0),
                p.output_buffer,
                p.safety_margin
            ),
            fix: "check the model limit, or lower the output buffer or safety margin".into(),
        });
    }
    Ok(h)
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
    let composition: BTreeMap<String, f64> = sums
        .sources
        .iter()
        .map(|(s, t)| {
            (
                s.clone(),
                if all > 0 { *t as f64 / all as f64 } else { 0.0 },
            )
        })
        .collect();
    let mut warnings = Vec::new();
    if let Some(pol) = policy {
        for source in pol.budgets.keys().filter(|s| !composition.contains_key(*s)) {
            warnings.push(format!(
                "the policy budgets source \"{source}\", which the log never mentions (a typo?); it limits nothing. Sources in the log: {}",
                composition.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    let percentile_error = sums.sizes.error_bound();
    if let Some(e) = percentile_error {
        warnings.push(format!(
            "size percentiles, the largest call and the histogram come from log-spaced bins ({BINS_PER_DOUBLING} per doubling): percentiles are within {} of the exact value",
            crate::report::text::percent(Some(e), 1)
        ));
    }
    let per = |x: i128, n: u64| if n > 0 { x as f64 / n as f64 } else { 0.0 };
    let policy_replay = sums.replay.as_ref().map(|r| PolicyReplay {
        overflow_count: r.overflow,
        admitted_mean: per(r.admitted, r.fitting),
        evicted_by_source: r
            .evicted
            .iter()
            .map(|(k, v)| (k.clone(), per(*v, r.fitting)))
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
        utilisation: sums.utilisation_sum / nf,
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
