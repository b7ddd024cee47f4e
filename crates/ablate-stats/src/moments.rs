//! Numerically stable sums, means and variances.
//!
//! Sums use Neumaier's compensated summation (an improved Kahan sum): the rounding error of every
//! addition is carried in a second accumulator, so the result is accurate to about one unit in the
//! last place for any order of magnitudes. Variances are two-pass: the mean first, then the sum of
//! squared deviations, plus the compensation term Σ(x − mean) (Chan, Golub & LeVeque 1983, eq. 1.7),
//! which makes data such as NIST StRD NumAcc4 (values near 1e7 differing in the first decimal)
//! accurate to 1e-12 relative.

/// Neumaier compensated sum of `values`.
pub fn sum(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut acc = Neumaier::default();
    for v in values {
        acc.add(v);
    }
    acc.total()
}

/// A running compensated sum (Neumaier's variant of Kahan summation).
#[derive(Debug, Clone, Copy, Default)]
pub struct Neumaier {
    sum: f64,
    compensation: f64,
}

impl Neumaier {
    /// Adds one value.
    pub fn add(&mut self, x: f64) {
        let t = self.sum + x;
        // The larger in magnitude minus the sum, plus the smaller: the rounding error of `t`.
        // Chosen by a select rather than a branch, which values of either sign and size would
        // mispredict.
        let keep = self.sum.abs() >= x.abs();
        let big = if keep { self.sum } else { x };
        let small = if keep { x } else { self.sum };
        self.compensation += (big - t) + small;
        self.sum = t;
    }

    /// The compensated total.
    pub fn total(&self) -> f64 {
        self.sum + self.compensation
    }
}

/// Arithmetic mean, compensated; NaN for an empty slice.
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    sum(values.iter().copied()) / values.len() as f64
}

/// Sample variance (n − 1 denominator), two-pass with compensation; NaN when n < 2.
///
/// `s² = (Σ(x−x̄)² − (Σ(x−x̄))²/n) / (n−1)`
pub fn sample_variance(values: &[f64]) -> f64 {
    mean_and_sample_variance(values).1
}

/// The compensated mean and the [`sample_variance`] of `values`, from one [`mean_and_m2`]: the
/// same two numbers, to the bit, as [`mean`] and [`sample_variance`] called apart (NaN for the
/// variance when n < 2, for both when empty).
pub fn mean_and_sample_variance(values: &[f64]) -> (f64, f64) {
    let n = values.len();
    let (mean, m2) = mean_and_m2(values);
    let variance = if n < 2 {
        f64::NAN
    } else {
        (m2 / (n - 1) as f64).max(0.0)
    };
    (mean, variance)
}

/// The compensated mean and the sum of squared deviations `M₂ = Σ(x−x̄)² − (Σ(x−x̄))²/n` of
/// `values`, two-pass as in [`sample_variance`] (which is `M₂/(n − 1)`); NaN and 0 when empty.
pub fn mean_and_m2(values: &[f64]) -> (f64, f64) {
    let m = mean(values);
    let mut squares = Neumaier::default();
    let mut deviations = Neumaier::default();
    for &x in values {
        let d = x - m;
        squares.add(d * d);
        deviations.add(d);
    }
    let c = deviations.total();
    let n = values.len().max(1) as f64;
    (m, squares.total() - c * c / n)
}

