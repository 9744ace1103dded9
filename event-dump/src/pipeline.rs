//! `print`'s pipeline: blocks are decoded, selected and rendered to text on worker threads,
//! then merged by time and written in order on the main thread.
//!
//! Rendering is most of what `print` costs, and a block renders without knowing any other:
//! a worker turns a block into a [`Rendered`] one (its lines' text, in the block's time
//! order, and what the merge needs of each record). The one thing a line cannot know before
//! the events are in order is its labels (an address's label is what the log said before
//! it, in time order), so a line leaves [`Hole`]s where they go and the main thread fills
//! them as it writes the line, after learning every `Intern` and `Label` before it.
//!
//! A packed block is unpacked by the worker that renders it, not by the main thread, which
//! only reads, checks and merges ([`PendingBlock`]); a block whose records do not unpack
//! comes back as a damaged one, at its place in the sequence, as the decoder would have said
//! it.
//!
//! The main thread reads the logs' blocks, hands them out in sequence and takes the rendered
//! blocks back in that same sequence, whichever worker finished first: what it does depends
//! only on the blocks, so the output is the same, byte for byte, with any number of workers,
//! and with none (`--jobs 1` renders on the main thread). While the block it needs next is
//! not back, the main thread renders a block no worker has taken yet instead of waiting, so
//! that `--jobs N` is N threads that render, the main one among them: with a thread more than
//! the cores, the main thread was woken for each block back and took a core from a worker
//! each time (2 400 context switches on the benchmark's zstd log, 60 now; BENCHMARKS.md).
//!
//! The merge ([`LineMerge`]) is the workspace's one merge by time
//! ([`Order`](event_format::merge::Order), which [`Merge`](event_format::merge::Merge) of the
//! exports uses too) over rendered blocks: it holds them in chains, the blocks of one thread
//! of one log, in time order, one after another (a block that goes back in time before its
//! chain's last opens a chain of its own), so that the heap that picks the next line holds a
//! chain per thread, not a block, and lines are written from a chain in runs. After each block
//! it writes every line that no later block can precede, by the logs' block indexes
//! ([`Watermark`](event_format::merge::Watermark)), so that it holds what is out of order in the
//! file rather than lines already in order; and it holds at most a window of rendered bytes
//! (`--window`): when more is held, it writes the earliest runs until it holds less. The
//! order is exact whenever the log's disorder fits in the window (and its blocks' records
//! start no earlier than their headers say); a line written after a later one is counted,
//! and `print` says so.

use crate::log::{DumpError, Log};
use crate::render::{Annotations, Fact, Hole, Origin, Renderer, Templates};
use event_format::decode::{Block, BlockError, BlockSource, Catalog, Entry, Event, PendingBlock};
use event_format::ledger::{Ledger, Tally};
use event_format::merge::{At, Keys, Order, Place, Tie, Timed, Watermark};
use event_format::text::Seconds;
use event_format::wire::{Clock, RecordError, Unpacker};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::ops::ControlFlow;
use std::sync::{Mutex, mpsc};

/// The default merge window, in MiB of rendered lines: the most the merge holds. A log read
/// with its block index holds only what its disorder needs (the benchmark's 4 M-event log,
/// at most 36 MiB: a thread preempted for a time slice while another wrote); without one (a
/// ring file, a pipe, `--window-only`), the window fills before the first line is written.
/// 64 MiB holds the disorder of the benchmark's 16 M-event log twice over (BENCHMARKS.md);
/// `--window` holds more.
pub(crate) const DEFAULT_WINDOW_MIB: usize = 64;

/// A line is shown.
const SHOW: u8 = 1;
/// Its event is an `Intern` or a `Label`: `aux` indexes the block's facts.
const LEARN: u8 = 2;
/// A record of a code this reader does not know: `code` is its code.
const UNKNOWN: u8 = 4;
/// A record whose arguments break the format: `aux` indexes the block's errors.
const BAD: u8 = 8;

/// One record of a rendered block, as the merge and the writer need it.
#[derive(Clone, Copy, Debug)]
struct Line {
    /// Its time in ticks.
    time: u64,
    /// Its text: `text[start..start + len]` of its block (when shown).
    start: u32,
    len: u32,
    /// Its holes: `holes[holes..holes_end]` of its block.
    holes: u32,
    holes_end: u32,
    /// The index of its fact or its error.
    aux: u32,
    /// Its wire code.
    code: u16,
    /// What it is: [`SHOW`], [`LEARN`], [`UNKNOWN`], [`BAD`].
    what: u8,
}

