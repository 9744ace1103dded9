//! The ledger: what is wrong with a log, and what it lost, counted once by one set of rules
//! for every reader (`event-dump`'s `stats`, `check` and exports, the typed reader, the fuzz
//! targets).
//!
//! A reader hands the ledger what it meets, in the order the log holds it: each verified
//! block ([`Ledger::block`]), each block that failed its checks ([`Ledger::damaged`]), each
//! record as the catalog classified it ([`Ledger::entry`], in any order), and at the end what a
//! ring file's reader found ([`Ledger::ring_file`]). The ledger keeps:
//!
//! - the blocks of each thread and their sequence numbers in stream order, and from them the
//!   one gap rule, repeats and late blocks (docs/FORMAT.md, "Block order"), and what a ring's
//!   overwritten blocks are: a thread's oldest numbers missing, for any thread but the
//!   recorder's own (thread 0, whose blocks no ring overwrites);
//! - the losses per thread: blocks' `lost` fields and `Dropped` events ("Counting losses");
//! - what the events' limits suppressed, per event and thread (`Suppressed` events,
//!   "Limits"): counted, and never a loss, since the program asked for it;
//! - damaged blocks (a stream's and a ring file's), bad records, records of unknown codes,
//!   strings their writer cut;
//! - the clean stop ("The clean stop"): the stop marker is the last verified block when it is
//!   a block of thread 0 whose last record is a `Stop`, in a stream of format 2.0.1 or later;
//!   it is no block of the log's counts (though its number is one of thread 0's), and what
//!   the writer said it wrote is compared with what was read;
//! - for a recording of segments (a log of several files, [`crate::log`]; docs/FORMAT.md,
//!   "Reading segments"), made by [`Ledger::with_segments`]: each segment's blocks apart
//!   (every segment restarts its threads' numbers), each segment's stop marker against its
//!   own blocks, and from the segments' header properties the segments the disk budget
//!   removed (with their events, reported, no problem), the segments missing for any other
//!   reason (gaps, a problem) and the events the recorder could not write between segments
//!   or at a stop for a full disk ([`Ledger::lost_between`], [`Ledger::unwritten`]), which
//!   are losses. The last segment's marker says how the recording ended.
//!
//! What it found comes out as [`Findings`]: counts under the names of one table of every
//! finding, each with its severity and its words ([`FINDINGS`]), and the one rule of whether
//! a log is whole ([`Findings::is_whole`]) that every reader gives as its verdict.
//!
//! It is pure: no I/O, no clock, no threads. Whether a writer is still alive is the caller's
//! to find out ([`Ledger::ending`] asks only when it matters).
//!
//! ```
//! use event_format::decode::{Catalog, Decoder};
//! use event_format::ledger::{Ending, Ledger};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let bytes = event_format::testing::sample_stream(event_format::wire::Order::Little);
//! let mut decoder = Decoder::new(&bytes[..])?;
//! let catalog = Catalog::new(&decoder.header().sets);
//! let mut ledger = Ledger::new(decoder.header().format);
//! while let Some(block) = decoder.next_block() {
//!     match block {
//!         Ok(block) => {
//!             ledger.block(&block);
//!             for entry in block.entries(&catalog) {
//!                 ledger.entry(block.header.thread, block.header.sequence, &entry);
//!             }
//!         }
//!         Err(damaged) => ledger.damaged(&damaged),
//!     }
//! }
//! assert!(ledger.events() > 0);
//! assert_eq!((ledger.missing_blocks(), ledger.damaged_blocks().len(), ledger.bad_records().len()), (0, 0, 0));
//! // The sample stream (format 2.0.1) has no stop marker: its writer did not stop cleanly,
//! // unless it is still writing, which only the caller can find out.
//! assert_eq!(ledger.ending(|| false), Ending::Killed { after_marker: 0 });
//! assert_eq!(ledger.ending(|| true), Ending::Running);
//! // Its findings say so in the one verdict every reader gives (beside the sample's
//! // `Dropped` events).
//! assert_eq!(
//!     ledger.findings(|| false).verdict(false),
//!     "NOT whole: 6 events lost, 1 recording or segment not stopped cleanly"
//! );
//! assert_eq!(ledger.findings(|| true).verdict(true), "NOT whole: 6 events lost");
//! # Ok(()) }
//! ```

mod findings;
mod segments;
mod sequences;
mod snapshot;
mod suppressed;
mod tally;

