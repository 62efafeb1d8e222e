//! The canonical, alpha-renamed form of a window (Diffuse paper §5.2), the memoization key.
//!
//! Everything the fusion decision depends on is encoded, and nothing else: per task its kind
//! and launch domain, and per argument its store, partition and privilege, whether the
//! partition covers the store over that launch (temporaries need a covering write) and
//! whether the application still holds the store. Stores, partitions and launch domains are
//! numbered by first occurrence (like De Bruijn indices), so two windows that differ only in
//! which fresh stores they use, as successive iterations of a solver loop do, get the same
//! key, while windows whose aliasing differs do not.

use diffuse_ir::{IndexTask, Partition, Privilege, ReductionOp, Shape, StoreId};
use hashbrown::HashMap;

use crate::held::HeldStores;

/// A window's canonical form.
pub type CanonicalKey = Vec<u64>;

/// The canonical form of a window, and its stores in canonical order (store `i` of the key
/// is `stores[i]`).
pub struct Canonical {
    /// The key.
    pub key: CanonicalKey,
    /// The window's distinct stores, numbered by first occurrence.
    pub stores: Vec<StoreId>,
}

/// Numbers values by first occurrence.
struct Numbering<K> {
    ids: HashMap<K, u64>,
}

impl<K: std::hash::Hash + Eq> Numbering<K> {
    fn new() -> Self {
        Numbering {
            ids: HashMap::new(),
        }
    }

    /// The number of `k`, and whether this is its first occurrence.
    fn number(&mut self, k: K) -> (u64, bool) {
        let next = self.ids.len() as u64;
        let mut fresh = false;
        let id = *self.ids.entry(k).or_insert_with(|| {
            fresh = true;
            next
        });
        (id, fresh)
    }
}

fn privilege_code(p: Privilege) -> u64 {
    match p {
        Privilege::Read => 0,
        Privilege::Write => 1,
        Privilege::ReadWrite => 2,
        Privilege::Reduce(ReductionOp::Sum) => 3,
        Privilege::Reduce(ReductionOp::Prod) => 4,
        Privilege::Reduce(ReductionOp::Min) => 5,
        Privilege::Reduce(ReductionOp::Max) => 6,
    }
}

/// Computes the canonical form of `window`, with the application's holds as in `held`.
pub fn canonicalize(window: &[IndexTask], held: &HeldStores) -> Canonical {
    let mut stores = Numbering::<StoreId>::new();
    let mut partitions = Numbering::<Partition>::new();
    let mut domains = Numbering::<Shape>::new();
    let mut order = Vec::new();
    let mut key = Vec::with_capacity(window.len() * 12);
    key.push(window.len() as u64);
    for task in window {
        let launch = task.launch_domain();
        key.push(u64::from(task.kind().id()));
        key.push(domains.number(launch).0);
        key.push(task.args().len() as u64);
        for arg in task.args() {
            let (store, fresh) = stores.number(arg.store.id());
            if fresh {
                order.push(arg.store.id());
            }
            let covers = arg.partition.covers(arg.store.shape(), launch);
            let live = held.contains(arg.store.id());
            key.push(store);
            key.push(partitions.number(arg.partition.clone()).0);
            key.push(privilege_code(arg.privilege) | u64::from(covers) << 8 | u64::from(live) << 9);
        }
    }
    Canonical { key, stores: order }
}
