//! Fused tasks: a fusible prefix packaged for a backend.
//!
//! A [`FusedTask`] keeps its constituents in program order (each point task runs them one
//! after another on one processor) together with the fused signature of the paper §4.2.2:
//! one argument per (store, partition) the prefix touches, with the union of the accesses.
//! Temporaries are not arguments: backends give each point a private buffer for them.

use std::fmt;

use diffuse_ir::{IndexTask, Partition, Privilege, Shape, StoreId, StoreRef};
use hashbrown::HashMap;

/// One argument of the fused signature.
#[derive(Clone, Debug)]
pub struct FusedArg {
    /// The store.
    pub store: StoreRef,
    /// The partition every constituent accessing it through this argument uses.
    pub partition: Partition,
    /// The constituents' accesses combined in program order ([`Privilege::then`]).
    pub privilege: Privilege,
}

/// A fused prefix of the window.
#[derive(Clone)]
pub struct FusedTask {
    launch_domain: Shape,
    constituents: Vec<IndexTask>,
    temporaries: Vec<StoreId>,
    args: Vec<FusedArg>,
}

impl FusedTask {
    /// Fuses `constituents` (a fusible prefix, in program order) with the given temporaries.
    pub fn new(constituents: Vec<IndexTask>, temporaries: Vec<StoreId>) -> Self {
        let launch_domain = constituents
            .first()
            .map_or_else(|| Shape::splat(0, 1), |t| t.launch_domain());
        let mut args: Vec<FusedArg> = Vec::new();
        let mut index: HashMap<(StoreId, Partition), usize> = HashMap::new();
        for arg in constituents.iter().flat_map(|t| t.args()) {
            let id = arg.store.id();
            if temporaries.contains(&id) {
                continue;
            }
            match index.get(&(id, arg.partition.clone())) {
                Some(&i) => {
                    let merged = &mut args[i].privilege;
                    *merged = merged.then(arg.privilege);
                }
                None => {
                    index.insert((id, arg.partition.clone()), args.len());
                    args.push(FusedArg {
                        store: arg.store.clone(),
                        partition: arg.partition.clone(),
                        privilege: arg.privilege,
                    });
                }
            }
        }
        FusedTask {
            launch_domain,
            constituents,
            temporaries,
            args,
        }
    }

    /// The common launch domain.
    pub fn launch_domain(&self) -> Shape {
        self.launch_domain
    }

    /// The fused tasks, in program order.
    pub fn constituents(&self) -> &[IndexTask] {
        &self.constituents
    }

    /// Stores that live only inside each point task.
    pub fn temporaries(&self) -> &[StoreId] {
        &self.temporaries
    }

    /// True when `store` is one of the temporaries.
    pub fn is_temporary(&self, store: StoreId) -> bool {
        self.temporaries.contains(&store)
    }

    /// The fused signature (temporaries excluded).
    pub fn args(&self) -> &[FusedArg] {
        &self.args
    }

    /// A name for logs and mapping: the constituents' kind names joined by `+`.
    pub fn name(&self) -> String {
        self.constituents
            .iter()
            .map(|t| t.kind().name())
            .collect::<Vec<_>>()
            .join("+")
    }
}

impl fmt::Debug for FusedTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "FusedTask({} over {}, temporaries {:?})",
            self.name(),
            self.launch_domain,
            self.temporaries
        )
    }
}