pub use findings::{Declared, FINDINGS, Finding, Findings, Severity};
pub use segments::{Missing, SegmentEntry, Segments};
pub use sequences::{Sequences, Step};
pub use snapshot::describe_snapshot;
pub use suppressed::describe_suppressed;
pub use tally::Tally;

use crate::codec::decode::{Block, BlockError, Entry, Event};
use crate::codec::ring::{RingFindings, STATE_CLOSED};
use crate::codec::wire::{RecordError, STRING_TRUNCATED, Stop, StopCause, records_stop};
use event_def::builtin::DROPPED;
use event_def::letter::Letter;
use event_def::schema::Version;
use std::collections::BTreeMap;
use std::fmt;

/// A block that failed its checks and was skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Damaged {
    /// A block of a stream, as the decoder reported it.
    Block(BlockError),
    /// A block of a ring file's slot, left out by the ring reader.
    Slot {
        /// The slot's index.
        slot: u32,
        /// The block's sequence number.
        sequence: u64,
        /// What is wrong.
        why: String,
    },
}

impl fmt::Display for Damaged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Damaged::Block(e) => write!(f, "{e}"),
            Damaged::Slot { slot, sequence, why } => write!(f, "slot {slot}, block {sequence}: {why}"),
        }
    }
}

/// A record that breaks the format, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadRecord {
    /// The thread of its block.
    pub thread: u64,
    /// Its block's sequence number.
    pub sequence: u64,
    /// What is wrong.
    pub error: RecordError,
}

impl fmt::Display for BadRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "thread {}, block {}: {}", self.thread, self.sequence, self.error)
    }
}

/// How a log's recording ended, as far as the log can tell (docs/FORMAT.md, "The clean stop").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The writer stopped writing the stream and said so: a stream's marker (what it says
    /// was written, and since 2.0.3 why it stopped: [`Stop::cause`], which may be a full disk
    /// with [`Stop::unwritten`] events not written), or a ring file's state *closed* (`None`).
    Clean(Option<Stop>),
    /// A stream of format 2.0.1 or later without the marker at its end, or a ring file still
    /// marked recording, whose writer is not alive: killed, aborted, or its disk full.
    Killed {
        /// Verified blocks after the last stop block (0: there is none).
        after_marker: u64,
    },
    /// No marker (or a ring file still marked recording), and its writer is alive: still
    /// recording.
    Running,
    /// A stream whose format has no marker (before 2.0.1): nothing to tell.
    Unrecorded,
}

/// The stop marker's counts beside the same counts of what was read before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Marker {
    /// What the writer says it wrote before the marker's block.
    pub written: Stop,
    /// What the reader read before it: verified blocks, records (every record the walk of
    /// docs/FORMAT.md yields, other than `TimeExtend` and `Stop`: events, records of unknown
    /// codes and records with bad arguments), and the losses they report. Its `cause` and
    /// `unwritten` are the written marker's: the log has nothing else to tell them by.
    pub read: Stop,
}

impl Marker {
    /// Whether the two agree in every count (`blocks`, `events`, `lost`; the cause and the
    /// unwritten events are the writer's alone).
    pub fn agrees(&self) -> bool {
        self.written.same_counts(&self.read)
    }

    /// How many of the counts (`blocks`, `events`, `lost`) the two disagree in.
    pub fn disagreements(&self) -> u64 {
        let (w, r) = (&self.written, &self.read);
        u64::from(w.blocks != r.blocks) + u64::from(w.events != r.events) + u64::from(w.lost != r.lost)
    }
}

/// A stop block met: thread 0, ending with a `Stop` record, in a stream that has markers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct StopBlock {
    stop: Stop,
    /// Its own records and losses, which the marker's counts leave out.
    records: u64,
    lost: u64,
}

/// A ring file's end, as its reader found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RingEnd {
    state: u32,
    /// Whether its pin area failed its checks.
    pin_damaged: bool,
}

/// What a log holds that is wrong or lost, counted once; see the [module docs](self).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ledger {
    /// The stream's format version: whether it has a clean-stop marker.
    format: Version,
    /// The log's segments as the ledger met them (one part for a log of one file): each
    /// with its threads' blocks and its stop blocks.
    parts: Vec<Part>,
    /// For a recording of segments: what their properties say.
    segments: Option<Segments>,
    /// Verified blocks, stop blocks included.
    blocks: u64,
    /// What its records say, and the losses its blocks report ([`Tally`]).
    tally: Tally,
    damaged: Vec<Damaged>,
    ring: Option<RingEnd>,
    /// Its parts' markers are held to the counts [`block_counts`](Ledger::block_counts) gave.
    by_block: bool,
}

