//! Percentiles by linear interpolation between closest ranks (Hyndman & Fan type 7: numpy's and
//! R's default): for sorted x₀ ≤ … ≤ x_{n−1} and p in [0, 1], h = (n − 1)·p and
//! Q(p) = x_⌊h⌋ + (h − ⌊h⌋)·(x_⌊h⌋₊₁ − x_⌊h⌋).

/// The p-quantile of already sorted values; NaN when empty.
pub fn sorted_quantile(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    let h = (n - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// The p-quantile of values (NaNs are ignored); NaN when no value is left.
pub fn quantile(values: &[f64], p: f64) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(f64::total_cmp);
    sorted_quantile(&v, p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_numpy_linear() {
        // numpy.percentile([1, 2, 3, 4], [0, 25, 50, 95, 100]) = 1, 1.75, 2.5, 3.85, 4
        let v = [4.0, 1.0, 3.0, 2.0];
        let want = [
            (0.0, 1.0),
            (0.25, 1.75),
            (0.5, 2.5),
            (0.95, 3.85),
            (1.0, 4.0),
        ];
        for (p, w) in want {
            assert!((quantile(&v, p) - w).abs() < 1e-12, "p {p}");
        }
        assert_eq!(quantile(&[7.0], 0.3), 7.0);
        assert!(quantile(&[], 0.5).is_nan());
        assert_eq!(quantile(&[f64::NAN, 2.0], 0.5), 2.0);
    }
}
