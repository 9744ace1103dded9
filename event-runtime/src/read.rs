//! The typed reader: a log read back with the types of the events.def that wrote it.
//!
//! `include_events!` generates, beside the emitters, `events::Event` (one variant per event of
//! the set, its parameters typed by their format letters, as the variant's fields) and `events::read`, `events::from_reader`
//! and `events::from_blocks`, which open a [`Reader`] over a log. A program that reads logs is
//! then checked by the compiler as a program that writes them is: a renamed event or
//! parameter is a compile error where the reader matches on it.
//!
//! The reader is event-format's codec, not a second one: blocks come from a [`BlockSource`]
//! (the stream [`Decoder`], or [`FileBlocks`]: a log opened by event-format's one opener,
//! `event_format::log`, a stream, a ring file or a recording of segments), records are delimited by
//! [`RecordIter`] and named and checked by the [`Catalog`], as `event-dump` reads them; the
//! generated code only maps a record's [`Value`]s, already checked against the format, to its
//! variant.
//!
//! ```
//! // Once, in the crate root; the path is relative to the crate's Cargo.toml.
//! event_runtime::include_events!("../events.def");
//! use event_runtime::read::Item;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let recording = event_runtime::Recorder::new().memory().start()?;
//! event!(PoolInit, 0x1000usize, 0x7f00usize, "AMC", 16u32);
//! event!(ObjectAlloc, 0x1000usize, 0x7f10usize, 48u64, 1u32);
//! let stream = recording.stop()?;
//!
//! let mut reader = events::from_reader(&stream[..])?; // events::read(path) for a file
//! let mut allocated = 0;
//! while let Some(item) = reader.next_item() {
//!     match item {
//!         Item::Event(at, events::Event::PoolInit { pool, class, .. }) => {
//!             assert_eq!((pool, class.to_str()), (0x1000, Some("AMC")));
//!             assert!(at.seconds >= 0.0);
//!         }
//!         Item::Event(_, events::Event::ObjectAlloc { size, .. }) => allocated += size,
//!         _ => {} // other sets, built-in events, losses, damage
//!     }
//! }
//! assert_eq!(allocated, 48);
//! assert!(reader.summary().is_whole());
//! # Ok(()) }
//! ```
//!
//! # Before the first event
//!
//! Opening a log compares the log's set of this name with the compiled one (docs/FORMAT.md,
//! "Versions"; an event set's own version follows the same rules):
//!
//! - another major version: refused ([`ReadError::Major`]);
//! - an event of one code in both whose name, kind, format or parameters differ: refused,
//!   naming the event, what the log says and what the program expects
//!   ([`ReadError::Mismatch`]). A newer median is read: every event the reader types has
//!   been checked here, so none can be misread;
//! - events of the log that the program does not know: read when the log's set is newer (or
//!   the program retired their codes), and handed out as [`Item::Unknown`] with their code and
//!   values, counted in [`Summary::unknown`]; refused when the log's version is not newer
//!   ([`ReadError::Undeclared`]: events.def changed without a version bump).
//!
//! The log's set is found by the program's set's name. A log whose set has another name (the
//! writer's events.def has no SET line, so its set is named after the writer's package, or
//! another SET line) is refused with [`ReadError::NoSet`], which says both ways out: a
//! `SET(name)` line in the writer's events.def, or `events::read_as(path, "its-name")`
//! ([`Reader::open_as`], [`Reader::new_as`]), which reads the log's set of that name with the
//! program's types after checking every one of its events against the program's set (code,
//! name, kind, format, parameters; an event the program does not describe is refused,
//! [`ReadError::NotDescribed`]): no event is typed by a schema that does not describe it.
//!
//! # Order and memory
//!
//! Items come in the log's order by default: block by block, each block's records in order.
//! Each thread's events are in time order; threads are not merged. One block is held at a
//! time; an item borrows from it (strings are the block's bytes), so [`Reader::next_item`] is
//! a lending iterator: `while let Some(item) = reader.next_item() { .. }`. Nothing is
//! allocated per event; a block's records are one allocation, in the decoder.
//!
//! [`Reader::by_time`] merges every thread's events into one timeline instead, by
//! event-format's one merge by time ([`event_format::merge`], the one `event-dump` reads
//! with). A program that pairs events across threads needs it: a request that begins on one
//! thread and ends on another is exactly the slow one (it waited and migrated), and in the
//! log's order its end can come before its begin (a busy thread's full block reaches the
//! file before an idle thread's partial one), so pairing in the log's order loses the slow
//! requests and under-reports the tail (issue 31: p99.9 4.0 ms read so, 20.1 ms by time).
//! The log's order stays the default because it is what a reader of one thread's events or
//! of totals needs at the least cost: the merge holds a window of blocks (up to
//! [`WINDOW_BYTES`](event_format::merge::WINDOW_BYTES) of records) and, for a log read
//! without its block index (a pipe, `from_reader`), hands out its first event only once the
//! window is full or the log is read; the reading in the log's order holds one block and
//! streams. Merged, losses, missing blocks and damage come when their block is read, before
//! the events after it in time; unknown codes and bad arguments in time order.
//!
//! # Spans
//!
//! The reader hands out events; what they mean beyond their parameters (the spans events.def's
//! `SPAN` lines say they begin and end, its counters and flows, or the naming convention of
//! a set that declares none) is [`event_format::roles`], read from the log's header, and
//! its [`Pairer`](event_format::roles::Pairer) pairs ends with begins as every reader does
//! (`event-dump latency`, the Perfetto and Chrome exports). A span of one thread pairs right
//! in either order; one paired by an id across threads needs the threads merged by time
//! first: [`Reader::by_time`] (as `event-dump latency` merges).
//!
//! ```
//! event_runtime::include_events!("../events.def"); // SPAN(Sweep, SweepBegin, SweepEnd)
//! use event_runtime::format::roles::{Pairer, Roles};
//! use event_runtime::read::Item;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let recording = event_runtime::Recorder::new().memory().deterministic_clock().start()?;
//! # event!(SweepBegin, 0x1000usize, 1u64, "full");
//! # event!(SweepReclaim, 0x1000usize, 1u64, 48u64, 0i64);
//! # event!(SweepEnd, 0x1000usize, 1u64, true);
//! # let stream = recording.stop()?;
//! let mut reader = events::from_reader(&stream[..])?;
//! let (roles, mut pairer, mut durations) = (Roles::new(&reader.header().sets), Pairer::new(), Vec::new());
//! while let Some(item) = reader.next_item() {
//!     let Item::Event(at, event) = item else { continue };
//!     let Some(role) = roles.of_code(events::SET.name(), event.code()) else { continue };
//!     let values: Vec<_> = (0..event.params().len()).filter_map(|i| event.value(i)).collect();
//!     if let Some(end) = role.ends.and_then(|e| roles.key_of(&e, &values)) {
//!         if let Some(ended) = pairer.end(at.thread, &end) { durations.push(at.ticks - ended.begin) }
//!     }
//!     if let Some(begin) = role.begins.and_then(|b| roles.key_of(&b, &values)) {
//!         pairer.begin(at.thread, begin, at.ticks);
//!     }
//! }
//! assert_eq!(durations, [2]); // ticks from SweepBegin to SweepEnd (this clock: one per event)
//! # Ok(()) }
//! ```
//!
//! # Nothing skipped silently
//!
//! Losses ([`Item::Lost`]: a block header's `lost` count and the runtime's `Dropped` events;
//! [`Item::Missing`]: a gap in a thread's block sequence numbers, a ring's overwritten blocks),
//! damaged blocks ([`Item::Damaged`]), records that break the format ([`Item::Bad`]), codes
//! that no set describes ([`Item::UnknownCode`], such as a newer writer's built-in events)
//! are items, and [`Reader::summary`] counts each, by event-format's one [`Ledger`] (the rules
//! and counts of `event-dump stats` and `check`), and gives the verdict every reader gives
//! ([`Summary::is_whole`], [`Summary::findings`]). A ring file's blocks that fail their checks
//! are left out by the ring reader and listed in [`FileBlocks::ring_findings`]; a reader made
//! by [`Reader::open`] counts them as damaged blocks once the log is read.

