//! Host memory for stores and for per-point reduction accumulators.

use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use diffuse_ir::{DType, Element, Rect, Tuple};

/// Alignment of every buffer: a cache line, so vector loads never straddle one at row starts.
const ALIGN: usize = 64;

/// Bytes of store data currently allocated and the high-water mark (element bytes, not
/// counting alignment padding).
#[derive(Default, Debug)]
pub struct MemoryStats {
    current: AtomicUsize,
    peak: AtomicUsize,
}

impl MemoryStats {
    /// Bytes held by live stores now.
    pub fn current_bytes(&self) -> usize {
        self.current.load(Ordering::Relaxed)
    }

    /// The most bytes live stores ever held at once.
    pub fn peak_bytes(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Restarts the high-water mark from the current level (e.g. after warm-up).
    pub fn reset_peak(&self) {
        self.peak.store(self.current_bytes(), Ordering::Relaxed);
    }

    fn add(&self, bytes: usize) {
        let now = self.current.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    fn sub(&self, bytes: usize) {
        self.current.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// A zero-initialized, 64-byte-aligned buffer of `len` elements of one dtype.
///
/// Interior mutability is deliberate: point tasks write disjoint parts of one buffer from
/// several threads through raw pointers, under the disjointness the IR's validation proves.
pub(crate) struct HostBuffer {
    ptr: NonNull<u8>,
    layout: Layout,
    dtype: DType,
    len: usize,
    stats: Option<Arc<MemoryStats>>,
}

// SAFETY: the buffer owns its memory; concurrent access goes through raw pointers whose
// disjointness the backend guarantees (see `RawView::new`'s contract).
unsafe impl Send for HostBuffer {}
// SAFETY: as above.
unsafe impl Sync for HostBuffer {}

impl HostBuffer {
    /// Allocates `len` zeroed elements; counted in `stats` when given (store memory).
    pub(crate) fn zeroed(dtype: DType, len: usize, stats: Option<Arc<MemoryStats>>) -> Self {
        let bytes = (len * dtype.size_bytes()).max(1);
        let layout = match Layout::from_size_align(bytes, ALIGN) {
            Ok(l) => l,
            Err(_) => alloc::handle_alloc_error(Layout::new::<u8>()),
        };
        // SAFETY: the layout has non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| alloc::handle_alloc_error(layout));
        if let Some(s) = &stats {
            s.add(len * dtype.size_bytes());
        }
        HostBuffer {
            ptr,
            layout,
            dtype,
            len,
            stats,
        }
    }

    /// A private accumulator of `len` elements, each the identity of `op`.
    pub(crate) fn identity<T: Element>(len: usize, op: diffuse_ir::ReductionOp) -> Self {
        let buf = Self::zeroed(T::DTYPE, len, None);
        // SAFETY: freshly allocated, exclusively owned, `len` elements of T.
        let slice = unsafe { std::slice::from_raw_parts_mut(buf.ptr.as_ptr() as *mut T, len) };
        slice.fill(T::reduction_identity(op));
        buf
    }

    /// Base pointer.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Element type.
    pub(crate) fn dtype(&self) -> DType {
        self.dtype
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        if let Some(s) = &self.stats {
            s.sub(self.len * self.dtype.size_bytes());
        }
        // SAFETY: allocated in `zeroed` with this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

/// Visits the rows of `rect` inside a row-major array with element `strides`: calls
/// `f(element_offset_of_row_start, row_index, row_len)` in row-major order.
pub(crate) fn for_each_rect_row(
    rect: &Rect,
    strides: &Tuple,
    mut f: impl FnMut(usize, usize, usize),
) {
    let extent = rect.extent();
    let dims = extent.dims();
    if rect.is_empty() {
        return;
    }
    if dims == 0 {
        f(0, 0, 1);
        return;
    }
    let row_len = extent[dims - 1] as usize;
    let outer = Rect {
        lo: rect.lo.truncated(dims - 1),
        hi: rect.hi.truncated(dims - 1),
    };
    let inner_start = rect.lo[dims - 1] * strides[dims - 1];
    for (row, p) in outer.points().enumerate() {
        let start: i64 = (0..dims - 1).map(|d| p[d] * strides[d]).sum::<i64>() + inner_start;
        f(start as usize, row, row_len);
    }
}
