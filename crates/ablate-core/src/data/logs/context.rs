//! The context log reduced to sums ([`ContextSums`]), and the budget policy it is replayed
//! through ([`Policy`], in `policy`): by streaming the log in hash partitions of request ids
//! (`sums`, in `scan`: one pass per partition, each holding only its share of the calls and,
//! for the policy replay, of the items), or from an engine's result of `ablate sql context`
//! (`read_aggregates`, in `aggregates`). `analysis::context::finish` turns the sums into the
//! report.

pub use crate::data::policy::{Policy, hard_limit};

use std::collections::BTreeMap;

use crate::data::logs;
use crate::stats::histogram::Counts;

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
    /// Adds another partition's replay sums.
    pub fn merge(&mut self, o: ReplaySums) {
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

/// The whole log reduced: what `analysis::context::finish` turns into the report. Built by
/// streaming the log (`sums`) or from an engine's aggregates (`read_aggregates`).
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
    /// Σ size / hard, as an engine's aggregates give it (streamed logs keep `size_by_hard`).
    pub utilisation_sum: f64,
    /// Σ size per hard limit, exact: the streamed log's utilisation is put together from these
    /// at the end ([`ContextSums::utilisation_total`]), so it does not depend on how the log was
    /// split into passes (`--memory`).
    pub size_by_hard: BTreeMap<i64, i128>,
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
    /// Σ size / hard over every call: `Σ_h (Σ size of the calls with hard limit h) / h`, in
    /// order of h with compensation, from the exact integer sums, plus what an engine's
    /// aggregates gave. The same to the bit however the calls were split into passes.
    pub fn utilisation_total(&self) -> f64 {
        let mut total = crate::stats::moments::Neumaier::default();
        total.add(self.utilisation_sum);
        for (&h, &size) in &self.size_by_hard {
            total.add(size as f64 / h as f64);
        }
        total.total()
    }

    /// Adds another partition's sums (sources are counted once, over the whole log).
    pub fn merge(&mut self, o: ContextSums) {
        self.calls += o.calls;
        self.size_sum += o.size_sum;
        self.sizes.merge(&o.sizes);
        self.hard.merge(&o.hard);
        self.utilisation_sum += o.utilisation_sum;
        for (h, size) in o.size_by_hard {
            *self.size_by_hard.entry(h).or_default() += size;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Calls of sizes 1..=3000 under hard limits 7000, 8000 and 12,000, as one pass or split
    /// into passes in another order: the utilisation is the same to the bit, and it is the
    /// mean of size / hard to within rounding.
    #[test]
    fn utilisation_does_not_depend_on_the_passes() {
        let calls: Vec<(i64, i64)> = (1..=3000)
            .map(|s| (s, [7000, 8000, 12_000][s as usize % 3]))
            .collect();
        let pass = |calls: &[(i64, i64)]| {
            let mut sums = ContextSums::default();
            for &(s, h) in calls {
                *sums.size_by_hard.entry(h).or_default() += i128::from(s);
            }
            sums
        };
        let whole = pass(&calls).utilisation_total();
        let mut split = ContextSums::default();
        for part in calls.rchunks(7) {
            split.merge(pass(part));
        }
        assert_eq!(split.utilisation_total().to_bits(), whole.to_bits());
        let direct: f64 = calls.iter().map(|&(s, h)| s as f64 / h as f64).sum();
        assert!(
            (whole - direct).abs() < 1e-9 * direct,
            "{whole} vs {direct}"
        );
        // An engine's aggregates carry the sum itself.
        let engine = ContextSums {
            utilisation_sum: 2.5,
            ..ContextSums::default()
        };
        assert_eq!(engine.utilisation_total(), 2.5);
    }
}
