//! The confidence sequence's validity and stopping times, at a larger scale than the test
//! (`cargo bench --bench sequential`; results in benches/README.md).
//!
//! Null streams: the true drop sits exactly on the threshold, with bounded noise of three shapes;
//! every decision is wrong. Looked at after every observation up to 5,000. Alternatives: drops
//! 0.01–0.2 above or below the threshold; the median and 95th-percentile stopping times.

use ablate::stats::sequence::stopping_time;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One stream until it decides (+1 needed, −1 removable, 0 not within n_max) and when.
fn run(
    rng: &mut ChaCha8Rng,
    thr: f64,
    alpha: f64,
    n_max: usize,
    draw: &dyn Fn(&mut ChaCha8Rng) -> f64,
) -> (i8, usize) {
    let (d, n) = stopping_time((-1.0, 1.0), alpha, thr, n_max, || draw(rng));
    (d.map_or(0, |needed| if needed { 1 } else { -1 }), n)
}

fn main() {
    let thr = 0.005;
    let streams = 10_000;
    println!("null streams (drop = threshold {thr}), {streams} each, up to 5,000 observations:");
    println!(
        "{:<28} {:>8} {:>12} {:>10}",
        "noise", "alpha", "decided", "rate"
    );
    type Draw = Box<dyn Fn(&mut ChaCha8Rng) -> f64>;
    let shapes: Vec<(&str, Draw)> = vec![
        (
            "uniform ±0.6",
            Box::new(move |r: &mut ChaCha8Rng| thr + r.random_range(-0.6..0.6)),
        ),
        (
            "two-point ±0.3",
            Box::new(move |r: &mut ChaCha8Rng| {
                if r.random::<bool>() {
                    thr + 0.3
                } else {
                    thr - 0.3
                }
            }),
        ),
        // Like a per-case drop over 3 repeats: mostly 0, sometimes ±1/3, ±2/3, ±1 (scaled by
        // 0.99 so that threshold + step stays inside [−1, 1] and the mean is exactly on it).
        (
            "sparse thirds (demo-like)",
            Box::new(move |r: &mut ChaCha8Rng| {
                let u: f64 = r.random();
                if u < 0.9 {
                    return thr;
                }
                let k = ((u - 0.9) / 0.1 * 6.0).floor().min(5.0);
                let sign = if k < 3.0 { -1.0 } else { 1.0 };
                thr + sign * 0.99 * ((k % 3.0) + 1.0) / 3.0
            }),
        ),
    ];
    for (name, draw) in &shapes {
        for alpha in [0.05, 0.01] {
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let wrong = (0..streams)
                .filter(|_| run(&mut rng, thr, alpha, 5_000, draw.as_ref()).0 != 0)
                .count();
            println!(
                "{name:<28} {alpha:>8} {wrong:>12} {:>9.4}%",
                100.0 * wrong as f64 / streams as f64
            );
        }
    }
    println!("\nstopping times (α = 0.05, noise uniform ±0.3, 2,000 streams, cap 50,000):");
    println!(
        "{:>10} {:>10} {:>10} {:>10}",
        "drop−thr", "median", "p95", "undecided"
    );
    for gap in [0.2, 0.1, 0.05, 0.02, 0.01, -0.01, -0.05] {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let draw = move |r: &mut ChaCha8Rng| thr + gap + r.random_range(-0.3..0.3);
        let mut times: Vec<usize> = Vec::new();
        let mut undecided = 0;
        for _ in 0..2_000 {
            let (d, n) = run(&mut rng, thr, 0.05, 50_000, &draw);
            if d == 0 {
                undecided += 1;
            }
            times.push(n);
        }
        times.sort_unstable();
        println!(
            "{gap:>10} {:>10} {:>10} {undecided:>10}",
            times[times.len() / 2],
            times[times.len() * 95 / 100]
        );
    }
}
