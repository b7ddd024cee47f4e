//! A time-uniform confidence sequence for the mean of bounded observations: the
//! predictable-plug-in empirical-Bernstein (PrPl-EB) confidence sequence of Waudby-Smith & Ramdas
//! ("Estimating means of bounded random variables by betting", JRSS-B 2024, Theorem 2), built on
//! the empirical-Bernstein supermartingale of Howard et al. (Annals of Statistics 2021).
//!
//! Observations `d` lie in a known interval `[lo, hi]` and are rescaled to `x = (d − lo)/(hi − lo)`
//! in [0, 1]. With, before observation i (1-based),
//!
//! - `μ̂ᵢ₋₁ = (½ + Σ_{j<i} xⱼ) / i` and `σ̂²ᵢ₋₁ = (¼ + Σ_{j<i} (xⱼ − μ̂ⱼ)²) / i`,
//! - the bet `λᵢ = min( √(2 log(2/α) / (σ̂²ᵢ₋₁ · i · log(1 + i))), c )`, c = ¾ (their suggested cap),
//! - `vᵢ = 4 (xᵢ − μ̂ᵢ₋₁)²` and `ψ(λ) = (−log(1 − λ) − λ) / 4`,
//!
//! the set at time t is
//!
//! `Cₜ = Σλᵢxᵢ / Σλᵢ  ±  (log(2/α) + Σ vᵢ ψ(λᵢ)) / Σλᵢ`,
//!
//! clipped to [0, 1] and intersected with every earlier set (the running intersection is also a
//! confidence sequence). Then `P(∃t : μ ∉ Cₜ) ≤ α`: the analyst may look after every case and stop
//! whenever they like. The bounds are mapped back to `[lo, hi]`.
//!
//! `watch` decided with this sequence until it moved to the betting tests of [`crate::betting`],
//! which decide about twice as soon at the same error rate; `benches/sequential.rs` compares the
//! two on the same streams.

/// A running PrPl-EB confidence sequence (see the module documentation).
#[derive(Debug, Clone)]
pub struct ConfidenceSequence {
    lo: f64,
    width: f64,
    log_term: f64,
    n: u64,
    sum_x: f64,
    sum_sq: f64,
    sum_lambda: f64,
    sum_lambda_x: f64,
    sum_penalty: f64,
    lower: f64,
    upper: f64,
}

/// The bet's cap `c` (Waudby-Smith & Ramdas suggest ½ or ¾): λ < 1 keeps ψ(λ) finite. On
/// low-variance data the cap binds for the first thousands of observations, and the half-width
/// is then about log(2/α) / (c·n) of the observation range, so the larger cap decides sooner.
const MAX_BET: f64 = 0.75;

impl ConfidenceSequence {
    /// An empty sequence for observations in `[lo, hi]` (lo < hi) at level `alpha` ∈ (0, 1).
    pub fn new(lo: f64, hi: f64, alpha: f64) -> ConfidenceSequence {
        debug_assert!(lo < hi && alpha > 0.0 && alpha < 1.0);
        ConfidenceSequence {
            lo,
            width: hi - lo,
            log_term: (2.0 / alpha).ln(),
            n: 0,
            sum_x: 0.0,
            sum_sq: 0.0,
            sum_lambda: 0.0,
            sum_lambda_x: 0.0,
            sum_penalty: 0.0,
            lower: 0.0,
            upper: 1.0,
        }
    }

    /// Adds one observation (clamped into `[lo, hi]`; callers check the bounds first).
    pub fn push(&mut self, d: f64) {
        let x = ((d - self.lo) / self.width).clamp(0.0, 1.0);
        let i = (self.n + 1) as f64;
        // Predictable estimates from the observations before this one.
        let mu_prev = (0.5 + self.sum_x) / i;
        let var_prev = (0.25 + self.sum_sq) / i;
        let lambda = (2.0 * self.log_term / (var_prev * i * (1.0 + i).ln()))
            .sqrt()
            .min(MAX_BET);
        let v = 4.0 * (x - mu_prev) * (x - mu_prev);
        let psi = (-(1.0 - lambda).ln() - lambda) / 4.0;
        self.sum_lambda += lambda;
        self.sum_lambda_x += lambda * x;
        self.sum_penalty += v * psi;
        self.n += 1;
        self.sum_x += x;
        // μ̂ᵢ includes xᵢ: (½ + Σ_{j≤i} xⱼ)/(i + 1).
        let mu_now = (0.5 + self.sum_x) / (i + 1.0);
        self.sum_sq += (x - mu_now) * (x - mu_now);
        let centre = self.sum_lambda_x / self.sum_lambda;
        let half = (self.log_term + self.sum_penalty) / self.sum_lambda;
        self.lower = self.lower.max((centre - half).max(0.0));
        self.upper = self.upper.min((centre + half).min(1.0));
    }

    /// Observations so far.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The current bounds on the mean, in the observations' units. Before any observation,
    /// the whole interval. Should the running intersection become empty (possible only when the
    /// observations are not what the sequence assumes), both ends are the last centre.
    pub fn bounds(&self) -> (f64, f64) {
        let (l, u) = if self.lower <= self.upper {
            (self.lower, self.upper)
        } else {
            let c = self.sum_lambda_x / self.sum_lambda;
            (c, c)
        };
        (self.lo + self.width * l, self.lo + self.width * u)
    }