/// A block decoded and rendered: the lines of its records, sorted by time (and by place in
/// the block for equal times), with only the records that matter to the output: shown
/// events, `Intern` and `Label` events, unknown codes and bad records.
#[derive(Debug)]
pub(crate) struct Rendered {
    file: usize,
    thread: u64,
    /// The block's segment in its log (0 for a log of one stream): the tie order's.
    segment: u32,
    sequence: u64,
    /// The block's place among its log's blocks ([`Block::index`]): of two blocks of one
    /// thread and number (a repeated block), the earlier's lines come first.
    index: u64,
    /// Where the block is in its log (for a recording of segments, its segment's start plus its
    /// offset: the place the log's index gives), and the time its header says its records
    /// start at.
    offset: u64,
    base_time: u64,
    /// The shown lines' text, each followed by a newline: a run of lines that need nothing
    /// filled in is written with one copy.
    text: Vec<u8>,
    /// The number of shown lines (of newlines in `text`).
    shown: usize,
    lines: Vec<Line>,
    holes: Vec<Hole>,
    facts: Vec<Fact>,
    bad: Vec<RecordError>,
    /// Records that could not be delimited or timed: reported when the block comes in.
    walk_errors: Vec<RecordError>,
    /// What its records say to the log's ledger (every record, shown or not), counted here
    /// and handed on when the block is taken back in the log's order. (Boxed: a piece moves
    /// through the channels, and rendered blocks are reused, their tallies with them.)
    tally: Box<Tally>,
    /// The decoded block, handed back to its log for its buffer to hold a later block's
    /// records (a fresh buffer per block costs an allocation and its zeroing).
    block: Option<Box<Block>>,
}

impl Rendered {
    /// The bytes it holds, as the window counts them: what its buffers hold (the room
    /// beyond costs memory only once a block wrote there, and the buffers are reused).
    /// (The lines' newlines are not counted: the window is the lines' bytes as they were
    /// counted before the text held them.)
    fn bytes(&self) -> usize {
        self.text.len() - self.shown + self.lines.len() * size_of::<Line>() + self.holes.len() * size_of::<Hole>()
    }
}

/// What the main thread gets back for each block it read, in the order it read them.
#[derive(Debug)]
pub(crate) enum Piece {
    /// A damaged block of log `file`.
    Damaged {
        file: usize,
        error: BlockError,
        /// Where it is in its log, as [`Rendered::offset`].
        at: u64,
    },
    /// A block, rendered.
    Block(Rendered),
}

/// What a thread that renders blocks keeps from one block to the next: the templates it made,
/// and what unpacks packed blocks (a zstd context, and a buffer the records go to).
#[derive(Default)]
pub(crate) struct Bench {
    templates: Templates,
    unpacker: Unpacker,
    /// The buffer the next packed block's records are unpacked into; it then holds the
    /// buffer of that block's packed bytes.
    records: Vec<u8>,
}

/// Whether an event of log `file` is shown, read by the log's clock.
pub(crate) type Keeps<'a> = dyn Fn(usize, &Event<'_>, &Clock) -> bool + Sync + 'a;

/// What a worker needs to render a block of any log.
pub(crate) struct Context<'a> {
    pub(crate) renderer: &'a Renderer,
    /// Whether an event of a log is shown (`print`'s selection); `None` shows every event.
    pub(crate) keeps: Option<&'a Keeps<'a>>,
    pub(crate) catalogs: Vec<Catalog>,
    pub(crate) clocks: Vec<Clock>,
    /// Each log's segments' starts among its bytes (`Log::segment_starts`).
    pub(crate) starts: Vec<Vec<u64>>,
    /// Rendered blocks written out, whose buffers the next blocks reuse (fresh buffers of
    /// this size cost the kernel's time as much as rendering does).
    pub(crate) spare: Mutex<Vec<Rendered>>,
}

