//! `diffuse-examples`: the diffuse applications, one subcommand each, sharing one build.
//!
//! Every application accepts the shared flags of [`common::AppArgs`] and, with `--json`, prints
//! one JSON record on stdout ([`common::RunRecord`]: time per iteration, tasks issued and
//! executed, peak store bytes, the check against a plain sequential loop, and the run's
//! configuration).

mod allocator;
mod black_scholes;
mod cfd;
mod common;
mod jacobi;
mod solvers;
mod stencil;
mod stencil_ir;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[global_allocator]
static ALLOCATOR: allocator::ExitOnRefusal = allocator::ExitOnRefusal;

#[derive(Parser)]
#[command(name = "diffuse-examples", about = "Applications running on diffuse")]
struct Cli {
    #[command(subcommand)]
    app: App,
}

#[derive(Subcommand)]
enum App {
    /// The 5-point stencil of the Diffuse paper's Figure 2(a), written with the array library
    /// over five aliasing slices of one grid.
    Stencil(common::AppArgs),
    /// Black-Scholes call and put prices for `--n` options (log, sqrt, exp, erf).
    BlackScholes(common::AppArgs),
    /// Black-Scholes with the cumulative normal as cuNumeric's example writes it: the
    /// Abramowitz-Stegun polynomial with absolute, exp and where.
    BlackScholesPoly(common::AppArgs),
    /// Dense Jacobi iteration on an `--n x --n` diagonally dominant system.
    Jacobi(common::AppArgs),
    /// 2-D channel flow, Navier-Stokes ("12 steps", step 12) on an `--n x --n` grid.
    Cfd(common::AppArgs),
    /// The 5-point stencil of the Diffuse paper's Figure 2, issued directly as IR index tasks
    /// (ADD, MULT and COPY over five aliasing views of one grid).
    StencilIr(common::AppArgs),
    /// Conjugate gradients on the 2-D Poisson matrix of an `--n x --n` grid (or `--matrix`),
    /// as SciPy's `cg` runs it; `--iters` caps the iterations.
    Cg(solvers::SolverArgs),
    /// BiCGSTAB, as SciPy's `bicgstab` runs it (see `cg` for the system and flags).
    Bicgstab(solvers::SolverArgs),
    /// Conjugate gradients squared, as SciPy's `cgs` runs it (see `cg`).
    Cgs(solvers::SolverArgs),
    /// Geometric multigrid: CG preconditioned by a V-cycle (weighted Jacobi, injection,
    /// bilinear prolongation) on the 2-D Poisson matrix, `--n` = 2^k - 1.
    Gmg(solvers::SolverArgs),
}

impl App {
    /// The flags every application shares.
    fn args_mut(&mut self) -> &mut common::AppArgs {
        match self {
            App::Stencil(a)
            | App::BlackScholes(a)
            | App::BlackScholesPoly(a)
            | App::Jacobi(a)
            | App::Cfd(a) => a,
            App::StencilIr(a) => a,
            App::Cg(a) | App::Bicgstab(a) | App::Cgs(a) | App::Gmg(a) => &mut a.common,
        }
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            diffuse::shutdown();
            // One line: the error and its causes, outermost first (nothing for a reader of
            // stdout that went away).
            diffuse::cli_output::fail(&e)
        }
    }
}

fn run() -> anyhow::Result<()> {
    // Warnings (e.g. a failed window) go to stderr; `RUST_LOG=debug` also shows every window
    // flush and fusion decision.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let (argv, backend_flags) = diffuse::split_backend_flags(std::env::args());
    let mut cli = Cli::parse_from(argv);
    cli.app.args_mut().setup.backend_flags = backend_flags;
    let (record, json) = match cli.app {
        App::Stencil(args) => (stencil::run(&args)?, args.json),
        App::BlackScholes(args) => (
            black_scholes::run(&args, black_scholes::Cnd::Erf)?,
            args.json,
        ),
        App::BlackScholesPoly(args) => (
            black_scholes::run(&args, black_scholes::Cnd::Polynomial)?,
            args.json,
        ),
        App::Jacobi(args) => (jacobi::run(&args)?, args.json),
        App::Cfd(args) => (cfd::run(&args)?, args.json),
        App::StencilIr(args) => (stencil_ir::run(&args)?, args.json),
        App::Cg(args) => (solvers::run::<solvers::Cg>(&args)?, args.common.json),
        App::Bicgstab(args) => (solvers::run::<solvers::BiCgStab>(&args)?, args.common.json),
        App::Cgs(args) => (solvers::run::<solvers::Cgs>(&args)?, args.common.json),
        App::Gmg(args) => (solvers::run::<solvers::Gmg>(&args)?, args.common.json),
    };
    common::report(&record, json)?;
    // A backend runtime the run started (Legion's) finishes and stops before the process
    // exits.
    diffuse::shutdown();
    Ok(())
}
