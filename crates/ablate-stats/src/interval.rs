//! Intervals for a mean that hold at every sample size: the score interval for bounded values
//! and the Student-t interval.
//!
//! # The score interval (a generalised Tango interval)
//!
//! For values xᵢ, i = 1…n, bounded in [lo, hi] (a paired drop of scores in [0, 1] lies in
//! [−1, 1]), the interval is every θ₀ the score test does not reject:
//!
//! Z(θ₀) = (x̄ − θ₀) / √(V(θ₀)/n),   |Z(θ₀)| ≤ c,
//!
//! where V(θ₀) = Σⱼ p̂ⱼ(θ₀)·(vⱼ − θ₀)² is the variance under the maximum-likelihood distribution
//! p̂(θ₀) with mean θ₀ over a known support: the distinct values vⱼ observed (with counts nⱼ)
//! and the two bounds lo and hi (with count 0 unless observed). The restricted maximum maximises
//! Σ nⱼ log pⱼ subject to Σ pⱼ = 1 and Σ pⱼ vⱼ = θ₀. Two cases:
//!
//! - **Mass on an unobserved bound** e (hi when θ₀ > x̄, lo when θ₀ < x̄), when it helps: then
//!   p̂ⱼ = (nⱼ/n)·(e − θ₀)/(e − vⱼ) for the observed values and p̂ₑ = 1 − Σ p̂ⱼ, which is the
//!   optimum exactly when this p̂ₑ > 0 (derived from the Lagrange conditions with pₑ > 0).
//! - **Otherwise** the empirical-likelihood weights p̂ⱼ = nⱼ / (n·(1 + λ(vⱼ − θ₀))), with λ the
//!   root of Σ nⱼ(vⱼ − θ₀)/(1 + λ(vⱼ − θ₀)) = 0.
//!
//! For 0/1 scores with one repeat the drops take the values −1, 0 and 1 and, with c = z₁₋α/₂, this
//! is exactly Tango's score interval for a difference of paired proportions (Tango 1998,
//! *Statistics in Medicine* 17, 891–908; the tests check it against Tango's closed form). ablate
//! takes c = t₁₋α/₂,n−1, the Student quantile ([`critical`]): with rare discordant pairs Tango's
//! interval dips below its level at n near 100 (91.8% at 95% in the prototype of
//! `benches/coverage.rs`), and the t quantile keeps every cell of the coverage table at or above
//! it. Why a score interval: the variance is
//! taken where the hypothesis puts the mean, not where the sample happened to fall. With 200
//! paired cases, no loss and one gain, a Wald or t interval has an upper end of 0.012 and so calls
//! a drop of 0.02 excluded; but a drop of 0.02 needs losses, which may simply not have been seen,
//! and the score interval reaches 0.014 for 95% and further at a family's level. Measured in
//! `benches/coverage.rs`: the t interval and the joint-bootstrap max-|t| band both exceed α when
//! discordant cases are rare, and this one does not.
//!
//! Values with more than [`MAX_SUPPORT`] distinct values are first grouped into that many
//! equal-width bins over [lo, hi], each represented by the mean of its values (the sample mean is
//! kept exactly; the variance loses at most (hi − lo)²/(12·MAX_SUPPORT²)).
//!
//! # The t interval
//!
//! x̄ ± t₁₋α/₂,ν · se, for a mean whose se is estimated with ν degrees of freedom (n − 1 for cases,
//! C − 1 for C clusters).

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Most distinct values the score interval works on (more are binned).
pub const MAX_SUPPORT: usize = 1024;

/// Bisection steps for each end of the score interval: 2⁻⁴⁴ of the range.
const STEPS: usize = 44;

/// The distinct values of `values` in ascending order, with how many times each occurs; values
/// equal under `==` (0 and −0) are one value, the first in the total order, and every NaN is a
/// value of its own. By sorting every value.
fn sorted_counts(values: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut sorted = values.to_vec();
    // Values equal under the total order are the same bits, so the unstable sort's order is the
    // stable one's.
    sorted.sort_unstable_by(f64::total_cmp);
    let mut v: Vec<f64> = Vec::new();
    let mut c: Vec<f64> = Vec::new();
    for x in sorted {
        if v.last() == Some(&x) {
            *c.last_mut().expect("a count per value") += 1.0;
        } else {
            v.push(x);
            c.push(1.0);
        }
    }
    (v, c)
}