/// The ledger's counts at a point of the log: where a segment starts or ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    blocks: u64,
    records: u64,
    /// Events lost as the blocks report them (their `lost` fields and `Dropped` counts).
    lost: u64,
}

/// One segment of the log as the ledger met it (the whole log when it is one file).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Part {
    /// Its place among the log's segments ([`Block::segment`]).
    segment: u32,
    /// Thread -> its blocks' sequence numbers in this segment.
    threads: BTreeMap<u64, Sequences>,
    /// The last stop block, and the verified blocks after it.
    stop_block: Option<StopBlock>,
    after_stop_block: u64,
    /// The counts when it started, and when the next one did (`None` while it is the last).
    start: Counts,
    end: Option<Counts>,
    /// Its own blocks, records and losses, counted block by block as each was read
    /// ([`Ledger::block_counts`]): for a reader that counts a block's records after it has
    /// read later blocks (a merge by time), whose `start` and `end` would miss some.
    own: Counts,
}

impl Part {
    fn new(segment: u32, start: Counts) -> Part {
        let own = Counts { blocks: 0, records: 0, lost: 0 };
        Part { segment, threads: BTreeMap::new(), stop_block: None, after_stop_block: 0, start, end: None, own }
    }

    /// Its stop marker's block: its last stop block when no verified block follows it.
    fn marker_block(&self) -> Option<&StopBlock> {
        self.stop_block.as_ref().filter(|_| self.after_stop_block == 0)
    }
}

/// One segment of a log as its ledger counted it: [`Ledger::parts`].
#[derive(Clone, Copy, Debug)]
pub struct SegmentPart<'a> {
    /// Its place among the log's segments (0 for a log of one file).
    pub segment: u32,
    /// Its file's name, for a recording of segments.
    pub name: Option<&'a str>,
    /// Each thread of it that has a verified block, with its blocks' numbers (a segment
    /// restarts them).
    pub threads: &'a BTreeMap<u64, Sequences>,
    /// Its stop marker's counts beside what was read of it, when it ends with one.
    pub marker: Option<Marker>,
    /// Verified blocks after its last stop block, when it has one and does not end with it.
    pub after_marker: u64,
    /// Whether it is the log's last segment, whose marker says how the recording ended.
    pub last: bool,
}

impl Ledger {
    /// An empty ledger for a log of stream format `format`.
    pub fn new(format: Version) -> Ledger {
        Ledger {
            format,
            parts: vec![Part::new(0, Counts::default())],
            segments: None,
            blocks: 0,
            tally: Tally::default(),
            damaged: Vec::new(),
            ring: None,
            by_block: false,
        }
    }

    /// The ledger of a recording of segments whose present segments are `present`, in the
    /// order their blocks come ([`Block::segment`] is the place in it), which is the order of
    /// their indexes.
    ///
    /// `later` is what later recordings' budgets removed of it, segments and events (the
    /// earlier property of their segments, docs/FORMAT.md, "Earlier recordings"): counted
    /// with what its own segments say its budget removed.
    pub fn with_segments(mut self, present: Vec<SegmentEntry>, later: (u64, u64)) -> Ledger {
        self.segments = Some(Segments::new(present, later));
        self
    }

    fn counts(&self) -> Counts {
        Counts { blocks: self.blocks, records: self.tally.records, lost: self.recorded_lost() }
    }

    /// The part of segment `segment`: a new one when the log has gone on to it.
    fn part(&mut self, segment: u32) -> &mut Part {
        if self.parts.last().is_none_or(|p| p.segment != segment) {
            let now = self.counts();
            if let Some(last) = self.parts.last_mut() {
                last.end = Some(now);
            }
            self.parts.push(Part::new(segment, now));
        }
        let last = self.parts.len() - 1;
        &mut self.parts[last]
    }

    fn last_part(&self) -> Option<&Part> {
        self.parts.last()
    }

