//! Conjugate gradients squared, as `scipy.sparse.linalg.cgs` runs it (no preconditioner):
//! like SciPy, each iteration recomputes the true residual `r = b - A x` instead of
//! updating it, with one product.

use diffuse_array::Array;
use diffuse_sparse::CsrMatrix;

use super::{Iterate, Krylov, SolverArgs, Step};

/// The CGS state.
#[derive(Clone)]
pub struct Cgs {
    it: Iterate,
    b: Array,
    /// The shadow residual, `r` at the start.
    rtilde: Array,
    /// `p`, `q` and `rho` of the previous iteration (none before the first).
    previous: Option<(Array, Array, Array)>,
}

impl Krylov for Cgs {
    const NAME: &'static str = "cgs";
    const BREAKDOWN: &'static str = "rtilde . r = 0 or rtilde . A p = 0 for a residual r != 0 \
         (SciPy's info -10)";
    const NOT_CONVERGED: &'static str = "";

    fn start(a: &CsrMatrix, b: &Array, _args: &SolverArgs) -> anyhow::Result<Self> {
        Ok(Cgs {
            it: Iterate::start(a, b)?,
            b: b.clone(),
            rtilde: b.copy()?,
            previous: None,
        })
    }

    fn iterate(&self) -> &Iterate {
        &self.it
    }

    fn step(&mut self, a: &CsrMatrix, _atol: f64, _check: bool) -> anyhow::Result<Step> {
        let rho = self.rtilde.dot(&self.it.r)?;
        let (p, u) = match &self.previous {
            Some((p, q, rho_prev)) => {
                let beta = (&rho / rho_prev)?;
                let u = (&self.it.r + (q * &beta)?)?;
                // p = u + beta * (q + beta * p), in SciPy's order of operations.
                let p = ((((p * &beta)? + q)? * &beta)? + &u)?;
                (p, u)
            }
            None => (self.it.r.copy()?, self.it.r.copy()?),
        };
        let vhat = a.spmv(&p)?;
        let alpha = (&rho / self.rtilde.dot(&vhat)?)?;
        let q = (&u - (&vhat * &alpha)?)?;
        let uhat = (&u + &q)?;
        self.it.x = (&self.it.x + (&uhat * &alpha)?)?;
        self.it.r = (&self.b - a.spmv(&self.it.x)?)?;
        self.previous = Some((p, q, rho));
        Ok(Step::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::reference;
    use crate::solvers::tests::agrees_with_reference;

    #[test]
    fn cgs_equals_the_sequential_loops_fused_or_not() {
        agrees_with_reference::<Cgs>(reference::cgs);
    }
}
