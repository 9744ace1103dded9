//! Scoped capture, for tests: the events that one thread records inside a scope, kept apart
//! from every other thread and from the process's recording, and decoded for assertions (in
//! the spirit of tracing's `with_default` and tracing-test).
//!
//! A process has one recording at a time ([`Recorder::start`](crate::Recorder::start) says
//! `AlreadyRunning` to a second), but `cargo test` runs each test on a thread of its own, in
//! parallel. A capture is therefore per thread: while [`capture`] runs its closure (or a
//! [`Capture`] is held), every `event!` of that thread goes into the capture's own buffer,
//! whether or not a recording runs, and no other thread's event does. What it recorded is an
//! ordinary stream, decoded by `event_format`'s decoder: [`Captured`] gives the events, their
//! names, their values, or the lines `event-dump print` shows.
//!
//! # The hook, and what it costs
//!
//! `event!` tests its event's bit in its set's control bits (`__private::route`): one load,
//! a test and a branch when the event is off, whether or not a capture runs. While a capture
//! runs, every set's bits are all ones (the selection that control makes is kept in a shadow
//! meanwhile: `event_set::force_all`), so every event passes that test; the enabled side sees
//! [`any`] set and asks the cold path ([`enabled_here`]), which records it when this thread
//! captures, and otherwise only when the selection records it, before any argument is
//! evaluated. So a capture in one test never makes another thread evaluate arguments or
//! record what its selection leaves out. The record goes to the capture in `__private::emit_routed`
//! ([`try_emit`]): the thread buffers of `buffer` are untouched.
//!
//! A capture records every event of every set linked into the program (its `events::SET`),
//! with a deterministic clock (each event one nanosecond after the one before), as thread 1.
//! The `tracing` bridge's records (its spans' `SpanOpen`, `SpanClose`, ..., its
//! `TraceEvent`s) go to the capture too, and so do the `SpanCurrent` marks that name the span
//! each record was made in, as the recorder writes them; the built-in events that `message`,
//! `intern` and `label` record go to the process's recording as before. Threads that the captured code spawns are not
//! captured: a capture is this thread's.

use crate::event_set::EventSet;
use event_format::builtin;
use event_format::decode::{Block, Catalog, Decoder, Entry, Event};
use event_format::wire::{
    ArgWriter, BlockHeader, BlockWriter, Clock, Header, Order, Producer, SetEntry, Text, Value, body,
};
use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::OnceLock;
use std::sync::atomic::AtomicU64;

thread_local! {
    /// This thread's capture, while one runs.
    static CAPTURE: RefCell<Option<CaptureBuffer>> = const { RefCell::new(None) };
}

/// The cold half of `event!`'s test for an event diverted (its bit set in the divert word,
/// `divert::any`): whether it is recorded. Without a capture, the set's bit that `event!` tested is the selection's: yes. While a
/// capture runs somewhere, by this thread's capture or, failing that, by the selection.
#[cold]
#[inline(never)]
pub(crate) fn enabled_here(bits: &[AtomicU64], index: u16) -> bool {
    if !crate::divert::capturing() {
        return true;
    }
    crate::event_set::enabled(bits, index) || captures_here()
}

/// Whether this thread captures now.
fn captures_here() -> bool {
    CAPTURE.try_with(|s| s.try_borrow().is_ok_and(|s| s.is_some())).unwrap_or(false)
}

/// Records event `index` of `set` into this thread's capture; gives `fill` back when this
/// thread does not capture (the caller records it, as a diverted event). Called for a
/// diverted event only (its bit set in the divert word, `divert::any`: `__private::emit_routed`).
#[inline]
pub(crate) fn try_emit<F: FnOnce(&mut ArgWriter<'_>)>(
    set: &'static EventSet,
    index: u16,
    fixed: usize,
    strs: &[Text<'_>],
    fill: F,
) -> Option<F> {
    if !crate::divert::capturing() {
        return Some(fill);
    }
    let mut fill = Some(fill);
    let _ = CAPTURE.try_with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut()
            && let Some(buffer) = slot.as_mut()
            && let Some(fill) = fill.take()
        {
            buffer.event(set, index, fixed, strs, fill);
        }
    });
    fill
}

