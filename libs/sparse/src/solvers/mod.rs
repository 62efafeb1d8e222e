//! Krylov solvers for `A x = b` with SciPy's semantics (`scipy.sparse.linalg.cg`,
//! `bicgstab`, `cgs`): a start `x0` (none: zeros), tolerances `rtol` and `atol`, an
//! iteration cap `maxiter`, a [`Preconditioner`] `M`, a per-iteration callback and an
//! `info` code, over a [`CsrMatrix`] and `diffuse-array` vectors. The scalars (`alpha`,
//! `beta`, `rho`, ...) stay 0-d arrays so that nothing waits for them.
//!
//! The only blocking read is the residual check, which [`SolveOptions::check_every`] may
//! space out (SciPy checks every iteration): between checks the tasks of many iterations
//! stream into the runtime's window, so fusion spans iteration boundaries. A method is a
//! [`Krylov`] state whose clone is the state as it is (arrays are shared handles), so a
//! caller can keep one and run iterations again from it; [`drive`] does so to tell a
//! breakdown from an exact solution found between two checks.

mod bicgstab;
mod cg;
mod cgs;
mod gmg;

use std::sync::Arc;

use diffuse_array::{zeros, Array, DType};

use crate::{CsrMatrix, SparseError};

pub use bicgstab::BiCgStab;
pub use cg::Cg;
pub use cgs::Cgs;
pub use gmg::{grid_side, injection, interpolation, Restriction, VCycle};

/// An approximation of `A^-1` applied to a residual (SciPy's `M`): the solvers call it once
/// or twice an iteration.
pub trait Preconditioner {
    /// `M r`.
    fn apply(&self, r: &Array) -> Result<Array, SparseError>;
}

/// A matrix preconditions by its product.
impl Preconditioner for CsrMatrix {
    fn apply(&self, r: &Array) -> Result<Array, SparseError> {
        self.spmv(r)
    }
}

/// A preconditioner shared by a state and its clones.
pub type SharedPreconditioner = Arc<dyn Preconditioner>;

/// What a method's step reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The iteration completed.
    Continue,
    /// The iteration found the system solved half-way (BiCGSTAB's check of `s`) and stopped.
    Converged,
}

/// What every method keeps: the iterate `x` and its residual `r` (whose norm the driver
/// checks), and the system's right-hand side `b` and preconditioner `M`.
#[derive(Clone)]
pub struct Iterate {
    x: Array,
    r: Array,
    b: Array,
    m: Option<SharedPreconditioner>,
}

impl Iterate {
    /// `x = x0` and `r = b - A x0`; without `x0`, `x = 0` and `r = b` as SciPy starts. No
    /// preconditioner.
    fn start(a: &CsrMatrix, b: &Array, x0: Option<&Array>) -> Result<Self, SparseError> {
        let rows = a.shape().0;
        for (what, v) in [("b", Some(b)), ("x0", x0)] {
            if let Some(v) = v {
                let shape = v.shape();
                if shape.as_slice() != [rows] {
                    return Err(SparseError::BadVector {
                        what,
                        shape: format!("{shape:?}"),
                        rows,
                    });
                }
            }
        }
        let (x, r) = match x0 {
            None => (zeros(b.context(), &[rows], DType::F64)?, b.copy()?),
            Some(x0) => (x0.copy()?, (b - a.spmv(x0)?)?),
        };
        Ok(Iterate {
            x,
            r,
            b: b.clone(),
            m: None,
        })
    }

    /// `M v`, or `v` itself without a preconditioner.
    fn precondition(&self, v: &Array) -> Result<Array, SparseError> {
        match &self.m {
            Some(m) => m.apply(v),
            None => Ok(v.clone()),
        }
    }

    /// The current approximation of the solution.
    pub fn x(&self) -> &Array {
        &self.x
    }

    /// The method's residual `b - A x` (by recurrence, except for CGS).
    pub fn r(&self) -> &Array {
        &self.r
    }
}

