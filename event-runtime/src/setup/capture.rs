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
//! `divert::any` set and asks the cold path (`capture_buffer::enabled_here`), which records it when this thread
//! captures, and otherwise only when the selection records it, before any argument is
//! evaluated. So a capture in one test never makes another thread evaluate arguments or
//! record what its selection leaves out. The record goes to the capture in `__private::emit_routed`
//! (`capture_buffer::try_emit`): the thread buffers of `buffer` are untouched.
//!
//! A capture records every event of every set linked into the program (its `events::SET`),
//! with a deterministic clock (each event one nanosecond after the one before), as thread 1.
//! The `tracing` bridge's records (its spans' `SpanOpen`, `SpanClose`, ..., its
//! `TraceEvent`s) go to the capture too, and so do the `SpanCurrent` marks that name the span
//! each record was made in: before a record whose thread's current span changed since the
//! last mark, none before a span record, a `Callsite` or a `ThreadName` (a capture's blocks
//! are read together, so none opens a block, and the mark is one tick before its record);
//! the built-in events that `message`, `intern` and `label` record go to the process's
//! recording as before. Threads that the captured code spawns are not captured: a capture is
//! this thread's.

use crate::emit::capture_buffer::{self, BLOCK_SIZE, CaptureBuffer, Prepared};
use event_format::decode::{Block, Catalog, Decoder, Entry, Event};
use event_format::wire::{Clock, Header, Producer, SetEntry, Value};
use std::fmt;
use std::marker::PhantomData;
use std::sync::OnceLock;

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
        let outer = capture_buffer::begin(CaptureBuffer::new(prepared()));
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
        capture_buffer::end(outer)
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.end();
    }
}

/// What every capture shares, computed once: the sets linked into the program, their wire
/// codes and the stream header that names them.
fn prepared() -> Option<&'static Prepared> {
    static PREPARED: OnceLock<Option<Prepared>> = OnceLock::new();
    PREPARED
        .get_or_init(|| {
            let (sets, schemas) = match crate::setup::recorder::Recorder::new().recorded_sets() {
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
