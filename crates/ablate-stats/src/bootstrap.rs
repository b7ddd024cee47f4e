//! The joint, seeded, parallel bootstrap.
//!
//! Every statistic `ablate` bootstraps is a ratio of sums over cases, θₖ = Σᵢ xᵢₖ / Σᵢ yᵢₖ: a
//! mean over an arm's paired cases has x = the per-case value (0 when the case is not paired) and
//! y = 1 when paired (0 otherwise); a ratio of means (budget retention) has y = the baseline
//! score. Cases are first summed per resampling unit (a cluster when `cases` has `cluster`,
//! otherwise the case itself), giving a units × K matrix of numerators and one of denominators.
//!
//! Resample r draws `units` units with replacement from a ChaCha8 stream seeded by (seed, r); its
//! replicate of every statistic is (w·X)/(w·Y) with w the draw counts: one pass over the matrix
//! per resample, every statistic at once, so all arms see the same resample (a joint bootstrap:
//! differences between arms keep their pairing). Resamples are batched 64 at a time into one
//! matrix product (as numpy users do with a multinomial weight matrix), batches run in parallel
//! with rayon, and each writes its own rows of the B × K result, so the output is identical at any
//! thread count. Cost: O(B · units · K) multiply-adds in a blocked GEMM kernel.
//!
//! The interval is the percentile interval (Efron & Tibshirani 1993, §13.3) with type-7
//! quantiles; resamples where a denominator is 0 are left out of that statistic's interval.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::percentile::sorted_quantile;

/// Per-unit sums of the numerators and denominators of K ratio statistics.
#[derive(Debug, Clone)]
pub struct RatioSums {
    k: usize,
    units: usize,
    num: Vec<f64>,
    den: Vec<f64>,
}

impl RatioSums {
    /// Zero sums for `units` resampling units and `k` statistics.
    pub fn new(units: usize, k: usize) -> RatioSums {
        RatioSums {
            k,
            units,
            num: vec![0.0; units * k],
            den: vec![0.0; units * k],
        }
    }

    /// Number of statistics.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Number of resampling units.
    pub fn units(&self) -> usize {
        self.units
    }

    /// Adds one case's contribution to statistic `stat` of resampling unit `unit`.
    pub fn add(&mut self, unit: usize, stat: usize, num: f64, den: f64) {
        self.num[unit * self.k + stat] += num;
        self.den[unit * self.k + stat] += den;
    }

    /// The full-sample statistics Σ num / Σ den (NaN where Σ den = 0).
    pub fn point(&self) -> Vec<f64> {
        (0..self.k)
            .map(|s| {
                let n = crate::moments::sum((0..self.units).map(|u| self.num[u * self.k + s]));
                let d = crate::moments::sum((0..self.units).map(|u| self.den[u * self.k + s]));
                if d != 0.0 { n / d } else { f64::NAN }
            })
            .collect()
    }
}

/// B bootstrap replicates of K statistics (row r = resample r).
#[derive(Debug, Clone)]
pub struct Draws {
    b: usize,
    k: usize,
    values: Vec<f64>,
}

impl Draws {
    /// Number of resamples.
    pub fn b(&self) -> usize {
        self.b
    }

    /// The replicates of one statistic, in resample order (NaN where undefined).
    pub fn column(&self, stat: usize) -> Vec<f64> {
        (0..self.b)
            .map(|r| self.values[r * self.k + stat])
            .collect()
    }

    /// Percentile interval of statistic `stat` at `confidence`; `None` when no replicate is
    /// defined.
    pub fn percentile_ci(&self, stat: usize, confidence: f64) -> Option<(f64, f64)> {
        let mut v: Vec<f64> = self
            .column(stat)
            .into_iter()
            .filter(|x| !x.is_nan())
            .collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let alpha = 1.0 - confidence;
        Some((
            sorted_quantile(&v, alpha / 2.0),
            sorted_quantile(&v, 1.0 - alpha / 2.0),
        ))
    }
}

/// The RNG of resample `r`: a ChaCha8 stream seeded by `seed`, stream number `r`.
pub fn resample_rng(seed: u64, r: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(r as u64);
    rng
}

/// One unit drawn uniformly from `0..units`: the same number as rand 0.9's
/// `rng.random_range(0..units)`, written out so that it inlines into the draw loop (rand's is a
/// call per draw there). For `units` < 2³² that is the widening multiply of a 32-bit draw x by
/// n = units: the unit is ⌊x·n / 2³²⌋, and when the low half of x·n exceeds 2³² − n, a second
/// draw y adds 1 if (x·n mod 2³²) + ⌊y·n / 2³²⌋ overflows 32 bits (bias at most 2⁻³²).
/// Larger counts of units take rand's own 64-bit path.
#[inline]
fn draw(rng: &mut ChaCha8Rng, units: usize) -> usize {
    use rand::RngCore;
    let Ok(n) = u32::try_from(units) else {
        return rng.random_range(0..units);
    };
    let wide = u64::from(rng.next_u32()) * u64::from(n);
    let (mut unit, low) = ((wide >> 32) as u32, wide as u32);
    if low > n.wrapping_neg() {
        let carry = ((u64::from(rng.next_u32()) * u64::from(n)) >> 32) as u32;
        unit += u32::from(low.checked_add(carry).is_none());
    }
    unit as usize
}