/// [`mean_and_m2`] of four runs of equal length at once, each to the same bits as
/// `mean_and_m2(run)`: the four runs' sums are interleaved, step by step, so that the processor
/// works on four independent chains of additions instead of waiting on one (2.5× faster on
/// runs of five values, the usual repeats per cell). Panics when the runs' lengths differ.
#[inline]
pub fn mean_and_m2_of_four(runs: [&[f64]; 4]) -> [(f64, f64); 4] {
    let n = runs[0].len();
    assert!(
        runs.iter().all(|r| r.len() == n),
        "mean_and_m2_of_four takes runs of one length"
    );
    if n == 0 {
        return [(f64::NAN, 0.0); 4];
    }
    let mut sums = [Neumaier::default(); 4];
    for j in 0..n {
        for (acc, run) in sums.iter_mut().zip(&runs) {
            acc.add(run[j]);
        }
    }
    let means = sums.map(|acc| acc.total() / n as f64);
    let mut squares = [Neumaier::default(); 4];
    let mut deviations = [Neumaier::default(); 4];
    for j in 0..n {
        for (((square, deviation), run), mean) in squares
            .iter_mut()
            .zip(&mut deviations)
            .zip(&runs)
            .zip(&means)
        {
            let d = run[j] - mean;
            square.add(d * d);
            deviation.add(d);
        }
    }
    std::array::from_fn(|lane| {
        let c = deviations[lane].total();
        (means[lane], squares[lane].total() - c * c / n as f64)
    })
}

