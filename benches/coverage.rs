//! Coverage and error rates of the intervals and verdicts `sweep` reports, by simulation
//! (`cargo bench --profile dev --bench coverage`; REPS=… for more replications, TABLES=coverage,
//! family,demo for some of them; the tables are in benches/README.md).
//!
//! 1. **Coverage at every n.** Per cell (units n = 2 … 100; binary, three-valued and continuous
//!    paired drops; cases as units, or clusters of 1–4 cases with a cluster effect), R samples whose
//!    true case-level mean drop is exactly the threshold. For each: the arm's CI as `sweep`
//!    reports it (`Paired::estimate`: score or t below 100 units, the joint-bootstrap percentile
//!    from 100) and whether it covers the truth; the interval the verdict rests on for a single
//!    arm (`Paired::family` of one: score or t at 1 − α) and whether it covers; how often the
//!    verdict is confident (at the threshold any confident verdict is at risk of being wrong).
//!    Beside them, the percentile bootstrap the sweep used at every n before.
//! 2. **Family-wise error.** K arms all at the threshold, correlated through a shared baseline
//!    (or a shared case effect): the share of experiments with any confident verdict, judged by
//!    each arm's own interval (`--per-arm`), by ablate's family intervals (`Paired::family`,
//!    Bonferroni over score or t), and by the joint bootstrap's max-|t| band (the alternative the
//!    issue names), with the mean half-width of the family interval relative to the band's.
//! 4. **The two guarantees at every n** (`TABLES=normalcov`): the `normal` interval's coverage and
//!    width against the plain clustered t interval, and the any-distribution interval's width
//!    against t's and against the unseen-mass floor ln(2/α)/n, in the worlds of table 1.
//! 3. **The demo as the world.** The demo's 41 arms, each arm's per-case drops shifted so its mean
//!    drop over the demo's 500 cases is exactly the threshold; R experiments resample the 397
//!    clusters with replacement and are judged as `sweep` judges them. Any confident verdict is at
//!    risk of being wrong; the family-wise rate should stay at or under α.

use ablate::analysis::paired::{BOOTSTRAP_MIN_UNITS, MIN_UNITS_TO_DECIDE, Paired, Sample};
use ablate::analysis::vocab::{Confidence, judge};
use ablate::io::prelude::*;
use ablate::stats::bootstrap::{self, RatioSums};
use ablate::stats::estimate::Estimate;
use ablate::stats::moments;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const THR: f64 = 0.02;
const CONFIDENCE: f64 = 0.95;
/// Resamples of the percentile bootstrap (the max-|t| band's too).
const B: usize = 1000;

/// Resamples of the percentile intervals in the coverage table (many cells, small samples).
const B_COVERAGE: usize = 400;

/// Per-case drops and their units for one sample of a shape.
struct Draw {
    values: Vec<f64>,
    units: Vec<u32>,
}

#[derive(Clone, Copy, Debug)]
enum Shape {
    /// 0/1 scores, one repeat: discordant pairs 10% + 12% (d = −1, +1).
    Binary,
    /// The same, rare: 2% + 4%.
    BinaryRare,
    /// Two repeats: d in {−1, −½, 0, ½, 1}, mostly 0.
    Three,
    /// Continuous judge scores: d ~ N(threshold, 0.25²).
    Continuous,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::Binary => "binary",
            Shape::BinaryRare => "binary, rare changes",
            Shape::Three => "three-valued",
            Shape::Continuous => "continuous",
        }
    }

    /// One case's drop, with `spread` scaling how often (or how much) cases change.
    fn case(self, r: &mut ChaCha8Rng, spread: f64) -> f64 {
        match self {
            Shape::Binary | Shape::BinaryRare => {
                let q = if matches!(self, Shape::Binary) {
                    0.10
                } else {
                    0.02
                } * spread;
                let u: f64 = r.random();
                if u < q + THR {
                    1.0
                } else if u < 2.0 * q + THR {
                    -1.0
                } else {
                    0.0
                }
            }
            Shape::Three => {
                // P(±1) = 0.03, P(+½) = 0.10 + 2·THR, P(−½) = 0.10, the first and last two
                // scaled by spread: mean ½·2·THR = THR.
                let (p1, ph) = (0.03 * spread, 0.10 * spread);
                let u: f64 = r.random();
                let cut = [p1, p1, ph + 2.0 * THR, ph];
                let vals = [1.0, -1.0, 0.5, -0.5];
                let mut acc = 0.0;
                for (c, v) in cut.iter().zip(vals) {
                    acc += c;
                    if u < acc {
                        return v;
                    }
                }
                0.0
            }
            Shape::Continuous => THR + 0.25 * spread * normal(r),
        }
    }
}

