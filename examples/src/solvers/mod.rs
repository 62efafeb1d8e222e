//! The Krylov solver apps: `diffuse-sparse`'s solvers (the algorithms of
//! `scipy.sparse.linalg`: `cg`, `bicgstab`, `cgs`, no preconditioner, `x0 = 0`, and `gmg`,
//! CG preconditioned by a geometric multigrid V-cycle as Legate Sparse's example) run on a
//! system the flags describe, timed and recorded. The scalars (`alpha`, `beta`, `rho`, ...)
//! stay 0-d arrays so that nothing waits for them.
//!
//! The only blocking read is the residual check, every `--check-every` iterations: between
//! checks the tasks of many iterations stream into the runtime's window, so fusion spans
//! iteration boundaries. The system is the 2-D Poisson matrix on an `--n x --n` grid (or
//! `--matrix FILE`, a Matrix Market file) and `b` all ones, as in
//! `benches/peers/scipy_solvers.py`, which runs SciPy on the same systems.

use std::marker::PhantomData;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use diffuse_array::{Array, ArrayContext};
use diffuse_sparse::solvers::{self, Krylov, Monitor, SolveOptions, Status, VCycle};
use diffuse_sparse::{generators, mtx, CsrMatrix, HostCsr, IndexWidth, SparseError};

use diffuse::cli_output::eprint_line;

use crate::common::{self, AppArgs, Counters, Measurement, RunRecord, Runtime};

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

/// How a multigrid V-cycle moves a residual to the next coarser grid (the flag's values of
/// [`solvers::Restriction`]).
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Restriction {
    /// Each coarse point takes the fine point it sits on.
    #[default]
    Injection,
    /// The transpose of the bilinear prolongation (each coarse point the weighted sum of
    /// the nine fine points around it).
    FullWeighting,
}

impl From<Restriction> for solvers::Restriction {
    fn from(r: Restriction) -> Self {
        match r {
            Restriction::Injection => solvers::Restriction::Injection,
            Restriction::FullWeighting => solvers::Restriction::FullWeighting,
        }
    }
}

/// One app: a library method and how the flags start it.
pub trait Method {
    /// The name in the record.
    const NAME: &'static str;
    /// The library method's state.
    type State: Krylov;
    /// The state for `A x = b` from `x = 0`, with the run's flags.
    fn start(a: &CsrMatrix, b: &Array, args: &SolverArgs) -> Result<Self::State, SparseError>;
}

/// An app that runs library method `K` as SciPy does: no preconditioner, `x0 = 0`.
pub struct Plain<K>(PhantomData<K>);

impl<K: Krylov> Method for Plain<K> {
    const NAME: &'static str = K::NAME;
    type State = K;
    fn start(a: &CsrMatrix, b: &Array, _args: &SolverArgs) -> Result<K, SparseError> {
        K::start(a, b, None, None)
    }
}

/// The `cg` app.
pub type Cg = Plain<solvers::Cg>;
/// The `bicgstab` app.
pub type BiCgStab = Plain<solvers::BiCgStab>;
/// The `cgs` app.
pub type Cgs = Plain<solvers::Cgs>;

/// The `gmg` app: CG preconditioned by a [`VCycle`] with the `--restriction` of the flags,
/// on the Poisson matrix of a `2^k - 1` grid.
pub struct Gmg;

impl Method for Gmg {
    const NAME: &'static str = "gmg";
    type State = solvers::Cg;
    fn start(a: &CsrMatrix, b: &Array, args: &SolverArgs) -> Result<solvers::Cg, SparseError> {
        let restriction = args.restriction.unwrap_or_default().into();
        let cycle = VCycle::new(b.context(), a, restriction)?;
        solvers::Cg::start(a, b, None, Some(std::sync::Arc::new(cycle)))
    }
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

/// The timing of a run, kept at the residual checks the library's driver reports.
///
/// The warm-up lasts until a whole stretch between checks planned no new window (every
/// window a memo hit, so no new kernel either), at most [`WARMUP_STRETCHES`] stretches. The
/// timed part runs from there to the last check: iterations after it (and the final flush,
/// whose window has a shape of its own to plan and compile) are not timed.
struct Timing<'a> {
    rt: &'a Runtime,
    args: &'a SolverArgs,
    warmup: Instant,
    warmup_iters: usize,
    warmup_seconds: f64,
    compile_wait_seconds: f64,
    analysed_at_check: u64,
    /// The counters when timing started, and the iteration and counters of the last check.
    timed: Option<(Counters, (usize, Counters))>,
    interval: Instant,
    interval_from: usize,
    iteration_seconds: Vec<f64>,
}

