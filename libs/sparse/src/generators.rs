//! Test and benchmark matrices: finite-difference Poisson operators and banded matrices.

use crate::error::SparseError;
use crate::triplets::Triplets;

/// The 5-point Laplacian on an `n x n` grid with Dirichlet boundaries: `n^2` unknowns, 4 on
/// the diagonal and -1 for each grid neighbour (symmetric positive definite).
pub fn poisson_2d(n: i64) -> Result<Triplets, SparseError> {
    poisson(n, 2)
}

/// The 7-point Laplacian on an `n x n x n` grid with Dirichlet boundaries: `n^3` unknowns, 6
/// on the diagonal and -1 for each grid neighbour.
pub fn poisson_3d(n: i64) -> Result<Triplets, SparseError> {
    poisson(n, 3)
}

/// The `2 d`-point Laplacian on a `d`-dimensional grid of side `n`, row-major unknowns.
fn poisson(n: i64, d: u32) -> Result<Triplets, SparseError> {
    let size = n
        .checked_pow(d)
        .filter(|_| n >= 0)
        .ok_or_else(|| SparseError::BadShape {
            reason: format!("a grid of side {n} in {d} dimensions"),
        })?;
    let mut t = Triplets::new(size, size)?;
    let strides: Vec<i64> = (0..d).map(|k| n.pow(d - 1 - k)).collect();
    for row in 0..size {
        t.push(row, row, f64::from(2 * d))?;
        for &s in &strides {
            // The coordinate along this axis.
            let i = (row / s) % n;
            if i > 0 {
                t.push(row, row - s, -1.0)?;
            }
            if i + 1 < n {
                t.push(row, row + s, -1.0)?;
            }
        }
    }
    Ok(t)
}

/// An `n x n` banded matrix: `value` at every `(i, i + offset)` inside the matrix, for each
/// `(offset, value)` of `bands` (e.g. `[(-1, -1.0), (0, 2.0), (1, -1.0)]` is the 1-d
/// Laplacian).
pub fn banded(n: i64, bands: &[(i64, f64)]) -> Result<Triplets, SparseError> {
    let mut t = Triplets::new(n, n)?;
    for row in 0..n {
        for &(offset, value) in bands {
            let col = row.checked_add(offset).unwrap_or(-1);
            if (0..n).contains(&col) {
                t.push(row, col, value)?;
            }
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HostCsr, IndexWidth};

    fn csr(t: &Triplets) -> HostCsr {
        HostCsr::from_triplets(t, IndexWidth::I32).unwrap()
    }

    #[test]
    fn poisson_2d_is_the_five_point_stencil() {
        let a = csr(&poisson_2d(3).unwrap());
        assert_eq!((a.rows(), a.cols(), a.nnz()), (9, 9, 9 + 2 * 2 * 3 * 2));
        assert_eq!(a.diagonal(), vec![4.0; 9]);
        // Row sums: 4 minus the number of neighbours (corner 2, edge 3, centre 4).
        let sums = a.matvec(&[1.0; 9]).unwrap();
        assert_eq!(sums, vec![2.0, 1.0, 2.0, 1.0, 0.0, 1.0, 2.0, 1.0, 2.0]);
        // A x for x = the linear index: the centre's neighbours are 1, 3, 5, 7.
        let x: Vec<f64> = (0..9).map(f64::from).collect();
        assert_eq!(
            a.matvec(&x).unwrap()[4],
            4.0 * 4.0 - (1.0 + 3.0 + 5.0 + 7.0)
        );
    }

    #[test]
    fn poisson_3d_is_the_seven_point_stencil_and_symmetric() {
        let t = poisson_3d(3).unwrap();
        let a = csr(&t);
        assert_eq!((a.rows(), a.nnz()), (27, 27 + 2 * 3 * 2 * 9));
        assert_eq!(
            a.matvec(&[1.0; 27]).unwrap()[13],
            0.0,
            "the centre has 6 neighbours"
        );
        let mut entries: Vec<(i64, i64, u64)> = t
            .entries()
            .iter()
            .map(|&(r, c, v)| (r, c, v.to_bits()))
            .collect();
        let mut mirrored: Vec<(i64, i64, u64)> =
            entries.iter().map(|&(r, c, v)| (c, r, v)).collect();
        entries.sort_unstable();
        mirrored.sort_unstable();
        assert_eq!(entries, mirrored);
    }

    #[test]
    fn banded_clips_to_the_matrix_and_bad_sizes_are_errors() {
        let a = csr(&banded(4, &[(-1, -1.0), (0, 2.0), (1, -1.0), (9, 5.0)]).unwrap());
        assert_eq!(a.nnz(), 4 + 3 + 3);
        assert_eq!(a.matvec(&[1.0; 4]).unwrap(), vec![1.0, 0.0, 0.0, 1.0]);
        assert!(matches!(poisson_2d(-1), Err(SparseError::BadShape { .. })));
        assert!(matches!(
            poisson_3d(1 << 40),
            Err(SparseError::BadShape { .. })
        ));
        assert_eq!(poisson_2d(0).unwrap().rows(), 0);
    }
}