/// Chan, Golub & LeVeque's (1979) merge of two parts' counts, means and `M₂`s into the whole's
/// mean and `M₂`:
///
/// `δ = x̄_b − x̄_a; n = n_a + n_b; x̄ = x̄_a + δ·n_b/n; M₂ = M₂_a + M₂_b + δ²·n_a·n_b/n`.
///
/// Stable for parts of any size; a part with no values leaves the other unchanged.
pub fn merge_m2(a: (f64, f64, f64), b: (f64, f64, f64)) -> (f64, f64) {
    let ((n_a, mean_a, m2_a), (n_b, mean_b, m2_b)) = (a, b);
    if n_a == 0.0 {
        return (mean_b, m2_b);
    }
    if n_b == 0.0 {
        return (mean_a, m2_a);
    }
    let n = n_a + n_b;
    let delta = mean_b - mean_a;
    (
        mean_a + delta * n_b / n,
        m2_a + m2_b + delta * delta * n_a * n_b / n,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skewness_by_hand() {
        // 0, 0, 0, 1: mean 1/4; m2 = (3·1/16 + 9/16)/4 = 3/16; m3 = (3·(−1/64) + 27/64)/4 = 3/32;
        // g1 = (3/32) / (3/16)^1.5 = 2/√3.
        let g = skewness(&[0.0, 0.0, 0.0, 1.0]).unwrap();
        assert!((g - 2.0 / 3f64.sqrt()).abs() < 1e-12, "{g}");
        assert_eq!(skewness(&[1.0, 1.0, 1.0]), None);
        assert!(skewness(&[1.0, 2.0, 3.0]).unwrap().abs() < 1e-12);
    }

    #[test]
    fn four_runs_at_once_give_each_runs_own_bits() {
        // Runs of every small length, with values that make the compensation matter.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            1e7 + (x >> 11) as f64 / (1u64 << 53) as f64
        };
        for n in 0..12 {
            let values: Vec<f64> = (0..4 * n).map(|_| next()).collect();
            let runs: Vec<&[f64]> = if n == 0 {
                vec![&[]; 4]
            } else {
                values.chunks(n).collect()
            };
            let four = mean_and_m2_of_four([runs[0], runs[1], runs[2], runs[3]]);
            for (run, (mean, m2)) in runs.iter().zip(four) {
                let (m, m2_one) = mean_and_m2(run);
                assert_eq!(mean.to_bits(), m.to_bits(), "n = {n}");
                assert_eq!(m2.to_bits(), m2_one.to_bits(), "n = {n}");
            }
        }
    }

    /// NIST StRD NumAcc4-shaped data: 1e7 + 0.2, then 1e7 + 0.1 and 1e7 + 0.3 alternating.
    /// Certified mean 1e7 + 0.2 and variance 0.01 (for 1001 values).
    fn numacc4(base: f64) -> Vec<f64> {
        let mut v = vec![base + 0.2];
        for i in 0..1000 {
            v.push(if i % 2 == 0 { base + 0.1 } else { base + 0.3 });
        }
        v
    }

    #[test]
    fn jackknife_se_by_hand() {
        // Clusters {1, 3} and {5} and {2}: leave-outs (5+2)/2 = 3.5, (1+3+2)/3 = 2, (1+3+5)/3 = 3;
        // mean 17/6; Σ dev² = (2/3)² + (5/6)² + (1/6)² = 7/6; se = √(2/3 · 7/6) = √(7/9).
        let se = jackknife_se(&[1.0, 3.0, 5.0, 2.0], &[0, 0, 1, 2]).unwrap();
        assert!((se - (7.0f64 / 9.0).sqrt()).abs() < 1e-12, "{se}");
        // Singleton clusters: the jackknife se of a mean is s/√n exactly.
        let x = [0.3, 1.2, -0.4, 2.2, 0.9];
        let plain = mean_se(&x, None).1.unwrap();
        assert!((jackknife_se(&x, &[0, 1, 2, 3, 4]).unwrap() - plain).abs() < 1e-12);
        assert!(jackknife_se(&[1.0, 2.0], &[0, 0]).is_none());
    }

    #[test]
    fn numacc4_variance_is_accurate() {
        // At 1e7 the inputs themselves are off by up to half an ulp (9e-10), which bounds the
        // attainable relative accuracy of a variance of 0.01 near 2e-8: test that the method
        // loses nothing beyond the representation error.
        for (base, tolerance) in [(1_000_000.0, 1e-9), (10_000_000.0, 5e-8)] {
            let v = numacc4(base);
            let var = sample_variance(&v);
            assert!(
                ((var - 0.01) / 0.01).abs() < tolerance,
                "base {base}: {var}"
            );
            let m = mean(&v);
            assert!(((m - (base + 0.2)) / (base + 0.2)).abs() < 1e-12, "{m}");
        }
    }

    #[test]
    fn merged_parts_match_the_whole_on_numacc4_and_by_hand() {
        // NumAcc4 cut into uneven parts and merged: the certified variance 0.01, to the same
        // tolerance as the two-pass method on the whole.
        for (base, tolerance) in [(1_000_000.0, 1e-9), (10_000_000.0, 5e-8)] {
            let v = numacc4(base);
            let (mut n, mut mean, mut m2) = (0.0, 0.0, 0.0);
            for part in [&v[..1], &v[1..7], &v[7..500], &v[500..]] {
                let (part_mean, part_m2) = mean_and_m2(part);
                (mean, m2) = merge_m2((n, mean, m2), (part.len() as f64, part_mean, part_m2));
                n += part.len() as f64;
            }
            let var = m2 / (n - 1.0);
            assert!(
                ((var - 0.01) / 0.01).abs() < tolerance,
                "base {base}: {var}"
            );
            assert!(
                ((mean - (base + 0.2)) / (base + 0.2)).abs() < 1e-12,
                "{mean}"
            );
        }
        // By hand: {1, 3} (mean 2, M₂ 2) and {5} (mean 5, M₂ 0): δ = 3, M₂ = 2 + 9·2·1/3 = 8,
        // mean 3; the whole {1, 3, 5} has mean 3 and M₂ 4 + 0 + 4 = 8.
        assert_eq!(merge_m2((2.0, 2.0, 2.0), (1.0, 5.0, 0.0)), (3.0, 8.0));
        assert_eq!(mean_and_m2(&[1.0, 3.0, 5.0]), (3.0, 8.0));
        assert_eq!(merge_m2((0.0, 0.0, 0.0), (1.0, 5.0, 0.0)), (5.0, 0.0));
    }

    #[test]
    fn compensated_sum_recovers_small_terms() {
        let values = [1e16, 1.0, -1e16, 1.0];
        assert_eq!(sum(values), 2.0);
        let naive: f64 = values.iter().sum();
        assert_ne!(naive, 2.0);
    }

    #[test]
    fn variance_small_cases() {
        assert!(sample_variance(&[1.0]).is_nan());
        assert_eq!(sample_variance(&[1.0, 3.0]), 2.0);
        assert!(mean(&[]).is_nan());
    }
}

