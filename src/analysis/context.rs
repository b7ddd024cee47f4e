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
//! source's budget and the remaining global budget. Sizes and composition stream through Polars;
//! the replay reads the items of every call.

use std::collections::BTreeMap;
use std::path::Path;

use polars::prelude::*;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::io::logs::ContextLog;
use crate::io::table;
use crate::stats::moments::{self, Neumaier};
use crate::stats::percentile::sorted_quantile;

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
    /// Budget manager replay (with a policy).
    pub policy: Option<PolicyReplay>,
    /// Things to know, e.g. a policy budget for a source the log never mentions.
    pub warnings: Vec<String>,
}

fn i64s(df: &DataFrame, name: &str, path: &Path) -> Result<Vec<Option<i64>>> {
    let c = df
        .column(name)
        .and_then(|c| c.cast(&DataType::Int64))
        .map_err(|e| table::polars_unreadable(path, e))?;
    Ok(c.i64()
        .map_err(|e| table::polars_unreadable(path, e))?
        .iter()
        .collect())
}

/// Settings of `ablate context`.
#[derive(Debug, Clone, Default)]
pub struct ContextOptions {
    /// A budget policy to replay; its limits take the place of `limits`.
    pub policy: Option<Policy>,
    /// Limits for calls the log gives none (from the command line), and the defaults.
    pub limits: Policy,
}

