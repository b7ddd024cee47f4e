//! `watch`'s tests at the threshold, at a larger scale than the tests
//! (`cargo bench --profile dev --bench sequential`; results in benches/README.md).
//!
//! 1. **Units to a decision.** For each setting (a drop distribution and a threshold), the same
//!    streams go through three procedures at the demo's per-arm level α/41 (α = 0.05):
//!    - ablate's [`ThresholdTests`] (what `watch` runs);
//!    - a hedged-capital test written here from the paper (Waudby-Smith & Ramdas, JRSS-B 2024,
//!      Section 4.2 and Remark 1: the capital process with the predictable plug-in bet truncated
//!      at c/m), independent of ablate's code, as the reference;
//!    - the PrPl-EB confidence sequence `watch` used before (decision when the interval clears
//!      the threshold, α split between its two sides);
//!
//!    with the median units each needs, and the projection `plan --sequential` and `watch` make
//!    ([`expected_cases`]) against the simulated median.
//! 2. **Error rates under the null.** Drops whose mean sits exactly on the threshold (so both
//!    nulls are true and any decision is wrong), 10,000 streams per shape, looked at after every
//!    unit up to 5,000, at α and at α/41.
//! 3. **The demo's ceiling.** What any valid test could decide on the demo
//!    (`notebooks-data/support-eval-v3`, 41 arms, clusters of 1–5 cases): for each arm, the
//!    growth-optimal constant bet on its own cluster totals Y = S − thr·n (an oracle that knows
//!    the distribution; Kelly's bet maximises the expected log-capital per unit, so no
//!    predictable bet grows faster on average), allowed up to the admissible bound 1/A, where A
//!    is the largest loss a unit's total can show. Every non-negative test supermartingale for
//!    "E[Y] ≤ 0" over totals in [−A, B] is dominated by a capital process Π(1 + λᵢYᵢ) with
//!    0 ≤ λᵢ ≤ 1/A (Waudby-Smith & Ramdas 2024 show such processes all take this form; a
//!    two-point null at −A and B forces the cap), so the oracle's expected units
//!    log(2K/α)/g* bound what any valid test needs on average. Run alone with `-- demo`.

use ablate::io::prelude::*;
use ablate::stats::betting::{ThresholdTests, expected_cases};
use ablate::stats::sequence::ConfidenceSequence;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A unit: the sum of its cases' drops, and its cases.
type Unit = (f64, usize);

/// The reference: a one-sided hedged-capital test of E[x] ≤ m on x ∈ [0, 1], written from the
/// paper without ablate's code. Capital Kₜ = Π(1 + λᵢ(xᵢ − m)); λᵢ = min(√(2 log(1/α) /
/// (σ̂²ᵢ₋₁ i log(i + 1))), c/m), c = 3/4; μ̂ₜ = (½ + Σxᵢ)/(t + 1), σ̂²ₜ = (¼ + Σ(xᵢ − μ̂ᵢ)²)/(t + 1).
struct Reference {
    m: f64,
    alpha: f64,
    t: f64,
    sum: f64,
    sq: f64,
    log_k: f64,
}

impl Reference {
    fn new(m: f64, alpha: f64) -> Reference {
        Reference {
            m,
            alpha,
            t: 0.0,
            sum: 0.0,
            sq: 0.0,
            log_k: 0.0,
        }
    }

    /// Adds x; true once Kₜ ≥ 1/α.
    fn step(&mut self, x: f64) -> bool {
        let sigma2 = (0.25 + self.sq) / (self.t + 1.0);
        let i = self.t + 1.0;
        let plug_in = (2.0 * (1.0 / self.alpha).ln() / (sigma2 * i * (i + 1.0).ln())).sqrt();
        let lambda = plug_in.min(0.75 / self.m);
        self.log_k += (1.0 + lambda * (x - self.m)).ln();
        self.t += 1.0;
        self.sum += x;
        let mu = (0.5 + self.sum) / (self.t + 1.0);
        self.sq += (x - mu).powi(2);
        self.log_k >= (1.0 / self.alpha).ln()
    }
}

/// Units to a decision of ablate's tests (None: undecided).
fn ablate_units(units: &[Unit], thr: f64, n_max: usize, alpha: f64) -> Option<usize> {
    let mut t = ThresholdTests::new(thr, 1.0, n_max, alpha);
    units.iter().enumerate().find_map(|(i, &(s, n))| {
        t.push(s, n);
        (t.needed() || t.removable()).then_some(i + 1)
    })
}

