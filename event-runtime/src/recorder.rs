//! Starting and stopping a recording, its sinks, and the writer thread.

use crate::buffer;
use crate::clock::{self, TimeSource};
use crate::config::{self, ConfigError, Policy};
use crate::control;
use crate::exchange::{Batch, BlockBuf, Exchange};
use crate::ringfile::RingFile;
use event_format::control::Selection;
use event_format::decode::Catalog;
use event_format::ring::{Layout, RingReader, RingStream};
use event_format::schema::Schema;
use event_format::wire::dropped_report;
use event_format::wire::{
    BLOCK_HEADER_LEN, BLOCK_USED_AT, Header, MAX_BLOCK_SIZE, MIN_BLOCK_SIZE, Order, Producer, pack_block,
    seal_block_in_place,
};
use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// An event set as `include_events!` embeds it: the events.def it was generated from,
/// rendered canonically. Made by the macro; read by the recorder.
#[derive(Debug)]
pub struct EventSet {
    def: &'static str,
    path: &'static str,
}

impl EventSet {
    #[doc(hidden)]
    pub const fn __new(def: &'static str, path: &'static str) -> EventSet {
        EventSet { def, path }
    }

    /// The event set as events.def text (canonical rendering of the file it came from).
    pub fn def(&self) -> &'static str {
        self.def
    }

    /// The path of the events.def it was generated from.
    pub fn path(&self) -> &'static str {
        self.path
    }

    /// The schema. The macro checked the text when it embedded it, so this parses.
    pub fn schema(&self) -> Result<Schema, event_format::def::DefErrors> {
        event_format::def::parse(self.def, self.path)
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update under these locks is complete before it is released; a panic elsewhere
    // leaves no half state.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The stream sinks: where sealed blocks are written, in order.
#[derive(Debug, Default)]
pub(crate) struct Sinks {
    file: Option<(PathBuf, File)>,
    memory: Option<Vec<u8>>,
    /// The first write error; the file sink is given up after it.
    failed: Option<String>,
    /// Blocks the file sink could not write.
    unwritten: u64,
    /// The next sequence number of the recorder's own blocks (thread 0).
    recorder_sequence: u64,
    /// Pack blocks before writing them (docs/FORMAT.md, "Packed blocks").
    pack: bool,
    /// Where a block is packed; reused.
    packed: Vec<u8>,
}

impl Sinks {
    fn is_empty(&self) -> bool {
        self.file.is_none() && self.memory.is_none()
    }

    /// Writes one sealed block (or the header) to every sink.
    fn write(&mut self, bytes: &[u8]) {
        if let Some(memory) = &mut self.memory {
            memory.extend_from_slice(bytes);
        }
        if let Some((path, file)) = &mut self.file {
            if let Err(e) = file.write_all(bytes) {
                let message = format!(
                    "writing the event file {} failed: {e}; the rest of the trace is not in it",
                    path.display()
                );
                eprintln!("event-runtime: {message}");
                self.failed = Some(message);
                self.file = None;
            }
        } else if self.failed.is_some() {
            self.unwritten += 1;
        }
    }

    /// Writes one sealed block to every sink: packed when `pack` is on, the block is worth
    /// packing, and the writer is keeping up (`hurry` false).
    fn write_block(&mut self, block: &[u8], hurry: bool) {
        if !self.pack || hurry {
            return self.write(block);
        }
        // Taken out and put back: `write` borrows the whole of `self`.
        let mut packed = std::mem::take(&mut self.packed);
        packed.clear();
        self.write(if pack_block(Order::NATIVE, block, &mut packed) { &packed } else { block });
        self.packed = packed;
    }

    /// The file sink's descriptor, for a fatal signal's last write.
    #[cfg(unix)]
    pub(crate) fn raw_fd(&self) -> Option<i32> {
        use std::os::fd::AsRawFd;
        self.file.as_ref().map(|(_, f)| f.as_raw_fd())
    }
}

/// A thread's heap ring, handed to the recorder when its thread exits (`ring` policy).
#[derive(Debug)]
pub(crate) struct RetiredRing {
    pub(crate) blocks: BlockBuf,
    /// The sequence number of the block being written.
    pub(crate) sequence: u64,
    /// The end of its records.
    pub(crate) end: usize,
    pub(crate) ring_blocks: u64,
}

/// What every thread buffer of one recording shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) block_size: u32,
    pub(crate) time: TimeSource,
    pub(crate) clock: event_format::wire::Clock,
    pub(crate) catalog: Catalog,
    /// The next thread id; ids start at 1 (0 is the recorder's own reports).
    pub(crate) next_thread: AtomicU64,
    pub(crate) policy: Policy,
    /// How long a thread waits for a free block before refusing events (`wait`).
    pub(crate) wait: Duration,
    /// The pool and queue between threads and the writer (no blocks under `ring`).
    pub(crate) exchange: Exchange,
    pub(crate) ring_file: Option<Arc<RingFile>>,
    /// Blocks per thread ring on the heap (`ring` policy without a ring file).
    pub(crate) heap_ring_blocks: u32,
    pub(crate) sinks: Mutex<Sinks>,
    /// Interned strings and their ids, per recording.
    pub(crate) interned: Mutex<HashMap<String, u64>>,
    /// Rings of exited threads, written to the sinks at stop.
    retired: Mutex<Vec<RetiredRing>>,
    /// Losses for the recorder to report in its own `Dropped` events: (thread, count).
    reports: Mutex<Vec<(u64, u64)>>,
    /// The unattributed-loss counter when the recording started.
    lost_base: u64,
    /// Whether the stream sinks get blocks as they fill (`switch`, `fill`), not only at stop.
    streaming: bool,
    /// The blocks in the pool (0 without one).
    pool_blocks: usize,
}

