//! Survey estimators: post-stratification, raking (iterative proportional fitting) and their
//! standard errors, plain or clustered.
//!
//! - **Post-stratified mean** x̂ = Σ_h W_h·x̄_h with W_h the production share of stratum h.
//!   Plain se = √(Σ_h W_h²·s_h²/n_h). Clustered (cases share a source ticket): the
//!   linearised residuals z_i = (W_h/n_h)·√(n_h/(n_h−1))·(x_i − x̄_h) are summed per cluster and
//!   se = √(Σ_c Z_c²), which is exactly the plain formula when every case is its own cluster.
//! - **Raking**: case weights from iterative proportional fitting of the margins, starting from
//!   equal weights, until every margin is within 1e-10 of its target.
//! - **Raked mean** x̂ = Σw·x/Σw with the calibration (Deville & Särndal 1992) linearisation the R
//!   survey package uses for `rake`/`calibrate`: u_i = x_i − x̂ is replaced by its residual e_i from
//!   the least-squares fit of u on the indicators of every margin's categories (what survey's
//!   `svyrecvar` reaches by alternately subtracting category means), z_i = w_i·e_i/Σw, and
//!   se = √(n/(n−1)·Σ_i (z_i − z̄)²), or with clusters √(C/(C−1)·Σ_c (Z_c − Z̄)²). The residuals
//!   remove the variation the margins already fix, which treating the weights as fixed counts.
//!
//! Kish's effective sample size (Σw)²/Σw² shows what weighting costs.

use nalgebra::{DMatrix, DVector};

use crate::moments::{self, Neumaier};

/// Raking stops when every margin is within this of its target share.
pub const RAKE_TOLERANCE: f64 = 1e-10;
/// Raking gives up after this many rounds.
pub const RAKE_MAX_ROUNDS: usize = 1000;

/// Post-stratified estimate of per-case values `x` with stratum `strata[i]` and production shares
/// `share[h]`: (Σ_h W_h·mean_h, se). The estimate is `None` when a weighted stratum has no case;
/// the se is `None` when one has fewer than 2 cases. With `clusters` (a small integer id per case)
/// the se is the clustered linearisation of the module doc, `None` when a weighted stratum's cases
/// are all in one cluster (its residuals sum to 0 there, so it would add nothing to the se while
/// its variance between clusters is unknown, as one case's is).
pub fn post_stratified(
    x: &[f64],
    strata: &[usize],
    share: &[f64],
    clusters: Option<&[u32]>,
) -> (Option<f64>, Option<f64>) {
    let mut groups: Vec<Vec<f64>> = vec![Vec::new(); share.len()];
    for (v, &s) in x.iter().zip(strata) {
        groups[s].push(*v);
    }
    let mut est = Neumaier::default();
    let mut var = Neumaier::default();
    let mut se_defined = true;
    let mut means = vec![0.0; share.len()];
    for (h, g) in groups.iter().enumerate() {
        if share[h] == 0.0 {
            continue;
        }
        if g.is_empty() {
            return (None, None);
        }
        // mean_h and s_h² from one pass.
        let (mean, variance) = moments::mean_and_sample_variance(g);
        means[h] = mean;
        est.add(share[h] * means[h]);
        if g.len() < 2 {
            se_defined = false;
        } else {
            var.add(share[h] * share[h] * variance / g.len() as f64);
        }
    }
    let se = match clusters {
        _ if !se_defined => None,
        None => Some(var.total().max(0.0).sqrt()),
        Some(ids) if one_cluster_stratum(strata, share, ids) => None,
        Some(ids) => {
            // (W_h/n_h)·√(n_h/(n_h−1)) once per stratum; `None` for strata without production
            // share, whose residuals are 0.
            let factor: Vec<Option<f64>> = (0..share.len())
                .map(|h| {
                    let n = groups[h].len() as f64;
                    (share[h] != 0.0).then(|| share[h] / n * (n / (n - 1.0)).sqrt())
                })
                .collect();
            let z = x.iter().zip(strata).map(|(v, &h)| match factor[h] {
                None => 0.0,
                Some(f) => f * (v - means[h]),
            });
            let totals = cluster_totals(z, ids);
            (totals.len() >= 2).then(|| moments::sum(totals.iter().map(|t| t * t)).max(0.0).sqrt())
        }
    };
    (Some(est.total()), se)
}