/// Records a built-in event of the `tracing` bridge into this thread's capture; gives `fill`
/// back when this thread does not capture (the caller records it as usual).
#[cfg(feature = "tracing")]
#[inline]
pub(crate) fn try_emit_builtin<F: FnOnce(&mut ArgWriter<'_>)>(
    code: u16,
    fixed: usize,
    strs: &[Text<'_>],
    fill: F,
) -> Option<F> {
    if !crate::divert::capturing() {
        return Some(fill);
    }
    let mut fill = Some(fill);
    let _ = CAPTURE.try_with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut()
            && let Some(buffer) = slot.as_mut()
            && let Some(fill) = fill.take()
        {
            buffer.write(code, fixed, strs, fill);
        }
    });
    fill
}

/// Runs `f` and returns the events that this thread recorded meanwhile, decoded. They go to
/// the capture alone, whether or not a recording runs; other threads' events never do.
///
/// ```
/// event_runtime::include_events!("../events.def");
///
/// fn open_pool(id: u64) {
///     event!(PoolInit, id as usize, 0usize, "AMC", 16u32);
/// }
///
/// // In a test: #[test] fn opening_a_pool_records_it() { ... }
/// fn main() {
///     let events = event_runtime::capture(|| open_pool(7));
///     assert_eq!(events.names(), ["PoolInit"]);
///     assert_eq!(events.lines(), ["0.000000002 T1 Pool.PoolInit pool=0x7 arena=0x0 class=\"AMC\" align=16"]);
/// }
/// ```
pub fn capture(f: impl FnOnce()) -> Captured {
    let capture = Capture::start();
    f();
    capture.finish()
}

/// A capture of this thread's events, from [`start`](Capture::start) to
/// [`finish`](Capture::finish) (or drop, which discards them): [`capture`] as a guard, for
/// code whose result the test also needs. Captures nest: an inner one takes the events until
/// it finishes (finish the inner one first), then the outer one goes on.
///
/// ```
/// event_runtime::include_events!("../events.def");
///
/// fn load() -> u64 {
///     event!(ClientPhase, "load", 3u64, -1);
///     4
/// }
///
/// fn main() {
///     let capture = event_runtime::Capture::start();
///     let loaded = load();
///     let events = capture.finish();
///     assert_eq!(loaded, 4);
///     use event_runtime::format::{Text, Value};
///     let phase = &events.values("ClientPhase")[0];
///     assert_eq!(phase[1..], [Value::Word(3), Value::Signed(-1)]);
///     assert_eq!(phase[0], Value::Str(Text::new("load")));
/// }
/// ```
#[derive(Debug)]
#[must_use = "a Capture captures until it is finished or dropped"]
pub struct Capture {
    /// The capture this one interrupted on this thread, given back at the end.
    outer: Option<CaptureBuffer>,
    finished: bool,
    /// A capture belongs to the thread that started it.
    _thread: PhantomData<*const ()>,
}

impl Capture {
    /// Starts capturing this thread's events.
    pub fn start() -> Capture {
        let outer = CAPTURE.with(|s| s.borrow_mut().replace(CaptureBuffer::new()));
        crate::divert::capture_started();
        Capture { outer, finished: false, _thread: PhantomData }
    }

    /// Stops capturing and returns what was captured.
    pub fn finish(mut self) -> Captured {
        let buffer = self.end();
        Captured::decode(buffer.map(CaptureBuffer::into_stream).unwrap_or_default())
    }

    /// Ends the capture: this thread's capture buffer, and the outer one back in its place.
    fn end(&mut self) -> Option<CaptureBuffer> {
        if self.finished {
            return None;
        }
        self.finished = true;
        let outer = self.outer.take();
        let buffer = CAPTURE.try_with(|s| std::mem::replace(&mut *s.borrow_mut(), outer)).ok().flatten();
        crate::divert::capture_ended();
        buffer
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.end();
    }
}

