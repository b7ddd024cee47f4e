//! Counts of non-negative integers (token counts, call sizes) that merge by addition: exact (one
//! count per value) when ablate reads the log itself, or in fixed log-spaced bins when an engine
//! reduced the log (`ablate sql`).
//!
//! Log bins: value 0 is bin −1; a value t ≥ 1 is in bin k = ⌊16·log₂ t⌋, which covers
//! [2^(k/16), 2^((k+1)/16)): 16 bins per doubling, each 2^(1/16) − 1 ≈ 4.4% wide relative to its
//! lower edge. Percentiles follow [`crate::percentile`] (linear between closest ranks); from
//! bins, an order statistic is placed inside its bin by its rank among the bin's values, so each
//! is off by less than the bin's width: at most [`LOG_BIN_RELATIVE_ERROR`] of the true value.

use std::collections::BTreeMap;

/// Log bins per doubling.
pub const BINS_PER_DOUBLING: u32 = 16;

/// Relative width of a log bin, 2^(1/16) − 1: the bound on a percentile's relative error when it
/// is read from log bins (a value of 0 is exact).
pub const LOG_BIN_RELATIVE_ERROR: f64 = 0.044_273_782_427_413_84;

/// The log bin of a non-negative integer (−1 for 0). Computed as the SQL computes it,
/// ⌊ln t / ln 2 · 16 + 10⁻⁹⌋, so both sides agree at exact powers of two.
pub fn log_bin(t: i64) -> i64 {
    if t < 1 {
        -1
    } else {
        ((t as f64).ln() / std::f64::consts::LN_2 * f64::from(BINS_PER_DOUBLING) + 1e-9).floor()
            as i64
    }
}

/// The edges [lo, hi) of log bin `k` (bin −1 is [0, 1)).
pub fn log_bin_edges(k: i64) -> (f64, f64) {
    if k < 0 {
        return (0.0, 1.0);
    }
    let d = f64::from(BINS_PER_DOUBLING);
    ((k as f64 / d).exp2(), ((k + 1) as f64 / d).exp2())
}

/// Counts of integer values: exact, or by log bin.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Counts {
    /// Value (exact) or log bin index → how many.
    pub counts: BTreeMap<i64, u64>,
    /// Whether keys are values (true) or log bins (false).
    pub binned: bool,
}

impl Counts {
    /// An empty exact count.
    pub fn exact() -> Counts {
        Counts::default()
    }

    /// An empty count by log bin.
    pub fn log_binned() -> Counts {
        Counts {
            counts: BTreeMap::new(),
            binned: true,
        }
    }

    /// Adds `n` at key `k` (a value, or a bin index when binned).
    pub fn add(&mut self, k: i64, n: u64) {
        if n > 0 {
            *self.counts.entry(k).or_insert(0) += n;
        }
    }

    /// Adds another count of the same kind (an empty count takes the other's kind).
    pub fn merge(&mut self, other: &Counts) {
        if self.counts.is_empty() {
            self.binned = other.binned;
        }
        debug_assert!(other.counts.is_empty() || self.binned == other.binned);
        for (&k, &n) in &other.counts {
            self.add(k, n);
        }
    }

    /// Number of values counted.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// The relative error bound of percentiles: `None` when exact.
    pub fn error_bound(&self) -> Option<f64> {
        self.binned.then_some(LOG_BIN_RELATIVE_ERROR)
    }

    /// The j-th smallest value (0-based), or its estimate inside its bin.
    fn order_statistic(&self, j: u64) -> f64 {
        let mut before = 0u64;
        for (&k, &n) in &self.counts {
            if j < before + n {
                if !self.binned {
                    return k as f64;
                }
                let (lo, hi) = log_bin_edges(k);
                if k < 0 {
                    return 0.0;
                }
                return lo + (hi - lo) * ((j - before) as f64 + 0.5) / n as f64;
            }
            before += n;
        }
        f64::NAN
    }

