//! The one place diffuse is assembled: which backend runs the tasks, how tasks fuse, which
//! kernel compilers serve the CPUs and GPUs, and where each point runs.
//!
//! A [`Setup`] comes from command-line flags (the apps flatten it into their own flags), from
//! the environment ([`Setup::from_env`], what the Python package does), or from code
//! ([`Setup::default`] and its public fields). Every setting has one flag and one
//! environment variable, declared together on its field below, so both front ends take the
//! same names:
//!
//! | flag | environment | what |
//! |---|---|---|
//! | `--backend` | `DIFFUSE_BACKEND` | `embedded` (default) or `legion` |
//! | `--procs` | `DIFFUSE_PROCS` | worker processors (default: one per core) |
//! | `--nodes` | `DIFFUSE_NODES` | nodes the processors form (Legion: processes) |
//! | `--fusion` | `DIFFUSE_FUSION` | `on` (default) or `off` |
//! | `--window` | `DIFFUSE_WINDOW` | a fixed window size (default adaptive) |
//! | `--stages` | `DIFFUSE_STAGES` | one-point groups go on in stages: `on`/`off` |
//! | `--jit` | `DIFFUSE_JIT` | `background` (default; also `on`), `sync` or `off` |
//! | `--gpu` | `DIFFUSE_GPU` | prefer GPUs for every task |
//! | `--mapper` | `DIFFUSE_MAPPER` | a Mapple program placing point tasks |
//! | `--mapper-log` | `DIFFUSE_MAPPER_LOG` | log the mapper's decisions |
//! | `--min-block` | `DIFFUSE_MIN_BLOCK` | the fewest elements a processor gets |
//! | `--strip-bytes` | `DIFFUSE_STRIP_BYTES` | working set of a strip of fused work |
//! | `--memory-limit` | `DIFFUSE_MEMORY_LIMIT` | bytes stores (and the app's host data) may take |
//! | `--legion-traces` | `DIFFUSE_LEGION_TRACES` | Legion replays repeated launches: `on`/`off` |
//! | `--legion-folds` | `DIFFUSE_LEGION_FOLDS` | diffuse folds small reductions: `on`/`off` |
//!
//! Read elsewhere, where the layer they configure starts: `DIFFUSE_KERNEL_CACHE` (where
//! compiled CPU kernels are kept between processes, `off`: nowhere), `DIFFUSE_DEVICE`
//! (`cuda`, `sim` or `none`: the embedded backend's GPU), `DIFFUSE_SIM_FAULTS` and
//! `DIFFUSE_SIM_MEMORY` (the simulated GPU), `DIFFUSE_LEGION_DIR` (the Legion installation),
//! `DIFFUSE_RANK`, `DIFFUSE_RANKS`, `DIFFUSE_COORDINATOR`, `DIFFUSE_RANK_TIMEOUT` and
//! `DIFFUSE_BOOTSTRAP_TIMEOUT` (a process's place in a multi-process run), and the Python
//! package's `DIFFUSE_EAGER_ELEMENTS`.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use clap::{Args, CommandFactory, FromArgMatches, Parser};
use diffuse_backend::Backend;
use diffuse_embedded::EmbeddedConfig;
use diffuse_jit::{CompileMode, GpuJit, GpuTarget, Jit};
use diffuse_legion::LegionConfig;
use diffuse_runtime::{FusionConfig, MapplePlacement, Placement, Runtime, RuntimeConfig};

use crate::cli_output::eprint_line;
use crate::BackendConfig;

/// An on/off setting (`--fusion`, `--stages`, `--legion-traces`, `--legion-folds`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Switch {
    /// Enabled.
    On,
    /// Disabled.
    Off,
}

impl Switch {
    /// Parses `on` or `off`.
    pub fn parse(text: &str) -> Result<Switch, String> {
        match text {
            "on" => Ok(Switch::On),
            "off" => Ok(Switch::Off),
            _ => Err("expected `on` or `off`".to_string()),
        }
    }

    /// Whether it is [`Switch::On`].
    pub fn is_on(self) -> bool {
        self == Switch::On
    }
}

/// When fused tasks' kernels are compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JitMode {
    /// On a background thread; the native kernels run until a compiled one is ready.
    Background,
    /// On first use, which waits for the compile.
    Sync,
    /// Never: every task runs its native kernels.
    Off,
}