/// What every capture shares: the sets linked into the program, their wire codes and the
/// stream header that names them (computed once).
struct Prepared {
    sets: Vec<(&'static EventSet, u16)>,
    header: Vec<u8>,
}

/// The size of a capture's blocks.
const BLOCK_SIZE: usize = 64 << 10;

/// The thread id of a capture's blocks.
const THREAD: u64 = 1;

fn prepared() -> Option<&'static Prepared> {
    static PREPARED: OnceLock<Option<Prepared>> = OnceLock::new();
    PREPARED
        .get_or_init(|| {
            let (sets, schemas) = match crate::Recorder::new().recorded_sets() {
                Ok(found) => found,
                Err(e) => {
                    eprintln!("event-runtime: nothing is captured: {e}");
                    return None;
                }
            };
            let entries = SetEntry::assign(schemas);
            let firsts = entries.iter().map(|e| e.range().map_or(0, |(first, _)| first));
            let sets = sets.into_iter().zip(firsts).collect();
            let clock = Clock::deterministic();
            let header = Header::with_sets(entries, BLOCK_SIZE as u32, clock, Producer::current(0));
            match header.encode() {
                Ok(header) => Some(Prepared { sets, header }),
                Err(e) => {
                    eprintln!("event-runtime: nothing is captured: {e}");
                    None
                }
            }
        })
        .as_ref()
}

/// A capture's buffer: the stream so far and the block being written, by event-format's
/// [`BlockWriter`] (the one way to append a record outside the hot path).
struct CaptureBuffer {
    prepared: Option<&'static Prepared>,
    /// The header and every finished block.
    stream: Vec<u8>,
    /// The block being written, `BLOCK_SIZE` bytes.
    block: BlockWriter,
    sequence: u64,
    /// The last record's time; each record is one tick later.
    time: u64,
    /// The span the last `SpanCurrent` written names (0 before any), as the recorder keeps
    /// it (`buffer`'s `span_written`).
    span_written: u64,
}

impl fmt::Debug for CaptureBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CaptureBuffer").field("stream_bytes", &self.stream.len()).finish_non_exhaustive()
    }
}

impl CaptureBuffer {
    fn new() -> CaptureBuffer {
        let prepared = prepared();
        let stream = prepared.map(|p| p.header.clone()).unwrap_or_default();
        let mut buffer = CaptureBuffer {
            prepared,
            stream,
            block: CaptureBuffer::block(0, 1),
            sequence: 0,
            time: 0,
            span_written: 0,
        };
        let name = std::thread::current().name().map_or_else(|| "thread-1".to_owned(), str::to_owned);
        buffer.write(builtin::THREAD_NAME, builtin::THREAD_NAME_FIXED, &[Text::new(&name)], |w| {
            body::thread_name(w, THREAD)
        });
        buffer
    }

    /// An empty block of number `sequence` whose first record is at `base_time`.
    fn block(sequence: u64, base_time: u64) -> BlockWriter {
        let header = BlockHeader { flags: 0, sequence, thread: THREAD, base_time, lost: 0, used: 0, crc: 0 };
        BlockWriter::new(Order::NATIVE, BLOCK_SIZE as u32, &header)
    }

    /// Seals the block being written into the stream (when it holds a record) and starts
    /// the next, whose first record is at `base_time`.
    fn finish_block(&mut self, base_time: u64) {
        let block = std::mem::replace(&mut self.block, CaptureBuffer::block(self.sequence + 1, base_time));
        if block.is_empty() {
            self.block = CaptureBuffer::block(self.sequence, base_time);
        } else {
            self.stream.extend_from_slice(&block.finish());
            self.sequence += 1;
        }
    }

