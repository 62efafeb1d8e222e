//! The applications' global allocator: the system's, except that when it refuses a request
//! the process prints one line saying how much was asked for and exits with status 1,
//! instead of aborting. Store memory never gets here (diffuse's allocations are fallible
//! and come back as `OutOfMemory` errors); this covers the host-side inputs and reference
//! results of a problem too large for the machine.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;

/// The system allocator with a clean exit on refusal.
pub struct ExitOnRefusal;

impl ExitOnRefusal {
    fn refused(layout: Layout) -> ! {
        // Formatting into a stack buffer: nothing here may allocate.
        let mut line = [0u8; 160];
        let mut cursor = std::io::Cursor::new(&mut line[..]);
        let _ = writeln!(
            cursor,
            "error: out of memory: the host could not allocate {} bytes (try a smaller --n)",
            layout.size()
        );
        let end = cursor.position() as usize;
        let _ = std::io::stderr().write_all(&line[..end]);
        std::process::exit(1)
    }
}

// SAFETY: every call forwards to `System` with the same arguments; a null result (which
// `System` returns instead of memory) ends the process rather than reaching the caller.
unsafe impl GlobalAlloc for ExitOnRefusal {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract.
        let ptr = unsafe { System.alloc(layout) };
        if ptr.is_null() {
            Self::refused(layout);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if ptr.is_null() {
            Self::refused(layout);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded under the caller's contract.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract.
        let out = unsafe { System.realloc(ptr, layout, new_size) };
        if out.is_null() {
            Self::refused(Layout::from_size_align(new_size, layout.align()).unwrap_or(layout));
        }
        out
    }
}