/// [`sorted_counts`], the same values and counts, by counting each bit pattern in one pass and
/// sorting only the distinct ones: per-case drops take few distinct values (means of a few
/// repeats of a few score levels), and sorting all of them took a millisecond per
/// 20,000-case arm. With a NaN, [`sorted_counts`] itself.
fn distinct_counts(values: &[f64]) -> (Vec<f64>, Vec<f64>) {
    if values.iter().any(|x| x.is_nan()) {
        return sorted_counts(values);
    }
    let mut counts: std::collections::HashMap<u64, u64, rustc_hash::FxBuildHasher> =
        std::collections::HashMap::default();
    for x in values {
        *counts.entry(x.to_bits()).or_insert(0) += 1;
    }
    let mut distinct: Vec<(f64, u64)> = counts
        .into_iter()
        .map(|(bits, n)| (f64::from_bits(bits), n))
        .collect();
    distinct.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    let mut v: Vec<f64> = Vec::with_capacity(distinct.len());
    let mut c: Vec<f64> = Vec::with_capacity(distinct.len());
    for (x, n) in distinct {
        if v.last() == Some(&x) {
            *c.last_mut().expect("a count per value") += n as f64;
        } else {
            v.push(x);
            c.push(n as f64);
        }
    }
    (v, c)
}

/// The support and counts of `values`, binned to at most [`MAX_SUPPORT`] values.
fn support(values: &[f64], lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let (v, c) = distinct_counts(values);
    if v.len() <= MAX_SUPPORT {
        return (v, c);
    }
    let width = (hi - lo) / MAX_SUPPORT as f64;
    let mut sums = vec![0.0; MAX_SUPPORT];
    let mut counts = vec![0.0; MAX_SUPPORT];
    for (x, n) in v.iter().zip(&c) {
        let b = (((x - lo) / width) as usize).min(MAX_SUPPORT - 1);
        sums[b] += x * n;
        counts[b] += n;
    }
    let (mut bv, mut bc) = (Vec::new(), Vec::new());
    for (s, n) in sums.into_iter().zip(counts) {
        if n > 0.0 {
            bv.push(s / n);
            bc.push(n);
        }
    }
    (bv, bc)
}

/// V(θ₀): the variance under the restricted maximum-likelihood distribution with mean θ₀.
fn restricted_variance(
    v: &[f64],
    c: &[f64],
    n: f64,
    mean: f64,
    theta: f64,
    bounds: (f64, f64),
) -> f64 {
    let e = if theta > mean { bounds.1 } else { bounds.0 };
    // Mass on the bound e, when e was not observed and that mass is positive.
    if !v.contains(&e) {
        let mut mass = 0.0;
        let mut var = 0.0;
        for (x, k) in v.iter().zip(c) {
            let p = (k / n) * (e - theta) / (e - x);
            mass += p;
            var += p * (x - theta) * (x - theta);
        }
        let pe = 1.0 - mass;
        if pe > 0.0 {
            return var + pe * (e - theta) * (e - theta);
        }
    }
    // Empirical-likelihood weights: λ in (−1/max dv, −1/min dv), by bisection on the decreasing
    // g(λ) = Σ c (v − θ) / (1 + λ(v − θ)).
    let (dmin, dmax) = v
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x - theta), b.max(x - theta))
        });
    if !(dmin < 0.0 && dmax > 0.0) {
        // θ₀ on or beyond the edge of what was observed, with the bound on that side observed
        // too: only all the mass on that edge has mean θ₀ (variance 0), or nothing does. Either
        // way the score test rejects θ₀, as its limit from inside does.
        return 0.0;
    }
    // Safeguarded Newton: g is decreasing on the bracket; a step that leaves it bisects.
    let (mut a, mut b) = (-1.0 / dmax, -1.0 / dmin);
    let mut lambda = 0.0;
    for _ in 0..100 {
        let (mut g, mut dg) = (0.0, 0.0);
        for (x, k) in v.iter().zip(c) {
            let dv = x - theta;
            let q = 1.0 + lambda * dv;
            g += k * dv / q;
            dg -= k * dv * dv / (q * q);
        }
        if g > 0.0 {
            a = lambda;
        } else {
            b = lambda;
        }
        if g.abs() <= 1e-13 * n || b - a <= 1e-15 * (1.0 + lambda.abs()) {
            break;
        }
        let next = lambda - g / dg;
        lambda = if next > a && next < b {
            next
        } else {
            0.5 * (a + b)
        };
    }
    let (mut total, mut var) = (0.0, 0.0);
    for (x, k) in v.iter().zip(c) {
        let p = k / (n * (1.0 + lambda * (x - theta)));
        total += p;
        var += p * (x - theta) * (x - theta);
    }
    var / total
}