use crate::event_set::EventSet;
use event_format::builtin;
use event_format::builtins::BuiltinEvent;
use event_format::decode::{Block, BlockError, BlockSource, Catalog, Decoder, Entry, Event};
use event_format::ledger::{Findings, Ledger, Step};
use event_format::log::{self, Log, OpenError, OpenOptions};
use event_format::merge::{self, Merge, Source};
use event_format::ring::{RingError, RingFindings};
use event_format::schema::{Schema, Version};
use event_format::wire::{Header, HeaderError, RecordError, RecordIter, SetEntry, Timebase, WireCodes};
use std::fmt;
use std::io::{self, Read};
use std::marker::PhantomData;
use std::path::Path;

pub use event_format::wire::{Text, Value, ValueIter};

/// An event set that a [`Reader`] reads typed: what `include_events!` implements for
/// `events::Typed`. Its methods are called by the reader, not by users.
pub trait TypedSet: 'static {
    /// The set's typed event: `events::Event`.
    type Event<'a>: TypedEvent<'a>;

    /// The set's static: its events.def, name and package version.
    fn set() -> &'static EventSet;

    /// The event of index `index` (its position in events.def) from `values`, which the
    /// catalog checked against the event's format; `None` if they do not fit it.
    fn decode(index: u16, values: ValueIter<'_>) -> Option<Self::Event<'_>>;
}

/// What every set's typed event (`events::Event`) tells of itself, for code that reads
/// several sets alike; `events::Event` has the same methods of its own.
pub trait TypedEvent<'a>: Clone + Copy + fmt::Debug + PartialEq {
    /// The event's name in events.def.
    fn name(&self) -> &'static str;
    /// The event's code in events.def.
    fn code(&self) -> u16;
    /// The names of its parameters, in format order.
    fn params(&self) -> &'static [&'static str];
    /// The value of parameter `index` (format order), as event-format types it.
    fn value(&self, index: usize) -> Option<Value<'a>>;
}

/// Where and when an event was recorded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct At {
    /// The thread that recorded it.
    pub thread: u64,
    /// Its time in ticks of the log's clock.
    pub ticks: u64,
    /// Its time in seconds since the recording started (what `event-dump` prints).
    pub seconds: f64,
}

