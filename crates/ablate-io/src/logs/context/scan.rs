//! Streams a context log into [`ContextSums`]: one pass per hash partition of request ids, each
//! holding only its share of the calls (and, for the policy replay, of the items).

use std::collections::BTreeMap;
use std::path::Path;

use polars::prelude::*;

use super::{ContextOptions, ContextSums, Policy, ReplaySums, StepSums, hard_limit};
use crate::error::{Error, Result};
use crate::io::logs::{self, ContextLog};
use crate::io::table;
use crate::stats::histogram::Counts;

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

/// Most tokens a sum of log rows may reach: 2⁵³, below which a floating-point sum of whole
/// numbers is exact. Token sums are taken in floating point (each row is at most
/// [`logs::MAX_TOKENS`], but millions of them could pass 2⁶³ and overflow a 64-bit integer sum).
const MAX_EXACT_SUM: f64 = 9_007_199_254_740_992.0;

/// The sum of `tokens` over each group, as a floating-point sum: exact up to [`MAX_EXACT_SUM`],
/// never an overflow.
fn token_sum(alias: &str) -> Expr {
    col("tokens").cast(DataType::Float64).sum().alias(alias)
}

/// Column `name` of token sums ([`token_sum`]) as whole numbers.
///
/// # Errors
/// A sum at or beyond [`MAX_EXACT_SUM`], where it may no longer be exact: `what` names the
/// group, given its row in `df` and the frame the sums came from.
fn token_sums(
    df: &DataFrame,
    name: &str,
    path: &Path,
    what: impl FnOnce(usize) -> Result<String>,
) -> Result<Vec<Option<i64>>> {
    let c = df
        .column(name)
        .and_then(|c| c.cast(&DataType::Float64))
        .map_err(|e| table::polars_unreadable(path, e))?;
    let sums = c.f64().map_err(|e| table::polars_unreadable(path, e))?;
    if let Some((i, x)) = sums
        .iter()
        .enumerate()
        .find_map(|(i, v)| v.filter(|x| *x >= MAX_EXACT_SUM).map(|x| (i, x)))
    {
        return Err(Error::BadValue {
            path: path.to_path_buf(),
            column: "tokens".into(),
            row: crate::error::Row::none(),
            value: format!("{x:.0}"),
            problem: format!(
                "the tokens of {} add up to 2^53 or more, where a sum is no longer exact",
                what(i)?
            ),
            fix: "check the tokens column: a row counts the tokens of one item".into(),
        });
    }
    Ok(sums.iter().map(|v| v.map(|x| x as i64)).collect())
}

/// The call (request, and step when logged) whose tokens add up past [`MAX_EXACT_SUM`], found
/// again in `part` (the calls' frame keeps no keys, to save memory): the first by request.
fn overflowing_call(part: LazyFrame, keys: Vec<Expr>, step: bool, path: &Path) -> Result<String> {
    let found = table::collect_streaming(
        part.group_by(keys)
            .agg([token_sum("size")])
            .filter(col("size").gt_eq(lit(MAX_EXACT_SUM)))
            .sort(["request_id"], SortMultipleOptions::default())
            .limit(1),
        path,
    )?;
    let text = |name: &str| {
        found
            .column(name)
            .and_then(|c| c.cast(&DataType::String))
            .ok()
            .and_then(|c| c.str().ok().and_then(|s| s.get(0).map(str::to_string)))
            .unwrap_or_default()
    };
    let request = text("request_id");
    Ok(if step {
        format!("the call of request {request:?} at step {}", text("step"))
    } else {
        format!("the call of request {request:?}")
    })
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
    logs::allocator_for_budget();
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

    let by_source =
        table::collect_streaming(lf.group_by([col("source")]).agg([token_sum("t")]), &path)?;
    let sources = by_source
        .column("source")
        .and_then(|c| c.str().cloned())
        .map_err(|e| table::polars_unreadable(&path, e))?;
    let totals = token_sums(&by_source, "t", &path, |i| {
        Ok(format!(
            "source {:?}",
            sources.get(i).unwrap_or("(none)").to_string()
        ))
    })?;
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
    let mut aggs = vec![token_sum("size")];
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
    let (part_for_errors, keys_for_errors) = (part.clone(), keys.clone());
    let calls = table::collect_streaming(
        part.group_by(keys)
            .agg(aggs)
            .select(names.iter().map(|n| col(*n)).collect::<Vec<_>>()),
        path,
    )?;
    let n = calls.height();
    let sizes = token_sums(&calls, "size", path, |_| {
        overflowing_call(part_for_errors, keys_for_errors, has("step"), path)
    })?;
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
    for i in 0..n {
        let h = hard_limit(model[i], expected[i], p, path)?;
        let s = sizes[i].unwrap_or(0);
        out.calls += 1;
        out.size_sum += i128::from(s);
        out.sizes.add(s, 1);
        out.hard.add(h, 1);
        *out.size_by_hard.entry(h).or_default() += i128::from(s);
        if s > h {
            out.overflow += 1;
        }
        if s as f64 > p.soft_limit(h) {
            out.soft_crossing += 1;
        }
        if let (Some(steps), Some(t)) = (&steps, out.steps.as_mut()) {
            let x = i128::from(steps[i].unwrap_or(0));
            t.x += x;
            t.xx += x * x;
            t.xy += x * i128::from(s);
        }
    }
    Ok(out)
}