/// The critical value of an interval for a mean over `n` values at `confidence`: t₁₋α/₂,n−1 (the
/// normal quantile when n is 1 or fewer, where no interval is computed anyway).
pub fn critical(n: usize, confidence: f64) -> f64 {
    if n < 2 {
        return crate::dist::z_two_sided(confidence);
    }
    t_two_sided(confidence, (n - 1) as f64)
}

/// The score interval for the mean of `values`, each in [`lo`, `hi`]: every θ₀ with
/// |Z(θ₀)| ≤ `critical` (see the module documentation; [`critical`] gives the t quantile).
/// `None` without values or with an empty range.
pub fn score(values: &[f64], lo: f64, hi: f64, critical: f64) -> Option<(f64, f64)> {
    ScoreData::new(values, lo, hi).map(|d| d.interval(critical))
}

/// What the score interval needs of the values, found once for intervals at several critical
/// values ([`score`] is one of them): the support and its counts, and the mean.
#[derive(Debug, Clone)]
pub struct ScoreData {
    v: Vec<f64>,
    c: Vec<f64>,
    n: f64,
    mean: f64,
    lo: f64,
    hi: f64,
}

impl ScoreData {
    /// The data of `values`, each in [`lo`, `hi`]; `None` without values or with an empty range.
    pub fn new(values: &[f64], lo: f64, hi: f64) -> Option<ScoreData> {
        if values.is_empty() || hi <= lo || hi.is_nan() || lo.is_nan() {
            return None;
        }
        let (v, c) = support(values, lo, hi);
        Some(ScoreData {
            v,
            c,
            n: values.len() as f64,
            mean: crate::moments::mean(values).clamp(lo, hi),
            lo,
            hi,
        })
    }

    /// The same empirical distribution with `n` values (each count scaled by n/n₀): what the
    /// score interval would be with n cases like these, for planning sample sizes.
    pub fn scaled(&self, n: f64) -> ScoreData {
        let k = n / self.n;
        ScoreData {
            v: self.v.clone(),
            c: self.c.iter().map(|c| c * k).collect(),
            n,
            mean: self.mean,
            lo: self.lo,
            hi: self.hi,
        }
    }

    /// The interval: every θ₀ with |Z(θ₀)| ≤ `critical`.
    pub fn interval(&self, critical: f64) -> (f64, f64) {
        (self.end(critical, false), self.end(critical, true))
    }

    /// One end of [`ScoreData::interval`], the upper when `upper` (the same number, found
    /// without the other end: sample-size searches need only the end facing the threshold).
    pub fn end(&self, critical: f64, upper: bool) -> f64 {
        let (lo, hi, mean) = (self.lo, self.hi, self.mean);
        let z = critical;
        let stat = |theta: f64| self.statistic(theta);
        // Z falls as θ₀ rises: the lower end solves Z = z below the mean, the upper Z = −z above
        // it.
        let solve = |target: f64, mut a: f64, mut b: f64| {
            for _ in 0..STEPS {
                let m = 0.5 * (a + b);
                if stat(m) > target {
                    a = m;
                } else {
                    b = m;
                }
            }
            0.5 * (a + b)
        };
        if !upper {
            if mean <= lo || stat(lo) <= z {
                lo
            } else {
                solve(z, lo, mean)
            }
        } else if mean >= hi || stat(hi) >= -z {
            hi
        } else {
            solve(-z, mean, hi)
        }
    }

