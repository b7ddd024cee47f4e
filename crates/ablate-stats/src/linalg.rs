//! Small dense linear algebra for least-squares fits, on nalgebra.

use nalgebra::DMatrix;

/// The inverse of a symmetric positive-semidefinite matrix given by rows (XᵀX of a design), or
/// `None` when it is singular: its smallest singular value is below 1e-9 of the largest (the
/// design aliases some terms, so they cannot be told apart).
pub fn invert_symmetric(rows: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let n = rows.len();
    if n == 0 || rows.iter().any(|r| r.len() != n) {
        return None;
    }
    let a = DMatrix::from_fn(n, n, |i, j| rows[i][j]);
    let svd = a.clone().svd(false, false);
    let max = svd.singular_values.max();
    let min = svd.singular_values.min();
    if max.is_nan() || max <= 0.0 || min <= 1e-9 * max {
        return None;
    }
    let inv = a.try_inverse()?;
    Some(
        (0..n)
            .map(|i| (0..n).map(|j| inv[(i, j)]).collect())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invert_small_and_singular() {
        let inv = invert_symmetric(&[vec![4.0, 0.0], vec![0.0, 2.0]]).unwrap();
        assert_eq!(inv, vec![vec![0.25, 0.0], vec![0.0, 0.5]]);
        assert!(invert_symmetric(&[vec![1.0, 1.0], vec![1.0, 1.0]]).is_none());
        // A 3×3 by hand: [[2,1,0],[1,2,1],[0,1,2]]⁻¹ = [[3,−2,1],[−2,4,−2],[1,−2,3]]/4.
        let inv = invert_symmetric(&[
            vec![2.0, 1.0, 0.0],
            vec![1.0, 2.0, 1.0],
            vec![0.0, 1.0, 2.0],
        ])
        .unwrap();
        let want = [[3.0, -2.0, 1.0], [-2.0, 4.0, -2.0], [1.0, -2.0, 3.0]];
        for i in 0..3 {
            for j in 0..3 {
                assert!((inv[i][j] - want[i][j] / 4.0).abs() < 1e-12);
            }
        }
    }
}
