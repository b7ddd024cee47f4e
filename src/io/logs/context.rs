//! The context log reduced to sums ([`ContextSums`]), and the budget policy it is replayed
//! through ([`Policy`], read from TOML by [`Policy::load`]): by streaming the log in hash
//! partitions of request ids ([`sums`]: one pass per partition, each holding only its share of
//! the calls and, for the policy replay, of the items), or from an engine's result of
//! `ablate sql context` ([`read_aggregates`]). `analysis::context::finish` turns the sums into
//! the report.

use std::collections::BTreeMap;
use std::path::Path;

use polars::prelude::*;

use crate::error::{Error, Result};
use crate::io::aggregates::LongTable;
use crate::io::logs::{self, ContextLog};
use crate::io::table::{self, TableFile};
use crate::sql::context::limits_key;
use crate::stats::histogram::Counts;
use crate::stats::moments::Neumaier;

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
            memory: logs::DEFAULT_MEMORY,
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

/// Memory per log row held by a pass without a policy (Polars' group-by state per call, calls
/// being at most rows), measured on `ablate simulate` logs with headroom.
pub const BYTES_PER_ROW: u64 = 120;

/// Memory per log row held by a pass that replays a policy (every item of the partition as
/// hashes and numbers, sorted into calls): 250–350 bytes measured, with headroom.
pub const BYTES_PER_ROW_REPLAY: u64 = 500;

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

/// Reduces the log to sums, in as many partitions as `opts.memory` needs.
pub fn sums(context: &ContextLog, opts: &ContextOptions) -> Result<ContextSums> {
    let log = &context.log;
    let path = log.summary.path.clone();
    let lf = log.lf.clone();
    let has = |c: &str| log.has(c);
    let limits = opts.effective_limits();
    let per_row = if opts.policy.is_some() {
        BYTES_PER_ROW_REPLAY
    } else {
        BYTES_PER_ROW
    };
    let passes = logs::passes(log.summary.rows as u64, per_row, opts.memory);
    let mut total = ContextSums {
        sizes: Counts::exact(),
        hard: Counts::exact(),
        ..ContextSums::default()
    };
    let bar = logs::pass_bar(passes, opts.progress, "context: partitions of the log");
    for pass in 0..passes {
        let part = if passes > 1 {
            lf.clone()
                .filter(logs::partition("request_id", pass, passes))
        } else {
            lf.clone()
        };
        total.merge(calls(part.clone(), &has, &limits, &path)?);
        if let Some(policy) = &opts.policy {
            let r = replay(part, has, policy, &opts.limits, &path)?;
            total.replay.get_or_insert_default().merge(r);
        }
        logs::release_freed_memory();
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }

    let by_source = table::collect_streaming(
        lf.group_by([col("source")])
            .agg([col("tokens").sum().alias("t")]),
        &path,
    )?;
    let sources = by_source
        .column("source")
        .and_then(|c| c.str().cloned())
        .map_err(|e| table::polars_unreadable(&path, e))?;
    let totals = i64s(&by_source, "t", &path)?;
    for (s, t) in sources.iter().zip(totals) {
        *total
            .sources
            .entry(s.unwrap_or("(none)").to_string())
            .or_insert(0) += i128::from(t.unwrap_or(0));
    }
    Ok(total)
}

/// The call sums of one partition: size, limits and step per call, then reduced.
fn calls(
    part: LazyFrame,
    has: &impl Fn(&str) -> bool,
    p: &Policy,
    path: &Path,
) -> Result<ContextSums> {
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
    let mut names = vec!["size"];
    names.extend(
        ["model_limit", "expected_output"]
            .into_iter()
            .filter(|c| has(c)),
    );
    if has("step") {
        names.push("step_value");
    }
    let calls = table::collect_streaming(
        part.group_by(keys)
            .agg(aggs)
            .select(names.iter().map(|n| col(*n)).collect::<Vec<_>>()),
        path,
    )?;
    let n = calls.height();
    let sizes = i64s(&calls, "size", path)?;
    let column_or = |name: &str, fallback: Option<i64>| -> Result<Vec<Option<i64>>> {
        Ok(if has(name) {
            i64s(&calls, name, path)?
                .into_iter()
                .map(|v| v.or(fallback))
                .collect()
        } else {
            vec![fallback; n]
        })
    };
    let model = column_or("model_limit", p.model_limit)?;
    let expected = column_or("expected_output", p.expected_output)?;
    let steps = if has("step") {
        Some(i64s(&calls, "step_value", path)?)
    } else {
        None
    };
    let mut out = ContextSums {
        sizes: Counts::exact(),
        hard: Counts::exact(),
        steps: steps.as_ref().map(|_| StepSums::default()),
        ..ContextSums::default()
    };
    let mut utilisation = Neumaier::default();
    for i in 0..n {
        let h = hard_limit(model[i], expected[i], p, path)?;
        let s = sizes[i].unwrap_or(0);
        out.calls += 1;
        out.size_sum += i128::from(s);
        out.sizes.add(s, 1);
        out.hard.add(h, 1);
        utilisation.add(s as f64 / h as f64);
        if s > h {
            out.overflow += 1;
        }
        if s as f64 > p.soft_limit_ratio * h as f64 {
            out.soft_crossing += 1;
        }
        if let (Some(steps), Some(t)) = (&steps, out.steps.as_mut()) {
            let x = i128::from(steps[i].unwrap_or(0));
            t.x += x;
            t.xx += x * x;
            t.xy += x * i128::from(s);
        }
    }
    out.utilisation_sum = utilisation.total();
    Ok(out)
}

