//! Host memory for stores (recycled through a cache of freed buffers), for per-point
//! reduction accumulators and for the point-local copies of fused tasks' temporaries.
//!
//! Array programs create and drop large temporaries every iteration. Returning their memory
//! to the operating system and asking for it again costs a page fault per 4 KiB page, which
//! dominates element-wise kernels; the cache hands freed buffers of the same size back out
//! instead. A recycled buffer holds stale data, so it is zeroed unless its first user
//! overwrites all of it anyway.
//!
//! Every allocation is fallible: one that would take the memory in use past the limit
//! ([`MemoryStats::set_limit`]), or that the allocator refuses, first releases the cache's
//! buffers and then fails with [`OutOfMemory`] instead of aborting the process.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use diffuse_ir::{DType, Element, Rect, Tuple, MAX_DIMS};

/// Alignment of every buffer: a cache line, so vector loads never straddle one at row starts.
const ALIGN: usize = 64;

/// Bytes of store data currently allocated and the high-water mark (element bytes, not
/// counting alignment padding or cached free buffers), and the limit allocations respect.
#[derive(Debug)]
pub struct MemoryStats {
    current: AtomicUsize,
    peak: AtomicUsize,
    limit: AtomicUsize,
}

impl Default for MemoryStats {
    fn default() -> Self {
        MemoryStats {
            current: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            limit: AtomicUsize::new(usize::MAX),
        }
    }
}

/// An allocation that does not fit: the bytes asked for, those in use, and the limit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct OutOfMemory {
    /// Bytes the allocation needed.
    pub bytes: usize,
    /// Bytes of store data and cached buffers in use when it was asked for.
    pub in_use: usize,
    /// The limit in force (`usize::MAX` when the allocator itself refused).
    pub limit: usize,
}

impl std::fmt::Display for OutOfMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "out of memory: {} bytes needed", self.bytes)?;
        if self.limit == usize::MAX {
            write!(
                f,
                ", refused by the allocator ({} bytes in use)",
                self.in_use
            )
        } else {
            write!(
                f,
                ", {} bytes in use of a {}-byte limit",
                self.in_use, self.limit
            )
        }
    }
}

/// The machine's physical memory in bytes (`MemTotal` of `/proc/meminfo`), if known.
pub fn physical_memory() -> Option<usize> {
    meminfo_bytes("MemTotal:")
}

/// The memory a new allocation can have without swapping or the kernel's OOM killer, in
/// bytes (`MemAvailable` of `/proc/meminfo`, read now), if known: the honest default limit,
/// as the physical memory counts what other processes and the page cache hold.
pub fn available_memory() -> Option<usize> {
    meminfo_bytes("MemAvailable:")
}

/// The `/proc/meminfo` field named `key` (a count of KiB) in bytes.
fn meminfo_bytes(key: &str) -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with(key))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

impl MemoryStats {
    /// Stats whose allocations stay within `limit` bytes.
    pub fn with_limit(limit: usize) -> Self {
        let stats = MemoryStats::default();
        stats.set_limit(limit);
        stats
    }

    /// Sets the most bytes store data, cached buffers and point-local buffers may take.
    pub fn set_limit(&self, bytes: usize) {
        self.limit.store(bytes, Ordering::Relaxed);
    }

    /// The limit in force.
    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// Checks that `bytes` more fit under the limit, releasing the cache's buffers first if
    /// only they are in the way.
    fn reserve(&self, bytes: usize, cache: &BufferCache) -> Result<(), OutOfMemory> {
        let limit = self.limit();
        let fits = |cached: usize| {
            self.current_bytes()
                .checked_add(cached)
                .and_then(|used| used.checked_add(bytes))
                .is_some_and(|total| total <= limit)
        };
        if fits(cache.cached_bytes()) {
            return Ok(());
        }
        cache.clear();
        if fits(0) {
            Ok(())
        } else {
            Err(OutOfMemory {
                bytes,
                in_use: self.current_bytes() + cache.cached_bytes(),
                limit,
            })
        }
    }

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
            unsafe { System.dealloc(ptr.as_ptr(), layout) };
        }
    }

    /// Bytes of freed buffers held for reuse.
    pub fn cached_bytes(&self) -> usize {
        self.state().bytes
    }

    /// Frees every cached buffer (before an allocation that would not fit otherwise).
    pub fn clear(&self) {
        let state = std::mem::take(&mut *self.state());
        free_blocks(state);
    }
}