fn normal(r: &mut ChaCha8Rng) -> f64 {
    // Box–Muller.
    let (u, v): (f64, f64) = (r.random::<f64>().max(1e-300), r.random());
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// A sample of `n` units: cases, or clusters of 1–4 cases whose spread varies by cluster (the
/// mean drop of every case stays at the threshold, so the case-level mean is exactly on it).
fn draw(r: &mut ChaCha8Rng, shape: Shape, n: usize, clustered: bool) -> Draw {
    let (mut values, mut units) = (Vec::new(), Vec::new());
    for u in 0..n {
        let (size, spread) = if clustered {
            (r.random_range(1..=4), 0.5 + r.random::<f64>())
        } else {
            (1, 1.0)
        };
        for _ in 0..size {
            values.push(shape.case(r, spread));
            units.push(u as u32);
        }
    }
    Draw { values, units }
}

/// ablate's marginal estimate (the arm's own CI, as sweep reports it), the interval its verdict
/// rests on for a single arm (the family of one: score or t at 1 − α), and the percentile
/// bootstrap's interval at every n, for comparison.
fn estimate(d: &Draw, seed: u64) -> (Estimate, Estimate, Option<(f64, f64)>) {
    let clustered = Paired::distinct_units(&d.units) < d.values.len();
    let (mean, se) = moments::mean_se(&d.values, clustered.then_some(&d.units[..]));
    let n_units = Paired::distinct_units(&d.units);
    let mut sums = RatioSums::new(n_units, 1);
    for (u, v) in d.units.iter().zip(&d.values) {
        sums.add(*u as usize, 0, *v, 1.0);
    }
    let draws = bootstrap::run(&sums, B_COVERAGE, seed, &|_| {});
    let percentile = se.and(draws.percentile_ci(0, CONFIDENCE));
    let sample = Sample {
        point: mean,
        se,
        values: &d.values,
        units: &d.units,
        reach: (-1.0, 1.0),
    };
    (
        Paired::estimate(
            &sample,
            Some(draws.percentile_ci(0, CONFIDENCE)),
            CONFIDENCE,
        ),
        Paired::family(&sample, 1, CONFIDENCE),
        percentile,
    )
}

fn coverage(reps: usize) {
    println!(
        "coverage of the {}% intervals and confident verdicts at the threshold ({reps} samples per cell; threshold {THR}):",
        CONFIDENCE * 100.0
    );
    println!(
        "{:<22} {:>9} {:>5} {:>27} {:>9} {:>9} {:>10} {:>7}",
        "scores", "units", "n", "arm's CI", "coverage", "verdict", "confident", "before"
    );
    let mut worst: f64 = 1.0;
    let mut worst_confident: f64 = 0.0;
    let mut seed = 1u64;
    let covers = |e: &Estimate| {
        e.ci_low.unwrap_or(f64::NEG_INFINITY) <= THR && THR <= e.ci_high.unwrap_or(f64::INFINITY)
    };
    for clustered in [false, true] {
        for shape in [
            Shape::Binary,
            Shape::BinaryRare,
            Shape::Three,
            Shape::Continuous,
        ] {
            for n in [2usize, 3, 5, 10, 20, 40, 100] {
                let mut r = ChaCha8Rng::seed_from_u64(seed);
                seed += 1;
                let (mut covered, mut covered_verdict) = (0usize, 0usize);
                let (mut confident, mut before) = (0usize, 0usize);
                let mut methods = std::collections::BTreeSet::new();
                for i in 0..reps {
                    let d = draw(&mut r, shape, n, clustered);
                    let (e, v, pct) = estimate(&d, seed * 1_000_003 + i as u64);
                    methods.insert(e.ci_method.as_str());
                    covered += usize::from(covers(&e));
                    covered_verdict += usize::from(covers(&v));
                    let (_, c) = judge(moments::mean(&d.values), THR, &v, n);
                    confident += usize::from(c == Confidence::Confident);
                    before += usize::from(pct.is_some_and(|(a, b)| a <= THR && THR <= b));
                }
                let cov = covered as f64 / reps as f64;
                let cov_v = covered_verdict as f64 / reps as f64;
                let conf = confident as f64 / reps as f64;
                worst = worst.min(cov).min(cov_v);
                worst_confident = worst_confident.max(conf);
                let method: Vec<&str> = methods.into_iter().collect();
                println!(
                    "{:<22} {:>9} {:>5} {:>27} {:>9.3} {:>9.3} {:>10.4} {:>7.3}",
                    shape.name(),
                    if clustered { "clusters" } else { "cases" },
                    n,
                    method.join("/"),
                    cov,
                    cov_v,
                    conf,
                    before as f64 / reps as f64
                );
            }
        }
    }
    println!(
        "lowest coverage: {worst:.3}; highest confident rate at the threshold: {worst_confident:.4} (the arm's CI is the percentile bootstrap from {BOOTSTRAP_MIN_UNITS} units; no verdict is confident below {MIN_UNITS_TO_DECIDE} units)\n"
    );
}

/// K arms at the threshold sharing a baseline (binary: per case a baseline pass, each arm flips
/// it; continuous: a shared case effect plus the arm's noise), over n units.
fn family_draw(r: &mut ChaCha8Rng, shape: Shape, n: usize, k: usize, clustered: bool) -> Vec<Draw> {
    let mut arms: Vec<Draw> = (0..k)
        .map(|_| Draw {
            values: Vec::new(),
            units: Vec::new(),
        })
        .collect();
    for u in 0..n {
        let (size, spread) = if clustered {
            (r.random_range(1..=4), 0.5 + r.random::<f64>())
        } else {
            (1, 1.0)
        };
        for _ in 0..size {
            let shared = normal(r);
            for a in arms.iter_mut() {
                let v = match shape {
                    Shape::Continuous => THR + 0.15 * spread * shared + 0.2 * spread * normal(r),
                    s => s.case(r, spread),
                };
                a.values.push(v);
                a.units.push(u as u32);
            }
        }
    }
    arms
}

fn family(reps: usize) {
    let k = 30;
    println!(
        "family-wise error: {k} arms all at the threshold, {reps} experiments per row; share with any confident verdict (should be ≤ {:.2}):",
        1.0 - CONFIDENCE
    );
    println!(
        "{:<22} {:>9} {:>5} {:>9} {:>9} {:>9} {:>14}",
        "scores", "units", "n", "per-arm", "family", "max-|t|", "width vs band"
    );
    let mut seed = 10_000u64;
    for clustered in [false, true] {
        for shape in [Shape::Binary, Shape::BinaryRare, Shape::Continuous] {
            for n in [20usize, 100, 400] {
                let mut r = ChaCha8Rng::seed_from_u64(seed);
                seed += 1;
                let (mut per_arm, mut fam, mut band) = (0usize, 0usize, 0usize);
                let (mut width_family, mut width_band) = (0.0, 0.0);
                for i in 0..reps {
                    let arms = family_draw(&mut r, shape, n, k, clustered);
                    let n_units = n;
                    let mut sums = RatioSums::new(n_units, k);
                    let mut stats = Vec::with_capacity(k);
                    for (j, d) in arms.iter().enumerate() {
                        for (u, v) in d.units.iter().zip(&d.values) {
                            sums.add(*u as usize, j, *v, 1.0);
                        }
                        let (mean, se) =
                            moments::mean_se(&d.values, clustered.then_some(&d.units[..]));
                        stats.push((mean, se));
                    }
                    let draws = bootstrap::run(&sums, B, seed * 7 + i as u64, &|_| {});
                    let columns: Vec<Vec<f64>> = (0..k).map(|j| draws.column(j)).collect();
                    // max-|t| band: the 95% quantile over resamples of max_k |θ*ₖ − θ̂ₖ|/seₖ.
                    let mut maxima: Vec<f64> = (0..B)
                        .map(|b| {
                            (0..k)
                                .filter_map(|j| {
                                    let (m, se) = stats[j];
                                    let se = se.filter(|s| *s > 0.0)?;
                                    Some(((columns[j][b] - m) / se).abs())
                                })
                                .fold(0.0, f64::max)
                        })
                        .collect();
                    maxima.sort_by(f64::total_cmp);
                    let c = maxima[((B as f64) * CONFIDENCE) as usize];
                    let (mut any_arm, mut any_fam, mut any_band) = (false, false, false);
                    for (j, d) in arms.iter().enumerate() {
                        let (mean, se) = stats[j];
                        let sample = Sample {
                            point: mean,
                            se,
                            values: &d.values,
                            units: &d.units,
                            reach: (-1.0, 1.0),
                        };
                        let percentile = {
                            let mut v: Vec<f64> =
                                columns[j].iter().copied().filter(|x| !x.is_nan()).collect();
                            v.sort_by(f64::total_cmp);
                            let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
                            (!v.is_empty()).then(|| (q(0.025), q(0.975)))
                        };
                        let own = Paired::estimate(&sample, Some(percentile), CONFIDENCE);
                        let f = Paired::family(&sample, k, CONFIDENCE);
                        any_arm |= judge(mean, THR, &own, n_units).1 == Confidence::Confident;
                        any_fam |= judge(mean, THR, &f, n_units).1 == Confidence::Confident;
                        if let (Some(se), Some(lo), Some(hi)) = (se, f.ci_low, f.ci_high) {
                            width_family += (hi - lo) / 2.0;
                            width_band += c * se;
                            any_band |= mean - c * se > THR || mean + c * se < THR;
                        }
                    }
                    per_arm += usize::from(any_arm);
                    fam += usize::from(any_fam);
                    band += usize::from(any_band);
                }
                println!(
                    "{:<22} {:>9} {:>5} {:>9.3} {:>9.3} {:>9.3} {:>14.2}",
                    shape.name(),
                    if clustered { "clusters" } else { "cases" },
                    n,
                    per_arm as f64 / reps as f64,
                    fam as f64 / reps as f64,
                    band as f64 / reps as f64,
                    width_family / width_band
                );
            }
        }
    }
    println!();
}

/// Drops of `k` arms over `n` clusters of 1–5 cases: arm j's per-case drop is `means[j]` plus a
/// shared cluster effect and noise scaled by `sd` (continuous), or a binary change: a loss (+1)
/// with probability q + `means[j]` and a gain (−1) with probability q (q = 0.10; 0.02 for
/// `rare-2%`, 0.005 for `rare`: a handful of changed cases).
fn guarantee_draw(r: &mut ChaCha8Rng, world: &str, n: usize, means: &[f64], sd: f64) -> Vec<Draw> {
    let k = means.len();
    let mut arms: Vec<Draw> = (0..k)
        .map(|_| Draw {
            values: Vec::new(),
            units: Vec::new(),
        })
        .collect();
    for u in 0..n {
        let size = r.random_range(1..=5);
        let cluster = normal(r);
        for _ in 0..size {
            for (j, a) in arms.iter_mut().enumerate() {
                let v = match world {
                    "continuous" => means[j] + sd * (0.6 * cluster + 0.8 * normal(r)),
                    w => {
                        let q = match w {
                            "rare" => 0.005,
                            "rare-2%" => 0.02,
                            _ => 0.10,
                        };
                        let x: f64 = r.random();
                        if x < q + means[j] {
                            1.0
                        } else if x < 2.0 * q + means[j] {
                            -1.0
                        } else {
                            0.0
                        }
                    }
                };
                a.values.push(v);
                a.units.push(u as u32);
            }
        }
    }
    arms
}

/// The two guarantees side by side (issue 45): in each world, K arms, some at the threshold
/// (a confident verdict on them is a family-wise error) and some truly removable (their true drop
/// 0.01 below the threshold: finding them confidently removable is power), judged by the
/// any-distribution family intervals and by the normal approximation's (the clustered t at
/// 1 − α/K); with the share of experiments where `sweep.normal_doubtful` fires and the mean
/// family half-width of each guarantee relative to the plain clustered t interval's.
fn guarantees(reps: usize) {
    use ablate::analysis::paired::Intervals;
    let thr = 0.01;
    println!(
        "the two guarantees: K arms, 400 clusters of 1–5 cases, threshold {thr}; {reps} experiments per row"
    );
    println!(
        "{:<12} {:>4} {:>9} {:>11} {:>11} {:>11} {:>11} {:>9} {:>9} {:>9}",
        "world",
        "K",
        "removable",
        "FWE any",
        "FWE normal",
        "power any",
        "power norm",
        "doubted",
        "w any/t",
        "w norm/t"
    );
    for (seed, (world, k, removable, sd)) in (40_000u64..).zip([
        ("continuous", 41usize, 10usize, 0.05),
        ("continuous", 10, 3, 0.05),
        ("binary", 10, 3, 0.0),
        ("rare-2%", 10, 3, 0.0),
        ("rare", 10, 3, 0.0),
        ("rare", 41, 10, 0.0),
    ]) {
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        let means: Vec<f64> = (0..k)
            .map(|j| if j < removable { thr - 0.01 } else { thr })
            .collect();
        let (mut fwe_any, mut fwe_normal, mut doubted) = (0usize, 0usize, 0usize);
        let (mut found_any, mut found_normal) = (0usize, 0usize);
        let (mut w_any, mut w_normal, mut w_t) = (0.0, 0.0, 0.0);
        for _ in 0..reps {
            let arms = guarantee_draw(&mut r, world, 400, &means, sd);
            let (mut any_err, mut normal_err, mut doubt) = (false, false, false);
            for (j, d) in arms.iter().enumerate() {
                let (mean, se) = moments::mean_se(&d.values, Some(&d.units[..]));
                let sample = Sample {
                    point: mean,
                    se,
                    values: &d.values,
                    units: &d.units,
                    reach: (-1.0, 1.0),
                };
                let iv = Intervals::new(&sample);
                let fa = iv.family(k, CONFIDENCE);
                let fnorm = iv.normal_family(k, CONFIDENCE);
                doubt |= iv.normal_doubtful();
                let confident_removable = |e: &Estimate| {
                    let (v, c) = judge(mean, thr, e, 400);
                    c == Confidence::Confident && v == ablate::analysis::vocab::Verdict::Removable
                };
                let confident = |e: &Estimate| judge(mean, thr, e, 400).1 == Confidence::Confident;
                if j < removable {
                    found_any += usize::from(confident_removable(&fa));
                    found_normal += usize::from(confident_removable(&fnorm));
                } else {
                    any_err |= confident(&fa);
                    normal_err |= confident(&fnorm);
                }
                if let (Some(a0), Some(a1), Some(n0), Some(n1), Some(se)) =
                    (fa.ci_low, fa.ci_high, fnorm.ci_low, fnorm.ci_high, se)
                {
                    let level = 1.0 - (1.0 - CONFIDENCE) / k as f64;
                    let t = ablate::stats::interval::t_two_sided(level, 399.0) * se;
                    w_any += (a1 - a0) / 2.0;
                    w_normal += (n1 - n0) / 2.0;
                    w_t += t;
                }
            }
            fwe_any += usize::from(any_err);
            fwe_normal += usize::from(normal_err);
            doubted += usize::from(doubt);
        }
        let share = |x: usize| x as f64 / reps as f64;
        let power = |x: usize| {
            if removable == 0 {
                f64::NAN
            } else {
                x as f64 / (reps * removable) as f64
            }
        };
        println!(
            "{:<12} {:>4} {:>9} {:>11.3} {:>11.3} {:>11.3} {:>11.3} {:>9.3} {:>9.2} {:>9.2}",
            world,
            k,
            removable,
            share(fwe_any),
            share(fwe_normal),
            power(found_any),
            power(found_normal),
            share(doubted),
            w_any / w_t,
            w_normal / w_t
        );
    }
    println!();
}

/// The demo's main-set clusters, each the positions of its paired cases.
fn cluster_members(paired: &Paired) -> Vec<Vec<usize>> {
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); paired.n_units];
    for (i, &u) in paired.unit.iter().enumerate() {
        members[u as usize].push(i);
    }
    members
}