impl Shared {
    /// Whether threads with a ring-file slot also queue a copy of each full block for the
    /// stream sinks.
    pub(crate) fn streams_copies(&self) -> bool {
        self.ring_file.is_some() && self.streaming
    }

    /// Queues a copy of a full block for the stream sinks; when no pool block is free, the
    /// streams miss it and the recorder reports its `records` events as dropped there.
    pub(crate) fn copy_to_streams(&self, block: &[u8], thread: u64, records: u64, direct: bool) {
        if direct {
            let mut copy = block.to_vec();
            seal_block_in_place(Order::NATIVE, &mut copy);
            lock(&self.sinks).write_block(&copy, false);
            return;
        }
        match self.exchange.take(self.wait) {
            Some(mut copy) => {
                copy.copy_from_slice(block);
                if !self.exchange.submit(copy) {
                    count_lost_unattributed(records);
                }
            }
            None => self.report_dropped(thread, records),
        }
    }

    /// Writes the writer thread's own full block now, and returns it for reuse.
    pub(crate) fn write_now(&self, mut block: BlockBuf) -> BlockBuf {
        seal_block_in_place(Order::NATIVE, &mut block);
        lock(&self.sinks).write_block(&block, false);
        block
    }

    /// `count` events of `thread` were lost where its own blocks cannot say so.
    pub(crate) fn report_dropped(&self, thread: u64, count: u64) {
        if count > 0 {
            lock(&self.reports).push((thread, count));
        }
    }

    pub(crate) fn retire_ring(&self, ring: RetiredRing) {
        lock(&self.retired).push(ring);
    }

    /// Writes queued blocks to the sinks (the writer thread).
    /// Writes a batch of full blocks and gives them back to the pool, a few at a time so
    /// that threads waiting for a block get one early.
    fn write_batch(&self, blocks: Vec<BlockBuf>) {
        const GIVE_BACK_EVERY: usize = 8;
        let mut written = Vec::with_capacity(GIVE_BACK_EVERY);
        for mut block in blocks {
            seal_block_in_place(Order::NATIVE, &mut block);
            // Packing costs the writer about 0.1 ms per 64 KiB block (LZ4 at 600-900 MB/s on
            // the tour's trace): when fewer than a quarter of the pool's blocks are free, the
            // program is outrunning the writer, and blocks go as they are, so that no event
            // is dropped for the sake of size.
            let hurry = self.exchange.free_hint() < self.pool_blocks / 4;
            lock(&self.sinks).write_block(&block, hurry);
            written.push(block);
            if written.len() == GIVE_BACK_EVERY {
                self.exchange.give_back(std::mem::replace(&mut written, Vec::with_capacity(GIVE_BACK_EVERY)));
            }
        }
        self.exchange.give_back(written);
    }

