//! Processors: their kinds (as Mapple names them), one processor of a machine, and how far
//! an idle processor may reach to steal work.

use std::fmt;
use std::str::FromStr;

/// A kind of processor, as named in Mapple's `Task` statements and in `Machine(KIND)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProcKind {
    /// `CPU`: a latency-optimised core (Legion's `LOC_PROC`).
    Cpu,
    /// `GPU`: a throughput-optimised processor (Legion's `TOC_PROC`).
    Gpu,
    /// `OMP`: an OpenMP processor (`OMP_PROC`).
    Omp,
    /// `IO`: an I/O processor (`IO_PROC`).
    Io,
    /// `PY`: a Python processor (`PY_PROC`).
    Py,
    /// `PROC`: a processor set (`PROC_SET`).
    ProcSet,
}

impl ProcKind {
    /// Every processor kind, in the Mapple manual's order.
    pub const ALL: [ProcKind; 6] = [
        ProcKind::Cpu,
        ProcKind::Gpu,
        ProcKind::Omp,
        ProcKind::Io,
        ProcKind::Py,
        ProcKind::ProcSet,
    ];

    /// The name Mapple uses for this kind (`CPU`, `GPU`, `OMP`, `IO`, `PY`, `PROC`).
    pub fn name(self) -> &'static str {
        match self {
            ProcKind::Cpu => "CPU",
            ProcKind::Gpu => "GPU",
            ProcKind::Omp => "OMP",
            ProcKind::Io => "IO",
            ProcKind::Py => "PY",
            ProcKind::ProcSet => "PROC",
        }
    }

    /// The kind with this Mapple name (exact, upper case), if any.
    pub fn from_name(name: &str) -> Option<ProcKind> {
        ProcKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl fmt::Display for ProcKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A processor kind name that is none of Mapple's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown processor kind `{0}` (expected CPU, GPU, OMP, IO, PY or PROC)")]
pub struct UnknownProcKind(pub String);

impl FromStr for ProcKind {
    type Err = UnknownProcKind;

    /// The kind named `s` (surrounding blanks ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProcKind::from_name(s.trim()).ok_or_else(|| UnknownProcKind(s.to_string()))
    }
}

/// One processor of a machine: its kind, its node and its index within the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Processor {
    /// The processor's kind.
    pub kind: ProcKind,
    /// The node it is on (`0..nodes`).
    pub node: usize,
    /// Its index among the processors of its kind on that node.
    pub index: usize,
}

impl fmt::Display for Processor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node {} {} {}", self.node, self.kind, self.index)
    }
}

/// Where an idle processor may take a stealable point from (Mapple's `TaskSteal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StealScope {
    /// `SAME_NODE`: processors of the task's node.
    SameNode,
    /// `ANY_NODE`: processors of any node.
    AnyNode,
}