/// One arm's drop at each position among the paired cases (`None` where it has no result).
fn drops_at(paired: &Paired, p: &ablate::analysis::paired::PairedArm) -> Vec<Option<f64>> {
    let mut drop_at = vec![None; paired.cases.len()];
    for (&pos, &v) in p.pos.iter().zip(&p.drop) {
        drop_at[pos] = Some(v);
    }
    drop_at
}

/// Clusters drawn with replacement until they hold `n` of the arm's paired cases: each drawn
/// case's position and drop, and its cluster's number in the draw.
fn resample_to(
    n: u64,
    members: &[Vec<usize>],
    drop_at: &[Option<f64>],
    r: &mut ChaCha8Rng,
) -> (Vec<usize>, Vec<f64>, Vec<u32>) {
    let (mut positions, mut values, mut units) = (Vec::new(), Vec::new(), Vec::new());
    let mut c = 0u32;
    while (values.len() as u64) < n {
        let pick = r.random_range(0..members.len());
        for &i in &members[pick] {
            if let Some(v) = drop_at[i] {
                positions.push(i);
                values.push(v);
                units.push(c);
            }
        }
        c += 1;
    }
    (positions, values, units)
}

/// The settled shares' median and range, after a calibration table.
fn print_settled(mut rates: Vec<f64>) {
    if rates.is_empty() {
        println!("settled: no arm has a figure to check\n");
        return;
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "settled: median {:.3}, lowest {:.3}, highest {:.3} over {} arms\n",
        rates[rates.len() / 2],
        rates[0],
        rates[rates.len() - 1],
        rates.len()
    );
}

