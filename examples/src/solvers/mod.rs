//! Krylov solvers for `A x = b` written as a user writes them with NumPy and SciPy: the
//! algorithms of `scipy.sparse.linalg` (`cg`, `bicgstab`, `cgs`, no preconditioner, `x0 = 0`),
//! and `gmg`, CG preconditioned by a geometric multigrid V-cycle (Legate Sparse's example),
//! over a `diffuse-sparse` matrix and `diffuse-array` vectors, with the scalars (`alpha`,
//! `beta`, `rho`, ...) kept as 0-d arrays so that nothing waits for them.
//!
//! The only blocking read is the residual check, every `--check-every` iterations: between
//! checks the tasks of many iterations stream into the runtime's window, so fusion spans
//! iteration boundaries. The system is the 2-D Poisson matrix on an `--n x --n` grid (or
//! `--matrix FILE`, a Matrix Market file) and `b` all ones, as in
//! `benches/peers/scipy_solvers.py`, which runs SciPy on the same systems.

mod bicgstab;
mod cg;
mod cgs;
mod gmg;
#[cfg(test)]
mod reference;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context as _;
use clap::Args;
use diffuse_array::{zeros, Array, ArrayContext, DType};
use diffuse_sparse::{generators, mtx, CsrMatrix, HostCsr, IndexWidth};

use crate::common::{self, AppArgs, Counters, Measurement, RunRecord, Runtime};

pub use bicgstab::BiCgStab;
pub use cg::Cg;
pub use cgs::Cgs;
pub use gmg::Gmg;

/// Flags of the solvers: the shared ones, where `--iters` caps the iterations, and these.
#[derive(Args, Debug)]
pub struct SolverArgs {
    /// The shared flags (`--iters` is the iteration cap, like SciPy's `maxiter`).
    #[command(flatten)]
    pub common: AppArgs,
    /// A Matrix Market file with the (square) matrix, instead of the 2-D Poisson matrix.
    #[arg(long)]
    pub matrix: Option<PathBuf>,
    /// Iterations between residual checks (the only blocking reads).
    #[arg(long, default_value_t = 10)]
    pub check_every: usize,
    /// Relative tolerance: converged when `||r|| < rtol * ||b||` (SciPy's `rtol`; 0 runs
    /// exactly `--iters` iterations, for timing).
    #[arg(long, default_value_t = 1e-8)]
    pub rtol: f64,
    /// gmg only: how the V-cycle restricts residuals to the coarser grid (default
    /// `injection`, as Legate Sparse's example; `full-weighting` makes the cycle symmetric,
    /// and CG then converges in a number of iterations independent of the grid size).
    #[arg(long, value_enum)]
    pub restriction: Option<Restriction>,
}

/// How a multigrid V-cycle moves a residual to the next coarser grid.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Restriction {
    /// Each coarse point takes the fine point it sits on.
    #[default]
    Injection,
    /// The transpose of the bilinear prolongation (each coarse point the weighted sum of
    /// the nine fine points around it).
    FullWeighting,
}

/// What a solver's step reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The iteration completed.
    Continue,
    /// The iteration found the system solved half-way (BiCGSTAB's check of `s`) and stopped.
    Converged,
}

/// What every method keeps: the iterate `x` and its residual `r` (whose norm the loop
/// checks).
pub struct Iterate {
    x: Array,
    r: Array,
}

impl Iterate {
    /// `x = 0` and `r = b - A x = b`, as SciPy starts without `x0`.
    fn start(a: &CsrMatrix, b: &Array) -> anyhow::Result<Self> {
        Ok(Iterate {
            x: zeros(b.context(), &[a.shape().0], DType::F64)?,
            r: b.copy()?,
        })
    }
}

/// One Krylov method: its state after set-up and one iteration at a time.
pub trait Krylov: Sized {
    /// The name in the record.
    const NAME: &'static str;
    /// The state for `A x = b` from `x = 0`, with the run's flags.
    fn start(a: &CsrMatrix, b: &Array, args: &SolverArgs) -> anyhow::Result<Self>;
    /// The current iterate and residual.
    fn iterate(&self) -> &Iterate;
    /// One iteration. `check` is true on iterations whose start checked the residual; a
    /// method with a mid-iteration test (BiCGSTAB) may read it there and stop early.
    fn step(&mut self, a: &CsrMatrix, atol: f64, check: bool) -> anyhow::Result<Step>;
}

