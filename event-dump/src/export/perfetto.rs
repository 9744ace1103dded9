//! `export --to perfetto`: Perfetto's own trace format (a `Trace` of `TracePacket`s carrying
//! `TrackEvent`s, protos/perfetto/trace in Perfetto's repository), which ui.perfetto.dev and
//! trace_processor read natively; written as the logs are read, through the merge, in one
//! packet sequence.
//!
//! - **Tracks.** Each log is a process track (`pid` as the Chrome export gives it; named by
//!   its program, with its real pid when another log took it); each thread a thread track
//!   named by the log's `ThreadName` (described again when a later `ThreadName` renames it).
//!   Each async span has tracks of its name under its process: as many as were open at once,
//!   a span taking the first free one (Perfetto's UI shows tracks of one name together). A
//!   `tracing` span (the bridge's `SpanOpen` and `SpanClose`) is an async span: its tracks
//!   are those of its own name (`request`), and its slice runs from its open to its close,
//!   on whichever threads they were recorded.
//! - **The current span.** A `SpanCurrent` (the recorder's mark that a thread's events from
//!   there on were recorded inside a `tracing` span) is no event of its own on the trace:
//!   each later event of its thread, up to the next, has the annotation `span` (the span's
//!   id, as the `SpanOpen`'s `span`), so that the events of one request are found by it.
//!   Each counter is a counter track of its name under its process, with its unit.
//! - **Events.** What the log's [`Roles`] say each event means:
//!   - a span's begin is a `TYPE_SLICE_BEGIN` (on its thread's track, or its async track)
//!     named by the span, and its end the `TYPE_SLICE_END` of that track; an event that
//!     ends one span and begins another is both, in that order;
//!   - a counter sample is a `TYPE_COUNTER` on the counter's track: `counter_value`
//!     (`double_counter_value` for a `D`, and for a `W` above 2^63 − 1);
//!   - every other event, and an end that closes no span, is a `TYPE_INSTANT` on its
//!     thread's track named by the event (`set:Name` in a log of several sets);
//!   - the event that takes part in a flow carries the piece of work's id in `flow_ids`
//!     (a begin or a step) or `terminating_flow_ids` (an end), on its slice or instant;
//!   - the kind is the event's category; every parameter is a debug annotation of its name
//!     (`pointer_value` for `P` and `A`, `uint_value` for `W` and `U`, `int_value` for `I`,
//!     `double_value`, `bool_value`, and interned strings), with an address's label beside
//!     it (`<param> (label)`), and a `tracing` event's fields as a dictionary (`fields`).
//! - **Spans not paired.** No time is invented: a span still open at the end of the log is
//!   left open (Perfetto shows it as not ended, reaching to the end of the trace); a span
//!   cut by the end of a span that encloses it on its thread (their thread's spans nest,
//!   [`event_format::roles::Pairer`]) ends on the track with it, as a track's slices must
//!   nest, marked with the annotation `unended: true`; an end that closes nothing is an
//!   instant. All are counted on stderr.
//! - **Size.** Event names, categories, annotation names and string values are interned
//!   (`InternedData`, sent once and then named by number); timestamps are deltas from the
//!   previous packet's, on a clock of the sequence (`ClockSnapshot` with `is_incremental`,
//!   64), except for an event the merge hands on out of time order, whose time is absolute
//!   (`BUILTIN_CLOCK_BOOTTIME`, on which the trace's time line is). The interned tables are
//!   bounded: past [`MAX_INTERNED`] bytes the sequence's incremental state is cleared and
//!   interning starts again. Then the packets are deflated, [`FLUSH_AT`] bytes of them at a
//!   time (zlib, at its fastest level, by `flate2` on the pure-Rust `zlib-rs`), each chunk
//!   the `compressed_packets` of a packet of its own, which trace_processor and
//!   ui.perfetto.dev inflate and read in its place: about a quarter of the bytes, and a
//!   sixteenth of the Chrome JSON's on the benchmark's log (BENCHMARKS.md), where the packets
//!   as they are come to a quarter of it, most of them the format's framing (a debug
//!   annotation's is 5 bytes, an event's packet's 15 to 17), which no other encoding the
//!   format allows shortens by much (one sequence per thread, whose defaults name its track,
//!   saves an event on a thread's track its `track_uuid`: 3 %). The deflating is a third of
//!   the export's work, on a thread of its own. `--uncompressed` ([`Packing::Plain`]) writes
//!   the packets as they are, the same bytes, for a reader that does not inflate them.
//! - **Time.** As in the Chrome export (exact nanoseconds, as `print`): nanoseconds since the
//!   start of the log that started first. An event before that (only a foreign or damaged
//!   log has one) cannot be a Perfetto timestamp: it is counted on stderr and left out.
//! - **Three threads.** The merge runs on the calling thread and hands the events on, in
//!   batches, to an encoder thread that writes the packets, and the encoder hands them, in
//!   chunks, to a compressor thread that deflates and writes them ([`write_trace`]); the
//!   bytes are those one thread would write.

use super::proto::Proto;
use super::timeline::Timeline;
use super::{Said, Window};
use crate::export::Item;
use crate::log::{DumpError, Log};
use crate::render::Annotations;
use event_format::builtins::{BuiltinEvent, interned_arg};
use event_format::decode::{Catalog, Event};
use event_format::fields::FieldValue;
use event_format::ledger::Ledger;
use event_format::roles::{FlowLink, Flows, IdValue, Pairer, Role, Roles, SpanId, SpanKey};
use event_format::wire::{Order, Value};
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc;

