//! Sequential one-sided tests of a bounded mean against a value, by betting: one side of the
//! hedged-capital process of Waudby-Smith & Ramdas ("Estimating means of bounded random variables
//! by betting", JRSS-B 2024, Section 4.2, with their predictable plug-in bet).
//!
//! Observations `x` lie in [0, 1]; the null hypothesis is H₀: E\[xᵢ | x₁ … xᵢ₋₁\] ≤ m for every i,
//! for a value m ∈ (0, 1). A gambler starts with capital 1 and stakes a fraction λᵢ ≥ 0 of it on
//! xᵢ exceeding m:
//!
//! `Kₜ = Π_{i≤t} (1 + λᵢ (xᵢ − m))`,
//! `λᵢ = min( √(2 log(1/α) / (σ̂²ᵢ₋₁ · i · log(1 + i))), c/m )`, c = ¾,
//!
//! with the predictable estimates `μ̂ᵢ₋₁ = (½ + Σ_{j<i} xⱼ)/i` and
//! `σ̂²ᵢ₋₁ = (¼ + Σ_{j<i} (xⱼ − μ̂ⱼ)²)/i` of [`crate::sequence`]. Because λᵢ is chosen before xᵢ
//! is seen and 1 + λᵢ(xᵢ − m) ≥ 1 − c > 0, under H₀ the capital is a non-negative supermartingale,
//! and Ville's inequality gives `P(∃t : Kₜ ≥ 1/α) ≤ α`. Rejecting H₀ the first time the capital
//! reaches 1/α is therefore a level-α test that may be checked after every observation and
//! stopped at any time; `1/maxₛ≤ₜ Kₛ` is an anytime-valid p-value.
//!
//! The cap c/m is what makes the test faster than reading a decision off a confidence sequence:
//! the sequence's empirical-Bernstein bound caps its bet at c whatever m is, while a test at
//! m ≈ ½ may stake up to 1.5. One test spends all of its α on its one side; [`ThresholdTests`]
//! runs two, at α/2 each, as the paper's two-sided hedged process does.

/// The bet's cap as a fraction of 1/m (Waudby-Smith & Ramdas suggest ½ or ¾): the worst
/// outcome x = 0 then keeps a quarter of the capital.
const MAX_BET: f64 = 0.75;

/// A running one-sided betting test of H₀: E\[x\] ≤ m (see the module documentation).
#[derive(Debug, Clone)]
pub struct BettingTest {
    m: f64,
    log_threshold: f64,
    n: u64,
    sum_x: f64,
    sum_sq: f64,
    log_capital: f64,
    max_log_capital: f64,
}

impl BettingTest {
    /// A test of H₀: E\[x\] ≤ `m` (0 < m < 1) at level `alpha` ∈ (0, 1), before any observation.
    pub fn new(m: f64, alpha: f64) -> BettingTest {
        debug_assert!(m > 0.0 && m < 1.0 && alpha > 0.0 && alpha < 1.0);
        let log_threshold = (1.0 / alpha).ln();
        BettingTest {
            m,
            log_threshold,
            n: 0,
            sum_x: 0.0,
            sum_sq: 0.0,
            log_capital: 0.0,
            max_log_capital: 0.0,
        }
    }

    /// The bet on observation i = n + 1, from the observations before it.
    fn bet(&self) -> f64 {
        let i = (self.n + 1) as f64;
        let var_prev = (0.25 + self.sum_sq) / i;
        prpl_bet(self.log_threshold, var_prev, i).min(MAX_BET / self.m)
    }

    /// Adds one observation (clamped into [0, 1]; callers check the bounds first).
    pub fn push(&mut self, x: f64) {
        let x = x.clamp(0.0, 1.0);
        let lambda = self.bet();
        self.log_capital += (lambda * (x - self.m)).ln_1p();
        self.max_log_capital = self.max_log_capital.max(self.log_capital);
        self.n += 1;
        self.sum_x += x;
        let mu_now = (0.5 + self.sum_x) / (self.n + 1) as f64;
        self.sum_sq += (x - mu_now) * (x - mu_now);
    }

    /// Observations so far.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// log Kₜ, the log of the capital now.
    pub fn log_capital(&self) -> f64 {
        self.log_capital
    }

    /// Whether the capital has reached 1/α at some time: H₀ is rejected.
    pub fn rejected(&self) -> bool {
        self.max_log_capital >= self.log_threshold
    }