/// The delete-one-unit jackknife se of the post-stratified mean of `x` (strata and shares as in
/// [`post_stratified`]; `units` each case's resampling unit, a small integer id: its cluster, or
/// the case itself): x̂₍g₎ = Σ_h W_h·(S_h − S_gh)/(n_h − n_gh) with unit g's cases left out, and
/// se_J = √((G − 1)/G · Σ_g (x̂₍g₎ − x̄₍·₎)²) over the G units with a case in a weighted stratum
/// (one without moves nothing). Deleting a case of a stratum of
/// n_h cases moves x̂ by W_h·(x̄_h − x)/(n_h − 1), so se_J² = (n − 1)/n · Σ_h W_h²·s_h²/(n_h − 1)
/// without clusters: above the plain se² = Σ_h W_h²·s_h²/n_h where strata are thin. `None` with
/// fewer than two units, or when leaving some unit out empties a weighted stratum.
pub fn post_stratified_jackknife(
    x: &[f64],
    strata: &[usize],
    share: &[f64],
    units: &[u32],
) -> Option<f64> {
    // Per stratum: Σx and cases. Per unit: the (stratum, Σx, cases) cells it has in weighted
    // strata, found from its cases in their order (a unit spans few strata; a dense units ×
    // strata table had cost 1.1 GB at 60,000 cases and 1,000 strata). A unit with no weighted
    // case moves nothing and is no replicate.
    let mut total = vec![(Neumaier::default(), 0usize); share.len()];
    for (&v, &h) in x.iter().zip(strata) {
        if share[h] != 0.0 {
            total[h].0.add(v);
            total[h].1 += 1;
        }
    }
    let weighted: Vec<usize> = (0..share.len()).filter(|&h| share[h] != 0.0).collect();
    if weighted.iter().any(|&h| total[h].1 == 0) {
        return None;
    }
    let by_unit = ByUnit::of(units, |i| share[strata[i]] != 0.0);
    let mut replicates = Vec::with_capacity(by_unit.len());
    let mut cells: Vec<(usize, f64, usize)> = Vec::new();
    for cases in by_unit.groups() {
        cells.clear();
        for &i in cases {
            let (v, h) = (x[i], strata[i]);
            match cells.iter_mut().find(|c| c.0 == h) {
                Some(c) => {
                    c.1 += v;
                    c.2 += 1;
                }
                None => cells.push((h, v, 1)),
            }
        }
        let mut est = Neumaier::default();
        for &h in &weighted {
            let (sum, n) = match cells.iter().find(|c| c.0 == h) {
                Some(&(_, s, n)) => (total[h].0.total() - s, total[h].1 - n),
                None => (total[h].0.total(), total[h].1),
            };
            if n == 0 {
                return None;
            }
            est.add(share[h] * sum / n as f64);
        }
        replicates.push(est.total());
    }
    let g = replicates.len();
    if g < 2 {
        return None;
    }
    let mean = moments::mean(&replicates);
    let ss = moments::sum(replicates.iter().map(|r| (r - mean) * (r - mean)));
    Some(((g - 1) as f64 / g as f64 * ss).max(0.0).sqrt())
}

/// Satterthwaite's effective degrees of freedom of the post-stratified se (strata and shares as
/// in [`post_stratified`]): df = (Σ_h v_h)² / Σ_h v_h²/(m_h − 1), with v_h stratum h's part of
/// the variance and m_h its units. Without clusters v_h = W_h²·s_h²/n_h and m_h = n_h; with
/// `clusters`, v_h = Σ_c Z_ch² over the cluster totals of the linearised residuals of
/// [`post_stratified`] within h, and m_h the clusters with a case in h. One stratum gives
/// n − 1 (C − 1): the t's own degrees of freedom. A thin stratum that carries much of the
/// variance brings df down towards its own m_h − 1, where a t on n − 1 would be too narrow.
/// `None` when a weighted stratum has fewer than two units or its values do not vary: its
/// variance is then unknown, not zero (three cases that all drop 0 say little of a stratum that
/// carries most of the production share), and nothing here stands for it.
pub fn post_stratified_df(
    x: &[f64],
    strata: &[usize],
    share: &[f64],
    clusters: Option<&[u32]>,
) -> Option<f64> {
    let h_count = share.len();
    // Each stratum's values and, with clusters, their cluster ids: one pass over the cases.
    let mut groups: Vec<Vec<f64>> = vec![Vec::new(); h_count];
    let mut group_ids: Vec<Vec<u32>> = vec![Vec::new(); h_count];
    for (i, (v, &h)) in x.iter().zip(strata).enumerate() {
        groups[h].push(*v);
        if let Some(ids) = clusters {
            group_ids[h].push(ids[i]);
        }
    }
    let mut parts: Vec<(f64, usize)> = Vec::new();
    for h in (0..h_count).filter(|&h| share[h] != 0.0) {
        let g = &groups[h];
        let n = g.len();
        if n < 2 {
            return None;
        }
        let (mean, variance) = moments::mean_and_sample_variance(g);
        if all_alike(g.iter().copied()) {
            return None;
        }
        match clusters {
            None => parts.push((share[h] * share[h] * variance / n as f64, n)),
            Some(_) => {
                let factor = share[h] / n as f64 * (n as f64 / (n as f64 - 1.0)).sqrt();
                let z: Vec<f64> = g.iter().map(|v| factor * (v - mean)).collect();
                let totals = sparse_cluster_totals(&z, &group_ids[h]);
                let m = totals.len();
                if m < 2 {
                    return None;
                }
                parts.push((moments::sum(totals.iter().map(|t| t.powi(2))), m));
            }
        }
    }
    let total = moments::sum(parts.iter().map(|p| p.0));
    let spread = moments::sum(parts.iter().map(|(v, m)| v * v / (*m as f64 - 1.0)));
    (total > 0.0 && spread > 0.0).then(|| total * total / spread)
}

