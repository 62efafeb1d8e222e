//! Slicing with NumPy semantics: `a.slice(&s![1..-1, ..])` is `a[1:-1, :]`.
//!
//! Each dimension takes a range with step 1; negative bounds count from the end. A slice is a
//! view: it aliases the array's store through an offset and never copies. Unlike NumPy, a
//! bound outside the array is an error rather than silently clipped (a stencil with a wrong
//! halo should fail loudly). Dimensions not named keep their full extent.

use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

use diffuse_ir::Tuple;

use crate::array::Array;
use crate::error::{ArrayError, ArrayResult};

/// One dimension of a slice: `start..stop`, either bound optional and possibly negative.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SliceArg {
    /// First index (default 0); negative counts from the end.
    pub start: Option<i64>,
    /// One past the last index (default the extent); negative counts from the end.
    pub stop: Option<i64>,
}

/// Builds the slice specification `[SliceArg; N]` for [`Array::slice`] from ranges:
/// `s![1..-1, 2.., ..]`. (Clippy's `reversed_empty_ranges` is silenced inside: `1..-1` is a
/// NumPy slice here, not an empty Rust range.)
#[macro_export]
macro_rules! s {
    ($($range:expr),* $(,)?) => {
        [$({
            #[allow(clippy::reversed_empty_ranges)]
            let range = $range;
            $crate::SliceArg::from(range)
        }),*]
    };
}

macro_rules! slice_arg_from {
    ($($t:ty),*) => {$(
        impl From<Range<$t>> for SliceArg {
            fn from(r: Range<$t>) -> Self {
                SliceArg { start: Some(i64::from(r.start)), stop: Some(i64::from(r.end)) }
            }
        }
        impl From<RangeFrom<$t>> for SliceArg {
            fn from(r: RangeFrom<$t>) -> Self {
                SliceArg { start: Some(i64::from(r.start)), stop: None }
            }
        }
        impl From<RangeTo<$t>> for SliceArg {
            fn from(r: RangeTo<$t>) -> Self {
                SliceArg { start: None, stop: Some(i64::from(r.end)) }
            }
        }
        impl From<RangeInclusive<$t>> for SliceArg {
            fn from(r: RangeInclusive<$t>) -> Self {
                let end = i64::from(*r.end());
                // `a..=-1` runs to the end, as `a..` does.
                SliceArg { start: Some(i64::from(*r.start())), stop: (end != -1).then_some(end + 1) }
            }
        }
        impl From<RangeToInclusive<$t>> for SliceArg {
            fn from(r: RangeToInclusive<$t>) -> Self {
                let end = i64::from(r.end);
                SliceArg { start: None, stop: (end != -1).then_some(end + 1) }
            }
        }
    )*};
}
slice_arg_from!(i32, i64);

impl From<RangeFull> for SliceArg {
    fn from(_: RangeFull) -> Self {
        SliceArg {
            start: None,
            stop: None,
        }
    }
}

impl Array {
    /// A view of part of the array (see [`s!`](crate::s)); it aliases this array's elements.
    pub fn slice(&self, spec: &[SliceArg]) -> ArrayResult {
        let shape = self.shape();
        let bad = |what: String| ArrayError::BadSlice {
            what,
            shape: Box::new(shape),
        };
        if spec.len() > shape.dims() {
            return Err(bad(format!(
                "{} indices given for a {}-d array",
                spec.len(),
                shape.dims()
            )));
        }
        let mut offset = vec![0i64; shape.dims()];
        let mut extent = shape.as_slice().to_vec();
        for (d, arg) in spec.iter().enumerate() {
            let n = shape[d];
            let resolve = |bound: Option<i64>, default: i64, what: &str| {
                let i = bound.unwrap_or(default);
                let abs = if i < 0 { i.saturating_add(n) } else { i };
                if (0..=n).contains(&abs) {
                    Ok(abs)
                } else {
                    Err(bad(format!(
                        "{what} index {i} is out of range for dimension {d} of extent {n}"
                    )))
                }
            };
            let start = resolve(arg.start, 0, "start")?;
            let stop = resolve(arg.stop, n, "stop")?;
            offset[d] = start;
            // A stop before the start selects nothing, as in NumPy.
            extent[d] = (stop - start).max(0);
        }
        let view = self
            .view()
            .subview(Tuple::new(&offset)?, Tuple::shape(&extent)?)?;
        Ok(Array::from_view(self.context(), view))
    }
}