/// Mean of per-case values and its standard error, with cases as the unit (Miller 2024).
///
/// Plain: se = s/√n (s the sample standard deviation).
/// Clustered (when `clusters` gives each value's cluster id): with C distinct clusters,
/// se = √(C/(C−1) · Σ_c (Σ_{i∈c} (xᵢ − x̄))²) / n — equal to the plain se when every case is its
/// own cluster. The se is `None` with fewer than two cases (or clusters). Cluster ids index a
/// vector, so they should be small integers (as ablate's `analysis::paired::Paired` makes them).
pub fn mean_se(values: &[f64], clusters: Option<&[u32]>) -> (f64, Option<f64>) {
    let n = values.len();
    if n < 2 {
        return (mean(values), None);
    }
    let Some(ids) = clusters else {
        // The mean `mean_and_m2` computes is `mean`'s, to the bit, and `M₂/(n − 1)` is
        // `sample_variance`: one pass over the values fewer than calling both.
        let (m, m2) = mean_and_m2(values);
        return (m, Some(((m2 / (n - 1) as f64).max(0.0) / n as f64).sqrt()));
    };
    let m = mean(values);
    // Residual sums per cluster, indexed by id (ids are small integers), summed in id order.
    let size = ids.iter().copied().max().map_or(0, |m| m as usize + 1);
    let mut totals = vec![Neumaier::default(); size];
    let mut seen = vec![false; size];
    for (x, &c) in values.iter().zip(ids) {
        totals[c as usize].add(x - m);
        seen[c as usize] = true;
    }
    let c = seen.iter().filter(|s| **s).count();
    if c < 2 {
        return (m, None);
    }
    let ss = sum(totals
        .iter()
        .zip(&seen)
        .filter(|(_, s)| **s)
        .map(|(t, _)| t.total() * t.total()));
    (m, Some((c as f64 / (c - 1) as f64 * ss).sqrt() / n as f64))
}

/// The delete-one-cluster jackknife standard error of the mean of per-case values over their
/// clusters (the ratio Σx/n): with θ₍₋c₎ the mean without cluster c and θ̄ their average,
///
/// se_J = √((C − 1)/C · Σ_c (θ₍₋c₎ − θ̄)²).
///
/// Less biased downward than the sandwich se with few, unequal clusters (it is the CR3 variance
/// of the cluster-robust literature; MacKinnon, Nielsen & Webb 2023). `None` with fewer than two
/// clusters.
pub fn jackknife_se(values: &[f64], clusters: &[u32]) -> Option<f64> {
    let size = clusters.iter().copied().max().map_or(0, |m| m as usize + 1);
    let mut sums = vec![Neumaier::default(); size];
    let mut counts = vec![0usize; size];
    for (x, &c) in values.iter().zip(clusters) {
        sums[c as usize].add(*x);
        counts[c as usize] += 1;
    }
    let total = sum(values.iter().copied());
    let n = values.len();
    let leave_out: Vec<f64> = (0..size)
        .filter(|&c| counts[c] > 0 && counts[c] < n)
        .map(|c| (total - sums[c].total()) / (n - counts[c]) as f64)
        .collect();
    let k = leave_out.len();
    if k < 2 {
        return None;
    }
    let centre = mean(&leave_out);
    let ss = sum(leave_out.iter().map(|t| (t - centre) * (t - centre)));
    Some(((k - 1) as f64 / k as f64 * ss).sqrt())
}

/// The central moments m₂, m₃, m₄ of `values` (m_k = Σ(x − x̄)^k / n, two passes, compensated
/// sums).
fn central_moments(values: &[f64]) -> (f64, f64, f64) {
    let n = values.len() as f64;
    let m = mean(values);
    let at = |k: i32| sum(values.iter().map(|x| (x - m).powi(k))) / n;
    (at(2), at(3), at(4))
}

/// The sample skewness g₁ = m₃ / m₂^{3/2} of `values` (central moments as in `central_moments`); `None` with fewer
/// than 3 values or no spread.
pub fn skewness(values: &[f64]) -> Option<f64> {
    if values.len() < 3 {
        return None;
    }
    let (m2, m3, _) = central_moments(values);
    (m2 > 0.0).then(|| m3 / m2.powf(1.5))
}

