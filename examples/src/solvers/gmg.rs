//! Geometric multigrid as Legate Sparse's GMG example runs it: conjugate gradients
//! preconditioned by one V-cycle per iteration, with a weighted Jacobi smoother, injection
//! restriction and bilinear prolongation, on the 2-D Poisson matrix of an `n x n` grid with
//! `n = 2^k - 1` (every level's grid is then `(n - 1) / 2` of the finer one's).
//!
//! Injection does not make a symmetric preconditioner, and CG converges slowly with it
//! (iterations to 1e-8 grow with the grid: 52 at n = 63, 167 at n = 255, over 500 at
//! n = 1023). `--restriction full-weighting` restricts by the prolongation's transpose
//! instead: the cycle is then symmetric and CG takes 7 or 8 iterations at every size. Both
//! run the same tasks per iteration.
//!
//! Every operator is a `diffuse-sparse` matrix (the level's Poisson matrix, the restriction
//! and the prolongation) and every vector update an array operation, so one iteration is a
//! stream of SpMVs and element-wise tasks that the runtime fuses like any other program.

use diffuse_array::{Array, ArrayContext};
use diffuse_sparse::{generators, CsrMatrix, HostCsr, IndexWidth, Triplets};

use super::{Iterate, Krylov, Restriction, SolverArgs, Step};

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

/// One level of the hierarchy: its operator, and the transfers to and from the next coarser
/// level (none on the coarsest).
#[derive(Clone)]
struct Level {
    a: CsrMatrix,
    /// Injection (coarse point `(i, j)` takes fine point `(2i + 1, 2j + 1)`) or full
    /// weighting.
    restrict: Option<CsrMatrix>,
    /// Bilinear interpolation from the coarser grid.
    prolong: Option<CsrMatrix>,
    rows: i64,
}

/// The side of the square grid with `rows` unknowns, when it is `2^k - 1`.
fn grid_side(rows: i64) -> Option<i64> {
    let n = (rows as f64).sqrt().round() as i64;
    (n * n == rows && n >= 1 && (n + 1).count_ones() == 1).then_some(n)
}

fn csr(cx: &ArrayContext, t: &Triplets) -> anyhow::Result<CsrMatrix> {
    let host = HostCsr::from_triplets(t, IndexWidth::smallest_for(t.cols()))?;
    Ok(CsrMatrix::from_host(cx, &host)?)
}

/// The injection from the `fine x fine` grid to the `coarse x coarse` one.
fn injection(fine: i64, coarse: i64) -> anyhow::Result<Triplets> {
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
fn interpolation(fine: i64, coarse: i64) -> anyhow::Result<Triplets> {
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
fn transpose(t: &Triplets) -> anyhow::Result<Triplets> {
    let mut out = Triplets::new(t.cols(), t.rows())?;
    for &(row, col, value) in t.entries() {
        out.push(col, row, value)?;
    }
    Ok(out)
}

/// The levels from the `n x n` grid (operator `a`) down to the coarsest.
fn hierarchy(
    cx: &ArrayContext,
    a: &CsrMatrix,
    n: i64,
    restriction: Restriction,
) -> anyhow::Result<Vec<Level>> {
    let mut levels = Vec::new();
    let mut side = n;
    let mut operator = a.clone();
    loop {
        if side <= COARSEST {
            levels.push(Level {
                a: operator,
                restrict: None,
                prolong: None,
                rows: side * side,
            });
            return Ok(levels);
        }
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
            rows: side * side,
        });
        operator = csr(cx, &generators::poisson_2d(coarse)?)?;
        side = coarse;
    }
}

