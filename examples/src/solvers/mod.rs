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

use clap::Args;
use diffuse_array::{zeros, Array, ArrayContext, DType};
use diffuse_sparse::{generators, mtx, CsrMatrix, HostCsr, IndexWidth};

use diffuse::cli_output::eprint_line;

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
#[derive(Clone)]
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

/// One Krylov method: its state after set-up and one iteration at a time. A clone is the
/// state as it is (the arrays are shared handles, nothing is copied), which the solver loop
/// keeps to run iterations again from.
pub trait Krylov: Sized + Clone {
    /// The name in the record.
    const NAME: &'static str;
    /// What a breakdown (a division by zero other than at an exact solution) means for the
    /// method, for the error that reports it.
    const BREAKDOWN: &'static str;
    /// What the method assumes of the matrix, for the warning of a run that stopped at
    /// `--iters` short of `--rtol` (after a `; `), or nothing.
    const NOT_CONVERGED: &'static str;
    /// The state for `A x = b` from `x = 0`, with the run's flags.
    fn start(a: &CsrMatrix, b: &Array, args: &SolverArgs) -> anyhow::Result<Self>;
    /// The current iterate and residual.
    fn iterate(&self) -> &Iterate;
    /// One iteration. `check` is true on iterations whose start checked the residual; a
    /// method with a mid-iteration test (BiCGSTAB) may read it there and stop early.
    fn step(&mut self, a: &CsrMatrix, atol: f64, check: bool) -> anyhow::Result<Step>;
}

/// Bytes of host memory a system of `rows` rows and at most `entries` entries takes: its
/// triplets (24 bytes an entry), building its CSR form (a row count and offsets per row,
/// twice; a column and value per entry, twice), `b`, `x` read back and `A x` (8 bytes a row
/// each), and `text` bytes of the file it comes from. Saturates instead of wrapping.
fn system_bytes(rows: u128, entries: u128, text: u128) -> u128 {
    text.saturating_add(entries.saturating_mul(24 + 32))
        .saturating_add(rows.saturating_mul(24 + 24))
}

