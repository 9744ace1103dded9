//! The decoder allocates no more than its input backs: a header or block size that lies costs
//! nothing until bytes arrive. Measured with a counting global allocator (its own test binary,
//! one test, so nothing else allocates meanwhile).

use event_format::decode::{Catalog, DecodeOptions, Decoder, Entry};
use event_format::testing::{sample_header, sample_stream};
use event_format::wire::Order;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
        PEAK.fetch_max(live, Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on as it is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        // SAFETY: the caller's contract for `dealloc` is passed on as it is.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Peak bytes allocated while decoding `input` completely, above what was live before.
fn peak_while_decoding(input: &[u8]) -> usize {
    let base = LIVE.load(Relaxed);
    PEAK.store(base, Relaxed);
    if let Ok(mut decoder) = Decoder::with_options(input, DecodeOptions { force: true }) {
        let catalog = Catalog::new(&decoder.header().sets);
        while let Some(block) = decoder.next_block() {
            if let Ok(block) = block {
                for entry in block.entries(&catalog) {
                    if let Entry::Event(event) = entry {
                        std::hint::black_box(event.values().count());
                    }
                }
            }
        }
    }
    PEAK.load(Relaxed) - base
}

#[test]
fn lying_lengths_cost_no_more_than_the_input() {
    let header = sample_header(Order::Little).encode().unwrap();
    // Slack for the fixed-size bookkeeping (the catalog of built-in events, the decoder) and
    // the first read step.
    let slack = 16 * 1024;

    // A header that claims 16 MiB but has 200 bytes.
    let mut claims_big_header = header.clone();
    claims_big_header[16..20].copy_from_slice(&(1u32 << 24).to_le_bytes());
    claims_big_header.resize(200, 0);
    // A header that claims 16 MiB blocks followed by 3000 bytes; its CRC then fails, so patch
    // the block size and fix the CRC to make the lie believable.
    let mut claims_big_blocks = header.clone();
    claims_big_blocks[20..24].copy_from_slice(&(1u32 << 24).to_le_bytes());
    let n = claims_big_blocks.len();
    let crc = crc32fast::hash(&claims_big_blocks[..n - 4]);
    claims_big_blocks[n - 4..].copy_from_slice(&crc.to_le_bytes());
    claims_big_blocks.extend(vec![0xAB; 3000]);
    // A whole, honest stream.
    let honest = sample_stream(Order::Big);

    for (name, input) in [("big header", &claims_big_header), ("big blocks", &claims_big_blocks), ("honest", &honest)] {
        let peak = peak_while_decoding(input);
        assert!(peak <= 2 * input.len() + slack, "{name}: {peak} bytes allocated for {} bytes of input", input.len());
    }
}