/// Whether `values` do not vary: each within 1e-12 of the first, relative to it (at least 1);
/// true of no value. A stratum of such values has an unknown variance, not a zero one.
fn all_alike(mut values: impl Iterator<Item = f64>) -> bool {
    let Some(first) = values.next() else {
        return true;
    };
    values.all(|v| (v - first).abs() <= 1e-12 * first.abs().max(1.0))
}

/// The weighted strata (share ≠ 0) whose variance [`post_stratified_df`] cannot know: fewer than
/// two cases, values that do not vary (within 1e-12 of the first, relative), or with `clusters`
/// fewer than two clusters; one grouping pass over the cases, then each stratum alone (what
/// raking asks of its crossed cells, which may be many). A stratum whose clusters' totals are
/// all 0 has a known variance (0), and is not listed.
pub fn unknown_variance_strata(
    x: &[f64],
    strata: &[usize],
    share: &[f64],
    clusters: Option<&[u32]>,
) -> Vec<usize> {
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); share.len()];
    for (i, &h) in strata.iter().enumerate() {
        if share[h] != 0.0 {
            groups[h].push(i);
        }
    }
    (0..share.len())
        .filter(|&h| share[h] != 0.0)
        .filter(|&h| {
            let g = &groups[h];
            if g.len() < 2 {
                return true;
            }
            all_alike(g.iter().map(|&i| x[i]))
                || clusters.is_some_and(|ids| g.iter().all(|&i| ids[i] == ids[g[0]]))
        })
        .collect()
}

/// Each case's post-stratification weight W_h/n_h (n_h: the cases of its stratum here; 0 in a
/// stratum without production share).
pub fn post_stratified_weights(strata: &[usize], share: &[f64]) -> Vec<f64> {
    let mut counts = vec![0usize; share.len()];
    for &h in strata {
        counts[h] += 1;
    }
    strata
        .iter()
        .map(|&h| share[h] / counts[h] as f64)
        .collect()
}

/// Kish's effective sample size of weights `w`: (Σw)² / Σw², 0 when every weight is 0.
pub fn kish_effective_n(w: &[f64]) -> f64 {
    let sum = moments::sum(w.iter().copied());
    let sum2 = moments::sum(w.iter().map(|x| x * x));
    if sum2 > 0.0 { sum * sum / sum2 } else { 0.0 }
}

/// Kish's effective number of units of case weights `w` whose units are `units`: the weights
/// summed per unit, W_g, then [`kish_effective_n`] of them. Three cases carrying 90% of the
/// weight make about three units, however many others there are.
pub fn kish_effective_units(w: &[f64], units: &[u32]) -> f64 {
    kish_effective_n(&cluster_totals(w.iter().copied(), units))
}

/// Kish's design effect of case weights `w`: n / [`kish_effective_n`] = n·Σw²/(Σw)², at least 1
/// (equal weights); `None` when every weight is 0.
pub fn kish_deff(w: &[f64]) -> Option<f64> {
    let n_eff = kish_effective_n(w);
    (n_eff > 0.0).then(|| (w.len() as f64 / n_eff).max(1.0))
}

/// Whether some weighted stratum (share ≠ 0) has all its cases in one cluster.
pub fn one_cluster_stratum(strata: &[usize], share: &[f64], clusters: &[u32]) -> bool {
    !one_cluster_strata(strata, share, clusters).is_empty()
}

/// The weighted strata (share ≠ 0) with cases, all of them in one cluster, in stratum order.
pub fn one_cluster_strata(strata: &[usize], share: &[f64], clusters: &[u32]) -> Vec<usize> {
    let mut first: Vec<Option<u32>> = vec![None; share.len()];
    let mut several = vec![false; share.len()];
    for (&h, &c) in strata.iter().zip(clusters) {
        match first[h] {
            None => first[h] = Some(c),
            Some(f) if f != c => several[h] = true,
            Some(_) => {}
        }
    }
    (0..share.len())
        .filter(|&h| share[h] != 0.0 && first[h].is_some() && !several[h])
        .collect()
}

/// The positions of the cases that `keep`, grouped by their unit (ids are small integers): one
/// group per unit with such a case, in id order, each in the cases' order. A counting sort,
/// O(cases + units), where a map from unit to its cases had cost an allocation per unit.
struct ByUnit {
    /// The kept positions, unit by unit.
    order: Vec<usize>,
    /// Where each nonempty unit's group ends in `order`.
    ends: Vec<usize>,
}

