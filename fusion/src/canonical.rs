//! The canonical, alpha-renamed form of a window (Diffuse paper §5.2), the memoization key.
//!
//! Everything the fusion decision depends on is encoded, and nothing else: per task its kind
//! and launch domain (and whether that is a single point, which lets a group go on in stages
//! and take scalar work that writes), and per argument its store, partition and privilege,
//! whether the partition covers the store over that launch (temporaries need a covering
//! write) and whether the application still holds the store. Stores, partitions and launch
//! domains are numbered by first occurrence (like De Bruijn indices), so two windows that
//! differ only in which fresh stores they use, as successive iterations of a solver loop do,
//! get the same key, while windows whose aliasing differs do not.

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

/// Numbers values by first occurrence: by a linear scan while there are few of them (a
/// window's stores, partitions and launch domains are usually a handful, compared in a
/// word or two), through a hash map once there are more.
struct Numbering<K> {
    seen: Vec<K>,
    index: Option<HashMap<K, u64>>,
}

/// Values a [`Numbering`] scans before it builds its hash map.
const SCANNED: usize = 16;

impl<K: std::hash::Hash + Eq + Clone> Numbering<K> {
    fn new() -> Self {
        Numbering {
            seen: Vec::new(),
            index: None,
        }
    }

    /// The number of `k`, and whether this is its first occurrence.
    fn number(&mut self, k: K) -> (u64, bool) {
        let next = self.seen.len() as u64;
        if let Some(index) = &mut self.index {
            let mut fresh = false;
            let id = *index.entry(k.clone()).or_insert_with(|| {
                fresh = true;
                next
            });
            if fresh {
                self.seen.push(k);
            }
            return (id, fresh);
        }
        if let Some(i) = self.seen.iter().position(|seen| *seen == k) {
            return (i as u64, false);
        }
        self.seen.push(k);
        if self.seen.len() > SCANNED {
            let index = self.seen.iter().cloned().zip(0u64..).collect();
            self.index = Some(index);
        }
        (next, true)
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
        key.push(domains.number(launch).0 | u64::from(launch.volume() == 1) << 63);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_is_by_first_occurrence_before_and_after_it_builds_its_map() {
        let mut numbering = Numbering::<u32>::new();
        // Values 100, 101, ... first seen in order, each seen again right away and then all
        // again at the end, past the point where the scan gives way to the map.
        let values: Vec<u32> = (100..100 + 3 * SCANNED as u32).collect();
        for (i, &v) in values.iter().enumerate() {
            assert_eq!(numbering.number(v), (i as u64, true));
            assert_eq!(numbering.number(v), (i as u64, false));
        }
        for (i, &v) in values.iter().enumerate().rev() {
            assert_eq!(numbering.number(v), (i as u64, false));
        }
        assert_eq!(numbering.number(7), (values.len() as u64, true));
    }
}
