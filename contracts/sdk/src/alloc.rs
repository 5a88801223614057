//! The contract's heap: a bump allocator over linear memory (wasm32 only).
//!
//! An instance lives for one call and is then thrown away, so freeing memory buys little,
//! while growing linear memory is expensive for the host (each `memory.grow` costs the
//! node ~5 µs in page-protection changes, as much as the rest of a small call). This
//! allocator hands out memory from `__heap_base` upwards, first from the slack the module
//! was linked with (see `.cargo/config.toml`: `--initial-memory`), and grows memory only
//! when that runs out. Freeing or resizing the most recent allocation is done in place,
//! which covers the common grow-a-`Vec` pattern; other frees are not reused. A call that
//! allocates more than `memory_bytes_max` in total ends with the memory-limit error.

use core::alloc::{GlobalAlloc, Layout};
use core::arch::wasm32;
use core::cell::Cell;

const PAGE_BYTES: usize = 64 * 1024;

unsafe extern "C" {
    /// Where the linker put the end of static data: the heap starts here.
    static __heap_base: u8;
}

/// See the module docs.
pub struct BumpAllocator {
    /// Next free byte (0: not initialised yet).
    next: Cell<usize>,
    /// End of linear memory.
    end: Cell<usize>,
    /// Start of the most recent allocation.
    last: Cell<usize>,
}

// SAFETY: wasm32 contracts are single-threaded (threads are refused by the node).
unsafe impl Sync for BumpAllocator {}

impl BumpAllocator {
    /// An allocator that initialises itself on first use.
    pub const fn new() -> Self {
        BumpAllocator {
            next: Cell::new(0),
            end: Cell::new(0),
            last: Cell::new(0),
        }
    }

    /// Makes `[.., top)` available, growing memory if needed.
    fn reserve(&self, top: usize) -> bool {
        if self.next.get() == 0 {
            // Taking the address of an extern static is safe; it is never read.
            self.next.set(core::ptr::addr_of!(__heap_base) as usize);
            self.end.set(wasm32::memory_size(0) * PAGE_BYTES);
        }
        if top <= self.end.get() {
            return true;
        }
        let pages = (top - self.end.get()).div_ceil(PAGE_BYTES);
        if wasm32::memory_grow(0, pages) == usize::MAX {
            return false;
        }
        self.end.set(self.end.get() + pages * PAGE_BYTES);
        true
    }
}

impl Default for BumpAllocator {
    fn default() -> Self {
        Self::new()
    }
}

unsafe impl GlobalAlloc for BumpAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !self.reserve(0) {
            return core::ptr::null_mut();
        }
        let Some(start) = self.next.get().checked_next_multiple_of(layout.align()) else {
            return core::ptr::null_mut();
        };
        let Some(top) = start.checked_add(layout.size()) else {
            return core::ptr::null_mut();
        };
        if !self.reserve(top) {
            return core::ptr::null_mut();
        }
        self.last.set(start);
        self.next.set(top);
        start as *mut u8
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let start = ptr as usize;
        if start == self.last.get() && start + layout.size() == self.next.get() {
            self.next.set(start);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let start = ptr as usize;
        if start == self.last.get() && start + layout.size() == self.next.get() {
            // The most recent allocation grows or shrinks in place.
            let Some(top) = start.checked_add(new_size) else {
                return core::ptr::null_mut();
            };
            if !self.reserve(top) {
                return core::ptr::null_mut();
            }
            self.next.set(top);
            return ptr;
        }
        // SAFETY: the caller guarantees `layout` describes `ptr` and `new_size` is valid
        // for its alignment; the new block does not overlap the old one.
        unsafe {
            let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
            let new = self.alloc(new_layout);
            if !new.is_null() {
                core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
            }
            new
        }
    }
}
