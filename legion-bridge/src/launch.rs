//! Launches in flight: what a point task and the mapper need to know about the launch plan
//! they serve, found through the key carried in the launch's global task arguments.
//!
//! An entry lives from the index launch until its last point task finished.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use diffuse_backend::LaunchPlan;
use diffuse_ir::{DType, Partition, Privilege, ReductionOp, Scalar};
use hashbrown::HashMap;

use crate::shared::Shared;

/// One region requirement of a launch: a store slot accessed through one partition.
#[derive(Clone, Debug)]
pub(crate) struct Requirement {
    /// The store slot of the plan.
    pub(crate) slot: usize,
    /// The partition it is accessed through.
    pub(crate) partition: Partition,
    /// The union of the constituents' privileges on it.
    pub(crate) privilege: Privilege,
    /// The store's element type.
    pub(crate) dtype: DType,
    /// The point zeroes the whole region before it runs (then the privilege is `Write`):
    /// the store is new and this launch, of one point, is its first user, so no Legion fill
    /// leaves the region's contents lazy (which would keep the launch out of traces).
    pub(crate) zeroed: bool,
    /// The requirement is on the partials region of the slot's reduction (one row per point
    /// of the reducing launch, see [`crate::partials`]), not on the store's region.
    pub(crate) partials: bool,
}

/// What the point tasks of a launch do.
pub(crate) enum Role {
    /// Run the plan's points.
    Points,
    /// Fold the partials the plan's points wrote into their stores, on one CPU point.
    Fold(Vec<Fold>),
}

/// One reduction of a plan that a fold launch folds ([`crate::partials`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fold {
    /// The reducing template argument.
    pub(crate) arg: usize,
    /// Its store slot.
    pub(crate) slot: usize,
    /// The fold launch's requirement on the partials (read).
    pub(crate) partials: usize,
    /// The fold launch's requirement on the store (read-write, or zeroed first).
    pub(crate) store: usize,
    /// The reduction.
    pub(crate) op: ReductionOp,
}

/// A launch plan while Legion runs its points.
pub(crate) struct LaunchEntry {
    /// The plan.
    pub(crate) plan: LaunchPlan,
    /// What its point tasks do with it.
    pub(crate) role: Role,
    /// Its region requirements, in launcher order.
    pub(crate) requirements: Vec<Requirement>,
    /// For every template argument, its requirement (`None` for temporaries).
    pub(crate) arg_requirement: Vec<Option<usize>>,
    /// Every constituent's scalars in order (what the compiled kernel takes).
    pub(crate) scalars: Vec<Scalar>,
    /// The backend that launched it.
    pub(crate) shared: Arc<Shared>,
    /// Point tasks not yet finished; `usize::MAX` for an entry retired explicitly
    /// ([`LaunchEntry::retire`]).
    remaining: AtomicUsize,
}

fn table() -> &'static Mutex<HashMap<u64, Arc<LaunchEntry>>> {
    static TABLE: OnceLock<Mutex<HashMap<u64, Arc<LaunchEntry>>>> = OnceLock::new();
    TABLE.get_or_init(|| Mutex::new(HashMap::new()))
}

fn lock() -> std::sync::MutexGuard<'static, HashMap<u64, Arc<LaunchEntry>>> {
    table().lock().unwrap_or_else(|e| e.into_inner())
}

impl LaunchEntry {
    /// Registers a launch under a fresh key, returned. With `Some(points)`, the entry goes
    /// when that many point tasks finished; with `None` (a control-replicated run, where
    /// this process runs only some of the points), when [`LaunchEntry::retire`] says.
    /// Keys count launches, so every process of a replicated run gives a launch the same key.
    pub(crate) fn register(
        plan: LaunchPlan,
        role: Role,
        requirements: Vec<Requirement>,
        arg_requirement: Vec<Option<usize>>,
        shared: Arc<Shared>,
        points: Option<usize>,
    ) -> u64 {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let key = NEXT.fetch_add(1, Ordering::Relaxed);
        // Whether or not the template has its kernel yet: a background compile may finish
        // before the points run, and they then run it.
        let scalars = plan.scalars();
        let entry = LaunchEntry {
            plan,
            role,
            requirements,
            arg_requirement,
            scalars,
            shared,
            remaining: AtomicUsize::new(points.unwrap_or(usize::MAX)),
        };
        lock().insert(key, Arc::new(entry));
        key
    }

    /// Whether template argument `arg` writes its contributions to rows of partials (see
    /// [`crate::partials`]) instead of reducing through its requirement.
    pub(crate) fn writes_partials(&self, arg: usize) -> bool {
        self.arg_requirement
            .get(arg)
            .copied()
            .flatten()
            .is_some_and(|r| self.requirements[r].partials)
    }

    /// The launch registered under the key in `args` (a launch's global task arguments).
    pub(crate) fn find(args: &[u8]) -> Option<Arc<LaunchEntry>> {
        let key = u64::from_ne_bytes(args.get(..8)?.try_into().ok()?);
        lock().get(&key).cloned()
    }

    /// Forgets the launches under `keys`, all finished.
    pub(crate) fn retire(keys: impl Iterator<Item = u64>) {
        let mut table = lock();
        for key in keys {
            table.remove(&key);
        }
    }

    /// Notes that one point task of the launch under the key in `args` finished; the entry
    /// goes when the last one has.
    pub(crate) fn point_finished(&self, args: &[u8]) {
        if self.remaining.load(Ordering::Acquire) == usize::MAX {
            return;
        }
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            if let Some(key) = args.get(..8).and_then(|k| k.try_into().ok()) {
                lock().remove(&u64::from_ne_bytes(key));
            }
        }
    }
}
