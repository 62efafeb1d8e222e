//! Geometric multigrid as Legate Sparse's GMG example runs it: a V-cycle [`Preconditioner`]
//! for [`Cg`](super::Cg), with a weighted Jacobi smoother, injection (or full-weighting)
//! restriction and bilinear prolongation, on the 2-D Poisson matrix of an `n x n` grid with
//! `n = 2^k - 1` (every level's grid is then `(n - 1) / 2` of the finer one's).
//!
//! Injection does not make a symmetric preconditioner, and CG converges slowly with it
//! (iterations to 1e-8 grow with the grid: 52 at n = 63, 167 at n = 255, over 500 at
//! n = 1023). Full weighting restricts by the prolongation's transpose instead: the cycle
//! is then symmetric and CG takes 7 or 8 iterations at every size. Both run the same tasks
//! per iteration.
//!
//! Every operator is a [`CsrMatrix`] (the level's Poisson matrix, the restriction and the
//! prolongation) and every vector update an array operation, so one cycle is a stream of
//! SpMVs and element-wise tasks that the runtime fuses like any other program.

use diffuse_array::{Array, ArrayContext};

use super::Preconditioner;
use crate::{generators, CsrMatrix, HostCsr, IndexWidth, SparseError, Triplets};

/// The Jacobi weight (the classic 2/3 for the 5-point Laplacian).
const OMEGA: f64 = 2.0 / 3.0;
/// The diagonal of the unscaled 5-point Laplacian.
const DIAGONAL: f64 = 4.0;
/// Smoothing sweeps before and after the coarse correction.
const SWEEPS: usize = 2;
/// Jacobi sweeps that stand for a solve on the coarsest grid.
const COARSEST_SWEEPS: usize = 8;
/// The coarsest grid side: levels stop coarsening here.
const COARSEST: i64 = 3;

/// How a multigrid V-cycle moves a residual to the next coarser grid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Restriction {
    /// Each coarse point takes the fine point it sits on (Legate Sparse's choice).
    #[default]
    Injection,
    /// The transpose of the bilinear prolongation (each coarse point the weighted sum of
    /// the nine fine points around it): a symmetric cycle.
    FullWeighting,
}

/// One level of the hierarchy: its operator, and the transfers to and from the next coarser
/// level (none on the coarsest).
struct Level {
    a: CsrMatrix,
    /// Injection (coarse point `(i, j)` takes fine point `(2i + 1, 2j + 1)`) or full
    /// weighting.
    restrict: Option<CsrMatrix>,
    /// Bilinear interpolation from the coarser grid.
    prolong: Option<CsrMatrix>,
}

/// The side of the square grid with `rows` unknowns, when it is `2^k - 1`.
pub fn grid_side(rows: i64) -> Option<i64> {
    let n = (rows as f64).sqrt().round() as i64;
    (n * n == rows && n >= 1 && (n + 1).count_ones() == 1).then_some(n)
}

fn csr(cx: &ArrayContext, t: &Triplets) -> Result<CsrMatrix, SparseError> {
    let host = HostCsr::from_triplets(t, IndexWidth::smallest_for(t.cols()))?;
    CsrMatrix::from_host(cx, &host)
}

/// The injection from the `fine x fine` grid to the `coarse x coarse` one.
pub fn injection(fine: i64, coarse: i64) -> Result<Triplets, SparseError> {
    let mut t = Triplets::new(coarse * coarse, fine * fine)?;
    for i in 0..coarse {
        for j in 0..coarse {
            t.push(i * coarse + j, (2 * i + 1) * fine + 2 * j + 1, 1.0)?;
        }
    }
    Ok(t)
}

/// Bilinear interpolation from the `coarse x coarse` grid to the `fine x fine` one: coarse
/// point `(i, j)` gives weight `(1 - |di|/2)(1 - |dj|/2)` to fine point
/// `(2i + 1 + di, 2j + 1 + dj)`, `di, dj` in `-1..=1`.
pub fn interpolation(fine: i64, coarse: i64) -> Result<Triplets, SparseError> {
    let mut t = Triplets::new(fine * fine, coarse * coarse)?;
    for i in 0..coarse {
        for j in 0..coarse {
            for di in -1..=1i64 {
                for dj in -1..=1i64 {
                    let weight = (1.0 - di.abs() as f64 / 2.0) * (1.0 - dj.abs() as f64 / 2.0);
                    let (fi, fj) = (2 * i + 1 + di, 2 * j + 1 + dj);
                    t.push(fi * fine + fj, i * coarse + j, weight)?;
                }
            }
        }
    }
    Ok(t)
}