/// The matrix of the run: `--matrix FILE` or the Poisson matrix of an `--n x --n` grid.
fn load_matrix(args: &SolverArgs, method: &str) -> anyhow::Result<HostCsr> {
    let (triplets, what) = match &args.matrix {
        Some(file) => (
            mtx::read_matrix_market(file)?,
            format!("matrix {}", file.display()),
        ),
        None => {
            let n = i64::try_from(args.common.n).context("--n is too large")?;
            anyhow::ensure!(n >= 1, "--n must be at least 1");
            let what = format!("2-D Poisson {n} x {n}");
            // Five entries a row, each a triplet and then a CSR value and column.
            let entries = 5 * (n as u128) * (n as u128);
            common::ensure_fits(&args.common, entries * 40, &format!("the {what} matrix"))?;
            (generators::poisson_2d(n)?, what)
        }
    };
    let (rows, cols) = (triplets.rows(), triplets.cols());
    anyhow::ensure!(
        rows == cols,
        "{method} needs a square matrix, but the {what} is {rows} x {cols}"
    );
    anyhow::ensure!(
        rows >= 1,
        "{method} needs a matrix with rows; the {what} has none"
    );
    Ok(HostCsr::from_triplets(
        &triplets,
        IndexWidth::smallest_for(cols),
    )?)
}

/// The longest warm-up, in stretches of `--check-every` iterations.
const WARMUP_STRETCHES: usize = 10;

/// `||v||` read back to the host (a blocking read).
fn norm(v: &Array) -> anyhow::Result<f64> {
    Ok(v.norm()?.item::<f64>()?)
}

/// Runs method `M` on the system the flags describe and reports it.
///
/// The warm-up runs stretches of `--check-every` iterations until one of them plans no new
/// window (the steady state: the first iterations differ, and windows take a few stretches
/// to align with them); with `--jit on --jit-wait true` the run then waits for background
/// compiles. The rest is timed. Every counter of the
/// record (tasks, memo hits, analysis time, resident memory) is taken over the timed part.
/// `check` is the true relative residual `||b - A x|| / ||b||` of the result, computed on
/// the host; `residual` is the method's own (recurrence) residual at the last check.
pub fn run<M: Krylov>(args: &SolverArgs) -> anyhow::Result<RunRecord> {
    Ok(solve::<M>(args)?.0)
}

