//! The machine Realm runs in this process: its shape, read from the shim once Legion has
//! started, and what the mapper needs of it later.

use std::sync::OnceLock;

use diffuse_backend::MachineShape;

use crate::ffi;

/// The shape read when Legion started (Legion starts once per process).
static STARTED: OnceLock<MachineShape> = OnceLock::new();

/// The machine Legion runs (its Realm processors), read from the running runtime and kept
/// for [`realm_cpus_per_node`].
pub(crate) fn discover(api: &ffi::LegionApi) -> MachineShape {
    let (mut nodes, mut cpus, mut gpus, mut omps) = (0u32, 0u32, 0u32, 0u32);
    // SAFETY: plain out-parameters; the runtime is running.
    unsafe { api.diffuse_legion_machine_shape(&mut nodes, &mut cpus, &mut gpus, &mut omps) };
    let shape = MachineShape {
        nodes: nodes.max(1) as usize,
        cpus_per_node: cpus.max(1) as usize,
        gpus_per_node: gpus as usize,
        omps_per_node: omps as usize,
    };
    *STARTED.get_or_init(|| shape)
}

/// The CPU processors per node Realm runs (1 before Legion started).
pub(crate) fn realm_cpus_per_node() -> usize {
    STARTED.get().map_or(1, |m| m.cpus_per_node.max(1))
}