    /// Writes the recorder's reports (`Dropped` events of thread 0), if any, in one block.
    fn write_reports(&self, extra: &[(u64, u64)]) {
        let mut reports = std::mem::take(&mut *lock(&self.reports));
        reports.extend_from_slice(extra);
        if reports.is_empty() {
            return;
        }
        let time = self.time.now();
        let mut sinks = lock(&self.sinks);
        let blocks = dropped_report(Order::NATIVE, self.block_size, sinks.recorder_sequence, time, &reports);
        sinks.recorder_sequence += blocks.len() as u64;
        for block in &blocks {
            sinks.write_block(block, false);
        }
    }

    /// Under `ring`: every thread's ring, oldest block first, to the stream sinks.
    fn write_rings(&self) {
        let bs = self.block_size as usize;
        let rings = std::mem::take(&mut *lock(&self.retired));
        let mut sinks = lock(&self.sinks);
        for mut ring in rings {
            let first = (ring.sequence + 1).saturating_sub(ring.ring_blocks);
            for seq in first..=ring.sequence {
                let index = (seq % ring.ring_blocks) as usize;
                let block = &mut ring.blocks[index * bs..(index + 1) * bs];
                if seq == ring.sequence {
                    if ring.end <= BLOCK_HEADER_LEN {
                        continue;
                    }
                    Order::NATIVE.put_u32(&mut block[BLOCK_USED_AT..], (ring.end - BLOCK_HEADER_LEN) as u32);
                }
                seal_block_in_place(Order::NATIVE, block);
                sinks.write_block(block, false);
            }
        }
    }

    /// Under `ring` with a ring file: the file's blocks to the stream sinks.
    fn write_ring_file(&self, ring: &RingFile) -> io::Result<()> {
        let file = File::open(ring.path())?;
        let reader =
            RingReader::open(file, event_format::decode::DecodeOptions::default()).map_err(io::Error::other)?;
        let skip = reader.header_bytes().len();
        let mut stream = RingStream::new(reader);
        let mut header = vec![0u8; skip];
        stream.read_exact(&mut header)?;
        let mut block = vec![0u8; self.block_size as usize];
        let mut sinks = lock(&self.sinks);
        loop {
            match stream.read_exact(&mut block) {
                Ok(()) => sinks.write_block(&block, false),
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    /// Events lost unattributed during this recording.
    fn lost_here(&self) -> u64 {
        LOST_UNATTRIBUTED.load(Ordering::Relaxed).saturating_sub(self.lost_base)
    }
}

/// Bumped at every start and stop: a thread buffer of another generation is stale.
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Whether a recording runs: the built-in events of `annotate` test it first.
static RUNNING: AtomicBool = AtomicBool::new(false);
static CURRENT: Mutex<Option<(u64, Arc<Shared>)>> = Mutex::new(None);
/// Events that could not be attributed to any thread's block: emitted while the thread was
/// exiting, re-entrantly, with no ring-file slot free, or as a recording stopped.
static LOST_UNATTRIBUTED: AtomicU64 = AtomicU64::new(0);

#[inline(always)]
pub(crate) fn generation() -> u64 {
    // Relaxed: a thread that sees a stale generation for a moment records into the previous
    // recording's buffer, which is flushed when it notices; nothing else is ordered by it.
    GENERATION.load(Ordering::Relaxed)
}

pub(crate) fn current(generation: u64) -> Option<Arc<Shared>> {
    lock(&CURRENT).as_ref().filter(|(g, _)| *g == generation).map(|(_, s)| Arc::clone(s))
}

/// The running recording's shared state, if any (`try_lock`: safe to call from a panic hook).
pub(crate) fn try_current() -> Option<Arc<Shared>> {
    CURRENT.try_lock().ok()?.as_ref().map(|(_, s)| Arc::clone(s))
}

#[inline]
pub(crate) fn is_running() -> bool {
    // Relaxed: as for the enable bits, a late view records or skips an event or two.
    RUNNING.load(Ordering::Relaxed)
}

#[cold]
pub(crate) fn count_lost_unattributed(n: u64) {
    LOST_UNATTRIBUTED.fetch_add(n, Ordering::Relaxed);
}

/// Events emitted while no thread buffer could take them (a thread exiting, an event recorded
/// from inside the recording of another, a race with stop), over the process's life. Each
/// recording also reports its share in its stream, as `Dropped` events of thread 0.
pub fn lost_unattributed() -> u64 {
    LOST_UNATTRIBUTED.load(Ordering::Relaxed)
}

/// Why a recording could not start. Its message is one line: what is wrong, what to do.
#[derive(Debug)]
pub enum StartError {
    /// Another recording is running in this process.
    AlreadyRunning,
    /// The block size is not a power of two in range.
    BadBlockSize(u32),
    /// The buffer size is too small for the block size.
    BadBufferSize {
        /// The buffer size.
        buffer: u64,
        /// The block size.
        block: u32,
    },
    /// The embedded event set does not parse or encode.
    BadEventSet(String),
    /// A setting from the environment does not parse.
    Config(ConfigError),
    /// A sink's file could not be created.
    Io {
        /// What the file is for (`event file`, `ring file`).
        what: &'static str,
        /// Its path.
        path: PathBuf,
        /// Why.
        error: io::Error,
    },
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::AlreadyRunning => {
                write!(f, "a recording is already running in this process; stop it before starting another")
            }
            StartError::BadBlockSize(n) => write!(
                f,
                "block size {n} is not a power of two in {MIN_BLOCK_SIZE}..={MAX_BLOCK_SIZE}; choose one such as 65536"
            ),
            StartError::BadBufferSize { buffer, block } => {
                write!(
                    f,
                    "buffer size {buffer} holds fewer than 4 blocks of {block} bytes; raise EVENT_BUFSIZE or lower the block size"
                )
            }
            StartError::BadEventSet(why) => write!(f, "the event set cannot be recorded: {why}"),
            StartError::Config(e) => write!(f, "{e}"),
            StartError::Io { what, path, error } => {
                write!(f, "cannot create the {what} {}: {error}; choose a writable path", path.display())
            }
        }
    }
}

impl std::error::Error for StartError {}

impl From<ConfigError> for StartError {
    fn from(e: ConfigError) -> StartError {
        StartError::Config(e)
    }
}

/// Which clock the recorder reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClockChoice {
    Best,
    Monotonic,
    Deterministic,
}