/// [`run`], also returning the solution.
fn solve<M: Krylov>(args: &SolverArgs) -> anyhow::Result<(RunRecord, Vec<f64>)> {
    anyhow::ensure!(args.check_every >= 1, "--check-every must be at least 1");
    anyhow::ensure!(
        args.restriction.is_none() || M::NAME == Gmg::NAME,
        "--restriction is a flag of gmg, not of {}",
        M::NAME
    );
    anyhow::ensure!(
        args.rtol >= 0.0 && args.rtol.is_finite(),
        "--rtol must be a finite number >= 0, not {}",
        args.rtol
    );
    let host = load_matrix(args, M::NAME)?;
    let rt = Runtime::start(&args.common)?;
    let cx: &ArrayContext = &rt.arrays;
    let rows = host.rows();
    let a = CsrMatrix::from_host(cx, &host)?;
    let b = Array::from_vec(cx, &[rows], vec![1.0; rows as usize])?;
    let atol = args.rtol * norm(&b)?;

    let mut solver = M::start(&a, &b, args)?;
    rt.ctx.flush_window()?;
    rt.runtime.record_streams(args.common.streams);
    let warmup = Instant::now();
    let maxiter = args.common.iters;
    // The warm-up lasts until a whole stretch between checks planned no new window (every
    // window a memo hit, so no new kernel either), at most WARMUP_STRETCHES stretches. The
    // timed part runs from there to the last check: iterations after it (and the final
    // flush, whose window has a shape of its own to plan and compile) are not timed.
    let mut warmup_iters = maxiter;
    let mut analysed_at_check = u64::MAX;
    let mut iterations = 0;
    let (mut warmup_seconds, mut compile_wait_seconds) = (0.0, 0.0);
    // The counters when timing started, and the iteration and counters of the last check.
    let mut timed: Option<(Counters, (usize, Counters))> = None;
    let (mut interval, mut interval_from) = (Instant::now(), 0);
    let mut iteration_seconds = Vec::new();
    loop {
        let check = iterations % args.check_every == 0 || iterations == maxiter;
        if check {
            let residual = norm(&solver.iterate().r)?;
            anyhow::ensure!(
                residual.is_finite(),
                "{} broke down: the residual norm is {residual} at iteration {iterations} (a \
                 division by zero: the method broke down, or the residual reached exactly zero \
                 earlier and --rtol 0 asked for more iterations)",
                M::NAME
            );
            if let Some((_, last)) = timed.as_mut() {
                let stretch = (iterations - interval_from).max(1);
                iteration_seconds.push(interval.elapsed().as_secs_f64() / stretch as f64);
                *last = (iterations, rt.counters());
            }
            (interval, interval_from) = (Instant::now(), iterations);
            // An exact solution stops the loop even with --rtol 0 (the next step would
            // divide by zero).
            if residual < atol || residual == 0.0 {
                break;
            }
        }
        if iterations == maxiter {
            break;
        }
        let analysed = rt.runtime.planner_stats().analysed;
        let settled =
            analysed == analysed_at_check || iterations >= WARMUP_STRETCHES * args.check_every;
        if check && iterations > 0 && timed.is_none() && settled {
            warmup_iters = iterations;
            warmup_seconds = warmup.elapsed().as_secs_f64();
            let waiting = Instant::now();
            if let Some(jit) = rt.runtime.jit().filter(|_| args.common.jit_wait) {
                jit.wait_idle();
            }
            compile_wait_seconds = waiting.elapsed().as_secs_f64();
            if args.common.streams {
                rt.print_streams();
                rt.runtime.record_streams(false);
            }
            rt.runtime.backend().reset_peak_memory();
            let start = rt.counters();
            timed = Some((start, (iterations, start)));
            interval = Instant::now();
        }
        if check {
            analysed_at_check = analysed;
        }
        if solver.step(&a, atol, check)? == Step::Converged {
            break;
        }
        iterations += 1;
    }
    // The residual where the loop stopped (BiCGSTAB may stop half-way, after its last check).
    let residual = norm(&solver.iterate().r)?;
    if timed.is_none() {
        warmup_seconds = warmup.elapsed().as_secs_f64();
    }
    let x = solver.iterate().x.to_vec::<f64>()?;
    let b_norm = (rows as f64).sqrt();
    let ax = host.matvec(&x)?;
    let true_residual = ax
        .iter()
        .map(|ax| (1.0 - ax) * (1.0 - ax))
        .sum::<f64>()
        .sqrt()
        / b_norm;
    let (start, (timed_until, end)) = timed.unwrap_or_else(|| {
        let now = rt.counters();
        (now, (warmup_iters, now))
    });
    let timed_iters = timed_until.saturating_sub(warmup_iters);
    let m = Measurement {
        warmup_seconds,
        compile_wait_seconds,
        iteration_seconds,
        iters: timed_iters,
        peak_store_bytes: rt.runtime.stats().peak_store_bytes as usize,
        counters: (start, end),
    };
    let mut record = rt
        .record(M::NAME, &args.common, m, true_residual)
        .with_result(&[&x]);
    if args.matrix.is_some() {
        // `n` is the grid side for the Poisson system; for a file, the matrix's rows.
        record.n = host.rows() as usize;
    }
    record.iterations = Some(iterations);
    record.residual = Some(residual / b_norm);
    Ok((record, x))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::common::{max_error, test_args, Switch};

    fn solver_args(n: usize, iters: usize, procs: usize, fusion: Switch) -> SolverArgs {
        SolverArgs {
            common: test_args(n, iters, procs, fusion),
            matrix: None,
            check_every: 5,
            rtol: 0.0,
            restriction: None,
        }
    }

    /// Method `M` run 24 iterations (residual checks every 3) on a 7 x 7 Poisson system,
    /// fused and not, on 1 to 3 processors, equals `reference` (plain loops; dot products
    /// summed in another order, so to rounding), and in the timed part, once windows settle,
    /// fusion executes fewer tasks than the method issues.
    pub fn agrees_with_reference<M: Krylov>(reference: fn(&HostCsr, &[f64], usize) -> Vec<f64>) {
        let host =
            HostCsr::from_triplets(&generators::poisson_2d(7).unwrap(), IndexWidth::I32).unwrap();
        let want = reference(&host, &[1.0; 49], 24);
        for procs in 1..=3 {
            for fusion in [Switch::Off, Switch::On] {
                let mut args = solver_args(7, 24, procs, fusion);
                args.check_every = 3;
                let (record, x) = solve::<M>(&args).unwrap();
                assert_eq!(record.iterations, Some(24));
                assert!(record.iters > 0, "no timed iterations: {record:?}");
                let error = max_error(&x, &want);
                assert!(
                    error <= 1e-10,
                    "{} procs {procs} {fusion:?}: x differs from the reference by {error}",
                    M::NAME
                );
                if fusion == Switch::On {
                    assert!(
                        record.tasks_executed_per_iter < record.tasks_issued_per_iter,
                        "{record:?}"
                    );
                } else {
                    assert_eq!(record.tasks_executed_per_iter, record.tasks_issued_per_iter);
                }
            }
        }
    }

    /// A Matrix Market file in the temporary directory, named after the test.
    fn mtx_file(name: &str, text: &str) -> PathBuf {
        let path =
            std::env::temp_dir().join(format!("diffuse-solvers-{}-{name}.mtx", std::process::id()));
        std::fs::write(&path, text).unwrap();
        path
    }

    fn error_of<M: Krylov>(file: &std::path::Path) -> String {
        let mut args = solver_args(1, 5, 1, Switch::On);
        args.matrix = Some(file.to_path_buf());
        format!("{:#}", run::<M>(&args).unwrap_err())
    }

    #[test]
    fn a_non_square_matrix_is_refused_by_name() {
        let file = mtx_file(
            "rect",
            "%%MatrixMarket matrix coordinate real general\n2 3 2\n1 1 1.0\n2 3 2.0\n",
        );
        for message in [error_of::<Cg>(&file), error_of::<Cgs>(&file)] {
            assert!(message.contains("needs a square matrix"), "{message}");
            assert!(message.contains("2 x 3"), "{message}");
        }
        std::fs::remove_file(file).unwrap();
    }

    #[test]
    fn malformed_and_truncated_files_name_the_line() {
        let truncated = mtx_file(
            "truncated",
            "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1.0\n2 2 1.0\n",
        );
        let message = error_of::<BiCgStab>(&truncated);
        let at = format!("{}:", truncated.display());
        assert!(message.contains(&at), "{message}");
        let malformed = mtx_file(
            "malformed",
            "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n2 x 1.0\n",
        );
        let message = error_of::<Cg>(&malformed);
        assert!(
            message.contains(&format!("{}:4:", malformed.display())),
            "{message}"
        );
        std::fs::remove_file(truncated).unwrap();
        std::fs::remove_file(malformed).unwrap();
    }

    #[test]
    fn bad_flags_are_errors() {
        let mut args = solver_args(4, 5, 1, Switch::On);
        args.check_every = 0;
        assert!(format!("{:#}", run::<Cg>(&args).unwrap_err()).contains("--check-every"));
        let mut args = solver_args(4, 5, 1, Switch::On);
        args.rtol = f64::NAN;
        assert!(format!("{:#}", run::<Cg>(&args).unwrap_err()).contains("--rtol"));
        let args = solver_args(0, 5, 1, Switch::On);
        assert!(format!("{:#}", run::<Cg>(&args).unwrap_err()).contains("--n"));
    }

    /// With a tolerance, the loop stops at the first check that sees the residual below
    /// it, and reports the iterations run and a residual under the tolerance.
    #[test]
    fn solvers_stop_at_the_tolerance() {
        let mut args = solver_args(12, 500, 2, Switch::On);
        args.rtol = 1e-8;
        args.check_every = 1;
        for record in [run::<Cg>(&args), run::<BiCgStab>(&args), run::<Cgs>(&args)] {
            let record = record.unwrap();
            let iterations = record.iterations.unwrap();
            assert!(iterations > 5 && iterations < 500, "{record:?}");
            assert!(record.residual.unwrap() < 1e-8, "{record:?}");
            assert!(record.check < 1e-7, "{record:?}");
        }
    }

    /// In the steady state every window replays a memoized plan: running three times as many
    /// iterations adds memo hits and no misses.
    #[test]
    fn steady_state_windows_are_memo_hits() {
        let misses = |iters: usize| {
            let record = run::<Cg>(&solver_args(40, iters, 2, Switch::On)).unwrap();
            assert!(record.memo_hits >= iters as u64 / 2, "{record:?}");
            record.memo_misses
        };
        assert_eq!(misses(150), misses(50));
    }
}
