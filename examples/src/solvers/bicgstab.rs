//! BiCGSTAB, as `scipy.sparse.linalg.bicgstab` runs it (no preconditioner).
//!
//! SciPy also tests `|rho|` and `|omega|` against breakdown every iteration; those tests
//! would be blocking reads, so here a breakdown shows as a non-finite residual at the next
//! check, from which the solver loop runs the iterations since the last check again,
//! checking each, and reports a breakdown as an error.

use diffuse_array::Array;
use diffuse_sparse::CsrMatrix;

use super::{is_converged, norm, Iterate, Krylov, SolverArgs, Step};

/// What an iteration hands to the next one: `p`, `v`, `rho`, `alpha`, `omega`.
#[derive(Clone)]
struct Carried {
    p: Array,
    v: Array,
    rho: Array,
    alpha: Array,
    omega: Array,
}

/// The BiCGSTAB state.
#[derive(Clone)]
pub struct BiCgStab {
    it: Iterate,
    /// The shadow residual, `r` at the start.
    rtilde: Array,
    previous: Option<Carried>,
}

impl Krylov for BiCgStab {
    const NAME: &'static str = "bicgstab";
    const BREAKDOWN: &'static str = "rtilde . r = 0, rtilde . v = 0 or t . t = 0 for a \
         residual r != 0 (SciPy's info -10)";
    const NOT_CONVERGED: &'static str = "";

    fn start(a: &CsrMatrix, b: &Array, _args: &SolverArgs) -> anyhow::Result<Self> {
        Ok(BiCgStab {
            it: Iterate::start(a, b)?,
            rtilde: b.copy()?,
            previous: None,
        })
    }

    fn iterate(&self) -> &Iterate {
        &self.it
    }

    fn step(&mut self, a: &CsrMatrix, atol: f64, check: bool) -> anyhow::Result<Step> {
        let rho = self.rtilde.dot(&self.it.r)?;
        let p = match &self.previous {
            Some(c) => {
                let beta = ((&rho / &c.rho)? * (&c.alpha / &c.omega)?)?;
                (((&c.p - (&c.v * &c.omega)?)? * &beta)? + &self.it.r)?
            }
            None => self.it.r.copy()?,
        };
        let v = a.spmv(&p)?;
        let alpha = (&rho / self.rtilde.dot(&v)?)?;
        let s = (&self.it.r - (&v * &alpha)?)?;
        if check && is_converged(norm(&s)?, atol) {
            // Solved half-way: SciPy's early exit (only where the loop reads anyway).
            self.it.x = (&self.it.x + (&p * &alpha)?)?;
            self.it.r = s;
            return Ok(Step::Converged);
        }
        let t = a.spmv(&s)?;
        let omega = (t.dot(&s)? / t.dot(&t)?)?;
        self.it.x = ((&self.it.x + (&p * &alpha)?)? + (&s * &omega)?)?;
        self.it.r = (&s - (&t * &omega)?)?;
        self.previous = Some(Carried {
            p,
            v,
            rho,
            alpha,
            omega,
        });
        Ok(Step::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::reference;
    use crate::solvers::tests::agrees_with_reference;

    #[test]
    fn bicgstab_equals_the_sequential_loops_fused_or_not() {
        agrees_with_reference::<BiCgStab>(reference::bicgstab);
    }
}
