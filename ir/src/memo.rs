//! Remembering a pure function of small descriptions: what libraries and the IR derive from
//! partitions, shapes and views alone, on every task they build, is computed once per key.
//!
//! A [`Memo`] lives in a `thread_local!` (no lock on the hot path). Keys must hold everything
//! the remembered value depends on; interned values (partitions, projections) are the same
//! on every thread, so an entry is valid wherever it was made. Failures are never
//! remembered. The table is bounded: past its capacity it starts over, so a program that
//! keeps making new shapes does not grow it without end.

use std::cell::RefCell;
use std::hash::Hash;

use hashbrown::HashMap;

/// A bounded table of values computed from their keys.
pub struct Memo<K, V> {
    table: RefCell<HashMap<K, V>>,
    capacity: usize,
}

impl<K: Hash + Eq, V: Clone> Memo<K, V> {
    /// An empty memo keeping at most `capacity` entries (at least one).
    pub fn new(capacity: usize) -> Self {
        Memo {
            table: RefCell::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    /// The value remembered for `key`, or `compute()`'s, remembered when it succeeds.
    /// `compute` runs with the table released, so it may use other memos (or this one).
    pub fn get_or_try<E>(&self, key: K, compute: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        if let Some(known) = self.table.borrow().get(&key) {
            return Ok(known.clone());
        }
        let value = compute()?;
        let mut table = self.table.borrow_mut();
        if table.len() >= self.capacity {
            table.clear();
        }
        table.insert(key, value.clone());
        Ok(value)
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.table.borrow().len()
    }

    /// True when it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_computed_once_failures_never_kept_and_the_table_is_bounded() {
        let memo = Memo::<u32, u32>::new(3);
        let mut runs = 0;
        let mut square = |k: u32| {
            memo.get_or_try(k, || {
                runs += 1;
                Ok::<_, ()>(k * k)
            })
        };
        assert_eq!(square(4), Ok(16));
        assert_eq!(square(4), Ok(16));
        assert_eq!(runs, 1);
        assert_eq!(memo.get_or_try(5, || Err("no")), Err("no"));
        assert_eq!(memo.len(), 1);
        assert_eq!(memo.get_or_try(5, || Ok::<_, ()>(25)), Ok(25));
        for k in [6, 7, 8] {
            assert_eq!(memo.get_or_try(k, || Ok::<_, ()>(k)), Ok(k));
        }
        assert!(memo.len() <= 3);
    }

    #[test]
    fn compute_may_use_the_same_memo() {
        let memo = Memo::<u32, u32>::new(8);
        let outer = memo.get_or_try(2, || memo.get_or_try(1, || Ok::<_, ()>(10)).map(|v| v + 1));
        assert_eq!(outer, Ok(11));
        assert_eq!(memo.len(), 2);
    }
}