    /// Counts a verified block, in stream order: its thread's sequence number and its `lost`
    /// field (its records come through [`entry`](Ledger::entry)). What its number was to its
    /// thread: a streaming reader reports [`Step::Ahead`]'s skipped blocks as missing so far.
    pub fn block(&mut self, block: &Block) -> Step {
        let header = &block.header;
        let format = self.format;
        let part = self.part(block.segment);
        let stop = if header.thread == 0 && records_stop(format) { block.stop() } else { None };
        match stop {
            Some(stop) => {
                let (records, lost) = own_counts(block);
                part.stop_block = Some(StopBlock { stop, records, lost });
                part.after_stop_block = 0;
            }
            None if part.stop_block.is_some() => part.after_stop_block += 1,
            None => {}
        }
        let step = part.threads.entry(header.thread).or_default().add(header.sequence);
        self.blocks += 1;
        self.tally.add_lost(header.thread, header.lost);
        step
    }

    /// Counts what a verified block holds, as its block was read: `records` (every record the
    /// walk of docs/FORMAT.md yields but `TimeExtend`, `Stop` and `Callsite`) and `lost` (its
    /// `lost` field and its `Dropped` counts), into its segment's part. A reader that counts
    /// a block's records ([`entry`](Ledger::entry)) only after reading later blocks, as a
    /// merge by time hands them on, calls it with [`block`](Ledger::block): each segment's
    /// marker is then held to the counts of its own blocks, whenever their records are handed
    /// on. One that counts each block's records before it reads the next needs not.
    pub fn block_counts(&mut self, segment: u32, records: u64, lost: u64) {
        self.by_block = true;
        let part = self.part(segment);
        part.own.blocks += 1;
        part.own.records = part.own.records.saturating_add(records);
        part.own.lost = part.own.lost.saturating_add(lost);
    }

    /// Counts a block that failed its checks.
    pub fn damaged(&mut self, error: &BlockError) {
        self.part(error.segment);
        self.damaged.push(Damaged::Block(error.clone()));
    }

    /// Counts one record of the block of `thread` numbered `sequence`, as the catalog
    /// classified it ([`Catalog::entry`](crate::decode::Catalog::entry)): an event (its
    /// `Dropped` count, its cut strings), an unknown code, or a bad record. Records may come
    /// in any order (a reader that merges by time hands them on in time order).
    #[inline]
    pub fn entry(&mut self, thread: u64, sequence: u64, entry: &Entry<'_>) {
        self.tally.entry(thread, sequence, entry);
    }

    /// Counts the records of a block that a reader counted apart ([`Tally::entry`], on a
    /// thread of its own), handed on after [`block`](Ledger::block) of that block, in the
    /// log's order; `tally` is left empty, for the next block's.
    pub fn add(&mut self, tally: &mut Tally) {
        self.tally.add(tally);
        tally.clear();
    }

    /// Counts what a ring file's reader found once every block was read: the blocks it left
    /// out as damaged, and the file's state for [`ending`](Ledger::ending).
    pub fn ring_file(&mut self, findings: &RingFindings) {
        for (slot, sequence, why) in &findings.damaged {
            self.damaged.push(Damaged::Slot { slot: *slot, sequence: *sequence, why: why.clone() });
        }
        self.ring = Some(RingEnd { state: findings.state, pin_damaged: findings.pin_damage.is_some() });
    }

    /// The stop block that ends the log, when the last verified block (of its last segment)
    /// is one.
    fn marker_block(&self) -> Option<&StopBlock> {
        self.last_part().and_then(Part::marker_block)
    }

    /// Events lost as the blocks report them: `lost` fields and `Dropped` counts.
    fn recorded_lost(&self) -> u64 {
        saturating_sum(self.tally.lost.values().copied())
    }

    /// Whether the last verified block so far is a stop block: the log's stop marker, if
    /// no verified block follows it. A reader that sums its own facts of blocks (their bytes)
    /// holds that block's apart until the next one comes.
    pub fn ends_with_marker(&self) -> bool {
        self.marker_block().is_some()
    }

    /// The log's verified blocks, the stop marker not counted (a stop block that blocks
    /// follow is no marker, and counts; each segment of a recording of segments has its own
    /// marker).
    pub fn blocks(&self) -> u64 {
        self.blocks - self.parts.iter().filter(|p| p.marker_block().is_some()).count() as u64
    }

    /// Events: records whose code the catalog knows and whose arguments match their format.
    pub fn events(&self) -> u64 {
        self.tally.events
    }

