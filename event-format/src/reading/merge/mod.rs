//! The events of one or more logs in time order, with bounded memory: the one merge by time
//! of every reader that needs one timeline (event-dump's exports and `latency`, the typed
//! reader's reading by time, `Reader::by_time` in event-runtime). Its ordering, [`Order`]
//! (chains of pieces, the heap, the [`Watermark`], the window and the tie order), is the one
//! `print` merges its rendered lines by too: [`Merge`] gives it decoded blocks, `print`'s
//! pipeline blocks rendered to text on worker threads.
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

mod order;
mod watermark;

pub use order::{At, Keys, Order, Place, Tie, Timed};
pub use watermark::Watermark;

use crate::codec::builtins::BuiltinEvent;
use crate::codec::decode::{Block, BlockError, BlockSource, BlockStart, Catalog, Decoder, Entry, Event};
use crate::codec::read_at::ReadAt;
use crate::codec::ring::{RingBlocks, RingFindings};
use crate::codec::wire::{Clock, RecordError, RecordIter};
use crate::reading::ledger::{Ledger, Step};
use crate::reading::log::Log;
use event_def::builtin::DROPPED;
use std::collections::VecDeque;

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

/// A block the merge holds: a cursor over its records, which are in time order within it.
/// A position is a record's offset in the block, or, for a block whose times go backwards
/// (a clock stepped back), its index among the block's records sorted by time.
#[derive(Debug)]
struct Held {
    block: Block,
    log: usize,
    /// For a block whose times go backwards: its records as (time, offset), sorted.
    sorted: Option<Vec<(u64, usize)>>,
    /// Its first and last records that can be delimited and timed (records that break the
    /// format were reported when the block came in and are passed over).
    first: At,
    last: At,
}

impl Held {
    /// The offset of the record at `pos`.
    fn offset(&self, pos: usize) -> usize {
        self.sorted.as_ref().map_or(pos, |sorted| sorted[pos].1)
    }
}

impl Timed for Held {
    fn tie(&self) -> Tie {
        let h = &self.block.header;
        Tie {
            log: self.log,
            thread: h.thread,
            segment: self.block.segment,
            sequence: h.sequence,
            index: self.block.index,
        }
    }

    fn first(&self) -> At {
        self.first
    }

    fn next(&self, (pos, time): At) -> Option<At> {
        if let Some(sorted) = &self.sorted {
            return sorted.get(pos + 1).map(|&(time, _)| (pos + 1, time));
        }
        if pos == self.last.0 {
            return None;
        }
        let (records, order) = (&self.block.records[..], self.block.order);
        // The walk resumed at the record at `pos` (whose time is `time`), and past it.
        let mut walk = RecordIter::resume(records, order, (pos, 0));
        walk.next()?.ok()?;
        let record = RecordIter::resume(records, order, (walk.position().0, time)).find_map(Result::ok)?;
        Some((record.offset, record.time))
    }

    fn last(&self) -> At {
        self.last
    }

    /// The window counts a block's record bytes.
    fn bytes(&self) -> usize {
        self.block.records.len()
    }
}

impl<S> std::fmt::Debug for Merge<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Merge")
            .field("logs", &self.logs.len())
            .field("out_of_order", &self.out_of_order)
            .finish_non_exhaustive()
    }
}

/// A merge by time of the blocks of `S` sources: a lending iterator
/// (`while let Some(item) = merge.next_item() { .. }`); see the module docs.
///
/// Each held block is a cursor over its records (they are in time order within the block),
/// ordered by the one [`Order`] of the workspace's merges: memory is the records' bytes and a
/// few words per block, whatever the number of records. A source that gives its block index
/// ([`Source::take_index`]: an indexed [`Log`]) is merged by it as it is read; any other is
/// held up to the window.
pub struct Merge<S> {
    logs: Vec<S>,
    catalogs: Vec<Catalog>,
    ledgers: Vec<Ledger>,
    /// The blocks held, in order.
    order: Order<Held>,
    /// The latest key of an event handed on, and the events handed on after a later one.
    last: i128,
    out_of_order: u64,
    done: Vec<bool>,
    last_key: Vec<i128>,
    found: VecDeque<Found>,
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
        let wall = (logs.len() > 1).then(|| logs.iter().map(|l| l.header().clock).collect::<Vec<Clock>>());
        let mark = Watermark::new(logs.iter_mut().map(|l| l.take_index()).collect(), wall.clone());
        let n = logs.len();
        Merge {
            catalogs: logs.iter().map(|l| Catalog::new(&l.header().sets)).collect(),
            ledgers: logs.iter().map(|l| l.ledger()).collect(),
            starts: logs.iter().map(|l| l.segment_starts()).collect(),
            logs,
            order: Order::new(Keys::new(wall), window, mark),
            last: i128::MIN,
            out_of_order: 0,
            done: vec![false; n],
            last_key: vec![i128::MIN; n],
            found: VecDeque::new(),
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
        self.order.any_early()
    }