/// Field numbers of the messages written (Perfetto's protos/perfetto/trace).
mod field {
    pub(super) const TRACE_PACKET: u32 = 1;
    // TracePacket
    pub(super) const TIMESTAMP: u32 = 8;
    pub(super) const TIMESTAMP_CLOCK_ID: u32 = 58;
    pub(super) const SEQUENCE_ID: u32 = 10;
    pub(super) const SEQUENCE_FLAGS: u32 = 13;
    pub(super) const TRACK_EVENT: u32 = 11;
    pub(super) const TRACK_DESCRIPTOR: u32 = 60;
    pub(super) const CLOCK_SNAPSHOT: u32 = 6;
    pub(super) const INTERNED_DATA: u32 = 12;
    pub(super) const DEFAULTS: u32 = 59;
    pub(super) const COMPRESSED_PACKETS: u32 = 50;
    // TracePacketDefaults
    pub(super) const DEFAULT_CLOCK_ID: u32 = 58;
    // ClockSnapshot and its Clock
    pub(super) const CLOCKS: u32 = 1;
    pub(super) const PRIMARY_TRACE_CLOCK: u32 = 2;
    pub(super) const CLOCK_ID: u32 = 1;
    pub(super) const CLOCK_TIMESTAMP: u32 = 2;
    pub(super) const CLOCK_INCREMENTAL: u32 = 3;
    // TrackDescriptor
    pub(super) const UUID: u32 = 1;
    pub(super) const NAME: u32 = 2;
    pub(super) const PROCESS: u32 = 3;
    pub(super) const THREAD: u32 = 4;
    pub(super) const PARENT_UUID: u32 = 5;
    pub(super) const COUNTER: u32 = 8;
    pub(super) const PID: u32 = 1;
    pub(super) const TID: u32 = 2;
    pub(super) const PROCESS_NAME: u32 = 6;
    pub(super) const PROCESS_LABELS: u32 = 8;
    pub(super) const THREAD_NAME: u32 = 5;
    pub(super) const UNIT: u32 = 3;
    pub(super) const UNIT_NAME: u32 = 6;
    // TrackEvent
    pub(super) const CATEGORY_IIDS: u32 = 3;
    pub(super) const DEBUG_ANNOTATIONS: u32 = 4;
    pub(super) const TYPE: u32 = 9;
    pub(super) const NAME_IID: u32 = 10;
    pub(super) const TRACK_UUID: u32 = 11;
    pub(super) const COUNTER_VALUE: u32 = 30;
    pub(super) const DOUBLE_COUNTER_VALUE: u32 = 44;
    pub(super) const FLOW_IDS: u32 = 47;
    pub(super) const TERMINATING_FLOW_IDS: u32 = 48;
    // DebugAnnotation
    pub(super) const ANNOTATION_NAME_IID: u32 = 1;
    pub(super) const BOOL_VALUE: u32 = 2;
    pub(super) const UINT_VALUE: u32 = 3;
    pub(super) const INT_VALUE: u32 = 4;
    pub(super) const DOUBLE_VALUE: u32 = 5;
    pub(super) const STRING_VALUE: u32 = 6;
    pub(super) const POINTER_VALUE: u32 = 7;
    pub(super) const ANNOTATION_NAME: u32 = 10;
    pub(super) const DICT_ENTRIES: u32 = 11;
    pub(super) const STRING_VALUE_IID: u32 = 17;
    // InternedData; each entry is {iid = 1, name or str = 2}
    pub(super) const EVENT_CATEGORIES: u32 = 1;
    pub(super) const EVENT_NAMES: u32 = 2;
    pub(super) const ANNOTATION_NAMES: u32 = 3;
    pub(super) const STRING_VALUES: u32 = 29;
    pub(super) const IID: u32 = 1;
    pub(super) const INTERNED: u32 = 2;
}

/// `TrackEvent.Type`.
const SLICE_BEGIN: u64 = 1;
const SLICE_END: u64 = 2;
const INSTANT: u64 = 3;
const COUNTER: u64 = 4;
/// `TracePacket.SequenceFlags`: SEQ_INCREMENTAL_STATE_CLEARED.
const STATE_CLEARED: u64 = 1;
/// `CounterDescriptor.Unit`.
const UNIT_TIME_NS: u64 = 1;
const UNIT_SIZE_BYTES: u64 = 3;

/// The one packet sequence's id.
const SEQUENCE: u64 = 1;
/// The sequence's incremental clock (ids 64 to 127 are a sequence's own).
const CLOCK_DELTAS: u64 = 64;
/// `BUILTIN_CLOCK_BOOTTIME`: the trace's time line.
const CLOCK_TRACE: u64 = 6;

/// The most bytes of interned strings held before the sequence's state is cleared.
pub(crate) const MAX_INTERNED: usize = 16 << 20;

/// Bytes of packets written at a time: a chunk, deflated into one `compressed_packets`.
const FLUSH_AT: usize = 1 << 20;
/// Chunks on their way to the compressor at a time.
const CHUNKS: usize = 2;
/// The deflate level: the fastest (module docs, "Size").
const LEVEL: u32 = 1;

/// How the packets are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Packing {
    /// Deflated, a chunk of packets at a time, each chunk a packet's `compressed_packets`.
    Deflated,
    /// As they are (`--uncompressed`), for a reader that does not inflate them.
    Plain,
}

pub(crate) fn export(
    logs: &mut [Log],
    out: &Path,
    packing: Packing,
    window: &mut Window,
) -> Result<ExitCode, DumpError> {
    let report = super::trace_file::write_whole(out, "trace.pftrace", |file| {
        write_trace(logs, file, MAX_INTERNED, packing, &mut *window)
    })?;
    Said::of(&report.ledgers).report("perfetto", &report.notes(), window);
    Ok(ExitCode::SUCCESS)
}

/// What the export could not carry over or pair, for stderr.
#[derive(Debug, Default)]
pub(crate) struct Report {
    /// Each log's ledger: what it lost, and what is wrong with it.
    pub(crate) ledgers: Vec<Ledger>,
    /// Spans never ended: still open at the end, cut by an enclosing end, or given up.
    pub(crate) unended: u64,
    /// Ends that closed no span.
    pub(crate) unmatched: u64,
    /// Ends of spans whose begin the window left out, exported as instants.
    pub(crate) begun_outside: u64,
    /// Events before the trace's start.
    pub(crate) before_start: u64,
}

