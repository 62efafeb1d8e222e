//! Conjugate gradients, as `scipy.sparse.linalg.cg` runs it (no preconditioner).

use diffuse_array::Array;
use diffuse_sparse::CsrMatrix;

use super::{Iterate, Krylov, SolverArgs, Step};

/// The CG state: the iterate, the residual, and what the next iteration reuses.
#[derive(Clone)]
pub struct Cg {
    it: Iterate,
    /// The search direction and `r . r` of the previous iteration (none before the first).
    previous: Option<(Array, Array)>,
}

impl Krylov for Cg {
    const NAME: &'static str = "cg";
    const BREAKDOWN: &'static str =
        "p . A p = 0 for a search direction p != 0, so the matrix is not positive definite";
    const NOT_CONVERGED: &'static str =
        "; cg needs a symmetric positive definite matrix (bicgstab and cgs take others)";

    fn start(a: &CsrMatrix, b: &Array, _args: &SolverArgs) -> anyhow::Result<Self> {
        Ok(Cg {
            it: Iterate::start(a, b)?,
            previous: None,
        })
    }

    fn iterate(&self) -> &Iterate {
        &self.it
    }

    fn step(&mut self, a: &CsrMatrix, _atol: f64, _check: bool) -> anyhow::Result<Step> {
        let rho = self.it.r.dot(&self.it.r)?;
        let p = match &self.previous {
            Some((p, rho_prev)) => {
                let beta = (&rho / rho_prev)?;
                ((p * &beta)? + &self.it.r)?
            }
            None => self.it.r.copy()?,
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
    use crate::solvers::reference;
    use crate::solvers::tests::agrees_with_reference;

    #[test]
    fn cg_equals_the_sequential_loops_fused_or_not() {
        agrees_with_reference::<Cg>(reference::cg);
    }
}