impl Monitor for Timing<'_> {
    fn checked(&mut self, iterations: usize, last: bool) {
        if let Some((_, at)) = self.timed.as_mut() {
            let stretch = iterations.saturating_sub(self.interval_from).max(1);
            self.iteration_seconds
                .push(self.interval.elapsed().as_secs_f64() / stretch as f64);
            *at = (iterations, self.rt.counters());
        }
        (self.interval, self.interval_from) = (Instant::now(), iterations);
        if last {
            return;
        }
        let (rt, args) = (self.rt, self.args);
        let analysed = rt.runtime.planner_stats().analysed;
        let settled = analysed == self.analysed_at_check
            || iterations >= WARMUP_STRETCHES.saturating_mul(args.check_every);
        if iterations > 0 && self.timed.is_none() && settled {
            self.warmup_iters = iterations;
            self.warmup_seconds = self.warmup.elapsed().as_secs_f64();
            let waiting = Instant::now();
            if let Some(jit) = rt.runtime.jit().filter(|_| args.common.jit_wait) {
                jit.wait_idle();
            }
            self.compile_wait_seconds = waiting.elapsed().as_secs_f64();
            if args.common.streams {
                rt.print_streams();
                rt.runtime.record_streams(false);
            }
            rt.runtime.backend().reset_peak_memory();
            let start = rt.counters();
            self.timed = Some((start, (iterations, start)));
            self.interval = Instant::now();
        }
        self.analysed_at_check = analysed;
    }

    fn rewound(&mut self, iterations: usize) {
        // The stretch since `iterations` runs again (and is timed again).
        (self.interval, self.interval_from) = (Instant::now(), iterations);
    }
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
pub fn run<M: Method>(args: &SolverArgs) -> anyhow::Result<RunRecord> {
    Ok(solve::<M>(args)?.0)
}

