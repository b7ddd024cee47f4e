//! Distribution functions and tests: normal quantiles and one-sided p-values, Holm's step-down
//! adjustment, the exact McNemar test, and power (minimum detectable effect, cases needed).
//! The normal and binomial distributions come from statrs.

use statrs::distribution::{Binomial, ContinuousCDF, DiscreteCDF, Normal};

fn standard_normal() -> Normal {
    // Mean 0 and sd 1 are always valid parameters.
    Normal::standard()
}

/// `z` such that P(|Z| ≤ z) = confidence, i.e. Φ⁻¹(1 − (1 − confidence)/2).
pub fn z_two_sided(confidence: f64) -> f64 {
    standard_normal().inverse_cdf(1.0 - (1.0 - confidence) / 2.0)
}

/// Φ⁻¹(p).
pub fn z_quantile(p: f64) -> f64 {
    standard_normal().inverse_cdf(p)
}

/// One-sided p-value for H₁: effect > 0, by the normal approximation: 1 − Φ(point/se), computed
/// as Φ(−point/se) so that tiny p-values keep their precision.
/// With se = 0 the answer is 0 for a positive point, 1 for a negative one and 0.5 at exactly 0
/// (the limit of the normal approximation).
pub fn p_one_sided_positive(point: f64, se: f64) -> f64 {
    if se > 0.0 {
        standard_normal().sf(point / se)
    } else if point > 0.0 {
        0.0
    } else if point < 0.0 {
        1.0
    } else {
        0.5
    }
}

/// Holm's step-down adjustment (Holm 1979): with p-values sorted ascending p₍₁₎ ≤ … ≤ p₍ₘ₎,
/// p̃₍ⱼ₎ = max_{l≤j} min(1, (m − l + 1)·p₍ₗ₎). Returned in the input order.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|a, b| p[*a].total_cmp(&p[*b]).then(a.cmp(b)));
    let mut out = vec![0.0; m];
    let mut running = 0.0f64;
    for (j, &i) in order.iter().enumerate() {
        let adjusted = ((m - j) as f64 * p[i]).min(1.0);
        running = running.max(adjusted);
        out[i] = running;
    }
    out
}

/// Exact two-sided McNemar test on the discordant pairs: with b cases passing only in the first
/// arm and c only in the second, p = min(1, 2·P(X ≤ min(b, c))) for X ~ Binomial(b + c, 1/2).
/// 1 when there are no discordant pairs.
pub fn mcnemar_exact(b: u64, c: u64) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    if let Some(tail) = half_binomial_tail(n, 0, b.min(c)) {
        return (2.0 * tail).min(1.0);
    }
    match Binomial::new(0.5, n) {
        Ok(dist) => (2.0 * dist.cdf(b.min(c))).min(1.0),
        Err(_) => f64::NAN,
    }
}

/// Most trials [`half_binomial_tail`] sums exactly: a row of Pascal's triangle up to n = 126
/// fits in u128 (its sum is 2¹²⁶).
const EXACT_TRIALS: u64 = 126;

/// P(lo ≤ X ≤ hi) for X ~ Binomial(n, 1/2), exact up to the last rounding: Σ C(n, i) summed
/// in integers (a row of Pascal's triangle), divided by 2ⁿ. `None` above [`EXACT_TRIALS`],
/// where statrs' regularised beta is used (it gave 0.9999999999999991 for a McNemar p of 1).
fn half_binomial_tail(n: u64, lo: u64, hi: u64) -> Option<f64> {
    if n > EXACT_TRIALS {
        return None;
    }
    let n = n as usize;
    let mut row = vec![0u128; n + 1];
    row[0] = 1;
    for k in 1..=n {
        for i in (1..=k).rev() {
            row[i] += row[i - 1];
        }
    }
    let hi = (hi as usize).min(n);
    let sum: u128 = row.get(lo as usize..=hi).map_or(0, |r| r.iter().sum());
    // u128 → f64 rounds once; the power of two is exact.
    Some(sum as f64 * 2f64.powi(-(n as i32)))
}

/// Exact one-sided sign test for H₁: positive differences are more likely than negative ones.
/// With `pos` positive and `neg` negative differences (ties dropped), p = P(X ≥ pos) for
/// X ~ Binomial(pos + neg, 1/2); 1 when there is no untied difference.
pub fn sign_test_greater(pos: u64, neg: u64) -> f64 {
    let n = pos + neg;
    if n == 0 || pos == 0 {
        return 1.0;
    }
    if let Some(tail) = half_binomial_tail(n, pos, n) {
        return tail;
    }
    match Binomial::new(0.5, n) {
        Ok(dist) => dist.sf(pos - 1),
        Err(_) => f64::NAN,
    }
}

/// The Clopper–Pearson upper bound on a share when 0 of `n` units showed it, at two-sided level
/// `confidence`: 1 − ((1 − confidence)/2)^(1/n). With n = 20 at 95%, 0.168: twenty identical
/// cases still allow one unit in six to differ.
pub fn zero_of_n_upper(n: usize, confidence: f64) -> f64 {
    if n == 0 {
        return 1.0;
    }
    1.0 - ((1.0 - confidence) / 2.0).powf(1.0 / n as f64)
}

/// z(1 − α/2) + z(power) for a two-sided test at α = 1 − confidence: the multiplier of the
/// standard error in the minimum detectable effect.
pub fn power_multiplier(confidence: f64, power: f64) -> f64 {
    z_two_sided(confidence) + z_quantile(power)
}