/// Units to a decision of the reference: the paper's hedged capital with θ = ½, i.e. each
/// direction at α/2, on Y = S − thr·n rescaled by the bound n_max·(1 ± thr).
fn reference_units(units: &[Unit], thr: f64, n_max: usize, alpha: f64) -> Option<usize> {
    let a = n_max as f64 * (1.0 + thr);
    let b = n_max as f64 * (1.0 - thr);
    let m = a / (a + b);
    let (mut up, mut down) = (
        Reference::new(m, alpha / 2.0),
        Reference::new(1.0 - m, alpha / 2.0),
    );
    units.iter().enumerate().find_map(|(i, &(s, n))| {
        let x = (s - thr * n as f64 + a) / (a + b);
        let (u, d) = (up.step(x), down.step(1.0 - x));
        (u || d).then_some(i + 1)
    })
}

/// Units to a decision of the old confidence sequence on the units' mean drops, α split (None:
/// undecided).
fn sequence_units(units: &[Unit], thr: f64, alpha: f64) -> Option<usize> {
    let mut cs = ConfidenceSequence::new(-1.0, 1.0, alpha);
    units.iter().enumerate().find_map(|(i, &(s, n))| {
        cs.push(s / n as f64);
        let (lo, hi) = cs.bounds();
        (lo >= thr || hi < thr).then_some(i + 1)
    })
}

/// A drop distribution on single cases, or on clusters.
struct Setting {
    name: String,
    thr: f64,
    /// Largest cluster (1: single cases).
    n_max: usize,
    /// The mean case drop and its sd, for the projection (single cases only).
    moments: Option<(f64, f64)>,
    draw: Box<dyn Fn(&mut ChaCha8Rng) -> Unit>,
}

/// Uniform drops with this mean and sd (half-width sd·√3).
fn uniform(thr: f64, gap: f64, sd: f64) -> Setting {
    let half = sd * 3f64.sqrt();
    let mean = thr + gap;
    Setting {
        name: format!("uniform {gap:+} sd {sd}"),
        thr,
        n_max: 1,
        moments: Some((mean, sd)),
        draw: Box::new(move |r| (mean + r.random_range(-half..half), 1)),
    }
}

/// A per-case drop over 3 binary repeats, as on the demo: mostly 0, else ±1/3, ±2/3 or ±1 with
/// the sign up with probability ½ + `bias`.
fn sparse(thr: f64, bias: f64) -> Setting {
    let step = move |r: &mut ChaCha8Rng| -> f64 {
        if r.random::<f64>() < 0.9 {
            return 0.0;
        }
        let size = f64::from(r.random_range(1..=3u8)) / 3.0;
        if r.random::<f64>() < 0.5 + bias {
            size
        } else {
            -size
        }
    };
    // Mean: 0.1 · (2/3) · 2·bias.
    let mean = 0.1 * (2.0 / 3.0) * 2.0 * bias;
    let sd = (0.1 * (1.0 + 4.0 + 9.0) / 27.0 - mean * mean).sqrt();
    Setting {
        name: format!("sparse thirds, drop {mean:.4}"),
        thr,
        n_max: 1,
        moments: Some((mean, sd)),
        draw: Box::new(move |r| (step(r), 1)),
    }
}

/// Clusters of 1–5 cases (1 with probability 0.8, as the demo's tickets), the cluster sharing
/// half its cases' drop: d = mean + ½·shared + ½·own, shared and own uniform ±0.5.
fn clustered(thr: f64, gap: f64) -> Setting {
    let mean = thr + gap;
    Setting {
        name: format!("clusters 1–5, drop {mean:+.3}"),
        thr,
        n_max: 5,
        moments: None,
        draw: Box::new(move |r| {
            let mut n = 1;
            while n < 5 && r.random::<f64>() < 0.2 {
                n += 1;
            }
            let shared: f64 = r.random_range(-0.5..0.5);
            let s = (0..n)
                .map(|_| mean + 0.5 * shared + 0.5 * r.random_range(-0.5..0.5))
                .sum();
            (s, n)
        }),
    }
}