/// One item of a call, for the replay.
#[derive(Clone)]
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
    let items = ItemColumns::read(lf, &has, path)?;
    let mut out = ReplaySums::default();
    let mut start = 0;
    while start < items.ids.len() {
        let call = items.call_at(start);
        start = call.end;
        out.calls += 1;
        let hard = items.hard_limit(call.clone(), p, limits);
        let call_items: Vec<Item> = call.map(|i| items.item(i)).collect();
        let size: i64 = call_items.iter().map(|i| i.tokens).sum();
        let Some((admitted, evicted)) = admit(p, &items.names, call_items, hard) else {
            out.overflow += 1;
            continue;
        };
        for (source, tokens) in evicted {
            *out.evicted.entry(items.names[source].clone()).or_insert(0) += i128::from(tokens);
        }
        out.fitting += 1;
        out.admitted += i128::from(admitted);
        out.saving += i128::from(size - admitted);
    }
    Ok(out)
}

/// A partition's items sorted into calls (by request key, step, then log order), one vector per
/// column. Request ids and content hashes enter as 64-bit hashes (a call is the 128-bit request
/// key and the step), sources as small codes: the items hold no text of their own.
struct ItemColumns {
    ids: Vec<(Option<u64>, Option<u64>)>,
    steps: Vec<Option<i64>>,
    /// Source names, indexed by the codes in `sources`.
    names: Vec<String>,
    sources: Vec<usize>,
    hashes: Vec<Option<u64>>,
    tokens: Vec<Option<i64>>,
    priority: Vec<Option<i64>>,
    model: Vec<Option<i64>>,
    expected: Vec<Option<i64>>,
    mandatory: Vec<bool>,
    relevance: Vec<f64>,
}

impl ItemColumns {
    fn read(lf: LazyFrame, has: &impl Fn(&str) -> bool, path: &Path) -> Result<ItemColumns> {
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
        let (names, sources) = source_codes(&df, path)?;
        Ok(ItemColumns {
            ids: u64s("request_id_h1")?
                .into_iter()
                .zip(u64s("request_id_h2")?)
                .collect(),
            steps: ints("step")?,
            names,
            sources,
            hashes: u64s("content_hash")?,
            tokens: ints("tokens")?,
            priority: ints("priority")?,
            model: ints("model_limit")?,
            expected: ints("expected_output")?,
            mandatory: if has("mandatory") {
                df.column("mandatory")
                    .and_then(|c| c.bool().cloned())
                    .map_err(unreadable)?
                    .iter()
                    .map(|v| v.unwrap_or(false))
                    .collect()
            } else {
                vec![false; df.height()]
            },
            relevance: if has("relevance") {
                df.column("relevance")
                    .and_then(|c| c.f64().cloned())
                    .map_err(unreadable)?
                    .iter()
                    .map(|v| v.unwrap_or(f64::NEG_INFINITY))
                    .collect()
            } else {
                vec![0.0; df.height()]
            },
        })
    }

    /// The rows of the call that starts at `start`: the run with its request key and step.
    fn call_at(&self, start: usize) -> std::ops::Range<usize> {
        let mut end = start + 1;
        while end < self.ids.len()
            && self.ids[end] == self.ids[start]
            && self.steps[end] == self.steps[start]
        {
            end += 1;
        }
        start..end
    }

