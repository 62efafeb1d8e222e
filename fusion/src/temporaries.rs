//! Temporary stores (Diffuse paper §5.1): stores a fused prefix produces and consumes
//! entirely, which become point-local buffers instead of distributed allocations.
//!
//! A store is temporary in the fusion of `tasks[..f]` of a window `tasks` when
//!
//! 1. every read of it inside the prefix is preceded, inside the prefix, by a write through
//!    the same partition that covers the whole store;
//! 2. no task after the prefix in the window references it; and
//! 3. the application holds no handle to it (the IR's split reference count).
//!
//! Stores the prefix reduces are never temporary: a reduction folds into existing contents.

use std::borrow::Borrow;

use diffuse_ir::{IndexTask, Partition, Privilege, StoreId};
use hashbrown::{HashMap, HashSet};

use crate::held::HeldStores;

/// Per store: the covering write seen so far, or why it cannot be temporary. Every access
/// of a temporary goes through one partition (its point-local buffer is that partition's
/// sub-store); within a stage the constraints see to it, across the stages of a one-point
/// group this does.
enum Candidate {
    /// Written through this partition, covering the store, before any read.
    Covered(Partition),
    /// Accessed so far only by writes through this partition that did not cover it (a read
    /// now disqualifies it).
    Uncovered(Partition),
    /// Read before a covering write, reduced, or accessed through a second partition.
    Rejected,
}

/// The temporaries of fusing `tasks[..prefix]`, in order of first appearance, given which
/// stores the application holds (a snapshot taken once for the window).
pub fn temporaries<T: Borrow<IndexTask>>(
    tasks: &[T],
    prefix: usize,
    held: &HeldStores,
) -> Vec<StoreId> {
    let (inside, after) = tasks.split_at(prefix.min(tasks.len()));
    let mut order = Vec::new();
    let mut candidates: HashMap<StoreId, Candidate> = HashMap::new();
    for task in inside.iter().map(Borrow::borrow) {
        let launch = task.launch_domain();
        for arg in task.args() {
            let id = arg.store.id();
            let state = candidates.entry(id).or_insert_with(|| {
                order.push(id);
                Candidate::Uncovered(arg.partition.clone())
            });
            let reads_here = arg.privilege.reads();
            *state = match (&*state, arg.privilege) {
                (_, Privilege::Reduce(_)) | (Candidate::Rejected, _) => Candidate::Rejected,
                (Candidate::Covered(p) | Candidate::Uncovered(p), _) if *p != arg.partition => {
                    Candidate::Rejected
                }
                (Candidate::Covered(p), _) => Candidate::Covered(p.clone()),
                (Candidate::Uncovered(_), _) if reads_here => Candidate::Rejected,
                (Candidate::Uncovered(p), Privilege::Write)
                    if p.covers(arg.store.shape(), launch) =>
                {
                    Candidate::Covered(p.clone())
                }
                (Candidate::Uncovered(p), _) => Candidate::Uncovered(p.clone()),
            };
        }
    }
    let used_later: HashSet<StoreId> = after
        .iter()
        .map(Borrow::borrow)
        .flat_map(|t| t.args().iter().map(|a| a.store.id()))
        .collect();
    order
        .into_iter()
        .filter(|id| {
            !matches!(candidates.get(id), Some(Candidate::Rejected) | None)
                && !used_later.contains(id)
                && !held.contains(*id)
        })
        .collect()
}

/// Where to cut a fusible window that must run before its group ends (the window is full and
/// cannot grow): the length `c` in `min_len..=window.len()` at which the fewest stores
/// produced inside `window[..c]` would have to be materialized, the latest such `c` on ties.
/// A store must be materialized when `window[c..]` still needs it or the application still
/// holds it (it may drop the handle before the rest of the window runs, and a later cut would
/// then keep the store temporary).
pub fn cheapest_cut(window: &[IndexTask], min_len: usize, held: &HeldStores) -> usize {
    let n = window.len();
    let min_len = min_len.clamp(1, n.max(1));
    // First task writing each store, and last task referencing it.
    let mut first_write: HashMap<StoreId, usize> = HashMap::new();
    let mut last_use: HashMap<StoreId, usize> = HashMap::new();
    for (i, task) in window.iter().enumerate() {
        for arg in task.args() {
            let id = arg.store.id();
            if arg.privilege.mutates() {
                first_write.entry(id).or_insert(i);
            }
            last_use.insert(id, i);
        }
    }
    // crossing(c) = #{ s : first_write(s) < c <= last_use(s) }, by a sweep over c.
    for task in window {
        for arg in task.args() {
            if held.contains(arg.store.id()) {
                last_use.insert(arg.store.id(), n);
            }
        }
    }
    let mut delta = vec![0i64; n + 2];
    for (id, &w) in &first_write {
        let last = last_use.get(id).copied().unwrap_or(w);
        if last > w {
            delta[w + 1] += 1;
            delta[last + 1] -= 1;
        }
    }
    let (mut best, mut best_cost, mut crossing) = (n, i64::MAX, 0i64);
    for (c, d) in delta.iter().enumerate().take(n + 1) {
        crossing += d;
        if c >= min_len && crossing <= best_cost {
            best = c;
            best_cost = crossing;
        }
    }
    best
}
