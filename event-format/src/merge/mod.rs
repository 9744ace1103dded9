//! The events of one or more logs in time order, with bounded memory: the one merge by time
//! of every reader that needs one timeline (event-dump's exports and `latency`, the typed
//! reader's reading by time, `Reader::by_time` in event-runtime; `print` merges
//! its rendered lines by the same [`Watermark`] and tie order).
//!
//! Each thread's records are in time order within a log, but blocks of different threads
//! arrive in the order they were handed on (or thread by thread, from a ring). The merge
//! hands on, after each block, every record that no later block can precede, by the logs'
//! block indexes ([`Watermark`]), and holds decoded blocks in a window of at most
//! [`WINDOW_BYTES`] of records, handing on the earliest event whenever the window is full,
//! and everything at the end: the order is exact whenever the log's disorder fits in the
//! window (a whole default ring does), and memory never grows with the log. A record handed
//! on after a later one is counted ([`Merge::out_of_order`]). Several logs (several
//! processes) merge on wall-clock time. Equal times keep the order docs/FORMAT.md
//! ("Merging") states.
//!
//! Records are delimited by the one walk docs/FORMAT.md defines ([`RecordIter`]) and named by
//! a [`Catalog`] of each log's sets, as every reader does: a bad record is counted and
//! skipped by its length, and the block goes on. A block's records are walked once on entry
//! (to count them and what breaks the format) and then resumed record by record. What each
//! log lost and what is wrong with it is counted in its [`Ledger`] as the blocks are read
//! (blocks, damage, records that cannot be delimited) and as the records are handed on
//! (events, unknown codes, bad arguments). What is found when a block is read (its losses,
//! the blocks missing before it, damage, records that cannot be delimited) is handed on then,
//! before the events after it.
//!
//! ```
//! use event_format::merge::{Item, Merge};
//!
//! let stream = event_format::testing::sample_stream(event_format::wire::Order::Little);
//! let log = event_format::decode::Decoder::new(&stream[..]).unwrap();
//! let mut merge = Merge::new(vec![log]);
//! let (mut events, mut last) = (0, 0);
//! while let Some(item) = merge.next_item() {
//!     if let Item::Event { event, .. } = item {
//!         assert!(event.time >= last, "in time order");
//!         (events, last) = (events + 1, event.time);
//!     }
//! }
//! assert!(events > 0);
//! assert_eq!(merge.out_of_order(), 0);
//! assert_eq!(merge.ledgers()[0].events(), events);
//! ```

mod watermark;

pub use watermark::Watermark;

use crate::decode::{Block, BlockError, BlockSource, BlockStart, Catalog, Decoder, Entry, Event};
use crate::ledger::{Ledger, Step};
use crate::log::Log;
use crate::read_at::ReadAt;
use crate::ring::{RingBlocks, RingFindings};
use crate::wire::{Clock, RecordError, RecordIter};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// The most record bytes the merge holds.
pub const WINDOW_BYTES: usize = 256 << 20;

/// What the merge hands on, in order. `log` is the log's place in the list given to
/// [`Merge::new`].
#[derive(Debug)]
pub enum Item<'a> {
    /// An event, in time order.
    Event {
        /// Its log.
        log: usize,
        /// The event.
        event: Event<'a>,
    },
    /// A record of a code that no set of its log and no built-in event describes, in time
    /// order: skipped by its length.
    Unknown {
        /// Its log.
        log: usize,
        /// The thread whose block holds it.
        thread: u64,
        /// Its time in ticks.
        time: u64,
        /// Its wire code.
        code: u16,
        /// Its argument bytes.
        args: &'a [u8],
    },
    /// Events lost by `thread` (a block header's `lost` field), handed on when the block is
    /// read.
    Lost {
        /// Its log.
        log: usize,
        /// The thread.
        thread: u64,
        /// How many.
        count: u64,
    },
    /// Blocks of `thread` missing before the block just read (its sequence number jumps past
    /// the highest of its thread's earlier blocks).
    Missing {
        /// Its log.
        log: usize,
        /// The thread.
        thread: u64,
        /// How many blocks.
        blocks: u64,
    },
    /// A record that breaks the format: when its block is read for one that cannot be
    /// delimited, in time order for one whose arguments do not fit its format.
    Bad {
        /// Its log.
        log: usize,
        /// The thread whose block holds it.
        thread: u64,
        /// What is wrong.
        error: RecordError,
    },
    /// A block that failed its checks, handed on when it is read.
    Damaged {
        /// Its log.
        log: usize,
        /// What is wrong.
        error: BlockError,
    },
}