fn median(mut v: Vec<usize>) -> Option<usize> {
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

fn efficiency(settings: &[Setting], alpha: f64) {
    let streams = 400;
    let cap = 40_000;
    println!(
        "units to a decision, median of {streams} streams (cap {cap}), per-arm level α/41 = {alpha:.5}:"
    );
    println!(
        "{:<34} {:>8} {:>10} {:>8} {:>10} {:>10} {:>8}",
        "setting", "ablate", "reference", "ratio", "old CS", "projected", "proj/med"
    );
    for s in settings {
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        let (mut ours, mut theirs, mut old) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..streams {
            let units: Vec<Unit> = (0..cap).map(|_| (s.draw)(&mut rng)).collect();
            ours.push(ablate_units(&units, s.thr, s.n_max, alpha).unwrap_or(cap));
            theirs.push(reference_units(&units, s.thr, s.n_max, alpha).unwrap_or(cap));
            old.push(sequence_units(&units, s.thr, alpha).unwrap_or(cap));
        }
        let (m_ours, m_ref, m_old) = (median(ours), median(theirs), median(old));
        let projected = s
            .moments
            .and_then(|(mean, sd)| expected_cases(mean, sd, s.thr, 1.0, alpha, 10_000_000));
        let ratio = |a: Option<usize>, b: Option<usize>| match (a, b) {
            (Some(a), Some(b)) => format!("{:.3}", a as f64 / b as f64),
            _ => "—".into(),
        };
        println!(
            "{:<34} {:>8} {:>10} {:>8} {:>10} {:>10} {:>8}",
            s.name,
            m_ours.map_or("—".into(), |m| m.to_string()),
            m_ref.map_or("—".into(), |m| m.to_string()),
            ratio(m_ours, m_ref),
            m_old.map_or("—".into(), |m| m.to_string()),
            projected.map_or("—".into(), |p| p.to_string()),
            ratio(projected.map(|p| p as usize), m_ours),
        );
    }
}

fn null_rates(settings: &[Setting]) {
    let streams = 10_000;
    let n_max_units = 5_000;
    println!(
        "\nnull streams (mean drop exactly on the threshold: any decision is wrong), {streams} each, up to {n_max_units} units:"
    );
    println!(
        "{:<34} {:>9} {:>9} {:>9} {:>9}",
        "shape", "α", "decided", "rate", "≤ α?"
    );
    for s in settings {
        for alpha in [0.05, 0.05 / 41.0] {
            let mut rng = ChaCha8Rng::seed_from_u64(23);
            let mut wrong = 0;
            for _ in 0..streams {
                let mut t = ThresholdTests::new(s.thr, 1.0, s.n_max, alpha);
                for _ in 0..n_max_units {
                    let (sum, n) = (s.draw)(&mut rng);
                    t.push(sum, n);
                    if t.needed() || t.removable() {
                        wrong += 1;
                        break;
                    }
                }
            }
            let rate = wrong as f64 / streams as f64;
            println!(
                "{:<34} {:>9.5} {:>9} {:>8.3}% {:>9}",
                s.name,
                alpha,
                wrong,
                100.0 * rate,
                if rate <= alpha { "yes" } else { "NO" }
            );
        }
    }
}

/// The largest expected log-growth per unit, `max_λ mean log(1 + λy)` over 0 ≤ λ < 1/`loss`, of
/// a constant bet on totals `ys` (concave in λ: ternary search).
fn kelly_growth(ys: &[f64], loss: f64) -> f64 {
    let growth = |l: f64| ys.iter().map(|y| (l * y).ln_1p()).sum::<f64>() / ys.len() as f64;
    let (mut lo, mut hi) = (0.0, (1.0 - 1e-9) / loss);
    for _ in 0..200 {
        let (a, b) = (lo + (hi - lo) / 3.0, hi - (hi - lo) / 3.0);
        if growth(a) < growth(b) {
            lo = a;
        } else {
            hi = b;
        }
    }
    growth(0.5 * (lo + hi))
}

/// Section 3: the oracle's arms decided and calls saved on the demo, beside ablate's replay.
fn demo_ceiling() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("notebooks-data/support-eval-v3");
    let exp = ablate::io::Experiment::load(&dir).expect("the demo loads");
    let m = &exp.results.matrix;
    let base = exp.baseline_index();
    let thr = exp.manifest.threshold_drop;
    let span = exp.manifest.score_max - exp.manifest.score_min;
    let codes = exp
        .cases
        .cluster_code
        .as_ref()
        .expect("the demo has clusters");
    let main: Vec<usize> = (0..m.n_cases).filter(|&c| !exp.cases.stress[c]).collect();
    let mut sizes = std::collections::BTreeMap::<u32, usize>::new();
    for &c in &main {
        *sizes.entry(codes[c]).or_default() += 1;
    }
    let index: std::collections::BTreeMap<u32, usize> =
        sizes.keys().enumerate().map(|(i, &k)| (k, i)).collect();
    let n_max = sizes.values().copied().max().unwrap_or(1);
    let units = sizes.len();
    let arms: Vec<usize> = (0..m.n_arms).filter(|&a| a != base).collect();
    let k = arms.len() as f64;
    let alpha = 0.05;
    // Each arm's cluster totals Y = S − thr·n (complete cells only, as `watch` reads them).
    let totals: Vec<Vec<f64>> = arms
        .iter()
        .map(|&a| {
            let mut ys: Vec<f64> = sizes.values().map(|&n| -thr * n as f64).collect();
            for &c in &main {
                ys[index[&codes[c]]] += m.mean[m.cell(c, base)] - m.mean[m.cell(c, a)];
            }
            ys
        })
        .collect();
    println!(
        "\nthe demo's ceiling: {} arms, {units} clusters of at most {n_max} cases, threshold {thr}, α = {alpha}",
        arms.len()
    );
    println!(
        "{:<44} {:>10} {:>8} {:>8}",
        "bound on a cluster's total, α per test", "decided", "saving", "valid?"
    );
    let rows = [
        ("largest cluster (5 cases), α/2K", n_max, 2.0, "yes"),
        ("largest cluster (5 cases), α/K", n_max, 1.0, "no"),
        ("one case, α/2K", 1, 2.0, "no"),
    ];
    for (name, bound_cases, split, valid) in rows {
        let log_bar = (split * k / alpha).ln();
        let fractions: Vec<f64> = totals
            .iter()
            .map(|ys| {
                let up = ys.iter().sum::<f64>() > 0.0;
                let (loss, signed): (f64, Vec<f64>) = if up {
                    (bound_cases as f64 * (span + thr), ys.clone())
                } else {
                    (
                        bound_cases as f64 * (span - thr),
                        ys.iter().map(|y| -y).collect(),
                    )
                };
                let g = kelly_growth(&signed, loss);
                let expected = if g > 0.0 { log_bar / g } else { f64::INFINITY };
                (expected / units as f64).min(1.0)
            })
            .collect();
        let decided = fractions.iter().filter(|&&f| f < 1.0).count();
        // As `watch --replay` counts: each arm's calls, plus the baseline on every unit any arm
        // read, against (arms + baseline) × the set.
        let spent = fractions.iter().sum::<f64>() + fractions.iter().copied().fold(0.0, f64::max);
        let saving = 1.0 - spent / (k + 1.0);
        println!(
            "{:<44} {:>10} {:>7.1}% {:>8}",
            name,
            decided,
            100.0 * saving,
            valid
        );
    }
    // The projection `watch` and `plan --sequential` make on cluster totals
    // (`ThresholdTests::expected_units_like`), against the median of 400 streams drawn with
    // replacement from the arm's own totals, for every arm projected within 4× the set.
    println!(
        "\nprojection on cluster totals vs simulated median (400 streams resampled from each arm's clusters, α/{}):",
        arms.len()
    );
    println!(
        "{:<34} {:>10} {:>10} {:>9}",
        "arm", "projected", "median", "ratio"
    );
    let alpha_arm = alpha / k;
    let mut rng = ChaCha8Rng::seed_from_u64(29);
    for (&a, ys) in arms.iter().zip(&totals) {
        let units: Vec<Unit> = ys
            .iter()
            .zip(sizes.values())
            .map(|(&y, &n)| (y + thr * n as f64, n))
            .collect();
        let tests = ThresholdTests::new(thr, span, n_max, alpha_arm);
        let Some(projected) = tests.expected_units_like(&units, 4 * units.len() as u64) else {
            continue;
        };
        let cap = 100 * units.len();
        let times: Vec<usize> = (0..400)
            .map(|_| {
                let mut t = ThresholdTests::new(thr, span, n_max, alpha_arm);
                (1..=cap)
                    .find(|_| {
                        let (s, n) = units[rng.random_range(0..units.len())];
                        t.push(s, n);
                        t.needed() || t.removable()
                    })
                    .unwrap_or(cap)
            })
            .collect();
        let med = median(times).unwrap_or(cap);
        println!(
            "{:<34} {:>10} {:>10} {:>9.3}",
            exp.results.arms[a],
            projected,
            med,
            projected as f64 / med as f64
        );
    }
}

fn main() {
    if std::env::args().any(|a| a == "demo") {
        demo_ceiling();
        return;
    }
    let alpha = 0.05 / 41.0;
    let thr = 0.02;
    let settings = vec![
        uniform(thr, 0.05, 0.21),
        uniform(thr, 0.02, 0.14),
        uniform(thr, 0.01, 0.11),
        uniform(thr, -0.01, 0.05),
        uniform(thr, 0.1, 0.3),
        uniform(thr, -0.02, 0.1),
        sparse(0.0, 0.3),
        sparse(0.0, -0.3),
        clustered(thr, 0.05),
        clustered(thr, -0.02),
    ];
    efficiency(&settings, alpha);
    let nulls = vec![
        uniform(thr, 0.0, 0.35),
        uniform(thr, 0.0, 0.1),
        sparse(0.0, 0.0),
        clustered(thr, 0.0),
    ];
    null_rates(&nulls);
    demo_ceiling();
}