/// Analyses a context log opened by [`ContextLog::open`].
///
/// # Errors
/// Unreadable file, bad columns or values, no model limit known for some call, hard limits ≤ 0.
pub fn run(context: &ContextLog, opts: &ContextOptions) -> Result<ContextOutput> {
    let (policy, limits) = (opts.policy.as_ref(), &opts.limits);
    let log = &context.log;
    let path = log.summary.path.clone();
    let lf = log.lf.clone();
    let has = |c: &str| log.has(c);
    let mut keys = vec![col("request_id")];
    if has("step") {
        keys.push(col("step"));
    }
    let mut aggs = vec![col("tokens").sum().alias("size")];
    for c in ["model_limit", "expected_output"] {
        if has(c) {
            aggs.push(col(c).max().alias(c));
        }
    }
    if has("step") {
        aggs.push(col("step").first().alias("step_value"));
    }
    let calls = table::collect_streaming(lf.clone().group_by(keys.clone()).agg(aggs), &path)?;
    let n = calls.height();
    let sizes: Vec<f64> = i64s(&calls, "size", &path)?
        .into_iter()
        .map(|v| v.unwrap_or(0) as f64)
        .collect();
    let limit_of = |column: &str, fallback: Option<i64>| -> Result<Vec<Option<i64>>> {
        Ok(if has(column) {
            i64s(&calls, column, &path)?
                .into_iter()
                .map(|v| v.or(fallback))
                .collect()
        } else {
            vec![fallback; n]
        })
    };
    let p = policy.unwrap_or(limits);
    let model = limit_of("model_limit", p.model_limit.or(limits.model_limit))?;
    let expected = limit_of(
        "expected_output",
        p.expected_output.or(limits.expected_output),
    )?;
    let mut hard = Vec::with_capacity(n);
    for i in 0..n {
        let m = model[i].ok_or_else(|| Error::Unsupported {
            what: format!("context analysis of {}", path.display()),
            reason: "a call has no model_limit, so its hard input limit is unknown".into(),
            fix: "log model_limit, or give --model-limit or a policy with model_limit".into(),
        })?;
        let h = m - (expected[i].unwrap_or(0) + p.output_buffer) - p.safety_margin;
        if h <= 0 {
            return Err(Error::Unsupported {
                what: format!("context analysis of {}", path.display()),
                reason: format!(
                    "model_limit {m} leaves no input budget after expected output {}, output buffer {} and safety margin {}",
                    expected[i].unwrap_or(0),
                    p.output_buffer,
                    p.safety_margin
                ),
                fix: "check the model limit, or lower the output buffer or safety margin".into(),
            });
        }
        hard.push(h as f64);
    }

    let mut sorted = sizes.clone();
    sorted.sort_by(f64::total_cmp);
    let size = SizeStats {
        mean: moments::mean(&sizes),
        p50: sorted_quantile(&sorted, 0.5),
        p95: sorted_quantile(&sorted, 0.95),
        p99: sorted_quantile(&sorted, 0.99),
        max: sorted.last().copied().unwrap_or(f64::NAN),
    };
    let utilisation = moments::mean(
        &sizes
            .iter()
            .zip(&hard)
            .map(|(s, h)| s / h)
            .collect::<Vec<_>>(),
    );
    let share = |pred: &dyn Fn(f64, f64) -> bool| {
        sizes
            .iter()
            .zip(&hard)
            .filter(|(s, h)| pred(**s, **h))
            .count() as f64
            / n.max(1) as f64
    };
    let overflow_rate = share(&|s, h| s > h);
    let soft_crossing_rate = share(&|s, h| s > p.soft_limit_ratio * h);
    let histogram = histogram(&sorted, 20);
    let mut sorted_hard = hard.clone();
    sorted_hard.sort_by(f64::total_cmp);

    let growth_per_step = if has("step") {
        let steps: Vec<f64> = i64s(&calls, "step_value", &path)?
            .into_iter()
            .map(|v| v.unwrap_or(0) as f64)
            .collect();
        let (mx, my) = (moments::mean(&steps), size.mean);
        let mut sxy = Neumaier::default();
        let mut sxx = Neumaier::default();
        for (x, y) in steps.iter().zip(&sizes) {
            sxy.add((x - mx) * (y - my));
            sxx.add((x - mx) * (x - mx));
        }
        (sxx.total() > 0.0).then(|| sxy.total() / sxx.total())
    } else {
        None
    };

    let by_source = table::collect_streaming(
        lf.clone()
            .group_by([col("source")])
            .agg([col("tokens").sum().alias("t")]),
        &path,
    )?;
    let sources = by_source
        .column("source")
        .and_then(|c| c.str().cloned())
        .map_err(|e| table::polars_unreadable(&path, e))?;
    let totals = i64s(&by_source, "t", &path)?;
    let all: f64 = totals.iter().map(|t| t.unwrap_or(0) as f64).sum();
    let composition: BTreeMap<String, f64> = sources
        .iter()
        .zip(&totals)
        .map(|(s, t)| {
            (
                s.unwrap_or("(none)").to_string(),
                if all > 0.0 {
                    t.unwrap_or(0) as f64 / all
                } else {
                    0.0
                },
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
    let policy_replay = match policy {
        Some(pol) => Some(replay(lf, has, pol, limits, &path)?),
        None => None,
    };
    Ok(ContextOutput {
        calls: n as u64,
        size,
        composition,
        hard_limit: sorted_quantile(&sorted_hard, 0.5),
        hard_limit_varies: sorted_hard.first() != sorted_hard.last(),
        utilisation,
        overflow_rate,
        soft_crossing_rate,
        growth_per_step,
        histogram,
        policy: policy_replay,
        warnings,
    })
}

/// `bins` equal-width bins from 0 to the largest of the sorted values.
fn histogram(sorted: &[f64], bins: usize) -> Vec<SizeBin> {
    let max = sorted.last().copied().unwrap_or(0.0).max(1.0);
    let width = max / bins as f64;
    let mut out: Vec<SizeBin> = (0..bins)
        .map(|i| SizeBin {
            lo: i as f64 * width,
            hi: (i + 1) as f64 * width,
            calls: 0,
        })
        .collect();
    for v in sorted {
        let i = ((v / width) as usize).min(bins - 1);
        out[i].calls += 1;
    }
    out
}

/// One item of a call, for the replay.
struct Item {
    source: String,
    tokens: i64,
    mandatory: bool,
    priority: i64,
    relevance: f64,
    hash: Option<String>,
}

fn replay(
    lf: LazyFrame,
    has: impl Fn(&str) -> bool,
    p: &Policy,
    limits: &Policy,
    path: &Path,
) -> Result<PolicyReplay> {
    let mut select = vec![col("request_id"), col("source"), col("tokens")];
    for c in [
        "step",
        "mandatory",
        "priority",
        "relevance",
        "content_hash",
        "model_limit",
        "expected_output",
    ] {
        if has(c) {
            select.push(col(c));
        }
    }
    let by: Vec<&str> = if has("step") {
        vec!["request_id", "step"]
    } else {
        vec!["request_id"]
    };
    let df = table::collect_streaming(
        lf.select(select).with_row_index("__row", None).sort(
            by.iter().copied().chain(["__row"]).collect::<Vec<_>>(),
            SortMultipleOptions::default(),
        ),
        path,
    )?;
    let text = |name: &str| -> Result<Vec<Option<String>>> {
        if !has(name) && name != "request_id" && name != "source" {
            return Ok(vec![None; df.height()]);
        }
        Ok(df
            .column(name)
            .and_then(|c| c.str().cloned())
            .map_err(|e| table::polars_unreadable(path, e))?
            .iter()
            .map(|v| v.map(str::to_string))
            .collect())
    };
    let ints = |name: &str| -> Result<Vec<Option<i64>>> {
        if !has(name) && name != "tokens" {
            return Ok(vec![None; df.height()]);
        }
        i64s(&df, name, path)
    };
    let ids = text("request_id")?;
    let sources = text("source")?;
    let hashes = text("content_hash")?;
    let tokens = ints("tokens")?;
    let steps = ints("step")?;
    let priority = ints("priority")?;
    let model = ints("model_limit")?;
    let expected = ints("expected_output")?;
    let mandatory: Vec<bool> = if has("mandatory") {
        df.column("mandatory")
            .and_then(|c| c.bool().cloned())
            .map_err(|e| table::polars_unreadable(path, e))?
            .iter()
            .map(|v| v.unwrap_or(false))
            .collect()
    } else {
        vec![false; df.height()]
    };
    let relevance: Vec<f64> = if has("relevance") {
        df.column("relevance")
            .and_then(|c| c.f64().cloned())
            .map_err(|e| table::polars_unreadable(path, e))?
            .iter()
            .map(|v| v.unwrap_or(f64::NEG_INFINITY))
            .collect()
    } else {
        vec![0.0; df.height()]
    };

    let mut overflow = 0u64;
    let mut fitting = 0u64;
    let mut calls = 0u64;
    let mut admitted_total = Neumaier::default();
    let mut saving_total = Neumaier::default();
    let mut evicted: BTreeMap<String, Neumaier> = BTreeMap::new();
    let mut start = 0;
    while start < df.height() {
        let mut end = start + 1;
        while end < df.height() && ids[end] == ids[start] && steps[end] == steps[start] {
            end += 1;
        }
        let first = start;
        start = end;
        calls += 1;
        // The call's limits as `run` reads them: the largest logged value, else the policy's.
        let logged = |v: &[Option<i64>]| v[first..end].iter().flatten().copied().max();
        let m = logged(&model)
            .or(p.model_limit)
            .or(limits.model_limit)
            .unwrap_or(0);
        let hard = m
            - (logged(&expected)
                .or(p.expected_output)
                .or(limits.expected_output)
                .unwrap_or(0)
                + p.output_buffer)
            - p.safety_margin;
        let items: Vec<Item> = (first..end)
            .map(|i| Item {
                source: sources[i].clone().unwrap_or_default(),
                tokens: tokens[i].unwrap_or(0),
                mandatory: mandatory[i],
                priority: priority[i].unwrap_or(i64::MAX),
                relevance: relevance[i],
                hash: hashes[i].clone(),
            })
            .collect();
        let size: i64 = items.iter().map(|i| i.tokens).sum();
        // Deduplicate by content hash (first occurrence kept). Evictions count only for calls
        // that fit, like the admitted and saved tokens they add up to.
        let mut seen = std::collections::HashSet::new();
        let mut kept = Vec::new();
        let mut call_evicted: Vec<(String, i64)> = Vec::new();
        for item in items {
            if let Some(h) = &item.hash
                && !seen.insert(h.clone())
            {
                call_evicted.push((item.source.clone(), item.tokens));
                continue;
            }
            kept.push(item);
        }
        let mandatory_tokens: i64 = kept.iter().filter(|i| i.mandatory).map(|i| i.tokens).sum();
        if mandatory_tokens > hard {
            overflow += 1;
            continue;
        }
        let budget = p.global_budget.map_or(hard, |g| g.min(hard));
        let mut remaining = budget - mandatory_tokens;
        let mut optional: Vec<&Item> = kept.iter().filter(|i| !i.mandatory).collect();
        optional.sort_by(|a, b| {
            a.priority
                .cmp(&b.priority)
                .then(b.relevance.total_cmp(&a.relevance))
        });
        let mut used_by_source: BTreeMap<&str, i64> = BTreeMap::new();
        let mut admitted = mandatory_tokens;
        for item in optional {
            let used = used_by_source.entry(item.source.as_str()).or_insert(0);
            let source_ok = p
                .budgets
                .get(&item.source)
                .is_none_or(|b| *used + item.tokens <= *b);
            if source_ok && item.tokens <= remaining {
                *used += item.tokens;
                remaining -= item.tokens;
                admitted += item.tokens;
            } else {
                call_evicted.push((item.source.clone(), item.tokens));
            }
        }
        for (source, tokens) in call_evicted {
            evicted.entry(source).or_default().add(tokens as f64);
        }
        fitting += 1;
        admitted_total.add(admitted as f64);
        saving_total.add((size - admitted) as f64);
    }
    let per = |x: f64, n: u64| if n > 0 { x / n as f64 } else { 0.0 };
    Ok(PolicyReplay {
        overflow_count: overflow,
        admitted_mean: per(admitted_total.total(), fitting),
        evicted_by_source: evicted
            .into_iter()
            .map(|(k, v)| (k, per(v.total(), fitting)))
            .collect(),
        saving_mean: per(saving_total.total(), fitting),
        calls,
    })
}
