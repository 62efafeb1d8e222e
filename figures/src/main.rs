//! `diffuse-figures`: figures and tables from the apps' and the peers' `--json` records.
//!
//! - `diffuse-figures weak-scaling RECORDS --svg F.svg --markdown F.md`: the weak-scaling
//!   figure of a multi-process Legion run (`scripts/weak-scaling.sh`).
//! - `diffuse-figures peers RECORDS --out DIR`: the peer report (`scripts/peers.sh`):
//!   time per iteration, speedups, tasks per iteration, warm-up and break-even, memory.
//! - `diffuse-figures kernels RECORDS --out DIR`: the kernel suite's report
//!   (`scripts/kernels.sh`): speedup over NumPy per kernel and size.

mod bars;
// diffuse's own command-line output (a shared source file: this crate does not depend on the
// runtime): results written with errors returned, a broken pipe ending quietly.
#[path = "../../src/cli_output.rs"]
mod cli_output;
mod kernels;
mod peers;
mod records;
mod weak_scaling;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

use records::read_records;

#[derive(Parser)]
#[command(
    name = "diffuse-figures",
    about = "Figures from diffuse's JSON records"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Weak scaling over processes: time per iteration (fused, unfused) and bytes moved.
    WeakScaling {
        /// JSON records, one per line (the apps' `--json` output).
        records: PathBuf,
        /// Where to write the SVG figure.
        #[arg(long)]
        svg: PathBuf,
        /// Where to write the table (Markdown).
        #[arg(long)]
        markdown: PathBuf,
    },
    /// diffuse next to its peers: `peers-*.svg` and `peers.md` in `--out`.
    Peers {
        /// JSON records, one per line (apps' and peers' records with a `system` field).
        records: PathBuf,
        /// The folder the figures and the table go to.
        #[arg(long)]
        out: PathBuf,
    },
    /// The kernel suite against NumPy: `kernels-speedup.svg` and `kernels.md` in `--out`.
    Kernels {
        /// JSON records, one per line (`benches/peers/kernels/run.py --json`).
        records: PathBuf,
        /// The folder the figure and the table go to.
        #[arg(long)]
        out: PathBuf,
    },
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => cli_output::fail(&e),
    }
}

fn run() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::WeakScaling {
            records,
            svg,
            markdown,
        } => {
            let table = weak_scaling::medians(&read_records(&records)?)?;
            weak_scaling::figure(&table, &svg)?;
            let md = weak_scaling::markdown(&table);
            std::fs::write(&markdown, &md)
                .with_context(|| format!("writing {}", markdown.display()))?;
            cli_output::print(&md).context("writing the table to stdout")?;
        }
        Command::Peers { records, out } => {
            let report = peers::report(&read_records(&records)?, &out)?;
            cli_output::print(&report).context("writing the report to stdout")?;
        }
        Command::Kernels { records, out } => {
            let report = kernels::report(&read_records(&records)?, &out)?;
            cli_output::print(&report).context("writing the report to stdout")?;
        }
    }
    Ok(())
}