/// Configures and starts a recording.
///
/// ```
/// event_runtime::include_events!("../events.def");
///
/// fn main() {
///     let recording = event_runtime::Recorder::new(&events::SET).memory().start().unwrap();
///     event!(ClientPhase, "warm-up", 1u64, -3);
///     let stream = recording.stop().unwrap();
///     assert!(!stream.is_empty());
/// }
/// ```
///
/// Every setting can also come from the environment ([`from_env`](Recorder::from_env)).
#[derive(Debug)]
#[must_use = "a Recorder does nothing until started"]
pub struct Recorder {
    events: &'static EventSet,
    block_size: u32,
    buffer_size: u64,
    selection: SelectionChoice,
    policy: Policy,
    wait: Duration,
    file: Option<PathBuf>,
    ring: Option<PathBuf>,
    memory: bool,
    ring_threads: u32,
    clock: ClockChoice,
    pack: bool,
}

#[derive(Debug, Clone)]
enum SelectionChoice {
    All,
    Mask(u64),
    Text(String),
}

/// The default block size: 64 KiB.
pub const DEFAULT_BLOCK_SIZE: u32 = 64 << 10;
/// The default buffer size (`EVENT_BUFSIZE`): 16 MiB.
pub const DEFAULT_BUFFER_SIZE: u64 = 16 << 20;
/// The default number of threads a ring file (or the heap rings' sizing) provides for.
pub const DEFAULT_RING_THREADS: u32 = 32;

