#![deny(warnings)]
//! The typed reader allocates nothing per event: reading a log of many events, strings among
//! them, costs a few allocations per block (the decoder's copy of its records), whatever the
//! number of events in it. A binary of its own: it counts the allocations of the thread that
//! reads with a global allocator that no other test shares.

event_runtime::include_events!("../events.def");

use event_runtime::read::Item;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting the allocations of each thread.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is passed on to the system allocator unchanged; the count is a
// thread-local `Cell` with a const initialiser, which does not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller keeps `alloc`'s contract, which is `System.alloc`'s.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with `layout`, as the caller guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: as for `dealloc`, and `new_size` is the caller's, as `System.realloc` wants.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn reading_allocates_per_block_not_per_event() {
    const N: u64 = 20_000;
    let recording = event_runtime::Recorder::new().memory().deterministic_clock().start().unwrap();
    for i in 0..N {
        event!(ObjectAlloc, 0x1000usize, i, 48u64, 1u32);
        event!(AllocFail, 0x1000usize, i, "a reason of some length");
    }
    let stream = recording.stop().unwrap();

    let mut reader = events::from_reader(&stream[..]).unwrap();
    let before = allocations();
    let (mut events, mut text) = (0u64, 0usize);
    while let Some(item) = reader.next_item() {
        match item {
            Item::Event(_, events::Event::ObjectAlloc { size, .. }) => events += size / 48,
            Item::Event(_, events::Event::AllocFail { reason, .. }) => {
                events += 1;
                text += reason.bytes.len();
            }
            _ => {}
        }
    }
    let during = allocations() - before;
    let blocks = reader.summary().blocks;
    assert_eq!((events, text), (2 * N, N as usize * "a reason of some length".len()));
    assert!(blocks > 10, "{blocks} blocks");
    assert!(during <= 2 * blocks + 8, "{during} allocations for {blocks} blocks of {} events", 2 * N);
}
