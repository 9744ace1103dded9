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
//! does: a bad record is counted and skipped by its length, and the block goes on. A block's
//! records are walked once on entry (to count them and what breaks the format) and then
//! resumed record by record: the walk restarts at any record boundary given the running time
//! there. What each log lost and what is wrong with it is counted in its [`Ledger`] as the
//! blocks are read (blocks, damage, records that cannot be delimited) and as the records are
//! handed on (events, unknown codes, bad arguments), and returned in [`Merged`].

use crate::log::{DumpError, Log};
use crate::watermark::Watermark;
use event_format::decode::{Block, BlockSource, Entry, Event};
use event_format::ledger::Ledger;
use event_format::wire::RecordIter;
use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::ControlFlow;

/// The most record bytes the merge holds.
pub(crate) const WINDOW_BYTES: usize = 256 << 20;

/// What the merge hands on, in order: an event of log `file`. (What is not an event, the
/// logs' ledgers count.)
pub(crate) struct Item<'a> {
    pub(crate) file: usize,
    pub(crate) event: Event<'a>,
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

/// What a merge could not put in time order, and what each log lost or held that is wrong.
#[derive(Debug)]
pub(crate) struct Merged {
    /// Each log's ledger, in the order the logs were given: complete when the merge was not
    /// stopped.
    pub(crate) ledgers: Vec<Ledger>,
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
    // A block's place in its log, as the index gives it: its segment's start plus its offset.
    let starts: Vec<Vec<u64>> = logs.iter().map(Log::segment_starts).collect();
    let at = |f: usize, segment: u32, offset: u64| starts[f].get(segment as usize).copied().unwrap_or(0) + offset;
    // The latest key handed on, and the events handed on after a later one.
    let (last, out_of_order) = (Cell::new(i128::MIN), Cell::new(0u64));
    let mut ledgers: Vec<Ledger> = logs.iter().map(Log::ledger).collect();
    let merged = |mark: &Watermark, ledgers: Vec<Ledger>| Merged {
        ledgers,
        out_of_order: out_of_order.get(),
        early: mark.any_early(),
    };
    let mut visit = |key: i128, item: Item<'_>| {
        if key < last.get() {
            out_of_order.set(out_of_order.get() + 1);
        } else {
            last.set(key);
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
            None => {
                done[f] = true;
                if let Some(findings) = logs[f].ring_findings() {
                    ledgers[f].ring_file(findings);
                }
            }
            Some(Err(e)) => {
                mark.merged(f, at(f, e.segment, e.offset), None);
                ledgers[f].damaged(&e);
            }
            Some(Ok(block)) => {
                let clock = logs[f].header().clock;
                let (thread, sequence) = (block.header.thread, block.header.sequence);
                ledgers[f].block(&block);
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
                        // A record that cannot be delimited or timed is counted right away (it
                        // has no time); the walk goes on where the format says it can.
                        Err(e) => ledgers[f].entry(thread, sequence, &Entry::Bad(e)),
                    }
                }
                mark.merged(f, at(f, block.segment, block.offset), Some((block.header.base_time, earliest)));
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
                if emit_one(logs, &mut ledgers, &mut heap, &mut held, &mut free, &mut held_bytes, several, &mut visit)
                    .is_break()
                {
                    return Ok(merged(&mark, ledgers));
                }
            }
        }
        while held_bytes > WINDOW_BYTES {
            if emit_one(logs, &mut ledgers, &mut heap, &mut held, &mut free, &mut held_bytes, several, &mut visit)
                .is_break()
            {
                return Ok(merged(&mark, ledgers));
            }
        }
    }
    while !heap.is_empty() {
        if emit_one(logs, &mut ledgers, &mut heap, &mut held, &mut free, &mut held_bytes, several, &mut visit)
            .is_break()
        {
            return Ok(merged(&mark, ledgers));
        }
    }
    Ok(merged(&mark, ledgers))
}

/// Held blocks by their next record: (key, log, thread, block sequence, block's place in its
/// log, offset, slot); key is ticks for one log, wall-clock nanoseconds for several. The
/// fields after the key are the tie order of equal times that docs/FORMAT.md ("Merging")
/// states: the log's place on the command line, then the thread id, the block's sequence
/// number, the block's place in the log (a repeated block's copies in the order they come)
/// and the record's offset.
type Heap = BinaryHeap<Reverse<(i128, usize, u64, u64, u64, usize, usize)>>;

fn push(heap: &mut Heap, h: &mut Held, slot: usize, wall: Option<&event_format::wire::Clock>) {
    h.next = h.peek();
    if let Some((offset, time)) = h.next {
        let key = wall.map_or(i128::from(time), |clock| clock.wall_ns(time));
        let b = &h.block;
        heap.push(Reverse((key, h.file, b.header.thread, b.header.sequence, b.index, offset, slot)));
    }
}

#[allow(clippy::too_many_arguments)]
fn emit_one(
    logs: &[Log],
    ledgers: &mut [Ledger],
    heap: &mut Heap,
    held: &mut [Option<Held>],
    free: &mut Vec<usize>,
    held_bytes: &mut usize,
    several: bool,
    visit: &mut impl FnMut(i128, Item<'_>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let Some(Reverse((key, file, thread, sequence, _, _, slot))) = heap.pop() else {
        return ControlFlow::Continue(());
    };
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
    let entry = logs[h.file].catalog().entry(record, thread, h.block.order);
    ledgers[file].entry(thread, sequence, &entry);
    let flow = match entry {
        Entry::Event(event) => visit(key, Item { file, event }),
        _ => ControlFlow::Continue(()),
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