/// One item of a log, as the typed reader of set `S` hands it out.
pub enum Item<'a, S: TypedSet> {
    /// An event of the set, typed.
    Event(At, S::Event<'a>),
    /// An event of the set that the program does not know (the log's set is newer): its
    /// code, name and values as the log describes them (`event.desc.code`, `event.values()`).
    Unknown(Event<'a>),
    /// An event of another set of the log, or a built-in event other than `Dropped`
    /// (`Intern`, `Label`, `ThreadName`, `Message`, ...), untyped.
    Other(Event<'a>),
    /// Events lost: `count` events of `thread` (0: of no thread) before this point, from a
    /// block header's `lost` field or a `Dropped` event.
    Lost {
        /// The thread that lost them.
        thread: u64,
        /// How many.
        count: u64,
    },
    /// Blocks of `thread` missing before this point: its block's sequence number jumps
    /// `blocks` numbers past the highest of its earlier blocks (overwritten by a ring, or
    /// never written; a block that comes later to fill one is counted in
    /// [`Summary::late_blocks`], not here). How many events they held is not known.
    Missing {
        /// The thread.
        thread: u64,
        /// How many blocks.
        blocks: u64,
    },
    /// A record whose wire code neither the log's sets nor this reader's built-in events
    /// describe (a newer writer's built-in event): skipped by its length.
    UnknownCode {
        /// The thread whose block holds it.
        thread: u64,
        /// Its time in ticks.
        ticks: u64,
        /// Its wire code.
        code: u16,
        /// Its argument bytes, as they are.
        args: &'a [u8],
    },
    /// A record that breaks the format (docs/FORMAT.md, "Damage and errors").
    Bad {
        /// The thread whose block holds it.
        thread: u64,
        /// What is wrong.
        error: RecordError,
    },
    /// A block that failed its checks: skipped, the blocks after it are read.
    Damaged(BlockError),
}

impl<'a, S: TypedSet> fmt::Debug for Item<'a, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Item::Event(at, e) => f.debug_tuple("Event").field(at).field(e).finish(),
            Item::Unknown(e) => f.debug_tuple("Unknown").field(e).finish(),
            Item::Other(e) => f.debug_tuple("Other").field(e).finish(),
            Item::Lost { thread, count } => {
                f.debug_struct("Lost").field("thread", thread).field("count", count).finish()
            }
            Item::Missing { thread, blocks } => {
                f.debug_struct("Missing").field("thread", thread).field("blocks", blocks).finish()
            }
            Item::UnknownCode { thread, ticks, code, args } => f
                .debug_struct("UnknownCode")
                .field("thread", thread)
                .field("ticks", ticks)
                .field("code", code)
                .field("args", args)
                .finish(),
            Item::Bad { thread, error } => f.debug_struct("Bad").field("thread", thread).field("error", error).finish(),
            Item::Damaged(e) => f.debug_tuple("Damaged").field(e).finish(),
        }
    }
}

/// What a [`Reader`] handed out so far: complete once [`Reader::next_item`] returned `None`.
///
/// A view of the reader's [`Ledger`] (event-format's one tally of what a log lost and what is
/// wrong with it, the counts `event-dump stats` and `check` show) beside the counts of the
/// typed reading: [`Reader::ledger`] has the details (which threads, which blocks).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Blocks read, the clean-stop marker not counted (as `event-dump stats` counts them).
    pub blocks: u64,
    /// Events of the set, typed ([`Item::Event`]).
    pub events: u64,
    /// Events of the set that the program does not know ([`Item::Unknown`]).
    pub unknown: u64,
    /// Events of other sets and built-in events ([`Item::Other`]).
    pub other: u64,
    /// Events lost, as the log counts them ([`Item::Lost`]).
    pub lost: u64,
    /// Blocks missing from the threads' sequences at this point: the [`Item::Missing`] blocks
    /// less the blocks that came late to fill them (docs/FORMAT.md, "Block order").
    pub missing_blocks: u64,
    /// Blocks whose number an earlier block of their thread had (their events come twice).
    pub repeated_blocks: u64,
    /// Blocks that came after a higher-numbered block of their thread.
    pub late_blocks: u64,
    /// Records of codes nothing describes ([`Item::UnknownCode`]).
    pub unknown_codes: u64,
    /// Records that break the format ([`Item::Bad`]).
    pub bad_records: u64,
    /// Blocks that failed their checks ([`Item::Damaged`]; for a log opened with
    /// [`Reader::open`], a ring file's blocks its reader left out too, once read to the end).
    pub damaged_blocks: u64,
    /// Strings their writer cut, in the events read.
    pub truncated_strings: u64,
    /// For a recording of segments ([`Reader::open`] of a directory, or of a glob): the
    /// segments its disk budget removed, and the events they held (reported, no damage).
    pub removed_segments: u64,
    /// The events the removed segments held.
    pub removed_events: u64,
    /// Segments missing that the budget did not remove (deleted, moved): gaps.
    pub missing_segments: u64,
    /// What the log lost and what is wrong with it, as every reader of event-format's ledger
    /// says it (`event-dump check`, `stats`, the exports): the counts above and how the log
    /// ended, with the one verdict ([`Findings::is_whole`], [`Findings::verdict`]).
    pub findings: Findings,
}

impl Summary {
    /// Whether the log was read whole, by the one rule of every reader
    /// ([`Findings::is_whole`], not strict): nothing lost, missing, damaged or broken, no
    /// record of an unknown code, no block repeated or out of order, a log that stopped
    /// cleanly (or whose writer is still at work). A ring's overwritten blocks are what a
    /// ring keeps (`findings.is_whole(true)` counts them, as `event-dump check --strict`);
    /// events of the set this reader does not know ([`unknown`](Summary::unknown)) are a
    /// newer program's, and cut strings the writer's choice.
    pub fn is_whole(&self) -> bool {
        self.findings.is_whole(false)
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} blocks, {} events of the set, {} it does not know, {} of other sets or built-in; \
             {} lost, {} blocks missing, {} damaged blocks, {} bad records, {} unknown codes",
            self.blocks,
            self.events,
            self.unknown,
            self.other,
            self.lost,
            self.missing_blocks,
            self.damaged_blocks,
            self.bad_records,
            self.unknown_codes
        )?;
        if self.repeated_blocks + self.late_blocks > 0 {
            write!(f, ", {} blocks repeated, {} out of order", self.repeated_blocks, self.late_blocks)?;
        }
        if self.truncated_strings > 0 {
            write!(f, ", {} strings cut", self.truncated_strings)?;
        }
        if self.removed_segments > 0 {
            write!(
                f,
                ", {} segments removed by the disk budget ({} events)",
                self.removed_segments, self.removed_events
            )?;
        }
        if self.missing_segments > 0 {
            write!(f, ", {} segments missing", self.missing_segments)?;
        }
        write!(f, "; {}", self.findings.verdict(false))
    }
}