/// One item of a call, for the replay.
struct Item {
    /// Index into the partition's source names.
    source: usize,
    tokens: i64,
    mandatory: bool,
    priority: i64,
    relevance: f64,
    hash: Option<u64>,
}

/// Replays one partition's calls through the budget manager.
fn replay(
    lf: LazyFrame,
    has: impl Fn(&str) -> bool,
    p: &Policy,
    limits: &Policy,
    path: &Path,
) -> Result<ReplaySums> {
    // Request ids and content hashes enter as 64-bit hashes (a call is the 128-bit request key
    // and the step), sources as small codes: the partition's items hold no text of their own.
    let [k1, k2] = logs::key128("request_id");
    let mut select = vec![k1, k2, col("source"), col("tokens")];
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
            select.push(if c == "content_hash" {
                logs::hash64(c).alias(c)
            } else {
                col(c)
            });
        }
    }
    let mut by = vec!["request_id_h1", "request_id_h2"];
    if has("step") {
        by.push("step");
    }
    let df = table::collect_streaming(
        lf.select(select).with_row_index("__row", None).sort(
            by.iter().copied().chain(["__row"]).collect::<Vec<_>>(),
            SortMultipleOptions::default(),
        ),
        path,
    )?;
    let unreadable = |e| table::polars_unreadable(path, e);
    let u64s = |name: &str| -> Result<Vec<Option<u64>>> {
        if !has(name) && !name.starts_with("request_id") {
            return Ok(vec![None; df.height()]);
        }
        Ok(df
            .column(name)
            .and_then(|c| c.u64().cloned())
            .map_err(unreadable)?
            .iter()
            .collect())
    };
    let ints = |name: &str| -> Result<Vec<Option<i64>>> {
        if !has(name) && name != "tokens" {
            return Ok(vec![None; df.height()]);
        }
        i64s(&df, name, path)
    };
    let ids: Vec<(Option<u64>, Option<u64>)> = u64s("request_id_h1")?
        .into_iter()
        .zip(u64s("request_id_h2")?)
        .collect();
    let mut names: Vec<String> = Vec::new();
    let mut codes: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let sources: Vec<usize> = df
        .column("source")
        .and_then(|c| c.str().cloned())
        .map_err(unreadable)?
        .iter()
        .map(|s| {
            let s = s.unwrap_or_default();
            *codes.entry(s.to_string()).or_insert_with(|| {
                names.push(s.to_string());
                names.len() - 1
            })
        })
        .collect();
    let hashes = u64s("content_hash")?;
    let tokens = ints("tokens")?;
    let steps = ints("step")?;
    let priority = ints("priority")?;
    let model = ints("model_limit")?;
    let expected = ints("expected_output")?;
    let mandatory: Vec<bool> = if has("mandatory") {
        df.column("mandatory")
            .and_then(|c| c.bool().cloned())
            .map_err(unreadable)?
            .iter()
            .map(|v| v.unwrap_or(false))
            .collect()
    } else {
        vec![false; df.height()]
    };
    let relevance: Vec<f64> = if has("relevance") {
        df.column("relevance")
            .and_then(|c| c.f64().cloned())
            .map_err(unreadable)?
            .iter()
            .map(|v| v.unwrap_or(f64::NEG_INFINITY))
            .collect()
    } else {
        vec![0.0; df.height()]
    };
    drop(df);

    let mut out = ReplaySums::default();
    let height = ids.len();
    let mut start = 0;
    while start < height {
        let mut end = start + 1;
        while end < height && ids[end] == ids[start] && steps[end] == steps[start] {
            end += 1;
        }
        let first = start;
        start = end;
        out.calls += 1;
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
                source: sources[i],
                tokens: tokens[i].unwrap_or(0),
                mandatory: mandatory[i],
                priority: priority[i].unwrap_or(i64::MAX),
                relevance: relevance[i],
                hash: hashes[i],
            })
            .collect();
        let size: i64 = items.iter().map(|i| i.tokens).sum();
        // Deduplicate by content hash (first occurrence kept). Evictions count only for calls
        // that fit, like the admitted and saved tokens they add up to.
        let mut seen = std::collections::HashSet::new();
        let mut kept = Vec::new();
        let mut call_evicted: Vec<(usize, i64)> = Vec::new();
        for item in items {
            if let Some(h) = item.hash
                && !seen.insert(h)
            {
                call_evicted.push((item.source, item.tokens));
                continue;
            }
            kept.push(item);
        }
        let mandatory_tokens: i64 = kept.iter().filter(|i| i.mandatory).map(|i| i.tokens).sum();
        if mandatory_tokens > hard {
            out.overflow += 1;
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
        let mut used_by_source: BTreeMap<usize, i64> = BTreeMap::new();
        let mut admitted = mandatory_tokens;
        for item in optional {
            let used = used_by_source.entry(item.source).or_insert(0);
            let source_ok = p
                .budgets
                .get(&names[item.source])
                .is_none_or(|b| *used + item.tokens <= *b);
            if source_ok && item.tokens <= remaining {
                *used += item.tokens;
                remaining -= item.tokens;
                admitted += item.tokens;
            } else {
                call_evicted.push((item.source, item.tokens));
            }
        }
        for (source, tokens) in call_evicted {
            *out.evicted.entry(names[source].clone()).or_insert(0) += i128::from(tokens);
        }
        out.fitting += 1;
        out.admitted += i128::from(admitted);
        out.saving += i128::from(size - admitted);
    }
    Ok(out)
}

