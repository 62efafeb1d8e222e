//! Host memory for stores (recycled through a cache of freed buffers), for per-point
//! reduction accumulators and for the point-local copies of fused tasks' temporaries.
//!
//! Array programs create and drop large temporaries every iteration. Returning their memory
//! to the operating system and asking for it again costs a page fault per 4 KiB page, which
//! dominates element-wise kernels; the cache hands freed buffers of the same size back out
//! instead. A recycled buffer holds stale data, so it is zeroed unless its first user
//! overwrites all of it anyway.

use std::alloc::{self, Layout};
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use diffuse_ir::{DType, Element, Rect, Tuple};

/// Alignment of every buffer: a cache line, so vector loads never straddle one at row starts.
const ALIGN: usize = 64;

/// Bytes of store data currently allocated and the high-water mark (element bytes, not
/// counting alignment padding or cached free buffers).
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

/// What the first user of a new store buffer needs in it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FirstUse {
    /// It may read elements before writing them: they must be zero.
    Reads,
    /// It overwrites every element before anyone reads: stale contents are fine.
    Overwrites,
}

/// A bounded cache of freed store buffers, keyed by allocation size.
pub struct BufferCache {
    free: Mutex<CacheState>,
    limit: usize,
}

#[derive(Default)]
struct CacheState {
    by_size: HashMap<usize, Vec<CachedBlock>>,
    bytes: usize,
}

/// A freed allocation owned by the cache.
struct CachedBlock(NonNull<u8>);

// SAFETY: a cached block is plain memory owned by the cache alone.
unsafe impl Send for CachedBlock {}