impl Context<'_> {
    /// Where segment `segment` of log `file` starts among the log's bytes.
    fn start(&self, file: usize, segment: u32) -> u64 {
        self.starts.get(file).and_then(|s| s.get(segment as usize)).copied().unwrap_or(0)
    }

    /// Unpacks, decodes, selects and renders `block` of log `file`, with what the calling
    /// thread kept from the blocks before (`bench`).
    pub(crate) fn render(&self, bench: &mut Bench, file: usize, block: Result<PendingBlock, BlockError>) -> Piece {
        let block = block.and_then(|block| block.unpack(&mut bench.unpacker, &mut bench.records));
        let templates = &mut bench.templates;
        let block = match block {
            Ok(block) => block,
            Err(error) => {
                let at = self.start(file, error.segment) + error.offset;
                return Piece::Damaged { file, error, at };
            }
        };
        let catalog = &self.catalogs[file];
        let clock = &self.clocks[file];
        let thread = block.header.thread;
        let spare = self.spare.lock().ok().and_then(|mut s| s.pop());
        let mut r = match spare {
            Some(mut r) => {
                r.text.clear();
                r.shown = 0;
                r.lines.clear();
                r.holes.clear();
                r.facts.clear();
                r.bad.clear();
                r.walk_errors.clear();
                r.tally.clear();
                r
            }
            None => Rendered {
                file,
                thread,
                segment: 0,
                sequence: 0,
                index: 0,
                offset: 0,
                base_time: 0,
                text: Vec::with_capacity(block.records.len() * 4),
                shown: 0,
                lines: Vec::with_capacity(block.records.len() / 24),
                holes: Vec::with_capacity(block.records.len() / 24),
                facts: Vec::new(),
                bad: Vec::new(),
                walk_errors: Vec::new(),
                tally: Box::default(),
                block: None,
            },
        };
        (r.file, r.thread, r.segment, r.sequence, r.index) =
            (file, thread, block.segment, block.header.sequence, block.index);
        (r.offset, r.base_time) = (self.start(file, block.segment) + block.offset, block.header.base_time);
        let thread_text = self.renderer.thread_text(file, thread);
        let seconds = Seconds::new(clock);
        let origin = Origin { file, thread: &thread_text, seconds: &seconds };
        let (mut previous, mut backwards) = (0, false);
        let sequence = block.header.sequence;
        for record in block.records() {
            let record = match record {
                Ok(record) => record,
                Err(error) => {
                    r.tally.entry(thread, sequence, &Entry::Bad(error.clone()));
                    r.walk_errors.push(error);
                    continue;
                }
            };
            backwards |= record.time < previous;
            previous = record.time;
            let mut line = Line {
                time: record.time,
                start: 0,
                len: 0,
                holes: 0,
                holes_end: 0,
                aux: 0,
                code: record.code,
                what: 0,
            };
            let entry = catalog.entry(record, thread, block.order);
            r.tally.entry(thread, sequence, &entry);
            match entry {
                Entry::Event(event) => {
                    if let Some(fact) = Fact::of(&event) {
                        line.what |= LEARN;
                        line.aux = r.facts.len() as u32;
                        r.facts.push(fact);
                    }
                    if self.keeps.is_none_or(|keeps| keeps(file, &event, clock)) {
                        line.what |= SHOW;
                        line.start = r.text.len() as u32;
                        line.holes = r.holes.len() as u32;
                        let start = r.text.len();
                        let template = templates.get(self.renderer, file, event.desc);
                        // Its holes are offsets in the line.
                        self.renderer.line(&mut r.text, &mut r.holes, &origin, template, &event);
                        line.len = (r.text.len() - start) as u32;
                        line.holes_end = r.holes.len() as u32;
                        r.text.push(b'\n');
                        r.shown += 1;
                    }
                    if line.what == 0 {
                        continue;
                    }
                }
                Entry::Unknown { .. } => line.what = UNKNOWN,
                Entry::Bad(error) => {
                    line.what = BAD;
                    line.aux = r.bad.len() as u32;
                    r.bad.push(error);
                }
            }
            r.lines.push(line);
        }
        // A clock that stepped back: the block's records by time (stable: equal times keep
        // their place in the block).
        if backwards {
            r.lines.sort_by_key(|l| l.time);
        }
        r.block = Some(Box::new(block));
        Piece::Block(r)
    }
}

impl Timed for Rendered {
    fn tie(&self) -> Tie {
        Tie { log: self.file, thread: self.thread, segment: self.segment, sequence: self.sequence, index: self.index }
    }

    #[inline]
    fn first(&self) -> At {
        (0, self.lines[0].time)
    }

    #[inline]
    fn next(&self, (i, _): At) -> Option<At> {
        self.lines.get(i + 1).map(|line| (i + 1, line.time))
    }

    fn last(&self) -> At {
        let i = self.lines.len() - 1;
        (i, self.lines[i].time)
    }

