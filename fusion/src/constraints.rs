//! The four fusion constraints of the Diffuse paper (Figure 7), checked by one forward pass.
//!
//! [`PrefixState`] summarises a candidate prefix: its launch domain and, per store, through
//! which partitions it was written and read and whether it was reduced. A task may join the
//! prefix when, against that summary,
//!
//! - **launch-domain equivalence**: its launch domain is the prefix's;
//! - **true dependence**: it reads or writes no store the prefix wrote, except through the
//!   very partition the prefix wrote it through;
//! - **anti dependence**: it writes no store the prefix read, except through the one
//!   partition the prefix read it through;
//! - **reduction**: it reads or writes no store the prefix reduced, and reduces no store the
//!   prefix read or wrote, or reduced with another operator (reductions with one operator
//!   commute; different operators do not).
//!
//! Aliasing is decided only by partition equality, an O(1) identity compare of interned
//! partitions: no sub-store is ever intersected, so the cost is independent of the number of
//! launch points.

use std::fmt;

use diffuse_ir::{IndexTask, Partition, Privilege, ReductionOp, Shape, StoreId};
use hashbrown::HashMap;

/// Why a task cannot join a prefix.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Violation {
    /// Its launch domain differs from the prefix's.
    LaunchDomain,
    /// It accesses, through another partition, a store the prefix wrote.
    TrueDependence(StoreId),
    /// It writes, through another partition, a store the prefix read.
    AntiDependence(StoreId),
    /// It accesses a store the prefix reduced, or reduces one the prefix accessed.
    Reduction(StoreId),
}

impl Violation {
    /// The store the violation is about (none for launch domains).
    pub fn store(self) -> Option<StoreId> {
        match self {
            Violation::LaunchDomain => None,
            Violation::TrueDependence(s)
            | Violation::AntiDependence(s)
            | Violation::Reduction(s) => Some(s),
        }
    }

    /// The same violation about another store (replaying a decision on an isomorphic window).
    pub fn with_store(self, store: StoreId) -> Self {
        match self {
            Violation::LaunchDomain => Violation::LaunchDomain,
            Violation::TrueDependence(_) => Violation::TrueDependence(store),
            Violation::AntiDependence(_) => Violation::AntiDependence(store),
            Violation::Reduction(_) => Violation::Reduction(store),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::LaunchDomain => write!(f, "launch domains differ"),
            Violation::TrueDependence(s) => write!(f, "true dependence on store {s}"),
            Violation::AntiDependence(s) => write!(f, "anti dependence on store {s}"),
            Violation::Reduction(s) => write!(f, "reduction constraint on store {s}"),
        }
    }
}

/// The partitions a prefix read one store through.
#[derive(Clone, Debug)]
enum Reads {
    None,
    /// All reads went through this one partition.
    One(Partition),
    /// Reads went through two or more partitions: no write can be fused.
    Many,
}

/// What a prefix did to one store.
#[derive(Clone, Debug)]
struct Effects {
    /// The partition it was written through (true dependence admits only one).
    written: Option<Partition>,
    reads: Reads,
    /// The operator it was reduced with (reductions with one operator commute).
    reduced: Option<ReductionOp>,
}

impl Effects {
    fn new() -> Self {
        Effects {
            written: None,
            reads: Reads::None,
            reduced: None,
        }
    }

    fn accessed(&self) -> bool {
        self.written.is_some() || !matches!(self.reads, Reads::None)
    }
}

/// The summary of a candidate prefix, grown one task at a time.
#[derive(Default, Debug)]
pub struct PrefixState {
    launch: Option<Shape>,
    stores: HashMap<StoreId, Effects>,
    len: usize,
}

impl PrefixState {
    /// An empty prefix.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of tasks in the prefix.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True before the first task.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Checks whether `task` may join the prefix, without changing it.
    pub fn admits(&self, task: &IndexTask) -> Result<(), Violation> {
        if self.launch.is_some_and(|l| l != task.launch_domain()) {
            return Err(Violation::LaunchDomain);
        }
        self.admits_accesses(task)
    }

    /// Checks whether scalar work ([`IndexTask::is_scalar`]) may join the prefix to run at
    /// every point of the prefix's launch: the constraints on stores only, not the launch
    /// domain.
    pub fn admits_scalar(&self, task: &IndexTask) -> Result<(), Violation> {
        self.admits_accesses(task)
    }

    /// The dependence and reduction constraints for `task`.
    fn admits_accesses(&self, task: &IndexTask) -> Result<(), Violation> {
        for arg in task.args() {
            let id = arg.store.id();
            let Some(prior) = self.stores.get(&id) else {
                continue;
            };
            let p = &arg.partition;
            let (reads, writes) = (arg.privilege.reads(), arg.privilege.writes());
            if let Privilege::Reduce(op) = arg.privilege {
                if prior.accessed() || prior.reduced.is_some_and(|r| r != op) {
                    return Err(Violation::Reduction(id));
                }
                continue;
            }
            if prior.reduced.is_some() {
                return Err(Violation::Reduction(id));
            }
            if prior.written.as_ref().is_some_and(|w| w != p) && (reads || writes) {
                return Err(Violation::TrueDependence(id));
            }
            if writes {
                let conflict = match &prior.reads {
                    Reads::None => false,
                    Reads::One(r) => r != p,
                    Reads::Many => true,
                };
                if conflict {
                    return Err(Violation::AntiDependence(id));
                }
            }
        }
        Ok(())
    }

    /// Adds `task` (which [`PrefixState::admits`] accepted) to the prefix.
    pub fn push(&mut self, task: &IndexTask) {
        self.launch = Some(task.launch_domain());
        self.push_accesses(task);
    }

    /// Adds scalar work (which [`PrefixState::admits_scalar`] accepted) to the prefix,
    /// leaving its launch domain to the other tasks.
    pub fn push_scalar(&mut self, task: &IndexTask) {
        self.push_accesses(task);
    }

    fn push_accesses(&mut self, task: &IndexTask) {
        self.len += 1;
        for arg in task.args() {
            let e = self
                .stores
                .entry(arg.store.id())
                .or_insert_with(Effects::new);
            match arg.privilege {
                Privilege::Reduce(op) => e.reduced = Some(op),
                privilege => {
                    if privilege.reads() {
                        e.reads = match &e.reads {
                            Reads::None => Reads::One(arg.partition.clone()),
                            Reads::One(r) if *r == arg.partition => Reads::One(r.clone()),
                            _ => Reads::Many,
                        };
                    }
                    if privilege.writes() {
                        e.written = Some(arg.partition.clone());
                    }
                }
            }
        }
    }
}