/// Issue 45: do the cases the decision says would settle an arm settle it? For each inconclusive
/// arm of the demo with a `cases_to_settle` N, `reps` experiments resample the demo's clusters
/// (with replacement) until they hold N cases, and judge the arm's family interval (K = the
/// sweep's family, any-distribution) as `sweep` does; the share that comes out confident should
/// be 0.8 ± 0.1.
fn settle_calibration(reps: usize) {
    use ablate::analysis::paired::{CaseSet, Intervals};
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("notebooks-data/support-eval-v3");
    let exp = ablate::io::Experiment::load(&dir).expect("the demo loads");
    let cfg = ablate::analysis::Config {
        bootstrap: 0,
        ..Default::default()
    };
    let t0 = std::time::Instant::now();
    let sweep = ablate::analysis::sweep::run(&exp, &cfg);
    let t_sweep = t0.elapsed();
    let interactions = ablate::analysis::interactions::run(&exp, &cfg).expect("interactions");
    let t1 = std::time::Instant::now();
    let decision = ablate::analysis::decision::run(&exp, &sweep, None, None, &interactions, None);
    println!(
        "(the decision, with its settling figures, took {:.0} ms; the sweep without resamples {:.0} ms)",
        t1.elapsed().as_secs_f64() * 1e3,
        t_sweep.as_secs_f64() * 1e3
    );
    let m = &exp.results.matrix;
    let paired = Paired::new(&exp, CaseSet::Main);
    let thr = exp.manifest.threshold_drop;
    let k = sweep.family.size;
    let members = cluster_members(&paired);
    println!(
        "cases to settle, checked: each inconclusive arm of the demo resampled to its cases_to_settle, {reps} experiments each (target 0.8 ± 0.1)"
    );
    println!("{:<34} {:>8} {:>9}", "arm", "cases", "settled");
    let mut r = ChaCha8Rng::seed_from_u64(45);
    let mut rates = Vec::new();
    for d in &decision.inconclusive {
        let Some(n) = d.cases_to_settle else {
            println!("{:<34} {:>8} {:>9}", d.arm, "—", "not within reach");
            continue;
        };
        let a = exp.results.arm_index(&d.arm).expect("an arm of the demo");
        let drop_at = drops_at(&paired, paired.arm(m, a));
        let mut settled = 0usize;
        for _ in 0..reps {
            let (_, values, units) = resample_to(n, &members, &drop_at, &mut r);
            let c = units.last().map_or(0, |&u| u + 1);
            let (mean, se) = moments::mean_se(&values, Some(&units));
            let sample = Sample {
                point: mean,
                se,
                values: &values,
                units: &units,
                reach: (-1.0, 1.0),
            };
            let f = Intervals::new(&sample).family(k, CONFIDENCE);
            settled += usize::from(judge(mean, thr, &f, c as usize).1 == Confidence::Confident);
        }
        let rate = settled as f64 / reps as f64;
        rates.push(rate);
        println!("{:<34} {:>8} {:>9.3}", d.arm, n, rate);
    }
    print_settled(rates);
}