impl BufferCache {
    /// A cache holding at most `limit` bytes of freed buffers.
    pub fn new(limit: usize) -> Self {
        BufferCache {
            free: Mutex::new(CacheState::default()),
            limit,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, CacheState> {
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A cached block of exactly `layout.size()` bytes, if there is one.
    fn take(&self, layout: Layout) -> Option<NonNull<u8>> {
        let mut state = self.state();
        let block = state.by_size.get_mut(&layout.size())?.pop()?;
        state.bytes -= layout.size();
        Some(block.0)
    }

    /// Keeps `ptr` for reuse if there is room, else frees it.
    fn give_back(&self, ptr: NonNull<u8>, layout: Layout) {
        let mut state = self.state();
        if state.bytes + layout.size() <= self.limit {
            state.bytes += layout.size();
            state
                .by_size
                .entry(layout.size())
                .or_default()
                .push(CachedBlock(ptr));
        } else {
            drop(state);
            // SAFETY: allocated by `HostBuffer::for_store` with this layout.
            unsafe { alloc::dealloc(ptr.as_ptr(), layout) };
        }
    }

    /// Bytes of freed buffers held for reuse.
    pub fn cached_bytes(&self) -> usize {
        self.state().bytes
    }
}

impl Drop for BufferCache {
    fn drop(&mut self) {
        let state = std::mem::take(&mut *self.state());
        for (size, blocks) in state.by_size {
            let layout = buffer_layout(size);
            for block in blocks {
                // SAFETY: every cached block was allocated with the layout of its size.
                unsafe { alloc::dealloc(block.0.as_ptr(), layout) };
            }
        }
    }
}

fn buffer_layout(bytes: usize) -> Layout {
    Layout::from_size_align(bytes.max(1), ALIGN)
        .unwrap_or_else(|_| alloc::handle_alloc_error(Layout::new::<u8>()))
}

/// Where a buffer's memory comes from and goes back to.
enum Home {
    /// A store's data: counted in the stats, recycled through the cache.
    Store {
        stats: Arc<MemoryStats>,
        cache: Arc<BufferCache>,
    },
    /// A private accumulator: plain heap memory.
    Private,
    /// A point-local temporary: not a store (so not counted), recycled through the cache.
    Scratch { cache: Arc<BufferCache> },
}

/// A 64-byte-aligned buffer of `len` elements of one dtype.
///
/// Interior mutability is deliberate: point tasks write disjoint parts of one buffer from
/// several threads through raw pointers, under the disjointness the IR's validation proves.
pub struct HostBuffer {
    ptr: NonNull<u8>,
    layout: Layout,
    dtype: DType,
    len: usize,
    home: Home,
}

// SAFETY: the buffer owns its memory; concurrent access goes through raw pointers whose
// disjointness the backend guarantees (see `RawView::new`'s contract).
unsafe impl Send for HostBuffer {}
// SAFETY: as above.
unsafe impl Sync for HostBuffer {}

impl HostBuffer {
    /// A store buffer of `len` elements, from the cache when a freed one of the same size is
    /// there. Zero-filled unless `first_use` overwrites it entirely.
    pub fn for_store(
        dtype: DType,
        len: usize,
        first_use: FirstUse,
        stats: &Arc<MemoryStats>,
        cache: &Arc<BufferCache>,
    ) -> Self {
        let layout = buffer_layout(len * dtype.size_bytes());
        let ptr = match cache.take(layout) {
            Some(ptr) => {
                if first_use == FirstUse::Reads {
                    // SAFETY: the block is ours and `layout.size()` bytes long.
                    unsafe { ptr.as_ptr().write_bytes(0, layout.size()) };
                }
                ptr
            }
            None => fresh(layout, first_use == FirstUse::Reads),
        };
        stats.add(len * dtype.size_bytes());
        HostBuffer {
            ptr,
            layout,
            dtype,
            len,
            home: Home::Store {
                stats: Arc::clone(stats),
                cache: Arc::clone(cache),
            },
        }
    }

    /// A point-local buffer of `len` elements for a fused task's temporary, from the cache
    /// when possible. Not zeroed: a temporary is written (covering) before it is read, or
    /// never read at all.
    pub fn scratch(dtype: DType, len: usize, cache: &Arc<BufferCache>) -> Self {
        let layout = buffer_layout(len * dtype.size_bytes());
        HostBuffer {
            ptr: cache.take(layout).unwrap_or_else(|| fresh(layout, false)),
            layout,
            dtype,
            len,
            home: Home::Scratch {
                cache: Arc::clone(cache),
            },
        }
    }

    /// A private accumulator of `len` elements, each the identity of `op`.
    pub fn identity<T: Element>(len: usize, op: diffuse_ir::ReductionOp) -> Self {
        let layout = buffer_layout(len * T::DTYPE.size_bytes());
        let buf = HostBuffer {
            ptr: fresh(layout, false),
            layout,
            dtype: T::DTYPE,
            len,
            home: Home::Private,
        };
        let base = buf.ptr.as_ptr() as *mut T;
        for i in 0..len {
            // SAFETY: freshly allocated, exclusively owned, room for `len` elements of T.
            unsafe { base.add(i).write(T::reduction_identity(op)) };
        }
        buf
    }

    /// Base pointer.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// New memory from the allocator, zeroed if asked.
fn fresh(layout: Layout, zeroed: bool) -> NonNull<u8> {
    // SAFETY: `buffer_layout` never has size 0.
    let raw = unsafe {
        if zeroed {
            alloc::alloc_zeroed(layout)
        } else {
            alloc::alloc(layout)
        }
    };
    NonNull::new(raw).unwrap_or_else(|| alloc::handle_alloc_error(layout))
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        match &self.home {
            Home::Store { stats, cache } => {
                stats.sub(self.len * self.dtype.size_bytes());
                cache.give_back(self.ptr, self.layout);
            }
            Home::Scratch { cache } => cache.give_back(self.ptr, self.layout),
            // SAFETY: allocated by `fresh` with this layout.
            Home::Private => unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) },
        }
    }
}

/// Visits the rows of `rect` inside a row-major array with element `strides`: calls
/// `f(element_offset_of_row_start, row_index, row_len)` in row-major order.
pub fn for_each_rect_row(rect: &Rect, strides: &Tuple, mut f: impl FnMut(usize, usize, usize)) {
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