/// `sweeps` weighted Jacobi sweeps on `a e = rhs` from `e` (`None`: from zero).
fn smooth(a: &CsrMatrix, rhs: &Array, e: Option<Array>, sweeps: usize) -> anyhow::Result<Array> {
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

/// One V-cycle from `level` for `a e = rhs`: an approximation of `e`.
fn v_cycle(levels: &[Level], level: usize, rhs: &Array) -> anyhow::Result<Array> {
    let l = &levels[level];
    let (Some(restrict), Some(prolong)) = (&l.restrict, &l.prolong) else {
        return smooth(&l.a, rhs, None, COARSEST_SWEEPS);
    };
    let e = smooth(&l.a, rhs, None, SWEEPS)?;
    let residual = (rhs - l.a.spmv(&e)?)?;
    // The injected residual goes to the coarse grid's (unscaled) operator as it is. With
    // spacing 2h the consistent right-hand side would be 4 times it, but injection is not a
    // multiple of the prolongation's transpose, and the full correction makes this
    // non-symmetric preconditioner diverge under CG; unscaled it is damped and CG converges.
    // Full weighting (the prolongation's transpose) sums four times the weight injection
    // takes, so it is the consistent right-hand side and the cycle is symmetric.
    let coarse_rhs = restrict.spmv(&residual)?;
    let correction = v_cycle(levels, level + 1, &coarse_rhs)?;
    let e = (&e + prolong.spmv(&correction)?)?;
    smooth(&l.a, rhs, Some(e), SWEEPS)
}

/// The GMG state: the iterate and residual, the hierarchy, and what the next iteration
/// reuses.
#[derive(Clone)]
pub struct Gmg {
    it: Iterate,
    levels: Vec<Level>,
    /// The search direction and `r . z` of the previous iteration (none before the first).
    previous: Option<(Array, Array)>,
}

impl Krylov for Gmg {
    const NAME: &'static str = "gmg";
    const BREAKDOWN: &'static str = "p . A p = 0 or r . z = 0 for a residual r != 0, so the \
         V-cycle preconditioned matrix is not positive definite";
    const NOT_CONVERGED: &'static str = "";

    fn start(a: &CsrMatrix, b: &Array, args: &SolverArgs) -> anyhow::Result<Self> {
        let (rows, cols) = a.shape();
        let n = grid_side(rows).filter(|_| rows == cols).ok_or_else(|| {
            anyhow::anyhow!(
                "gmg needs the 2-D Poisson matrix of an --n x --n grid with n = 2^k - 1 (3, 7, \
                 15, 31, ...); this matrix is {rows} x {cols}"
            )
        })?;
        let levels = hierarchy(b.context(), a, n, args.restriction.unwrap_or_default())?;
        debug_assert_eq!(levels[0].rows, rows);
        Ok(Gmg {
            it: Iterate::start(a, b)?,
            levels,
            previous: None,
        })
    }

    fn iterate(&self) -> &Iterate {
        &self.it
    }

    fn step(&mut self, a: &CsrMatrix, _atol: f64, _check: bool) -> anyhow::Result<Step> {
        let z = v_cycle(&self.levels, 0, &self.it.r)?;
        let rho = self.it.r.dot(&z)?;
        let p = match &self.previous {
            Some((p, rho_prev)) => ((p * &(&rho / rho_prev)?)? + &z)?,
            None => z,
        };
        let q = a.spmv(&p)?;
        let alpha = (&rho / p.dot(&q)?)?;
        self.it.x = (&self.it.x + (&p * &alpha)?)?;
        self.it.r = (&self.it.r - (&q * &alpha)?)?;
        self.previous = Some((p, rho));
        Ok(Step::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::{test_args, Switch};
    use crate::solvers::{run, Cg, SolverArgs};

    fn args(n: usize, procs: usize, fusion: Switch) -> SolverArgs {
        SolverArgs {
            common: test_args(n, 200, procs, fusion),
            matrix: None,
            check_every: 1,
            rtol: 1e-8,
            restriction: None,
        }
    }

    #[test]
    fn transfers_are_what_their_stencils_say() {
        // Interpolation of a constant coarse field is the constant inside and tapers at the
        // boundary; injection picks the odd points.
        let p = interpolation(7, 3).unwrap();
        let sums: f64 = p.entries().iter().map(|&(_, _, v)| v).sum();
        assert_eq!(sums, 9.0 * 4.0, "each coarse point spreads weight 4");
        let r = injection(7, 3).unwrap();
        assert!(r
            .entries()
            .iter()
            .all(|&(row, col, v)| v == 1.0 && col == (2 * (row / 3) + 1) * 7 + 2 * (row % 3) + 1));
        assert_eq!(grid_side(49), Some(7));
        assert_eq!(grid_side(36), None);
    }

    #[test]
    fn gmg_converges_in_far_fewer_iterations_than_cg_fused_or_not() {
        let cg = run::<Cg>(&args(31, 2, Switch::On)).unwrap();
        for (procs, fusion) in [(1, Switch::Off), (2, Switch::On), (3, Switch::On)] {
            let gmg = run::<Gmg>(&args(31, procs, fusion)).unwrap();
            let (its, cg_its) = (gmg.iterations.unwrap(), cg.iterations.unwrap());
            assert!(gmg.check < 1e-8, "{gmg:?}");
            assert!(its * 3 < cg_its * 2, "gmg {its} iterations vs cg {cg_its}");
        }
        // Full weighting: a symmetric cycle, a handful of iterations at any size.
        for n in [31, 127] {
            let full = SolverArgs {
                restriction: Some(Restriction::FullWeighting),
                ..args(n, 2, Switch::On)
            };
            let gmg = run::<Gmg>(&full).unwrap();
            assert!(gmg.check < 1e-8, "{gmg:?}");
            assert!(gmg.iterations.unwrap() <= 9, "n {n}: {gmg:?}");
        }
        let wrong = SolverArgs {
            restriction: Some(Restriction::FullWeighting),
            ..args(31, 1, Switch::On)
        };
        let err = run::<Cg>(&wrong).unwrap_err().to_string();
        assert!(err.contains("--restriction is a flag of gmg"), "{err}");
        let bad = run::<Gmg>(&args(30, 1, Switch::On))
            .unwrap_err()
            .to_string();
        assert!(bad.contains("n = 2^k - 1"), "{bad}");
    }
}