/// Resamples per block: each block's weights form one matrix, multiplied once by the sums.
/// Fixed, so the arithmetic of every replicate is the same whatever the number of threads.
const BLOCK: usize = 64;

/// C (m×n) = A (m×k) · B (k×n), all row-major, in f64 (matrixmultiply's blocked kernel).
fn gemm(m: usize, k: usize, n: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
    assert!(
        a.len() == m * k && b.len() == k * n && c.len() == m * n,
        "gemm shapes"
    );
    if m == 0 || n == 0 {
        return;
    }
    // SAFETY: the three slices hold exactly m×k, k×n and m×n elements (checked above), laid out
    // row-major with the strides given, and `c` does not alias `a` or `b` (it is borrowed mutably).
    unsafe {
        matrixmultiply::dgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            k as isize,
            1,
            b.as_ptr(),
            n as isize,
            1,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

/// Runs `b` resamples of the units in `sums`, calling `progress(n)` as each block of `n`
/// resamples is done (from the worker threads, so it is `Sync`).
///
/// Resamples are processed in blocks of 64: the block's multinomial counts form a 64 × units
/// weight matrix W (row r counts how often resample r drew each unit, from its own seeded
/// stream), and the numerators of every statistic are one matrix product W·X; the denominators
/// are W·Y, or a single matrix-vector product when every statistic has the same denominators
/// (every arm present on every case). Blocks run in parallel with rayon.
pub fn run(sums: &RatioSums, b: usize, seed: u64, progress: &(dyn Fn(u64) + Sync)) -> Draws {
    let k = sums.k;
    let mut values = vec![f64::NAN; b * k];
    if k == 0 || sums.units == 0 || b == 0 {
        return Draws { b, k, values };
    }
    let units = sums.units;
    // Denominators shared by every statistic, when they are.
    let shared_den: Option<Vec<f64>> = (0..units)
        .all(|u| {
            let row = &sums.den[u * k..(u + 1) * k];
            row.iter().all(|d| *d == row[0])
        })
        .then(|| (0..units).map(|u| sums.den[u * k]).collect());
    // Each worker thread keeps its weight matrix (64 × units: 100 MB at 200,000 units) from
    // block to block, for the whole run: a fresh one is fresh pages, which the kernel zeroes on
    // first touch and unmaps on free (half the bootstrap's time at that size), and rayon's
    // `for_each_init` would make one per split job, several per thread. A resample's draws are
    // counted in a small array of u32 (64 KB at 16,000 units, in cache while the draws land at
    // random in it) and then copied into its row of the matrix in order: counting in the row
    // itself took a cache miss for most draws (a 64-row matrix does not stay in cache).
    let buffers: Vec<std::sync::Mutex<(Vec<f64>, Vec<u32>)>> = (0..rayon::current_num_threads())
        .map(|_| std::sync::Mutex::new((Vec::new(), Vec::new())))
        .collect();
    values
        .par_chunks_mut(BLOCK * k)
        .enumerate()
        .for_each(|(block, out)| {
            // A worker's own buffers (blocks run on the pool's threads); the lock is only ever
            // taken by that thread.
            let slot = rayon::current_thread_index().unwrap_or(0) % buffers.len();
            let mut guard = buffers[slot]
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let (w, counts) = &mut *guard;
            counts.resize(units, 0);
            let rows = out.len() / k;
            // Every element is overwritten below.
            w.resize(rows * units, 0.0f64);
            for (i, row) in w.chunks_mut(units).enumerate() {
                let mut rng = resample_rng(seed, block * BLOCK + i);
                counts.fill(0);
                for _ in 0..units {
                    counts[draw(&mut rng, units)] += 1;
                }
                for (x, c) in row.iter_mut().zip(counts.iter()) {
                    *x = f64::from(*c);
                }
            }
            let mut num = vec![0.0f64; rows * k];
            gemm(rows, units, k, w, &sums.num, &mut num);
            let den: Vec<f64> = match &shared_den {
                Some(d) => {
                    let mut per_row = vec![0.0f64; rows];
                    gemm(rows, units, 1, w, d, &mut per_row);
                    per_row
                        .iter()
                        .flat_map(|x| std::iter::repeat_n(*x, k))
                        .collect()
                }
                None => {
                    let mut den = vec![0.0f64; rows * k];
                    gemm(rows, units, k, w, &sums.den, &mut den);
                    den
                }
            };
            for ((o, n), d) in out.iter_mut().zip(&num).zip(&den) {
                *o = if *d != 0.0 { n / d } else { f64::NAN };
            }
            progress(rows as u64);
        });
    Draws { b, k, values }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sums_of(values: &[f64]) -> RatioSums {
        let mut s = RatioSums::new(values.len(), 1);
        for (i, v) in values.iter().enumerate() {
            s.add(i, 0, *v, 1.0);
        }
        s
    }

    #[test]
    fn point_is_the_mean() {
        let s = sums_of(&[1.0, 2.0, 6.0]);
        assert_eq!(s.point(), vec![3.0]);
    }

    #[test]
    fn same_seed_same_draws_at_any_thread_count() {
        let s = sums_of(&(0..50).map(|i| (i % 7) as f64).collect::<Vec<_>>());
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let four = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap();
        let a = one.install(|| run(&s, 300, 42, &|_| {}));
        let b = four.install(|| run(&s, 300, 42, &|_| {}));
        assert_eq!(a.values, b.values);
        let c = run(&s, 300, 43, &|_| {});
        assert_ne!(a.values, c.values);
    }

    #[test]
    fn ci_contains_point_and_shrinks_with_n() {
        let small: Vec<f64> = (0..40).map(|i| ((i * 37) % 11) as f64).collect();
        let large: Vec<f64> = (0..4000).map(|i| ((i * 37) % 11) as f64).collect();
        let (ps, pl) = (sums_of(&small), sums_of(&large));
        let (cs, cl) = (
            run(&ps, 2000, 1, &|_| {}).percentile_ci(0, 0.95).unwrap(),
            run(&pl, 2000, 1, &|_| {}).percentile_ci(0, 0.95).unwrap(),
        );
        assert!(cs.0 <= ps.point()[0] && ps.point()[0] <= cs.1);
        assert!(cl.0 <= pl.point()[0] && pl.point()[0] <= cl.1);
        assert!(cl.1 - cl.0 < (cs.1 - cs.0) / 5.0);
    }

    #[test]
    fn bootstrap_se_matches_analytic_se() {
        // The bootstrap sd of a mean is about s·√((n−1)/n)/√n.
        let v: Vec<f64> = (0..400)
            .map(|i| ((i * 7919) % 101) as f64 / 100.0)
            .collect();
        let draws = run(&sums_of(&v), 4000, 9, &|_| {}).column(0);
        let boot_sd = crate::moments::sample_variance(&draws).sqrt();
        let (_, se) = crate::moments::mean_se(&v, None);
        let rel = (boot_sd - se.unwrap()).abs() / se.unwrap();
        assert!(rel < 0.05, "bootstrap sd {boot_sd} vs se {se:?}");
    }

    #[test]
    fn undefined_denominators_are_skipped() {
        let mut s = RatioSums::new(2, 1);
        s.add(0, 0, 1.0, 1.0); // unit 1 contributes nothing
        let d = run(&s, 200, 3, &|_| {});
        let ci = d.percentile_ci(0, 0.9).unwrap();
        assert_eq!(ci, (1.0, 1.0));
        assert!(d.column(0).iter().any(|x| x.is_nan()));
    }

    /// `draw` is rand's `random_range(0..units)`, draw for draw, including the second draw that
    /// ranges near 2³² need often.
    #[test]
    fn draw_is_rands_random_range() {
        for units in [
            1usize,
            2,
            3,
            37,
            16_081,
            200_000,
            3_000_000_001,
            u32::MAX as usize,
        ] {
            let (mut ours, mut rands) = (resample_rng(5, 1), resample_rng(5, 1));
            for _ in 0..20_000 {
                assert_eq!(
                    draw(&mut ours, units),
                    rands.random_range(0..units),
                    "{units}"
                );
            }
        }
    }

    /// Each replicate is the resample its own stream draws, unit by unit: checked against a
    /// direct count of the draws, summed in unit order (to 1e-12, since the matrix product sums
    /// in its own order), over two blocks (the last one partial) and ratios with their own
    /// denominators. The counts are integers, so where they are kept changes no bit.
    #[test]
    fn replicates_are_the_streams_own_draws() {
        let units = 37;
        let mut s = RatioSums::new(units, 2);
        for u in 0..units {
            s.add(u, 0, ((u * 7) % 5) as f64 + 0.25, 1.0);
            s.add(u, 1, (u % 3) as f64, 1.0 + (u % 4) as f64);
        }
        let b = BLOCK + 9;
        let d = run(&s, b, 11, &|_| {});
        for r in 0..b {
            let mut rng = resample_rng(11, r);
            let mut counts = vec![0.0f64; units];
            for _ in 0..units {
                counts[rng.random_range(0..units)] += 1.0;
            }
            for k in 0..2 {
                let num: f64 = (0..units).map(|u| counts[u] * s.num[u * 2 + k]).sum();
                let den: f64 = (0..units).map(|u| counts[u] * s.den[u * 2 + k]).sum();
                let got = d.column(k)[r];
                assert!(
                    (got - num / den).abs() <= 1e-12 * (num / den).abs(),
                    "resample {r}, statistic {k}: {got} against {}",
                    num / den
                );
            }
        }
    }
}