impl Report {
    /// The notes beside what was skipped, each a short clause.
    pub(crate) fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.unended > 0 {
            notes.push(format!(
                "{} never ended (left open: Perfetto shows {} not ended; or cut by the end of an enclosing span, \
                 marked `unended`)",
                plural(self.unended, "span", "spans"),
                if self.unended == 1 { "it" } else { "them" }
            ));
        }
        if self.unmatched > 0 {
            notes.push(format!(
                "{} with no open span, exported as {}",
                plural(self.unmatched, "span end", "span ends"),
                if self.unmatched == 1 { "an instant" } else { "instants" }
            ));
        }
        if self.begun_outside > 0 {
            notes.push(format!(
                "{} whose begin the choice left out, exported as {}",
                plural(self.begun_outside, "span end", "span ends"),
                if self.begun_outside == 1 { "an instant" } else { "instants" }
            ));
        }
        if self.before_start > 0 {
            notes.push(format!(
                "left out {} timed before the trace's start, which a Perfetto timestamp cannot hold",
                plural(self.before_start, "event", "events")
            ));
        }
        notes
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The interned strings of the sequence, by table, and the entries not yet sent.
#[derive(Default)]
struct Interner {
    names: FxHashMap<Box<str>, u64>,
    categories: FxHashMap<Box<str>, u64>,
    keys: FxHashMap<Box<str>, u64>,
    strings: FxHashMap<Box<[u8]>, u64>,
    /// Bytes of strings held.
    bytes: usize,
    /// Counts the clearings: an iid cached under another generation is stale.
    generation: u32,
    /// `InternedData` entries for the next packet.
    pending: Proto,
}

impl Interner {
    fn text(&mut self, table: u32, text: &str) -> u64 {
        let map = match table {
            field::EVENT_NAMES => &mut self.names,
            field::EVENT_CATEGORIES => &mut self.categories,
            _ => &mut self.keys,
        };
        if let Some(&iid) = map.get(text) {
            return iid;
        }
        let iid = map.len() as u64 + 1;
        map.insert(text.into(), iid);
        self.bytes += text.len() + 32;
        self.pending.message(table, |p| {
            p.uint(field::IID, iid);
            p.bytes(field::INTERNED, text.as_bytes());
        });
        iid
    }

    /// A string value, by its bytes as recorded; sent as UTF-8 (bytes that are not replaced
    /// by U+FFFD, as the JSON output does).
    fn string(&mut self, bytes: &[u8]) -> u64 {
        if let Some(&iid) = self.strings.get(bytes) {
            return iid;
        }
        let iid = self.strings.len() as u64 + 1;
        self.strings.insert(bytes.into(), iid);
        self.bytes += bytes.len() + 32;
        let text = String::from_utf8_lossy(bytes);
        self.pending.message(field::STRING_VALUES, |p| {
            p.uint(field::IID, iid);
            p.bytes(field::INTERNED, text.as_bytes());
        });
        iid
    }

    fn clear(&mut self) {
        self.names.clear();
        self.categories.clear();
        self.keys.clear();
        self.strings.clear();
        self.bytes = 0;
        self.generation += 1;
        self.pending.buf.clear();
    }
}

/// An event type's interned name, category and parameter names, under one generation.
struct Names {
    generation: u32,
    name: u64,
    category: u64,
    params: Vec<u64>,
    /// `<param> (label)`, interned when first needed (0 until then).
    labels: Vec<u64>,
}

/// A span begun and not yet ended: the track its slice is on, and its async lane; or, when
/// the window left its begin out, `selected` false (it is paired, so that its end closes
/// it, but has no slice).
struct Open {
    track: u64,
    lane: Option<(LaneKey, usize)>,
    selected: bool,
}

/// Which async tracks a span takes: its span, and for a span named by its begin (a `tracing`
/// span) the number of its name in [`Process::lane_names`] (0 for the others).
type LaneKey = (SpanId, u32);

/// The tracks of one async span of a log: one per span open at once.
#[derive(Default)]
struct SpanTracks {
    uuids: Vec<u64>,
    free: BTreeSet<usize>,
}

/// What the export keeps of one log (one process).
struct Process {
    uuid: u64,
    pid: u64,
    threads: FxHashMap<u64, u64>,
    /// Threads' names from `ThreadName`.
    names: FxHashMap<u64, String>,
    pairer: Pairer<Open>,
    flows: Flows,
    tracks: FxHashMap<LaneKey, SpanTracks>,
    /// The names of the `tracing` spans begun, numbered from 1 for their [`LaneKey`]s.
    lane_names: FxHashMap<String, u32>,
    /// Each thread's current `tracing` span (its latest `SpanCurrent`), when not 0.
    current: FxHashMap<u64, u64>,
    /// Each counter's track, 0 until described.
    counters: Vec<u64>,
    /// Wire code -> its event type's names.
    descs: FxHashMap<u16, Names>,
    /// Each span's interned name, with its generation.
    span_names: Vec<(u32, u64)>,
}

/// Where the encoder's chunks of packets go.
enum Sink<W> {
    /// Into the file, as they are.
    Plain(W),
    /// To the compressor's thread (`chunks`), which gives them back emptied (`spare`).
    Deflated { chunks: mpsc::SyncSender<Vec<u8>>, spare: mpsc::Receiver<Vec<u8>> },
}

impl<W: Write> Sink<W> {
    /// Takes the packets in `buf`, leaving it empty.
    fn take(&mut self, buf: &mut Vec<u8>) -> io::Result<()> {
        match self {
            Sink::Plain(out) => {
                out.write_all(buf)?;
                buf.clear();
            }
            Sink::Deflated { chunks, spare } => {
                let next = spare.try_recv().unwrap_or_else(|_| Vec::with_capacity(FLUSH_AT + (64 << 10)));
                let full = std::mem::replace(buf, next);
                // The compressor stopped: its error is the one to report.
                chunks.send(full).map_err(|_| io::Error::other("the compressor stopped"))?;
            }
        }
        Ok(())
    }