/// Reads context aggregates, checking that the query used the limits `limits` (the same flags
/// or policy limits as this run).
///
/// # Errors
/// Unreadable file; missing columns; unknown statistics; counts that are not whole numbers; calls
/// without a model limit or with no input budget (the query counts them); limits other than
/// `limits`.
pub fn read_aggregates(file: &TableFile, limits: &Policy) -> Result<ContextSums> {
    let t = LongTable::read(file, &["key"], &[])?;
    let mut sums = ContextSums {
        sizes: Counts::log_binned(),
        hard: Counts::exact(),
        ..ContextSums::default()
    };
    let (mut missing, mut nonpositive) = (0u64, 0u64);
    let want = limits_key(limits);
    for r in &t.rows {
        match r.stat.as_str() {
            "calls" => t.add(r, &mut sums.calls, t.count(r)?)?,
            "size_sum" => sums.size_sum += i128::from(t.count(r)?),
            "size_hist" => sums.sizes.add(r.bin, t.count(r)?),
            "hard_calls" => sums.hard.add(r.bin, t.count(r)?),
            "utilisation_sum" => sums.utilisation_sum += r.value,
            "overflow" => t.add(r, &mut sums.overflow, t.count(r)?)?,
            "soft_crossing" => t.add(r, &mut sums.soft_crossing, t.count(r)?)?,
            "missing_limit" => missing += t.count(r)?,
            "nonpositive_limit" => nonpositive += t.count(r)?,
            "step_sum" => sums.steps.get_or_insert_default().x += i128::from(t.whole(r)?),
            "step2_sum" => sums.steps.get_or_insert_default().xx += i128::from(t.count(r)?),
            "size_step_sum" => sums.steps.get_or_insert_default().xy += i128::from(t.whole(r)?),
            "source_tokens" => {
                *sums.sources.entry(r.keys[0].clone()).or_insert(0) += i128::from(t.count(r)?)
            }
            "limits" => {
                if r.keys[0] != want {
                    return Err(Error::Usage(format!(
                        "{}: the query was written for limits {}, but this run uses {want}; pass the same --model-limit, --expected-output, --output-buffer, --safety-margin and --soft-limit-ratio (or policy limits) as `ablate sql context`",
                        t.path.display(),
                        r.keys[0]
                    )));
                }
            }
            other => {
                return Err(t.bad(
                    r,
                    format!("`{other}` is not a statistic of the context query"),
                ));
            }
        }
    }
    let path = Path::new(&t.path);
    if missing > 0 {
        hard_limit(None, None, limits, path)?;
    }
    if nonpositive > 0 {
        return Err(Error::Unsupported {
            what: format!("context analysis of {}", path.display()),
            reason: format!(
                "{nonpositive} calls have a model limit that leaves no input budget after the expected output, output buffer and safety margin"
            ),
            fix: "check the model limit, or lower the output buffer or safety margin".into(),
        });
    }
    if sums.calls == 0 {
        return Err(Error::EmptyTable {
            path: t.path.clone(),
        });
    }
    for (stat, n) in [
        ("overflow", sums.overflow),
        ("soft_crossing", sums.soft_crossing),
    ] {
        if n > sums.calls {
            return Err(Error::BadValue {
                path: t.path.clone(),
                column: "stat, value".into(),
                row: crate::error::Row::none(),
                value: format!("{stat} = {n}, calls = {}", sums.calls),
                problem: format!(
                    "{stat} counts calls, so it cannot exceed them: no log gives these sums"
                ),
                fix: "write this file with the query `ablate sql` prints, unchanged".into(),
            });
        }
    }
    Ok(sums)
}
