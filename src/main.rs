//! The `diffuse` command line: tools around the runtime.
//!
//! - `diffuse mapple check FILE`: parses and loads a Mapple mapper; reports `file:line:col`
//!   errors with a non-zero exit status.
//! - `diffuse mapple show FILE --task NAME --ispace 6,6 --machine 2x2 [--json] [--out F.svg]`:
//!   where each point of a task space runs, as a grid labelled (node, processor), as JSON, or
//!   as an SVG picture (the Mapple paper's Figure 3).
//! - `diffuse launch -n N -- COMMAND ...`: runs a program as N processes, each a Legion node
//!   (see `cli::launch`).

mod cli;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use diffuse_mapper::machine::Machine;
use diffuse_mapper::placement::Mapper;

use cli::grid::{self, Placed};

#[derive(Parser)]
#[command(name = "diffuse", about = "Tools of the diffuse task-fusion runtime")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Mapple mappers.
    #[command(subcommand)]
    Mapple(MappleCommand),
    /// Run a program as N processes on this machine, each one node of a Legion run
    /// (`diffuse launch -n 2 -- diffuse-examples cg --backend legion`).
    Launch {
        /// Number of processes (ranks).
        #[arg(short = 'n', long = "ranks")]
        ranks: usize,
        /// host:port where rank 0 listens for the others (default: a free local port).
        #[arg(long)]
        coordinator: Option<String>,
        /// Whose standard output to show: rank 0's, or every rank's prefixed by its rank.
        #[arg(long, value_enum, default_value = "rank0")]
        output: Output,
        /// Seconds the other ranks may keep running once one has finished.
        #[arg(long, default_value_t = 60)]
        grace: u64,
        /// Seconds a rank may stay silent (stopped, hung) before the others stop the run,
        /// naming it (DIFFUSE_RANK_TIMEOUT of every rank; default 60).
        #[arg(long)]
        rank_timeout: Option<f64>,
        /// Seconds the whole run may take: ranks still running then are stopped and the
        /// launch exits with status 124 (default: no limit).
        #[arg(long)]
        time_limit: Option<f64>,
        /// The program and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

/// Whose standard output `diffuse launch` shows.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Output {
    /// Rank 0's only (every rank computes the same results).
    Rank0,
    /// Every rank's, prefixed by `[rank K]`.
    All,
}