/// Do the cases `reweight` says would settle an arm's production verdict settle it? The demo
/// under the normal guarantee (where production holds arms back): for each arm with a
/// `production_cases_to_settle` N, `reps` experiments resample the demo's clusters (with
/// replacement) until they hold N paired cases, post-stratify the drops to the demo's production
/// mix with their clustered se, and judge the production family interval (K = the sweep's
/// family) as `reweight` does; the share that comes out confident should be 0.8 ± 0.1. A
/// resample that misses a weighted stratum (or leaves one with a single case) counts as not
/// settled, and their number is printed. Drawing stops at the first cluster that reaches N, so a
/// resample holds up to one cluster more than N (at most 4 cases more on the demo, whose largest
/// main-set cluster has 5).
fn production_settle_calibration(reps: usize) {
    use ablate::analysis::paired::{CaseSet, Intervals};
    use ablate::io::manifest::Guarantee;
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("notebooks-data/support-eval-v3");
    let exp = ablate::io::Experiment::load(&dir).expect("the demo loads");
    let guarantee = Guarantee::Normal;
    let cfg = ablate::analysis::Config {
        bootstrap: 0,
        guarantee: Some(guarantee),
        ..Default::default()
    };
    let sweep = ablate::analysis::sweep::run(&exp, &cfg);
    let k = sweep.family.size;
    let reweight = ablate::analysis::reweight::run(
        &exp,
        &ablate::analysis::reweight::ReweightOptions {
            confidence: CONFIDENCE,
            family: k,
            guarantee: Some(guarantee),
            ..Default::default()
        },
    )
    .expect("the demo reweights");
    let m = &exp.results.matrix;
    let paired = Paired::new(&exp, CaseSet::Main);
    let strata = ablate::analysis::reweight::production_strata(&exp, &paired, false)
        .expect("the demo's strata")
        .expect("the demo has a mix");
    let thr = exp.manifest.threshold_drop;
    let (lo, hi) = ablate::analysis::paired::experiment_score_bounds(&exp);
    let members = cluster_members(&paired);
    println!(
        "production cases to settle, checked: each arm production leaves open on the demo (normal guarantee) resampled to its production_cases_to_settle, {reps} experiments each (target 0.8 ± 0.1)"
    );
    println!("{:<34} {:>8} {:>9}", "arm", "cases", "settled");
    let mut r = ChaCha8Rng::seed_from_u64(4548);
    let mut rates = Vec::new();
    for x in &reweight.arms {
        let Some(n) = x.production_cases_to_settle else {
            if x.production_settleable == Some(false) {
                println!("{:<34} {:>8} {:>9}", x.arm, "—", "not within reach");
            }
            continue;
        };
        let a = exp.results.arm_index(&x.arm).expect("an arm of the demo");
        let drop_at = drops_at(&paired, paired.arm(m, a));
        let (mut settled, mut undefined) = (0usize, 0usize);
        for _ in 0..reps {
            let (positions, values, units) = resample_to(n, &members, &drop_at, &mut r);
            let stratum: Vec<usize> = positions.iter().map(|&i| strata.stratum[i]).collect();
            let (Some(d), Some(se)) = ablate::stats::survey::post_stratified(
                &values,
                &stratum,
                &strata.share,
                Some(&units),
            ) else {
                undefined += 1;
                continue;
            };
            let shift = d - moments::mean(&values);
            let recentred: Vec<f64> = values.iter().map(|v| v + shift).collect();
            let sample = Sample {
                point: d,
                se: Some(se),
                values: &recentred,
                units: &units,
                reach: (lo - hi + shift, hi - lo + shift),
            };
            let weights = ablate::stats::survey::post_stratified_weights(&stratum, &strata.share);
            let effective_units = ablate::stats::survey::kish_effective_units(&weights, &units);
            let design = ablate::analysis::paired::Design {
                jackknife: ablate::stats::survey::post_stratified_jackknife(
                    &values,
                    &stratum,
                    &strata.share,
                    &units,
                ),
                df: ablate::stats::survey::post_stratified_df(
                    &values,
                    &stratum,
                    &strata.share,
                    Some(&units),
                ),
                effective_units: Some(effective_units),
                weighting_deff: ablate::stats::survey::kish_deff(&weights),
            };
            let f = Intervals::weighted(&sample, (lo - hi, hi - lo), design)
                .family_under(guarantee, k, CONFIDENCE);
            let weighted_units = Paired::distinct_units(
                &units
                    .iter()
                    .zip(&stratum)
                    .filter(|&(_, &h)| strata.share[h] > 0.0)
                    .map(|(&u, _)| u)
                    .collect::<Vec<_>>(),
            );
            let units_judged = weighted_units.min(effective_units.floor() as usize);
            settled += usize::from(judge(d, thr, &f, units_judged).1 == Confidence::Confident);
        }
        let rate = settled as f64 / reps as f64;
        rates.push(rate);
        println!(
            "{:<34} {:>8} {:>9.3}{}",
            x.arm,
            n,
            rate,
            if undefined > 0 {
                format!("  ({undefined} resamples with a stratum empty or of one case)")
            } else {
                String::new()
            }
        );
    }
    print_settled(rates);
}