impl JitMode {
    /// Parses `background` (or its synonym `on`), `sync` or `off`.
    pub fn parse(text: &str) -> Result<JitMode, String> {
        match text {
            "background" | "on" => Ok(JitMode::Background),
            "sync" => Ok(JitMode::Sync),
            "off" => Ok(JitMode::Off),
            _ => Err("expected `background`, `sync` or `off` (`on` is `background`)".to_string()),
        }
    }

    /// The CPU kernel compiler of this mode, keeping kernels between processes where
    /// `DIFFUSE_KERNEL_CACHE` says (runs after the first load them instead of compiling).
    pub fn compiler(self) -> Option<Arc<Jit>> {
        let mode = match self {
            JitMode::Background => CompileMode::Background,
            JitMode::Sync => CompileMode::Blocking,
            JitMode::Off => return None,
        };
        Some(Arc::new(Jit::with_mode(mode).with_env_kernel_cache()))
    }
}

/// Which backend executes the tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// The in-process worker pool.
    Embedded,
    /// The Legion runtime (one process, or one node of several).
    Legion,
}

impl BackendKind {
    /// Parses `embedded` or `legion`.
    pub fn parse(text: &str) -> Result<BackendKind, String> {
        match text {
            "embedded" => Ok(BackendKind::Embedded),
            "legion" => Ok(BackendKind::Legion),
            _ => Err("the backends are `embedded` and `legion`".to_string()),
        }
    }
}

/// A byte count with an optional K, M, G or T suffix (powers of 1024): `512M`, `8G`.
pub fn parse_bytes(text: &str) -> Result<usize, String> {
    let (digits, scale) = match text.char_indices().last() {
        Some((i, unit @ ('K' | 'M' | 'G' | 'T' | 'k' | 'm' | 'g' | 't'))) => {
            let power = "KMGT"
                .find(unit.to_ascii_uppercase())
                .map_or(0, |p| p as u32 + 1);
            (&text[..i], 1usize << (10 * power))
        }
        _ => (text, 1),
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("`{text}` is not a byte count like 512M or 8G"))
}

/// A yes/no setting: `1`, `on` or `true`; `0`, `off` or `false` (a flag given alone on the
/// command line is `true`).
fn parse_flag(text: &str) -> Result<bool, String> {
    match text {
        "1" | "on" | "true" => Ok(true),
        "0" | "off" | "false" => Ok(false),
        _ => Err("expected `1` or `on` (yes), `0` or `off` (no)".to_string()),
    }
}

/// A count of at least one.
fn parse_positive(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a whole number, at least 1".to_string()),
    }
}

/// A number of elements, at least one.
fn parse_elements(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a number of elements, at least 1".to_string()),
    }
}

/// A processor count (a whole number).
fn parse_count(text: &str) -> Result<usize, String> {
    text.parse::<usize>()
        .map_err(|_| "expected a processor count".to_string())
}

