//! Conjugate gradients, as `scipy.sparse.linalg.cg` runs it.

use diffuse_array::Array;

use super::{Iterate, Krylov, Step};
use crate::{CsrMatrix, SparseError};

/// The CG state: the iterate, the residual, and what the next iteration reuses.
#[derive(Clone)]
pub struct Cg {
    it: Iterate,
    /// The search direction and `r . z` of the previous iteration (none before the first).
    previous: Option<(Array, Array)>,
}

impl Krylov for Cg {
    const NAME: &'static str = "cg";
    const ASSUMES: Option<&'static str> = Some("a symmetric positive definite matrix");
    const BREAKDOWN: &'static str = "p . A p = 0 for a search direction p != 0 (or r . z = 0 \
         with a preconditioner), so the (preconditioned) matrix is not positive definite";

    fn begin(it: Iterate) -> Result<Self, SparseError> {
        Ok(Cg { it, previous: None })
    }

    fn iterate(&self) -> &Iterate {
        &self.it
    }

    fn step(&mut self, a: &CsrMatrix, _atol: f64, _check: bool) -> Result<Step, SparseError> {
        let z = self.it.precondition(&self.it.r)?;
        let rho = self.it.r.dot(&z)?;
        let p = match &self.previous {
            Some((p, rho_prev)) => {
                let beta = (&rho / rho_prev)?;
                ((p * &beta)? + &z)?
            }
            // Unpreconditioned, `z` is `r` itself: the direction is a copy.
            None if self.it.m.is_none() => z.copy()?,
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
