//! Stores whose values a failure lost, and how that loss follows the data.
//!
//! When a task fails, every store it would have changed has no trustworthy value, nor has any
//! store computed from one of those. The runtime records such stores here ([`Poisoned`]) with
//! the failure, skips tasks that read them (poisoning what those would have changed), and
//! reports the failure when the application reads one. A task that overwrites a whole
//! poisoned store gives it a value again. Stores that depend on no failed task are untouched:
//! they get exactly the values of the sequential program.

use hashbrown::{HashMap, HashSet};

use diffuse_ir::{IndexTask, IrError, StoreId};

/// The failure a poisoned store carries: which task failed and why.
#[derive(Clone, Debug)]
pub(crate) struct Failure {
    /// The task that failed (a fused task's joined name when the failing constituent is
    /// unknown).
    pub(crate) task: String,
    /// Its error.
    pub(crate) cause: IrError,
}

impl Failure {
    /// The error reading `store` reports.
    pub(crate) fn error_for(&self, store: StoreId) -> IrError {
        IrError::Poisoned {
            store,
            task: self.task.clone(),
            cause: Box::new(self.cause.clone()),
        }
    }
}

/// What one task reads and changes, by store: enough to follow poison through a launch that
/// has already been handed to a backend.
#[derive(Clone, Debug, Default)]
pub(crate) struct Accesses {
    /// Stores whose values the task observes (`Read`, `ReadWrite`, `Reduce`).
    pub(crate) reads: Vec<StoreId>,
    /// Stores the task changes, each with whether it overwrites the whole store (a `Write`
    /// through a partition covering it), which gives a poisoned store a value again.
    pub(crate) changes: Vec<(StoreId, bool)>,
}

impl Accesses {
    /// The accesses of `task`.
    pub(crate) fn of(task: &IndexTask) -> Self {
        let mut accesses = Accesses::default();
        accesses.add(task);
        accesses
    }

    /// Adds the accesses of `task` (a later constituent of the same launch).
    pub(crate) fn add(&mut self, task: &IndexTask) {
        let launch = task.launch_domain();
        for arg in task.args() {
            let id = arg.store.id();
            if arg.privilege.reads() || arg.privilege.is_reduction() {
                self.reads.push(id);
            }
            if arg.privilege.mutates() {
                let overwrites = !arg.privilege.reads()
                    && !arg.privilege.is_reduction()
                    && arg.partition.covers(arg.store.shape(), launch);
                self.changes.push((id, overwrites));
            }
        }
    }
}

/// The poisoned stores of one runtime.
#[derive(Clone, Default)]
pub(crate) struct Poisoned {
    stores: HashMap<StoreId, Failure>,
}

impl Poisoned {
    /// True when no store is poisoned (the common case: nothing to check).
    pub(crate) fn is_empty(&self) -> bool {
        self.stores.is_empty()
    }

    /// The failure `store` carries, if any.
    pub(crate) fn get(&self, store: StoreId) -> Option<&Failure> {
        self.stores.get(&store)
    }

    /// The failure of the first poisoned store `accesses` reads, if any.
    pub(crate) fn read_by(&self, accesses: &Accesses) -> Option<Failure> {
        if self.stores.is_empty() {
            return None;
        }
        accesses
            .reads
            .iter()
            .find_map(|s| self.stores.get(s))
            .cloned()
    }

    /// Marks every store `accesses` changes as lost to `failure`.
    pub(crate) fn poison(&mut self, accesses: &Accesses, failure: &Failure) {
        for &(store, _) in &accesses.changes {
            self.stores.insert(store, failure.clone());
        }
    }

    /// Records that a task with `accesses` ran: the stores it overwrites whole have values.
    pub(crate) fn ran(&mut self, accesses: &Accesses) {
        if self.stores.is_empty() {
            return;
        }
        for &(store, overwrites) in &accesses.changes {
            if overwrites {
                self.stores.remove(&store);
            }
        }
    }

    /// Records a host write of all of `store`: it has a value again.
    pub(crate) fn overwritten(&mut self, store: StoreId) {
        self.stores.remove(&store);
    }
}

/// True when running `tasks` again after they partly ran could compute something else: some
/// task observes a store that it or a later task changes, so the first run may have changed
/// what the second would read. Tasks without such a store read only values the first run
/// left alone or values they recompute identically, so they can run again, one by one.
pub(crate) fn rerun_unsafe(tasks: &[IndexTask]) -> bool {
    let mut observed: HashSet<StoreId> = HashSet::new();
    for task in tasks {
        let accesses = Accesses::of(task);
        observed.extend(accesses.reads.iter().copied());
        if accesses.changes.iter().any(|(s, _)| observed.contains(s)) {
            return true;
        }
    }
    false
}
