//! Where a launch runs: the runtime's placement decisions for one launch, in the machine's
//! vocabulary (processor kinds, memory kinds, layouts).

use diffuse_machine::{LayoutConstraint, MemKind, ProcKind, Processor, StealScope};

/// The memory one store of a launch is placed in, and the layout asked for it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArgMemory {
    /// The memory kind.
    pub memory: MemKind,
    /// Layout constraints (empty: the backend's default, row-major, packed).
    pub layout: Vec<LayoutConstraint>,
    /// Mapple's `GarbageCollect`: the instance may be collected as soon as the task is done
    /// instead of being kept for later tasks.
    pub collect: bool,
}

impl ArgMemory {
    /// The default memory of a processor kind: framebuffer for GPUs, system memory otherwise.
    pub fn default_for(kind: ProcKind) -> Self {
        ArgMemory {
            memory: match kind {
                ProcKind::Gpu => MemKind::FbMem,
                _ => MemKind::SysMem,
            },
            layout: Vec::new(),
            collect: false,
        }
    }
}

/// The runtime's placement decisions for one launch.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LaunchPlacement {
    /// The processor kind the task's `Task` statements (or the default) chose.
    pub kind: ProcKind,
    /// The processor of every launch point, points in row-major order.
    pub processors: Vec<Processor>,
    /// Memory and layout per store slot of the launch (see [`crate::Slot::Store`]).
    pub memories: Vec<ArgMemory>,
    /// True when a mapper chose the processors: the backend must run each point exactly
    /// there. False for the default blocks, which a backend may run elsewhere when that is
    /// cheaper (e.g. a tiny launch on the submitting thread).
    pub pinned: bool,
    /// Mapple's `Backpressure`/`InstanceLimit`: at most this many launches of the task in
    /// flight at once (a backend that runs launches one by one meets any limit).
    pub in_flight_limit: Option<u64>,
    /// Mapple's `TaskSteal`: idle processors of the launch's kind may take its points from
    /// the processors they were placed on, on the same node or on any node (`None`: points
    /// run where they were placed).
    pub steal: Option<StealScope>,
}

impl LaunchPlacement {
    /// The default blocks: CPU points on `processors` (row-major), each of `stores` stores in
    /// system memory, nothing pinned, limited or stealable.
    pub fn default_cpus(processors: Vec<Processor>, stores: usize) -> Self {
        LaunchPlacement {
            kind: ProcKind::Cpu,
            processors,
            memories: vec![ArgMemory::default_for(ProcKind::Cpu); stores],
            pinned: false,
            in_flight_limit: None,
            steal: None,
        }
    }
}
