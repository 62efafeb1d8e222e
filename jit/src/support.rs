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
        // SAFETY: the index is inside both memrefs' shapes; elements do not overlap
        // (bufferization copies between distinct buffers).
        unsafe {
            std::ptr::copy_nonoverlapping(
                src_base.offset(offset(s)),
                dst_base.offset(offset(d)),
                size,
            )
        };
        // Advance the row-major index.
        let mut k = rank;
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