    /// Records of codes nothing describes, by wire code.
    pub fn unknown_codes(&self) -> &BTreeMap<u16, u64> {
        &self.tally.unknown
    }

    /// Records of unknown codes, all codes together.
    pub fn unknown_records(&self) -> u64 {
        saturating_sum(self.tally.unknown.values().copied())
    }

    /// Records that break the format, in the order they were counted.
    pub fn bad_records(&self) -> &[BadRecord] {
        &self.tally.bad
    }

    /// Blocks that failed their checks: the stream's, then (once counted) the ring file's.
    pub fn damaged_blocks(&self) -> &[Damaged] {
        &self.damaged
    }

    /// Events lost per thread (0: of no thread): `lost` fields and `Dropped` counts.
    pub fn lost_by_thread(&self) -> &BTreeMap<u64, u64> {
        &self.tally.lost
    }

    /// Events that their limits suppressed (events.def's `limit=`, `EVENT_LIMIT`), per (wire
    /// code, thread), as the log's `Suppressed` events count them: not losses, the program
    /// asked for them (docs/FORMAT.md, "Limits").
    pub fn suppressed(&self) -> &BTreeMap<(u16, u64), u64> {
        &self.tally.suppressed
    }

    /// Events that their limits suppressed, per wire code, all threads together.
    pub fn suppressed_by_code(&self) -> BTreeMap<u16, u64> {
        let mut by_code = BTreeMap::new();
        for (&(code, _), &n) in &self.tally.suppressed {
            let total: &mut u64 = by_code.entry(code).or_default();
            *total = total.saturating_add(n);
        }
        by_code
    }

    /// Events lost: all threads' together ([`lost_by_thread`](Ledger::lost_by_thread)), and
    /// for a recording of segments those the recorder could not write between segments
    /// ([`lost_between`](Ledger::lost_between)) or held when it could not write
    /// ([`unwritten`](Ledger::unwritten)).
    pub fn lost(&self) -> u64 {
        saturating_sum([self.recorded_lost(), self.lost_between(), self.unwritten()].into_iter())
    }

    /// Events the recorder could not write between two segments (the segments' header
    /// property), counted lost; 0 for a log of one file.
    pub fn lost_between(&self) -> u64 {
        self.segments.as_ref().map_or(0, Segments::lost_between)
    }

    /// Events the writer held and could not write when it stopped writing a segment (or the
    /// log) for a full disk or another write error, as its stop markers say; counted lost.
    pub fn unwritten(&self) -> u64 {
        let failed = self.parts.iter().filter_map(|p| p.marker_block()).filter(|b| b.stop.cause.is_failure());
        saturating_sum(failed.map(|b| b.stop.unwritten))
    }

    /// Events the writer held and could not write for a full disk (the part of
    /// [`unwritten`](Ledger::unwritten) whose markers say `disk full`).
    pub fn unwritten_for_disk_full(&self) -> u64 {
        let full = self.parts.iter().filter_map(|p| p.marker_block()).filter(|b| b.stop.cause == StopCause::DiskFull);
        saturating_sum(full.map(|b| b.stop.unwritten))
    }

    /// For a recording of segments, what their properties say: the segments present, those
    /// the disk budget removed and the gaps. `None` for a log of one file.
    pub fn segments(&self) -> Option<&Segments> {
        self.segments.as_ref()
    }

    /// Segments the disk budget removed, and the events they held: reported, no problem.
    pub fn removed(&self) -> (u64, u64) {
        self.segments.as_ref().map_or((0, 0), Segments::removed)
    }

    /// Segments missing that the budget did not remove (deleted, moved or not given): gaps.
    pub fn segment_gaps(&self) -> u64 {
        self.segments.as_ref().map_or(0, Segments::gaps)
    }

    /// The name of the file of the segment at `place` ([`Block::segment`]), for a recording
    /// of segments.
    pub fn segment_name(&self, place: u32) -> Option<&str> {
        self.segments.as_ref().and_then(|s| s.name(place))
    }

    /// The log's segments as they were counted (one for a log of one file), in order.
    pub fn parts(&self) -> impl Iterator<Item = SegmentPart<'_>> + '_ {
        let count = self.parts.len();
        self.parts.iter().enumerate().map(move |(i, p)| SegmentPart {
            segment: p.segment,
            name: self.segment_name(p.segment),
            threads: &p.threads,
            marker: self.part_marker(p),
            after_marker: if p.stop_block.is_some() { p.after_stop_block } else { 0 },
            last: i + 1 == count,
        })
    }