/// Returns the blocks of a cache's state to the allocator.
fn free_blocks(state: CacheState) {
    for (size, blocks) in state.by_size {
        // Cached sizes all came from a layout, so this always has one.
        let Some(layout) = buffer_layout(size) else {
            continue;
        };
        for block in blocks {
            // SAFETY: every cached block was allocated with the layout of its size.
            unsafe { System.dealloc(block.0.as_ptr(), layout) };
        }
    }
}

impl Drop for BufferCache {
    fn drop(&mut self) {
        self.clear();
    }
}

/// The layout of a buffer of `bytes` bytes (rounded up to its [`size_class`]), or None when
/// no allocation can be that large.
fn buffer_layout(bytes: usize) -> Option<Layout> {
    Layout::from_size_align(size_class(bytes.max(1))?, ALIGN).ok()
}

/// Buffers from this size up are rounded up to a size class.
const SMALLEST_CLASSED: usize = 64 << 10;

/// The bytes actually allocated for a buffer of `bytes`: from 64 KiB up, the next multiple
/// of an eighth of the largest power of two not above it (at most 12.5% more), so that
/// buffers whose sizes vary a little from use to use (compactions, gathers, `nonzero`)
/// reuse the cache's freed blocks instead of fresh pages, which the kernel zeroes on first
/// touch (measured: a third of TorchSWE's time at 1024^2). Rounding a class gives itself.
/// None past `usize`.
fn size_class(bytes: usize) -> Option<usize> {
    if bytes <= SMALLEST_CLASSED {
        return Some(bytes);
    }
    let step = (1usize << (usize::BITS - 1 - bytes.leading_zeros())) / 8;
    bytes.div_ceil(step).checked_mul(step)
}

/// `len` elements of `dtype` in bytes, or None past `usize`.
fn bytes_of(dtype: DType, len: usize) -> Option<usize> {
    len.checked_mul(dtype.size_bytes())
}