impl Recorder {
    /// A recorder of `events` (the `events::SET` that `include_events!` generates), with every
    /// kind on, the `switch` policy, 64 KiB blocks, a 16 MiB buffer and the best clock.
    /// Without a sink ([`file`](Self::file), [`ring_file`](Self::ring_file),
    /// [`memory`](Self::memory)) it records into memory.
    pub fn new(events: &'static EventSet) -> Recorder {
        Recorder {
            events,
            block_size: DEFAULT_BLOCK_SIZE,
            buffer_size: DEFAULT_BUFFER_SIZE,
            selection: SelectionChoice::All,
            policy: Policy::Switch,
            wait: Duration::ZERO,
            file: None,
            ring: None,
            memory: false,
            ring_threads: DEFAULT_RING_THREADS,
            clock: ClockChoice::Best,
            pack: true,
        }
    }

    /// Applies the `EVENT_*` environment variables over the settings so far: `EVENT_FILE`,
    /// `EVENT_RING`, `EVENT_CONTROL`, `EVENT_POLICY`, `EVENT_BUFSIZE`, `EVENT_PACK` (README,
    /// "Configuration").
    pub fn from_env(self) -> Result<Recorder, ConfigError> {
        self.with_env(|k| std::env::var_os(k))
    }

    fn with_env(mut self, get: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<Recorder, ConfigError> {
        let env = config::read_env(get)?;
        if let Some(path) = env.file {
            self.file = Some(path);
        }
        if let Some(path) = env.ring {
            self.ring = Some(path);
        }
        if let Some(text) = env.control {
            self.selection = SelectionChoice::Text(text);
        }
        if let Some((policy, wait)) = env.policy {
            self.policy = policy;
            self.wait = wait;
        }
        if let Some(size) = env.bufsize {
            self.buffer_size = size;
        }
        if let Some(pack) = env.pack {
            self.pack = pack;
        }
        Ok(self)
    }

    /// Writes the stream to a file, created (or truncated) readable by its owner only.
    pub fn file(mut self, path: impl Into<PathBuf>) -> Recorder {
        self.file = Some(path.into());
        self
    }

    /// Records into a ring file (flight recorder that survives a crash, readable live by
    /// `event-dump follow`), created readable by its owner only.
    pub fn ring_file(mut self, path: impl Into<PathBuf>) -> Recorder {
        self.ring = Some(path.into());
        self
    }

    /// Keeps the stream in memory; [`Recording::stop`] returns it.
    pub fn memory(mut self) -> Recorder {
        self.memory = true;
        self
    }

    /// What to do when buffers are full; see [`Policy`].
    pub fn policy(mut self, policy: Policy) -> Recorder {
        self.policy = policy;
        self
    }

    /// Under `switch`: how long a thread waits for the writer to free a block before it
    /// refuses events (zero, the default: it does not wait).
    pub fn wait(mut self, wait: Duration) -> Recorder {
        self.wait = wait;
        self
    }

    /// The buffer size in bytes: the pool of blocks under `switch`, the budget under `fill`,
    /// all the rings together under `ring`.
    pub fn buffer_size(mut self, bytes: u64) -> Recorder {
        self.buffer_size = bytes;
        self
    }

    /// The block size, a power of two in 1 KiB..=16 MiB.
    pub fn block_size(mut self, bytes: u32) -> Recorder {
        self.block_size = bytes;
        self
    }

    /// Under `ring`, the number of threads the buffer is divided between: each thread's
    /// ring is `buffer_size / threads`. A ring file has this many slots; a thread that
    /// finds none free records nothing (and its events are counted).
    pub fn ring_threads(mut self, threads: u32) -> Recorder {
        self.ring_threads = threads.max(1);
        self
    }

    /// The kind mask to start with: bit `i` records kind `i` (`events::Kind::X.mask()`).
    pub fn kinds(mut self, mask: u64) -> Recorder {
        self.selection = SelectionChoice::Mask(mask);
        self
    }

    /// The events to record, in `EVENT_CONTROL`'s grammar (`"Pool Arena -Pool:PoolInit"`).
    pub fn control(mut self, text: impl Into<String>) -> Recorder {
        self.selection = SelectionChoice::Text(text.into());
        self
    }

    /// Whether the writer packs (compresses) blocks before they reach the event file and the
    /// memory sink; on by default. Packing makes a stream about four times smaller and costs
    /// the recording threads nothing: the writer thread packs, and only while it keeps up
    /// (docs/FORMAT.md, "Packed blocks"). A ring file is never packed.
    pub fn pack(mut self, on: bool) -> Recorder {
        self.pack = on;
        self
    }

    /// Timestamps from a counter that each event advances by one, for reproducible tests.
    pub fn deterministic_clock(mut self) -> Recorder {
        self.clock = ClockChoice::Deterministic;
        self
    }

    /// Timestamps from the operating system's monotonic clock, even where the TSC is usable.
    pub fn monotonic_clock(mut self) -> Recorder {
        self.clock = ClockChoice::Monotonic;
        self
    }

    /// Starts recording: from now on, enabled events are recorded.
    pub fn start(self) -> Result<Recording, StartError> {
        let bs = self.block_size;
        if !bs.is_power_of_two() || !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&bs) {
            return Err(StartError::BadBlockSize(bs));
        }
        let blocks = self.buffer_size / u64::from(bs);
        if blocks < 4 {
            return Err(StartError::BadBufferSize { buffer: self.buffer_size, block: bs });
        }
        let schema = self.events.schema().map_err(|e| StartError::BadEventSet(e.to_string()))?;
        let selection = match &self.selection {
            SelectionChoice::All => Selection::all(&schema),
            SelectionChoice::Mask(mask) => Selection { kinds: *mask, overrides: Default::default() },
            SelectionChoice::Text(text) => event_format::control::from_env_text(text, &schema).map_err(|e| {
                StartError::Config(ConfigError {
                    variable: "EVENT_CONTROL",
                    value: text.clone(),
                    message: e.to_string(),
                })
            })?,
        };
        let time = match self.clock {
            ClockChoice::Best => TimeSource::best(),
            ClockChoice::Monotonic => TimeSource::monotonic(),
            ClockChoice::Deterministic => TimeSource::deterministic(),
        };
        let clock = time.facts();
        let start_wall = if time.is_deterministic() { 0 } else { clock.ref_wall_ns };
        let header = Header::new(schema.clone(), bs, clock, Producer::current(start_wall));
        let header_bytes = header.encode().map_err(|e| StartError::BadEventSet(e.to_string()))?;

        // Claim the process's recorder before touching any file.
        let mut current = lock(&CURRENT);
        if current.is_some() {
            return Err(StartError::AlreadyRunning);
        }
        let memory = self.memory || (self.file.is_none() && self.ring.is_none());
        let mut sinks = Sinks { memory: memory.then(Vec::new), pack: self.pack, ..Sinks::default() };
        if let Some(path) = &self.file {
            let file = create_private(path).map_err(|error| StartError::Io {
                what: "event file",
                path: path.clone(),
                error,
            })?;
            sinks.file = Some((path.clone(), file));
        }
        sinks.write(&header_bytes);
        let ring_file = match &self.ring {
            Some(path) => {
                let slots = self.ring_threads;
                let per_slot =
                    (blocks / u64::from(slots)).clamp(2, u64::from(event_format::ring::MAX_BLOCKS_PER_SLOT)) as u32;
                let layout = Layout {
                    order: Order::NATIVE,
                    version: event_format::ring::RING_VERSION,
                    block_size: bs,
                    slots,
                    blocks_per_slot: per_slot,
                    header_len: header_bytes.len() as u32,
                    pid: u64::from(std::process::id()),
                    created_ns: clock::wall_ns(),
                };
                let ring = RingFile::create(path, layout, &header_bytes).map_err(|error| StartError::Io {
                    what: "ring file",
                    path: path.clone(),
                    error,
                })?;
                Some(Arc::new(ring))
            }
            None => None,
        };
        let streaming = self.policy != Policy::Ring && !sinks.is_empty();
        let pooled = streaming; // Pool homes, or copies from ring-file slots.
        let exchange = if pooled {
            let budget = (self.policy == Policy::Fill && ring_file.is_none()).then_some(blocks);
            Exchange::new(blocks as usize, bs as usize, budget)
        } else {
            Exchange::new(0, bs as usize, None)
        };
        let heap_ring_blocks = (blocks / u64::from(self.ring_threads)).clamp(2, 1 << 16) as u32;
        let shared = Arc::new(Shared {
            block_size: bs,
            clock,
            catalog: Catalog::new(&schema),
            time,
            next_thread: AtomicU64::new(1),
            policy: self.policy,
            wait: self.wait,
            exchange,
            ring_file,
            heap_ring_blocks,
            sinks: Mutex::new(sinks),
            interned: Mutex::new(HashMap::new()),
            retired: Mutex::new(Vec::new()),
            reports: Mutex::new(Vec::new()),
            lost_base: LOST_UNATTRIBUTED.load(Ordering::Relaxed),
            streaming,
            pool_blocks: if pooled { blocks as usize } else { 0 },
        });
        let generation = GENERATION.fetch_add(1, Ordering::Relaxed) + 1;
        *current = Some((generation, Arc::clone(&shared)));
        drop(current);
        control::install(&schema, selection);
        RUNNING.store(true, Ordering::Relaxed);
        let mut recording = Recording { shared: Arc::clone(&shared), generation, writer: None, stopped: false };
        let writer = std::thread::Builder::new().name("event-writer".into()).spawn({
            let shared = Arc::clone(&shared);
            move || writer_main(&shared, generation)
        });
        // Without its writer the recording cannot run: dropping it undoes the start.
        recording.writer =
            Some(writer.map_err(|error| StartError::Io { what: "writer thread", path: PathBuf::new(), error })?);
        crate::crash::install(&shared);
        Ok(recording)
    }
}