    /// The next item in time order; `None` when every log is read and every record handed on.
    #[allow(clippy::should_implement_trait)] // a lending iterator: the item borrows the merge
    pub fn next_item(&mut self) -> Option<Item<'_>> {
        // Blocks whose last record was handed on (the item borrowed it).
        self.order.spent().clear();
        loop {
            if let Some(found) = self.found.pop_front() {
                return Some(found.item());
            }
            // Every record of a key below the mark's: no later block can precede it.
            let reading = self.done.iter().any(|d| !d);
            if self.order.below_mark() || self.order.over_window() || (!reading && !self.order.is_empty()) {
                // (Something is held: each of the three says so.)
                let (held, (pos, time), place) = self.order.take()?;
                let log = held.log;
                let item = hand_on(held, held.offset(pos), time, &self.catalogs[log], &mut self.ledgers[log]);
                if let Some(Item::Event { .. }) = item {
                    if place.0 < self.last {
                        self.out_of_order += 1;
                    } else {
                        self.last = place.0;
                    }
                }
                return item;
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
                self.order.merged(f, at, None);
                ledger.damaged(&error);
                self.found.push_back(Found::Damaged { log: f, error });
            }
            Some(Ok(block)) => {
                let (thread, sequence) = (block.header.thread, block.header.sequence);
                if let Step::Ahead { skipped } = ledger.block(&block)
                    && skipped > 0
                {
                    self.found.push_back(Found::Missing { log: f, thread, blocks: skipped });
                }
                if block.header.lost > 0 {
                    self.found.push_back(Found::Lost { log: f, thread, count: block.header.lost });
                }
                let (mut first, mut last) = (None::<At>, (0, 0));
                let (mut backwards, mut earliest) = (false, None::<u64>);
                // What the block holds, for its segment's marker: its records are counted
                // as they are handed on, after later blocks are read.
                let (mut records, mut lost) = (0u64, block.header.lost);
                for record in block.records() {
                    match record {
                        Ok(record) => {
                            records += 1;
                            if record.code == DROPPED
                                && let Entry::Event(event) = self.catalogs[f].entry(record, thread, block.order)
                                && let Some(BuiltinEvent::Dropped { count, .. }) = BuiltinEvent::of(&event)
                            {
                                lost = lost.saturating_add(count);
                            }
                            let key = self.order.keys().key(f, record.time);
                            self.last_key[f] = self.last_key[f].max(key);
                            backwards |= first.is_some() && record.time < last.1;
                            last = (record.offset, record.time);
                            first.get_or_insert(last);
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
                ledger.block_counts(block.segment, records, lost);
                let at = place(&self.starts[f], block.segment, block.offset);
                self.order.merged(f, at, Some((block.header.base_time, earliest)));
                let Some(mut first) = first else { return };
                let sorted = backwards.then(|| {
                    let mut v: Vec<(u64, usize)> =
                        block.records().filter_map(Result::ok).map(|r| (r.time, r.offset)).collect();
                    v.sort_unstable();
                    (first, last) = ((0, v[0].0), (v.len() - 1, v[v.len() - 1].0));
                    v
                });
                self.order.hold(Held { block, log: f, sorted, first, last });
            }
        }
    }
}

/// The item of `held`'s record at `offset`, whose time is `time`, counted in its log's
/// ledger; `None` when the record cannot be read again (not reached: it was read when the
/// block came in).
fn hand_on<'a>(
    held: &'a Held,
    offset: usize,
    time: u64,
    catalog: &'a Catalog,
    ledger: &mut Ledger,
) -> Option<Item<'a>> {
    let (log, thread, sequence) = (held.log, held.block.header.thread, held.block.header.sequence);
    let Some(Ok(mut record)) = RecordIter::resume(&held.block.records, held.block.order, (offset, 0)).next() else {
        return None;
    };
    record.time = time;
    let entry = catalog.entry(record, thread, held.block.order);
    ledger.entry(thread, sequence, &entry);
    let args = record.args;
    Some(match entry {
        Entry::Event(event) => Item::Event { log, event },
        Entry::Unknown { code, time, .. } => Item::Unknown { log, thread, time, code, args },
        Entry::Bad(error) => Item::Bad { log, thread, error },
    })
}