fn demo_null(reps: usize) {
    use ablate::analysis::paired::CaseSet;
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("notebooks-data/support-eval-v3");
    let exp = ablate::io::Experiment::load(&dir).expect("the demo loads");
    let m = &exp.results.matrix;
    let paired = Paired::new(&exp, CaseSet::Main);
    let thr = exp.manifest.threshold_drop;
    // Per arm: each case's drop, shifted so the arm's mean over the demo is the threshold.
    let arms: Vec<Vec<f64>> = (0..m.n_arms)
        .filter(|&a| a != paired.baseline)
        .map(|a| {
            let p = paired.arm(m, a);
            let mean = moments::mean(&p.drop);
            p.drop.iter().map(|d| d - mean + thr).collect()
        })
        .collect();
    let k = arms.len();
    // Cases of each cluster.
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); paired.n_units];
    for (i, &u) in paired.unit.iter().enumerate() {
        members[u as usize].push(i);
    }
    let mut r = ChaCha8Rng::seed_from_u64(99);
    let (mut per_arm, mut fam) = (0usize, 0usize);
    // Under `normal`: the family-wise error with every arm at the threshold, and the power with
    // every arm's drops shifted to a mean of 0 (truly removable by the threshold).
    let (mut fam_normal, mut found_any, mut found_normal) = (0usize, 0usize, 0usize);
    // Experiments where `sweep.normal_doubtful` names some arm, and wrong normal verdicts on arms
    // it names.
    let (mut doubted, mut wrong, mut wrong_doubted) = (0usize, 0usize, 0usize);
    for _ in 0..reps {
        let picks: Vec<usize> = (0..paired.n_units)
            .map(|_| r.random_range(0..paired.n_units))
            .collect();
        let mut units = Vec::new();
        let mut cases = Vec::new();
        for (new_id, &c) in picks.iter().enumerate() {
            for &i in &members[c] {
                units.push(new_id as u32);
                cases.push(i);
            }
        }
        let (mut any_arm, mut any_fam, mut any_normal, mut doubt) = (false, false, false, false);
        for d in &arms {
            let values: Vec<f64> = cases.iter().map(|&i| d[i]).collect();
            let zero: Vec<f64> = values.iter().map(|v| v - thr).collect();
            let (zmean, zse) = moments::mean_se(&zero, Some(&units));
            let zsample = Sample {
                point: zmean,
                se: zse,
                values: &zero,
                units: &units,
                reach: (-1.1, 1.1),
            };
            let ziv = ablate::analysis::paired::Intervals::new(&zsample);
            let removable = |e: &Estimate| {
                judge(zmean, thr, e, paired.n_units)
                    == (
                        ablate::analysis::vocab::Verdict::Removable,
                        Confidence::Confident,
                    )
            };
            found_any += usize::from(removable(&ziv.family(k, CONFIDENCE)));
            found_normal += usize::from(removable(&ziv.normal_family(k, CONFIDENCE)));
            let (mean, se) = moments::mean_se(&values, Some(&units));
            let sample = Sample {
                point: mean,
                se,
                values: &values,
                units: &units,
                reach: (-1.1, 1.1),
            };
            let own = Paired::estimate(&sample, None, CONFIDENCE);
            let f = Paired::family(&sample, k, CONFIDENCE);
            let n = paired.n_units;
            any_arm |= judge(mean, thr, &own, n).1 == Confidence::Confident;
            any_fam |= judge(mean, thr, &f, n).1 == Confidence::Confident;
            let iv = ablate::analysis::paired::Intervals::new(&sample);
            let fnorm = iv.normal_family(k, CONFIDENCE);
            let doubtful = iv.normal_doubtful();
            doubt |= doubtful;
            let wrong_here = judge(mean, thr, &fnorm, n).1 == Confidence::Confident;
            any_normal |= wrong_here;
            wrong += usize::from(wrong_here);
            wrong_doubted += usize::from(wrong_here && doubtful);
        }
        per_arm += usize::from(any_arm);
        fam += usize::from(any_fam);
        fam_normal += usize::from(any_normal);
        doubted += usize::from(doubt);
    }
    println!(
        "the demo as the world ({k} arms at the threshold {thr}, {} clusters resampled, {reps} experiments): any confident verdict — per arm {:.3}, family-wise {:.3}\n",
        paired.n_units,
        per_arm as f64 / reps as f64,
        fam as f64 / reps as f64
    );
    println!(
        "  under normal: family-wise {:.3}; sweep.normal_doubtful raised in {:.3} of experiments, on the arm of {wrong_doubted} of its {wrong} wrong confident verdicts; with every arm's drops shifted to 0 (removable by {thr}), power any-distribution {:.3}, normal {:.3}\n",
        fam_normal as f64 / reps as f64,
        doubted as f64 / reps as f64,
        found_any as f64 / (reps * k) as f64,
        found_normal as f64 / (reps * k) as f64
    );
}

