//! Hash-consing of small immutable descriptions, so that equality is a pointer compare.
//!
//! Projections and partitions are interned: building the same description twice yields the
//! same shared allocation, and two handles are equal exactly when they point at it. This is
//! what makes the fusion analysis' alias check O(1). Interned values live for the rest of the
//! process; programs build a small, bounded set of them (a few per array view and launch shape).

use std::hash::Hash;
use std::sync::{Arc, Mutex};

// hashbrown's default hasher: descriptions are interned on every task a library builds, and
// SipHash's resistance to chosen keys buys nothing for them.
use hashbrown::HashMap;

/// A table from descriptions to their unique shared copy.
pub(crate) struct Interner<T> {
    table: Mutex<HashMap<Arc<T>, ()>>,
}

impl<T: Eq + Hash> Interner<T> {
    pub(crate) fn new() -> Self {
        Interner {
            table: Mutex::new(HashMap::new()),
        }
    }

    /// Returns the unique shared copy of `value`, inserting it on first sight.
    pub(crate) fn intern(&self, value: T) -> Arc<T> {
        // A poisoned lock only means another thread panicked mid-insert; the map itself is
        // still a valid map, so keep using it.
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((existing, ())) = table.get_key_value(&value) {
            return Arc::clone(existing);
        }
        let shared = Arc::new(value);
        table.insert(Arc::clone(&shared), ());
        shared
    }
}

/// For an interned type `$name(Arc<$desc>)`: `interner()`, the process-wide table its values
/// are interned in, and `PartialEq`, `Eq` and `Hash` by identity (interning makes equal
/// values share one allocation, so comparing the pointers compares the values).
macro_rules! interned {
    ($name:ident, $desc:ty) => {
        fn interner() -> &'static $crate::intern::Interner<$desc> {
            static TABLE: std::sync::OnceLock<$crate::intern::Interner<$desc>> =
                std::sync::OnceLock::new();
            TABLE.get_or_init($crate::intern::Interner::new)
        }

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                std::sync::Arc::ptr_eq(&self.0, &other.0)
            }
        }

        impl Eq for $name {}

        impl std::hash::Hash for $name {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                std::hash::Hash::hash(&std::sync::Arc::as_ptr(&self.0), state);
            }
        }
    };
}
pub(crate) use interned;