/// Creates `path` for writing, truncated, readable and writable by its owner only.
/// Creates (or truncates) the event file, readable and writable by its owner only: a new
/// file is created 0600, an existing one is set to 0600, and a symbolic link at the path is
/// refused (O_NOFOLLOW), so that a trace is never written where someone else pointed it.
fn create_private(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
        let file = options.open(path)?;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        Ok(file)
    }
    #[cfg(not(unix))]
    options.open(path)
}

/// How often the writer thread looks at the ring file's control page and heartbeat.
const SERVICE_PERIOD: Duration = Duration::from_millis(20);
/// How often the writer thread records a `ClockSync` event.
const CLOCK_SYNC_PERIOD: Duration = Duration::from_secs(1);

/// The writer thread: writes full blocks to the sinks, reports losses, and serves the ring
/// file (heartbeat, control requests) and the clock (`ClockSync`).
fn writer_main(shared: &Arc<Shared>, generation: u64) {
    buffer::mark_writer();
    let mut last_sync = Instant::now();
    loop {
        let batch = shared.exchange.next_batch(SERVICE_PERIOD);
        let closed = matches!(batch, Batch::Closed);
        if let Batch::Blocks(blocks) = batch {
            shared.write_batch(blocks);
        }
        if shared.streaming {
            shared.write_reports(&[]);
        }
        if let Some(ring) = &shared.ring_file {
            ring.heartbeat();
            ring.set_lost(shared.lost_here());
            if let Some((seq, text)) = ring.request() {
                match control::apply(&text) {
                    Ok(now) => ring.reply(seq, true, &now),
                    Err(e) => ring.reply(seq, false, &e.to_string()),
                }
            }
        }
        if !shared.time.is_deterministic() && is_running() && last_sync.elapsed() >= CLOCK_SYNC_PERIOD {
            last_sync = Instant::now();
            crate::annotate::clock_sync(&shared.time);
        }
        if closed {
            break;
        }
    }
    // The writer's own block (its ClockSync events) goes to the sinks before it ends.
    buffer::detach_this_thread(generation);
}