    /// The anytime-valid p-value `min(1, 1/maxₛ≤ₜ Kₛ)`.
    pub fn p_value(&self) -> f64 {
        (-self.max_log_capital).exp().min(1.0)
    }
}

/// The predictable plug-in bet `√(2·log(1/α) / (var·i·log(1 + i)))` of observation i.
fn prpl_bet(log_threshold: f64, var: f64, i: f64) -> f64 {
    (2.0 * log_threshold / (var.max(1e-12) * i * (1.0 + i).ln())).sqrt()
}

/// Runs a fresh test of H₀: E\[x\] ≤ m over `xs` and says whether it rejects at some time.
pub fn rejects(xs: &[f64], m: f64, alpha: f64) -> bool {
    let mut t = BettingTest::new(m, alpha);
    for &x in xs {
        t.push(x);
        if t.rejected() {
            return true;
        }
    }
    false
}

/// The anytime-valid interval for the mean that the two one-sided tests give over `xs`, each at
/// level `alpha`: `[inf{m : H₀ E\[x\] ≤ m not rejected}, sup{m : H₀ E\[x\] ≥ m not rejected}]`, found
/// by bisection to 1e-9 (the capital decreases in m for all but a few orderings, so the ends
/// are exact up to that). Its coverage is 1 − 2α. `(0, 1)` before any observation.
pub fn interval(xs: &[f64], alpha: f64) -> (f64, f64) {
    let flipped: Vec<f64> = xs.iter().map(|x| 1.0 - x).collect();
    let lower = boundary(|m| rejects(xs, m, alpha));
    let upper = 1.0 - boundary(|m| rejects(&flipped, m, alpha));
    (lower, upper.max(lower))
}