/// How diffuse is assembled: every choice a user can make about a run (see the module docs
/// for the flags and environment variables).
#[derive(Args, Clone, Debug)]
pub struct Setup {
    /// Execution backend: `embedded` (the in-process worker pool) or `legion` (the Legion
    /// runtime; its own flags such as `-ll:cpu 2` or `-lg:prof 1` pass through).
    #[arg(long, env = "DIFFUSE_BACKEND", value_parser = BackendKind::parse, default_value = "embedded")]
    pub backend: BackendKind,
    /// Worker processors (default: one per core).
    #[arg(long, env = "DIFFUSE_PROCS", value_parser = parse_count)]
    pub procs: Option<usize>,
    /// Nodes the processors are grouped into (`--procs` must be a multiple); on Legion, its
    /// processes.
    #[arg(long, env = "DIFFUSE_NODES", value_parser = parse_positive, default_value = "1")]
    pub nodes: usize,
    /// Task fusion: `on` buffers tasks in a window and runs fusible runs of them as fused
    /// tasks, `off` runs every task as submitted.
    #[arg(long, env = "DIFFUSE_FUSION", value_parser = Switch::parse, default_value = "on")]
    pub fusion: Switch,
    /// Window size in tasks (default: adaptive, starting at 16).
    #[arg(long, env = "DIFFUSE_WINDOW", value_parser = parse_positive)]
    pub window: Option<usize>,
    /// Whether a fused group launched over one point goes on past a constraint on stores in
    /// a new stage, one launch where there would be several (default: where the backend's
    /// launches are costly, i.e. on Legion).
    #[arg(long, env = "DIFFUSE_STAGES", value_parser = Switch::parse)]
    pub stages: Option<Switch>,
    /// JIT-compile fused tasks' kernels: `background` (or `on`) compiles in the background
    /// while native kernels run, `sync` compiles before running, `off` runs native kernels
    /// only. Compiled kernels are kept for later runs in the directory `DIFFUSE_KERNEL_CACHE`
    /// names (default `~/.cache/diffuse/kernels`; `off`: none).
    #[arg(long, env = "DIFFUSE_JIT", value_parser = JitMode::parse, default_value = "background")]
    pub jit: JitMode,
    /// Prefer GPUs for every task (a shorthand for the mapper `Task * GPU,CPU;`; compiled
    /// fused kernels run there); without a GPU the run warns and stays on the CPUs.
    #[arg(long, env = "DIFFUSE_GPU", value_parser = parse_flag)]
    pub gpu: bool,
    /// A Mapple mapper deciding which processor runs each point task (default: contiguous
    /// blocks of each launch, one per processor).
    #[arg(long, env = "DIFFUSE_MAPPER")]
    pub mapper: Option<PathBuf>,
    /// With `--mapper`: record the mapping decisions in the DSL manual's format (the apps
    /// print the warm-up iteration's on stderr).
    #[arg(long, env = "DIFFUSE_MAPPER_LOG", value_parser = parse_flag)]
    pub mapper_log: bool,
    /// The fewest elements an operation gives each processor before it uses fewer of them
    /// (at least one point; `1`: every processor whenever the array has that many elements).
    #[arg(long, env = "DIFFUSE_MIN_BLOCK", value_parser = parse_elements, default_value_t = diffuse_runtime::DEFAULT_MIN_BLOCK)]
    pub min_block: usize,
    /// Working-set bytes per strip when fused element-wise tasks run strip by strip.
    #[arg(long, env = "DIFFUSE_STRIP_BYTES", value_parser = parse_bytes, default_value_t = EmbeddedConfig::default().strip_bytes)]
    pub strip_bytes: usize,
    /// Most memory the embedded backend's stores may take (and the apps' host data, checked
    /// separately), in bytes with an optional K, M, G or T suffix (powers of 1024); a store
    /// past it is an error naming it. At most the machine's memory. Default: the memory
    /// available when the run starts.
    #[arg(long, env = "DIFFUSE_MEMORY_LIMIT", value_parser = parse_bytes)]
    pub memory_limit: Option<usize>,
    /// On Legion: issue repeated launches in Legion traces, so Legion replays their
    /// dependence analysis and mapping.
    #[arg(long, env = "DIFFUSE_LEGION_TRACES", value_parser = Switch::parse, default_value = "on")]
    pub legion_traces: Switch,
    /// On Legion: fold small reductions over several points in diffuse (each point writes
    /// its contribution to a row of its own, one point folds them in order), instead of
    /// through Legion's reduction instances.
    #[arg(long, env = "DIFFUSE_LEGION_FOLDS", value_parser = Switch::parse, default_value = "on")]
    pub legion_folds: Switch,
    /// The backend runtime's own flags (Legion's and Realm's `-ll:*`, `-lg:*`, `-level`, ...;
    /// see [`split_backend_flags`]).
    #[arg(skip)]
    pub backend_flags: Vec<String>,
    /// Where the settings came from, so errors name them as the user wrote them.
    #[arg(skip)]
    pub origin: Origin,
}

/// Where a [`Setup`]'s settings came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Origin {
    /// Command-line flags, or code: errors name the flags (`--procs`).
    #[default]
    Flags,
    /// The environment: errors name the variables (`DIFFUSE_PROCS`).
    Environment,
}

/// A [`Setup`] as a whole command line, to parse it on its own.
#[derive(Parser)]
#[command(name = "diffuse")]
struct SetupCommand {
    #[command(flatten)]
    setup: Setup,
}

