//! `diffuse-fusion`: analyses over the window of buffered index tasks (Diffuse paper §4–5):
//! the four fusion constraints, the longest fusible prefix, temporary elimination and
//! memoization. Pure: IR in, decisions out; it never executes anything and
//! depends only on `diffuse-ir`.
//!
//! The runtime hands a window to a [`Planner`], which splits it greedily into fusible
//! [`Group`]s (each the longest fusible prefix of what remains) with their temporaries, and
//! remembers the decision under the window's canonical form, so that the next isomorphic
//! window (the next iteration of a solver loop) replays it; [`Plan::shape`] names the memo
//! entry, under which the runtime keeps the rest of its decisions about the window (launch
//! templates, which also hold each group's fused signature).

#![warn(missing_docs)]

mod canonical;
mod constraints;
mod held;
mod planner;
mod temporaries;

pub use canonical::{canonicalize, Canonical, CanonicalKey};
pub use constraints::{longest_fusible_prefix, PrefixState, Violation};
pub use held::HeldStores;
pub use planner::{analyse, Group, Plan, Planner, PlannerStats};
pub use temporaries::{cheapest_cut, temporaries};