    /// Whether [`ScoreData::end`] lies on the mean's side of `edge` (at or below it for the upper
    /// end, at or above it for the lower), found from the statistic at `edge` alone, without the
    /// end's root search: Z falls as θ₀ rises, so the upper end (where Z = −c, or `hi`) is at or
    /// below `edge` exactly when `edge` reaches `hi` or Z(edge) ≤ −c, and the lower end likewise.
    /// What a sample-size search asks at each size (one restricted variance instead of
    /// 44); it can differ from comparing the bisected end only within 2⁻⁴⁴ of the range.
    pub fn within(&self, critical: f64, upper: bool, edge: f64) -> bool {
        let z = critical;
        if upper {
            edge >= self.hi || (edge > self.mean && self.statistic(edge) <= -z)
        } else {
            edge <= self.lo || (edge < self.mean && self.statistic(edge) >= z)
        }
    }

    /// The score statistic Z(θ₀) = (x̄ − θ₀)/√(V(θ₀)/n) (see the module documentation); ±∞ where
    /// the restricted variance is 0.
    fn statistic(&self, theta: f64) -> f64 {
        let (mean, n) = (self.mean, self.n);
        if theta == mean {
            return 0.0;
        }
        let var = restricted_variance(&self.v, &self.c, n, mean, theta, (self.lo, self.hi));
        if var > 0.0 {
            (mean - theta) / (var / n).sqrt()
        } else if mean > theta {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        }
    }
}

/// `t` such that P(|T_ν| ≤ t) = confidence for Student's t with `df` degrees of freedom (the
/// normal quantile for df above 10⁷, where they differ by under 10⁻⁶, and statrs' inversion
/// would take minutes: sample-size planning asks for df up to 10¹⁴).
pub fn t_two_sided(confidence: f64, df: f64) -> f64 {
    if !df.is_finite() || df > 1e7 {
        return crate::dist::z_two_sided(confidence);
    }
    // df > 0 is checked by the callers; StudentsT::new fails only for df ≤ 0 or NaN.
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => t.inverse_cdf(1.0 - (1.0 - confidence) / 2.0),
        Err(_) => f64::NAN,
    }
}