    /// Takes the last packets; the compressor finishes the file once its channel closes.
    fn finish(mut self, buf: &mut Vec<u8>) -> io::Result<()> {
        if !buf.is_empty() {
            self.take(buf)?;
        }
        match self {
            Sink::Plain(mut out) => out.flush(),
            Sink::Deflated { .. } => Ok(()),
        }
    }
}

/// The compressor's stage: each chunk of packets (a `Trace`'s bytes) deflated (zlib) into
/// the `compressed_packets` of a packet of its own, written to `out`; each chunk given back
/// through `spare`.
fn compress(chunks: mpsc::Receiver<Vec<u8>>, spare: mpsc::Sender<Vec<u8>>, mut out: impl Write) -> io::Result<()> {
    let mut z = flate2::Compress::new(flate2::Compression::new(LEVEL), true);
    let mut deflated = Vec::with_capacity(FLUSH_AT);
    let (mut head, mut inner) = (Proto::default(), Proto::default());
    for mut chunk in chunks {
        deflated.clear();
        // Room for the worst case of deflate's fixed codes (9 bits a byte) and its blocks'
        // headers, to finish in one call; the loop gives more to a backend that wants it.
        deflated.reserve(chunk.len() + chunk.len() / 8 + 1024);
        loop {
            let done = z.total_in() as usize;
            let status = z
                .compress_vec(&chunk[done..], &mut deflated, flate2::FlushCompress::Finish)
                .map_err(io::Error::other)?;
            if status == flate2::Status::StreamEnd {
                break;
            }
            deflated.reserve(deflated.capacity().max(1 << 16));
        }
        z.reset();
        // The packet's framing, then the deflated bytes, without copying them.
        inner.buf.clear();
        inner.len_prefix(field::COMPRESSED_PACKETS, deflated.len());
        head.buf.clear();
        head.len_prefix(field::TRACE_PACKET, inner.buf.len() + deflated.len());
        out.write_all(&head.buf)?;
        out.write_all(&inner.buf)?;
        out.write_all(&deflated)?;
        chunk.clear();
        let _ = spare.send(chunk);
    }
    out.flush()
}

/// The trace being written.
struct Trace<W: Write> {
    out: Sink<W>,
    p: Proto,
    interner: Interner,
    /// The last time written on the incremental clock.
    last_ts: u64,
    next_uuid: u64,
    report: Report,
    /// Flow ids are serials of each log's pieces of work, spread over the logs.
    logs: u64,
    /// The current `tracing` span of the event being written (0: none): its annotation `span`.
    span: u64,
}

impl<W: Write> Trace<W> {
    fn uuid(&mut self) -> u64 {
        self.next_uuid += 1;
        self.next_uuid
    }

    fn flush_if_full(&mut self) -> io::Result<()> {
        if self.p.buf.len() >= FLUSH_AT {
            self.out.take(&mut self.p.buf)?;
        }
        Ok(())
    }

    /// The first packet, and the one after each clearing: the state cleared, the defaults
    /// (times on the incremental clock), and the clock's snapshot at the last time written.
    fn state_packet(&mut self) {
        let at = self.last_ts;
        self.p.message(field::TRACE_PACKET, |p| {
            p.uint(field::SEQUENCE_ID, SEQUENCE);
            p.uint(field::SEQUENCE_FLAGS, STATE_CLEARED);
            p.message(field::DEFAULTS, |p| p.uint(field::DEFAULT_CLOCK_ID, CLOCK_DELTAS));
            p.message(field::CLOCK_SNAPSHOT, |p| {
                p.message(field::CLOCKS, |p| {
                    p.uint(field::CLOCK_ID, CLOCK_DELTAS);
                    p.uint(field::CLOCK_TIMESTAMP, at);
                    p.uint(field::CLOCK_INCREMENTAL, 1);
                });
                p.message(field::CLOCKS, |p| {
                    p.uint(field::CLOCK_ID, CLOCK_TRACE);
                    p.uint(field::CLOCK_TIMESTAMP, at);
                });
                p.uint(field::PRIMARY_TRACE_CLOCK, CLOCK_TRACE);
            });
        });
    }

    /// A packet of one track descriptor.
    fn descriptor(&mut self, write: impl FnOnce(&mut Proto)) {
        self.p.message(field::TRACE_PACKET, |p| {
            p.uint(field::SEQUENCE_ID, SEQUENCE);
            p.message(field::TRACK_DESCRIPTOR, write);
        });
    }

    fn thread_descriptor(&mut self, uuid: u64, pid: u64, tid: u64, name: &str) {
        self.descriptor(|p| {
            p.uint(field::UUID, uuid);
            p.message(field::THREAD, |p| {
                p.uint(field::PID, pid);
                p.uint(field::TID, tid);
                p.bytes(field::THREAD_NAME, name.as_bytes());
            });
        });
    }

    /// Starts an event's packet at `ts`: the time, the sequence, and the track event, whose
    /// fields follow; [`Trace::end_packet`] ends it.
    fn begin_packet(&mut self, ts: u64) -> (super::proto::Nested, super::proto::Nested) {
        let packet = self.p.begin(field::TRACE_PACKET);
        if ts >= self.last_ts {
            self.p.uint(field::TIMESTAMP, ts - self.last_ts);
            self.last_ts = ts;
        } else {
            // Out of time order: an absolute time, which leaves the incremental clock as it is.
            self.p.uint(field::TIMESTAMP, ts);
            self.p.uint(field::TIMESTAMP_CLOCK_ID, CLOCK_TRACE);
        }
        self.p.uint(field::SEQUENCE_ID, SEQUENCE);
        let event = self.p.begin(field::TRACK_EVENT);
        (packet, event)
    }