/// What a merge reads: a [`BlockSource`], and what its reader knows beside the blocks.
pub trait Source: BlockSource {
    /// Where its blocks start and when they say their records do ([`Log::take_index`]):
    /// taken once, by [`Merge::new`]. `None` (the default): the window alone orders.
    fn take_index(&mut self) -> Option<Vec<BlockStart>> {
        None
    }

    /// For a ring file, what its reader found (the blocks it left out as damaged, what its
    /// rings overwrote): counted in the log's ledger at its end. `None` by default.
    fn ring_findings(&self) -> Option<&RingFindings> {
        None
    }

    /// The ledger its counts start from ([`Log::ledger`]: a recording of segments knows its
    /// segments before a block is read). By default, an empty one of its format.
    fn ledger(&self) -> Ledger {
        Ledger::new(self.header().format)
    }

    /// Where each of its segments starts in the positions of its index ([`Log::segment_starts`]):
    /// a block's place is its segment's start plus its offset. By default one segment at 0.
    fn segment_starts(&self) -> Vec<u64> {
        vec![0]
    }
}

impl Source for Log {
    fn take_index(&mut self) -> Option<Vec<BlockStart>> {
        Log::take_index(self)
    }

    fn ring_findings(&self) -> Option<&RingFindings> {
        Log::ring_findings(self)
    }

    fn ledger(&self) -> Ledger {
        Log::ledger(self)
    }

    fn segment_starts(&self) -> Vec<u64> {
        Log::segment_starts(self)
    }
}

impl<R: std::io::Read> Source for Decoder<R> {}

impl<R: ReadAt> Source for RingBlocks<R> {
    fn ring_findings(&self) -> Option<&RingFindings> {
        Some(self.findings())
    }
}

impl<S: Source + ?Sized> Source for &mut S {
    fn take_index(&mut self) -> Option<Vec<BlockStart>> {
        (**self).take_index()
    }

    fn ring_findings(&self) -> Option<&RingFindings> {
        (**self).ring_findings()
    }

    fn ledger(&self) -> Ledger {
        (**self).ledger()
    }

    fn segment_starts(&self) -> Vec<u64> {
        (**self).segment_starts()
    }
}

impl<S: Source + ?Sized> Source for Box<S> {
    fn take_index(&mut self) -> Option<Vec<BlockStart>> {
        (**self).take_index()
    }

    fn ring_findings(&self) -> Option<&RingFindings> {
        (**self).ring_findings()
    }

    fn ledger(&self) -> Ledger {
        (**self).ledger()
    }

    fn segment_starts(&self) -> Vec<u64> {
        (**self).segment_starts()
    }
}

/// What is found when a block is read, handed on before the events after it.
#[derive(Debug)]
enum Found {
    Lost { log: usize, thread: u64, count: u64 },
    Missing { log: usize, thread: u64, blocks: u64 },
    Bad { log: usize, thread: u64, error: RecordError },
    Damaged { log: usize, error: BlockError },
}

impl Found {
    fn item<'a>(self) -> Item<'a> {
        match self {
            Found::Lost { log, thread, count } => Item::Lost { log, thread, count },
            Found::Missing { log, thread, blocks } => Item::Missing { log, thread, blocks },
            Found::Bad { log, thread, error } => Item::Bad { log, thread, error },
            Found::Damaged { log, error } => Item::Damaged { log, error },
        }
    }
}