/// The t interval mean ± t₁₋α/₂,df · se; `None` without an se or with df < 1.
pub fn t(mean: f64, se: Option<f64>, df: usize, confidence: f64) -> Option<(f64, f64)> {
    let se = se?;
    if df < 1 {
        return None;
    }
    let t = t_two_sided(confidence, df as f64);
    Some((mean - t * se, mean + t * se))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counting bit patterns gives what sorting every value gives, bit for bit: few levels with
    /// 0 and −0 among them, continuous values, a NaN, and nothing.
    #[test]
    fn distinct_counts_are_the_sorted_counts() {
        let same = |values: &[f64]| {
            let (a, b) = (distinct_counts(values), sorted_counts(values));
            assert_eq!(a.0.len(), b.0.len(), "{values:?}");
            for (x, y) in a.0.iter().zip(&b.0).chain(a.1.iter().zip(&b.1)) {
                assert!(
                    x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
                    "{x} {y}"
                );
            }
        };
        let levels: Vec<f64> = (0..5000)
            .map(|i| [-0.0, 0.0, 0.2, -0.4, 1.0, -1.0, 0.6][(i * 7919) % 7])
            .collect();
        same(&levels);
        let continuous: Vec<f64> = (0..3000)
            .map(|i| ((i as f64) * 0.618_033_988_7).fract() - 0.5)
            .collect();
        same(&continuous);
        same(&[0.5, f64::NAN, 0.5, f64::NAN, -0.0]);
        same(&[]);
        same(&[-0.0, 0.0, 0.0, -0.0]);
        assert_eq!(
            distinct_counts(&[0.0, -0.0]).0[0].to_bits(),
            (-0.0f64).to_bits()
        );
    }

    /// Tango's closed form for paired binary data (b discordant pairs lost, c gained, of n):
    /// the restricted MLE q̂ of p₀₁ solves 2n q² − (b(1+Δ) + c(1−Δ) − 2nΔ) q − cΔ(1−Δ) = 0, and
    /// Z = (b − c − nΔ)/√(n(2q̂ + Δ − Δ²)).
    fn tango(b: f64, c: f64, n: f64, confidence: f64) -> (f64, f64) {
        let z = crate::dist::z_two_sided(confidence);
        let stat = |d: f64| {
            let (qa, qb, qc) = (
                2.0 * n,
                -(b * (1.0 + d) + c * (1.0 - d) - 2.0 * n * d),
                -c * d * (1.0 - d),
            );
            let q = (-qb + (qb * qb - 4.0 * qa * qc).max(0.0).sqrt()) / (2.0 * qa);
            let v = n * (2.0 * q + d - d * d);
            (b - c - n * d) / v.sqrt()
        };
        let solve = |target: f64, mut a: f64, mut hi: f64| {
            for _ in 0..80 {
                let m = 0.5 * (a + hi);
                if stat(m) > target {
                    a = m;
                } else {
                    hi = m;
                }
            }
            0.5 * (a + hi)
        };
        let est = (b - c) / n;
        (solve(z, -1.0 + 1e-12, est), solve(-z, est, 1.0 - 1e-12))
    }

    /// `within` is the bisected end compared with the edge, on either side of each end, for
    /// values that reach a bound and values that do not.
    #[test]
    fn within_is_the_end_compared_with_the_edge() {
        for values in [binary(5, 1, 40), vec![0.1, 0.25, 0.0, -0.2, 0.3, 0.05]] {
            let data = ScoreData::new(&values, -1.0, 1.0).unwrap();
            for critical in [1.0, 2.5, 40.0] {
                for upper in [false, true] {
                    let end = data.end(critical, upper);
                    for shift in [-0.1, -1e-6, 1e-6, 0.1, 5.0] {
                        let edge = if upper { end + shift } else { end - shift };
                        assert_eq!(
                            data.within(critical, upper, edge),
                            shift > 0.0,
                            "{values:?} c {critical} upper {upper} end {end} edge {edge}"
                        );
                    }
                }
            }
        }
    }

    fn binary(b: usize, c: usize, n: usize) -> Vec<f64> {
        let mut d = vec![1.0; b];
        d.extend(vec![-1.0; c]);
        d.extend(vec![0.0; n - b - c]);
        d
    }

    #[test]
    fn equals_tangos_interval_for_paired_binary_scores() {
        for (b, c, n) in [
            (0, 1, 200),
            (5, 1, 200),
            (3, 3, 50),
            (10, 2, 30),
            (1, 0, 5),
            (7, 0, 40),
        ] {
            let z = crate::dist::z_two_sided(0.95);
            let (lo, hi) = score(&binary(b, c, n), -1.0, 1.0, z).unwrap();
            let (tl, th) = tango(b as f64, c as f64, n as f64, 0.95);
            assert!((lo - tl).abs() < 1e-9, "{b} {c} {n}: {lo} vs {tl}");
            assert!((hi - th).abs() < 1e-9, "{b} {c} {n}: {hi} vs {th}");
        }
        // By hand from the published values of the prototype: 0 lost, 1 gained of 200.
        let z = crate::dist::z_two_sided(0.95);
        let (lo, hi) = score(&binary(0, 1, 200), -1.0, 1.0, z).unwrap();
        assert!((lo + 0.027_773_7).abs() < 1e-6 && (hi - 0.013_939_6).abs() < 1e-6);
    }

    #[test]
    fn an_observed_bound_is_not_inside_the_interval() {
        // Two lost and two unchanged of four: every θ up to the bound 1 is not accepted; the
        // upper end is Tango's with t(0.975; 3) = 3.1824463 (scipy, inverting the same
        // statistic): 0.9233419.
        let (lo, hi) = score(&binary(2, 0, 4), -1.0, 1.0, 3.182_446_305_283_708).unwrap();
        assert!((hi - 0.923_341_936_4).abs() < 1e-8, "{hi}");
        assert!((lo + 0.575_310_370_7).abs() < 1e-8, "{lo}");
    }

    #[test]
    fn nothing_observed_gives_the_wilson_bound() {
        // 20 zero drops: the upper end solves θ/√(θ(1−θ)/20) = z, θ = z²/(20 + z²).
        let z: f64 = crate::dist::z_two_sided(0.95);
        let (lo, hi) = score(&[0.0; 20], -1.0, 1.0, z).unwrap();
        let wilson = z * z / (20.0 + z * z);
        assert!(
            (hi - wilson).abs() < 1e-9 && (lo + wilson).abs() < 1e-9,
            "{lo} {hi}"
        );
    }

    #[test]
    fn contains_the_mean_and_narrows_with_n() {
        let mut x = Vec::new();
        for i in 0..400 {
            x.push(((i * 37 % 101) as f64 / 100.0 - 0.5) * 0.8);
        }
        let m = crate::moments::mean(&x);
        let (a, b) = score(&x[..40], -1.0, 1.0, critical(40, 0.95)).unwrap();
        let (c, d) = score(&x, -1.0, 1.0, critical(400, 0.95)).unwrap();
        assert!(a < m && m < b && c < m && m < d);
        assert!(d - c < b - a);
        // Close to the t interval at n = 400 for spread-out values.
        let (_, se) = crate::moments::mean_se(&x, None);
        let (tl, th) = t(m, se, 399, 0.95).unwrap();
        assert!(
            ((d - c) / (th - tl) - 1.0).abs() < 0.05,
            "{} {}",
            d - c,
            th - tl
        );
    }

    #[test]
    fn many_distinct_values_are_binned_keeping_the_mean() {
        let x: Vec<f64> = (0..5000)
            .map(|i| ((i as f64) * 0.618_034).fract() - 0.45)
            .collect();
        let (v, c) = support(&x, -1.0, 1.0);
        assert!(v.len() <= MAX_SUPPORT);
        let binned: f64 = v.iter().zip(&c).map(|(a, b)| a * b).sum::<f64>() / 5000.0;
        assert!((binned - crate::moments::mean(&x)).abs() < 1e-12);
    }

    #[test]
    fn t_quantiles() {
        // Table values: t(0.975; 1) = 12.706, t(0.975; 9) = 2.262.
        assert!((t_two_sided(0.95, 1.0) - 12.706_204_736).abs() < 1e-6);
        assert!((t_two_sided(0.95, 9.0) - 2.262_157_163).abs() < 1e-6);
        let (lo, hi) = t(1.0, Some(0.5), 9, 0.95).unwrap();
        assert!((hi - lo - 2.0 * 0.5 * 2.262_157_163).abs() < 1e-6);
        assert!(t(1.0, None, 9, 0.95).is_none() && t(1.0, Some(0.1), 0, 0.95).is_none());
    }
}

/// Against a second implementation: the same interval from an independent Python prototype
/// (numpy and scipy: the restricted maximum-likelihood distribution by bisection on the
/// empirical-likelihood multiplier, then the score equation solved by bisection in θ), on a
/// three-valued sample.
#[cfg(test)]
mod against_python {
    use super::*;

    #[test]
    fn three_valued_sample_matches_the_prototype() {
        let mut d = Vec::new();
        for (v, k) in [(-1.0, 3), (-0.5, 10), (0.0, 75), (0.5, 8), (1.0, 4)] {
            d.extend(std::iter::repeat_n(v, k));
        }
        let (lo, hi) = score(&d, -1.0, 1.0, critical(100, 0.95)).unwrap();
        assert!((lo + 0.071_397_6).abs() < 1e-5 && (hi - 0.073_677_6).abs() < 1e-5);
    }
}