impl ByUnit {
    fn of(units: &[u32], keep: impl Fn(usize) -> bool) -> ByUnit {
        let size = units.iter().copied().max().map_or(0, |m| m as usize + 1);
        // start[u]: where unit u's group begins, once the counts are summed.
        let mut start = vec![0usize; size + 1];
        for (i, &u) in units.iter().enumerate() {
            if keep(i) {
                start[u as usize + 1] += 1;
            }
        }
        for k in 1..=size {
            start[k] += start[k - 1];
        }
        let mut order = vec![0usize; start[size]];
        let mut next = start.clone();
        for (i, &u) in units.iter().enumerate() {
            if keep(i) {
                order[next[u as usize]] = i;
                next[u as usize] += 1;
            }
        }
        let ends = (0..size)
            .filter(|&u| start[u + 1] > start[u])
            .map(|u| start[u + 1])
            .collect();
        ByUnit { order, ends }
    }

    /// The number of units with a kept case.
    fn len(&self) -> usize {
        self.ends.len()
    }

    /// Each unit's kept positions, in id order.
    fn groups(&self) -> impl Iterator<Item = &[usize]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts.zip(&self.ends).map(|(a, &b)| &self.order[a..b])
    }
}

/// [`cluster_totals`] of a few cases among many ids (a stratum's): a stable sort of the cases on
/// their id, O(m log m) whatever the ids' range, each id's values summed in the cases' order.
fn sparse_cluster_totals(z: &[f64], ids: &[u32]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by_key(|&i| ids[i]);
    order
        .chunk_by(|&a, &b| ids[a] == ids[b])
        .map(|run| {
            let mut total = Neumaier::default();
            for &i in run {
                total.add(z[i]);
            }
            total.total()
        })
        .collect()
}

/// Sums of `z` per cluster id (ids are small integers), in id order, over the ids that occur.
fn cluster_totals(z: impl Iterator<Item = f64>, ids: &[u32]) -> Vec<f64> {
    let size = ids.iter().copied().max().map_or(0, |m| m as usize + 1);
    let mut totals = vec![Neumaier::default(); size];
    let mut seen = vec![false; size];
    for (v, &c) in z.zip(ids) {
        totals[c as usize].add(v);
        seen[c as usize] = true;
    }
    totals
        .iter()
        .zip(&seen)
        .filter(|(_, s)| **s)
        .map(|(t, _)| t.total())
        .collect()
}

/// With-replacement variance of a total from per-unit contributions:
/// k/(k−1)·Σ (t − t̄)² over the k units (cases, or cluster totals); `None` with fewer than two.
fn with_replacement_var(totals: &[f64]) -> Option<f64> {
    let k = totals.len();
    if k < 2 {
        return None;
    }
    let mean = moments::mean(totals);
    let ss = moments::sum(totals.iter().map(|t| (t - mean) * (t - mean)));
    Some(k as f64 / (k - 1) as f64 * ss)
}

/// Iterative proportional fitting: case weights whose margins match every target.
///
/// `margins[m]` = (category of each case, target share per category). Starts from weights 1.
///
/// # Errors
/// Returns the index of the margin furthest from its target, and the distance, when 1000 rounds
/// do not bring every margin within 1e-10.
pub fn rake(
    margins: &[(Vec<usize>, Vec<f64>)],
    n: usize,
) -> std::result::Result<Vec<f64>, (usize, f64)> {
    let mut w = vec![1.0; n];
    let deviation = |w: &[f64]| -> (usize, f64) {
        let total = moments::sum(w.iter().copied());
        let mut worst = (0, 0.0f64);
        for (m, (cat, target)) in margins.iter().enumerate() {
            let mut sums = vec![Neumaier::default(); target.len()];
            for (i, &c) in cat.iter().enumerate() {
                sums[c].add(w[i]);
            }
            for (g, t) in target.iter().enumerate() {
                let d = (sums[g].total() / total - t).abs();
                if d > worst.1 {
                    worst = (m, d);
                }
            }
        }
        worst
    };
    for _ in 0..RAKE_MAX_ROUNDS {
        for (cat, target) in margins {
            let total = moments::sum(w.iter().copied());
            let mut sums = vec![Neumaier::default(); target.len()];
            for (i, &c) in cat.iter().enumerate() {
                sums[c].add(w[i]);
            }
            let factor: Vec<f64> = target
                .iter()
                .zip(&sums)
                .map(|(t, s)| {
                    if s.total() > 0.0 {
                        t * total / s.total()
                    } else {
                        0.0
                    }
                })
                .collect();
            for (i, &c) in cat.iter().enumerate() {
                w[i] *= factor[c];
            }
        }
        if deviation(&w).1 < RAKE_TOLERANCE {
            return Ok(w);
        }
    }
    Err(deviation(&w))
}