/// One Krylov method: its state after set-up and one iteration at a time. A clone is the
/// state as it is (nothing is copied), which a caller keeps to run iterations again from.
pub trait Krylov: Sized + Clone {
    /// The method's name, as SciPy spells it.
    const NAME: &'static str;
    /// What a breakdown (a division by zero other than at an exact solution) means for the
    /// method, for the error that reports it.
    const BREAKDOWN: &'static str;
    /// What the method assumes of the matrix beyond being square (none: nothing), for
    /// explaining a run that did not converge.
    const ASSUMES: Option<&'static str> = None;
    /// The state for `A x = b` from `x0` (none: zeros), preconditioned by `m` (none: the
    /// identity).
    fn start(
        a: &CsrMatrix,
        b: &Array,
        x0: Option<&Array>,
        m: Option<SharedPreconditioner>,
    ) -> Result<Self, SparseError> {
        Self::begin(Iterate {
            m,
            ..Iterate::start(a, b, x0)?
        })
    }
    /// The state at the first iterate `it`: what [`Krylov::start`] sets up once it has the
    /// iterate.
    fn begin(it: Iterate) -> Result<Self, SparseError>;
    /// The current iterate and residual.
    fn iterate(&self) -> &Iterate;
    /// One iteration. `check` is true on iterations whose start checked the residual; a
    /// method with a mid-iteration test (BiCGSTAB) may read it there against `atol` and stop
    /// early.
    fn step(&mut self, a: &CsrMatrix, atol: f64, check: bool) -> Result<Step, SparseError>;
}

/// How [`solve`] and [`drive`] run a method: SciPy's keywords, and how often to check.
#[derive(Clone)]
pub struct SolveOptions {
    /// The start (SciPy's `x0`; none: zeros).
    pub x0: Option<Array>,
    /// Relative tolerance: converged when `||r|| < max(atol, rtol * ||b||)`.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// The iteration cap (none: 10 times the rows, as SciPy).
    pub maxiter: Option<usize>,
    /// The preconditioner (SciPy's `M`; none: the identity).
    pub m: Option<SharedPreconditioner>,
    /// Iterations between residual checks, the only blocking reads (SciPy: 1).
    pub check_every: usize,
}

impl Default for SolveOptions {
    /// SciPy's defaults: `x0 = 0`, `rtol = 1e-5`, `atol = 0`, `maxiter = 10 n`, no `M`,
    /// a check every iteration.
    fn default() -> Self {
        SolveOptions {
            x0: None,
            rtol: 1e-5,
            atol: 0.0,
            maxiter: None,
            m: None,
            check_every: 1,
        }
    }
}

/// What [`drive`] tells its caller as it runs; every method has a default that does
/// nothing.
pub trait Monitor {
    /// After each whole iteration, with the iterate (SciPy's `callback(xk)`). Iterations that the
    /// driver runs again after a breakdown between checks are reported again.
    fn iterated(&mut self, _x: &Array) -> Result<(), SparseError> {
        Ok(())
    }
    /// At each residual check that found a finite residual, after `iterations` iterations;
    /// `last` when the run stops there (converged or at `maxiter`).
    fn checked(&mut self, _iterations: usize, _last: bool) {}
    /// The driver went back to the state of the check after `iterations` iterations, to run
    /// the iterations since again checking each one.
    fn rewound(&mut self, _iterations: usize) {}
}

/// No monitoring.
impl Monitor for () {}

/// A callback called with the iterate after each iteration.
pub struct Callback<F>(pub F);

impl<F: FnMut(&Array) -> Result<(), SparseError>> Monitor for Callback<F> {
    fn iterated(&mut self, x: &Array) -> Result<(), SparseError> {
        (self.0)(x)
    }
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The residual fell below the tolerance.
    Converged,
    /// `maxiter` iterations ran without converging.
    NotConverged,
    /// The residual became non-finite right after a finite one: a division by zero.
    Breakdown,
}

/// The result of a run: the final state, the iterations run and how it ended.
pub struct Solution<K> {
    /// The method's state where it stopped (its iterate is the solution).
    pub state: K,
    /// The iterations run.
    pub iterations: usize,
    /// `||r||` where it stopped.
    pub residual: f64,
    /// How it ended.
    pub status: Status,
}

impl<K: Krylov> Solution<K> {
    /// The solution `x`.
    pub fn x(&self) -> &Array {
        self.state.iterate().x()
    }

