//! BiCGSTAB, as `scipy.sparse.linalg.bicgstab` runs it.
//!
//! SciPy also tests `|rho|` and `|omega|` against breakdown every iteration; those tests
//! would be blocking reads, so here a breakdown shows as a non-finite residual at the next
//! check, from which the driver runs the iterations since the last check again, checking
//! each.
//!
//! Where the runtime fuses scalar work into the launches that consume it
//! (`Context::fuses_scalar_work`), `alpha = rho / (rtilde . v)` and `omega = (t . s) / (t . t)`
//! are not kept: each use divides the dot products again (the same operands, so the same
//! value). A ratio held from one iteration to the next would be a one-point launch of its
//! own, since its result outlives any group; recomputed where it is used, it is a temporary
//! of the launch that reads it and joins that launch (computed at every point). Elsewhere
//! (fusion off, or placements that may use GPUs) each ratio is computed once and kept.

use diffuse_array::Array;

use super::{is_converged, norm, Iterate, Krylov, Step};
use crate::{CsrMatrix, SparseError};

/// What an iteration hands to the next one: `p`, `v`, `rho`, `alpha` and `omega` (as
/// [`Ratio`]s).
#[derive(Clone)]
struct Carried {
    p: Array,
    v: Array,
    rho: Array,
    alpha: Ratio,
    omega: Ratio,
}

/// A quotient of two 0-d arrays: computed once, or kept as its operands and divided where
/// it is used (module documentation).
#[derive(Clone)]
enum Ratio {
    /// The quotient.
    Value(Array),
    /// Its operands.
    Operands {
        /// The dividend.
        numerator: Array,
        /// The divisor.
        denominator: Array,
    },
}

impl Ratio {
    /// `numerator / denominator`, kept as operands where the runtime fuses scalar work.
    fn new(numerator: Array, denominator: Array) -> Result<Self, SparseError> {
        Ok(if numerator.context().ir().fuses_scalar_work() {
            Ratio::Operands {
                numerator,
                denominator,
            }
        } else {
            Ratio::Value((&numerator / &denominator)?)
        })
    }

    /// The quotient (a new 0-d array when kept as operands).
    fn value(&self) -> Result<Array, SparseError> {
        Ok(match self {
            Ratio::Value(value) => value.clone(),
            Ratio::Operands {
                numerator,
                denominator,
            } => (numerator / denominator)?,
        })
    }
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

    fn begin(it: Iterate) -> Result<Self, SparseError> {
        Ok(BiCgStab {
            rtilde: it.r.copy()?,
            it,
            previous: None,
        })
    }

    fn iterate(&self) -> &Iterate {
        &self.it
    }

    fn step(&mut self, a: &CsrMatrix, atol: f64, check: bool) -> Result<Step, SparseError> {
        let rho = self.rtilde.dot(&self.it.r)?;
        let p = match &self.previous {
            Some(c) => {
                let beta = ((&rho / &c.rho)? * (&c.alpha.value()? / &c.omega.value()?)?)?;
                (((&c.p - (&c.v * &c.omega.value()?)?)? * &beta)? + &self.it.r)?
            }
            None => self.it.r.copy()?,
        };
        let phat = self.it.precondition(&p)?;
        let v = a.spmv(&phat)?;
        let alpha = Ratio::new(rho.clone(), self.rtilde.dot(&v)?)?;
        let s = (&self.it.r - (&v * &alpha.value()?)?)?;
        if check && is_converged(norm(&s)?, atol) {
            // Solved half-way: SciPy's early exit (only where the driver reads anyway).
            self.it.x = (&self.it.x + (&phat * &alpha.value()?)?)?;
            self.it.r = s;
            return Ok(Step::Converged);
        }
        let shat = self.it.precondition(&s)?;
        let t = a.spmv(&shat)?;
        let omega = Ratio::new(t.dot(&s)?, t.dot(&t)?)?;
        self.it.x = ((&self.it.x + (&phat * &alpha.value()?)?)? + (&shat * &omega.value()?)?)?;
        self.it.r = (&s - (&t * &omega.value()?)?)?;
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
