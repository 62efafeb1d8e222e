//! Which stores of a window the application still holds, read once per planning step.
//!
//! Whether a store is temporary depends on whether the application holds a handle to it, and
//! the application may drop handles from another thread while a window is being planned. The
//! memoization key, the temporaries and the cut must all see the same answer, or a decision
//! made for a dropped store could be remembered under the key of a held one and later
//! replayed against a store the application still reads. So every analysis of one window
//! takes this snapshot instead of reading the live reference counts.

use diffuse_ir::{IndexTask, StoreId};
use hashbrown::HashSet;

/// The stores of a window that the application held when the snapshot was taken.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeldStores {
    held: HashSet<StoreId>,
}

impl HeldStores {
    /// Reads the application reference counts of every store `window` references, once.
    pub fn of(window: &[IndexTask]) -> Self {
        let held = window
            .iter()
            .flat_map(|t| t.args())
            .filter(|a| a.store.app_handles() > 0)
            .map(|a| a.store.id())
            .collect();
        HeldStores { held }
    }

    /// True when the application held `store` at the snapshot.
    pub fn contains(&self, store: StoreId) -> bool {
        self.held.contains(&store)
    }
}