/// The cumulative probabilities of Poisson(1), P(W ≤ k) for k = 0, 1, …: the ladder that turns a
/// uniform number into a replicate weight (w = the first k with u < P(W ≤ k)).
pub fn poisson1_cdf() -> Vec<f64> {
    let mut out = Vec::new();
    let (mut term, mut total) = ((-1f64).exp(), 0.0);
    for k in 0..12 {
        total += term;
        out.push(total);
        term /= f64::from(k + 1);
    }
    out
}

/// A Poisson(1) weight from a uniform u in [0, 1) (at most 12).
pub fn poisson1_weight(u: f64, cdf: &[f64]) -> i64 {
    cdf.iter().position(|c| u < *c).unwrap_or(cdf.len()) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn z_values() {
        assert!((z_two_sided(0.95) - 1.959963984540054).abs() < 1e-9);
        assert!((z_quantile(0.8) - 0.8416212335729143).abs() < 1e-9);
        assert!((power_multiplier(0.95, 0.8) - 2.801585218).abs() < 1e-8);
    }

    #[test]
    fn one_sided_p() {
        assert!((p_one_sided_positive(1.959963984540054, 1.0) - 0.025).abs() < 1e-9);
        assert_eq!(p_one_sided_positive(0.1, 0.0), 0.0);
        assert_eq!(p_one_sided_positive(0.0, 0.0), 0.5);
        assert!((p_one_sided_positive(0.0, 2.0) - 0.5).abs() < 1e-12);
        // Far tail: 1 − Φ(14) ≈ 7.8e-45, not 0.
        let p = p_one_sided_positive(14.0, 1.0);
        assert!(p > 7.0e-45 && p < 8.5e-45, "{p}");
    }

    #[test]
    fn holm_by_hand() {
        // m = 4: sorted 0.01, 0.02, 0.03, 0.5 → 0.04, 0.06, 0.06 (monotone), 0.5.
        let adj = holm(&[0.03, 0.5, 0.01, 0.02]);
        let want = [0.06, 0.5, 0.04, 0.06];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
        assert_eq!(holm(&[0.9, 0.8]), vec![1.0, 1.0]);
        assert!(holm(&[]).is_empty());
    }

    #[test]
    fn sign_test_and_zero_of_n_by_hand() {
        // 10 of 10 positive: 1/1024. 8 of 10: (45 + 10 + 1)/1024.
        assert!((sign_test_greater(10, 0) - 1.0 / 1024.0).abs() < 1e-12);
        assert!((sign_test_greater(8, 2) - 56.0 / 1024.0).abs() < 1e-12);
        assert_eq!(sign_test_greater(0, 5), 1.0);
        assert_eq!(sign_test_greater(0, 0), 1.0);
        // 1 − 0.025^(1/20) = 0.16843...
        assert!((zero_of_n_upper(20, 0.95) - (1.0 - 0.025f64.powf(0.05))).abs() < 1e-15);
        assert!((zero_of_n_upper(20, 0.95) - 0.168433).abs() < 1e-6);
    }

    #[test]
    fn mcnemar_by_hand() {
        // b = 1, c = 5: P(X ≤ 1) for Bin(6, .5) = 7/64; two-sided 14/64.
        assert!((mcnemar_exact(1, 5) - 14.0 / 64.0).abs() < 1e-12);
        assert!((mcnemar_exact(5, 1) - 14.0 / 64.0).abs() < 1e-12);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        assert_eq!(mcnemar_exact(3, 3), 1.0);
        // b = 0, c = 10: 2/1024.
        assert!((mcnemar_exact(0, 10) - 2.0 / 1024.0).abs() < 1e-15);
        // One discordant pair: exactly 1 (statrs' beta gave 0.9999999999999991).
        assert_eq!(mcnemar_exact(0, 1), 1.0);
        assert_eq!(mcnemar_exact(1, 0), 1.0);
        assert_eq!(mcnemar_exact(2, 3), 1.0);
    }

    /// The exact sums agree with statrs' binomial where both are defined (to its precision),
    /// and with hand values; above 126 trials statrs is used.
    #[test]
    fn exact_binomial_tails_agree_with_statrs() {
        assert_eq!(half_binomial_tail(6, 0, 1), Some(7.0 / 64.0));
        assert_eq!(half_binomial_tail(4, 4, 4), Some(1.0 / 16.0));
        assert_eq!(half_binomial_tail(127, 0, 1), None);
        for n in [1u64, 2, 7, 30, 60, 126] {
            let dist = Binomial::new(0.5, n).unwrap();
            for k in 0..=n {
                let exact = half_binomial_tail(n, 0, k).unwrap();
                assert!((exact - dist.cdf(k)).abs() < 1e-12, "n {n} k {k}");
                let upper = half_binomial_tail(n, k, n).unwrap();
                let by_statrs = if k == 0 { 1.0 } else { dist.sf(k - 1) };
                assert!((upper - by_statrs).abs() < 1e-12, "n {n} k {k}");
            }
        }
        assert!((sign_test_greater(3, 0) - 0.125).abs() < 1e-15);
        assert!(
            (sign_test_greater(130, 70) - Binomial::new(0.5, 200).unwrap().sf(129)).abs() < 1e-15
        );
    }
}
