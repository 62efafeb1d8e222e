//! Conjugate gradients squared, as `scipy.sparse.linalg.cgs` runs it (no preconditioner):
//! like SciPy, each iteration recomputes the true residual `r = b - A x` instead of
//! updating it, with one product.

use diffuse_array::{zeros, Array, DType};
use diffuse_sparse::CsrMatrix;

use super::{Krylov, Step};

/// The CGS state.
pub struct Cgs {
    x: Array,
    r: Array,
    b: Array,
    /// The shadow residual, `r` at the start.
    rtilde: Array,
    /// `p`, `q` and `rho` of the previous iteration (none before the first).
    previous: Option<(Array, Array, Array)>,
}

impl Krylov for Cgs {
    const NAME: &'static str = "cgs";

    fn start(a: &CsrMatrix, b: &Array) -> anyhow::Result<Self> {
        Ok(Cgs {
            x: zeros(b.context(), &[a.shape().0], DType::F64)?,
            r: b.copy()?,
            b: b.clone(),
            rtilde: b.copy()?,
            previous: None,
        })
    }

    fn residual(&self) -> &Array {
        &self.r
    }

    fn solution(&self) -> &Array {
        &self.x
    }

    fn step(&mut self, a: &CsrMatrix, _atol: f64, _check: bool) -> anyhow::Result<Step> {
        let rho = self.rtilde.dot(&self.r)?;
        let (p, u) = match &self.previous {
            Some((p, q, rho_prev)) => {
                let beta = (&rho / rho_prev)?;
                let u = (&self.r + (q * &beta)?)?;
                // p = u + beta * (q + beta * p), in SciPy's order of operations.
                let p = ((((p * &beta)? + q)? * &beta)? + &u)?;
                (p, u)
            }
            None => (self.r.copy()?, self.r.copy()?),
        };
        let vhat = a.spmv(&p)?;
        let alpha = (&rho / self.rtilde.dot(&vhat)?)?;
        let q = (&u - (&vhat * &alpha)?)?;
        let uhat = (&u + &q)?;
        self.x = (&self.x + (&uhat * &alpha)?)?;
        self.r = (&self.b - a.spmv(&self.x)?)?;
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