/// Issue 45: the `normal` guarantee's interval at every n, beside the any-distribution one, on
/// the coverage table's worlds (truth at the threshold): coverage of each at 1 − α (K = 1), the
/// normal interval's half-width over the plain clustered t interval's (t(C − 1)·CR1 se; target
/// ≤ 1.1), and the any-distribution half-width over t's and over the unseen-mass floor
/// ln(2/α)/n, n the mean number of cases (the width no interval valid for every distribution of drops in [−1, 1] can go
/// below when no full-point loss has been seen).
fn normal_coverage(reps: usize) {
    use ablate::analysis::paired::Intervals;
    println!(
        "the two guarantees at every n ({reps} samples per cell; truth at the threshold {THR}; K = 1):"
    );
    println!(
        "{:<22} {:>9} {:>5} {:>10} {:>10} {:>9} {:>9} {:>11}",
        "scores", "units", "n", "cov normal", "cov any", "w norm/t", "w any/t", "w any/floor"
    );
    let mut seed = 70_000u64;
    let (mut worst_normal, mut worst_ratio) = (1.0f64, 0.0f64);
    for clustered in [false, true] {
        for shape in [
            Shape::Binary,
            Shape::BinaryRare,
            Shape::Three,
            Shape::Continuous,
        ] {
            for n in [2usize, 3, 5, 10, 20, 40, 100, 400] {
                let mut r = ChaCha8Rng::seed_from_u64(seed);
                seed += 1;
                let (mut cov_n, mut cov_a, mut cells) = (0usize, 0usize, 0usize);
                let (mut w_n, mut w_a, mut w_t) = (0.0, 0.0, 0.0);
                let mut cases = 0usize;
                for _ in 0..reps {
                    let d = draw(&mut r, shape, n, clustered);
                    cases += d.values.len();
                    let units = Paired::distinct_units(&d.units);
                    let (mean, se) = moments::mean_se(&d.values, clustered.then_some(&d.units[..]));
                    let sample = Sample {
                        point: mean,
                        se,
                        values: &d.values,
                        units: &d.units,
                        reach: (-1.0, 1.0),
                    };
                    let iv = Intervals::new(&sample);
                    let (normal, any) = (iv.normal_family(1, CONFIDENCE), iv.family(1, CONFIDENCE));
                    let covers = |e: &Estimate| {
                        e.ci_low.unwrap_or(f64::NEG_INFINITY) <= THR
                            && THR <= e.ci_high.unwrap_or(f64::INFINITY)
                    };
                    cov_n += usize::from(covers(&normal));
                    cov_a += usize::from(covers(&any));
                    if let (Some(se), Some(a), Some(b), Some(c), Some(e)) = (
                        se.filter(|s| *s > 0.0 && units >= 2),
                        normal.ci_low,
                        normal.ci_high,
                        any.ci_low,
                        any.ci_high,
                    ) {
                        w_t += ablate::stats::interval::t_two_sided(CONFIDENCE, (units - 1) as f64)
                            * se;
                        w_n += (b - a) / 2.0;
                        w_a += (e - c) / 2.0;
                        cells += 1;
                    }
                }
                // Per case: an unseen full-point loss is a share of the cases.
                let floor = (2.0 / (1.0 - CONFIDENCE)).ln() / (cases as f64 / reps as f64);
                let (cn, ca) = (cov_n as f64 / reps as f64, cov_a as f64 / reps as f64);
                worst_normal = worst_normal.min(cn);
                if cells > 0 {
                    worst_ratio = worst_ratio.max(w_n / w_t);
                }
                println!(
                    "{:<22} {:>9} {:>5} {:>10.3} {:>10.3} {:>9.2} {:>9.2} {:>11.2}",
                    shape.name(),
                    if clustered { "clusters" } else { "cases" },
                    n,
                    cn,
                    ca,
                    w_n / w_t,
                    w_a / w_t,
                    w_a / cells.max(1) as f64 / floor
                );
            }
        }
    }
    println!(
        "lowest normal coverage: {worst_normal:.3} (asymptotic: it may fall short at small n and on rare changes, where sweep.normal_doubtful warns); widest normal/t: {worst_ratio:.2}\n"
    );
}