    /// Ends the packet: the track event, then what it interned.
    fn end_packet(&mut self, (packet, event): (super::proto::Nested, super::proto::Nested)) {
        self.p.end(event);
        if !self.interner.pending.buf.is_empty() {
            let nested = self.p.begin(field::INTERNED_DATA);
            self.p.buf.extend_from_slice(&self.interner.pending.buf);
            self.interner.pending.buf.clear();
            self.p.end(nested);
        }
        self.p.end(packet);
    }
}

/// Writes the whole trace of `logs` to `out`, with the largest interned tables `max_interned`
/// bytes ([`MAX_INTERNED`]), packed as `packing` says.
///
/// Two threads share the work, three when the packets are deflated: this one merges the
/// logs (the merge's thread) and hands on each event, its arguments copied, in batches of
/// [`BATCH`] bytes, which the encoder's thread turns into packets in the same order; the
/// compressor's thread deflates each [`FLUSH_AT`] bytes of packets and writes them. At most
/// [`BATCHES`] batches and [`CHUNKS`] chunks are on their way at a time: memory stays
/// bounded whatever the logs' size.
/// Only the events `window` selects are written, a span by its begin (`export`'s module docs).
fn write_trace(
    logs: &mut [Log],
    out: impl Write + Send,
    max_interned: usize,
    packing: Packing,
    window: &mut Window,
) -> io::Result<Report> {
    let catalogs: Vec<Catalog> = logs.iter().map(|l| l.catalog().clone()).collect();
    let orders: Vec<Order> = logs.iter().map(|l| l.header().order).collect();
    let (to_encoder, batches) = mpsc::sync_channel::<Vec<u8>>(BATCHES);
    let (give_back, spare) = mpsc::channel::<Vec<u8>>();
    std::thread::scope(|scope| {
        let (sink, compressing) = match packing {
            Packing::Plain => (Sink::Plain(out), None),
            Packing::Deflated => {
                let (chunks, to_compress) = mpsc::sync_channel::<Vec<u8>>(CHUNKS);
                let (give_chunk_back, spare_chunks) = mpsc::channel::<Vec<u8>>();
                let compressing = scope.spawn(move || compress(to_compress, give_chunk_back, out));
                (Sink::Deflated { chunks, spare: spare_chunks }, Some(compressing))
            }
        };
        let mut encoder = Encoder::new(logs, sink, max_interned);
        let encoding = scope.spawn(move || -> io::Result<Encoder<_>> {
            for batch in batches {
                let mut at = 0;
                while let Some((file, event, selected)) = batch::read(&batch, &mut at, &catalogs, &orders) {
                    encoder.event(file, &event, selected)?;
                }
                let _ = give_back.send(batch);
            }
            Ok(encoder)
        });
        let mut batch = Vec::with_capacity(BATCH + 1024);
        let merged = super::merge_all(logs, "exported", |Item { file, event }| {
            let selected = window.keeps(file, &event);
            batch::write(&mut batch, file, &event, selected);
            if batch.len() >= BATCH {
                let mut next = spare.try_recv().unwrap_or_else(|_| Vec::with_capacity(BATCH + 1024));
                next.clear();
                let full = std::mem::replace(&mut batch, next);
                // The encoder stopped: its error is the one to report.
                to_encoder.send(full).map_err(|_| io::Error::other("the encoder stopped"))?;
            }
            Ok(())
        });
        let last = if batch.is_empty() {
            Ok(())
        } else {
            to_encoder.send(batch).map_err(|_| io::Error::other("the encoder stopped"))
        };
        drop(to_encoder);
        let encoded = encoding.join().map_err(|_| io::Error::other("the Perfetto encoder failed"))?;
        // Finishing hands the compressor its last chunk and closes its channel (as does an
        // encoder that stopped, dropped with its sink).
        let finished = encoded.and_then(Encoder::finish);
        if let Some(compressing) = compressing {
            // The compressor stopped: its error is the one to report.
            compressing.join().map_err(|_| io::Error::other("the Perfetto compressor failed"))??;
        }
        let mut report = finished?;
        let ledgers = merged?;
        last?;
        report.ledgers = ledgers;
        Ok(report)
    })
}

/// Bytes of events handed from the merge to the encoder at a time.
const BATCH: usize = 256 << 10;
/// Batches on their way at a time.
const BATCHES: usize = 4;

/// Events as the merge hands them to the encoder: each `file` (u32), `wire` code (u16),
/// `thread` (u64), `time` (u64), whether the window selected it (u8), the arguments' length
/// (u32) and bytes, in native order.
mod batch {
    use event_format::decode::{Catalog, Event};
    use event_format::wire::Order;

    const HEAD: usize = 4 + 2 + 8 + 8 + 1 + 4;

    pub(super) fn write(batch: &mut Vec<u8>, file: usize, event: &Event<'_>, selected: bool) {
        batch.extend_from_slice(&(file as u32).to_ne_bytes());
        batch.extend_from_slice(&event.desc.wire.to_ne_bytes());
        batch.extend_from_slice(&event.thread.to_ne_bytes());
        batch.extend_from_slice(&event.time.to_ne_bytes());
        batch.push(u8::from(selected));
        batch.extend_from_slice(&(event.args.len() as u32).to_ne_bytes());
        batch.extend_from_slice(event.args);
    }

    /// The event at `*at`, and `*at` moved past it; `None` at the end.
    pub(super) fn read<'b>(
        batch: &'b [u8],
        at: &mut usize,
        catalogs: &'b [Catalog],
        orders: &[Order],
    ) -> Option<(usize, Event<'b>, bool)> {
        let head = batch.get(*at..*at + HEAD)?;
        let file = u32::from_ne_bytes(head[0..4].try_into().ok()?) as usize;
        let wire = u16::from_ne_bytes(head[4..6].try_into().ok()?);
        let thread = u64::from_ne_bytes(head[6..14].try_into().ok()?);
        let time = u64::from_ne_bytes(head[14..22].try_into().ok()?);
        let selected = head[22] != 0;
        let len = u32::from_ne_bytes(head[23..27].try_into().ok()?) as usize;
        let args = batch.get(*at + HEAD..*at + HEAD + len)?;
        *at += HEAD + len;
        // The catalog that named the event names it again.
        let desc = catalogs.get(file)?.get(wire)?;
        Some((file, Event { desc, time, thread, args, order: *orders.get(file)? }, selected))
    }
}

/// What turns events into packets: the trace being written and what it knows of each log.
struct Encoder<W: Write> {
    trace: Trace<W>,
    timeline: Timeline,
    roles: Vec<Roles>,
    processes: Vec<Process>,
    ann: Annotations,
    max_interned: usize,
}

impl<W: Write> Encoder<W> {
    /// The trace's first packets: the sequence's state and a process per log.
    fn new(logs: &[Log], out: Sink<W>, max_interned: usize) -> Encoder<W> {
        let timeline = Timeline::new(logs);
        let mut trace = Trace {
            out,
            p: Proto { buf: Vec::with_capacity(FLUSH_AT + (64 << 10)) },
            interner: Interner::default(),
            last_ts: 0,
            next_uuid: 0,
            report: Report::default(),
            logs: logs.len() as u64,
            span: 0,
        };
        trace.state_packet();
        let roles: Vec<Roles> = logs.iter().map(|l| Roles::new(&l.header().sets)).collect();
        let mut processes: Vec<Process> = Vec::with_capacity(logs.len());
        let headers: Vec<&event_format::wire::Header> = logs.iter().map(|l| l.header()).collect();
        let names = crate::identity::process_names(&headers);
        for (file, log) in logs.iter().enumerate() {
            let uuid = trace.uuid();
            let pid = timeline.pids[file];
            let name = &names[file];
            let labels = &log.header().properties.labels;
            trace.descriptor(|p| {
                p.uint(field::UUID, uuid);
                p.message(field::PROCESS, |p| {
                    p.uint(field::PID, pid);
                    p.bytes(field::PROCESS_NAME, name.as_bytes());
                    for (key, value) in labels {
                        p.bytes(field::PROCESS_LABELS, format!("{key}={value}").as_bytes());
                    }
                });
            });
            processes.push(Process {
                uuid,
                pid,
                threads: HashMap::default(),
                names: HashMap::default(),
                counters: vec![0; roles[file].counters().len()],
                span_names: vec![(u32::MAX, 0); roles[file].spans().len()],
                pairer: Pairer::new(),
                flows: Flows::new(),
                tracks: HashMap::default(),
                lane_names: HashMap::default(),
                current: HashMap::default(),
                descs: HashMap::default(),
            });
        }
        Encoder { trace, timeline, roles, processes, ann: Annotations::default(), max_interned }
    }