    fn bytes(&self) -> usize {
        Rendered::bytes(self)
    }
}

/// Line `i` of `r`'s place in the merge's order.
#[inline]
fn place(keys: &Keys, r: &Rendered, i: usize) -> Place {
    keys.place(r, (i, r.lines[i].time))
}

/// Where `print` writes, and what it learns and counts in the order it writes.
pub(crate) struct Writer<'a> {
    pub(crate) renderer: &'a Renderer,
    pub(crate) catalogs: &'a [Catalog],
    pub(crate) paths: &'a [String],
    pub(crate) limit: Option<u64>,
    pub(crate) progress: &'a mut crate::progress::Progress,
    pub(crate) ann: Annotations,
    pub(crate) out: Vec<u8>,
    pub(crate) shown: u64,
    pub(crate) seen: u64,
    pub(crate) problems: Vec<String>,
    pub(crate) unknown: BTreeMap<(usize, u16), u64>,
    pub(crate) failure: Option<DumpError>,
    /// Lines written after a line of a later place, per log.
    pub(crate) disorder: Vec<u64>,
    last: Option<Place>,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(
        renderer: &'a Renderer,
        catalogs: &'a [Catalog],
        paths: &'a [String],
        limit: Option<u64>,
        progress: &'a mut crate::progress::Progress,
    ) -> Writer<'a> {
        Writer {
            renderer,
            catalogs,
            paths,
            limit,
            progress,
            ann: Annotations::default(),
            out: Vec::with_capacity(1 << 17),
            shown: 0,
            seen: 0,
            problems: Vec::new(),
            unknown: BTreeMap::new(),
            failure: None,
            disorder: vec![0; catalogs.len()],
            last: None,
        }
    }

    /// Writes what is buffered to stdout; `Break` when stdout is closed or fails.
    pub(crate) fn flush(&mut self) -> ControlFlow<()> {
        if self.out.is_empty() {
            return ControlFlow::Continue(());
        }
        let out = std::mem::take(&mut self.out);
        let flow = self.write(&out);
        self.out = out;
        self.out.clear();
        flow
    }

    /// Writes `bytes` to stdout; `Break` when stdout is closed or fails.
    fn write(&mut self, bytes: &[u8]) -> ControlFlow<()> {
        let result = io::stdout().lock().write_all(bytes);
        match result {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ControlFlow::Break(()),
            Err(e) => {
                self.failure = Some(DumpError::new(format!("cannot write the output: {e}")));
                ControlFlow::Break(())
            }
        }
    }

    /// Line `i` of `r`, at `place` in the merge's order.
    fn emit(&mut self, r: &Rendered, i: usize, place: Place) -> ControlFlow<()> {
        if self.last.is_some_and(|last| place < last) {
            self.disorder[r.file] += 1;
        } else {
            self.last = Some(place);
        }
        self.seen += 1;
        if self.seen.is_multiple_of(1 << 16) {
            self.progress.update(self.seen * 32);
        }
        self.write_line(r, i)
    }

    /// Lines `from..to` of `r`, which follow one another in the merge's order (a run of a
    /// chain): as [`Writer::emit`] of each, with the bookkeeping done once for the run, and
    /// the text of consecutive lines that need nothing filled in copied at once.
    fn emit_lines(&mut self, keys: &Keys, r: &Rendered, from: usize, to: usize) -> ControlFlow<()> {
        let first = place(keys, r, from);
        // Out of order (the window was exceeded) or cut by `--limit`: line by line.
        if self.limit.is_some() || self.last.is_some_and(|last| first < last) {
            for i in from..to {
                self.emit(r, i, place(keys, r, i))?;
            }
            return ControlFlow::Continue(());
        }
        // The run's lines are in order: each is after the one before, so after `last`.
        self.last = Some(place(keys, r, to - 1));
        let seen = self.seen;
        self.seen += (to - from) as u64;
        if seen >> 16 != self.seen >> 16 {
            self.progress.update(self.seen >> 16 << 16 << 5);
        }
        // The text of the lines since the last that needed more than a copy (lines that
        // follow one another in the text: a block sorted by time may have them apart).
        let mut copy = 0..0;
        for i in from..to {
            let line = &r.lines[i];
            if line.what == SHOW && (line.holes == line.holes_end || self.ann.is_empty()) {
                self.shown += 1;
                let start = line.start as usize;
                if copy.end != start {
                    self.put(&r.text[copy])?;
                    copy = start..start;
                }
                copy.end = start + line.len as usize + 1;
                continue;
            }
            self.put(&r.text[copy])?;
            copy = 0..0;
            self.write_line(r, i)?;
        }
        self.put(&r.text[copy])?;
        if self.out.len() >= 1 << 16 {
            return self.flush();
        }
        ControlFlow::Continue(())
    }

    /// Writes `text` after what is buffered: a long text (a run of lines) straight from
    /// where it was rendered, without a copy; `Break` when stdout is closed or fails.
    fn put(&mut self, text: &[u8]) -> ControlFlow<()> {
        if text.len() < 1 << 14 {
            self.out.extend_from_slice(text);
            return ControlFlow::Continue(());
        }
        self.flush()?;
        self.write(text)
    }

    /// What line `i` of `r` writes, learns and counts.
    fn write_line(&mut self, r: &Rendered, i: usize) -> ControlFlow<()> {
        let line = &r.lines[i];
        if line.what & LEARN != 0 {
            self.ann.learn_fact(r.file, r.facts[line.aux as usize].clone());
        }
        if line.what & SHOW != 0 {
            if self.limit.is_some_and(|l| self.shown >= l) {
                return ControlFlow::Break(());
            }
            self.shown += 1;
            // With its newline.
            let text = &r.text[line.start as usize..=(line.start + line.len) as usize];
            let holes = &r.holes[line.holes as usize..line.holes_end as usize];
            if holes.is_empty() || self.ann.is_empty() {
                self.out.extend_from_slice(text);
            } else if let Some(desc) = self.catalogs[r.file].get(line.code) {
                self.renderer.fill(&mut self.out, &text[..text.len() - 1], holes, &self.ann, r.file, desc);
                self.out.push(b'\n');
            } else {
                self.out.push(b'\n');
            }
            if self.out.len() >= 1 << 16 {
                return self.flush();
            }
        }
        if line.what & UNKNOWN != 0 {
            *self.unknown.entry((r.file, line.code)).or_insert(0) += 1;
        }
        if line.what & BAD != 0 {
            let error = &r.bad[line.aux as usize];
            self.problems.push(format!("{}: thread {}: {error}", self.paths[r.file], r.thread));
        }
        ControlFlow::Continue(())
    }
}