#[derive(Subcommand)]
enum MappleCommand {
    /// Parse and load a mapper; report the first error as file:line:col.
    Check {
        /// The mapper file.
        file: PathBuf,
        /// The machine to load it for (NODESxPROCS of every processor kind).
        #[arg(long, default_value = "2x4")]
        machine: String,
        /// Also list every statement with what it does on each backend.
        #[arg(long)]
        explain: bool,
    },
    /// Show where each point of a task space runs.
    Show {
        /// The mapper file.
        file: PathBuf,
        /// The task (index launch) to map.
        #[arg(long)]
        task: String,
        /// The launch domain, e.g. `6,6`.
        #[arg(long, value_delimiter = ',', num_args = 1..)]
        ispace: Vec<i64>,
        /// The machine: NODESxPROCS of every processor kind.
        #[arg(long, default_value = "2x2")]
        machine: String,
        /// Print one JSON array (an object per point) instead of the grid.
        #[arg(long)]
        json: bool,
        /// Also write an SVG picture of the placement to this file.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// Loads the mapper in `file` for the machine `spec`.
fn load(file: &PathBuf, spec: &str) -> anyhow::Result<Mapper> {
    let machine: Machine = spec.parse()?;
    let source =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    // Errors already say file:line:col.
    Ok(Mapper::from_source(
        &file.display().to_string(),
        &source,
        machine,
    )?)
}

/// Every point of `ispace`, row-major.
fn points(ispace: &[i64]) -> Vec<Vec<i64>> {
    let mut all = vec![Vec::new()];
    for &extent in ispace {
        all = all
            .into_iter()
            .flat_map(|p| {
                (0..extent).map(move |i| {
                    let mut q = p.clone();
                    q.push(i);
                    q
                })
            })
            .collect();
    }
    all
}

/// Runs a `mapple` subcommand; returns what it prints on stdout.
fn run(command: MappleCommand) -> anyhow::Result<String> {
    let mut printed = String::new();
    match command {
        MappleCommand::Check {
            file,
            machine,
            explain,
        } => {
            let mapper = load(&file, &machine)?;
            for line in mapper.take_output() {
                printed.push_str(&line);
                printed.push('\n');
            }
            if explain {
                let backends = [diffuse_embedded::CAPABILITIES, diffuse_legion::CAPABILITIES];
                for line in diffuse_mapper::effects::explain(
                    mapper.env().file(),
                    mapper.program(),
                    &backends,
                ) {
                    printed.push_str(&line);
                    printed.push('\n');
                }
            }
            printed.push_str(&format!("{}: ok\n", file.display()));
        }
        MappleCommand::Show {
            file,
            task,
            ispace,
            machine,
            json,
            out,
        } => {
            anyhow::ensure!(
                !ispace.is_empty() && ispace.iter().all(|&e| e > 0),
                "--ispace needs positive extents, e.g. --ispace 6,6"
            );
            let volume = ispace
                .iter()
                .try_fold(1i64, |v, &e| v.checked_mul(e))
                .filter(|&v| v <= 1 << 20);
            anyhow::ensure!(volume.is_some(), "--ispace has more than 2^20 points");
            let mapper = load(&file, &machine)?;
            let placed = points(&ispace)
                .into_iter()
                .map(|point| {
                    let p = mapper.place(&task, &point, &ispace)?;
                    Ok(Placed {
                        point,
                        node: p.node,
                        processor: p.index,
                    })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            if json {
                printed = serde_json::to_string(&placed)? + "\n";
            } else {
                printed = grid::text(&placed, &ispace);
            }
            if let Some(path) = out {
                let kind = mapper.processor_kind(&task);
                let per_node = kind.map_or(1, |k| mapper.machine().procs_per_node(k));
                std::fs::write(&path, grid::svg(&placed, &ispace, per_node))
                    .with_context(|| format!("writing {}", path.display()))?;
            }
        }
    }
    Ok(printed)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let command = match cli.command {
        Command::Mapple(command) => command,
        Command::Launch {
            ranks,
            coordinator,
            output,
            grace,
            rank_timeout,
            time_limit,
            command,
        } => {
            // Every rank is a process of this machine: as many as the embedded backend
            // would run threads at most (a count past it used to abort allocating them).
            let most = diffuse::embedded::max_procs();
            if ranks > most {
                return diffuse::cli_output::fail(&anyhow::anyhow!(
                    "diffuse launch: -n {ranks} is more than the {most} processes this machine \
                     runs ({} per core)",
                    diffuse::embedded::PROCS_PER_CORE
                ));
            }
            let launch = cli::launch::Launch {
                ranks,
                coordinator,
                all_output: matches!(output, Output::All),
                grace: std::time::Duration::from_secs(grace),
                rank_timeout,
                time_limit,
                command,
            };
            return match cli::launch::run(&launch) {
                Ok(cli::launch::Outcome::Success) => ExitCode::SUCCESS,
                Ok(cli::launch::Outcome::Failed { code }) => {
                    ExitCode::from(u8::try_from(code).unwrap_or(1))
                }
                Err(e) => diffuse::cli_output::fail(&e.context("diffuse launch")),
            };
        }
    };
    // Results go out only once complete: a failure prints nothing on stdout.
    let printed = run(command).and_then(|printed| {
        diffuse::cli_output::print(&printed).context("writing the result to stdout")
    });
    match printed {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => diffuse::cli_output::fail(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("mapper/tests/mapple/fixtures")
            .join(name)
    }

    fn show(
        file: PathBuf,
        task: &str,
        ispace: &[i64],
        machine: &str,
        out: Option<PathBuf>,
    ) -> anyhow::Result<String> {
        run(MappleCommand::Show {
            file,
            task: task.into(),
            ispace: ispace.to_vec(),
            machine: machine.into(),
            json: true,
            out,
        })
    }

    #[test]
    fn figure_3_block_mapping_as_json_and_svg() {
        let svg = std::env::temp_dir().join(format!("diffuse-fig3-{}.svg", std::process::id()));
        let printed = show(
            fixture("reconstructed_fig3_block2D.mapple"),
            "tiles",
            &[6, 6],
            "2x2",
            Some(svg.clone()),
        )
        .unwrap();
        let placed: Vec<serde_json::Value> = serde_json::from_str(&printed).unwrap();
        assert_eq!(placed.len(), 36);
        let at = placed
            .iter()
            .find(|p| p["point"] == serde_json::json!([2, 3]))
            .unwrap();
        assert_eq!(
            (at["node"].as_u64(), at["processor"].as_u64()),
            (Some(0), Some(1))
        );
        let picture = std::fs::read_to_string(&svg).unwrap();
        assert_eq!(picture.matches("<rect").count(), 36);
        let _ = std::fs::remove_file(svg);
    }

    #[test]
    fn check_reports_ok_and_errors_with_their_location() {
        let ok = run(MappleCommand::Check {
            file: fixture("manual_circuit.mapple"),
            machine: "2x4".into(),
            explain: false,
        })
        .unwrap();
        assert!(ok.ends_with("manual_circuit.mapple: ok\n"), "{ok}");
        let bad = std::env::temp_dir().join(format!("diffuse-bad-{}.mapple", std::process::id()));
        std::fs::write(&bad, "m = Machine(GPU);\nx = (1, 2\n").unwrap();
        let err = run(MappleCommand::Check {
            file: bad.clone(),
            machine: "2x4".into(),
            explain: false,
        })
        .unwrap_err();
        let message = format!("{err:#}");
        assert!(
            message.contains(":3:1:") || message.contains(":2:"),
            "{message}"
        );
        assert!(message.contains("expected"), "{message}");
        let _ = std::fs::remove_file(bad);
    }

    #[test]
    fn explain_lists_every_statement_with_its_effect_on_each_backend() {
        let out = run(MappleCommand::Check {
            file: fixture("reference_grammar.mapple"),
            machine: "2x4".into(),
            explain: true,
        })
        .unwrap();
        let line = |needle: &str| {
            out.lines()
                .find(|l| l.contains(needle))
                .unwrap_or_else(|| panic!("no line with {needle} in\n{out}"))
        };
        let control = line("ControlReplicate main;");
        assert!(
            control.contains("embedded: no effect") && control.contains("legion: acts"),
            "{control}"
        );
        let steal = line("TaskSteal calc,stencil GPU ANY_NODE;");
        assert!(
            steal.contains(":18:1:")
                && steal.contains("embedded: no effect")
                && steal.contains("legion: acts"),
            "{steal}"
        );
        let layout = line("Layout * * SYSMEM AOS F_order Align<64;");
        assert!(
            layout.contains("embedded: no effect") && layout.contains("legion: acts"),
            "{layout}"
        );
        let kind_map = line("IndexTaskMap GPU block1d;");
        assert!(!kind_map.contains("no effect"), "{kind_map}");
        assert!(out.contains("done 1"), "the top-level print ran: {out}");
        assert!(out.ends_with("reference_grammar.mapple: ok\n"), "{out}");
    }

    #[test]
    fn bad_arguments_are_errors() {
        let f = fixture("reconstructed_fig3_block2D.mapple");
        assert!(show(f.clone(), "tiles", &[0, 6], "2x2", None).is_err());
        assert!(show(f.clone(), "tiles", &[6, 6], "2by2", None).is_err());
        assert!(show(
            PathBuf::from("/nonexistent.mapple"),
            "tiles",
            &[6, 6],
            "2x2",
            None
        )
        .is_err());
    }
}