/// The place in a log's index of a block at `offset` in its segment `segment`, where `starts`
/// are its segments' starts ([`Source::segment_starts`]).
fn place(starts: &[u64], segment: u32, offset: u64) -> u64 {
    starts.get(segment as usize).copied().unwrap_or(0) + offset
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::wire::{BlockHeader, BlockWriter, Order};
    use crate::testing::sample_header;

    /// A stream whose blocks are out of time order in the file, one block of which goes back
    /// in time (a clock stepped back: a `TimeExtend` back) and one that jumps ahead past 2^32
    /// ticks; every event is `Poll` (code 4), its time its identity.
    fn disordered() -> (Vec<u8>, Vec<(u64, u64)>) {
        let header = sample_header(Order::Little);
        let mut out = header.encode().unwrap();
        let mut all = Vec::new();
        // (thread, sequence, base_time, times): in the order they are in the file.
        let blocks: [(u64, u64, u64, &[u64]); 6] = [
            (1, 0, 5000, &[5000, 5100, 5100, 5300]),
            (2, 0, 1000, &[1000, 1200, 5100, 9000]),
            (1, 1, 5400, &[5400, 5450, 3000, 3100, 6000]),
            (3, 0, 2000, &[2000, 2000, 7000, 5_000_000_000]),
            (2, 1, 9000, &[9000, 9001]),
            (3, 1, 5_000_000_001, &[5_000_000_001]),
        ];
        for (thread, sequence, base_time, times) in blocks {
            let mut w = BlockWriter::new(
                Order::Little,
                header.block_size,
                &BlockHeader { thread, sequence, base_time, ..Default::default() },
            );
            for &t in times {
                w.push(4, t, &[]).unwrap();
                all.push((t, thread));
            }
            out.extend(w.finish());
        }
        (out, all)
    }

    fn times(window: usize) -> (Vec<(u64, u64)>, u64) {
        let (stream, _) = disordered();
        let log = Decoder::new(&stream[..]).unwrap();
        let mut merge = Merge::with_window(vec![log], window);
        let mut out = Vec::new();
        while let Some(item) = merge.next_item() {
            match item {
                Item::Event { event, .. } => out.push((event.time, event.thread)),
                other => panic!("only events: {other:?}"),
            }
        }
        assert_eq!(merge.ledgers()[0].events(), out.len() as u64);
        (out, merge.out_of_order())
    }

    /// With room for every block, the merge hands on every event once, in time order, equal
    /// times by thread; with a window of one byte, every event still once, the disorder
    /// counted.
    #[test]
    fn every_event_once_in_order_and_the_window_counts_what_it_could_not_order() {
        let (_, mut expected) = disordered();
        expected.sort();
        let (whole, late) = times(usize::MAX);
        assert_eq!(whole, expected);
        assert_eq!(late, 0);
        let (cramped, late) = times(1);
        let mut sorted = cramped.clone();
        sorted.sort();
        assert_eq!(sorted, expected, "each event once");
        let inversions = cramped.windows(2).filter(|w| w[1].0 < w[0].0).count() as u64;
        assert!(late >= inversions && late > 0, "{late} counted, {inversions} seen: {cramped:?}");
    }
}