/// Raked mean Σw·x/Σw with the calibration-residual se of the module doc. `margins[m][i]` is case
/// i's category in margin m; `clusters` gives each case's cluster id when cases are clustered.
/// The estimate is `None` when Σw ≤ 0; the se with fewer than two cases (clusters).
pub fn raked_mean(
    x: &[f64],
    w: &[f64],
    margins: &[Vec<usize>],
    clusters: Option<&[u32]>,
) -> (Option<f64>, Option<f64>) {
    let n = x.len();
    let total = moments::sum(w.iter().copied());
    if total <= 0.0 || n == 0 {
        return (None, None);
    }
    let est = moments::sum(x.iter().zip(w).map(|(x, w)| x * w)) / total;
    let u: Vec<f64> = x.iter().map(|x| x - est).collect();
    let e = margin_residuals(&u, margins);
    let z = e.iter().zip(w).map(|(e, w)| w * e / total);
    let var = match clusters {
        None => with_replacement_var(&z.collect::<Vec<_>>()),
        Some(ids) => with_replacement_var(&cluster_totals(z, ids)),
    };
    (Some(est), var.map(|v| v.max(0.0).sqrt()))
}

/// Residuals of the ordinary least-squares fit of `u` on the indicators of every margin's
/// categories (an intercept is in their span). The indicator columns are collinear across
/// margins, so the normal equations are solved with a pseudo-inverse.
fn margin_residuals(u: &[f64], margins: &[Vec<usize>]) -> Vec<f64> {
    let n = u.len();
    // One column per (margin, category) that occurs.
    let mut columns: Vec<(usize, usize)> = Vec::new();
    for (m, cats) in margins.iter().enumerate() {
        let mut present: Vec<usize> = cats.clone();
        present.sort_unstable();
        present.dedup();
        columns.extend(present.into_iter().map(|c| (m, c)));
    }
    if columns.is_empty() {
        return u.to_vec();
    }
    let x = DMatrix::from_fn(n, columns.len(), |i, j| {
        let (m, c) = columns[j];
        if margins[m][i] == c { 1.0 } else { 0.0 }
    });
    let y = DVector::from_column_slice(u);
    let xtx = x.transpose() * &x;
    let xty = x.transpose() * &y;
    let Ok(pinv) = xtx.pseudo_inverse(1e-10) else {
        return u.to_vec();
    };
    let fitted = &x * (pinv * xty);
    u.iter().zip(fitted.iter()).map(|(u, f)| u - f).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn post_stratified_jackknife_by_hand_and_by_brute_force() {
        // Stratum 0: 1, 3; stratum 1: 10, 12, 14; W = 0.25, 0.75; each case its own unit.
        // By the closed form: (n − 1)/n · Σ_h W_h² s_h²/(n_h − 1) = 4/5 · (0.0625·2/1 +
        // 0.5625·4/2) = 4/5 · 1.25 = 1.0.
        let x = [1.0, 3.0, 10.0, 12.0, 14.0];
        let s = [0, 0, 1, 1, 1];
        let units = [0, 1, 2, 3, 4];
        let se = post_stratified_jackknife(&x, &s, &[0.25, 0.75], &units).unwrap();
        assert!((se - 1.0).abs() < 1e-12, "{se}");
        // Clusters {0, 2}, {1, 3}, {4}: by brute force, re-estimating without each.
        let units = [0, 1, 0, 1, 2];
        let leave_out = |g: u32| {
            let keep: Vec<usize> = (0..5).filter(|&i| units[i] != g).collect();
            let xs: Vec<f64> = keep.iter().map(|&i| x[i]).collect();
            let ss: Vec<usize> = keep.iter().map(|&i| s[i]).collect();
            post_stratified(&xs, &ss, &[0.25, 0.75], None).0.unwrap()
        };
        let reps: Vec<f64> = (0..3).map(leave_out).collect();
        let mean = reps.iter().sum::<f64>() / 3.0;
        let want = (2.0 / 3.0 * reps.iter().map(|r| (r - mean).powi(2)).sum::<f64>()).sqrt();
        let got = post_stratified_jackknife(&x, &s, &[0.25, 0.75], &units).unwrap();
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        // A unit holding a weighted stratum's every case: undefined.
        assert_eq!(
            post_stratified_jackknife(&x, &s, &[0.25, 0.75], &[0, 0, 1, 1, 2]),
            None
        );
        // A stratum without production share may empty, and its units are no replicates: the
        // jackknife of stratum 1 alone, (n − 1)/n · s²/(n − 1) = s²/n = 4/3 with n = 3.
        let only = post_stratified_jackknife(&x, &s, &[0.0, 1.0], &[0, 0, 1, 2, 3]).unwrap();
        assert!((only - (4.0f64 / 3.0).sqrt()).abs() < 1e-12, "{only}");
    }

    #[test]
    fn cases_group_by_unit_in_id_order_keeping_their_order() {
        // Units 7, 2, 7, 5, 2, 7 with the fourth case left out: 2 → [1, 4], 7 → [0, 2, 5].
        let by = ByUnit::of(&[7, 2, 7, 5, 2, 7], |i| i != 3);
        assert_eq!(by.len(), 2);
        let groups: Vec<&[usize]> = by.groups().collect();
        assert_eq!(groups, vec![&[1, 4][..], &[0, 2, 5][..]]);
        let none = ByUnit::of(&[], |_| true);
        assert_eq!(none.groups().count(), 0);
    }

    #[test]
    fn kish_effective_n_by_hand() {
        // Equal weights: n. Weights 1, 1, 2: 4² / 6 = 2.667.
        assert!((kish_effective_n(&[0.2; 5]) - 5.0).abs() < 1e-12);
        assert!((kish_effective_n(&[1.0, 1.0, 2.0]) - 16.0 / 6.0).abs() < 1e-12);
        assert_eq!(kish_effective_n(&[0.0, 0.0]), 0.0);
        assert_eq!(kish_effective_n(&[]), 0.0);
    }

    #[test]
    fn kish_effective_units_by_hand() {
        // Three cases of 0.3 and thirty of 0.1/30: Σ = 1, Σ² = 3·0.09 + 30·(1/300)² = 0.270333.
        let mut strata = vec![0; 3];
        strata.extend([1; 30]);
        let w = post_stratified_weights(&strata, &[0.9, 0.1]);
        assert!((w[0] - 0.3).abs() < 1e-15 && (w[3] - 0.1 / 30.0).abs() < 1e-15);
        let units: Vec<u32> = (0..33).collect();
        let e = kish_effective_units(&w, &units);
        assert!((e - 1.0 / (0.27 + 30.0 / 90_000.0)).abs() < 1e-9, "{e}");
        // The three heavy cases in one cluster: W = 0.9 there, 0.9² + 30·(1/300)² = 0.810333.
        let mut clustered = vec![0; 3];
        clustered.extend(1..=30);
        let e = kish_effective_units(&w, &clustered);
        assert!((e - 1.0 / (0.81 + 30.0 / 90_000.0)).abs() < 1e-9, "{e}");
        // The design effect of the case weights: 33 · 0.270333 / 1.
        let d = kish_deff(&w).unwrap();
        assert!((d - 33.0 * (0.27 + 30.0 / 90_000.0)).abs() < 1e-9, "{d}");
        assert_eq!(kish_deff(&[0.5, 0.5]), Some(1.0));
    }

    #[test]
    fn a_weighted_stratum_in_one_cluster_has_no_se() {
        let x = [1.0, 3.0, 10.0, 12.0, 14.0];
        let s = [0, 0, 1, 1, 1];
        let (est, se) = post_stratified(&x, &s, &[0.25, 0.75], Some(&[0, 0, 1, 2, 3]));
        assert!((est.unwrap() - 9.5).abs() < 1e-12);
        assert_eq!(se, None);
        assert_eq!(
            one_cluster_strata(&s, &[0.25, 0.75], &[0, 0, 1, 2, 3]),
            vec![0]
        );
        // Without production share it may.
        let (_, se) = post_stratified(&x, &s, &[0.0, 1.0], Some(&[0, 0, 1, 2, 3]));
        assert!(se.is_some());
        assert!(one_cluster_strata(&s, &[0.0, 1.0], &[0, 0, 1, 2, 3]).is_empty());
    }

    #[test]
    fn post_stratified_df_by_hand() {
        // Stratum 0: 1, 3 (s² 2, n 2); stratum 1: 10, 12, 14 (s² 4, n 3); W = 0.25, 0.75.
        // v = 0.0625·2/2 = 0.0625 and 0.5625·4/3 = 0.75; df = 0.8125² / (0.0625²/1 + 0.75²/2).
        let x = [1.0, 3.0, 10.0, 12.0, 14.0];
        let s = [0, 0, 1, 1, 1];
        let want = 0.8125f64.powi(2) / (0.0625f64.powi(2) + 0.75f64.powi(2) / 2.0);
        let df = post_stratified_df(&x, &s, &[0.25, 0.75], None).unwrap();
        assert!((df - want).abs() < 1e-12, "{df} vs {want}");
        // Every case its own cluster: the same.
        let df = post_stratified_df(&x, &s, &[0.25, 0.75], Some(&[0, 1, 2, 3, 4])).unwrap();
        assert!((df - want).abs() < 1e-12, "{df} vs {want}");
        // Clusters whose ids are neither dense nor in order, each case alone in its stratum's
        // part of its cluster ({0, 2}, {1, 3}, {4}): the stratum totals are the cases', the same.
        let df = post_stratified_df(&x, &s, &[0.25, 0.75], Some(&[5, 2, 5, 2, 9])).unwrap();
        assert!((df - want).abs() < 1e-12, "{df} vs {want}");
        // One stratum: n − 1.
        let df = post_stratified_df(&x, &[0; 5], &[1.0], None).unwrap();
        assert!((df - 4.0).abs() < 1e-12, "{df}");
        // A weighted stratum in one cluster: undefined.
        assert_eq!(
            post_stratified_df(&x, &s, &[0.25, 0.75], Some(&[0, 0, 1, 2, 3])),
            None
        );
        // A weighted stratum whose values do not vary: its variance is unknown, so undefined.
        let flat = [2.0, 2.0, 10.0, 12.0, 14.0];
        assert_eq!(post_stratified_df(&flat, &s, &[0.25, 0.75], None), None);
        // Unless it carries no production share.
        assert!(post_stratified_df(&flat, &s, &[0.0, 1.0], None).is_some());
    }

    #[test]
    fn post_stratified_two_strata_by_hand() {
        // Stratum 0: 1, 3 (mean 2, s² 2); stratum 1: 10, 12, 14 (mean 12, s² 4).
        // W = 0.25, 0.75 → 0.5 + 9 = 9.5 ; se² = 0.0625·2/2 + 0.5625·4/3 = 0.0625 + 0.75.
        let x = [1.0, 3.0, 10.0, 12.0, 14.0];
        let s = [0, 0, 1, 1, 1];
        let (est, se) = post_stratified(&x, &s, &[0.25, 0.75], None);
        assert!((est.unwrap() - 9.5).abs() < 1e-12);
        assert!((se.unwrap() - (0.0625f64 + 0.75).sqrt()).abs() < 1e-12);
        // A one-case stratum: estimate defined, se not.
        let (est, se) = post_stratified(&[1.0, 10.0, 12.0], &[0, 1, 1], &[0.5, 0.5], None);
        assert!((est.unwrap() - 6.0).abs() < 1e-12);
        assert!(se.is_none());
        // A weighted stratum with no case: undefined.
        assert_eq!(
            post_stratified(&[1.0], &[0], &[0.5, 0.5], None),
            (None, None)
        );
    }

    #[test]
    fn clustered_post_stratification() {
        let x = [1.0, 3.0, 10.0, 12.0, 14.0];
        let s = [0, 0, 1, 1, 1];
        let share = [0.25, 0.75];
        // Every case its own cluster: exactly the plain formula.
        let (_, plain) = post_stratified(&x, &s, &share, None);
        let (_, single) = post_stratified(&x, &s, &share, Some(&[0, 1, 2, 3, 4]));
        assert!((plain.unwrap() - single.unwrap()).abs() < 1e-15);
        // Clusters {0, 2} and {1, 3, 4}, by hand: z = (W/n)·√(n/(n−1))·(x − x̄_h)
        // stratum 0: 0.125·√2·(−1, 1); stratum 1: 0.25·√1.5·(−2, 0, 2).
        let a = 0.125 * 2f64.sqrt();
        let b = 0.25 * 1.5f64.sqrt();
        let z0 = -a + -2.0 * b;
        let z1 = a + 0.0 * b + 2.0 * b;
        let (_, clustered) = post_stratified(&x, &s, &share, Some(&[0, 1, 0, 1, 1]));
        assert!((clustered.unwrap() - (z0 * z0 + z1 * z1).sqrt()).abs() < 1e-12);
        // One cluster: undefined.
        assert!(post_stratified(&x, &s, &share, Some(&[7; 5])).1.is_none());
    }

    #[test]
    fn own_shares_change_nothing() {
        let x = [0.0, 1.0, 1.0, 0.0, 1.0];
        let s = [0, 0, 1, 1, 1];
        let (est, _) = post_stratified(&x, &s, &[0.4, 0.6], None);
        assert!((est.unwrap() - moments::mean(&x)).abs() < 1e-15);
    }

    #[test]
    fn ipf_two_by_two_known_answer() {
        // Four cases, one per cell of rows {a, b} × columns {x, y}; targets rows 0.3/0.7 and
        // columns 0.6/0.4. With one case per cell and equal start, IPF converges to the
        // independence table: w ∝ row·col → 0.18, 0.12, 0.42, 0.28.
        let rows = vec![0, 0, 1, 1];
        let cols = vec![0, 1, 0, 1];
        let w = rake(&[(rows, vec![0.3, 0.7]), (cols, vec![0.6, 0.4])], 4).unwrap();
        let total: f64 = w.iter().sum();
        let want = [0.18, 0.12, 0.42, 0.28];
        for (wi, t) in w.iter().zip(want) {
            assert!((wi / total - t).abs() < 1e-9, "{w:?}");
        }
    }

    #[test]
    fn ipf_single_dimension_equals_post_stratification() {
        let cat = vec![0, 0, 1, 1, 1];
        let x = [1.0, 3.0, 10.0, 12.0, 14.0];
        let w = rake(&[(cat.clone(), vec![0.25, 0.75])], 5).unwrap();
        let (raked, _) = raked_mean(&x, &w, std::slice::from_ref(&cat), None);
        let (post, _) = post_stratified(&x, &cat, &[0.25, 0.75], None);
        assert!((raked.unwrap() - post.unwrap()).abs() < 1e-12);
    }

    #[test]
    fn ipf_incompatible_margins_fail() {
        // Category 1 of margin B holds no case, yet it needs 50%.
        let r = rake(&[(vec![0, 0], vec![1.0]), (vec![0, 0], vec![0.5, 0.5])], 2);
        assert_eq!(r.unwrap_err().0, 1);
    }

    /// The R survey package's algorithm for the variance of a raked mean, written out as
    /// `svyrecvar` does it (an independent second method): influence values x_i = w_i·u_i/Σw,
    /// then many rounds of "x ← x − w·ave(x/w, margin)" over the margins, then the
    /// with-replacement variance n/(n−1)·Σ(x − x̄)² (of cluster totals, with clusters).
    fn survey_rake_se(x: &[f64], w: &[f64], margins: &[Vec<usize>], clusters: &[u32]) -> f64 {
        let n = x.len();
        let total: f64 = w.iter().sum();
        let est: f64 = x.iter().zip(w).map(|(x, w)| x * w).sum::<f64>() / total;
        let mut inf: Vec<f64> = (0..n).map(|i| w[i] * (x[i] - est) / total).collect();
        for _ in 0..2000 {
            for margin in margins {
                let k = margin.iter().max().unwrap() + 1;
                let mut sum = vec![0.0; k];
                let mut count = vec![0.0; k];
                for i in 0..n {
                    sum[margin[i]] += inf[i] / w[i];
                    count[margin[i]] += 1.0;
                }
                for i in 0..n {
                    inf[i] -= w[i] * sum[margin[i]] / count[margin[i]];
                }
            }
        }
        let c = *clusters.iter().max().unwrap() as usize + 1;
        let mut tot = vec![0.0; c];
        for i in 0..n {
            tot[clusters[i] as usize] += inf[i];
        }
        let k = tot.len() as f64;
        let mean = tot.iter().sum::<f64>() / k;
        (k / (k - 1.0) * tot.iter().map(|t| (t - mean).powi(2)).sum::<f64>()).sqrt()
    }

    #[test]
    fn raked_se_matches_the_survey_package_algorithm() {
        // Eight cases, two margins (turns 2 categories, slice 3), uneven targets.
        let x = [0.9, 0.2, 1.0, 0.4, 0.7, 0.0, 0.5, 0.8];
        let turns = vec![0, 0, 0, 1, 1, 0, 1, 0];
        let slice = vec![0, 1, 2, 0, 1, 2, 2, 1];
        let w = rake(
            &[
                (turns.clone(), vec![0.6, 0.4]),
                (slice.clone(), vec![0.2, 0.5, 0.3]),
            ],
            8,
        )
        .unwrap();
        let margins = vec![turns, slice];
        let (est, se) = raked_mean(&x, &w, &margins, None);
        let by_hand: f64 =
            x.iter().zip(&w).map(|(x, w)| x * w).sum::<f64>() / w.iter().sum::<f64>();
        assert!((est.unwrap() - by_hand).abs() < 1e-12);
        let singletons: Vec<u32> = (0..8).collect();
        let want = survey_rake_se(&x, &w, &margins, &singletons);
        assert!((se.unwrap() - want).abs() < 1e-10, "{se:?} vs {want}");
        // Clustered: the same algorithm on cluster totals.
        let clusters = [0, 0, 1, 1, 2, 2, 3, 3];
        let (_, se_c) = raked_mean(&x, &w, &margins, Some(&clusters));
        let want_c = survey_rake_se(&x, &w, &margins, &clusters);
        assert!(
            (se_c.unwrap() - want_c).abs() < 1e-10,
            "{se_c:?} vs {want_c}"
        );
    }

    /// The strata whose variance is unknown, by hand: one case (1), values that do not vary (2),
    /// one cluster (3, with clusters); a stratum without share is never listed (4); one whose
    /// clusters' totals are 0 has a known variance (0: stratum 5, clusters 7 and 8 each {0, 1}).
    /// Each listed stratum alone is one `post_stratified_df` refuses.
    #[test]
    fn unknown_variance_strata_by_hand() {
        let strata = [0, 0, 1, 2, 2, 3, 3, 4, 5, 5, 5, 5];
        let x = [0.1, 0.3, 0.2, 0.5, 0.5, 0.1, 0.9, 0.0, 0.0, 1.0, 0.0, 1.0];
        let ids = [1, 2, 3, 4, 5, 6, 6, 7, 7, 7, 8, 8];
        let share = [0.2, 0.2, 0.2, 0.2, 0.0, 0.2];
        assert_eq!(
            unknown_variance_strata(&x, &strata, &share, None),
            vec![1, 2]
        );
        assert_eq!(
            unknown_variance_strata(&x, &strata, &share, Some(&ids)),
            vec![1, 2, 3]
        );
        for h in [1, 2, 3] {
            let only: Vec<f64> = (0..share.len())
                .map(|k| if k == h { share[h] } else { 0.0 })
                .collect();
            assert_eq!(
                post_stratified_df(&x, &strata, &only, Some(&ids)),
                None,
                "{h}"
            );
        }
        let only0: Vec<f64> = (0..share.len())
            .map(|k| if k == 0 { 0.2 } else { 0.0 })
            .collect();
        assert!(post_stratified_df(&x, &strata, &only0, None).is_some());
    }
}
