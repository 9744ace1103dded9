//! Starting and stopping a recording, and where full blocks go.

use crate::buffer;
use crate::clock::TimeSource;
use crate::control;
use event_format::schema::Schema;
use event_format::wire::{Header, MAX_BLOCK_SIZE, MIN_BLOCK_SIZE, Producer};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

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

/// Where sealed blocks go.
#[derive(Debug)]
pub(crate) enum Sink {
    /// Kept in memory: the header, then every block, as a stream.
    Memory(Mutex<Vec<u8>>),
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update under these locks is a whole append; a panic elsewhere leaves no half state.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Sink {
    pub(crate) fn accept(&self, block: &[u8]) {
        match self {
            Sink::Memory(bytes) => lock(bytes).extend_from_slice(block),
        }
    }
}

/// What every thread buffer of one recording shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) block_size: u32,
    pub(crate) time: TimeSource,
    /// The next thread id; ids start at 1.
    pub(crate) next_thread: AtomicU64,
    pub(crate) sink: Sink,
    /// Interned strings and their ids, per recording.
    pub(crate) interned: Mutex<HashMap<String, u64>>,
}

/// Bumped at every start and stop: a thread buffer of another generation is stale.
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Whether a recording runs: the built-in events of `annotate` test it first.
static RUNNING: AtomicBool = AtomicBool::new(false);
static CURRENT: Mutex<Option<(u64, Arc<Shared>)>> = Mutex::new(None);
/// Events that could not be attributed to any thread's block: emitted while the thread was
/// exiting, re-entrantly, or as a recording stopped.
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

#[inline]
pub(crate) fn is_running() -> bool {
    // Relaxed: as for the enable bits, a late view records or skips an event or two.
    RUNNING.load(Ordering::Relaxed)
}

#[cold]
pub(crate) fn count_lost_unattributed() {
    LOST_UNATTRIBUTED.fetch_add(1, Ordering::Relaxed);
}

/// Events emitted while no thread buffer could take them (a thread exiting, an event recorded
/// from inside the recording of another, a race with stop). Kept so no loss is silent.
pub fn lost_unattributed() -> u64 {
    LOST_UNATTRIBUTED.load(Ordering::Relaxed)
}

/// Why a recording could not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartError {
    /// Another recording is running in this process.
    AlreadyRunning,
    /// The block size is not a power of two in range.
    BadBlockSize(u32),
    /// The embedded event set does not parse or encode.
    BadEventSet(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::AlreadyRunning => write!(f, "a recording is already running in this process; stop it before starting another"),
            StartError::BadBlockSize(n) => write!(f, "block size {n} is not a power of two in {MIN_BLOCK_SIZE}..={MAX_BLOCK_SIZE}; choose one such as 65536"),
            StartError::BadEventSet(why) => write!(f, "the event set cannot be recorded: {why}"),
        }
    }
}

impl std::error::Error for StartError {}

/// Configures and starts a recording.
///
/// ```
/// event_runtime::include_events!("../events.def");
///
/// fn main() {
///     let recording = event_runtime::Recorder::new(&events::SET).memory().start().unwrap();
///     event!(ClientPhase, "warm-up", 1u64, -3);
///     let stream = recording.stop();
///     assert!(!stream.is_empty());
/// }
/// ```
#[derive(Debug)]
#[must_use = "a Recorder does nothing until started"]
pub struct Recorder {
    events: &'static EventSet,
    block_size: u32,
    kinds: u64,
    deterministic: bool,
}

impl Recorder {
    /// A recorder of `events` (the `events::SET` that `include_events!` generates), with every
    /// kind on, 64 KiB blocks and the monotonic clock.
    pub fn new(events: &'static EventSet) -> Recorder {
        Recorder { events, block_size: 64 * 1024, kinds: u64::MAX, deterministic: false }
    }

    /// Keeps the stream in memory; [`Recording::stop`] returns it.
    pub fn memory(self) -> Recorder {
        self
    }

    /// The block size, a power of two in 1 KiB..=16 MiB.
    pub fn block_size(mut self, bytes: u32) -> Recorder {
        self.block_size = bytes;
        self
    }

    /// The kind mask to start with: bit `i` records kind `i` (`events::Kind::X.mask()`).
    pub fn kinds(mut self, mask: u64) -> Recorder {
        self.kinds = mask;
        self
    }

    /// Timestamps from a counter that each event advances by one, for reproducible tests.
    pub fn deterministic_clock(mut self) -> Recorder {
        self.deterministic = true;
        self
    }

    /// Starts recording: from now on, enabled events are recorded.
    pub fn start(self) -> Result<Recording, StartError> {
        if !self.block_size.is_power_of_two() || !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&self.block_size) {
            return Err(StartError::BadBlockSize(self.block_size));
        }
        let schema = self.events.schema().map_err(|e| StartError::BadEventSet(e.to_string()))?;
        let time = if self.deterministic { TimeSource::deterministic() } else { TimeSource::monotonic() };
        let (clock, start_wall) = time.facts();
        let header = Header::new(schema.clone(), self.block_size, clock, Producer::current(start_wall));
        let bytes = header.encode().map_err(|e| StartError::BadEventSet(e.to_string()))?;
        let shared = Arc::new(Shared {
            block_size: self.block_size,
            time,
            next_thread: AtomicU64::new(1),
            sink: Sink::Memory(Mutex::new(bytes)),
            interned: Mutex::new(HashMap::new()),
        });
        let mut current = lock(&CURRENT);
        if current.is_some() {
            return Err(StartError::AlreadyRunning);
        }
        let generation = GENERATION.fetch_add(1, Ordering::Relaxed) + 1;
        *current = Some((generation, Arc::clone(&shared)));
        control::install(&schema, self.kinds);
        RUNNING.store(true, Ordering::Relaxed);
        Ok(Recording { shared, generation, stopped: false })
    }
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
    stopped: bool,
}

impl Recording {
    /// Hands this thread's partial block on, so that what it recorded so far is in the stream.
    pub fn flush(&self) {
        buffer::flush_this_thread();
    }

    /// The stream so far (memory sink): the header and every block handed on.
    pub fn bytes(&self) -> Vec<u8> {
        match &self.shared.sink {
            Sink::Memory(bytes) => lock(bytes).clone(),
        }
    }

    /// Stops recording, hands this thread's partial block on, and returns the stream.
    pub fn stop(mut self) -> Vec<u8> {
        self.end();
        self.bytes()
    }

    fn end(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        RUNNING.store(false, Ordering::Relaxed);
        control::uninstall();
        buffer::detach_this_thread(self.generation);
        let mut current = lock(&CURRENT);
        if current.as_ref().is_some_and(|(g, _)| *g == self.generation) {
            *current = None;
        }
        GENERATION.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        self.end();
    }
}