    /// Strings their writer cut, in events.
    pub fn truncated_strings(&self) -> u64 {
        self.tally.truncated_strings
    }

    /// What it found, as counts with stable names ([`Findings`]): what every reader that
    /// reports losses and damage says, in its one voice, and judges by its one rule
    /// ([`Findings::is_whole`]). `alive` is asked, as [`ending`](Ledger::ending) asks it,
    /// whether the writer of a log without its stop marker is still alive: a recording that
    /// is still being written is no recording killed.
    pub fn findings(&self, alive: impl FnOnce() -> bool) -> Findings {
        let (removed_segments, removed_events) = self.removed();
        let (mut not_stopped, mut marker_disagreements) = (0u64, 0u64);
        // Each segment but the last ends with its own marker, which its blocks must agree
        // with; the last one's is the log's, and how the log ended.
        let count = self.parts.len();
        for part in &self.parts[..count.saturating_sub(1)] {
            match self.part_marker(part) {
                Some(m) => marker_disagreements += m.disagreements(),
                None => not_stopped += 1,
            }
        }
        match self.ending(alive) {
            Ending::Killed { .. } => not_stopped += 1,
            Ending::Clean(Some(_)) => marker_disagreements += self.marker().map_or(0, |m| m.disagreements()),
            Ending::Clean(None) | Ending::Running | Ending::Unrecorded => {}
        }
        Findings {
            events: self.events(),
            blocks: self.blocks(),
            lost: self.lost(),
            lost_by_thread: self.lost_by_thread().clone(),
            missing_blocks: self.missing_blocks(),
            overwritten_blocks: saturating_sum(self.overwritten().map(|(_, n)| n)),
            damaged_blocks: self.damaged_blocks().len() as u64,
            bad_records: self.bad_records().len() as u64,
            unknown_records: self.unknown_records(),
            truncated_strings: self.truncated_strings(),
            removed_segments,
            removed_events,
            segment_gaps: self.segment_gaps(),
            repeated_blocks: self.repeated_blocks(),
            late_blocks: self.late_blocks(),
            not_stopped,
            marker_disagreements,
            damaged_pin_areas: u64::from(self.ring.is_some_and(|r| r.pin_damaged)),
        }
    }

    /// Each thread that has a verified block, with its blocks' numbers: per segment, for a
    /// recording of segments (whose segments restart them; [`parts`](Ledger::parts) tells
    /// which), so a thread may come once per segment.
    pub fn threads(&self) -> impl Iterator<Item = (u64, &Sequences)> + '_ {
        self.parts.iter().flat_map(|p| p.threads.iter().map(|(t, s)| (*t, s)))
    }

    /// Blocks missing: every thread's gaps together, a ring's overwritten blocks included.
    pub fn missing_blocks(&self) -> u64 {
        saturating_sum(self.threads().map(|(_, s)| s.missing()))
    }

    /// The oldest blocks a ring overwrote, per thread, as (thread, blocks): a thread's first
    /// numbers missing, for every thread but 0, whose blocks are the recorder's own reports
    /// and are never overwritten (its gaps are blocks dropped or damaged).
    pub fn overwritten(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.threads().filter(|(t, _)| *t != 0).map(|(t, s)| (t, s.oldest_missing())).filter(|o| o.1 > 0)
    }

    /// Blocks whose number an earlier block of their thread had.
    pub fn repeated_blocks(&self) -> u64 {
        self.threads().map(|(_, s)| s.repeats().len() as u64).sum()
    }

    /// Blocks that came after a higher-numbered block of their thread.
    pub fn late_blocks(&self) -> u64 {
        self.threads().map(|(_, s)| s.late().len() as u64).sum()
    }

    /// The stop marker's counts beside what was read before it, when the log ends with one
    /// (for a recording of segments: its last segment's marker, against that segment).
    pub fn marker(&self) -> Option<Marker> {
        self.part_marker(self.last_part()?)
    }

    /// `part`'s marker's counts beside what was read of the part before it.
    fn part_marker(&self, part: &Part) -> Option<Marker> {
        let block = part.marker_block()?;
        let own = if self.by_block {
            part.own
        } else {
            let end = part.end.unwrap_or_else(|| self.counts());
            Counts {
                blocks: end.blocks - part.start.blocks,
                records: end.records - part.start.records,
                lost: end.lost.saturating_sub(part.start.lost),
            }
        };
        let read = Stop {
            // The marker's own block is no block of the counts.
            blocks: own.blocks.saturating_sub(1),
            events: own.records.saturating_sub(block.records),
            lost: own.lost.saturating_sub(block.lost),
            cause: block.stop.cause,
            unwritten: block.stop.unwritten,
        };
        Some(Marker { written: block.stop, read })
    }

    /// How the recording ended. `alive` is asked, only when the log has no marker (or is a
    /// ring file not closed), whether its writer is still alive: the caller's to find out
    /// (a ring file's heartbeat and process, the lock a stream's writer holds).
    pub fn ending(&self, alive: impl FnOnce() -> bool) -> Ending {
        if let Some(ring) = self.ring {
            return match ring.state {
                STATE_CLOSED => Ending::Clean(None),
                _ if alive() => Ending::Running,
                _ => Ending::Killed { after_marker: 0 },
            };
        }
        if !records_stop(self.format) {
            return Ending::Unrecorded;
        }
        let Some(part) = self.last_part() else { return Ending::Killed { after_marker: 0 } };
        match part.marker_block() {
            Some(block) => Ending::Clean(Some(block.stop)),
            None if part.stop_block.is_none() && alive() => Ending::Running,
            None => Ending::Killed { after_marker: part.after_stop_block },
        }
    }
}