/// The merge: rendered blocks in the one [`Order`] of the workspace's merges, their lines
/// written in runs.
pub(crate) struct LineMerge {
    order: Order<Rendered>,
}

impl LineMerge {
    /// A merge that holds at most `window` bytes and writes every line before `mark`'s as soon
    /// as it has it; `wall` gives each log's clock when several logs are merged on wall-clock
    /// time.
    pub(crate) fn new(window: usize, wall: Option<Vec<Clock>>, mark: Watermark) -> LineMerge {
        LineMerge { order: Order::new(Keys::new(wall), window, mark) }
    }

    /// Takes the next piece (in the order the blocks were read), then writes the lines that
    /// no later block can precede, and the earliest lines while more than the window is held.
    pub(crate) fn insert(&mut self, piece: Piece, w: &mut Writer<'_>) -> ControlFlow<()> {
        match piece {
            Piece::Damaged { file, error, at } => {
                self.order.merged(file, at, None);
                w.problems.push(format!("{}: {error}", w.paths[file]));
            }
            Piece::Block(r) => {
                for error in &r.walk_errors {
                    w.problems.push(format!("{}: thread {}: {error}", w.paths[r.file], r.thread));
                }
                // The lines are sorted by time: the first is the earliest.
                self.order.merged(r.file, r.offset, Some((r.base_time, r.lines.first().map(|l| l.time))));
                if !r.lines.is_empty() {
                    self.order.hold(r);
                }
            }
        }
        self.order.hand_on_due(&mut |keys: &Keys, r: &Rendered, from: At, to: Option<At>| {
            w.emit_lines(keys, r, from.0, to.map_or(r.lines.len(), |to| to.0))
        })
    }

    /// Whether a block of log `file` had a line earlier than its `base_time`.
    pub(crate) fn early(&self, file: usize) -> bool {
        self.order.early(file)
    }

    /// Writes every line held.
    pub(crate) fn finish(&mut self, w: &mut Writer<'_>) -> ControlFlow<()> {
        self.order.finish(&mut |keys: &Keys, r: &Rendered, from: At, to: Option<At>| {
            w.emit_lines(keys, r, from.0, to.map_or(r.lines.len(), |to| to.0))
        })
    }