/// [`run`], also returning the solution.
fn solve<M: Method>(args: &SolverArgs) -> anyhow::Result<(RunRecord, Vec<f64>)> {
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

    let state = M::start(&a, &b, args)?;
    rt.ctx.flush_window()?;
    rt.runtime.record_streams(args.common.streams);
    let maxiter = args.common.iters;
    let mut timing = Timing {
        rt: &rt,
        args,
        warmup: Instant::now(),
        warmup_iters: maxiter,
        warmup_seconds: 0.0,
        compile_wait_seconds: 0.0,
        analysed_at_check: u64::MAX,
        timed: None,
        interval: Instant::now(),
        interval_from: 0,
        iteration_seconds: Vec::new(),
    };
    let options = SolveOptions {
        rtol: args.rtol,
        maxiter: Some(maxiter),
        check_every: args.check_every,
        ..SolveOptions::default()
    };
    let solution = solvers::drive(&a, &b, state, &options, &mut timing)?;
    let (iterations, residual) = (solution.iterations, solution.residual);
    anyhow::ensure!(
        solution.status != Status::Breakdown,
        "{} broke down at iteration {iterations}: the residual norm became {residual} (a \
         division by zero in the method: {})",
        M::NAME,
        M::State::BREAKDOWN
    );
    let converged = solution.status == Status::Converged;
    if timing.timed.is_none() {
        timing.warmup_seconds = timing.warmup.elapsed().as_secs_f64();
    }
    let x = solution.x().to_vec::<f64>()?;
    drop(solution);
    let b_norm = (rows as f64).sqrt();
    let ax = host.matvec(&x)?;
    let true_residual = ax
        .iter()
        .map(|ax| (1.0 - ax) * (1.0 - ax))
        .sum::<f64>()
        .sqrt()
        / b_norm;
    let (start, (timed_until, end)) = timing.timed.unwrap_or_else(|| {
        let now = rt.counters();
        (now, (timing.warmup_iters, now))
    });
    let timed_iters = timed_until.saturating_sub(timing.warmup_iters);
    let m = Measurement {
        warmup_seconds: timing.warmup_seconds,
        compile_wait_seconds: timing.compile_wait_seconds,
        iteration_seconds: timing.iteration_seconds,
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
            M::State::ASSUMES.map_or(String::new(), |a| format!("; {} needs {a}", M::NAME))
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

    /// App `M` run 24 iterations (residual checks every 3) on a 7 x 7 Poisson system, fused
    /// and not, on 1 to 3 processors, equals the library's method run by itself unfused on
    /// one processor checking every iteration (dot products summed in another order, so to
    /// rounding; `diffuse-sparse`'s tests compare that with plain loops), and in the timed
    /// part, once windows settle, fusion executes fewer tasks than the method issues.
    fn agrees_with_the_library<M: Method>() {
        let cx = ArrayContext::new(
            diffuse::embedded_with(
                diffuse::EmbeddedConfig {
                    procs: Some(1),
                    ..Default::default()
                },
                diffuse::RuntimeConfig {
                    jit: None,
                    ..Default::default()
                },
            )
            .unwrap(),
        );
        let host =
            HostCsr::from_triplets(&generators::poisson_2d(7).unwrap(), IndexWidth::I32).unwrap();
        let a = CsrMatrix::from_host(&cx, &host).unwrap();
        let b = Array::from_vec(&cx, &[49], vec![1.0; 49]).unwrap();
        let reference_args = solver_args(7, 24, 1, Switch::Off);
        let state = M::start(&a, &b, &reference_args).unwrap();
        let options = SolveOptions {
            rtol: 0.0,
            maxiter: Some(24),
            ..SolveOptions::default()
        };
        let solution = solvers::drive(&a, &b, state, &options, &mut ()).unwrap();
        assert_eq!(solution.iterations, 24);
        let want = solution.x().to_vec::<f64>().unwrap();
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
                    "{} procs {procs} {fusion:?}: x differs from the library's by {error}",
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

    #[test]
    fn apps_equal_the_library_fused_or_not() {
        agrees_with_the_library::<Cg>();
        agrees_with_the_library::<BiCgStab>();
        agrees_with_the_library::<Cgs>();
    }

    /// A Matrix Market file in the temporary directory, named after the test.
    fn mtx_file(name: &str, text: &str) -> PathBuf {
        let path =
            std::env::temp_dir().join(format!("diffuse-solvers-{}-{name}.mtx", std::process::id()));
        std::fs::write(&path, text).unwrap();
        path
    }

    fn error_of<M: Method>(file: &std::path::Path) -> String {
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
        args.common.setup.memory_limit = Some(usize::MAX);
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
        args.common.setup.procs = Some(diffuse::embedded::max_procs() + 1);
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
        (args.matrix, args.common.setup.memory_limit) = (Some(huge.clone()), Some(1 << 30));
        let message = format!("{:#}", run::<Cg>(&args).unwrap_err());
        assert!(
            message.contains("out of memory: the 2000000000 x 2000000000 matrix")
                && message.contains("1073741824-byte limit"),
            "{message}"
        );
        let mut args = solver_args(usize::MAX, 5, 1, Switch::On);
        args.common.setup.memory_limit = Some(1 << 30);
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

    fn gmg_args(n: usize, procs: usize, fusion: Switch) -> SolverArgs {
        SolverArgs {
            check_every: 1,
            rtol: 1e-8,
            ..solver_args(n, 200, procs, fusion)
        }
    }

    #[test]
    fn gmg_converges_in_far_fewer_iterations_than_cg_fused_or_not() {
        let cg = run::<Cg>(&gmg_args(31, 2, Switch::On)).unwrap();
        for (procs, fusion) in [(1, Switch::Off), (2, Switch::On), (3, Switch::On)] {
            let gmg = run::<Gmg>(&gmg_args(31, procs, fusion)).unwrap();
            let (its, cg_its) = (gmg.iterations.unwrap(), cg.iterations.unwrap());
            assert!(gmg.check < 1e-8, "{gmg:?}");
            assert!(its * 3 < cg_its * 2, "gmg {its} iterations vs cg {cg_its}");
        }
        // Full weighting: a symmetric cycle, a handful of iterations at any size.
        for n in [31, 127] {
            let full = SolverArgs {
                restriction: Some(Restriction::FullWeighting),
                ..gmg_args(n, 2, Switch::On)
            };
            let gmg = run::<Gmg>(&full).unwrap();
            assert!(gmg.check < 1e-8, "{gmg:?}");
            assert!(gmg.iterations.unwrap() <= 9, "n {n}: {gmg:?}");
        }
        let wrong = SolverArgs {
            restriction: Some(Restriction::FullWeighting),
            ..gmg_args(31, 1, Switch::On)
        };
        let err = run::<Cg>(&wrong).unwrap_err().to_string();
        assert!(err.contains("--restriction is a flag of gmg"), "{err}");
        let bad = run::<Gmg>(&gmg_args(30, 1, Switch::On))
            .unwrap_err()
            .to_string();
        assert!(bad.contains("n = 2^k - 1"), "{bad}");
    }
}