/// The smallest m ∈ (0, 1) at which `rejected(m)` turns false, by bisection (0 when it is never
/// rejected).
fn boundary(rejected: impl Fn(f64) -> bool) -> f64 {
    let (mut lo, mut hi) = (1e-9, 1.0 - 1e-9);
    if !rejected(lo) {
        return 0.0;
    }
    if rejected(hi) {
        return 1.0;
    }
    while hi - lo > 1e-9 {
        let mid = 0.5 * (lo + hi);
        if rejected(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// The two one-sided tests of a mean drop against a threshold `thr`, read unit by unit, where a
/// unit is a case or a cluster of cases (units in random order, drawn independently from the
/// experiment's population of units).
///
/// Each unit brings the sum `S` of its n cases' paired drops (each in [−span, span]). Its
/// increment at the threshold is `Y = S − thr·n`: E\[Y\] = E\[n\]·(μ − thr), where μ = E\[S\]/E\[n\] is
/// the case-weighted mean drop that `sweep` reports, so E\[Y\] ≤ 0 exactly when μ ≤ thr, whatever
/// the cluster sizes. With `n ≤ n_max`, Y lies in [−a, b], a = n_max·(span + thr) and
/// b = n_max·(span − thr); rescaled, `x = (Y + a)/(a + b)` ∈ [0, 1] and μ ≤ thr ⇔ E\[x\] ≤
/// m = a/(a + b). Then:
///
/// - **needed** tests H₀: μ ≤ thr, a [`BettingTest`] of E\[x\] ≤ m;
/// - **removable** tests H₀: μ ≥ thr, a [`BettingTest`] of E\[1 − x\] ≤ 1 − m.
///
/// Each runs at `alpha`/2, so that the chance that either ever rejects wrongly is at most `alpha`
/// for every μ, μ = thr included (this is the hedged-capital process of the paper with θ = ½). For
/// μ ≠ thr only one null is true, but at μ = thr both are, and the tests are sharp enough for the
/// split to matter: unsplit, at α = 0.05, 6.7% of 10,000 null streams on the threshold were decided
/// (`benches/sequential.rs`).
#[derive(Debug, Clone)]
pub struct ThresholdTests {
    thr: f64,
    alpha: f64,
    a: f64,
    width: f64,
    needed: BettingTest,
    removable: BettingTest,
}

impl ThresholdTests {
    /// The tests at `thr` for drops in [−span, span] (|thr| < span), units of at most
    /// `max_unit_cases` cases, with error rate `alpha` for the pair (each test at `alpha`/2).
    pub fn new(thr: f64, span: f64, max_unit_cases: usize, alpha: f64) -> ThresholdTests {
        debug_assert!(thr.abs() < span && max_unit_cases >= 1);
        let n_max = max_unit_cases as f64;
        let (a, b) = (n_max * (span + thr), n_max * (span - thr));
        let m = a / (a + b);
        ThresholdTests {
            thr,
            alpha,
            a,
            width: a + b,
            needed: BettingTest::new(m, alpha / 2.0),
            removable: BettingTest::new(1.0 - m, alpha / 2.0),
        }
    }

    /// The unit's rescaled increment x = (S − thr·n + a)/(a + b).
    pub fn rescaled(&self, sum_drop: f64, cases: usize) -> f64 {
        (sum_drop - self.thr * cases as f64 + self.a) / self.width
    }

    /// Adds one unit: the sum of its cases' paired drops, and its number of cases.
    pub fn push(&mut self, sum_drop: f64, cases: usize) {
        let x = self.rescaled(sum_drop, cases);
        self.needed.push(x);
        self.removable.push(1.0 - x);
    }

    /// Whether "μ ≤ thr" is rejected: the unit is needed.
    pub fn needed(&self) -> bool {
        self.needed.rejected()
    }

    /// Whether "μ ≥ thr" is rejected: the unit is removable.
    pub fn removable(&self) -> bool {
        self.removable.rejected()
    }

    /// The anytime-valid p-values of "μ ≤ thr" and "μ ≥ thr".
    pub fn p_values(&self) -> (f64, f64) {
        (self.needed.p_value(), self.removable.p_value())
    }

    /// The null value m of the needed test on the rescaled increments (the removable test's is
    /// 1 − m).
    pub fn null_mean(&self) -> f64 {
        self.a / self.width
    }

    /// The units after which the pair is expected to decide, for units whose rescaled increments
    /// ([`ThresholdTests::rescaled`]) are distributed like `xs`: [`expected_units`] of the test
    /// the sample's mean leads (needed above m, removable below), at `alpha`/2. None when the
    /// sample sits on m or the projection passes `cap`.
    pub fn expected_units(&self, xs: &[f64], cap: u64) -> Option<u64> {
        let m = self.null_mean();
        let mean = xs.iter().sum::<f64>() / xs.len().max(1) as f64;
        if mean > m {
            expected_units(xs, m, self.alpha / 2.0, cap)
        } else {
            let flipped: Vec<f64> = xs.iter().map(|x| 1.0 - x).collect();
            expected_units(&flipped, 1.0 - m, self.alpha / 2.0, cap)
        }
    }

    /// The units after which the pair is expected to decide, for units (S, n) distributed like
    /// `units`: [`ThresholdTests::expected_units`] of their rescaled increments, summarised by
    /// at most 64 evenly spaced order statistics (the same distribution, at a cost per projected
    /// step that does not grow with the sample).
    pub fn expected_units_like(&self, units: &[(f64, usize)], cap: u64) -> Option<u64> {
        let mut xs: Vec<f64> = units.iter().map(|&(s, n)| self.rescaled(s, n)).collect();
        if xs.len() > 64 {
            let mean = xs.iter().sum::<f64>() / xs.len() as f64;
            xs.sort_by(f64::total_cmp);
            xs = (0..64)
                .map(|k| xs[((k as f64 + 0.5) / 64.0 * xs.len() as f64) as usize])
                .collect();
            // Order statistics miss rare large units; shifted to the sample's mean, on which
            // the test's drift depends most.
            let shift = mean - xs.iter().sum::<f64>() / 64.0;
            for x in &mut xs {
                *x = (*x + shift).clamp(0.0, 1.0);
            }
        }
        self.expected_units(&xs, cap)
    }
}

/// The anytime-valid interval for the case-weighted mean drop μ that the two tests give over
/// `units` ((S, n) each), at error rate `alpha` for the pair (coverage 1 − α): the thresholds at which neither
/// test has rejected, found by bisection over (−span, span) to 1e-9·span. `(−span, span)` before
/// any unit.
pub fn drop_interval(
    units: &[(f64, usize)],
    span: f64,
    max_unit_cases: usize,
    alpha: f64,
) -> (f64, f64) {
    let rejects_at = |thr: f64, needed: bool| {
        let mut t = ThresholdTests::new(thr, span, max_unit_cases, alpha);
        units.iter().any(|&(s, n)| {
            t.push(s, n);
            if needed { t.needed() } else { t.removable() }
        })
    };
    // On the scale u = (thr + span)/(2·span) ∈ (0, 1).
    let at = |u: f64| -span + 2.0 * span * u;
    let lower = at(boundary(|u| rejects_at(at(u), true)));
    let upper = at(1.0 - boundary(|u| rejects_at(at(1.0 - u), false)));
    (lower, upper.max(lower))
}

/// Follows one stream of single-case drops in [−span, span] until one of the [`ThresholdTests`]
/// at `thr` (the pair at `alpha`) rejects (Some(true): needed; Some(false): removable) or `n_max`
/// drops pass (None). Returns the decision and the drops read. For simulations of the error rate
/// and the stopping times.
pub fn stopping_time(
    span: f64,
    thr: f64,
    alpha: f64,
    n_max: usize,
    mut next: impl FnMut() -> f64,
) -> (Option<bool>, usize) {
    let mut tests = ThresholdTests::new(thr, span, 1, alpha);
    for n in 1..=n_max {
        tests.push(next(), 1);
        if tests.needed() {
            return (Some(true), n);
        }
        if tests.removable() {
            return (Some(false), n);
        }
    }
    (None, n_max)
}

/// Longest projection [`expected_units`] computes.
pub const MAX_PROJECTION: u64 = 10_000_000;

/// The number of observations after which the test of H₀: E\[x\] ≤ m is expected to reject, for
/// observations distributed like `sample` (points in [0, 1], e.g. the ones seen so far or
/// quantiles of a planned distribution): the first t at which the expected log-capital
/// `Σ_{i≤t} mean_{x∈sample} log(1 + λᵢ(x − m))` reaches log(1/α), with λᵢ the bet the test
/// would make when σ̂² is the sample's variance. None when the sample's mean is not above m or
/// the projection passes `cap` (at most [`MAX_PROJECTION`]). A projection of the median, not a
/// guarantee: the benchmark `benches/sequential.rs` compares it with simulated stopping times.
pub fn expected_units(sample: &[f64], m: f64, alpha: f64, cap: u64) -> Option<u64> {
    if sample.is_empty() {
        return None;
    }
    let n = sample.len() as f64;
    let mean = sample.iter().sum::<f64>() / n;
    if mean <= m {
        return None;
    }
    let var = sample.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    let log_threshold = (1.0 / alpha).ln();
    let mut log_capital = 0.0;
    for t in 1..=cap.min(MAX_PROJECTION) {
        let i = t as f64;
        // σ̂²ᵢ₋₁ = (¼ + (i − 1)·σ²)/i: the prior's weight fades as the test's own estimate does.
        let var_prev = (0.25 + (i - 1.0) * var) / i;
        let lambda = prpl_bet(log_threshold, var_prev, i).min(MAX_BET / m);
        log_capital += sample
            .iter()
            .map(|x| (lambda * (x - m)).ln_1p())
            .sum::<f64>()
            / n;
        if log_capital >= log_threshold {
            return Some(t);
        }
    }
    None
}

/// The cases after which one of [`ThresholdTests`]' two tests (single cases as units) is expected
/// to decide, when case drops are distributed as Normal(`drop`, `sd`²) clipped to [−span, span]
/// (represented by 32 quantiles): [`expected_units`] of the test the drop leads, at `alpha`/2
/// (the pair at `alpha`).
/// None when the drop sits on the threshold or the projection passes `cap`.
pub fn expected_cases(
    drop: f64,
    sd: f64,
    thr: f64,
    span: f64,
    alpha: f64,
    cap: u64,
) -> Option<u64> {
    if thr.is_nan() || thr.abs() >= span {
        return None;
    }
    let tests = ThresholdTests::new(thr, span, 1, alpha);
    let xs: Vec<f64> = (0..32)
        .map(|k| {
            let z = crate::dist::z_quantile((k as f64 + 0.5) / 32.0);
            tests.rescaled((drop + sd * z).clamp(-span, span), 1)
        })
        .collect();
    tests.expected_units(&xs, cap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Two steps by hand at m = ½, α = 0.05: log(1/α) = 2.995732.
    /// Step 1: σ̂²₀ = ¼, λ₁ = √(2·2.995732/(¼·1·ln 2)) = 5.8788, capped at 0.75/0.5 = 1.5;
    /// x₁ = 1: K₁ = 1 + 1.5·0.5 = 1.75. Then μ̂₁ = (½ + 1)/2 = 0.75, Σ(x − μ̂)² = 0.0625.
    /// Step 2: σ̂²₁ = (¼ + 0.0625)/2 = 0.15625, λ₂ = √(2·2.995732/(0.15625·2·ln 3)) = 4.1773,
    /// capped at 1.5; x₂ = 0.2: K₂ = 1.75·(1 − 1.5·0.3) = 0.9625.
    #[test]
    fn two_steps_by_hand() {
        let mut t = BettingTest::new(0.5, 0.05);
        t.push(1.0);
        assert!((t.log_capital().exp() - 1.75).abs() < 1e-12);
        t.push(0.2);
        assert!((t.log_capital().exp() - 0.9625).abs() < 1e-12);
        assert!((t.p_value() - 1.0 / 1.75).abs() < 1e-12);
        assert!(!t.rejected());
        assert_eq!(t.n(), 2);
        // m = 0.9 caps the bet at 0.75/0.9 = 0.8333; observations 0.05 above m (with little
        // variance, so the cap binds) gain about log(1 + 0.8333·0.055) = 0.045 each, and reach
        // log(1/α) = 3.0 after about 67.
        let mut small = BettingTest::new(0.9, 0.05);
        for i in 0..400 {
            small.push(if i % 2 == 0 { 0.95 } else { 0.96 });
        }
        assert!(small.rejected());
    }

    /// At the boundary of the null (E\[x\] = m) the test rejects at most α of the time, here far
    /// less: 2,000 streams of 2,000 draws of a two-point and a uniform distribution.
    #[test]
    fn null_streams_reject_at_most_alpha() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for (m, two_point) in [(0.5, true), (0.3, true), (0.5, false)] {
            let mut wrong = 0;
            for _ in 0..2000 {
                let mut t = BettingTest::new(m, 0.05);
                for _ in 0..2000 {
                    let x = if two_point {
                        f64::from(u8::from(rng.random::<f64>() < m))
                    } else {
                        rng.random::<f64>()
                    };
                    t.push(x);
                    if t.rejected() {
                        wrong += 1;
                        break;
                    }
                }
            }
            assert!(wrong <= 100, "m {m}: {wrong} of 2000 rejected");
        }
    }

    /// A mean 0.1 above m is found, and the projection is near the simulated median.
    #[test]
    fn alternatives_are_rejected_near_the_projected_time() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let (m, p) = (0.5, 0.6);
        let mut times: Vec<u64> = (0..501)
            .map(|_| {
                let mut t = BettingTest::new(m, 0.01);
                loop {
                    t.push(f64::from(u8::from(rng.random::<f64>() < p)));
                    if t.rejected() {
                        return t.n();
                    }
                }
            })
            .collect();
        times.sort_unstable();
        let median = times[250] as f64;
        let projected = expected_units(&[0.0, 1.0, 1.0, 0.0, 1.0], m, 0.01, 100_000).unwrap();
        assert!(
            (projected as f64 / median - 1.0).abs() < 0.15,
            "projected {projected}, simulated median {median}"
        );
        assert_eq!(expected_units(&[0.4, 0.5], m, 0.01, 1000), None);
    }

    /// On clustered units (totals of 1–5 cases, bounded by 5 cases), the projection from a
    /// sample of units is within 10% of the simulated median time to a decision.
    #[test]
    fn clustered_projection_matches_the_simulated_median() {
        let draw = |r: &mut ChaCha8Rng| -> (f64, usize) {
            let mut n = 1;
            while n < 5 && r.random::<f64>() < 0.25 {
                n += 1;
            }
            let shared: f64 = r.random_range(-0.4..0.4);
            let s = (0..n)
                .map(|_| 0.12 + shared + r.random_range(-0.5..0.5))
                .sum::<f64>();
            (s.clamp(-(n as f64), n as f64), n)
        };
        let (thr, alpha) = (0.02, 0.05 / 20.0);
        let mut rng = ChaCha8Rng::seed_from_u64(41);
        let sample: Vec<(f64, usize)> = (0..4000).map(|_| draw(&mut rng)).collect();
        let tests = ThresholdTests::new(thr, 1.0, 5, alpha);
        let projected = tests.expected_units_like(&sample, 1_000_000).unwrap() as f64;
        let mut times: Vec<u64> = (0..301)
            .map(|_| {
                let mut t = ThresholdTests::new(thr, 1.0, 5, alpha);
                let mut n = 0;
                while !(t.needed() || t.removable()) {
                    let (s, k) = draw(&mut rng);
                    t.push(s, k);
                    n += 1;
                }
                assert!(t.needed(), "the drop is above the threshold");
                n
            })
            .collect();
        times.sort_unstable();
        let median = times[150] as f64;
        assert!(
            (projected / median - 1.0).abs() < 0.10,
            "projected {projected}, simulated median {median}"
        );
    }

    /// The interval covers the sample's mean and shrinks with more data.
    #[test]
    fn the_interval_inverts_the_two_tests() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let xs: Vec<f64> = (0..4000).map(|_| rng.random::<f64>() * 0.5 + 0.2).collect();
        let (lo, hi) = interval(&xs[..100], 0.025);
        let (lo2, hi2) = interval(&xs, 0.025);
        assert!(lo < 0.45 && 0.45 < hi, "{lo} {hi}");
        assert!(
            lo2 < 0.45 && 0.45 < hi2 && hi2 - lo2 < hi - lo,
            "{lo2} {hi2}"
        );
        // At the ends the tests are on the edge of rejecting.
        assert!(!rejects(&xs, lo2 + 1e-6, 0.025) && rejects(&xs, lo2 - 1e-3, 0.025));
        assert_eq!(interval(&[], 0.05), (0.0, 1.0));
    }
    /// On single cases (n = 1) the needed test is the betting test of x = (d − thr + a)/(a + b);
    /// with clusters, a cluster of 3 cases with drops summing to 0.6 at thr = 0.1, span 1 and
    /// n_max = 4 has Y = 0.3, a = 4.4, b = 3.6: x = 4.7/8 = 0.5875, m = 0.55.
    #[test]
    fn threshold_tests_rescale_cluster_totals() {
        let t = ThresholdTests::new(0.1, 1.0, 4, 0.05);
        assert!((t.rescaled(0.6, 3) - 0.5875).abs() < 1e-12);
        assert!((t.null_mean() - 0.55).abs() < 1e-12);
        // A unit exactly at the threshold sits at m.
        assert!((t.rescaled(0.4, 4) - t.null_mean()).abs() < 1e-12);
    }

    /// Unequal clusters: the small clusters lose much, the large ones nothing. The mean of the
    /// cluster means is above thr, the case-weighted mean below it; the tests follow the latter.
    #[test]
    fn threshold_tests_follow_the_case_weighted_mean() {
        let thr = 0.05;
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut t = ThresholdTests::new(thr, 1.0, 20, 0.01);
        let mut units = Vec::new();
        let (mut s_all, mut n_all, mut means) = (0.0, 0usize, 0.0);
        for i in 0..6000 {
            let (n, d) = if i % 2 == 0 { (1, 0.2) } else { (20, 0.0) };
            // Drops in {d − 0.1, d + 0.1} per case, mean d.
            let s: f64 = (0..n)
                .map(|_| d + if rng.random::<bool>() { 0.1 } else { -0.1 })
                .sum();
            units.push((s, n));
            s_all += s;
            n_all += n;
            means += s / n as f64;
            t.push(s, n);
            if t.needed() || t.removable() {
                break;
            }
        }
        let k = units.len() as f64;
        assert!(means / k > thr && s_all / (n_all as f64) < thr);
        assert!(t.removable() && !t.needed(), "after {} units", units.len());
        let (lo, hi) = drop_interval(&units, 1.0, 20, 0.01);
        assert!(hi < thr && lo < s_all / n_all as f64, "{lo} {hi}");
    }
    /// On the threshold both nulls are true: the pair decides at most α of null streams.
    #[test]
    fn the_pair_keeps_alpha_on_the_threshold() {
        let mut rng = ChaCha8Rng::seed_from_u64(13);
        let thr = 0.02;
        let wrong = (0..2000)
            .filter(|_| {
                stopping_time(1.0, thr, 0.05, 2000, || thr + rng.random_range(-0.6..0.6))
                    .0
                    .is_some()
            })
            .count();
        // 5% of 2,000 is 100; the binomial tail beyond 125 is below 0.5%.
        assert!(wrong <= 125, "{wrong} of 2000 decided");
    }
}