    /// The p-quantile, linear between closest ranks (NaN when empty):
    /// h = (n − 1)·p, Q = x_⌊h⌋ + (h − ⌊h⌋)(x_⌊h⌋₊₁ − x_⌊h⌋).
    pub fn quantile(&self, p: f64) -> f64 {
        let n = self.total();
        if n == 0 {
            return f64::NAN;
        }
        let h = (n - 1) as f64 * p.clamp(0.0, 1.0);
        let lo = h.floor() as u64;
        let hi = (lo + 1).min(n - 1);
        let (a, b) = (self.order_statistic(lo), self.order_statistic(hi));
        a + (h - lo as f64) * (b - a)
    }

    /// The largest value (the top bin's upper edge when binned); NaN when empty.
    pub fn max(&self) -> f64 {
        match self.counts.last_key_value() {
            None => f64::NAN,
            Some((&k, _)) if self.binned => log_bin_edges(k).1.max(0.0),
            Some((&k, _)) => k as f64,
        }
    }

    /// `bins` equal-width bins from 0 to the largest value: (lo, hi, count). Binned counts go to
    /// the equal bin holding their log bin's midpoint.
    pub fn equal_bins(&self, bins: usize) -> Vec<(f64, f64, u64)> {
        let max = if self.counts.is_empty() {
            1.0
        } else {
            self.max().max(1.0)
        };
        let width = max / bins as f64;
        let mut out: Vec<(f64, f64, u64)> = (0..bins)
            .map(|i| (i as f64 * width, (i + 1) as f64 * width, 0))
            .collect();
        for (&k, &n) in &self.counts {
            let v = if self.binned {
                let (lo, hi) = log_bin_edges(k);
                if k < 0 { 0.0 } else { (lo + hi) / 2.0 }
            } else {
                k as f64
            };
            let i = ((v / width) as usize).min(bins - 1);
            out[i].2 += n;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::percentile::quantile;

    #[test]
    fn exact_counts_give_the_percentiles_of_the_values() {
        let values = [5i64, 1, 1, 9, 3, 3, 3, 100, 0, 7];
        let mut c = Counts::exact();
        for v in values {
            c.add(v, 1);
        }
        let f: Vec<f64> = values.iter().map(|v| *v as f64).collect();
        for p in [0.0, 0.1, 0.5, 0.95, 0.99, 1.0] {
            assert_eq!(c.quantile(p), quantile(&f, p), "p {p}");
        }
        assert_eq!(c.max(), 100.0);
        assert_eq!(c.total(), 10);
    }

    #[test]
    fn log_bins_bound_the_percentile_error() {
        // 1..=5000 once each: every percentile from bins is within the stated relative error.
        let mut exact = Counts::exact();
        let mut binned = Counts::log_binned();
        for t in 0..=5000i64 {
            exact.add(t, 1);
            binned.add(log_bin(t), 1);
        }
        for p in [0.01, 0.25, 0.5, 0.9, 0.95, 0.99] {
            let (e, b) = (exact.quantile(p), binned.quantile(p));
            assert!(
                (b - e).abs() <= LOG_BIN_RELATIVE_ERROR * e + 1e-9,
                "p {p}: {b} vs {e}"
            );
        }
        assert!((LOG_BIN_RELATIVE_ERROR - (2f64.powf(1.0 / 16.0) - 1.0)).abs() < 1e-15);
    }

    #[test]
    fn log_bins_are_exact_at_powers_of_two() {
        for e in 0..40 {
            let t = 1i64 << e;
            assert_eq!(log_bin(t), 16 * e, "2^{e}");
            let (lo, hi) = log_bin_edges(log_bin(t));
            assert!(lo <= t as f64 && (t as f64) < hi);
        }
        assert_eq!(log_bin(0), -1);
    }

    #[test]
    fn counts_merge_by_addition() {
        let mut a = Counts::exact();
        a.add(3, 2);
        let mut b = Counts::exact();
        b.add(3, 1);
        b.add(4, 1);
        a.merge(&b);
        assert_eq!(a.counts, BTreeMap::from([(3, 3), (4, 1)]));
        let bins = a.equal_bins(4);
        assert_eq!(bins.iter().map(|b| b.2).sum::<u64>(), 4);
        // Width 1 on [0, 4]: 3 falls in [3, 4), and the largest value in the last bin too.
        assert_eq!(bins[3].2, 4);
    }
}