/// The typed reading's own counts, beside the ledger's.
#[derive(Clone, Copy, Debug, Default)]
struct Typed {
    events: u64,
    unknown: u64,
    other: u64,
}

/// Why a log cannot be read with a set's types. Each is one line that names the log's and the
/// program's side.
#[non_exhaustive]
pub enum ReadError {
    /// The file cannot be opened or read.
    Io(io::Error),
    /// The stream's header is refused (not a stream, another format major, damaged, ...).
    Header(HeaderError),
    /// The ring file cannot be read.
    Ring(RingError),
    /// The path names no log, or several (a directory of several recordings), or segments
    /// that cannot be read as one.
    Open(OpenError),
    /// The log holds no set of this name.
    NoSet {
        /// The program's set (or the name it was asked to read as).
        set: String,
        /// The log's sets.
        found: Vec<String>,
    },
    /// Read as another set's name ([`Reader::open_as`]), the log's set has an event the
    /// program's set does not describe: it cannot be typed, and the versions of two sets of
    /// different names say nothing of each other, so the reading is refused.
    NotDescribed {
        /// The program's set.
        set: String,
        /// The log's set it was asked to read as.
        read_as: String,
        /// The event, as the log describes it.
        event: String,
    },
    /// The log's set has another major version.
    Major {
        /// The set.
        set: String,
        /// Its version in the log.
        log: Version,
        /// Its version in the program.
        program: Version,
    },
    /// An event that both know differs.
    Mismatch {
        /// The set.
        set: String,
        /// The event, as the program names it.
        event: String,
        /// What the log says of it.
        log: String,
        /// What the program expects.
        program: String,
    },
    /// The log has an event the program does not know, and its set's version is not newer.
    Undeclared {
        /// The set.
        set: String,
        /// The event, as the log describes it.
        event: String,
        /// The set's version in the log.
        log: Version,
        /// The set's version in the program.
        program: Version,
    },
    /// [`Reader::by_time`] was called on a reader already read from: the order is chosen
    /// before the first item.
    Started,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "cannot read the log: {e}"),
            ReadError::Header(e) => write!(f, "{e}"),
            ReadError::Ring(e) => write!(f, "{e}"),
            ReadError::Open(e) => write!(f, "{e}"),
            ReadError::NoSet { set, found } => {
                // A log of one set other than the built-ins: the name to read it as.
                let named: Vec<&String> = found.iter().filter(|s| !s.starts_with("`` ")).collect();
                let read_as = match named.as_slice() {
                    [one] => one.split('`').nth(1).unwrap_or("NAME").to_owned(),
                    _ => "NAME".to_owned(),
                };
                write!(
                    f,
                    "the log holds no event set `{set}` (it holds: {}); an events.def without a SET line names its \
                     set after the package that includes it: add `SET({set})` at the top of the writer's events.def, \
                     or read the log as its set, `events::read_as(path, \"{read_as}\")`",
                    found.join(", ")
                )
            }
            ReadError::NotDescribed { set, read_as, event } => write!(
                f,
                "the log's event set `{read_as}` has {event}, which the program's set `{set}` does not describe; \
                 read as another set, the program's events.def must describe every event of the log's set"
            ),
            ReadError::Major { set, log, program } => write!(
                f,
                "event set `{set}`: the log's version {log} has another major version than the program's {program}; \
                 read it with a program built from its events.def"
            ),
            ReadError::Mismatch { set, event, log, program } => {
                write!(f, "event set `{set}`, event `{event}`: the log says {log}; the program expects {program}")
            }
            ReadError::Undeclared { set, event, log, program } => write!(
                f,
                "event set `{set}`: the log has {event}, which the program's events.def does not, \
                 and the log's version {log} is not newer than the program's {program}"
            ),
            ReadError::Started => {
                write!(f, "the reader was already read from: call `by_time()` on it before the first `next_item()`")
            }
        }
    }
}

/// `Debug` writes the one-line message that `Display` writes, not the variant and its
/// fields: an error returned from `main` (`fn main() -> Result<(), ReadError>`, or through
/// `Box<dyn Error>`) is printed by the standard library with `Debug`, as `Error: {:?}`, and
/// that line is what the program's user reads. A program that needs the parts matches on
/// them.
impl fmt::Debug for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for ReadError {}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> ReadError {
        ReadError::Io(e)
    }
}

impl From<HeaderError> for ReadError {
    fn from(e: HeaderError) -> ReadError {
        ReadError::Header(e)
    }
}

impl From<RingError> for ReadError {
    fn from(e: RingError) -> ReadError {
        ReadError::Ring(e)
    }
}

/// What a wire code of the log's set is to the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// The program's event of this index.
    Known(u16),
    /// An event of the set the program does not know.
    Unknown,
    /// No event of the set.
    Absent,
}

/// The log's set as the program reads it: its wire codes `base..base + slots.len()`.
#[derive(Clone, Debug)]
struct Map {
    base: u16,
    slots: Vec<Slot>,
}

impl Map {
    fn slot(&self, wire: u16) -> Slot {
        wire.checked_sub(self.base).and_then(|i| self.slots.get(usize::from(i)).copied()).unwrap_or(Slot::Absent)
    }
}

/// How an event looks in a message: `code 0x0030, kind Object, format PAWU (pool, addr, ...)`.
fn describe(schema: &Schema, index: usize) -> String {
    let e = &schema.events[index];
    let kind = schema.kinds.get(usize::from(e.kind)).map_or("?", |k| k.name.as_str());
    format!(
        "`{}`: code {:#06x}, kind {kind}, format {} ({})",
        e.name,
        e.code,
        event_format::letter::format_string(&e.format),
        e.params.join(", ")
    )
}