#[derive(Debug)]
struct Held {
    block: Block,
    file: usize,
    /// Where its next record starts, and the time its delta counts from.
    pos: usize,
    time: u64,
    /// Its records not yet handed on.
    remaining: usize,
    /// For a block whose times go backwards (a clock stepped back): its records as (time,
    /// offset), sorted, handed on by index instead of in place.
    sorted: Option<Vec<(u64, usize)>>,
    /// What `peek` gave when the block was last pushed on the heap.
    next: Option<(usize, u64)>,
}

impl Held {
    /// Its next record: (offset, time); `None` when all are handed on. Records that break the
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

impl<S> std::fmt::Debug for Merge<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Merge")
            .field("logs", &self.logs.len())
            .field("held_bytes", &self.held_bytes)
            .field("out_of_order", &self.out_of_order)
            .finish_non_exhaustive()
    }
}

/// Held blocks by their next record: (key, log, thread, block sequence, block's place in its
/// log, offset, slot); key is ticks for one log, wall-clock nanoseconds for several. The
/// fields after the key are the tie order of equal times that docs/FORMAT.md ("Merging")
/// states: the log's place in the list, then the thread id, the block's sequence number, the
/// block's place in the log (a repeated block's copies in the order they come) and the
/// record's offset.
type Heap = BinaryHeap<Reverse<(i128, usize, u64, u64, u64, usize, usize)>>;

/// A merge by time of the blocks of `S` sources: a lending iterator
/// (`while let Some(item) = merge.next_item() { .. }`); see the module docs.
///
/// Each held block is a cursor over its records (they are in time order within the block),
/// and the heap holds one entry per block: memory is the records' bytes and a few words per
/// block, whatever the number of records. A source that gives its block index
/// ([`Source::take_index`]: an indexed [`Log`]) is merged by it as it
/// is read; any other is held up to the window.
pub struct Merge<S> {
    logs: Vec<S>,
    catalogs: Vec<Catalog>,
    clocks: Vec<Clock>,
    /// Several logs: keys are wall-clock nanoseconds.
    several: bool,
    mark: Watermark,
    ledgers: Vec<Ledger>,
    /// The latest key handed on, and the events handed on after a later one.
    last: i128,
    out_of_order: u64,
    held: Vec<Option<Held>>,
    free: Vec<usize>,
    heap: Heap,
    held_bytes: usize,
    window: usize,
    done: Vec<bool>,
    last_key: Vec<i128>,
    found: VecDeque<Found>,
    /// A slot whose last record was handed on: freed on the next call (the item borrowed it).
    spent: Option<usize>,
    /// [`Source::ring_findings`] of the logs (kept here, so that reading needs no more than a
    /// [`BlockSource`]).
    findings: fn(&S) -> Option<&RingFindings>,
    /// [`Source::segment_starts`] of each log: a block's place in its log's index is its
    /// segment's start plus its offset.
    starts: Vec<Vec<u64>>,
}

impl<S: Source> Merge<S> {
    /// A merge of `logs`, on wall-clock time when there are several, holding at most
    /// [`WINDOW_BYTES`] of records.
    pub fn new(logs: Vec<S>) -> Merge<S> {
        Merge::with_window(logs, WINDOW_BYTES)
    }

    /// A merge that holds at most `window` bytes of records.
    pub fn with_window(mut logs: Vec<S>, window: usize) -> Merge<S> {
        let several = logs.len() > 1;
        let clocks: Vec<Clock> = logs.iter().map(|l| l.header().clock).collect();
        let mark = Watermark::new(logs.iter_mut().map(|l| l.take_index()).collect(), several.then(|| clocks.clone()));
        let n = logs.len();
        Merge {
            catalogs: logs.iter().map(|l| Catalog::new(&l.header().sets)).collect(),
            ledgers: logs.iter().map(|l| l.ledger()).collect(),
            starts: logs.iter().map(|l| l.segment_starts()).collect(),
            logs,
            clocks,
            several,
            mark,
            last: i128::MIN,
            out_of_order: 0,
            held: Vec::new(),
            free: Vec::new(),
            heap: BinaryHeap::new(),
            held_bytes: 0,
            window,
            done: vec![false; n],
            last_key: vec![i128::MIN; n],
            found: VecDeque::new(),
            spent: None,
            findings: |log| log.ring_findings(),
        }
    }
}