/// Coverage of `reweight`'s production interval (post-stratified, `Intervals::weighted`) at
/// every number of units, under both guarantees: C units (cases, or clusters of 1–4 cases with a
/// shared effect), each unit in stratum 0 (two thirds) or 1, production shares 0.3 and 0.7; the
/// worlds' drops are named where they are drawn. A sample leaving a stratum with fewer than two
/// cases has no production se and is counted apart (`undef`). The interval as `reweight` judges
/// it since 2026-12-07 (the design se floored at the weighted mean's own jackknife, the t at
/// Satterthwaite's degrees of freedom; where either is undefined, the set's jackknife and
/// units − 1 degrees of freedom, counted in `fallback`) at K = 1 and 10; the design se alone
/// (units − 1 degrees of freedom); and the design se floored at the unweighted set's jackknife
/// (before), with the median ratio of its width to today's.
fn production_coverage(reps: usize) {
    use ablate::analysis::paired::{Design, Intervals};
    use ablate::io::manifest::Guarantee;
    let shares = [0.3, 0.7];
    println!(
        "reweight's production interval, post-stratified ({reps} samples per cell): coverage at K = 1 and K = 10 (design se floored at its jackknife, Satterthwaite df), at K = 1 on the design se alone (bare) and floored at the set's jackknife (before); w set/w the median ratio of the before interval's width to today's"
    );
    println!(
        "{:<11} {:>9} {:>5} {:<16} {:>8} {:>8} {:>9} {:>10} {:>11} {:>9} {:>9}",
        "drops",
        "units",
        "n",
        "guarantee",
        "K=1",
        "K=10",
        "K=1 bare",
        "K=1 set",
        "w set/w",
        "undef",
        "fallback"
    );
    let mut seed = 90_000u64;
    // `apart`: the strata's drops differ by 0.4, far more than the drops spread within.
    // `thin-rare`: one-way losses of a full point, 20% in stratum 0 and 3% in stratum 1 (a third
    // of the units, 70% of production), whose few cases often all drop 0.
    for (world, means) in [
        ("continuous", [0.0, 0.06]),
        ("binary", [0.0, 0.06]),
        ("apart", [0.0, 0.4]),
        ("thin-rare", [0.2, 0.03]),
    ] {
        let continuous = world == "continuous" || world == "apart";
        let truth = shares[0] * means[0] + shares[1] * means[1];
        for clustered in [false, true] {
            for n in [5usize, 10, 20, 40, 100, 400] {
                for guarantee in [Guarantee::AnyDistribution, Guarantee::Normal] {
                    let mut r = ChaCha8Rng::seed_from_u64(seed);
                    seed += 1;
                    let (mut c1, mut c10, mut cb, mut cf) = (0, 0, 0, 0);
                    let (mut undefined, mut defined, mut fell_back) = (0, 0, 0);
                    let mut widths = Vec::new();
                    for _ in 0..reps {
                        let (mut values, mut units, mut strata) =
                            (Vec::new(), Vec::new(), Vec::new());
                        for u in 0..n {
                            let h = usize::from(r.random::<f64>() >= 2.0 / 3.0);
                            let size = if clustered { r.random_range(1..=4) } else { 1 };
                            let effect = normal(&mut r);
                            for _ in 0..size {
                                let v = if continuous {
                                    means[h] + 0.1 * (0.6 * effect + 0.8 * normal(&mut r))
                                } else if world == "thin-rare" {
                                    f64::from(u8::from(r.random::<f64>() < means[h]))
                                } else {
                                    let x: f64 = r.random();
                                    if x < 0.1 + means[h] {
                                        1.0
                                    } else if x < 0.2 + means[h] {
                                        -1.0
                                    } else {
                                        0.0
                                    }
                                };
                                values.push(v);
                                units.push(u as u32);
                                strata.push(h);
                            }
                        }
                        let (Some(d), Some(se)) = ablate::stats::survey::post_stratified(
                            &values,
                            &strata,
                            &shares,
                            clustered.then_some(&units[..]),
                        ) else {
                            undefined += 1;
                            continue;
                        };
                        defined += 1;
                        let shift = d - moments::mean(&values);
                        let recentred: Vec<f64> = values.iter().map(|v| v + shift).collect();
                        let weights =
                            ablate::stats::survey::post_stratified_weights(&strata, &shares);
                        let (effective_units, weighting_deff) = (
                            Some(ablate::stats::survey::kish_effective_units(
                                &weights, &units,
                            )),
                            ablate::stats::survey::kish_deff(&weights),
                        );
                        let before = Design {
                            jackknife: moments::jackknife_se(&recentred, &units),
                            ..Design::default()
                        };
                        // As `reweight`: the weighted jackknife and Satterthwaite's df, or where
                        // either is undefined (a stratum without spread or in one cluster) the
                        // set's jackknife, judged for any score distribution whatever the
                        // guarantee (the set's se can be narrower than that stratum's truth).
                        let (design, judged_under) = match (
                            ablate::stats::survey::post_stratified_jackknife(
                                &values, &strata, &shares, &units,
                            ),
                            ablate::stats::survey::post_stratified_df(
                                &values,
                                &strata,
                                &shares,
                                clustered.then_some(&units[..]),
                            ),
                        ) {
                            (Some(j), Some(df)) => (
                                Design {
                                    jackknife: Some(j),
                                    df: Some(df),
                                    effective_units,
                                    weighting_deff,
                                },
                                guarantee,
                            ),
                            _ => {
                                fell_back += 1;
                                (
                                    Design {
                                        effective_units,
                                        weighting_deff,
                                        ..before
                                    },
                                    Guarantee::AnyDistribution,
                                )
                            }
                        };
                        let judged_as =
                            |guarantee: Guarantee, se: f64, design: Design, k: usize| {
                                let sample = Sample {
                                    point: d,
                                    se: Some(se),
                                    values: &recentred,
                                    units: &units,
                                    reach: (-1.0 + shift, 1.0 + shift),
                                };
                                Intervals::weighted(&sample, (-1.0, 1.0), design)
                                    .family_under(guarantee, k, CONFIDENCE)
                            };
                        let covers = |e: &Estimate| {
                            e.ci_low.unwrap_or(f64::NEG_INFINITY) <= truth
                                && truth <= e.ci_high.unwrap_or(f64::INFINITY)
                        };
                        let (one, ten) = (
                            judged_as(judged_under, se, design, 1),
                            judged_as(judged_under, se, design, 10),
                        );
                        let (bare, floor) = (
                            judged_as(guarantee, se, Design::default(), 1),
                            judged_as(guarantee, se, before, 1),
                        );
                        c1 += usize::from(covers(&one));
                        c10 += usize::from(covers(&ten));
                        cb += usize::from(covers(&bare));
                        cf += usize::from(covers(&floor));
                        if let (Some(a), Some(b), Some(c), Some(e)) =
                            (one.ci_low, one.ci_high, floor.ci_low, floor.ci_high)
                            && b > a
                        {
                            widths.push((e - c) / (b - a));
                        }
                    }
                    let rate = |c: usize| c as f64 / defined.max(1) as f64;
                    widths.sort_by(f64::total_cmp);
                    let median = widths.get(widths.len() / 2).copied().unwrap_or(f64::NAN);
                    println!(
                        "{:<11} {:>9} {:>5} {:<16} {:>8.3} {:>8.3} {:>9.3} {:>10.3} {:>11.2} {:>9} {:>9}",
                        world,
                        if clustered { "clusters" } else { "cases" },
                        n,
                        guarantee.name(),
                        rate(c1),
                        rate(c10),
                        rate(cb),
                        rate(cf),
                        median,
                        undefined,
                        fell_back
                    );
                }
            }
        }
    }
    println!();
}

fn main() {
    let reps: usize = std::env::var("REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000);
    let tables = std::env::var("TABLES").unwrap_or_else(|_| "coverage,family,demo".into());
    let start = std::time::Instant::now();
    if tables.contains("coverage") {
        coverage(reps);
    }
    if tables.contains("family") {
        family((reps / 4).max(100));
    }
    if tables.contains("demo") {
        demo_null((reps / 4).max(100));
    }
    if tables.contains("settle") {
        settle_calibration((reps / 20).max(50));
        production_settle_calibration((reps / 20).max(50));
    }
    if tables.contains("normalcov") {
        normal_coverage(reps.min(1000));
    }
    if tables.contains("guarantee") {
        guarantees((reps / 20).max(50));
    }
    if tables.contains("production") {
        production_coverage(reps.min(2000));
    }
    println!("took {:.0} s", start.elapsed().as_secs_f64());
}
