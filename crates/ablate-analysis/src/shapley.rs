//! Exact Shapley values and pairwise Shapley interaction indices from a full factorial design.
//!
//! With k units U and v(T) the score with exactly the units T ⊆ U present (all 2^k subsets
//! measured):
//! - φ_u = Σ_{T⊆U∖u} |T|!(k−|T|−1)!/k! · (v(T∪u) − v(T))  (Shapley 1953);
//! - I_uv = Σ_{T⊆U∖{u,v}} |T|!(k−|T|−2)!/(k−1)! · (v(T∪uv) − v(T∪u) − v(T∪v) + v(T))
//!   (Grabisch & Roubens 1999).
//!
//! Efficiency: Σ_u φ_u = v(U) − v(∅). Leave-one-out drops equal Shapley values only when there
//! are no interactions. Subsets are bitmasks over the k units; cost O(k²·2^k).

/// Shapley values and interaction indices of a set function given on every subset (bit i of the
/// index = unit i present).
#[derive(Debug, Clone, PartialEq)]
pub struct ShapleyResult {
    /// φ per unit.
    pub values: Vec<f64>,
    /// (u, v, I_uv) for u < v.
    pub interactions: Vec<(usize, usize, f64)>,
}

fn factorials(n: usize) -> Vec<f64> {
    let mut f = vec![1.0; n + 1];
    for i in 1..=n {
        f[i] = f[i - 1] * i as f64;
    }
    f
}

/// Computes Shapley values and pairwise interaction indices of `v` (length 2^k).
pub fn shapley(k: usize, v: &[f64]) -> ShapleyResult {
    assert_eq!(v.len(), 1 << k, "v must hold every subset");
    let f = factorials(k);
    let mut values = vec![0.0; k];
    for (u, value) in values.iter_mut().enumerate() {
        let mut acc = crate::stats::moments::Neumaier::default();
        for t in 0..(1usize << k) {
            if t & (1 << u) != 0 {
                continue;
            }
            let s = t.count_ones() as usize;
            let w = f[s] * f[k - s - 1] / f[k];
            acc.add(w * (v[t | (1 << u)] - v[t]));
        }
        *value = acc.total();
    }
    let mut interactions = Vec::new();
    if k >= 2 {
        for a in 0..k {
            for b in (a + 1)..k {
                let mut acc = crate::stats::moments::Neumaier::default();
                for t in 0..(1usize << k) {
                    if t & ((1 << a) | (1 << b)) != 0 {
                        continue;
                    }
                    let s = t.count_ones() as usize;
                    let w = f[s] * f[k - s - 2] / f[k - 1];
                    acc.add(
                        w * (v[t | (1 << a) | (1 << b)] - v[t | (1 << a)] - v[t | (1 << b)] + v[t]),
                    );
                }
                interactions.push((a, b, acc.total()));
            }
        }
    }
    ShapleyResult {
        values,
        interactions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn additive_game_gives_marginal_values_and_no_interaction() {
        // v(T) = Σ_{u∈T} c_u
        let c = [0.1, 0.2, 0.4];
        let v: Vec<f64> = (0..8)
            .map(|t: usize| (0..3).filter(|u| t & (1 << u) != 0).map(|u| c[u]).sum())
            .collect();
        let r = shapley(3, &v);
        for (value, expected) in r.values.iter().zip(c) {
            assert!((value - expected).abs() < 1e-12);
        }
        assert!(r.interactions.iter().all(|(_, _, i)| i.abs() < 1e-12));
    }

    #[test]
    fn known_two_cubed_example_by_hand() {
        // Redundant carriers: v = 1 when unit 0 or unit 1 is present, plus 0.5 for unit 2.
        // φ0 = φ1 = 0.5 (they split the fact), φ2 = 0.5; I01 = −1 (substitutes), others 0.
        let v: Vec<f64> = (0..8)
            .map(|t: usize| {
                let fact = if t & 0b011 != 0 { 1.0 } else { 0.0 };
                fact + if t & 0b100 != 0 { 0.5 } else { 0.0 }
            })
            .collect();
        let r = shapley(3, &v);
        assert!((r.values[0] - 0.5).abs() < 1e-12);
        assert!((r.values[1] - 0.5).abs() < 1e-12);
        assert!((r.values[2] - 0.5).abs() < 1e-12);
        assert_eq!(r.interactions[0].0, 0);
        assert_eq!(r.interactions[0].1, 1);
        assert!((r.interactions[0].2 + 1.0).abs() < 1e-12);
        assert!(r.interactions[1].2.abs() < 1e-12 && r.interactions[2].2.abs() < 1e-12);
    }

    #[test]
    fn efficiency_and_symmetry_on_an_arbitrary_game() {
        let k = 5;
        // Pseudo-random game where units 1 and 3 are interchangeable.
        let v: Vec<f64> = (0..(1usize << k))
            .map(|t| {
                let swapped = (t & !0b01010) | ((t & 0b00010) << 2) | ((t & 0b01000) >> 2);
                let h = |x: usize| ((x as f64 * 12.9898).sin() * 43758.5453).fract();
                h(t) + h(swapped)
            })
            .collect();
        let r = shapley(k, &v);
        let total: f64 = r.values.iter().sum();
        assert!((total - (v[(1 << k) - 1] - v[0])).abs() < 1e-12);
        assert!((r.values[1] - r.values[3]).abs() < 1e-12);
    }
}