/// The matrix of the run: `--matrix FILE` or the Poisson matrix of an `--n x --n` grid. What
/// it takes on the host, from the file's header or `--n`, is checked against the memory
/// limit before anything is allocated for it.
fn load_matrix(args: &SolverArgs, method: &str) -> anyhow::Result<HostCsr> {
    let (triplets, what) = match &args.matrix {
        Some(file) => {
            let what = format!("matrix {}", file.display());
            let size = mtx::read_matrix_market_size(file)?;
            let text = std::fs::metadata(file).map_or(0, |m| m.len());
            common::ensure_fits(
                &args.common,
                system_bytes(size.rows as u128, size.entries, text.into()),
                &format!("the {} x {} {what}", size.rows, size.cols),
            )?;
            (mtx::read_matrix_market(file)?, what)
        }
        None => {
            anyhow::ensure!(args.common.n >= 1, "--n must be at least 1");
            let side = args.common.n as u128;
            let what = format!("2-D Poisson {side} x {side}");
            // Five entries a row (saturating: `--n` may be up to 2^64 - 1).
            let rows = side.saturating_mul(side);
            common::ensure_fits(
                &args.common,
                system_bytes(rows, rows.saturating_mul(5), 0),
                &format!("the {what} matrix"),
            )?;
            // Fits in memory, so in an `i64`.
            (
                generators::poisson_2d(common::extent(args.common.n)?)?,
                what,
            )
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
    if let Some(&(row, col, value)) = triplets.entries().iter().find(|e| !e.2.is_finite()) {
        anyhow::bail!(
            "{method} needs finite matrix entries, but the {what} has {value} at ({}, {})",
            row + 1,
            col + 1
        );
    }
    Ok(HostCsr::from_triplets(
        &triplets,
        IndexWidth::smallest_for(cols),
    )?)
}

/// The longest warm-up, in stretches of `--check-every` iterations.
const WARMUP_STRETCHES: usize = 10;

/// Whether a residual norm says the system is solved: below `atol` (SciPy's test), or
/// exactly zero, which is an exact solution even where `atol` is 0 (`--rtol 0`): the next
/// iteration would divide zero by zero.
fn is_converged(residual: f64, atol: f64) -> bool {
    residual < atol || residual == 0.0
}

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
    // Convergence is checked only every --check-every iterations, so the method may reach
    // an exact solution between checks and divide zero by zero in the next iteration: a
    // non-finite residual at a check says that something broke down since the last check,
    // not what. The state of the last check (finite, not converged) is kept; from it the
    // iterations are run again checking every one, as SciPy does, where a zero residual is
    // convergence and a non-finite one right after a finite one is a true breakdown. The
    // state is a handful of vectors the method would have dropped at the next check.
    let mut last_checked: Option<(M, usize)> = None;
    let mut check_each = false;
    let converged = loop {
        let check = check_each || iterations % args.check_every == 0 || iterations == maxiter;
        if check {
            let residual = norm(&solver.iterate().r)?;
            if !residual.is_finite() {
                match last_checked.take() {
                    Some((state, at)) if !check_each => {
                        (solver, iterations, check_each) = (state, at, true);
                        // The stretch since `at` runs again (and is timed again).
                        (interval, interval_from) = (Instant::now(), at);
                        continue;
                    }
                    _ => anyhow::bail!(
                        "{} broke down at iteration {iterations}: the residual norm became \
                         {residual} (a division by zero in the method: {})",
                        M::NAME,
                        M::BREAKDOWN
                    ),
                }
            }
            if let Some((_, last)) = timed.as_mut() {
                let stretch = iterations.saturating_sub(interval_from).max(1);
                iteration_seconds.push(interval.elapsed().as_secs_f64() / stretch as f64);
                *last = (iterations, rt.counters());
            }
            (interval, interval_from) = (Instant::now(), iterations);
            if is_converged(residual, atol) {
                break true;
            }
            last_checked = Some((solver.clone(), iterations));
        }
        if iterations == maxiter {
            break false;
        }
        let analysed = rt.runtime.planner_stats().analysed;
        let settled = analysed == analysed_at_check
            || iterations >= WARMUP_STRETCHES.saturating_mul(args.check_every);
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
            break true;
        }
        iterations += 1;
    };
    drop(last_checked);
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
    record.converged = Some(converged);
    // With --rtol 0 the run is a timing of --iters iterations; with a tolerance, stopping
    // short of it is SciPy's `info > 0`: the record says so, and so does a warning.
    if !converged && args.rtol > 0.0 {
        eprint_line(&format!(
            "warning: {} did not converge: the residual ||r|| / ||b|| is {:.3e} after \
             {iterations} iterations (--iters), above --rtol {:.3e} (raise --iters, or give \
             --rtol 0 to run exactly --iters iterations){}",
            M::NAME,
            residual / b_norm,
            args.rtol,
            M::NOT_CONVERGED
        ));
    }
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
        // A limit past the machine's memory would let the kernel kill the run.
        let mut args = solver_args(4, 5, 1, Switch::On);
        args.common.memory_limit = Some(usize::MAX);
        let message = format!("{:#}", run::<Cg>(&args).unwrap_err());
        assert!(
            message.contains("--memory-limit 18446744073709551615 is more than"),
            "{message}"
        );
        let mut args = solver_args(4, 0, 1, Switch::On);
        args.rtol = 1e-8;
        let message = format!("{:#}", run::<Cg>(&args).unwrap_err());
        assert!(message.contains("--iters must be at least 1"), "{message}");
        let mut args = solver_args(4, 5, 1, Switch::On);
        args.common.procs = Some(diffuse::embedded::max_procs() + 1);
        let message = format!("{:#}", run::<Cg>(&args).unwrap_err());
        assert!(
            message.contains("--procs") && message.contains("processors the embedded"),
            "{message}"
        );
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

    /// Every method on every tiny system it can take (the Poisson matrices of 1 x 1 to
    /// 3 x 3 grids, gmg's 1 x 1 and 3 x 3, and a dense 5 x 5 SPD file), with the residual
    /// checked every 10 iterations: each reaches an exact or near-exact solution between two
    /// checks, where the next iteration divides zero by zero; each run converges, with the
    /// true residual of a solution.
    #[test]
    fn tiny_and_exactly_solvable_systems_converge() {
        let spd = mtx_file(
            "spd5",
            &format!(
                "%%MatrixMarket matrix coordinate real symmetric\n5 5 9\n{}",
                "1 1 4\n2 2 5\n3 3 6\n4 4 7\n5 5 8\n2 1 1\n3 2 1\n4 3 1\n5 4 1\n"
            ),
        );
        let solve_all = |args: &SolverArgs| -> Vec<(&str, anyhow::Result<RunRecord>)> {
            vec![
                ("cg", run::<Cg>(args)),
                ("bicgstab", run::<BiCgStab>(args)),
                ("cgs", run::<Cgs>(args)),
            ]
        };
        let mut cases = Vec::new();
        for (n, rtol, iters) in [
            (1, 1e-8, 100),
            (2, 1e-8, 100),
            (3, 1e-8, 100),
            (2, 0.0, 20000),
        ] {
            let mut args = solver_args(n, iters, 1, Switch::On);
            (args.rtol, args.check_every) = (rtol, 10);
            cases.extend(
                solve_all(&args)
                    .into_iter()
                    .map(|(m, r)| (format!("{m} n {n} rtol {rtol}"), r)),
            );
            if n != 2 {
                cases.push((format!("gmg n {n} rtol {rtol}"), run::<Gmg>(&args)));
            }
        }
        for rtol in [1e-8, 0.0] {
            let mut args = solver_args(1, 20000, 2, Switch::On);
            (args.rtol, args.check_every, args.matrix) = (rtol, 10, Some(spd.clone()));
            cases.extend(
                solve_all(&args)
                    .into_iter()
                    .map(|(m, r)| (format!("{m} spd5 rtol {rtol}"), r)),
            );
        }
        for (case, record) in cases {
            let record = record.unwrap_or_else(|e| panic!("{case}: {e:#}"));
            assert_eq!(record.converged, Some(true), "{case}: {record:?}");
            assert!(record.check < 1e-9, "{case}: {record:?}");
        }
        std::fs::remove_file(spd).unwrap();
    }

    /// A matrix CG cannot take: not symmetric (it runs to --iters and says it did not
    /// converge, exiting normally as SciPy's `info > 0`), and indefinite so that `p . A p`
    /// is exactly 0 in the first iteration (a breakdown: an error naming the iteration,
    /// found however far apart the checks are).
    #[test]
    fn non_convergence_is_reported_and_a_true_breakdown_is_an_error() {
        let skew = mtx_file(
            "nonsym",
            "%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 1\n2 2 1\n3 3 1\n1 2 5\n",
        );
        let mut args = solver_args(1, 30, 1, Switch::On);
        (args.rtol, args.matrix) = (1e-8, Some(skew.clone()));
        let record = run::<Cg>(&args).unwrap();
        assert_eq!(record.converged, Some(false), "{record:?}");
        assert!(record.check > 1.0, "{record:?}");
        let indefinite = mtx_file(
            "indefinite",
            "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 -1\n",
        );
        for check_every in [1, 7] {
            args.matrix = Some(indefinite.clone());
            args.check_every = check_every;
            let message = format!("{:#}", run::<Cg>(&args).unwrap_err());
            assert!(
                message.contains("cg broke down at iteration 1") && message.contains("p . A p = 0"),
                "{message}"
            );
        }
        for file in [skew, indefinite] {
            std::fs::remove_file(file).unwrap();
        }
    }

    /// Sizes from --n or a Matrix Market header that the memory limit cannot hold are refused
    /// before anything is allocated for them, naming the matrix, the bytes and the limit;
    /// non-finite entries are refused by position.
    #[test]
    fn systems_past_the_memory_limit_are_refused_before_allocating() {
        let huge = mtx_file(
            "huge",
            "%%MatrixMarket matrix coordinate real general\n2000000000 2000000000 1\n1 1 1.0\n",
        );
        let mut args = solver_args(1, 5, 1, Switch::On);
        (args.matrix, args.common.memory_limit) = (Some(huge.clone()), Some(1 << 30));
        let message = format!("{:#}", run::<Cg>(&args).unwrap_err());
        assert!(
            message.contains("out of memory: the 2000000000 x 2000000000 matrix")
                && message.contains("1073741824-byte limit"),
            "{message}"
        );
        let mut args = solver_args(usize::MAX, 5, 1, Switch::On);
        args.common.memory_limit = Some(1 << 30);
        let message = format!("{:#}", run::<Cg>(&args).unwrap_err());
        assert!(message.contains("more than 2^128 bytes"), "{message}");
        let nan = mtx_file(
            "nan",
            "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 nan\n2 2 1\n",
        );
        args.matrix = Some(nan.clone());
        let message = format!("{:#}", run::<Cg>(&args).unwrap_err());
        assert!(message.contains("has NaN at (1, 1)"), "{message}");
        for file in [huge, nan] {
            std::fs::remove_file(file).unwrap();
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