/// Checks the log's set against the program's (the rules in the module docs) and maps the
/// log's wire codes onto the program's events. A set read as another name (`renamed`) has no
/// version to compare with the program's: every event of it must be one of the program's,
/// the same in code, name, kind, format and parameters.
fn check(log: &SetEntry, program: &Schema, renamed: bool) -> Result<Map, ReadError> {
    let set = &program.name;
    let (lv, pv) = (log.schema.version, program.version);
    if lv.major != pv.major && !renamed {
        return Err(ReadError::Major { set: set.clone(), log: lv, program: pv });
    }
    let kind_name = |s: &Schema, k: u8| s.kinds.get(usize::from(k)).map_or(String::new(), |k| k.name.clone());
    let newer = (lv.median, lv.minor) > (pv.median, pv.minor);
    let mut known = Vec::with_capacity(log.schema.events.len());
    for (j, e) in log.schema.events.iter().enumerate() {
        let by_code = program.events.iter().position(|p| p.code == e.code);
        let by_name = program.events.iter().position(|p| p.name == e.name);
        let slot = match by_code.or(by_name) {
            Some(i) => {
                let p = &program.events[i];
                let same = p.name == e.name
                    && p.code == e.code
                    && p.format == e.format
                    && p.params == e.params
                    && kind_name(program, p.kind) == kind_name(&log.schema, e.kind);
                if !same {
                    return Err(ReadError::Mismatch {
                        set: set.clone(),
                        event: p.name.clone(),
                        log: describe(&log.schema, j),
                        program: describe(program, i),
                    });
                }
                // Schema::check bounds a set's events by its 16-bit codes.
                Slot::Known(i as u16)
            }
            None if renamed => {
                return Err(ReadError::NotDescribed {
                    set: set.clone(),
                    read_as: log.schema.name.clone(),
                    event: describe(&log.schema, j),
                });
            }
            None if newer || program.retired.iter().any(|r| r.code == e.code) => Slot::Unknown,
            None => {
                return Err(ReadError::Undeclared {
                    set: set.clone(),
                    event: describe(&log.schema, j),
                    log: lv,
                    program: pv,
                });
            }
        };
        known.push((log.wire_code(j), slot));
    }
    let wires = known.iter().filter_map(|&(w, _)| w);
    let (Some(base), Some(last)) = (wires.clone().min(), wires.max()) else {
        return Ok(Map { base: 0, slots: Vec::new() });
    };
    let mut slots = vec![Slot::Absent; usize::from(last - base) + 1];
    for (wire, slot) in known {
        if let Some(w) = wire {
            slots[usize::from(w - base)] = slot;
        }
    }
    Ok(Map { base, slots })
}

/// The log's set that the program's set `set` is: the one of its name, or of the name a
/// recording gives one of two linked-in versions (`NAME-vMAJOR`), or a 1.x log's one
/// unnamed set.
fn find<'h>(header: &'h Header, set: &EventSet) -> Option<&'h SetEntry> {
    let versioned = set.versioned_name();
    let sets = &header.sets;
    sets.iter().find(|s| s.schema.name == set.name()).or_else(|| sets.iter().find(|s| s.schema.name == versioned)).or(
        match sets.as_slice() {
            [one] if one.schema.name.is_empty() && matches!(one.codes, WireCodes::Own) => Some(one),
            _ => None,
        },
    )
}

/// Reads a log with the types of set `S`: see the module docs. Made by the generated
/// `events::read`, `events::from_reader` and `events::from_blocks`.
pub struct Reader<S: TypedSet, B> {
    /// The blocks, read in the log's order or merged by time.
    reading: Reading<B>,
    catalog: Catalog,
    clock: Timebase,
    map: Map,
    /// The block being read, and where in it: the next record's offset and the time its
    /// delta counts from.
    block: Option<Block>,
    position: (usize, u64),
    /// Events lost before the held block, reported after [`Item::Missing`].
    lost_before: u64,
    /// What the log lost and what is wrong with it, counted as items are handed out (read in
    /// the log's order; merged by time, the merge's ledger counts).
    ledger: Ledger,
    typed: Typed,
    /// What the source's reader left out without handing it on (a ring file's damaged
    /// blocks), counted into the ledger at the end; `None` for a source that has none.
    findings: fn(&B) -> Option<&RingFindings>,
    /// The source's findings are counted.
    finished: bool,
    set: PhantomData<fn() -> S>,
}

impl<S: TypedSet, B> fmt::Debug for Reader<S, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reader").field("set", &S::set().name()).field("ledger", &self.ledger).finish_non_exhaustive()
    }
}

/// Where a [`Reader`]'s items come from.
#[derive(Debug)]
enum Reading<B> {
    /// The source's blocks in the log's order, one held at a time.
    Blocks(B),
    /// The source's records merged by time ([`Reader::by_time`]).
    ByTime(Box<Merge<B>>),
}

/// What the next item is, found before the item borrows the block.
enum Next {
    /// The record at this position of the held block.
    Record((usize, u64)),
    Lost {
        thread: u64,
        count: u64,
    },
    Missing {
        thread: u64,
        blocks: u64,
    },
    Damaged(BlockError),
}

impl<S: TypedSet, B: BlockSource> Reader<S, B> {
    /// Reads the blocks of `source`, after checking its header's set against `S`'s.
    pub fn new(source: B) -> Result<Reader<S, B>, ReadError> {
        Reader::with_set(source, None)
    }