/// A block's own records (as a writer counts them: every record the walk yields) and the
/// losses it reports (its `lost` field and its `Dropped` counts).
fn own_counts(block: &Block) -> (u64, u64) {
    let (mut records, mut lost) = (0u64, block.header.lost);
    for record in block.records().flatten() {
        records += 1;
        if record.code == DROPPED && record.args.len() >= 16 {
            lost = lost.saturating_add(block.order.u64(&record.args[8..]));
        }
    }
    (records, lost)
}

/// The sum of `counts`, saturating at `u64::MAX`: counts from a log may lie.
fn saturating_sum(counts: impl Iterator<Item = u64>) -> u64 {
    counts.fold(0, u64::saturating_add)
}

/// The strings of `event` that their writer cut (the flag of their length prefix): what
/// [`Event::values`] says of them, read from the argument bytes by the letters without
/// decoding the other values.
fn truncated_strings(event: &Event<'_>) -> u64 {
    let mut args = event.args;
    let mut cut = 0;
    for letter in &event.desc.format {
        let Some((head, rest)) = args.split_at_checked(letter.min_size()) else { break };
        args = rest;
        if *letter == Letter::String {
            let prefix = event.order.u16(head);
            cut += u64::from(prefix & STRING_TRUNCATED != 0);
            let Some(rest) = args.get(usize::from(prefix & !STRING_TRUNCATED)..) else { break };
            args = rest;
        }
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::decode::Desc;
    use crate::codec::wire::{Order, Text, Value};
    use crate::raw::encode_value;

    #[test]
    fn cut_strings_are_those_the_values_say() {
        let text = |s: &'static str, truncated| Value::Str(Text { bytes: s.as_bytes(), truncated });
        let rows: Vec<Vec<Value<'static>>> = vec![
            vec![text("a", true)],
            vec![text("", false), Value::Word(7), text("cut", true), Value::Bool(true), text("whole", false)],
            vec![Value::Unsigned(3), text("x", true), Value::Double(1.5), text("y", true), Value::Signed(-1)],
            vec![Value::Pointer(1), Value::Address(2), text("ü", false)],
        ];
        for order in [Order::Little, Order::Big] {
            for values in &rows {
                let mut args = Vec::new();
                for v in values {
                    encode_value(v, order, &mut args);
                }
                let desc = Desc {
                    code: 300,
                    wire: 300,
                    set: String::new(),
                    qualified: false,
                    name: "E".into(),
                    kind_name: "K".into(),
                    kind: Some(0),
                    format: values.iter().map(Value::letter).collect(),
                    params: values.iter().map(|_| "p".into()).collect(),
                    strings: values.iter().any(|v| matches!(v, Value::Str(_))),
                };
                let event = Event { desc: &desc, time: 0, thread: 1, args: &args, order };
                let want = event.values().filter(|v| matches!(v, Value::Str(t) if t.truncated)).count() as u64;
                assert_eq!(truncated_strings(&event), want, "{values:?}");
            }
        }
    }
}