    /// The mean of the observations so far, in their units (None before any).
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.lo + self.width * self.sum_x / self.n as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The first two steps by hand, on [0, 1] at α = 0.05.
    #[test]
    fn two_steps_by_hand() {
        let mut cs = ConfidenceSequence::new(0.0, 1.0, 0.05);
        let l = (2.0f64 / 0.05).ln(); // 3.6888794541139363
        // Step 1: μ̂₀ = ½, σ̂²₀ = ¼, λ₁ = min(√(2l/(¼·1·ln2)), ¾) = ¾.
        cs.push(1.0);
        let lambda1 = 0.75;
        let v1 = 4.0 * 0.25;
        let psi1 = (-(0.25f64).ln() - 0.75) / 4.0;
        let centre = 1.0;
        let half = (l + v1 * psi1) / lambda1;
        let (lo, hi) = cs.bounds();
        assert!((lo - (centre - half).max(0.0)).abs() < 1e-15);
        assert!((hi - 1.0).abs() < 1e-15);
        // Step 2: μ̂₁ = (½+1)/2 = ¾, σ̂²₁ = (¼ + (1 − ¾)²)/2 = 0.15625.
        cs.push(0.0);
        let var1: f64 = (0.25 + 0.0625) / 2.0;
        let lambda2: f64 = (2.0 * l / (var1 * 2.0 * 3f64.ln())).sqrt().min(0.75);
        assert_eq!(lambda2, 0.75);
        let v2 = 4.0 * 0.75 * 0.75;
        let psi2 = psi1;
        let centre2 = (lambda1 * 1.0 + lambda2 * 0.0) / (lambda1 + lambda2);
        let half2 = (l + v1 * psi1 + v2 * psi2) / (lambda1 + lambda2);
        let (lo2, hi2) = cs.bounds();
        assert!((lo2 - (centre2 - half2).max(0.0)).abs() < 1e-15, "{lo2}");
        assert!((hi2 - (centre2 + half2).min(1.0)).abs() < 1e-15, "{hi2}");
    }

    /// A second implementation, from whole arrays, on a stream where λ is not capped.
    #[test]
    fn equals_a_direct_array_computation() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let xs: Vec<f64> = (0..3_000)
            .map(|_| 0.4 + 0.2 * rng.random::<f64>())
            .collect();
        let alpha: f64 = 0.01;
        let l = (2.0 / alpha).ln();
        let n = xs.len();
        let mu: Vec<f64> = (0..=n)
            .map(|t| (0.5 + xs[..t].iter().sum::<f64>()) / (t as f64 + 1.0))
            .collect();
        let mut var = vec![0.25];
        let mut acc = 0.25;
        for t in 1..=n {
            acc += (xs[t - 1] - mu[t]).powi(2);
            var.push(acc / (t as f64 + 1.0));
        }
        let mut cs = ConfidenceSequence::new(0.0, 1.0, alpha);
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        let (mut sl, mut slx, mut sp) = (0.0, 0.0, 0.0);
        let mut capped = 0;
        for i in 1..=n {
            let raw = (2.0 * l / (var[i - 1] * i as f64 * (1.0 + i as f64).ln())).sqrt();
            let lam = raw.min(0.75);
            capped += usize::from(raw > 0.75);
            sl += lam;
            slx += lam * xs[i - 1];
            sp += 4.0 * (xs[i - 1] - mu[i - 1]).powi(2) * (-(1.0 - lam).ln() - lam) / 4.0;
            lo = lo.max(slx / sl - (l + sp) / sl);
            hi = hi.min(slx / sl + (l + sp) / sl);
            cs.push(xs[i - 1]);
            let (a, b) = cs.bounds();
            assert!(
                (a - lo.max(0.0)).abs() < 1e-12 && (b - hi.min(1.0)).abs() < 1e-12,
                "step {i}"
            );
        }
        assert!(
            capped > 0 && capped < n - 1_000,
            "both capped and uncapped bets ({capped})"
        );
        assert!(lo < 0.5 && 0.5 < hi && hi - lo < 0.03, "{lo} {hi}");
    }

    #[test]
    fn maps_back_to_the_observation_interval() {
        let mut a = ConfidenceSequence::new(-1.0, 1.0, 0.1);
        let mut b = ConfidenceSequence::new(0.0, 1.0, 0.1);
        for k in 0..200 {
            let x = f64::from(k % 7) / 6.0;
            a.push(2.0 * x - 1.0);
            b.push(x);
        }
        let (al, ah) = a.bounds();
        let (bl, bh) = b.bounds();
        assert!((al - (2.0 * bl - 1.0)).abs() < 1e-12);
        assert!((ah - (2.0 * bh - 1.0)).abs() < 1e-12);
        assert!(al < a.mean().unwrap() && a.mean().unwrap() < ah);
    }

    #[test]
    fn shrinks_around_the_mean_and_never_widens() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut cs = ConfidenceSequence::new(0.0, 1.0, 0.05);
        let mut last = (0.0, 1.0);
        for _ in 0..20_000 {
            cs.push(if rng.random::<f64>() < 0.3 { 1.0 } else { 0.0 });
            let b = cs.bounds();
            assert!(b.0 >= last.0 && b.1 <= last.1);
            last = b;
        }
        assert!(last.0 < 0.3 && 0.3 < last.1);
        assert!(last.1 - last.0 < 0.05, "{last:?}");
    }
}
