//! `diffuse-examples`: the diffuse applications, one subcommand each, sharing one build.
//!
//! Every application accepts the shared flags of [`common::AppArgs`] and, with `--json`, prints
//! one JSON record on stdout (see `../shared/DESIGN.md`, "Interfaces").

mod common;
mod stencil_ir;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "diffuse-examples", about = "Applications running on diffuse")]
struct Cli {
    #[command(subcommand)]
    app: App,
}

#[derive(Subcommand)]
enum App {
    /// The 5-point stencil of the Diffuse paper's Figure 2, issued directly as IR index tasks
    /// (ADD, MULT and COPY over five aliasing views of one grid).
    StencilIr(common::AppArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let (record, json) = match cli.app {
        App::StencilIr(args) => (stencil_ir::run(&args)?, args.json),
    };
    common::report(&record, json)
}