impl<S: BlockSource> Merge<S> {
    /// The logs, in the order given.
    pub fn logs(&self) -> &[S] {
        &self.logs
    }

    /// Each log's ledger, in the order the logs were given: complete once
    /// [`next_item`](Merge::next_item) returned `None`.
    pub fn ledgers(&self) -> &[Ledger] {
        &self.ledgers
    }

    /// The ledgers, taken.
    pub fn into_ledgers(self) -> Vec<Ledger> {
        self.ledgers
    }

    /// Events handed on after an event of a later time: the logs' disorder was more than the
    /// window holds, or a block held records earlier than its `base_time` ([`early`](Merge::early)).
    pub fn out_of_order(&self) -> u64 {
        self.out_of_order
    }

    /// Whether a block held records earlier than its `base_time` (a writer other than the
    /// reference one, or one before 2026-11-24 whose thread's clock stepped back).
    pub fn early(&self) -> bool {
        self.mark.any_early()
    }

    /// The next item in time order; `None` when every log is read and every record handed on.
    #[allow(clippy::should_implement_trait)] // a lending iterator: the item borrows the merge
    pub fn next_item(&mut self) -> Option<Item<'_>> {
        if let Some(slot) = self.spent.take() {
            self.held[slot] = None;
            self.free.push(slot);
        }
        loop {
            if let Some(found) = self.found.pop_front() {
                return Some(found.item());
            }
            // Every record of a key below the mark's: no later block can precede it. (The
            // heap's least key only grows as records are handed on, so this holds until the
            // next block is read, as when it was checked right after it.)
            let below_mark =
                self.mark.key().is_some_and(|key| self.heap.peek().is_some_and(|Reverse(top)| top.0 < key));
            let reading = self.done.iter().any(|d| !d);
            if below_mark || self.held_bytes > self.window || (!reading && !self.heap.is_empty()) {
                if let Some(next) = self.take_next() {
                    return self.hand_on(next);
                }
                continue;
            }
            if !reading {
                return None;
            }
            self.read();
        }
    }

    /// Reads a block from the log that is furthest behind.
    fn read(&mut self) {
        let Some(f) = (0..self.logs.len()).filter(|&f| !self.done[f]).min_by_key(|&f| self.last_key[f]) else {
            return;
        };
        let ledger = &mut self.ledgers[f];
        match self.logs[f].next_block() {
            None => {
                self.done[f] = true;
                if let Some(findings) = (self.findings)(&self.logs[f]) {
                    ledger.ring_file(findings);
                }
            }
            Some(Err(error)) => {
                let at = place(&self.starts[f], error.segment, error.offset);
                self.mark.merged(f, at, None);
                ledger.damaged(&error);
                self.found.push_back(Found::Damaged { log: f, error });
            }
            Some(Ok(block)) => {
                let clock = self.clocks[f];
                let (thread, sequence) = (block.header.thread, block.header.sequence);
                if let Step::Ahead { skipped } = ledger.block(&block)
                    && skipped > 0
                {
                    self.found.push_back(Found::Missing { log: f, thread, blocks: skipped });
                }
                if block.header.lost > 0 {
                    self.found.push_back(Found::Lost { log: f, thread, count: block.header.lost });
                }
                let mut count = 0;
                let (mut previous, mut backwards, mut earliest) = (0, false, None::<u64>);
                for record in block.records() {
                    match record {
                        Ok(record) => {
                            let key = if self.several { clock.wall_ns(record.time) } else { i128::from(record.time) };
                            self.last_key[f] = self.last_key[f].max(key);
                            count += 1;
                            backwards |= record.time < previous;
                            previous = record.time;
                            earliest = Some(earliest.map_or(record.time, |e| e.min(record.time)));
                        }
                        // A record that cannot be delimited or timed is counted right away (it
                        // has no time); the walk goes on where the format says it can.
                        Err(error) => {
                            ledger.entry(thread, sequence, &Entry::Bad(error.clone()));
                            self.found.push_back(Found::Bad { log: f, thread, error });
                        }
                    }
                }
                let at = place(&self.starts[f], block.segment, block.offset);
                self.mark.merged(f, at, Some((block.header.base_time, earliest)));
                if count == 0 {
                    return;
                }
                let slot = self.free.pop().unwrap_or_else(|| {
                    self.held.push(None);
                    self.held.len() - 1
                });
                self.held_bytes += block.records.len();
                let sorted = backwards.then(|| {
                    let mut v: Vec<(u64, usize)> =
                        block.records().filter_map(Result::ok).map(|r| (r.time, r.offset)).collect();
                    v.sort_unstable();
                    v
                });
                let mut h =
                    Held { time: block.header.base_time, block, file: f, pos: 0, remaining: count, sorted, next: None };
                push(&mut self.heap, &mut h, slot, self.several.then_some(&clock));
                self.held[slot] = Some(h);
            }
        }
    }

    /// Takes the earliest record held off the heap and moves its block past it: `None` for
    /// none (or a stale entry).
    fn take_next(&mut self) -> Option<Next> {
        let Reverse((key, file, thread, sequence, _, _, slot)) = self.heap.pop()?;
        let h = self.held[slot].as_mut()?;
        let (offset, time) = h.next?;
        // peek() found a whole record at `offset` (not a TimeExtend, which is never yielded):
        // the walk started there yields it first. Its time is peek's, which counted from the
        // block's start.
        let Some(Ok(record)) = RecordIter::new(&h.block.records[offset..], h.block.order, 0).next() else {
            return None;
        };
        h.pos = offset + crate::wire::RECORD_HEADER_LEN + record.args.len();
        h.time = time;
        h.remaining -= 1;
        if h.remaining == 0 {
            self.held_bytes -= h.block.records.len();
            self.spent = Some(slot);
        } else {
            let clock = self.clocks[file];
            push(&mut self.heap, h, slot, self.several.then_some(&clock));
        }
        Some(Next { key, file, thread, sequence, slot, offset, time })
    }

    /// The item of the record `take_next` took, counted in its ledger.
    fn hand_on(&mut self, next: Next) -> Option<Item<'_>> {
        let Next { key, file, thread, sequence, slot, offset, time } = next;
        let h = self.held[slot].as_ref()?;
        // The walk `take_next` made of the same bytes: it yields the record again.
        let Some(Ok(mut record)) = RecordIter::new(&h.block.records[offset..], h.block.order, 0).next() else {
            return None;
        };
        (record.offset, record.time) = (offset, time);
        let entry = self.catalogs[file].entry(record, thread, h.block.order);
        self.ledgers[file].entry(thread, sequence, &entry);
        let args = record.args;
        Some(match entry {
            Entry::Event(event) => {
                if key < self.last {
                    self.out_of_order += 1;
                } else {
                    self.last = key;
                }
                Item::Event { log: file, event }
            }
            Entry::Unknown { code, time, .. } => Item::Unknown { log: file, thread, time, code, args },
            Entry::Bad(error) => Item::Bad { log: file, thread, error },
        })
    }
}

/// The record `take_next` took: its merge key, log, thread, block sequence, the slot of its
/// block, and its offset and time there.
#[derive(Clone, Copy, Debug)]
struct Next {
    key: i128,
    file: usize,
    thread: u64,
    sequence: u64,
    slot: usize,
    offset: usize,
    time: u64,
}

fn push(heap: &mut Heap, h: &mut Held, slot: usize, wall: Option<&Clock>) {
    h.next = h.peek();
    if let Some((offset, time)) = h.next {
        let key = wall.map_or(i128::from(time), |clock| clock.wall_ns(time));
        let b = &h.block;
        heap.push(Reverse((key, h.file, b.header.thread, b.header.sequence, b.index, offset, slot)));
    }
}

/// The place in a log's index of a block at `offset` in its segment `segment`, where `starts`
/// are its segments' starts ([`Source::segment_starts`]).
fn place(starts: &[u64], segment: u32, offset: u64) -> u64 {
    starts.get(segment as usize).copied().unwrap_or(0) + offset
}