    /// The packets of one event of log `file`; of an event the window did not select, only
    /// the end of a span whose begin it selected.
    fn event(&mut self, file: usize, event: &Event<'_>, selected: bool) -> io::Result<()> {
        let Encoder { trace, timeline, roles, processes, ann, max_interned } = self;
        ann.learn(file, event);
        let process = &mut processes[file];
        match BuiltinEvent::of(event) {
            Some(BuiltinEvent::ThreadName { thread, name }) => {
                let name = name.to_string_lossy().into_owned();
                if let Some(&uuid) = process.threads.get(&thread) {
                    trace.thread_descriptor(uuid, process.pid, thread, &name);
                }
                process.names.insert(thread, name);
            }
            Some(BuiltinEvent::SpanCurrent { span }) => {
                // No event of its own: the later events of its thread carry its span.
                match span {
                    0 => process.current.remove(&event.thread),
                    span => process.current.insert(event.thread, span),
                };
                return Ok(());
            }
            _ => {}
        }
        trace.span = process.current.get(&event.thread).copied().unwrap_or(0);
        let Ok(ts) = u64::try_from(timeline.ns(file, event.time)) else {
            trace.report.before_start += u64::from(selected);
            return Ok(());
        };
        if trace.interner.bytes > *max_interned {
            trace.interner.clear();
            trace.state_packet();
        }
        let thread = match process.threads.get(&event.thread) {
            Some(&uuid) => uuid,
            // A left-out event writes nothing on its thread's track (a span's end goes on
            // its begin's): no track for it.
            None if !selected => 0,
            None => {
                let uuid = trace.uuid();
                let name = process.names.get(&event.thread).cloned().unwrap_or_else(|| format!("T{}", event.thread));
                trace.thread_descriptor(uuid, process.pid, event.thread, &name);
                process.threads.insert(event.thread, uuid);
                uuid
            }
        };
        write_event(trace, process, &roles[file], (file, selected), event, ts, thread, ann);
        trace.flush_if_full()
    }

    /// Writes what is left, and says what was not paired.
    fn finish(self) -> io::Result<Report> {
        let Encoder { mut trace, processes, .. } = self;
        for process in processes {
            trace.report.unmatched += process.pairer.unmatched();
            trace.report.unended += process.pairer.given_up();
            // Spans left open, those the window selected: Perfetto shows them not ended.
            let left = process.pairer.finish();
            let threads = left.threads.into_iter().flat_map(|(_, open)| open.into_iter().map(|(_, o)| o));
            let open = threads.chain(left.asyncs.into_iter().flat_map(|(_, opens)| opens));
            trace.report.unended += open.filter(|o| o.selected).count() as u64;
        }
        let Trace { out, mut p, report, .. } = trace;
        out.finish(&mut p.buf)?;
        Ok(report)
    }
}

/// How an event is shown: the packets of its role (module docs).
#[allow(clippy::too_many_arguments, reason = "the event and where it goes")]
fn write_event<W: Write>(
    trace: &mut Trace<W>,
    process: &mut Process,
    roles: &Roles,
    (file, selected): (usize, bool),
    event: &Event<'_>,
    ts: u64,
    thread: u64,
    ann: &Annotations,
) {
    let Some(role) = roles.of(event.desc.wire) else {
        if selected {
            let names = names(trace, process, event);
            instant(trace, event, ts, thread, names, ann, file, &[]);
        }
        return;
    };
    let role: &Role = role;
    let links: Vec<FlowLink> = role
        .flows
        .iter()
        .filter_map(|f| {
            let id = IdValue::of(&event.values().nth(f.param)?);
            process.flows.step(f.flow, id, f.step)
        })
        .collect();
    let flow = |link: &FlowLink| link.serial * trace.logs + file as u64;
    // The flows step on every event, so that a flow's ids stay those of the whole log; a
    // left-out event carries none.
    let flows: Vec<(u64, bool)> = links.iter().filter(|_| selected).map(|l| (flow(l), !l.outgoing)).collect();
    let mut flows_left: &[(u64, bool)] = &flows;
    let mut shown = false;
    // Its end first: the span it closes, and those it cuts.
    if let Some(end) = role.ends
        && let Some(key) = roles.key(&end, event)
        && let Some(ended) = process.pairer.end(event.thread, &key)
    {
        // Slices opened inside it and still open end with it.
        for cut in ended.cut.iter().filter(|c| c.selected) {
            unended_cut(trace, cut, ts);
        }
        if !ended.begin.selected {
            // Its begin was left out: so is the span, and this end, when selected, is an
            // instant (below).
            trace.report.begun_outside += u64::from(selected);
        } else {
            let names = names(trace, process, event);
            let handle = trace.begin_packet(ts);
            trace.p.uint(field::TYPE, SLICE_END);
            trace.p.uint(field::TRACK_UUID, ended.begin.track);
            annotations(trace, event, names, ann, file);
            write_flows(&mut trace.p, flows_left);
            flows_left = &[];
            trace.end_packet(handle);
            if let Some((key, lane)) = ended.begin.lane
                && let Some(lanes) = process.tracks.get_mut(&key)
            {
                lanes.free.insert(lane);
            }
            shown = true;
        }
    }
    if let Some(begin) = role.begins
        && let Some(key) = roles.key(&begin, event)
        && !selected
    {
        process.pairer.begin(event.thread, key, Open { track: 0, lane: None, selected: false });
    } else if let Some(begin) = role.begins
        && let Some(key) = roles.key(&begin, event)
    {
        let (track, lane) = match &key {
            SpanKey::Async(..) => {
                let key = lane_key(process, roles, &begin, event);
                let (track, lane) = lane(trace, process, roles, key, event, &begin);
                (track, Some((key, lane)))
            }
            _ => (thread, None),
        };
        let name = span_name(trace, process, roles, &begin, event);
        let category = names(trace, process, event).category;
        let handle = trace.begin_packet(ts);
        trace.p.uint(field::TYPE, SLICE_BEGIN);
        trace.p.uint(field::TRACK_UUID, track);
        trace.p.uint(field::NAME_IID, name);
        trace.p.uint(field::CATEGORY_IIDS, category);
        let names = names(trace, process, event);
        annotations(trace, event, names, ann, file);
        write_flows(&mut trace.p, flows_left);
        flows_left = &[];
        trace.end_packet(handle);
        process.pairer.begin(event.thread, key, Open { track, lane, selected: true });
        shown = true;
    }
    if !selected {
        return;
    }
    for (i, counter) in role.counters.iter().enumerate() {
        let Some(value) = event.values().nth(counter.param) else { continue };
        let track = counter_track(trace, process, roles, counter.counter as usize);
        let handle = trace.begin_packet(ts);
        trace.p.uint(field::TYPE, COUNTER);
        trace.p.uint(field::TRACK_UUID, track);
        match value {
            Value::Word(v) | Value::Pointer(v) | Value::Address(v) => match i64::try_from(v) {
                Ok(v) => trace.p.int(field::COUNTER_VALUE, v),
                Err(_) => trace.p.double(field::DOUBLE_COUNTER_VALUE, v as f64),
            },
            Value::Unsigned(v) => trace.p.int(field::COUNTER_VALUE, i64::from(v)),
            Value::Signed(v) => trace.p.int(field::COUNTER_VALUE, v),
            Value::Double(v) => trace.p.double(field::DOUBLE_COUNTER_VALUE, v),
            Value::Bool(b) => trace.p.int(field::COUNTER_VALUE, i64::from(b)),
            Value::Str(_) => {}
        }
        // The event's parameters, once.
        if !shown && i == 0 {
            let names = names(trace, process, event);
            annotations(trace, event, names, ann, file);
        }
        trace.end_packet(handle);
    }
    // An event shown by none of its roles (an end that closed nothing, values that give no
    // key) is an instant, and so is a counter sample that takes part in a flow (a counter
    // is no slice a flow could link).
    if !shown && (role.counters.is_empty() || !flows_left.is_empty()) {
        let names = names(trace, process, event);
        instant(trace, event, ts, thread, names, ann, file, flows_left);
    }
}