    /// The call's hard input limit as `run` reads it: the largest logged value, else the
    /// policy's, else the limits'; minus the output buffer and the safety margin.
    fn hard_limit(&self, call: std::ops::Range<usize>, p: &Policy, limits: &Policy) -> i64 {
        let logged = |v: &[Option<i64>]| v[call.clone()].iter().flatten().copied().max();
        let model = logged(&self.model)
            .or(p.model_limit)
            .or(limits.model_limit)
            .unwrap_or(0);
        let expected = logged(&self.expected)
            .or(p.expected_output)
            .or(limits.expected_output)
            .unwrap_or(0);
        p.hard(model, expected)
    }

    fn item(&self, i: usize) -> Item {
        Item {
            source: self.sources[i],
            tokens: self.tokens[i].unwrap_or(0),
            mandatory: self.mandatory[i],
            priority: self.priority[i].unwrap_or(i64::MAX),
            relevance: self.relevance[i],
            hash: self.hashes[i],
        }
    }
}

/// The source names of a frame, and each row's code into them (first appearance order).
fn source_codes(df: &DataFrame, path: &Path) -> Result<(Vec<String>, Vec<usize>)> {
    let mut names: Vec<String> = Vec::new();
    let mut codes: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let sources = df
        .column("source")
        .and_then(|c| c.str().cloned())
        .map_err(|e| table::polars_unreadable(path, e))?
        .iter()
        .map(|s| {
            let s = s.unwrap_or_default();
            *codes.entry(s.to_string()).or_insert_with(|| {
                names.push(s.to_string());
                names.len() - 1
            })
        })
        .collect();
    Ok((names, sources))
}

/// One call through the budget manager: deduplicate by content hash (first occurrence kept),
/// admit every mandatory item, then the optional ones by priority (then relevance, highest
/// first) while they fit the budget (the hard limit, capped by the global budget) and their
/// source's budget. Returns the admitted tokens and the evicted (source, tokens), or `None` when
/// the mandatory items alone overflow the hard limit. Evictions count only for calls that fit,
/// like the admitted and saved tokens they add up to.
fn admit(
    p: &Policy,
    names: &[String],
    items: Vec<Item>,
    hard: i64,
) -> Option<(i64, Vec<(usize, i64)>)> {
    let mut seen = std::collections::HashSet::new();
    let mut kept = Vec::new();
    let mut evicted: Vec<(usize, i64)> = Vec::new();
    for item in items {
        if let Some(h) = item.hash
            && !seen.insert(h)
        {
            evicted.push((item.source, item.tokens));
            continue;
        }
        kept.push(item);
    }
    let mandatory_tokens: i64 = kept.iter().filter(|i| i.mandatory).map(|i| i.tokens).sum();
    if mandatory_tokens > hard {
        return None;
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
            evicted.push((item.source, item.tokens));
        }
    }
    Some((admitted, evicted))
}

#[cfg(test)]
mod tests {
    use super::{Item, Policy, admit};

    fn item(source: usize, tokens: i64, mandatory: bool, priority: i64, hash: Option<u64>) -> Item {
        Item {
            source,
            tokens,
            mandatory,
            priority,
            relevance: 0.0,
            hash,
        }
    }

    #[test]
    fn admit_dedupes_then_fills_by_priority_within_budgets() {
        let names = vec!["system".to_string(), "docs".to_string()];
        let p = Policy {
            budgets: [("docs".to_string(), 300)].into_iter().collect(),
            ..Policy::default()
        };
        let items = vec![
            item(0, 100, true, 0, Some(1)),
            item(1, 200, false, 1, Some(2)),
            item(1, 200, false, 2, Some(3)), // over the docs budget (200 + 200 > 300)
            item(1, 50, false, 3, Some(2)),  // a duplicate of the second item's content
            item(1, 80, false, 4, None),
        ];
        // Hard limit 1000: 100 mandatory, then 200 and 80 docs (the 200 after them would pass
        // the docs budget); the duplicate and the over-budget item are evicted.
        let (admitted, evicted) = admit(&p, &names, items.clone(), 1000).unwrap();
        assert_eq!(admitted, 380);
        let mut evicted = evicted;
        evicted.sort_unstable();
        assert_eq!(evicted, vec![(1, 50), (1, 200)]);
        // A hard limit of 250 leaves 150 after the mandatory 100: only the 80 fits.
        let (admitted, _) = admit(&p, &names, items.clone(), 250).unwrap();
        assert_eq!(admitted, 180);
        // Mandatory items over the hard limit: the call overflows.
        assert!(admit(&p, &names, items, 99).is_none());
    }
}
