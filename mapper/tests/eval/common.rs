//! Shared helpers.

use diffuse_mapper::machine::{Machine, ProcKind, Processor};
use diffuse_mapper::placement::Mapper;

/// The parser tests' fixtures: every mapper text of the two sources.
pub use crate::source_fixtures::{fixture, fixtures};

/// Loads `src` on `machine`, panicking with the error message on failure.
pub fn mapper(src: &str, machine: Machine) -> Mapper {
    Mapper::from_source("t.mapple", src, machine).unwrap_or_else(|e| panic!("{e}"))
}

/// `nodes` x `per_node` processors of every kind.
pub fn machine(nodes: usize, per_node: usize) -> Machine {
    Machine::uniform(nodes, per_node)
}

/// GPU `index` of node `node`.
pub fn gpu(node: usize, index: usize) -> Processor {
    Processor {
        kind: ProcKind::Gpu,
        node,
        index,
    }
}

/// CPU `index` of node `node`.
pub fn cpu(node: usize, index: usize) -> Processor {
    Processor {
        kind: ProcKind::Cpu,
        node,
        index,
    }
}

/// Places `point` of `launch` for `task`, panicking with the error message on failure.
pub fn place(m: &Mapper, task: &str, point: &[i64], launch: &[i64]) -> Processor {
    m.place(task, point, launch)
        .unwrap_or_else(|e| panic!("placing {task} {point:?} of {launch:?}: {e}"))
}