    /// Records event `index` of `set`; an event of a set that is not registered (none is)
    /// is not recorded.
    fn event(
        &mut self,
        set: &'static EventSet,
        index: u16,
        fixed: usize,
        strs: &[Text<'_>],
        fill: impl FnOnce(&mut ArgWriter<'_>),
    ) {
        let Some(prepared) = self.prepared else { return };
        let Some(&(_, first)) = prepared.sets.iter().find(|(s, _)| std::ptr::eq(*s, set)) else { return };
        self.write(first.wrapping_add(index), fixed, strs, fill);
    }

    /// Appends a record, one tick after the one before, in a new block when it does not fit
    /// in this one. A record that no block takes (its fixed arguments alone are too long,
    /// which no valid events.def allows) is not recorded.
    fn write(&mut self, code: u16, fixed: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut ArgWriter<'_>)) {
        // The thread's current `tracing` span changed since the last mark: a mark first, as
        // the recorder writes one.
        let span = crate::buffer::current_span();
        if span != self.span_written && code != builtin::THREAD_NAME {
            self.span_written = span;
            self.put(builtin::SPAN_CURRENT, builtin::SPAN_CURRENT_FIXED, &[], |w| body::span_current(w, span));
        }
        self.put(code, fixed, strs, fill);
    }

    /// Appends a record as [`write`](Self::write) does, without the mark.
    fn put(&mut self, code: u16, fixed: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut ArgWriter<'_>)) {
        let time = self.time + 1;
        if !self.block.fits(time, fixed, strs) {
            if self.block.is_empty() {
                return;
            }
            self.finish_block(time);
        }
        if self.block.push_with(code, time, fixed, strs, fill).is_ok() {
            self.time = time;
        }
    }

    fn into_stream(mut self) -> Vec<u8> {
        self.finish_block(self.time + 1);
        std::mem::take(&mut self.stream)
    }
}

/// The events a [`capture`] recorded: a stream, decoded by `event_format`'s decoder.
///
/// [`names`](Self::names) and [`lines`](Self::lines) are the quick assertions;
/// [`events`](Self::events) gives each event as the decoder does (its description, its
/// [`values`](Event::values)); [`entries`](Self::entries) every record, built-in ones
/// included; [`bytes`](Self::bytes) the stream itself, which `event-dump` reads from a file.
/// Its `Display` is [`lines`](Self::lines), one per line.
#[derive(Debug)]
pub struct Captured {
    stream: Vec<u8>,
    catalog: Catalog,
    clock: Option<Clock>,
    blocks: Vec<Block>,
}

impl Captured {
    fn decode(stream: Vec<u8>) -> Captured {
        let mut catalog = Catalog::new(&[]);
        let mut clock = None;
        let mut blocks = Vec::new();
        // The stream was written just now by this module: it decodes.
        if let Ok(mut decoder) = Decoder::new(&stream[..]) {
            catalog = Catalog::new(&decoder.header().sets);
            clock = Some(decoder.header().clock);
            while let Some(block) = decoder.next_block() {
                if let Ok(block) = block {
                    blocks.push(block);
                }
            }
        }
        Captured { stream, catalog, clock, blocks }
    }

    /// Every record, in order: the `ThreadName` the capture starts with, then each event
    /// (built-in ones as [`Entry::Event`] too).
    pub fn entries(&self) -> Vec<Entry<'_>> {
        self.blocks.iter().flat_map(|b| b.entries(&self.catalog)).collect()
    }

    /// The events of the program's event sets (`event!`), in the order they were recorded.
    pub fn events(&self) -> Vec<Event<'_>> {
        self.entries()
            .into_iter()
            .filter_map(|e| match e {
                Entry::Event(e) if !e.desc.is_builtin() => Some(e),
                _ => None,
            })
            .collect()
    }

    /// The events named `name` (their name in events.def), in order.
    pub fn named(&self, name: &str) -> Vec<Event<'_>> {
        self.events().into_iter().filter(|e| e.desc.name == name).collect()
    }

    /// The names of the events, in order (their names in events.def, unqualified).
    pub fn names(&self) -> Vec<&str> {
        self.events().into_iter().map(|e| e.desc.name.as_str()).collect()
    }

    /// The values of each event named `name`, in order: `[[Value::Word(3), ..], ..]`.
    pub fn values(&self, name: &str) -> Vec<Vec<Value<'_>>> {
        self.named(name).iter().map(|e| e.values().collect()).collect()
    }

    /// Each event as one line of text, as `event-dump print` shows it: time in seconds (one
    /// nanosecond per event), `T1`, `Kind.Name` (`set:Kind.Name` when the program has several
    /// event sets), then `param=value` pairs.
    pub fn lines(&self) -> Vec<String> {
        let Some(clock) = &self.clock else { return Vec::new() };
        self.events()
            .iter()
            .map(|e| {
                let mut line = String::new();
                // Writing into a String cannot fail.
                let _ = event_format::text::write_event(&mut line, clock, e);
                line
            })
            .collect()
    }

    /// How many events were captured (built-in ones not counted).
    pub fn len(&self) -> usize {
        self.events().len()
    }

    /// Whether no event was captured.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stream: a header naming every set linked into the program, then the blocks.
    /// Written to a file, `event-dump` reads it.
    pub fn bytes(&self) -> &[u8] {
        &self.stream
    }
}

impl fmt::Display for Captured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in self.lines() {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}
