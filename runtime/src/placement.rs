//! Where each point task runs: the runtime's placement decisions for a launch, made once per
//! launch template, by the default blocks or by a [`Placement`] such as a Mapple mapper.
//!
//! Without a placement, a launch runs on CPUs: its points, row-major, are cut into
//! contiguous blocks, one per CPU of the machine (node-major). With a [`MapplePlacement`],
//! the mapper's `Task` statements choose the processor kind, its `IndexTaskMap` (or default
//! mapping) the processor of every point, and its `Region`/`Layout` statements the memory
//! kind and layout of every store. A fused task is placed by an `IndexTaskMap` naming the
//! fused task (its constituents' kind names joined by `+`) if the mapper has one, else by its
//! first constituent's mapping; every backend receives the decisions, so all apply the same
//! policy.
//!
//! Mapple task names are identifiers, so a task kind is named in a mapper by its kind name
//! with every character other than a letter, digit or `_` replaced by `_`: the array
//! library's `array.add.f64.aa` is `array_add_f64_aa`, and the fused task
//! `array.add.f64.aa+array.copy.f64.a` is `array_add_f64_aa_array_copy_f64_a`.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use diffuse_backend::{
    ArgMemory, LaunchPlacement, MachineShape, MemKind, ProcKind, Processor, StealScope,
};
use diffuse_ir::{IrError, Point, Rect, Shape};
use diffuse_mapper::machine::Machine;
use diffuse_mapper::placement::{Mapper, RegionRef};

/// Decides where the points of a launch run.
pub trait Placement: Send + Sync + fmt::Debug {
    /// The processor kind of the task named `task` (constituents `constituents`, one name for
    /// a plain task); the default is CPU.
    fn processor_kind(&self, _task: &str, _constituents: &[&str]) -> ProcKind {
        ProcKind::Cpu
    }

    /// The processor that runs point `point` of a launch over `launch` of the task named
    /// `task` on processors of kind `kind`.
    fn processor(
        &self,
        task: &str,
        constituents: &[&str],
        kind: ProcKind,
        point: &Point,
        launch: Shape,
    ) -> Result<Processor, IrError>;

    /// The memory and layout of the task's store number `region` (in order of first use) on
    /// processors of kind `kind`; the default is the kind's default memory.
    fn memory(
        &self,
        _task: &str,
        _constituents: &[&str],
        _region: usize,
        kind: ProcKind,
    ) -> ArgMemory {
        ArgMemory::default_for(kind)
    }

    /// How many launches of the task may be in flight at once (`None`: no limit, the
    /// default).
    fn in_flight_limit(&self, _task: &str, _constituents: &[&str]) -> Option<u64> {
        None
    }

    /// Whether idle processors may steal the task's points, and from where (`None`, the
    /// default: points run where they are placed).
    fn steal(&self, _task: &str, _constituents: &[&str], _kind: ProcKind) -> Option<StealScope> {
        None
    }

    /// Records the decisions for one launch (for a logging mode); the default does nothing.
    fn record(&self, _task: &str, _points: &[Point], _processors: &[Processor]) {}

    /// Whether this placement may put a task on a GPU (the default: no). The runtime then
    /// keeps scalar work out of larger launches, which the GPU kernel composer cannot run.
    fn may_use_gpus(&self) -> bool {
        false
    }

    /// How many processors libraries should split a launch over (what
    /// [`Executor::processors`](diffuse_ir::Executor::processors) answers): `None`, the
    /// default, for the machine's CPUs. A placement that runs tasks on GPUs answers the
    /// number of GPUs, so that each GPU runs one point of a launch, one kernel over its whole
    /// tile, instead of one small kernel per CPU-sized tile.
    fn launch_processors(&self) -> Option<usize> {
        None
    }
}