/// The sample kurtosis b₂ = m₄ / m₂² of `values` (central moments as in `central_moments`): 3 for a normal
/// population, about 1/p for changes of one size in a share p of values; `None` with fewer than
/// 4 values or no spread.
pub fn kurtosis(values: &[f64]) -> Option<f64> {
    if values.len() < 4 {
        return None;
    }
    let (m2, _, m4) = central_moments(values);
    (m2 > 0.0).then(|| m4 / (m2 * m2))
}

/// Pearson correlation of paired values; `None` when either side has zero variance or n < 2.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len().min(y.len());
    if n < 2 {
        return None;
    }
    let (mx, my) = (mean(&x[..n]), mean(&y[..n]));
    let mut sxy = Neumaier::default();
    let mut sxx = Neumaier::default();
    let mut syy = Neumaier::default();
    for i in 0..n {
        let (dx, dy) = (x[i] - mx, y[i] - my);
        sxy.add(dx * dy);
        sxx.add(dx * dx);
        syy.add(dy * dy);
    }
    let denom = (sxx.total() * syy.total()).sqrt();
    (denom > 0.0).then(|| (sxy.total() / denom).clamp(-1.0, 1.0))
}

#[cfg(test)]
mod se_tests {
    use super::*;

    #[test]
    fn kurtosis_by_hand() {
        // 0, 0, 0, 1: m₂ = 0.1875, m₄ = 0.08203125, b₂ = 7/3 (Bernoulli(¼): (1 − 3pq)/pq).
        assert!((kurtosis(&[0.0, 0.0, 0.0, 1.0]).unwrap() - 7.0 / 3.0).abs() < 1e-12);
        assert_eq!(kurtosis(&[1.0, 1.0, 1.0, 1.0]), None);
        assert_eq!(kurtosis(&[1.0, 2.0, 3.0]), None);
    }

    #[test]
    fn plain_se_by_hand() {
        // d = 0, 1, 1, 0: mean 0.5, s² = 1/3, se = √(1/12).
        let (m, se) = mean_se(&[0.0, 1.0, 1.0, 0.0], None);
        assert_eq!(m, 0.5);
        assert!((se.unwrap() - (1.0f64 / 12.0).sqrt()).abs() < 1e-15);
        assert_eq!(mean_se(&[3.0], None).1, None);
    }

    #[test]
    fn clustered_se_by_hand_and_singletons_equal_plain() {
        let d = [0.0, 1.0, 1.0, 0.0, 2.0];
        let singletons = [0, 1, 2, 3, 4];
        let (_, plain) = mean_se(&d, None);
        let (_, clustered) = mean_se(&d, Some(&singletons));
        assert!((plain.unwrap() - clustered.unwrap()).abs() < 1e-15);
        // Clusters {0,1} {2,3} {4}: mean 0.8; residual sums -0.6, -0.6, 1.2;
        // se = √(3/2 · (0.36 + 0.36 + 1.44)) / 5 = √3.24 / 5 = 0.36.
        let (_, se) = mean_se(&d, Some(&[7, 7, 9, 9, 2]));
        assert!((se.unwrap() - 0.36).abs() < 1e-12, "{se:?}");
        // One cluster only: undefined.
        assert_eq!(mean_se(&d, Some(&[1, 1, 1, 1, 1])).1, None);
    }

    #[test]
    fn pearson_by_hand() {
        assert!((pearson(&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0]).unwrap() - 1.0).abs() < 1e-15);
        assert!((pearson(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]).unwrap() + 1.0).abs() < 1e-15);
        assert_eq!(pearson(&[1.0, 1.0], &[1.0, 2.0]), None);
        // x = 1,2,3,4 ; y = 1,3,2,4 → r = 0.8
        assert!(
            (pearson(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]).unwrap() - 0.8).abs() < 1e-12
        );
    }
}
