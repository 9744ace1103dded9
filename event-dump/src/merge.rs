//! Events of one or more logs in time order, with bounded memory.
//!
//! Each thread's records are in time order within a log, but blocks of different threads
//! arrive in the order they were handed on (or thread by thread, from a ring). The merge
//! holds decoded blocks in a window of at most [`WINDOW_BYTES`] of records and emits the
//! earliest event whenever the window is full, and everything at the end: the order is exact
//! whenever the log's disorder fits in the window (a whole default ring does), and memory
//! never grows with the log. Several logs (several processes) merge on wall-clock time.

use crate::log::{DumpError, Log};
use event_format::decode::{Block, BlockError, Event};
use event_format::wire::{RECORD_HEADER_LEN, RecordError, validate_args};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::ControlFlow;

/// The most record bytes the merge holds.
pub(crate) const WINDOW_BYTES: usize = 256 << 20;

/// What the merge hands on, in order.
pub(crate) enum Item<'a> {
    /// An event of log `file`.
    Event { file: usize, event: Event<'a> },
    /// A record whose code this reader does not know (skipped by its length).
    Unknown { file: usize, code: u16 },
    /// A record that breaks the format.
    Bad { file: usize, thread: u64, error: RecordError },
    /// A block that failed its checks (reported as it is read, not in time order).
    Damaged { file: usize, error: BlockError },
}

struct Held {
    block: Block,
    file: usize,
    /// Its records not yet emitted.
    remaining: usize,
}

/// Merges the events of `logs` and hands each to `visit`, until it breaks or all are done.
pub(crate) fn merge(logs: &mut [Log], mut visit: impl FnMut(Item<'_>) -> ControlFlow<()>) -> Result<(), DumpError> {
    let several = logs.len() > 1;
    let mut held: Vec<Option<Held>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    // (key, file, thread, block sequence, offset, time, slot): key is ticks for one log,
    // wall-clock nanoseconds for several.
    let mut heap: Heap = BinaryHeap::new();
    let mut held_bytes = 0usize;
    let mut done = vec![false; logs.len()];
    let mut last_key = vec![i128::MIN; logs.len()];
    // Read from the log that is furthest behind.
    while let Some(f) = (0..logs.len()).filter(|&f| !done[f]).min_by_key(|&f| last_key[f]) {
        match logs[f].decoder.next_block() {
            None => done[f] = true,
            Some(Err(error)) => {
                if visit(Item::Damaged { file: f, error }).is_break() {
                    return Ok(());
                }
            }
            Some(Ok(block)) => {
                let clock = logs[f].header().clock;
                let slot = free.pop().unwrap_or_else(|| {
                    held.push(None);
                    held.len() - 1
                });
                let mut count = 0;
                for record in block.records() {
                    let Ok(record) = record else {
                        // A record that breaks the format ends the block's records; it is
                        // reported in order after the records before it.
                        break;
                    };
                    let key = if several { clock.wall_ns(record.time) } else { i128::from(record.time) };
                    heap.push(Reverse((key, f, block.header.thread, block.header.sequence, record.offset, record.time, slot)));
                    last_key[f] = last_key[f].max(key);
                    count += 1;
                }
                // A record error (after the good ones) is reported right away.
                if let Some(Err(error)) = block.records().find(Result::is_err)
                    && visit(Item::Bad { file: f, thread: block.header.thread, error }).is_break()
                {
                    return Ok(());
                }
                if count == 0 {
                    free.push(slot);
                    continue;
                }
                held_bytes += block.records.len();
                held[slot] = Some(Held { block, file: f, remaining: count });
            }
        }
        while held_bytes > WINDOW_BYTES {
            if emit_one(logs, &mut heap, &mut held, &mut free, &mut held_bytes, &mut visit).is_break() {
                return Ok(());
            }
        }
    }
    while !heap.is_empty() {
        if emit_one(logs, &mut heap, &mut held, &mut free, &mut held_bytes, &mut visit).is_break() {
            return Ok(());
        }
    }
    Ok(())
}

/// Pending records: (key, log, thread, block sequence, offset, time, slot of its block).
type Heap = BinaryHeap<Reverse<(i128, usize, u64, u64, usize, u64, usize)>>;

fn emit_one(
    logs: &[Log],
    heap: &mut Heap,
    held: &mut [Option<Held>],
    free: &mut Vec<usize>,
    held_bytes: &mut usize,
    visit: &mut impl FnMut(Item<'_>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let Some(Reverse((_, file, thread, _, offset, time, slot))) = heap.pop() else { return ControlFlow::Continue(()) };
    let flow = {
        let Some(h) = held[slot].as_ref() else { return ControlFlow::Continue(()) };
        let block = &h.block;
        let o = block.order;
        let rest = &block.records[offset..];
        let code = o.u16(rest);
        let len = usize::from(o.u16(&rest[2..]));
        let args = &rest[RECORD_HEADER_LEN..len];
        let log = &logs[h.file];
        match log.catalog.get(code) {
            None => visit(Item::Unknown { file, code }),
            Some(desc) => match validate_args(&desc.format, args, o) {
                Ok(()) => visit(Item::Event { file, event: Event { desc, time, thread, args, order: o } }),
                Err(why) => visit(Item::Bad { file, thread, error: RecordError::BadArguments { offset, code, why } }),
            },
        }
    };
    if let Some(h) = held[slot].as_mut() {
        h.remaining -= 1;
        if h.remaining == 0 {
            *held_bytes -= h.block.records.len();
            held[slot] = None;
            free.push(slot);
        }
    }
    flow
}