/// The placement of a launch of `task` with `stores` distinct stores over `launch`, on
/// `machine`: by `placement`, or the default CPU blocks. Checks every decision against the
/// machine.
pub(crate) fn decide(
    placement: Option<&dyn Placement>,
    machine: &MachineShape,
    backend: &str,
    task: &str,
    constituents: &[&str],
    launch: Shape,
    stores: usize,
) -> Result<LaunchPlacement, IrError> {
    let points: Vec<Point> = Rect::from_shape(launch).points().collect();
    let Some(placement) = placement else {
        let cpus = machine.cpus().max(1);
        let per_node = machine.cpus_per_node.max(1);
        let count = points.len().max(1);
        let processors = (0..points.len())
            .map(|i| {
                let p = i * cpus.min(count) / count;
                Processor {
                    kind: ProcKind::Cpu,
                    node: p / per_node,
                    index: p % per_node,
                }
            })
            .collect();
        return Ok(LaunchPlacement::default_cpus(processors, stores));
    };
    let kind = placement.processor_kind(task, constituents);
    let processors = points
        .iter()
        .map(|p| {
            let at = placement.processor(task, constituents, kind, p, launch)?;
            if at.node >= machine.nodes || at.index >= machine.per_node(at.kind) {
                return Err(IrError::Backend {
                    backend: backend.into(),
                    message: format!(
                        "the mapper put point {p} of {task} on {at}, outside the machine of \
                         {} nodes with {} {} processors each",
                        machine.nodes,
                        machine.per_node(at.kind),
                        at.kind
                    ),
                });
            }
            Ok(at)
        })
        .collect::<Result<Vec<_>, _>>()?;
    placement.record(task, &points, &processors);
    Ok(LaunchPlacement {
        kind,
        processors,
        memories: (0..stores)
            .map(|s| {
                let mut memory = placement.memory(task, constituents, s, kind);
                if memory.memory == MemKind::FbMem && machine.gpus_per_node == 0 {
                    tracing::warn!(
                        "the mapper places store {s} of {task} in FBMEM, but the machine has no \
                         GPU: it stays in SYSMEM"
                    );
                    memory.memory = MemKind::SysMem;
                }
                memory
            })
            .collect(),
        pinned: true,
        in_flight_limit: placement.in_flight_limit(task, constituents),
        steal: placement.steal(task, constituents, kind),
    })
}

/// Places points by a Mapple mapper.
pub struct MapplePlacement {
    mapper: Mapper,
    logging: AtomicBool,
    log: Mutex<Vec<String>>,
}

impl MapplePlacement {
    /// Loads the mapper `source` (named `file` in errors) for `machine` (a backend's
    /// [`MachineShape`], or a Mapple [`Machine`]). With `log`, every launch's decisions are
    /// recorded in the DSL manual's format (see [`MapplePlacement::take_log`]).
    pub fn new(
        file: &str,
        source: &str,
        machine: impl Into<Machine>,
        log: bool,
    ) -> Result<Self, diffuse_mapper::error::MappleError> {
        Ok(MapplePlacement {
            mapper: Mapper::from_source(file, source, machine.into())?,
            logging: AtomicBool::new(log),
            log: Mutex::new(Vec::new()),
        })
    }

    /// A mapper that prefers GPUs for every task and falls back to CPUs (`--gpu`).
    pub fn prefer_gpus(
        machine: impl Into<Machine>,
    ) -> Result<Self, diffuse_mapper::error::MappleError> {
        Self::new("<--gpu>", "Task * GPU,CPU;\n", machine, false)
    }

    /// The notices for the mapper's statements that `backend` cannot act on (see
    /// [`diffuse_mapper::effects::notices`]); a runtime logs them when it loads the mapper.
    /// Also one per `Task` statement none of whose processor kinds this machine has: its
    /// tasks run on the first kind the machine has (GPU, then CPU).
    pub fn notices(&self, backend: &diffuse_backend::Capabilities) -> Vec<String> {
        let file = self.mapper.env().file();
        let program = self.mapper.program();
        let mut notices = diffuse_mapper::effects::notices(file, program, backend);
        let machine = self.mapper.machine();
        let has = |k: &ProcKind| machine.nodes() > 0 && machine.procs_per_node(*k) > 0;
        let fallback = [ProcKind::Gpu, ProcKind::Cpu]
            .into_iter()
            .chain(ProcKind::ALL)
            .find(has);
        for stmt in &program.stmts {
            let diffuse_mapper::ast::StmtKind::Task(task) = &stmt.kind else {
                continue;
            };
            if let (false, Some(runs_on)) = (task.procs.iter().any(has), fallback) {
                notices.push(format!(
                    "{file}:{}: `{}` names processors this machine has none of: its tasks \
                     run on {runs_on} processors",
                    stmt.span,
                    stmt.kind_text()
                ));
            }
        }
        notices
    }

    /// Starts or stops recording decisions.
    pub fn set_logging(&self, on: bool) {
        self.logging.store(on, Ordering::Relaxed);
    }

