//! The simulated GPU's memory: one region, reserved up front and touched only where used,
//! handed out first fit from a free list of address-ordered blocks that coalesce when
//! freed.

use std::alloc::{self, Layout};
use std::collections::BTreeMap;

/// Every allocation starts at a multiple of this and spans a multiple of it (as CUDA's
/// allocations are aligned), so kernels may use any element type's alignment.
pub(crate) const ALIGN: usize = 256;

/// The region and which parts of it are free and allocated (offsets from its base).
#[derive(Debug)]
pub(crate) struct Arena {
    base: *mut u8,
    layout: Option<Layout>,
    /// Free blocks: offset -> length, never adjacent (they coalesce).
    free: BTreeMap<usize, usize>,
    /// Allocations the caller holds: offset -> (length reserved, length requested).
    live: BTreeMap<usize, (usize, usize)>,
}

// SAFETY: the arena owns its region; the pointer is only an address to hand out and is
// dereferenced by whoever holds an allocation, under the device's ordering rules.
unsafe impl Send for Arena {}

impl Arena {
    /// A region of `bytes` bytes (rounded down to whole blocks), zeroed lazily by the
    /// operating system; `Err` says why it could not be reserved.
    pub(crate) fn new(bytes: usize) -> Result<Self, String> {
        let size = bytes - bytes % ALIGN;
        if size == 0 {
            return Ok(Arena {
                base: std::ptr::null_mut(),
                layout: None,
                free: BTreeMap::new(),
                live: BTreeMap::new(),
            });
        }
        let layout = Layout::from_size_align(size, 4096)
            .map_err(|e| format!("{size} bytes cannot be one region: {e}"))?;
        // SAFETY: `layout` has a non-zero size.
        let base = unsafe { alloc::alloc_zeroed(layout) };
        if base.is_null() {
            return Err(format!("the host could not reserve {size} bytes"));
        }
        Ok(Arena {
            base,
            layout: Some(layout),
            free: BTreeMap::from([(0, size)]),
            live: BTreeMap::new(),
        })
    }

    /// The region's size in bytes.
    pub(crate) fn size(&self) -> usize {
        self.layout.map_or(0, |l| l.size())
    }

    /// Reserves `bytes` bytes (at least one block) in the first free block with room and
    /// returns its address, or `None` when no block has room.
    pub(crate) fn reserve(&mut self, bytes: usize) -> Option<u64> {
        let length = bytes.max(1).checked_next_multiple_of(ALIGN)?;
        let (&offset, &available) = self.free.iter().find(|(_, &len)| len >= length)?;
        self.free.remove(&offset);
        if available > length {
            self.free.insert(offset + length, available - length);
        }
        self.live.insert(offset, (length, bytes));
        Some(self.base as u64 + offset as u64)
    }

    /// Ends the caller's hold on the allocation at `address`: returns its offset and its
    /// (reserved, requested) lengths, or `None` when `address` is no allocation. The block
    /// is free for reuse only once [`Arena::release`] returns it.
    pub(crate) fn unhold(&mut self, address: u64) -> Option<(usize, usize, usize)> {
        let offset = usize::try_from(address.checked_sub(self.base as u64)?).ok()?;
        let (length, requested) = self.live.remove(&offset)?;
        Some((offset, length, requested))
    }

    /// Returns the block at `offset` of `length` bytes to the free list, merged with free
    /// neighbours.
    pub(crate) fn release(&mut self, offset: usize, length: usize) {
        let mut start = offset;
        let mut end = offset + length;
        if let Some((&before, &len)) = self.free.range(..offset).next_back() {
            if before + len == offset {
                self.free.remove(&before);
                start = before;
            }
        }
        if let Some(len) = self.free.remove(&end) {
            end += len;
        }
        self.free.insert(start, end - start);
    }

    /// True when `[address, address + bytes)` lies within one allocation the caller holds.
    pub(crate) fn holds(&self, address: u64, bytes: usize) -> bool {
        let Some(offset) = address
            .checked_sub(self.base as u64)
            .and_then(|o| usize::try_from(o).ok())
        else {
            return false;
        };
        match self.live.range(..=offset).next_back() {
            Some((&start, &(length, _))) => offset
                .checked_add(bytes)
                .is_some_and(|end| end <= start + length),
            None => false,
        }
    }

    /// Free bytes in all, and the largest free block.
    pub(crate) fn free_space(&self) -> (usize, usize) {
        let total = self.free.values().sum();
        let largest = self.free.values().copied().max().unwrap_or(0);
        (total, largest)
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        if let Some(layout) = self.layout {
            // SAFETY: allocated in `new` with this layout, freed once.
            unsafe { alloc::dealloc(self.base, layout) };
        }
    }
}