    /// SciPy's `info`: 0 converged, the iterations run (at least 1) when not converged,
    /// -10 for a breakdown.
    pub fn info(&self) -> i64 {
        match self.status {
            Status::Converged => 0,
            Status::NotConverged => self.iterations.max(1) as i64,
            Status::Breakdown => -10,
        }
    }
}

/// Whether a residual norm says the system is solved: below `atol` (SciPy's test), or
/// exactly zero, which is an exact solution even where `atol` is 0: the next iteration
/// would divide zero by zero.
pub(crate) fn is_converged(residual: f64, atol: f64) -> bool {
    residual < atol || residual == 0.0
}

/// `||v||` read back to the host (a blocking read).
pub(crate) fn norm(v: &Array) -> Result<f64, SparseError> {
    Ok(v.norm()?.item::<f64>()?)
}

/// Method `K` on `A x = b` with `options`: [`Krylov::start`], then [`drive`].
pub fn solve<K: Krylov>(
    a: &CsrMatrix,
    b: &Array,
    options: &SolveOptions,
    monitor: &mut impl Monitor,
) -> Result<Solution<K>, SparseError> {
    let state = K::start(a, b, options.x0.as_ref(), options.m.clone())?;
    drive(a, b, state, options, monitor)
}

/// Runs `state` (a method started on `A x = b`) until the residual meets the tolerance,
/// `maxiter` iterations or a breakdown, checking the residual every `check_every`
/// iterations and at `maxiter`.
///
/// A method may reach an exact solution between checks and divide zero by zero in the next
/// iteration: a non-finite residual at a check says that something broke down since the
/// last check, not what. The state of the last check (finite, not converged) is kept; from
/// it the iterations are run again checking every one, as SciPy does, where a zero residual
/// is convergence and a non-finite one right after a finite one is a true breakdown.
pub fn drive<K: Krylov>(
    a: &CsrMatrix,
    b: &Array,
    mut state: K,
    options: &SolveOptions,
    monitor: &mut impl Monitor,
) -> Result<Solution<K>, SparseError> {
    if options.check_every == 0 {
        return Err(SparseError::BadOption {
            reason: "check_every must be at least 1".into(),
        });
    }
    for (name, value) in [("rtol", options.rtol), ("atol", options.atol)] {
        if !(value >= 0.0 && value.is_finite()) {
            return Err(SparseError::BadOption {
                reason: format!("{name} must be a finite number >= 0, not {value}"),
            });
        }
    }
    let rows = usize::try_from(a.shape().0).unwrap_or(usize::MAX);
    let maxiter = options.maxiter.unwrap_or(rows.saturating_mul(10));
    let atol = options.atol.max(options.rtol * norm(b)?);
    let mut iterations = 0;
    let mut last_checked: Option<(K, usize)> = None;
    // Checking every iteration, there is nothing to run again.
    let mut check_each = options.check_every == 1;
    let status = loop {
        let check = check_each || iterations % options.check_every == 0 || iterations == maxiter;
        if check {
            let residual = norm(state.iterate().r())?;
            if !residual.is_finite() {
                match last_checked.take() {
                    Some((kept, at)) if !check_each => {
                        (state, iterations, check_each) = (kept, at, true);
                        monitor.rewound(at);
                        continue;
                    }
                    _ => break Status::Breakdown,
                }
            }
            let converged = is_converged(residual, atol);
            monitor.checked(iterations, converged || iterations == maxiter);
            if converged {
                break Status::Converged;
            }
            last_checked = Some((state.clone(), iterations));
        }
        if iterations == maxiter {
            break Status::NotConverged;
        }
        if state.step(a, atol, check)? == Step::Converged {
            // Solved half-way through an iteration, which SciPy neither counts nor reports.
            break Status::Converged;
        }
        iterations += 1;
        monitor.iterated(state.iterate().x())?;
    };
    drop(last_checked);
    // The residual where the loop stopped (BiCGSTAB may stop half-way, after its last check).
    let residual = norm(state.iterate().r())?;
    Ok(Solution {
        state,
        iterations,
        residual,
        status,
    })
}