    /// Reads the blocks of `source` with `S`'s types as the log's set named `name`: for a log
    /// whose set has another name than the program's (a writer's events.def without a SET
    /// line is named after the writer's package). The log's set is checked event by event:
    /// every one of its events must be one of `S`'s, of the same code, name, kind, format and
    /// parameters ([`ReadError::NotDescribed`], [`ReadError::Mismatch`]), so that no event
    /// is typed by a schema that does not describe it.
    pub fn new_as(source: B, name: &str) -> Result<Reader<S, B>, ReadError> {
        Reader::with_set(source, Some(name))
    }

    fn with_set(source: B, name: Option<&str>) -> Result<Reader<S, B>, ReadError> {
        let set = S::set();
        // The macro checked the text it embedded, so it parses.
        let program = set.schema().map_err(|e| io::Error::other(e.to_string()))?;
        let header = source.header();
        let log = match name {
            None => find(header, set),
            Some(name) => header.sets.iter().find(|s| s.schema.name == name),
        };
        let log = log.ok_or_else(|| ReadError::NoSet {
            set: name.unwrap_or(set.name()).to_owned(),
            found: header.sets.iter().map(|s| format!("`{}` {}", s.schema.name, s.schema.version)).collect(),
        })?;
        let map = check(log, &program, name.is_some_and(|n| n != set.name()))?;
        let catalog = Catalog::new(&header.sets);
        let clock = Timebase::new(&header.clock);
        let ledger = Ledger::new(header.format);
        Ok(Reader {
            reading: Reading::Blocks(source),
            catalog,
            clock,
            map,
            block: None,
            position: (0, 0),
            lost_before: 0,
            ledger,
            typed: Typed::default(),
            findings: |_| None,
            finished: false,
            set: PhantomData,
        })
    }

    /// The log's header.
    pub fn header(&self) -> &Header {
        self.source().header()
    }

    /// Where the blocks come from.
    pub fn source(&self) -> &B {
        match &self.reading {
            Reading::Blocks(source) => source,
            Reading::ByTime(merge) => &merge.logs()[0],
        }
    }

    /// What was handed out so far: a view of [`ledger`](Reader::ledger) and of the typed
    /// reading's own counts. (Before the ledger it was a field, returned by reference.)
    ///
    /// Its [`findings`](Summary::findings) judge how the log ended as `event-dump check`
    /// does: a log without its stop marker was not stopped cleanly unless its writer is
    /// still at work (a file's lock or a ring file's heartbeat, [`BlockSource::writer_alive`]; a
    /// stream handed in as bytes has no writer to ask).
    pub fn summary(&self) -> Summary {
        let l = self.ledger();
        Summary {
            findings: l.findings(|| self.source().writer_alive()),
            blocks: l.blocks(),
            events: self.typed.events,
            unknown: self.typed.unknown,
            other: self.typed.other,
            lost: l.lost(),
            missing_blocks: l.missing_blocks(),
            repeated_blocks: l.repeated_blocks(),
            late_blocks: l.late_blocks(),
            unknown_codes: l.unknown_records(),
            bad_records: l.bad_records().len() as u64,
            damaged_blocks: l.damaged_blocks().len() as u64,
            truncated_strings: l.truncated_strings(),
            removed_segments: l.removed().0,
            removed_events: l.removed().1,
            missing_segments: l.segment_gaps(),
        }
    }

    /// What the log lost and what is wrong with it so far, as every reader counts it: the
    /// details behind [`summary`](Reader::summary).
    pub fn ledger(&self) -> &Ledger {
        match &self.reading {
            Reading::Blocks(_) => &self.ledger,
            Reading::ByTime(merge) => &merge.ledgers()[0],
        }
    }

    /// The next item, `None` at the end of the log. An item borrows the reader's block, so
    /// one is held at a time: `while let Some(item) = reader.next_item() { .. }`.
    pub fn next_item(&mut self) -> Option<Item<'_, S>> {
        if let Reading::ByTime(_) = self.reading {
            return self.next_by_time();
        }
        let position = match self.advance()? {
            Next::Record(position) => position,
            Next::Lost { thread, count } => return Some(Item::Lost { thread, count }),
            Next::Missing { thread, blocks } => return Some(Item::Missing { thread, blocks }),
            Next::Damaged(error) => {
                self.ledger.damaged(&error);
                return Some(Item::Damaged(error));
            }
        };
        let block = self.block.as_ref()?;
        let (thread, sequence) = (block.header.thread, block.header.sequence);
        let record = match RecordIter::resume(&block.records, block.order, position).next()? {
            Ok(record) => record,
            Err(error) => {
                self.ledger.entry(thread, sequence, &Entry::Bad(error.clone()));
                return Some(Item::Bad { thread, error });
            }
        };
        let entry = self.catalog.entry(record, thread, block.order);
        self.ledger.entry(thread, sequence, &entry);
        Some(match entry {
            Entry::Event(event) => typed(&self.map, &mut self.typed, &self.clock, event),
            Entry::Unknown { code, time, .. } => Item::UnknownCode { thread, ticks: time, code, args: record.args },
            Entry::Bad(error) => Item::Bad { thread, error },
        })
    }

    /// The next item of the merge by time.
    fn next_by_time(&mut self) -> Option<Item<'_, S>> {
        let Reading::ByTime(merge) = &mut self.reading else { return None };
        Some(match merge.next_item()? {
            merge::Item::Event { event, .. } => typed(&self.map, &mut self.typed, &self.clock, event),
            merge::Item::Unknown { thread, time, code, args, .. } => {
                Item::UnknownCode { thread, ticks: time, code, args }
            }
            merge::Item::Lost { thread, count, .. } => Item::Lost { thread, count },
            merge::Item::Missing { thread, blocks, .. } => Item::Missing { thread, blocks },
            merge::Item::Bad { thread, error, .. } => Item::Bad { thread, error },
            merge::Item::Damaged { error, .. } => Item::Damaged(error),
        })
    }

    /// Moves on to the next record (reading blocks as needed) and says where it is, without
    /// borrowing the block for the caller.
    fn advance(&mut self) -> Option<Next> {
        loop {
            if let Some(block) = &self.block {
                if self.lost_before > 0 {
                    let count = std::mem::take(&mut self.lost_before);
                    return Some(Next::Lost { thread: block.header.thread, count });
                }
                let mut records = RecordIter::resume(&block.records, block.order, self.position);
                if records.next().is_some() {
                    let at = self.position;
                    self.position = records.position();
                    return Some(Next::Record(at));
                }
                self.block = None;
            }
            let Reading::Blocks(source) = &mut self.reading else { return None };
            let Some(next) = source.next_block() else {
                if !self.finished {
                    self.finished = true;
                    if let Some(findings) = (self.findings)(source) {
                        self.ledger.ring_file(findings);
                    }
                }
                return None;
            };
            match next {
                Err(error) => return Some(Next::Damaged(error)),
                Ok(block) => {
                    self.position = (0, block.header.base_time);
                    let thread = block.header.thread;
                    // A number below the thread's highest (repeated, or late) is no loss:
                    // the ledger counts those apart, as event-dump's check reports them.
                    let step = self.ledger.block(&block);
                    self.lost_before = block.header.lost;
                    self.block = Some(block);
                    if let Step::Ahead { skipped } = step
                        && skipped > 0
                    {
                        return Some(Next::Missing { thread, blocks: skipped });
                    }
                }
            }
        }
    }
}