/// A running recording. Dropping it stops it.
///
/// Other threads hand their partial blocks on when they exit, from a thread-local destructor.
/// To include their last events, join them with [`JoinHandle::join`](std::thread::JoinHandle::join)
/// (which waits for those destructors) or have them call [`flush`](crate::flush) before
/// [`stop`](Recording::stop). `std::thread::scope` is not enough on its own: it can return
/// before its threads' thread-local destructors have run.
#[derive(Debug)]
pub struct Recording {
    shared: Arc<Shared>,
    generation: u64,
    writer: Option<JoinHandle<()>>,
    stopped: bool,
}

impl Recording {
    /// Hands this thread's partial block on and waits (up to a second) until the writer has
    /// written every block handed on so far: what was recorded is then in the sinks.
    pub fn flush(&self) {
        buffer::flush_this_thread();
        self.shared.exchange.wait_drained(Duration::from_secs(1));
        if let Some((_, file)) = &lock(&self.shared.sinks).file {
            let _ = (&*file).flush();
        }
    }

    /// The memory sink's stream so far: the header and every block written. Empty without
    /// a memory sink. Under `switch` and `fill`, call [`flush`](Self::flush) first to include
    /// this thread's partial block.
    pub fn bytes(&self) -> Vec<u8> {
        lock(&self.shared.sinks).memory.clone().unwrap_or_default()
    }

