//! Functions compiled kernels may call that MLIR's lowering expects from its C runner
//! library (not available here), provided by this crate and registered with every engine.

use std::ffi::c_void;

/// MLIR's unranked memref descriptor: a rank and a pointer to a ranked descriptor
/// `{allocated, aligned, offset, sizes[rank], strides[rank]}` of 64-bit words.
#[repr(C)]
pub(crate) struct UnrankedMemRef {
    rank: i64,
    descriptor: *const i64,
}

/// `memrefCopy(element_size, src, dst)`: copies every element of `src` into `dst` (same
/// shape, any strides), as `memref.copy` lowers to. Bufferization emits it when a kernel's
/// result is a plain copy of another parameter.
///
/// # Safety
/// Called only by compiled kernels with valid descriptors of equal shapes.
pub(crate) unsafe extern "C" fn memref_copy(
    element_size: i64,
    src: *const UnrankedMemRef,
    dst: *const UnrankedMemRef,
) {
    // SAFETY: the kernel passes valid descriptors (see the function's contract).
    let (src, dst) = unsafe { (&*src, &*dst) };
    let rank = src.rank.max(0) as usize;
    let words = |d: *const i64| -> &[i64] {
        // SAFETY: a ranked descriptor has 3 + 2 * rank words.
        unsafe { std::slice::from_raw_parts(d, 3 + 2 * rank) }
    };
    let (s, d) = (words(src.descriptor), words(dst.descriptor));
    let size = element_size.max(0) as usize;
    let sizes = &s[3..3 + rank];
    if sizes.iter().any(|&e| e <= 0) {
        return;
    }
    let base = |w: &[i64]| (w[1] as *mut u8).wrapping_add(w[2] as usize * size);
    let (src_base, dst_base) = (base(s), base(d));
    // Whole rows at a time when both are contiguous in the innermost dimension.
    let (row, inner) = match rank {
        0 => (1, 0),
        r if s[3 + 2 * r - 1] == 1 && d[3 + 2 * r - 1] == 1 => (sizes[r - 1] as usize, r - 1),
        r => (1, r),
    };
    let mut index = vec![0i64; rank];
    loop {
        let offset = |w: &[i64]| -> isize {
            index
                .iter()
                .enumerate()
                .map(|(k, &i)| i * w[3 + rank + k])
                .sum::<i64>() as isize
                * size as isize
        };
        // SAFETY: the index is inside both memrefs' shapes and `row` elements from it are
        // contiguous in both; elements do not overlap (bufferization copies between
        // distinct buffers).
        unsafe {
            std::ptr::copy_nonoverlapping(
                src_base.offset(offset(s)),
                dst_base.offset(offset(d)),
                size * row,
            )
        };
        // Advance the row-major index over the dimensions before `inner`'s rows.
        let mut k = inner;
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            index[k] += 1;
            if index[k] < sizes[k] {
                break;
            }
            index[k] = 0;
        }
    }
}

/// The symbols to register with every engine: (name, address).
pub(crate) fn symbols() -> [(&'static str, *mut c_void); 1] {
    [("memrefCopy", memref_copy as *mut c_void)]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ranked descriptor of `data` with the given offset, sizes and strides (in elements).
    fn descriptor(data: &mut [f64], offset: i64, sizes: &[i64], strides: &[i64]) -> Vec<i64> {
        let mut d = vec![data.as_mut_ptr() as i64, data.as_mut_ptr() as i64, offset];
        d.extend_from_slice(sizes);
        d.extend_from_slice(strides);
        d
    }

    fn copy(src: &[i64], dst: &[i64], rank: i64) {
        let (s, d) = (
            UnrankedMemRef {
                rank,
                descriptor: src.as_ptr(),
            },
            UnrankedMemRef {
                rank,
                descriptor: dst.as_ptr(),
            },
        );
        // SAFETY: the descriptors describe live buffers of equal shapes.
        unsafe { memref_copy(8, &s, &d) };
    }

    #[test]
    fn copies_strided_and_contiguous_blocks_and_scalars() {
        // A 2x3 block at offset 1 of a 4-wide source into a transposed-stride destination.
        let mut src: Vec<f64> = (0..12).map(f64::from).collect();
        let mut dst = vec![-1.0; 8];
        let s = descriptor(&mut src, 1, &[2, 3], &[4, 1]);
        let d = descriptor(&mut dst, 0, &[2, 3], &[1, 2]);
        copy(&s, &d, 2);
        assert_eq!(dst, vec![1.0, 5.0, 2.0, 6.0, 3.0, 7.0, -1.0, -1.0]);
        // Contiguous rows go row by row.
        let mut out = vec![0.0; 6];
        let d = descriptor(&mut out, 0, &[2, 3], &[3, 1]);
        copy(&s, &d, 2);
        assert_eq!(out, vec![1.0, 2.0, 3.0, 5.0, 6.0, 7.0]);
        // Rank 0.
        let mut one = vec![0.0];
        let (s0, d0) = (
            descriptor(&mut src, 7, &[], &[]),
            descriptor(&mut one, 0, &[], &[]),
        );
        copy(&s0, &d0, 0);
        assert_eq!(one, vec![7.0]);
    }
}
