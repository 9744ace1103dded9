//! Events of one or more logs in time order, with bounded memory.
//!
//! Each thread's records are in time order within a log, but blocks of different threads
//! arrive in the order they were handed on (or thread by thread, from a ring). The merge
//! emits, after each block, every record that no later block can precede, by the logs' block
//! indexes ([`Watermark`]), and holds decoded blocks in a window of at most [`WINDOW_BYTES`]
//! of records, emitting the earliest event whenever the window is full, and everything at
//! the end: the order is exact whenever the log's disorder fits in the window (a whole
//! default ring does), and memory never grows with the log. A record emitted after a later
//! one is counted ([`Merged`]). Several logs (several processes) merge on wall-clock time.
//!
//! Records are delimited by the one walk docs/FORMAT.md defines ([`RecordIter`]) and named by
//! the catalog ([`Catalog::entry`](event_format::decode::Catalog::entry)), as every reader
//! does: a bad record is reported and skipped by its length, and the block goes on. A block's
//! records are walked once on entry (to count them and report what breaks the format) and
//! then resumed record by record: the walk restarts at any record boundary given the running
//! time there.

use crate::log::{DumpError, Log};
use crate::watermark::Watermark;
use event_format::decode::{Block, BlockSource, Entry, Event};
use event_format::wire::RecordIter;
use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::ControlFlow;

/// The most record bytes the merge holds.
pub(crate) const WINDOW_BYTES: usize = 256 << 20;

/// What the merge hands on, in order.
pub(crate) enum Item<'a> {
    /// An event of log `file`.
    Event { file: usize, event: Event<'a> },
    /// A record whose code this reader does not know (skipped by its length). The exports
    /// count these three; `print`, which says what each was, reads through the pipeline.
    Unknown,
    /// A record that breaks the format.
    Bad,
    /// A block that failed its checks (reported as it is read, not in time order).
    Damaged,
}

struct Held {
    block: Block,
    file: usize,
    /// Where its next record starts, and the time its delta counts from.
    pos: usize,
    time: u64,
    /// Its records not yet emitted.
    remaining: usize,
    /// For a block whose times go backwards (a clock stepped back): its records as (time,
    /// offset), sorted, emitted by index instead of in place.
    sorted: Option<Vec<(u64, usize)>>,
    /// What `peek` gave when the block was last pushed on the heap.
    next: Option<(usize, u64)>,
}

impl Held {
    /// Its next record: (offset, time); `None` when all are emitted. Records that break the
    /// format were reported when the block came in and are passed over.
    fn peek(&self) -> Option<(usize, u64)> {
        if self.remaining == 0 {
            return None;
        }
        if let Some(sorted) = &self.sorted {
            let &(time, offset) = sorted.get(sorted.len() - self.remaining)?;
            return Some((offset, time));
        }
        let record =
            RecordIter::new(&self.block.records[self.pos..], self.block.order, self.time).find_map(Result::ok)?;
        Some((self.pos + record.offset, record.time))
    }
}

/// What a merge could not put in time order.
#[derive(Debug, Default)]
pub(crate) struct Merged {
    /// Records handed on after a record of a later time: the logs' disorder was more than the
    /// window holds, or a block held records earlier than its `base_time`.
    pub(crate) out_of_order: u64,
    /// Whether a block held records earlier than its `base_time` (a writer other than the
    /// reference one, or one before 2026-11-24 whose thread's clock stepped back).
    pub(crate) early: bool,
}