impl<S: TypedSet, B: Source> Reader<S, B> {
    /// The same reader, its items merged by time across threads (as `event-dump print` and
    /// the exports merge them) instead of in the log's order: see "Order and memory" in the
    /// module docs. Chosen before the first item is read: a reader already read from is
    /// refused ([`ReadError::Started`]).
    ///
    /// ```
    /// event_runtime::include_events!("../events.def");
    /// use event_runtime::read::Item;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let recording = event_runtime::Recorder::new().memory().start()?;
    /// # event!(PoolInit, 0x1000usize, 0x7f00usize, "AMC", 16u32);
    /// # let stream = recording.stop()?;
    /// let mut reader = events::from_reader(&stream[..])?.by_time()?; // events::read(path)?.by_time()?
    /// let mut last = 0;
    /// while let Some(item) = reader.next_item() {
    ///     if let Item::Event(at, _) = item {
    ///         assert!(at.ticks >= last, "every thread's events in one timeline");
    ///         last = at.ticks;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn by_time(self) -> Result<Reader<S, B>, ReadError> {
        if matches!(self.reading, Reading::ByTime(_)) {
            return Ok(self);
        }
        let Reader {
            reading,
            catalog,
            clock,
            map,
            block,
            position,
            lost_before,
            ledger,
            typed,
            findings,
            finished,
            set,
        } = self;
        let source = match reading {
            Reading::Blocks(source) if ledger.blocks() == 0 && ledger.damaged_blocks().is_empty() && !finished => {
                source
            }
            // Read from already (a `ByTime` reading returned above).
            _ => return Err(ReadError::Started),
        };
        let reading = Reading::ByTime(Box::new(Merge::new(vec![source])));
        Ok(Reader {
            reading,
            catalog,
            clock,
            map,
            block,
            position,
            lost_before,
            ledger,
            typed,
            findings,
            finished,
            set,
        })
    }
}

/// The typed item of `event`, an event of the log's sets, counted in `counts`.
fn typed<'a, S: TypedSet>(map: &Map, counts: &mut Typed, clock: &Timebase, event: Event<'a>) -> Item<'a, S> {
    match map.slot(event.desc.wire) {
        Slot::Known(index) => match S::decode(index, event.values()) {
            Some(typed) => {
                counts.events += 1;
                let at = At { thread: event.thread, ticks: event.time, seconds: clock.seconds(event.time) };
                Item::Event(at, typed)
            }
            // The catalog checked the values against the log's format, which `check` found
            // equal to the program's: not reached.
            None => {
                counts.unknown += 1;
                Item::Unknown(event)
            }
        },
        Slot::Unknown => {
            counts.unknown += 1;
            Item::Unknown(event)
        }
        Slot::Absent if event.desc.is_builtin() && event.desc.code == builtin::DROPPED => {
            let Some(BuiltinEvent::Dropped { thread, count }) = BuiltinEvent::of(&event) else {
                counts.other += 1;
                return Item::Other(event);
            };
            Item::Lost { thread, count }
        }
        Slot::Absent => {
            counts.other += 1;
            Item::Other(event)
        }
    }
}

impl<S: TypedSet, R: Read> Reader<S, Decoder<R>> {
    /// Reads the stream `reader` gives (not a ring file: [`Reader::open`] reads both).
    pub fn from_reader(reader: R) -> Result<Reader<S, Decoder<R>>, ReadError> {
        Reader::new(Decoder::new(reader)?)
    }
}

impl<S: TypedSet> Reader<S, FileBlocks> {
    /// Reads the log at `path`: a stream or a ring file, told apart by their magic, or a
    /// recording of segments (a directory or a glob that holds one recording's segments, read
    /// as one log), opened by event-format's one opener (`event_format::log`).
    pub fn open(path: impl AsRef<Path>) -> Result<Reader<S, FileBlocks>, ReadError> {
        let blocks = FileBlocks::open(path.as_ref())?;
        let ledger = blocks.0.ledger();
        let mut reader = Reader::new(blocks)?;
        reader.ledger = ledger;
        reader.findings = FileBlocks::ring_findings;
        Ok(reader)
    }