    /// The log lines recorded since the last call: per launch, `SELECT_SHARDING_FUNCTOR for
    /// TASK` with a `node <- (point) ...` line per node, then `SLICE_TASK for TASK` with a
    /// `<point>..<point> -> processor` line per point.
    pub fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The Mapple name decisions about `task` are taken under (the mapper's policy for fused
    /// tasks, [`Mapper::fused_name`]).
    fn mapped_name(&self, task: &str, constituents: &[&str]) -> String {
        let parts: Vec<String> = constituents.iter().map(|c| mapple_name(c)).collect();
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        let name = mapple_name(task);
        self.mapper.fused_name(&name, &parts, false).to_string()
    }
}

impl fmt::Debug for MapplePlacement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MapplePlacement({:?})", self.mapper.machine())
    }
}

/// A task or kind name as a Mapple identifier (see the module documentation).
pub fn mapple_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn point_text(p: &Point) -> String {
    let coords: Vec<String> = p.as_slice().iter().map(|c| c.to_string()).collect();
    coords.join(",")
}

impl Placement for MapplePlacement {
    fn may_use_gpus(&self) -> bool {
        self.mapper.machine().procs_per_node(ProcKind::Gpu) > 0
    }

    /// The GPUs of the machine when a task without a rule of its own runs on a GPU.
    fn launch_processors(&self) -> Option<usize> {
        let machine = self.mapper.machine();
        (self.processor_kind("", &[]) == ProcKind::Gpu)
            .then(|| machine.nodes() * machine.procs_per_node(ProcKind::Gpu))
            .filter(|&gpus| gpus > 0)
    }

    fn processor_kind(&self, task: &str, constituents: &[&str]) -> ProcKind {
        let kind = self
            .mapper
            .processor_kind(&self.mapped_name(task, constituents))
            .unwrap_or(ProcKind::Cpu);
        match kind {
            ProcKind::Cpu | ProcKind::Gpu | ProcKind::Omp => kind,
            // Backends run tasks on CPUs, GPUs and OpenMP processors only.
            _ => ProcKind::Cpu,
        }
    }

    fn processor(
        &self,
        task: &str,
        constituents: &[&str],
        _kind: ProcKind,
        point: &Point,
        launch: Shape,
    ) -> Result<Processor, IrError> {
        let placed = self.mapper.place(
            &self.mapped_name(task, constituents),
            point.as_slice(),
            launch.as_slice(),
        );
        placed.map_err(|e| IrError::Backend {
            backend: "mapper".into(),
            message: format!("mapping point {point} of {task}: {e}"),
        })
    }

    fn memory(
        &self,
        task: &str,
        constituents: &[&str],
        region: usize,
        kind: ProcKind,
    ) -> ArgMemory {
        let name = self.mapped_name(task, constituents);
        let region = RegionRef {
            index: region,
            name: None,
        };
        let default = ArgMemory::default_for(kind);
        let memory = self
            .mapper
            .memories(&name, region, kind)
            .and_then(|m| m.first().copied())
            .unwrap_or(default.memory);
        ArgMemory {
            memory,
            layout: self
                .mapper
                .layout(&name, region, kind, memory)
                .map(<[_]>::to_vec)
                .unwrap_or_default(),
            collect: self.mapper.garbage_collect(&name, region),
        }
    }

    fn in_flight_limit(&self, task: &str, constituents: &[&str]) -> Option<u64> {
        self.mapper
            .backpressure(&self.mapped_name(task, constituents))
    }

    fn steal(&self, task: &str, constituents: &[&str], kind: ProcKind) -> Option<StealScope> {
        // Only processors of the kind the points run on can run them.
        self.mapper
            .steal(&self.mapped_name(task, constituents))
            .filter(|&(thief, _)| thief == kind)
            .map(|(_, scope)| scope)
    }

    fn record(&self, task: &str, points: &[Point], processors: &[Processor]) {
        if !self.logging.load(Ordering::Relaxed) {
            return;
        }
        let task = mapple_name(task);
        let nodes = processors.iter().map(|p| p.node + 1).max().unwrap_or(0);
        let mut lines = vec![format!("SELECT_SHARDING_FUNCTOR for {task}")];
        for node in 0..nodes {
            let on_node: Vec<String> = points
                .iter()
                .zip(processors)
                .filter(|(_, p)| p.node == node)
                .map(|(pt, _)| format!("({})", point_text(pt)))
                .collect();
            if !on_node.is_empty() {
                lines.push(format!("{node} <- {}", on_node.join(" ")));
            }
        }
        lines.push(format!("SLICE_TASK for {task}"));
        for (pt, p) in points.iter().zip(processors) {
            let t = point_text(pt);
            lines.push(format!(
                "<{t}>..<{t}> -> node {} processor {}",
                p.node, p.index
            ));
        }
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(lines);
    }
}