/// The transpose of `t`.
fn transpose(t: &Triplets) -> Result<Triplets, SparseError> {
    let mut out = Triplets::new(t.cols(), t.rows())?;
    for &(row, col, value) in t.entries() {
        out.push(col, row, value)?;
    }
    Ok(out)
}

/// `sweeps` weighted Jacobi sweeps on `a e = rhs` from `e` (`None`: from zero).
fn smooth(
    a: &CsrMatrix,
    rhs: &Array,
    e: Option<Array>,
    sweeps: usize,
) -> Result<Array, SparseError> {
    let step = OMEGA / DIAGONAL;
    let (mut e, done) = match e {
        Some(e) => (e, 0),
        // The first sweep from zero is `step * rhs`.
        None => ((rhs * step)?, 1),
    };
    for _ in done..sweeps {
        e = (&e + ((rhs - a.spmv(&e)?)? * step)?)?;
    }
    Ok(e)
}

/// The multigrid V-cycle on the 2-D Poisson matrix of a `2^k - 1` grid, as a
/// preconditioner: one cycle from a zero guess per application.
pub struct VCycle {
    levels: Vec<Level>,
}

impl VCycle {
    /// The hierarchy of `a` (the Poisson matrix of an `n x n` grid, `n = 2^k - 1`, which
    /// is the finest level's operator) down to the coarsest grid, with matrices in `cx`.
    pub fn new(
        cx: &ArrayContext,
        a: &CsrMatrix,
        restriction: Restriction,
    ) -> Result<Self, SparseError> {
        let (rows, cols) = a.shape();
        let n = grid_side(rows)
            .filter(|_| rows == cols)
            .ok_or(SparseError::NotAGrid { rows, cols })?;
        let mut levels = Vec::new();
        let mut side = n;
        let mut operator = a.clone();
        while side > COARSEST {
            let coarse = (side - 1) / 2;
            let prolong = interpolation(side, coarse)?;
            let restrict = match restriction {
                Restriction::Injection => injection(side, coarse)?,
                Restriction::FullWeighting => transpose(&prolong)?,
            };
            levels.push(Level {
                a: operator,
                restrict: Some(csr(cx, &restrict)?),
                prolong: Some(csr(cx, &prolong)?),
            });
            operator = csr(cx, &generators::poisson_2d(coarse)?)?;
            side = coarse;
        }
        levels.push(Level {
            a: operator,
            restrict: None,
            prolong: None,
        });
        Ok(VCycle { levels })
    }

    /// One V-cycle from `level` for `a e = rhs`: an approximation of `e`.
    fn cycle(&self, level: usize, rhs: &Array) -> Result<Array, SparseError> {
        let l = &self.levels[level];
        let (Some(restrict), Some(prolong)) = (&l.restrict, &l.prolong) else {
            return smooth(&l.a, rhs, None, COARSEST_SWEEPS);
        };
        let e = smooth(&l.a, rhs, None, SWEEPS)?;
        let residual = (rhs - l.a.spmv(&e)?)?;
        // The injected residual goes to the coarse grid's (unscaled) operator as it is. With
        // spacing 2h the consistent right-hand side would be 4 times it, but injection is
        // not a multiple of the prolongation's transpose, and the full correction makes
        // this non-symmetric preconditioner diverge under CG; unscaled it is damped and CG
        // converges. Full weighting (the prolongation's transpose) sums four times the
        // weight injection takes, so it is the consistent right-hand side and the cycle is
        // symmetric.
        let coarse_rhs = restrict.spmv(&residual)?;
        let correction = self.cycle(level + 1, &coarse_rhs)?;
        let e = (&e + prolong.spmv(&correction)?)?;
        smooth(&l.a, rhs, Some(e), SWEEPS)
    }
}

impl Preconditioner for VCycle {
    fn apply(&self, r: &Array) -> Result<Array, SparseError> {
        self.cycle(0, r)
    }
}