/// The end of a slice `cut` cut short by the end of a span enclosing it, marked `unended`.
fn unended_cut<W: Write>(trace: &mut Trace<W>, cut: &Open, ts: u64) {
    trace.report.unended += 1;
    let handle = trace.begin_packet(ts);
    trace.p.uint(field::TYPE, SLICE_END);
    trace.p.uint(field::TRACK_UUID, cut.track);
    let iid = trace.interner.text(field::ANNOTATION_NAMES, "unended");
    trace.p.message(field::DEBUG_ANNOTATIONS, |p| {
        p.uint(field::ANNOTATION_NAME_IID, iid);
        p.uint(field::BOOL_VALUE, 1);
    });
    trace.end_packet(handle);
}

/// Writes `flows`' ids: (id, whether the piece ends here).
fn write_flows(p: &mut Proto, flows: &[(u64, bool)]) {
    for &(id, ends) in flows {
        p.fixed64(if ends { field::TERMINATING_FLOW_IDS } else { field::FLOW_IDS }, id);
    }
}

/// An instant on the thread's track, named by the event.
#[allow(clippy::too_many_arguments, reason = "the parts of one packet")]
fn instant<W: Write>(
    trace: &mut Trace<W>,
    event: &Event<'_>,
    ts: u64,
    thread: u64,
    names: &mut Names,
    ann: &Annotations,
    file: usize,
    flows: &[(u64, bool)],
) {
    let handle = trace.begin_packet(ts);
    trace.p.uint(field::TYPE, INSTANT);
    trace.p.uint(field::TRACK_UUID, thread);
    trace.p.uint(field::NAME_IID, names.name);
    trace.p.uint(field::CATEGORY_IIDS, names.category);
    annotations(trace, event, names, ann, file);
    write_flows(&mut trace.p, flows);
    trace.end_packet(handle);
}

/// The interned names of `event`'s type, interned again after a clearing.
fn names<'p, W: Write>(trace: &mut Trace<W>, process: &'p mut Process, event: &Event<'_>) -> &'p mut Names {
    let generation = trace.interner.generation;
    let names = process.descs.entry(event.desc.wire).or_insert_with(|| Names {
        generation: generation.wrapping_sub(1),
        name: 0,
        category: 0,
        params: Vec::new(),
        labels: Vec::new(),
    });
    if names.generation != generation {
        let desc = event.desc;
        let shown: Cow<'_, str> =
            if desc.qualified { format!("{}:{}", desc.set, desc.name).into() } else { desc.name.as_str().into() };
        names.name = trace.interner.text(field::EVENT_NAMES, &shown);
        names.category = trace.interner.text(field::EVENT_CATEGORIES, &desc.full_kind());
        names.params = desc.params.iter().map(|p| trace.interner.text(field::ANNOTATION_NAMES, p)).collect();
        names.labels = vec![0; desc.params.len()];
        names.generation = generation;
    }
    names
}

/// The interned name of the span `begin` begins for `event`.
fn span_name<W: Write>(
    trace: &mut Trace<W>,
    process: &mut Process,
    roles: &Roles,
    begin: &event_format::roles::SpanUse,
    event: &Event<'_>,
) -> u64 {
    let generation = trace.interner.generation;
    let cached = &mut process.span_names[begin.span as usize];
    let by_begin = roles.named_by_begin(begin);
    if !by_begin && cached.0 == generation {
        return cached.1;
    }
    let name = roles.begin_name(begin, event);
    let iid = trace.interner.text(field::EVENT_NAMES, &name);
    if !by_begin {
        *cached = (generation, iid);
    }
    iid
}

/// The tracks the async span that `event` begins takes: those of its span, and for a
/// `tracing` span those of its name.
fn lane_key(process: &mut Process, roles: &Roles, begin: &event_format::roles::SpanUse, event: &Event<'_>) -> LaneKey {
    if !roles.named_by_begin(begin) {
        return (begin.span, 0);
    }
    let name = roles.begin_name(begin, event);
    let next = process.lane_names.len() as u32 + 1;
    let number = match process.lane_names.get(name.as_ref()) {
        Some(&n) => n,
        None => {
            process.lane_names.insert(name.into_owned(), next);
            next
        }
    };
    (begin.span, number)
}