/// Merges the events of `logs` and hands each to `visit`, until it breaks or all are done.
/// Logs opened with an index ([`Log::index`]) are merged by it as they are read.
///
/// Each held block is a cursor over its records (they are in time order within the block),
/// and the heap holds one entry per block: memory is the records' bytes and a few words per
/// block, whatever the number of records.
pub(crate) fn merge(logs: &mut [Log], mut visit: impl FnMut(Item<'_>) -> ControlFlow<()>) -> Result<Merged, DumpError> {
    let several = logs.len() > 1;
    let wall = several.then(|| logs.iter().map(|l| l.header().clock).collect());
    let mut mark = Watermark::new(logs.iter_mut().map(|l| l.take_index()).collect(), wall);
    // The latest key handed on, and the records handed on after a later one; `None`: an
    // item reported as it is read, not in time order.
    let (last, out_of_order) = (Cell::new(i128::MIN), Cell::new(0u64));
    let merged = |mark: &Watermark| Merged { out_of_order: out_of_order.get(), early: mark.any_early() };
    let mut visit = |key: Option<i128>, item: Item<'_>| {
        if let Some(key) = key {
            if key < last.get() {
                out_of_order.set(out_of_order.get() + 1);
            } else {
                last.set(key);
            }
        }
        visit(item)
    };
    let mut held: Vec<Option<Held>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut heap: Heap = BinaryHeap::new();
    let mut held_bytes = 0usize;
    let mut done = vec![false; logs.len()];
    let mut last_key = vec![i128::MIN; logs.len()];
    // Read from the log that is furthest behind.
    while let Some(f) = (0..logs.len()).filter(|&f| !done[f]).min_by_key(|&f| last_key[f]) {
        match logs[f].next_block() {
            None => done[f] = true,
            Some(Err(e)) => {
                mark.merged(f, e.offset, None);
                // Reported as it is read, not in time order.
                if visit(None, Item::Damaged).is_break() {
                    return Ok(merged(&mark));
                }
            }
            Some(Ok(block)) => {
                let clock = logs[f].header().clock;
                let mut count = 0;
                let (mut previous, mut backwards, mut earliest) = (0, false, None::<u64>);
                for record in block.records() {
                    match record {
                        Ok(record) => {
                            let key = if several { clock.wall_ns(record.time) } else { i128::from(record.time) };
                            last_key[f] = last_key[f].max(key);
                            count += 1;
                            backwards |= record.time < previous;
                            previous = record.time;
                            earliest = Some(earliest.map_or(record.time, |e| e.min(record.time)));
                        }
                        // A record that cannot be delimited or timed is reported right away
                        // (not in time order); the walk goes on where the format says it can.
                        Err(_) => {
                            if visit(None, Item::Bad).is_break() {
                                return Ok(merged(&mark));
                            }
                        }
                    }
                }
                mark.merged(f, block.offset, Some((block.header.base_time, earliest)));
                if count == 0 {
                    continue;
                }
                let slot = free.pop().unwrap_or_else(|| {
                    held.push(None);
                    held.len() - 1
                });
                held_bytes += block.records.len();
                let sorted = backwards.then(|| {
                    let mut v: Vec<(u64, usize)> =
                        block.records().filter_map(Result::ok).map(|r| (r.time, r.offset)).collect();
                    v.sort_unstable();
                    v
                });
                let mut h =
                    Held { time: block.header.base_time, block, file: f, pos: 0, remaining: count, sorted, next: None };
                push(&mut heap, &mut h, slot, several.then_some(&clock));
                held[slot] = Some(h);
            }
        }
        // Every record of a key below the mark's: no later block can precede it.
        if let Some(key) = mark.key() {
            while heap.peek().is_some_and(|Reverse(top)| top.0 < key) {
                if emit_one(logs, &mut heap, &mut held, &mut free, &mut held_bytes, several, &mut visit).is_break() {
                    return Ok(merged(&mark));
                }
            }
        }
        while held_bytes > WINDOW_BYTES {
            if emit_one(logs, &mut heap, &mut held, &mut free, &mut held_bytes, several, &mut visit).is_break() {
                return Ok(merged(&mark));
            }
        }
    }
    while !heap.is_empty() {
        if emit_one(logs, &mut heap, &mut held, &mut free, &mut held_bytes, several, &mut visit).is_break() {
            return Ok(merged(&mark));
        }
    }
    Ok(merged(&mark))
}

/// Held blocks by their next record: (key, log, thread, block sequence, offset, slot); key
/// is ticks for one log, wall-clock nanoseconds for several. The fields after the key are the
/// tie order of equal times that docs/FORMAT.md ("Merging") states: the log's place on the
/// command line, then the thread id, the block's sequence number and the record's offset.
type Heap = BinaryHeap<Reverse<(i128, usize, u64, u64, usize, usize)>>;

fn push(heap: &mut Heap, h: &mut Held, slot: usize, wall: Option<&event_format::wire::Clock>) {
    h.next = h.peek();
    if let Some((offset, time)) = h.next {
        let key = wall.map_or(i128::from(time), |clock| clock.wall_ns(time));
        heap.push(Reverse((key, h.file, h.block.header.thread, h.block.header.sequence, offset, slot)));
    }
}

fn emit_one(
    logs: &[Log],
    heap: &mut Heap,
    held: &mut [Option<Held>],
    free: &mut Vec<usize>,
    held_bytes: &mut usize,
    several: bool,
    visit: &mut impl FnMut(Option<i128>, Item<'_>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let Some(Reverse((key, file, thread, _, _, slot))) = heap.pop() else { return ControlFlow::Continue(()) };
    let Some(h) = held[slot].as_mut() else { return ControlFlow::Continue(()) };
    let Some((offset, time)) = h.next else { return ControlFlow::Continue(()) };
    // peek() found a whole record at `offset` (not a TimeExtend, which is never yielded): the
    // walk started there yields it first. Its time is peek's, which counted from the block's
    // start.
    let Some(Ok(mut record)) = RecordIter::new(&h.block.records[offset..], h.block.order, 0).next() else {
        return ControlFlow::Continue(());
    };
    (record.offset, record.time) = (offset, time);
    let end = offset + event_format::wire::RECORD_HEADER_LEN + record.args.len();
    let flow = match logs[h.file].catalog().entry(record, thread, h.block.order) {
        Entry::Event(event) => visit(Some(key), Item::Event { file, event }),
        Entry::Unknown { .. } => visit(Some(key), Item::Unknown),
        Entry::Bad(_) => visit(Some(key), Item::Bad),
    };
    h.pos = end;
    h.time = time;
    h.remaining -= 1;
    if h.remaining == 0 {
        *held_bytes -= h.block.records.len();
        held[slot] = None;
        free.push(slot);
    } else {
        let clock = logs[file].header().clock;
        push(heap, h, slot, several.then_some(&clock));
    }
    flow
}