/// Why diffuse could not be assembled as asked.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// An environment variable's value is not one its setting takes.
    #[error("{variable}={value}: {reason}")]
    Environment {
        /// The variable.
        variable: String,
        /// Its value.
        value: String,
        /// What the setting takes.
        reason: String,
    },
    /// Settings that do not go together, or a value out of range (the message names them).
    #[error("{0}")]
    Invalid(String),
    /// The embedded backend cannot run that many processors.
    #[error(transparent)]
    TooManyProcs(#[from] diffuse_embedded::TooManyProcs),
    /// The mapper file could not be read.
    #[error("reading the mapper {path}: {source}")]
    MapperFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The Mapple program is not valid for this machine.
    #[error(transparent)]
    Mapper(#[from] diffuse_mapper::error::MappleError),
    /// The backend did not start (boxed: the IR's errors carry shapes inline).
    #[error(transparent)]
    Backend(#[from] Box<diffuse_ir::IrError>),
}

/// A started diffuse: the runtime libraries submit to, and the Mapple placement when a
/// mapper was given (its decision log is read through it).
pub struct Assembled {
    /// The runtime over the chosen backend.
    pub runtime: Arc<Runtime>,
    /// The mapper's placement, when [`Setup::mapper`] named one.
    pub mapple: Option<Arc<MapplePlacement>>,
}

impl Default for Setup {
    /// Every setting at its default, whatever the environment says.
    fn default() -> Self {
        let command = SetupCommand::command().mut_args(|arg| arg.env(None::<&'static str>));
        let matches = command.get_matches_from(["diffuse"]);
        match SetupCommand::from_arg_matches(&matches) {
            Ok(parsed) => parsed.setup,
            Err(e) => unreachable!("the defaults parse: {e}"),
        }
    }
}

impl Setup {
    /// The settings of the environment's `DIFFUSE_*` variables (the others at their
    /// defaults); a variable with a value its setting does not take is an error naming it.
    pub fn from_env() -> Result<Setup, SetupError> {
        let command = SetupCommand::command();
        for arg in command.get_arguments() {
            let Some(variable) = arg.get_env().and_then(OsStr::to_str) else {
                continue;
            };
            let Some(value) = std::env::var_os(variable) else {
                continue;
            };
            // This setting alone, so that an error is its own.
            let alone = clap::Command::new("diffuse").arg(arg.clone());
            if let Err(e) = alone.try_get_matches_from(["diffuse"]) {
                let reason = std::error::Error::source(&e)
                    .map_or_else(|| e.kind().to_string(), ToString::to_string);
                return Err(SetupError::Environment {
                    variable: variable.to_string(),
                    value: value.to_string_lossy().into_owned(),
                    reason,
                });
            }
        }
        let matches = command
            .try_get_matches_from(["diffuse"])
            .map_err(|e| SetupError::Invalid(e.to_string()))?;
        let mut setup = SetupCommand::from_arg_matches(&matches)
            .map_err(|e| SetupError::Invalid(e.to_string()))?
            .setup;
        setup.origin = Origin::Environment;
        Ok(setup)
    }

    /// How errors name the setting of field `id` (`procs`): its flag or its variable.
    pub fn name_of(&self, id: &str) -> String {
        let command = SetupCommand::command();
        let arg = command.get_arguments().find(|a| a.get_id() == id);
        match (self.origin, arg) {
            (Origin::Environment, Some(arg)) => arg
                .get_env()
                .map_or_else(|| id.to_string(), |v| v.to_string_lossy().into_owned()),
            (_, Some(arg)) => format!("--{}", arg.get_long().unwrap_or(id)),
            (_, None) => id.to_string(),
        }
    }

    /// The processors the run uses: [`Setup::procs`], else one per core.
    pub fn processors(&self) -> usize {
        self.procs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// The most bytes of host data a run may hold: [`Setup::memory_limit`], else the memory
    /// available now. A limit past the machine's memory is refused: it would let a run
    /// allocate until the kernel kills it.
    pub fn host_memory_limit(&self) -> Result<usize, SetupError> {
        let physical = diffuse_backend::memory::physical_memory();
        match (self.memory_limit, physical) {
            (Some(limit), Some(physical)) if limit > physical => Err(SetupError::Invalid(format!(
                "{} {limit} is more than the {physical} bytes of memory of this machine",
                self.name_of("memory_limit")
            ))),
            (Some(limit), _) => Ok(limit),
            (None, _) => Ok(diffuse_backend::memory::available_memory().unwrap_or(usize::MAX)),
        }
    }

    /// The backend this setup asks for, checked: processor and node counts that fit, and
    /// backend flags only for a backend that takes them.
    pub fn backend_config(&self) -> Result<BackendConfig, SetupError> {
        let procs = self.processors();
        if procs == 0 {
            return Err(SetupError::Invalid(format!(
                "{} {procs}: there must be at least 1 processor",
                self.name_of("procs")
            )));
        }
        if !procs.is_multiple_of(self.nodes) {
            return Err(SetupError::Invalid(format!(
                "{} {procs} must be a multiple of {} {}",
                self.name_of("procs"),
                self.name_of("nodes"),
                self.nodes
            )));
        }
        Ok(match self.backend {
            BackendKind::Embedded => {
                if !self.backend_flags.is_empty() {
                    return Err(SetupError::Invalid(format!(
                        "Legion flags ({}) need {} legion",
                        self.backend_flags.join(" "),
                        self.name_of("backend")
                    )));
                }
                diffuse_embedded::check_procs(&self.name_of("procs"), procs)?;
                BackendConfig::Embedded(EmbeddedConfig {
                    procs: Some(procs),
                    strip_bytes: self.strip_bytes,
                    nodes: self.nodes,
                    memory_limit: self.memory_limit,
                    ..Default::default()
                })
            }
            BackendKind::Legion => BackendConfig::Legion(LegionConfig {
                cpus: self.procs,
                strip_bytes: self.strip_bytes,
                flags: self.backend_flags.clone(),
                traced_launches: self.legion_traces.is_on(),
                folded_reduction_elements: match self.legion_folds {
                    Switch::On => LegionConfig::default().folded_reduction_elements,
                    Switch::Off => 0,
                },
                // Legion's nodes are processes: a count other than the default 1 must match.
                nodes: (self.nodes != 1).then_some(self.nodes),
                ..Default::default()
            }),
        })
    }

    /// Starts the backend, then the runtime over it with this setup's fusion, kernel
    /// compilers and placement. Notices and warnings about the choices (a mapper directive
    /// the backend ignores, `--gpu` on a machine without one) go to stderr.
    pub fn start(&self) -> Result<Assembled, SetupError> {
        let backend = crate::start_backend(&self.backend_config()?).map_err(Box::new)?;
        let machine = backend.machine();
        let mapple = match (&self.mapper, self.gpu) {
            (Some(_), true) => {
                return Err(SetupError::Invalid(format!(
                    "{} is a shorthand for a mapper that prefers GPUs; with {}, say so in the \
                     mapper (Task * GPU,CPU;)",
                    self.name_of("gpu"),
                    self.name_of("mapper")
                )))
            }
            (Some(file), false) => {
                let source =
                    std::fs::read_to_string(file).map_err(|source| SetupError::MapperFile {
                        path: file.clone(),
                        source,
                    })?;
                let placement = MapplePlacement::new(
                    &file.display().to_string(),
                    &source,
                    machine,
                    self.mapper_log,
                )?;
                for notice in placement.notices(&backend.capabilities()) {
                    eprint_line(&format!("notice: {notice}"));
                }
                Some(Arc::new(placement))
            }
            (None, true) => {
                if machine.gpus_per_node == 0 {
                    eprint_line(&format!(
                        "warning: {} is on but the backend has no GPU ({}): fused kernels run \
                         on the CPU",
                        self.name_of("gpu"),
                        match self.backend {
                            BackendKind::Legion => {
                                "this Legion run has no GPU processors: give -ll:gpu N on a \
                                 machine with GPUs"
                            }
                            BackendKind::Embedded => "no GPU on this machine",
                        }
                    ));
                }
                Some(Arc::new(MapplePlacement::prefer_gpus(machine)?))
            }
            (None, false) => None,
        };
        let config = RuntimeConfig {
            fusion: FusionConfig {
                enabled: self.fusion.is_on(),
                window: self.window,
                stages: self.stages.map(Switch::is_on),
            },
            jit: self.jit.compiler(),
            gpu: None,
            placement: mapple.clone().map(|m| m as Arc<dyn Placement>),
            min_block: self.min_block,
        };
        Ok(Assembled {
            runtime: crate::start_runtime(backend, config),
            mapple,
        })
    }
}

/// The compiler of GPU kernels for a backend whose machine has GPUs (`None` for one without):
/// PTX for this machine's GPU, or, where no CUDA GPU answers (the simulated GPU), for
/// [`REFERENCE_GPU_CHIP`]; host code linked against the CUDA device's runtime functions.
/// One per process, probed once, so kernels compiled for one runtime serve every other.
pub fn gpu_jit_for(backend: &dyn Backend) -> Option<Arc<GpuJit>> {
    static GPU_JIT: OnceLock<Arc<GpuJit>> = OnceLock::new();
    (backend.machine().gpus_per_node > 0).then(|| {
        GPU_JIT
            .get_or_init(|| {
                let chip =
                    diffuse_device::cuda::chip().unwrap_or_else(|| REFERENCE_GPU_CHIP.to_string());
                Arc::new(GpuJit::new(
                    GpuTarget::for_chip(&chip),
                    diffuse_device::cuda::mlir_runtime(),
                ))
            })
            .clone()
    })
}

/// The chip GPU kernels are built for when no CUDA GPU says which (an H100's): the simulated
/// GPU runs the host version of exactly the kernels built for it.
pub const REFERENCE_GPU_CHIP: &str = "sm_90";

/// Splits a command line into its own arguments and the backend runtime's flags (Legion's
/// and Realm's, each with its value when the next argument is not a flag), which go to
/// [`Setup::backend_flags`].
pub fn split_backend_flags(args: impl Iterator<Item = String>) -> (Vec<String>, Vec<String>) {
    let mut own = Vec::new();
    let mut backend = Vec::new();
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        if diffuse_legion::is_legion_flag(&arg) {
            backend.push(arg);
            if let Some(value) = args.next_if(|next| !next.starts_with('-')) {
                backend.push(value);
            }
        } else {
            own.push(arg);
        }
    }
    (own, backend)
}

/// Finishes and stops any backend runtime this process started (Legion's), before the
/// process exits; nothing to do otherwise.
pub fn shutdown() {
    diffuse_legion::shutdown();
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Tests that read or change the process's environment take turns.
    static ENVIRONMENT: Mutex<()> = Mutex::new(());

    /// `from_env` with `vars` set (and removed again after).
    fn from_env_with(vars: &[(&str, &str)]) -> Result<Setup, SetupError> {
        let _turn = ENVIRONMENT.lock().unwrap_or_else(|e| e.into_inner());
        for (name, value) in vars {
            std::env::set_var(name, value);
        }
        let setup = Setup::from_env();
        for (name, _) in vars {
            std::env::remove_var(name);
        }
        setup
    }

    #[test]
    fn every_setting_has_a_flag_and_a_diffuse_variable_of_the_same_name() {
        let command = SetupCommand::command();
        for arg in command.get_arguments().filter(|a| !a.is_hide_set()) {
            let Some(flag) = arg.get_long() else { continue };
            let variable = arg.get_env().and_then(OsStr::to_str);
            let want = format!("DIFFUSE_{}", flag.replace('-', "_").to_uppercase());
            assert_eq!(variable, Some(want.as_str()), "--{flag}");
        }
    }

    #[test]
    fn the_environment_sets_what_the_flags_set() {
        let setup = from_env_with(&[
            ("DIFFUSE_BACKEND", "legion"),
            ("DIFFUSE_PROCS", "3"),
            ("DIFFUSE_FUSION", "off"),
            ("DIFFUSE_JIT", "sync"),
            ("DIFFUSE_GPU", "on"),
            ("DIFFUSE_MIN_BLOCK", "1"),
            ("DIFFUSE_MEMORY_LIMIT", "2G"),
        ])
        .unwrap();
        assert_eq!(setup.backend, BackendKind::Legion);
        assert_eq!(setup.procs, Some(3));
        assert_eq!(setup.fusion, Switch::Off);
        assert_eq!(setup.jit, JitMode::Sync);
        assert!(setup.gpu);
        assert_eq!(setup.min_block, 1);
        assert_eq!(setup.memory_limit, Some(2 << 30));
        assert_eq!(setup.origin, Origin::Environment);
        assert_eq!(setup.name_of("procs"), "DIFFUSE_PROCS");
        let defaults = from_env_with(&[]).unwrap();
        assert_eq!(defaults.backend, BackendKind::Embedded);
        assert_eq!(defaults.jit, JitMode::Background);
        assert!(!defaults.gpu);
        assert_eq!(defaults.min_block, diffuse_runtime::DEFAULT_MIN_BLOCK);
    }

    #[test]
    fn a_bad_variable_is_an_error_naming_it_its_value_and_what_it_takes() {
        for (name, value, reason) in [
            (
                "DIFFUSE_JIT",
                "eager",
                "expected `background`, `sync` or `off`",
            ),
            (
                "DIFFUSE_MIN_BLOCK",
                "0",
                "expected a number of elements, at least 1",
            ),
            (
                "DIFFUSE_BACKEND",
                "mpi",
                "the backends are `embedded` and `legion`",
            ),
            ("DIFFUSE_PROCS", "many", "expected a processor count"),
            ("DIFFUSE_FUSION", "yes", "expected `on` or `off`"),
            ("DIFFUSE_GPU", "yes please", "expected `1` or `on`"),
            ("DIFFUSE_MEMORY_LIMIT", "lots", "is not a byte count"),
        ] {
            let message = match from_env_with(&[(name, value)]) {
                Ok(setup) => panic!("{name}={value} was taken: {setup:?}"),
                Err(e) => e.to_string(),
            };
            assert!(
                message.starts_with(&format!("{name}={value}: ")) && message.contains(reason),
                "{message}"
            );
        }
    }

    #[test]
    fn code_defaults_ignore_the_environment() {
        let _turn = ENVIRONMENT.lock().unwrap_or_else(|e| e.into_inner());
        std::env::set_var("DIFFUSE_FUSION", "off");
        let setup = Setup::default();
        std::env::remove_var("DIFFUSE_FUSION");
        assert_eq!(setup.fusion, Switch::On);
        assert_eq!(setup.origin, Origin::Flags);
        assert_eq!(setup.name_of("procs"), "--procs");
    }

    #[test]
    fn settings_that_do_not_go_together_are_refused_by_name() {
        let uneven = Setup {
            procs: Some(3),
            nodes: 2,
            ..Setup::default()
        };
        let message = uneven.backend_config().unwrap_err().to_string();
        assert_eq!(message, "--procs 3 must be a multiple of --nodes 2");
        let none = Setup {
            procs: Some(0),
            origin: Origin::Environment,
            ..Setup::default()
        };
        let message = none.backend_config().unwrap_err().to_string();
        assert_eq!(
            message,
            "DIFFUSE_PROCS 0: there must be at least 1 processor"
        );
        let flags_on_embedded = Setup {
            procs: Some(1),
            backend_flags: vec!["-ll:cpu".into(), "2".into()],
            ..Setup::default()
        };
        let message = flags_on_embedded.backend_config().unwrap_err().to_string();
        assert_eq!(message, "Legion flags (-ll:cpu 2) need --backend legion");
        let too_many = Setup {
            procs: Some(diffuse_embedded::max_procs() + 1),
            origin: Origin::Environment,
            ..Setup::default()
        };
        let message = too_many.backend_config().unwrap_err().to_string();
        assert!(message.starts_with("DIFFUSE_PROCS "), "{message}");
        let past_memory = Setup {
            memory_limit: Some(usize::MAX),
            ..Setup::default()
        };
        let message = past_memory.host_memory_limit().unwrap_err().to_string();
        assert!(message.starts_with("--memory-limit 18446744073709551615 is more than"));
    }

    #[test]
    fn backend_flags_are_split_off_with_their_values() {
        let args = [
            "app", "--n", "8", "-ll:cpu", "2", "-lg:prof", "1", "--json", "-ll:util", "-x",
        ];
        let (own, backend) = split_backend_flags(args.iter().map(|a| a.to_string()));
        assert_eq!(own, ["app", "--n", "8", "--json", "-x"]);
        assert_eq!(backend, ["-ll:cpu", "2", "-lg:prof", "1", "-ll:util"]);
    }

    #[test]
    fn byte_counts_take_binary_suffixes() {
        assert_eq!(parse_bytes("512"), Ok(512));
        assert_eq!(parse_bytes("4k"), Ok(4096));
        assert_eq!(parse_bytes("8G"), Ok(8 << 30));
        assert!(parse_bytes("1.5G").is_err());
        assert!(parse_bytes("99999999999T").is_err());
    }
}