    /// Stops recording and returns the memory sink's stream (empty without one). Errors
    /// when a sink could not be written.
    pub fn stop(mut self) -> io::Result<Vec<u8>> {
        self.end();
        let mut sinks = lock(&self.shared.sinks);
        match sinks.failed.take() {
            Some(message) => Err(io::Error::other(message)),
            None => Ok(sinks.memory.take().unwrap_or_default()),
        }
    }

    fn end(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        crate::crash::uninstall();
        RUNNING.store(false, Ordering::Relaxed);
        control::uninstall();
        buffer::detach_this_thread(self.generation);
        self.shared.exchange.close();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
        {
            let mut current = lock(&CURRENT);
            if current.as_ref().is_some_and(|(g, _)| *g == self.generation) {
                *current = None;
            }
            GENERATION.fetch_add(1, Ordering::Relaxed);
        }
        let shared = &self.shared;
        let lost = shared.lost_here();
        if let Some(ring) = &shared.ring_file {
            ring.set_lost(lost);
        }
        let unattributed: &[(u64, u64)] = if lost > 0 { &[(0, lost)] } else { &[] };
        match &shared.ring_file {
            Some(ring) if !shared.streaming => {
                // The copy of the ring file carries its own loss report (RingStream's block of
                // thread 0). Nothing else reports here: no thread refuses under `ring`, and a
                // thread without a slot counts its events as unattributed (the file's `lost`).
                if !lock(&shared.sinks).is_empty()
                    && let Err(e) = shared.write_ring_file(ring)
                {
                    lock(&shared.sinks).failed = Some(format!("copying the ring file to the sinks failed: {e}"));
                }
            }
            _ => {
                shared.write_rings();
                shared.write_reports(unattributed);
            }
        }
        if let Some(ring) = &shared.ring_file {
            ring.close();
        }
        if let Some((_, file)) = &lock(&shared.sinks).file {
            let _ = (&*file).flush();
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        self.end();
    }
}

/// Starts recording `events` as the environment says (`EVENT_FILE`, `EVENT_RING`,
/// `EVENT_CONTROL`, `EVENT_POLICY`, `EVENT_BUFSIZE`; README, "Configuration"). Without
/// `EVENT_FILE` or `EVENT_RING`, the stream goes to `<program>.evt` in the current directory.
/// Keep the returned [`Recording`]: dropping it stops the recording and flushes it.
///
/// ```no_run
/// event_runtime::include_events!("../events.def");
///
/// fn main() -> Result<(), event_runtime::StartError> {
///     let _recording = event_runtime::start(&events::SET)?;
///     event!(ClientPhase, "work", 1u64, 0);
///     Ok(())
/// }
/// ```
pub fn start(events: &'static EventSet) -> Result<Recording, StartError> {
    let mut recorder = Recorder::new(events).from_env()?;
    if recorder.file.is_none() && recorder.ring.is_none() {
        recorder.file = Some(default_file());
    }
    recorder.start()
}

fn default_file() -> PathBuf {
    let program = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "events".to_owned());
    PathBuf::from(format!("{program}.evt"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_overrides_the_builder() {
        static SET: EventSet = EventSet::__new("VERSION(1,0,0)\nKIND(K, \"k\")\nRELATION(E, 1, TRUE, K, W)\n", "t.def");
        let vars = [("EVENT_POLICY", "fill"), ("EVENT_BUFSIZE", "1m"), ("EVENT_RING", "r.ring")];
        let get = |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| std::ffi::OsString::from(v));
        let r = Recorder::new(&SET).policy(Policy::Switch).buffer_size(4 << 20).with_env(get).unwrap();
        assert_eq!((r.policy, r.buffer_size, r.ring.as_deref()), (Policy::Fill, 1 << 20, Some(Path::new("r.ring"))));
    }
}
