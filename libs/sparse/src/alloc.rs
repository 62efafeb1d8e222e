//! Vectors as large as a matrix, allocated fallibly: a matrix too large for the memory left
//! is an error naming what did not fit, never an abort of the process (the allocator's
//! failure handler aborts, and a Python user's matrix must not take the interpreter down).

use crate::error::SparseError;

/// An empty vector with room for `len` elements, or [`SparseError::OutOfMemory`] naming
/// `what` when the allocator refuses.
pub(crate) fn with_capacity<T>(len: usize, what: &str) -> Result<Vec<T>, SparseError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| SparseError::OutOfMemory {
            what: what.to_string(),
            bytes: len.saturating_mul(std::mem::size_of::<T>()),
        })?;
    Ok(v)
}

/// `len` copies of `value`, allocated as [`with_capacity`] does.
pub(crate) fn filled<T: Clone>(len: usize, value: T, what: &str) -> Result<Vec<T>, SparseError> {
    let mut v = with_capacity(len, what)?;
    v.resize(len, value);
    Ok(v)
}

/// The items of an exactly sized iterator, allocated as [`with_capacity`] does.
pub(crate) fn collect<T>(
    items: impl ExactSizeIterator<Item = T>,
    what: &str,
) -> Result<Vec<T>, SparseError> {
    let mut v = with_capacity(items.len(), what)?;
    v.extend(items);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_allocation_is_an_error_naming_it() {
        let e = with_capacity::<u64>(usize::MAX / 4, "the test's vector").unwrap_err();
        assert!(matches!(e, SparseError::OutOfMemory { .. }));
        assert!(e.to_string().contains("the test's vector"), "{e}");
        assert_eq!(filled(3, 7u8, "three").unwrap(), vec![7, 7, 7]);
        assert_eq!(collect([1, 2].into_iter(), "two").unwrap(), vec![1, 2]);
    }
}