/// A free track of the async spans of `key` (described when new): its uuid and lane.
fn lane<W: Write>(
    trace: &mut Trace<W>,
    process: &mut Process,
    roles: &Roles,
    key: LaneKey,
    event: &Event<'_>,
    begin: &event_format::roles::SpanUse,
) -> (u64, usize) {
    let lanes = process.tracks.entry(key).or_default();
    if let Some(lane) = lanes.free.pop_first() {
        return (lanes.uuids[lane], lane);
    }
    let uuid = trace.uuid();
    lanes.uuids.push(uuid);
    let lane = lanes.uuids.len() - 1;
    let name = roles.begin_name(begin, event).into_owned();
    let parent = process.uuid;
    trace.descriptor(|p| {
        p.uint(field::UUID, uuid);
        p.uint(field::PARENT_UUID, parent);
        p.bytes(field::NAME, name.as_bytes());
    });
    (uuid, lane)
}

/// Counter `counter`'s track, described when first used.
fn counter_track<W: Write>(trace: &mut Trace<W>, process: &mut Process, roles: &Roles, counter: usize) -> u64 {
    if process.counters[counter] != 0 {
        return process.counters[counter];
    }
    let uuid = trace.uuid();
    let def = &roles.counters()[counter];
    let (name, unit, parent) = (def.name.clone(), def.unit.clone(), process.uuid);
    trace.descriptor(|p| {
        p.uint(field::UUID, uuid);
        p.uint(field::PARENT_UUID, parent);
        p.bytes(field::NAME, name.as_bytes());
        p.message(field::COUNTER, |p| match unit.as_str() {
            "bytes" => p.uint(field::UNIT, UNIT_SIZE_BYTES),
            "ns" => p.uint(field::UNIT, UNIT_TIME_NS),
            "" => {}
            other => p.bytes(field::UNIT_NAME, other.as_bytes()),
        });
    });
    process.counters[counter] = uuid;
    uuid
}

/// The event's parameters as debug annotations, each by its interned name; an address's
/// label beside it; a `tracing` event's fields as a dictionary (a span event's `fields`
/// in place of its text, a `TraceEvent`'s as `fields` beside its `text`).
fn annotations<W: Write>(trace: &mut Trace<W>, event: &Event<'_>, names: &mut Names, ann: &Annotations, file: usize) {
    let traced = if event.desc.is_builtin() { event_format::fields::of_event(event) } else { None };
    let fields_at = event_format::fields::fields_param(event);
    for (i, value) in event.values().enumerate() {
        let Some(&key) = names.params.get(i) else { break };
        let nested = trace.p.begin(field::DEBUG_ANNOTATIONS);
        trace.p.uint(field::ANNOTATION_NAME_IID, key);
        match value {
            Value::Pointer(v) | Value::Address(v) => trace.p.uint(field::POINTER_VALUE, v),
            Value::Word(v) => trace.p.uint(field::UINT_VALUE, v),
            Value::Unsigned(v) => trace.p.uint(field::UINT_VALUE, u64::from(v)),
            Value::Signed(v) => trace.p.int(field::INT_VALUE, v),
            Value::Double(v) => trace.p.double(field::DOUBLE_VALUE, v),
            Value::Bool(b) => trace.p.uint(field::BOOL_VALUE, u64::from(b)),
            Value::Str(_) if fields_at == Some(i) && traced.is_some() => {
                dictionary_entries(&mut trace.p, traced.as_deref().unwrap_or_default());
            }
            Value::Str(t) => {
                let iid = trace.interner.string(t.bytes);
                trace.p.uint(field::STRING_VALUE_IID, iid);
            }
        }
        trace.p.end(nested);
        let label = match value {
            Value::Pointer(v) | Value::Address(v) => ann.label(file, v),
            Value::Word(v) if interned_arg(event.desc) == Some(i) => ann.interned(file, v),
            _ => None,
        };
        if let Some(label) = label {
            if names.labels[i] == 0 {
                let key = format!("{} (label)", event.desc.params[i]);
                names.labels[i] = trace.interner.text(field::ANNOTATION_NAMES, &key);
            }
            let (key, value) = (names.labels[i], trace.interner.string(label.as_bytes()));
            trace.p.message(field::DEBUG_ANNOTATIONS, |p| {
                p.uint(field::ANNOTATION_NAME_IID, key);
                p.uint(field::STRING_VALUE_IID, value);
            });
        }
    }
    if let Some(fields) = traced.as_deref().filter(|_| fields_at.is_none()) {
        let key = trace.interner.text(field::ANNOTATION_NAMES, "fields");
        trace.p.message(field::DEBUG_ANNOTATIONS, |p| {
            p.uint(field::ANNOTATION_NAME_IID, key);
            dictionary_entries(p, fields);
        });
    }
    // Not on an event that has a `span` of its own (the bridge's span events).
    if trace.span != 0 && !event.desc.params.iter().any(|p| p == "span") {
        let (key, span) = (trace.interner.text(field::ANNOTATION_NAMES, "span"), trace.span);
        trace.p.message(field::DEBUG_ANNOTATIONS, |p| {
            p.uint(field::ANNOTATION_NAME_IID, key);
            p.uint(field::UINT_VALUE, span);
        });
    }
}

/// `tracing` fields as a dictionary's entries, each named in place; a key repeated keeps
/// its first value (as the Chrome export does).
fn dictionary_entries(p: &mut Proto, fields: &[(&str, FieldValue<'_>)]) {
    let mut seen = BTreeSet::new();
    for (key, value) in fields {
        if !seen.insert(*key) {
            continue;
        }
        p.message(field::DICT_ENTRIES, |p| {
            p.bytes(field::ANNOTATION_NAME, key.as_bytes());
            match value {
                FieldValue::Int(i) => match (i64::try_from(*i), u64::try_from(*i)) {
                    (Ok(v), _) => p.int(field::INT_VALUE, v),
                    (_, Ok(v)) => p.uint(field::UINT_VALUE, v),
                    _ => p.bytes(field::STRING_VALUE, i.to_string().as_bytes()),
                },
                FieldValue::Float(x) => p.double(field::DOUBLE_VALUE, *x),
                FieldValue::Bool(b) => p.uint(field::BOOL_VALUE, u64::from(*b)),
                FieldValue::Str(s) => p.bytes(field::STRING_VALUE, s.as_bytes()),
            }
        });
    }
}
