//! The window's dependence graph: which tasks must stay after which.
//!
//! Two tasks of a window depend on each other when they access one store and at least one
//! of them changes it (writes it or reduces into it): true, anti and output dependences,
//! and reductions (two reductions into one store keep their order, so floating-point sums
//! fold as the program issued them). Aliasing is decided as in the fusion constraints, by
//! store identity alone: no sub-store is intersected, so building the graph costs one pass
//! over the arguments, whatever the number of launch points.
//!
//! Only the edges from each store's last changing task, and from the readers since, are
//! kept: every other dependence follows from them transitively.

use diffuse_ir::{IndexTask, StoreId};
use hashbrown::HashMap;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::Direction;

/// What the window did to one store so far, while the graph is built.
#[derive(Default)]
struct Accesses {
    /// The last task that changed it.
    changed_by: Option<usize>,
    /// The tasks that read it since.
    readers: Vec<usize>,
}

/// The dependence graph of a window: node `i` is task `i`, an edge `i -> j` says that task
/// `j` must run after task `i`.
pub struct Dependences {
    graph: DiGraph<(), ()>,
}

impl Dependences {
    /// The graph of `window`.
    pub fn of(window: &[IndexTask]) -> Self {
        let mut graph = DiGraph::with_capacity(window.len(), window.len() * 2);
        for _ in window {
            graph.add_node(());
        }
        let mut stores: HashMap<StoreId, Accesses> = HashMap::new();
        for (j, task) in window.iter().enumerate() {
            let mut before: Vec<usize> = Vec::new();
            for arg in task.args() {
                let seen = stores.entry(arg.store.id()).or_default();
                before.extend(seen.changed_by);
                if arg.privilege.mutates() {
                    before.extend(seen.readers.iter().copied().filter(|&r| r != j));
                }
            }
            before.sort_unstable();
            before.dedup();
            for i in before.into_iter().filter(|&i| i != j) {
                graph.add_edge(NodeIndex::new(i), NodeIndex::new(j), ());
            }
            // Record this task's accesses only now: its own arguments do not depend on each
            // other.
            for arg in task.args() {
                let seen = stores.entry(arg.store.id()).or_default();
                if arg.privilege.mutates() {
                    seen.changed_by = Some(j);
                    seen.readers.clear();
                } else if seen.changed_by != Some(j) && seen.readers.last() != Some(&j) {
                    seen.readers.push(j);
                }
            }
        }
        Dependences { graph }
    }

    /// The tasks task `j` directly depends on (all of them earlier in the window).
    pub fn before(&self, j: usize) -> impl Iterator<Item = usize> + '_ {
        self.graph
            .neighbors_directed(NodeIndex::new(j), Direction::Incoming)
            .map(NodeIndex::index)
    }
}