    /// Reads the log at `path` as its set named `name` ([`Reader::new_as`]).
    pub fn open_as(path: impl AsRef<Path>, name: &str) -> Result<Reader<S, FileBlocks>, ReadError> {
        let mut reader = Reader::new_as(FileBlocks::open(path.as_ref())?, name)?;
        reader.findings = FileBlocks::ring_findings;
        Ok(reader)
    }
}

/// The blocks of a log: a stream's, decoded as it is read, a ring file's, as its reader
/// checks them (never re-encoded as a stream), or a recording of segments', segment after
/// segment.
#[derive(Debug)]
pub struct FileBlocks(Log);

impl FileBlocks {
    /// Opens `path` and reads its header (its first segment's, for a recording of segments).
    pub fn open(path: &Path) -> Result<FileBlocks, ReadError> {
        match log::open(path, OpenOptions::default()) {
            Ok(log) => Ok(FileBlocks(log)),
            Err(OpenError::Io { error, .. }) => Err(ReadError::Io(error)),
            Err(OpenError::Header { error, .. }) => Err(ReadError::Header(error)),
            Err(OpenError::Ring { error, .. }) => Err(ReadError::Ring(error)),
            Err(other) => Err(ReadError::Open(other)),
        }
    }

    /// For a ring file, what its reader found: the blocks it left out as damaged (counted in
    /// a [`Reader`]'s ledger at the end), the blocks its rings overwrote, page 0's counts.
    /// Complete at the end of the log; `None` for a stream.
    pub fn ring_findings(&self) -> Option<&RingFindings> {
        self.0.ring_findings()
    }
}

impl Source for FileBlocks {
    fn ring_findings(&self) -> Option<&RingFindings> {
        FileBlocks::ring_findings(self)
    }

    fn ledger(&self) -> Ledger {
        self.0.ledger()
    }

    fn segment_starts(&self) -> Vec<u64> {
        self.0.segment_starts()
    }
}

impl BlockSource for FileBlocks {
    fn header(&self) -> &Header {
        self.0.header()
    }

    fn next_block(&mut self) -> Option<Result<Block, BlockError>> {
        self.0.next_block()
    }

    fn recycle(&mut self, block: Block) {
        self.0.recycle(block);
    }

    fn writer_alive(&self) -> bool {
        self.0.writer_alive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(text: &str) -> Schema {
        event_format::def::parse_set(text, "events.def", "pools").unwrap()
    }

    const BASE: &str = "VERSION(1, 2, 0)\nKIND(Pool)\nKIND(Object)\n\
        RELATION(PoolInit, 0x0010, TRUE, Pool, PS, pool, class)\n\
        RELATION(ObjectAlloc, 0x0030, FALSE, Object, PAW, pool, addr, size)\n";

    fn map(log: &str, program: &str) -> Result<Map, ReadError> {
        check(&SetEntry::new(schema(log), 5), &schema(program), false)
    }

    #[test]
    fn the_same_set_maps_every_wire_code_to_its_event() {
        let m = map(BASE, BASE).unwrap();
        assert_eq!((m.base, &m.slots[..]), (5, &[Slot::Known(0), Slot::Known(1)][..]));
        assert_eq!(m.slot(4), Slot::Absent);
        assert_eq!(m.slot(7), Slot::Absent);
    }

    #[test]
    fn a_newer_minor_is_read_and_its_new_events_are_unknown() {
        let newer = format!(
            "{}RELATION(ObjectFree, 0x0031, FALSE, Object, PA, pool, addr)\n",
            BASE.replace("1, 2, 0", "1, 2, 1")
        );
        let m = map(&newer, BASE).unwrap();
        assert_eq!(m.slots, [Slot::Known(0), Slot::Known(1), Slot::Unknown]);
        // An older log of a program that added an event: nothing unknown.
        assert!(map(BASE, &newer).is_ok());
    }

    #[test]
    fn an_event_the_program_lacks_in_a_log_that_is_not_newer_is_refused() {
        let same = format!("{BASE}RELATION(ObjectFree, 0x0031, FALSE, Object, PA, pool, addr)\n");
        let e = map(&same, BASE).unwrap_err().to_string();
        assert!(e.contains("`ObjectFree`: code 0x0031") && e.contains("is not newer than the program's 1.2.0"), "{e}");
    }

    #[test]
    fn another_format_kind_parameter_or_name_is_an_error_naming_both_sides() {
        let cases = [
            ("PAW, pool, addr, size", "PAU, pool, addr, size", "format PAU"),
            ("PAW, pool, addr, size", "PAW, pool, addr, bytes", "(pool, addr, bytes)"),
            ("FALSE, Object, PAW", "FALSE, Pool, PAW", "kind Pool"),
        ];
        for (from, to, says) in cases {
            let log = BASE.replace(from, to);
            let e = map(&log, BASE).unwrap_err().to_string();
            assert!(e.starts_with("event set `pools`, event `ObjectAlloc`: the log says `ObjectAlloc`"), "{e}");
            assert!(e.contains(says), "{e}");
            assert!(
                e.contains(
                    "the program expects `ObjectAlloc`: code 0x0030, kind Object, format PAW (pool, addr, size)"
                ),
                "{e}"
            );
        }
        let renamed = BASE.replace("ObjectAlloc", "ObjectNew");
        let e = map(&renamed, BASE).unwrap_err().to_string();
        assert!(e.contains("the log says `ObjectNew`: code 0x0030"), "{e}");
    }

    #[test]
    fn another_major_is_refused() {
        let e = map(&BASE.replace("1, 2, 0", "2, 0, 0"), BASE).unwrap_err().to_string();
        assert!(e.contains("the log's version 2.0.0 has another major version than the program's 1.2.0"), "{e}");
    }
}
