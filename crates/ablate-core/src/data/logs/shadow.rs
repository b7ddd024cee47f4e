//! The shadow log reduced to sums ([`ShadowSums`]): by streaming the log in hash partitions of
//! request ids (`sums`, in `scan`), or from an engine's result of `ablate sql shadow`
//! (`read_aggregates`, in `aggregates`). `analysis::shadow::finish` turns the sums into the
//! report.

use std::collections::BTreeMap;

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
/// (`sums`) or from an engine's aggregates (`read_aggregates`).
#[derive(Debug, Clone, Default)]
pub struct ShadowSums {
    /// Complete requests per (stratum, replay present).
    pub cells: BTreeMap<CellKey, CellSums>,
    /// Requests missing production or candidate.
    pub incomplete: u64,
    /// The same requests per stratum (with strata; empty from an older query's aggregates), so
    /// that a stratum none of whose requests is complete can be named.
    pub incomplete_by_stratum: BTreeMap<Vec<String>, u64>,
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
        for (k, n) in o.incomplete_by_stratum {
            *self.incomplete_by_stratum.entry(k).or_default() += n;
        }
        self.replay_rows += o.replay_rows;
        self.replicates = self.replicates.max(o.replicates);
        if self.cluster.is_none() {
            self.cluster = o.cluster;
        }
    }
}