    /// Blocks written out, whose buffers the next blocks reuse.
    fn spent(&mut self) -> &mut Vec<Rendered> {
        self.order.spent()
    }
}

/// The number of workers: `EVENT_DUMP_JOBS` when set, else the machine's parallelism.
pub(crate) fn default_jobs() -> usize {
    if let Some(n) = std::env::var("EVENT_DUMP_JOBS").ok().and_then(|v| v.trim().parse::<usize>().ok()) {
        return n.max(1);
    }
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Reads the blocks of `logs` (from the log furthest behind, by its blocks' start times),
/// renders them on `jobs` workers (on this thread for 1) and merges them into `w`, counting
/// each block in its log's ledger (`ledgers`, one a log) as it is taken back. `true` when
/// every log was read to its end (not when the output stopped first: `--limit`, a closed
/// pipe).
///
/// The plan ([`Feed`]: which log is read next, where rendered blocks go back to) is the same
/// for both executions: on workers ([`on_workers`]), or on this thread when `jobs` is 1 or no
/// worker thread can be made ([`on_this_thread`]).
pub(crate) fn run(
    logs: &mut [Log],
    ledgers: &mut [Ledger],
    ctx: &Context<'_>,
    jobs: usize,
    merge: &mut LineMerge,
    w: &mut Writer<'_>,
) -> bool {
    let mut feed = Feed {
        several: logs.len() > 1,
        done: vec![false; logs.len()],
        last_key: vec![i128::MIN; logs.len()],
        logs,
        ledgers,
        spent: Vec::new(),
    };
    if jobs > 1
        && let Some(whole) = on_workers(&mut feed, ctx, jobs, merge, w)
    {
        return whole;
    }
    on_this_thread(&mut feed, ctx, merge, w)
}

/// Which block is read next, and where each block goes once rendered: the plan of [`run`].
struct Feed<'l> {
    logs: &'l mut [Log],
    /// Each log's ledger: every block counted as it is taken back, in the log's order.
    ledgers: &'l mut [Ledger],
    several: bool,
    /// The logs read to their end, and the latest start time (a key of the merge) each
    /// log's blocks said.
    done: Vec<bool>,
    last_key: Vec<i128>,
    /// Blocks rendered, whose buffers their logs reuse.
    spent: Vec<(usize, Block)>,
}

impl Feed<'_> {
    /// The next block of the log furthest behind, `None` once every log is read.
    /// Its records may still be packed: the worker that renders it unpacks them.
    fn read(&mut self, ctx: &Context<'_>) -> Option<(usize, Result<PendingBlock, BlockError>)> {
        for (f, block) in self.spent.drain(..) {
            self.logs[f].recycle(block);
        }
        loop {
            let f = (0..self.logs.len()).filter(|&f| !self.done[f]).min_by_key(|&f| self.last_key[f])?;
            match self.logs[f].next_pending() {
                None => self.done[f] = true,
                Some(block) => {
                    if let Ok(b) = &block {
                        let time = b.header().base_time;
                        let key = if self.several { ctx.clocks[f].wall_ns(time) } else { i128::from(time) };
                        self.last_key[f] = self.last_key[f].max(key);
                    }
                    return Some((f, block));
                }
            }
        }
    }

    /// A piece taken back, in the order its block was read: counted in its log's ledger (the
    /// block, then the records its worker counted), its block's buffer kept for its log.
    fn taken(&mut self, piece: &mut Piece) {
        match piece {
            Piece::Block(r) => {
                if let Some(block) = r.block.take() {
                    let ledger = &mut self.ledgers[r.file];
                    ledger.block(&block);
                    ledger.add(&mut r.tally);
                    self.spent.push((r.file, *block));
                }
            }
            Piece::Damaged { file, error, .. } => self.ledgers[*file].damaged(error),
        }
    }
}

/// Every buffer written out is reused: freeing them to allocate others as the next blocks
/// come would cost the kernel's time, and, freed by one thread after another allocated
/// them, grow the allocator's heaps with the length of the log.
fn recycle(ctx: &Context<'_>, merge: &mut LineMerge) {
    if let Ok(mut spare) = ctx.spare.lock() {
        spare.append(merge.spent());
    }
    merge.spent().clear();
}

