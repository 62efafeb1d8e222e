//! Joining and rearranging arrays (NumPy's `concatenate`, `roll`, `tile`) by writing boxes:
//! the result is a fresh array, and each piece is one assignment task from (a box of) an
//! input into a box of the result, so the pieces fuse with the tasks around them and nothing
//! is gathered or copied through the host.

use crate::array::Array;
use crate::error::{ArrayError, ArrayResult};
use crate::slice::SliceArg;

/// The slice of dimension `axis` from `start` to `stop` (every other dimension whole), in
/// an array of `dims` dimensions.
fn along(dims: usize, axis: usize, start: i64, stop: i64) -> Vec<SliceArg> {
    (0..dims)
        .map(|d| {
            if d == axis {
                SliceArg {
                    start: Some(start),
                    stop: Some(stop),
                }
            } else {
                SliceArg {
                    start: None,
                    stop: None,
                }
            }
        })
        .collect()
}

fn bad(op: &'static str, reason: String) -> ArrayError {
    ArrayError::BadArgument { op, reason }
}

/// The arrays joined along the existing dimension `axis` (NumPy's `concatenate`): every
/// array has the same dtype, the same number of dimensions and the same extents except
/// along `axis`.
pub fn concatenate(arrays: &[&Array], axis: usize) -> ArrayResult {
    const OP: &str = "concatenate";
    let Some(first) = arrays.first() else {
        return Err(bad(OP, "need at least one array to concatenate".into()));
    };
    let shape = first.shape();
    let dims = shape.dims();
    if dims == 0 {
        return Err(bad(
            OP,
            "zero-dimensional arrays cannot be concatenated".into(),
        ));
    }
    if axis >= dims {
        return Err(bad(
            OP,
            format!("axis {axis} is out of bounds for arrays of dimension {dims}"),
        ));
    }
    let mut total = 0i64;
    for (i, a) in arrays.iter().enumerate() {
        first.context().check_same(a.context(), OP)?;
        let s = a.shape();
        if s.dims() != dims {
            return Err(bad(
                OP,
                format!(
                    "all the input arrays must have same number of dimensions, but the array \
                     at index 0 has {dims} dimension(s) and the array at index {i} has {} \
                     dimension(s)",
                    s.dims()
                ),
            ));
        }
        if let Some(d) = (0..dims).find(|&d| d != axis && s[d] != shape[d]) {
            return Err(bad(
                OP,
                format!(
                    "all the input array dimensions except for the concatenation axis must \
                     match exactly, but along dimension {d}, the array at index 0 has size {} \
                     and the array at index {i} has size {}",
                    shape[d], s[d]
                ),
            ));
        }
        if a.dtype() != first.dtype() {
            return Err(ArrayError::DTypeMismatch {
                op: OP,
                lhs: first.dtype(),
                rhs: a.dtype(),
            });
        }
        total += s[axis];
    }
    let mut extent = shape.as_slice().to_vec();
    extent[axis] = total;
    let out = crate::zeros(first.context(), &extent, first.dtype())?;
    let mut at = 0;
    for a in arrays {
        let n = a.shape()[axis];
        if n > 0 {
            out.slice(&along(dims, axis, at, at + n))?.assign(*a)?;
        }
        at += n;
    }
    Ok(out)
}

/// The array with its elements shifted by `shift` along `axis`, those pushed past the end
/// coming back at the start (NumPy's `roll` along one axis; a negative shift moves them
/// the other way).
pub fn roll(a: &Array, shift: i64, axis: usize) -> ArrayResult {
    const OP: &str = "roll";
    let shape = a.shape();
    let dims = shape.dims();
    if axis >= dims {
        return Err(bad(
            OP,
            format!("axis {axis} is out of bounds for an array of dimension {dims}"),
        ));
    }
    let n = shape[axis];
    let out = crate::zeros(a.context(), shape.as_slice(), a.dtype())?;
    if n == 0 || shape.volume() == 0 {
        return Ok(out);
    }
    let k = shift.rem_euclid(n);
    if k == 0 {
        out.assign(a)?;
        return Ok(out);
    }
    // out[k:] = a[:n-k]; out[:k] = a[n-k:]
    out.slice(&along(dims, axis, k, n))?
        .assign(&a.slice(&along(dims, axis, 0, n - k))?)?;
    out.slice(&along(dims, axis, 0, k))?
        .assign(&a.slice(&along(dims, axis, n - k, n))?)?;
    Ok(out)
}

/// The array repeated `reps[d]` times along each dimension (NumPy's `tile`; fewer
/// repetitions than dimensions repeat the trailing ones, more add leading dimensions).
/// One assignment per copy: meant for few repetitions.
pub fn tile(a: &Array, reps: &[i64]) -> ArrayResult {
    const OP: &str = "tile";
    if let Some(r) = reps.iter().find(|&&r| r < 0) {
        return Err(bad(OP, format!("negative repetition count {r}")));
    }
    let shape = a.shape();
    let dims = shape.dims().max(reps.len());
    // Both padded on the left with ones to `dims` dimensions.
    let pad = |values: &[i64]| -> Vec<i64> {
        std::iter::repeat_n(1, dims - values.len())
            .chain(values.iter().copied())
            .collect()
    };
    let extent = pad(shape.as_slice());
    let reps = pad(reps);
    let copies: i64 = reps.iter().product();
    if copies > 4096 {
        return Err(bad(
            OP,
            format!("{copies} copies (at most 4096: one task each)"),
        ));
    }
    let target: Vec<i64> = extent.iter().zip(&reps).map(|(n, r)| n * r).collect();
    let out = crate::zeros(a.context(), &target, a.dtype())?;
    if target.contains(&0) {
        return Ok(out);
    }
    // The input with the padded shape (leading dimensions of 1 broadcast in `assign`).
    let mut index = vec![0i64; dims];
    loop {
        let spec: Vec<SliceArg> = (0..dims)
            .map(|d| SliceArg {
                start: Some(index[d] * extent[d]),
                stop: Some((index[d] + 1) * extent[d]),
            })
            .collect();
        out.slice(&spec)?.assign(a)?;
        // The next copy, last dimension fastest.
        let mut d = dims;
        loop {
            if d == 0 {
                return Ok(out);
            }
            d -= 1;
            index[d] += 1;
            if index[d] < reps[d] {
                break;
            }
            index[d] = 0;
        }
    }
}
