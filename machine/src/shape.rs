//! The processors a backend offers.

use crate::processor::ProcKind;

/// The processors of a backend's machine: `nodes` nodes with the same processors each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MachineShape {
    /// Number of nodes.
    pub nodes: usize,
    /// CPU processors per node.
    pub cpus_per_node: usize,
    /// GPUs per node (0 without a usable GPU).
    pub gpus_per_node: usize,
    /// OpenMP processors per node (0 when the backend has none).
    pub omps_per_node: usize,
}

impl MachineShape {
    /// Processors of `kind` on each node.
    pub fn per_node(&self, kind: ProcKind) -> usize {
        match kind {
            ProcKind::Cpu => self.cpus_per_node,
            ProcKind::Gpu => self.gpus_per_node,
            ProcKind::Omp => self.omps_per_node,
            ProcKind::Io | ProcKind::Py | ProcKind::ProcSet => 0,
        }
    }

    /// All CPU processors of the machine.
    pub fn cpus(&self) -> usize {
        self.nodes * self.cpus_per_node
    }
}
