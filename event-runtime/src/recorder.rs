//! Configuring and starting a recording: the [`Recorder`] builder, the settings it reads
//! from the environment, [`StartError`], and [`start`], the shortcut that configures from the
//! environment alone.
//!
//! The start checks every setting before it touches a file, claims the process's recorder
//! (`session::claim`), creates the sinks, makes the session's shared state current, and hands
//! over to the [`Recording`], which owns the writer thread and the stop.

use crate::clock::{self, TimeSource};
use crate::config::{self, ConfigError, Policy};
use crate::control;
use crate::crash;
use crate::event_set::EventSet;
use crate::exchange::Exchange;
use crate::recording::Recording;
use crate::ringfile::RingFile;
use crate::session::{self, Shared};
use crate::sink::{self, Sinks};
use event_format::decode::Catalog;
use event_format::ring::Layout;
use event_format::select::Selection;
use event_format::wire::{Header, MAX_BLOCK_SIZE, MIN_BLOCK_SIZE, Order, Producer};
use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
/// [`start`](crate::start) is the shortcut for a recording configured by the environment
/// alone.
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
            SelectionChoice::Text(text) => event_format::select::from_env_text(text, &schema).map_err(|e| {
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
        // The recording's one set: its event j is written as wire code `first + j`.
        let first = header.sets[0].range().map_or(0, |(first, _)| first);

        // Claim the process's recorder before touching any file.
        let Some(vacancy) = session::claim() else {
            return Err(StartError::AlreadyRunning);
        };
        let memory = self.memory || (self.file.is_none() && self.ring.is_none());
        let file = match &self.file {
            Some(path) => {
                let file = sink::create_private(path).map_err(|error| StartError::Io {
                    what: "event file",
                    path: path.clone(),
                    error,
                })?;
                Some((path.clone(), file))
            }
            None => None,
        };
        let mut sinks = Sinks::new(file, memory, self.pack);
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
            catalog: Catalog::new(&header.sets),
            first,
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
            lost_base: session::lost_unattributed(),
            streaming,
            pool_blocks: if pooled { blocks as usize } else { 0 },
        });
        let generation = vacancy.fill(&shared);
        control::install(&schema, selection);
        session::set_running(true);
        let recording = Recording::begin(Arc::clone(&shared), generation).map_err(|error| StartError::Io {
            what: "writer thread",
            path: PathBuf::new(),
            error,
        })?;
        crash::install(&shared);
        Ok(recording)
    }
}

/// Starts recording `events` as the environment says: a shortcut for
/// `Recorder::new(events).from_env()?.start()` (the `EVENT_*` variables; README,
/// "Configuration"), except that when the environment names no sink (neither `EVENT_FILE` nor
/// `EVENT_RING`) the stream goes to the file `<program>.evt` in the current directory instead
/// of memory. It is what a program that is configured from outside wants; use [`Recorder`] to
/// set anything from code. Keep the returned [`Recording`]: dropping it stops the recording
/// and flushes it.
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

/// Where [`start`] writes when the environment names no sink: `<program>.evt`.
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
    use std::path::Path;

    #[test]
    fn environment_overrides_the_builder() {
        static SET: EventSet =
            EventSet::__new("VERSION(1,0,0)\nKIND(K, \"k\")\nRELATION(E, 1, TRUE, K, W)\n", "t.def", "t");
        let vars = [("EVENT_POLICY", "fill"), ("EVENT_BUFSIZE", "1m"), ("EVENT_RING", "r.ring")];
        let get = |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| std::ffi::OsString::from(v));
        let r = Recorder::new(&SET).policy(Policy::Switch).buffer_size(4 << 20).with_env(get).unwrap();
        assert_eq!((r.policy, r.buffer_size, r.ring.as_deref()), (Policy::Fill, 1 << 20, Some(Path::new("r.ring"))));
    }
}