/// New memory of `bytes` bytes: from the cache if it holds a block of that size, else from
/// the allocator (zeroed if asked), releasing the cache's blocks and trying once more if the
/// allocator refuses. `reserve` has already checked the limit.
fn obtain(
    bytes: usize,
    zeroed: bool,
    cache: &BufferCache,
    in_use: impl Fn() -> usize,
) -> Result<(NonNull<u8>, Layout), OutOfMemory> {
    let refused = || OutOfMemory {
        bytes,
        in_use: in_use(),
        limit: usize::MAX,
    };
    let layout = buffer_layout(bytes).ok_or_else(refused)?;
    if let Some(ptr) = cache.take(layout) {
        if zeroed {
            // SAFETY: the block is ours and `layout.size()` bytes long.
            unsafe { ptr.as_ptr().write_bytes(0, layout.size()) };
        }
        return Ok((ptr, layout));
    }
    let ptr = match fresh(layout, zeroed) {
        Some(ptr) => ptr,
        None => {
            cache.clear();
            fresh(layout, zeroed).ok_or_else(refused)?
        }
    };
    Ok((ptr, layout))
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
    /// there. Zero-filled unless `first_use` overwrites it entirely. Fails when it would
    /// not fit under the limit or the allocator refuses.
    pub fn for_store(
        dtype: DType,
        len: usize,
        first_use: FirstUse,
        stats: &Arc<MemoryStats>,
        cache: &Arc<BufferCache>,
    ) -> Result<Self, OutOfMemory> {
        let bytes = checked_bytes(dtype, len, stats, cache)?;
        stats.reserve(bytes, cache)?;
        let (ptr, layout) = obtain(bytes, first_use == FirstUse::Reads, cache, || {
            stats.current_bytes() + cache.cached_bytes()
        })?;
        stats.add(bytes);
        Ok(HostBuffer {
            ptr,
            layout,
            dtype,
            len,
            home: Home::Store {
                stats: Arc::clone(stats),
                cache: Arc::clone(cache),
            },
        })
    }

    /// A point-local buffer of `len` elements for a fused task's temporary, from the cache
    /// when possible. Not zeroed: a temporary is written (covering) before it is read, or
    /// never read at all. Fails when it would not fit under the limit or the allocator
    /// refuses.
    pub fn scratch(
        dtype: DType,
        len: usize,
        stats: &MemoryStats,
        cache: &Arc<BufferCache>,
    ) -> Result<Self, OutOfMemory> {
        let bytes = checked_bytes(dtype, len, stats, cache)?;
        stats.reserve(bytes, cache)?;
        let (ptr, layout) = obtain(bytes, false, cache, || {
            stats.current_bytes() + cache.cached_bytes()
        })?;
        Ok(HostBuffer {
            ptr,
            layout,
            dtype,
            len,
            home: Home::Scratch {
                cache: Arc::clone(cache),
            },
        })
    }

    /// A private accumulator of `len` elements, each the identity of `op`; fails when the
    /// allocator refuses.
    pub fn identity<T: Element>(
        len: usize,
        op: diffuse_ir::ReductionOp,
    ) -> Result<Self, OutOfMemory> {
        let refused = |bytes| OutOfMemory {
            bytes,
            in_use: 0,
            limit: usize::MAX,
        };
        let bytes = bytes_of(T::DTYPE, len).ok_or(refused(usize::MAX))?;
        let layout = buffer_layout(bytes).ok_or(refused(bytes))?;
        let buf = HostBuffer {
            ptr: fresh(layout, false).ok_or(refused(bytes))?,
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
        Ok(buf)
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

/// The bytes of `len` elements of `dtype`, or the error for a size past `usize`.
fn checked_bytes(
    dtype: DType,
    len: usize,
    stats: &MemoryStats,
    cache: &BufferCache,
) -> Result<usize, OutOfMemory> {
    bytes_of(dtype, len).ok_or(OutOfMemory {
        bytes: usize::MAX,
        in_use: stats.current_bytes() + cache.cached_bytes(),
        limit: stats.limit(),
    })
}

/// New memory from the system allocator (directly, so that a program's own global
/// allocator cannot turn a refusal into an abort), zeroed if asked; None when it refuses.
/// Large buffers are advised to use huge pages before anything touches them.
fn fresh(layout: Layout, zeroed: bool) -> Option<NonNull<u8>> {
    // SAFETY: `buffer_layout` never has size 0.
    let raw = unsafe {
        if zeroed {
            System.alloc_zeroed(layout)
        } else {
            System.alloc(layout)
        }
    };
    let block = NonNull::new(raw)?;
    advise_huge_pages(block, layout.size());
    Some(block)
}

/// The size of a transparent huge page on x86-64 and most aarch64 kernels.
const HUGE_PAGE: usize = 2 << 20;

/// Buffers from this size up ask for huge pages.
const HUGE_PAGES_FROM: usize = 2 * HUGE_PAGE;

/// Asks the kernel to back the whole huge pages inside `bytes` bytes at `block` with
/// transparent huge pages (`MADV_HUGEPAGE`, for kernels that give them only on request).
/// Kernels stream through stores of many megabytes; with 4 KiB pages every page of them
/// costs a TLB miss and a page walk (the CSR SpMV's row-by-row reads of `x` touch three
/// pages per row): measured on the solvers at n = 1000 (2 processors), 10-25% per
/// iteration. Advice only: where the kernel has none to give, or refuses, nothing changes.
#[cfg(target_os = "linux")]
fn advise_huge_pages(block: NonNull<u8>, bytes: usize) {
    if bytes < HUGE_PAGES_FROM {
        return;
    }
    let begin = block.as_ptr() as usize;
    let start = begin.next_multiple_of(HUGE_PAGE);
    let end = (begin + bytes) / HUGE_PAGE * HUGE_PAGE;
    if end > start {
        // SAFETY: `start..end` lies inside the allocation of `bytes` bytes at `block`, and
        // the advice changes no data in it.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

/// Huge-page advice is Linux's; elsewhere buffers keep the system's pages.
#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_block: NonNull<u8>, _bytes: usize) {}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        match &self.home {
            Home::Store { stats, cache } => {
                stats.sub(self.len * self.dtype.size_bytes());
                cache.give_back(self.ptr, self.layout);
            }
            Home::Scratch { cache } => cache.give_back(self.ptr, self.layout),
            // SAFETY: allocated by `fresh` with this layout.
            Home::Private => unsafe { System.dealloc(self.ptr.as_ptr(), self.layout) },
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
    let outer = dims - 1;
    let rows: i64 = (0..outer).map(|d| extent[d]).product();
    let mut start: i64 = (0..dims).map(|d| rect.lo[d] * strides[d]).sum();
    // An odometer over the outer dimensions, the row start kept up to date with it (a
    // column of a matrix is one row per element: this loop is its whole cost).
    let mut counter = [0i64; MAX_DIMS];
    for row in 0..rows as usize {
        f(start as usize, row, row_len);
        for d in (0..outer).rev() {
            counter[d] += 1;
            start += strides[d];
            if counter[d] < extent[d] {
                break;
            }
            start -= strides[d] * extent[d];
            counter[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rect_rows_are_visited_in_row_major_order_at_their_offsets() {
        let shape = Tuple::shape(&[4, 3, 5]).unwrap();
        let strides = shape.row_major_strides();
        for lo in [[0, 0, 0], [1, 2, 3], [3, 0, 4], [0, 1, 0]] {
            for hi in [[4, 3, 5], [2, 3, 4], [4, 1, 5], [1, 2, 1]] {
                let rect = Rect {
                    lo: Tuple::new(&lo).unwrap(),
                    hi: Tuple::new(&hi).unwrap(),
                };
                let mut got = Vec::new();
                for_each_rect_row(&rect, &strides, |start, row, len| {
                    got.push((start, row, len))
                });
                // Every point of the box, by rows of consecutive elements.
                let mut want: Vec<(usize, usize, usize)> = Vec::new();
                if !rect.is_empty() {
                    for i in lo[0]..hi[0] {
                        for j in lo[1]..hi[1] {
                            let start = i * strides[0] + j * strides[1] + lo[2] * strides[2];
                            want.push((start as usize, want.len(), (hi[2] - lo[2]) as usize));
                        }
                    }
                }
                assert_eq!(got, want, "{rect}");
            }
        }
    }

    #[test]
    fn size_classes_round_up_by_at_most_an_eighth_and_are_their_own_class() {
        for bytes in (1..200_000usize).step_by(997).chain([
            65_536,
            65_537,
            1 << 20,
            (1 << 20) + 1,
            (1 << 21) - 1,
            123_456_789,
        ]) {
            let class = size_class(bytes).unwrap();
            assert!(class >= bytes, "{bytes} -> {class}");
            if bytes > SMALLEST_CLASSED {
                assert!(class - bytes <= bytes / 8, "{bytes} -> {class}");
            } else {
                assert_eq!(class, bytes);
            }
            assert_eq!(size_class(class), Some(class), "{bytes} -> {class}");
        }
        // Nearby sizes share a class: a buffer freed by one is reused by the next.
        assert_eq!(size_class(1_000_000), size_class(1_020_000));
        assert_eq!(size_class(usize::MAX), None);
    }

    /// The `VmFlags` of the mapping of this process that holds `address` (Linux's smaps).
    #[cfg(target_os = "linux")]
    fn mapping_flags(address: usize) -> String {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps is readable");
        let mut inside = false;
        for line in smaps.lines() {
            // A mapping's first line starts with its range, `lo-hi` in hex.
            let range = line
                .split_whitespace()
                .next()
                .and_then(|r| r.split_once('-'));
            if let Some((Ok(lo), Ok(hi))) =
                range.map(|(lo, hi)| (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16)))
            {
                inside = (lo..hi).contains(&address);
                continue;
            }
            if let Some(flags) = line.strip_prefix("VmFlags:").filter(|_| inside) {
                return flags.trim().to_string();
            }
        }
        panic!("no mapping holds {address:#x}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn large_store_buffers_ask_for_huge_pages_and_small_ones_do_not() {
        let stats = Arc::new(MemoryStats::default());
        let cache = Arc::new(BufferCache::new(0));
        let buffer = |len: usize| {
            HostBuffer::for_store(DType::F64, len, FirstUse::Reads, &stats, &cache).unwrap()
        };
        // 8 MiB: its middle lies inside a whole huge page of it.
        let large = buffer(2 * HUGE_PAGES_FROM / 8);
        let middle = large.as_ptr() as usize + HUGE_PAGES_FROM;
        let flags = mapping_flags(middle);
        assert!(flags.split_whitespace().any(|f| f == "hg"), "{flags}");
        let small = buffer(1024);
        let flags = mapping_flags(small.as_ptr() as usize);
        assert!(!flags.split_whitespace().any(|f| f == "hg"), "{flags}");
    }

    #[test]
    fn available_memory_is_known_and_within_the_physical_memory() {
        // Linux reports both; what is free for a new allocation never exceeds the RAM.
        let (available, physical) = (available_memory(), physical_memory());
        assert!(available.is_some() && physical.is_some());
        assert!(available <= physical, "{available:?} > {physical:?}");
    }
}
