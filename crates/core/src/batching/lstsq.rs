//! Minimum-norm least squares in float64 through a one-sided Jacobi SVD: small, dependency-free,
//! and accurate for columns of very different scales (bs·l² next to a constant), which the
//! normal equations are not.

/// The `x` of least norm among those minimising `‖A x − b‖`, for `A` given by its `rows`
/// (each of length `n`). Singular values below `σ_max · max(m, n) · ε` count as zero, so an
/// all-zero column gets 0 and duplicated columns share their weight equally.
pub(crate) fn min_norm_least_squares(rows: &[Vec<f64>], b: &[f64], n: usize) -> Vec<f64> {
    let m = rows.len();
    // Columns of A, rotated in place until mutually orthogonal: A V = U Σ.
    let mut cols: Vec<Vec<f64>> = (0..n)
        .map(|j| {
            rows.iter()
                .map(|r| r.get(j).copied().unwrap_or(0.0))
                .collect()
        })
        .collect();
    let mut v: Vec<Vec<f64>> = (0..n)
        .map(|j| (0..n).map(|i| if i == j { 1.0 } else { 0.0 }).collect())
        .collect();
    let dot = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(a, b)| a * b).sum::<f64>();
    for _sweep in 0..100 {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let alpha = dot(&cols[p], &cols[p]);
                let beta = dot(&cols[q], &cols[q]);
                let gamma = dot(&cols[p], &cols[q]);
                if alpha == 0.0
                    || beta == 0.0
                    || gamma.abs() <= f64::EPSILON * (alpha * beta).sqrt()
                {
                    continue;
                }
                rotated = true;
                let zeta = (beta - alpha) / (2.0 * gamma);
                let t = zeta.signum() / (zeta.abs() + (1.0 + zeta * zeta).sqrt());
                let c = 1.0 / (1.0 + t * t).sqrt();
                let s = c * t;
                rotate(&mut cols, p, q, c, s);
                rotate(&mut v, p, q, c, s);
            }
        }
        if !rotated {
            break;
        }
    }
    let sigma: Vec<f64> = cols.iter().map(|c| dot(c, c).sqrt()).collect();
    let largest = sigma.iter().copied().fold(0.0, f64::max);
    let cutoff = largest * (m.max(n) as f64) * f64::EPSILON;
    let mut x = vec![0.0; n];
    for j in 0..n {
        if sigma[j] > cutoff && sigma[j] > 0.0 {
            let weight = dot(&cols[j], b) / (sigma[j] * sigma[j]);
            for (xi, vij) in x.iter_mut().zip(&v[j]) {
                *xi += weight * vij;
            }
        }
    }
    x
}

/// `(x_p, x_q) ← (c·x_p − s·x_q, s·x_p + c·x_q)` on two columns.
fn rotate(cols: &mut [Vec<f64>], p: usize, q: usize, c: f64, s: f64) {
    let (left, right) = cols.split_at_mut(q);
    for (a, b) in left[p].iter_mut().zip(right[0].iter_mut()) {
        let (x, y) = (*a, *b);
        *a = c * x - s * y;
        *b = s * x + c * y;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64], tol: f64) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= tol, "{a:?} != {b:?}");
        }
    }

    #[test]
    fn solves_an_overdetermined_consistent_system() {
        let rows = vec![
            vec![1.0, 2.0, 1.0],
            vec![3.0, 1.0, 1.0],
            vec![5.0, 7.0, 1.0],
            vec![2.0, 2.0, 1.0],
        ];
        let truth = [0.5, -2.0, 4.0];
        let b: Vec<f64> = rows
            .iter()
            .map(|r| r.iter().zip(&truth).map(|(a, x)| a * x).sum())
            .collect();
        close(&min_norm_least_squares(&rows, &b, 3), &truth, 1e-12);
    }

    #[test]
    fn minimises_the_residual_of_an_inconsistent_system() {
        // Fitting a constant to 1, 2, 6: the mean.
        let rows = vec![vec![1.0], vec![1.0], vec![1.0]];
        close(
            &min_norm_least_squares(&rows, &[1.0, 2.0, 6.0], 1),
            &[3.0],
            1e-12,
        );
    }

    #[test]
    fn gives_zero_to_an_all_zero_column() {
        let rows = vec![vec![1.0, 0.0], vec![2.0, 0.0]];
        let x = min_norm_least_squares(&rows, &[2.0, 4.0], 2);
        assert_eq!(x[1], 0.0);
        close(&x, &[2.0, 0.0], 1e-12);
    }

    #[test]
    fn takes_the_least_norm_among_many_solutions() {
        // Duplicated columns and an underdetermined system: weight shared equally.
        let dup = vec![vec![1.0, 1.0], vec![2.0, 2.0]];
        close(
            &min_norm_least_squares(&dup, &[2.0, 4.0], 2),
            &[1.0, 1.0],
            1e-12,
        );
        let under = vec![vec![1.0, 2.0]];
        close(
            &min_norm_least_squares(&under, &[5.0], 2),
            &[1.0, 2.0],
            1e-12,
        );
    }

    #[test]
    fn copes_with_columns_of_very_different_scales() {
        let rows: Vec<Vec<f64>> = [
            (1.0, 64.0),
            (1.0, 128.0),
            (2.0, 128.0),
            (4.0, 64.0),
            (2.0, 256.0),
        ]
        .iter()
        .map(|(bs, l)| vec![bs * l * l, bs * l, 1.0])
        .collect();
        let truth = [2.0, 3.0, 100.0];
        let b: Vec<f64> = rows
            .iter()
            .map(|r| r.iter().zip(&truth).map(|(a, x)| a * x).sum())
            .collect();
        close(&min_norm_least_squares(&rows, &b, 3), &truth, 1e-8);
    }
}