/// [`run`] on `jobs` threads (`jobs - 1` workers and this one, which renders while the block
/// it needs next is not back), merged here in sequence: whether every log was read, or `None`
/// when no worker thread could be made (a thread limit), before any block was read.
fn on_workers(
    feed: &mut Feed<'_>,
    ctx: &Context<'_>,
    jobs: usize,
    merge: &mut LineMerge,
    w: &mut Writer<'_>,
) -> Option<bool> {
    // Blocks in flight at most: enough to keep every worker busy while the main thread
    // merges, few enough that they cost little memory. 16 a worker: with 4, a block that
    // renders slowly held the next ones back and a core idled (`print` of the benchmark's
    // zstd log used 1.65 of 2 cores, 1.78 with 16, 6 % faster; 64 was no faster and held
    // 28 MB more; BENCHMARKS.md).
    let ahead = jobs as u64 * 16;
    let (job_tx, job_rx) = mpsc::channel::<(u64, usize, Result<PendingBlock, BlockError>)>();
    let job_rx = Mutex::new(job_rx);
    let (piece_tx, piece_rx) = mpsc::channel::<(u64, Piece)>();
    std::thread::scope(|s| {
        let mut workers = 0;
        // This thread renders too, while the block it needs next is not back: `jobs` threads
        // render in all.
        for _ in 1..jobs {
            let (job_rx, piece_tx) = (&job_rx, piece_tx.clone());
            let spawned = std::thread::Builder::new().name("event-dump-render".into()).spawn_scoped(s, move || {
                let mut bench = Bench::default();
                loop {
                    // The lock is held while waiting: the other workers wait on it instead.
                    let job = match job_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok((n, f, block)) = job else { return };
                    if piece_tx.send((n, ctx.render(&mut bench, f, block))).is_err() {
                        return;
                    }
                }
            });
            // A thread limit: the workers made so far do the work (none: one thread does).
            if spawned.is_err() {
                break;
            }
            workers += 1;
        }
        drop(piece_tx);
        if workers == 0 {
            return None;
        }
        let (mut sent, mut taken) = (0u64, 0u64);
        let mut bench = Bench::default();
        let mut reading = true;
        let mut waiting: BTreeMap<u64, Piece> = BTreeMap::new();
        let whole = 'merge: loop {
            while reading && sent - taken < ahead {
                match feed.read(ctx) {
                    Some((f, block)) => {
                        if job_tx.send((sent, f, block)).is_err() {
                            break 'merge false;
                        }
                        sent += 1;
                    }
                    None => reading = false,
                }
            }
            if taken == sent {
                break merge.finish(w).is_continue();
            }
            let mut piece = loop {
                if let Some(piece) = waiting.remove(&taken) {
                    break piece;
                }
                match piece_rx.try_recv() {
                    Ok((n, piece)) => {
                        waiting.insert(n, piece);
                        continue;
                    }
                    Err(mpsc::TryRecvError::Disconnected) => break 'merge false,
                    Err(mpsc::TryRecvError::Empty) => {}
                }
                // Nothing is back: a block no worker has taken yet is rendered here rather
                // than waited for (a worker waiting for one holds the lock: there is none).
                let job = job_rx.try_lock().ok().and_then(|rx| rx.try_recv().ok());
                if let Some((n, f, block)) = job {
                    waiting.insert(n, ctx.render(&mut bench, f, block));
                    continue;
                }
                match piece_rx.recv() {
                    Ok((n, piece)) => {
                        waiting.insert(n, piece);
                    }
                    // Every worker stopped: none can have panicked without the scope
                    // saying so, so this is not reached.
                    Err(_) => break 'merge false,
                }
            };
            taken += 1;
            feed.taken(&mut piece);
            if merge.insert(piece, w).is_break() {
                break false;
            }
            recycle(ctx, merge);
        };
        drop(job_tx);
        Some(whole)
    })
}

/// [`run`] on this thread: `--jobs 1`, or no worker thread could be made (a thread limit).
fn on_this_thread(feed: &mut Feed<'_>, ctx: &Context<'_>, merge: &mut LineMerge, w: &mut Writer<'_>) -> bool {
    let mut bench = Bench::default();
    while let Some((f, block)) = feed.read(ctx) {
        let mut piece = ctx.render(&mut bench, f, block);
        feed.taken(&mut piece);
        if merge.insert(piece, w).is_break() {
            return false;
        }
        recycle(ctx, merge);
    }
    merge.finish(w).is_continue()
}
