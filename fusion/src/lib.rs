//! `diffuse-fusion`: analyses over the window of buffered index tasks (Diffuse paper §4–5):
//! the four fusion constraints, the window's dependence graph, fusible groups chosen over it,
//! temporary elimination and memoization. Pure: IR in, decisions out; it never executes anything and
//! depends only on `diffuse-ir`.
//!
//! The runtime hands a window to a [`Planner`], which splits it greedily into fusible
//! [`Group`]s with their temporaries (each group starts at the earliest task not yet placed
//! and takes every later task the constraints admit that depends on none it passed over, so
//! the [`Plan`] carries the execution order the groups cover, one that keeps every
//! dependence of the window), and
//! remembers the decision under the window's canonical form, so that the next isomorphic
//! window (the next iteration of a solver loop) replays it; [`Plan::shape`] names the memo
//! entry, under which the runtime keeps the rest of its decisions about the window (launch
//! templates, which also hold each group's fused signature).

#![warn(missing_docs)]

mod canonical;
mod constraints;
mod dependences;
mod held;
mod planner;
mod temporaries;

pub use canonical::{canonicalize, Canonical, CanonicalKey};
pub use constraints::{PrefixState, Violation};
pub use dependences::Dependences;
pub use held::HeldStores;
pub use planner::{
    analyse, analyse_with, group_launch, Group, Plan, PlanOptions, Planner, PlannerStats,
};
pub use temporaries::{cheapest_cut, temporaries};
