//! Configuring and starting a recording: the [`Recorder`] builder, the settings it reads
//! from the environment, [`StartError`], and [`start`], the shortcut that configures from the
//! environment alone.
//!
//! The start ([`Recorder::start`]) runs these steps, in this order, each a function of its own:
//!
//! 1. `check`: every setting checked before anything is touched (`blocks`: the sizes, fitted
//!    to the machine; `recorded_sets`; `selections`; `header`: the clock and the stream's
//!    header; the files' names expanded), into a `Plan`;
//! 2. `session::claim`: the process's recorder claimed (one recording at a time), and the
//!    fork handlers registered;
//! 3. `open_sinks`: the event file claimed and its header written, the memory sink, the ring
//!    file claimed, backed on the disk and mapped (`open_ring_file`);
//! 4. `share`: the session's shared state (the pool and queue, the sinks, the ring file);
//! 5. `make_current`: that state made the running recording, its selection installed, the
//!    built-in events on;
//! 6. the hand-over to the [`Recording`] (`Recording::begin`), which owns the writer thread
//!    and the stop, and the crash handlers (`crash::install`).

use crate::blocks::exchange::Exchange;
use crate::blocks::ringfile::{self, RingFile};
use crate::clock::{self, TimeSource};
use crate::config::{self, BufResize, ConfigError, Keep, Origin, Policy, Rotate, Signals};
use crate::emit::session::{self, AfterFork, HeapRingsCell, Incidents, Shared, WriterOwned};
use crate::event_set::EventSet;
use crate::files::{self, ClaimError, Purpose};
use crate::machine;
use crate::setup::crash;
use crate::setup::fork;
use crate::setup::recording::{self, Recording};
use crate::sinks::segments::Segments;
use crate::sinks::sink::Sinks;
use crate::writer::control;
use event_format::decode::Catalog;
use event_format::ring::Layout;
use event_format::schema::Schema;
use event_format::select::Selection;
use event_format::wire::{Header, MAX_BLOCK_SIZE, MIN_BLOCK_SIZE, Order, Packing, Producer, RecordingId, SetEntry};
use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Why a recording could not start. Its message is one line: what is wrong, what to do.
#[non_exhaustive]
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
        /// Where the buffer size was given, as given: `EVENT_BUFSIZE="300k"`,
        /// `Recorder::buffer_size(307200) in the program's code`, or `the default buffer size`.
        given: String,
    },
    /// The embedded event set does not parse or encode.
    BadEventSet(String),
    /// A setting from the environment does not parse.
    Config(ConfigError),
    /// The buffers are larger than the machine can hold, and `EVENT_BUFRESIZE=manual`
    /// (or [`Recorder::bufresize`]) forbids lowering them.
    BufferTooLarge {
        /// The buffer size asked for.
        requested: u64,
        /// The largest that fits.
        fits: u64,
        /// The limit that decides it (`available memory`, ...).
        limit: &'static str,
        /// Where the buffer size was given, as given (as [`StartError::BadBufferSize`]'s).
        given: String,
    },
    /// The recorder's writer thread could not be started (the process or its user reached a
    /// thread limit: `ulimit -u`, a cgroup's `pids.max`).
    WriterThread(io::Error),
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
            StartError::BadBufferSize { buffer, block, given } => {
                write!(
                    f,
                    "{given}: buffer size {} holds fewer than {} blocks of {}; set it (EVENT_BUFSIZE, Recorder::buffer_size) to at least {}, or make the blocks smaller (Recorder::block_size)",
                    machine::size_text(*buffer),
                    config::MIN_BLOCKS,
                    machine::size_text(u64::from(*block)),
                    machine::size_text(config::MIN_BLOCKS * u64::from(*block))
                )
            }
            StartError::BadEventSet(why) => write!(f, "the event set cannot be recorded: {why}"),
            StartError::BufferTooLarge { requested, fits, limit, given } => write!(
                f,
                "{given}: buffer size {} is more than this machine can spare ({} fits, a quarter of {limit}); lower EVENT_BUFSIZE or set EVENT_BUFRESIZE=auto",
                machine::size_text(*requested),
                machine::size_text(*fits)
            ),
            StartError::Config(e) => write!(f, "{e}"),
            StartError::WriterThread(error) => write!(
                f,
                "cannot start the recorder's writer thread: {error}; the process has reached a thread limit (ulimit -u, the cgroup's pids.max)"
            ),
            StartError::Io { what, path, error } => {
                write!(f, "cannot create the {what} {}: {error}; choose a writable path", path.display())
            }
        }
    }
}

/// `Debug` writes the one-line message that `Display` writes, not the variant and its
/// fields: an error returned from `main` (`fn main() -> Result<(), StartError>`, or through
/// `Box<dyn Error>`) is printed by the standard library with `Debug`, as `Error: {:?}`, and
/// that line is what the program's user reads. A program that needs the parts matches on
/// them.
impl fmt::Debug for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
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
///     let recording = event_runtime::Recorder::new().memory().start().unwrap();
///     event!(ClientPhase, "warm-up", 1u64, -3);
///     let stream = recording.stop().unwrap();
///     assert!(!stream.is_empty());
/// }
/// ```
///
/// Every setting can also come from the environment ([`from_env`](Recorder::from_env)).
/// [`start`](crate::start) is the shortcut for a recording configured by the environment
/// alone.
///
/// # Signals
///
/// A recording never takes SIGINT, SIGTERM or any signal the program handles or ignores: a
/// program that stops on them does so as it would without the recorder. By default
/// ([`Signals::Default`]) it installs a handler only for those of SIGABRT, SIGILL and SIGFPE
/// whose action is the default one when it starts, and only while it writes an event file:
/// the handler writes the signalled thread's partial block and the writer's queue to the
/// file, then gives the signal its default action back and raises it again. The stop gives
/// the default action back. While a ring file is mapped, a SIGBUS handler keeps a ring file
/// truncated under the program from killing it, and passes every other SIGBUS on to the
/// handler it found (std's stack-overflow report). [`signals`](Recorder::signals) with
/// [`Signals::None`] (`EVENT_SIGNALS=none`) installs no handler at all.
#[derive(Debug, Clone)]
#[must_use = "a Recorder does nothing until started"]
pub struct Recorder {
    /// The sets to record: `None`, every registered set.
    sets: Option<Vec<&'static EventSet>>,
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
    pack: Option<Packing>,
    bufresize: BufResize,
    fork: bool,
    signals: Signals,
    /// Segments instead of one event file (`EVENT_ROTATE`).
    rotate: Option<Rotate>,
    /// The disk budget of the segments (`EVENT_KEEP`).
    keep: Keep,
    /// `EVENT_TRIGGER`'s text (`trigger`), and where its snapshots go (`EVENT_SNAPSHOT`).
    trigger: Option<String>,
    snapshot_pattern: Option<PathBuf>,
    /// `EVENT_PIN`: the events every snapshot keeps whatever the rings overwrite.
    pin: Option<String>,
    /// `EVENT_LIMIT`: limits over events.def's (`aggregate`).
    limit: Option<String>,
    /// How often the writer thread writes the histograms and suppressions counted.
    histogram_period: Duration,
    /// `EVENT_HOST`: the host name the header and `%h` give, instead of the system's.
    host: Option<String>,
    /// `EVENT_LABELS`: the recording's labels, in the order given.
    labels: Vec<(String, String)>,
    /// The `EVENT_*` variables whose values [`from_env`](Recorder::from_env) applied, with
    /// their text: a setting's error names the variable when it came from there, else the
    /// method of the code that gave it.
    from_env: Vec<(&'static str, String)>,
}

impl Default for Recorder {
    fn default() -> Recorder {
        Recorder::new()
    }
}

#[derive(Debug, Clone)]
enum SelectionChoice {
    All,
    Mask(u64),
    Text(String),
    /// A forked child's: the selections its parent had when the child started recording.
    Given(Vec<Selection>),
}

pub use crate::config::DEFAULT_BLOCK_SIZE;
/// The default buffer size (`EVENT_BUFSIZE`): 16 MiB.
pub const DEFAULT_BUFFER_SIZE: u64 = 16 << 20;
/// The default number of threads a ring file (or the heap rings' sizing) provides for.
pub const DEFAULT_RING_THREADS: u32 = 32;

impl Recorder {
    /// A recorder of every event set linked into the program (each crate's `include_events!`
    /// registers its set; see [`sets`](Self::sets) to record some only), with every kind
    /// on, the `switch` policy, 64 KiB blocks, a 16 MiB buffer and the best clock. Without
    /// a sink ([`file`](Self::file), [`ring_file`](Self::ring_file),
    /// [`memory`](Self::memory)) it records into memory.
    ///
    /// A program with no events.def at all (one that records through the `tracing` bridge
    /// alone) records `tracing_bridge::EVENTS`, a set without user events.
    pub fn new() -> Recorder {
        Recorder {
            sets: None,
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
            pack: Some(Packing::default()),
            bufresize: BufResize::Auto,
            fork: true,
            signals: Signals::Default,
            rotate: None,
            keep: Keep::default(),
            trigger: None,
            snapshot_pattern: None,
            pin: None,
            limit: None,
            histogram_period: crate::emit::aggregate::DEFAULT_PERIOD,
            host: None,
            labels: Vec::new(),
            from_env: Vec::new(),
        }
    }

    /// Records only `sets` (each crate's `events::SET`), in this order, instead of every
    /// registered set. A set left out is not recorded, as a disabled kind is not: its
    /// `event!`s cost one branch, and the stream does not name it.
    pub fn sets(mut self, sets: &[&'static EventSet]) -> Recorder {
        let mut list: Vec<&'static EventSet> = Vec::new();
        for set in sets {
            if !list.iter().any(|s| std::ptr::eq(*s, *set)) {
                list.push(set);
            }
        }
        self.sets = Some(list);
        self
    }

    /// Applies the `EVENT_*` environment variables over the settings so far
    /// (docs/guide/configuration.md has each one's values and default). It reads exactly these:
    ///
    /// | variable | sets what | as in code |
    /// |---|---|---|
    /// | `EVENT_FILE` | the event file (a pattern) | [`file`](Self::file) |
    /// | `EVENT_RING` | the ring file (a pattern) | [`ring_file`](Self::ring_file) |
    /// | `EVENT_CONTROL` | what is recorded | [`control`](Self::control) |
    /// | `EVENT_POLICY` | `switch`, `wait=..`, `ring` or `fill` | [`policy`](Self::policy), [`wait`](Self::wait) |
    /// | `EVENT_BUFSIZE` | the buffer's size | [`buffer_size`](Self::buffer_size) |
    /// | `EVENT_BUFRESIZE` | `auto` or `manual` | [`bufresize`](Self::bufresize) |
    /// | `EVENT_FORK` | whether a forked child records | [`record_forks`](Self::record_forks) |
    /// | `EVENT_PACK` | whether blocks are packed | [`pack`](Self::pack) |
    /// | `EVENT_SIGNALS` | `default` or `none` | [`signals`](Self::signals) |
    /// | `EVENT_ROTATE` | segments, by size or age | [`rotate`](Self::rotate) |
    /// | `EVENT_KEEP` | the directory's disk budget | [`keep`](Self::keep) |
    /// | `EVENT_TRIGGER` | snapshots' triggers | [`trigger`](Self::trigger) |
    /// | `EVENT_SNAPSHOT` | where snapshots go (a pattern) | [`snapshots`](Self::snapshots) |
    /// | `EVENT_PIN` | events every snapshot keeps | [`pin`](Self::pin) |
    /// | `EVENT_LIMIT` | rate limits over events.def's | [`limit`](Self::limit) |
    /// | `EVENT_HOST` | the host name recorded (and `%h`) | [`host`](Self::host) |
    /// | `EVENT_LABELS` | the recording's labels | [`label`](Self::label) |
    /// | `EVENT_RING_THREADS` | the ring file's slots | [`ring_threads`](Self::ring_threads) |
    ///
    /// A value that does not parse is an error that names the variable and its text; a value
    /// given in code that the start refuses names the method instead (`Recorder::rotate("1m")
    /// in the program's code: ...`). Any other `EVENT_*` variable gets one line on stderr
    /// naming the closest setting (`EVENT_FLIE`: did you mean `EVENT_FILE`?) and is otherwise
    /// ignored.
    pub fn from_env(self) -> Result<Recorder, ConfigError> {
        for line in config::unknown_variables(std::env::vars_os().map(|(name, _)| name)) {
            eprintln!("event-runtime: {line}");
        }
        self.with_env(|k| std::env::var_os(k))
    }

    fn with_env(mut self, get: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<Recorder, ConfigError> {
        let env = config::read_env(&get)?;
        for variable in config::VARIABLES {
            if let Some(value) = get(variable) {
                self.from_env.retain(|(v, _)| *v != variable);
                self.from_env.push((variable, value.to_string_lossy().into_owned()));
            }
        }
        if let Some(host) = env.host {
            self.host = Some(host);
        }
        for (key, value) in env.labels.into_iter().flatten() {
            self = self.label(key, value);
        }
        for (path, purpose) in [(&env.file, Purpose::EventFile), (&env.ring, Purpose::RingFile)] {
            if let Some(path) = path {
                files::check_pattern(path).map_err(|message| pattern_error(path, purpose, message))?;
            }
        }
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
        if let Some(bufresize) = env.bufresize {
            self.bufresize = bufresize;
        }
        if let Some(fork) = env.fork {
            self.fork = fork;
        }
        if let Some(signals) = env.signals {
            self.signals = signals;
        }
        if let Some(rotate) = env.rotate {
            self.rotate = Some(rotate);
        }
        if let Some(keep) = env.keep {
            self.keep = keep;
        }
        if let Some(trigger) = env.trigger {
            self.trigger = Some(trigger);
        }
        if let Some(pin) = env.pin {
            self.pin = Some(pin);
        }
        if let Some(limit) = env.limit {
            self.limit = Some(limit);
        }
        if let Some(threads) = env.ring_threads {
            self.ring_threads = threads;
        }
        if let Some(path) = env.snapshot {
            // `%s`, the snapshot's number, is this pattern's own (`trigger::snapshot_path`).
            let numbered = PathBuf::from(path.to_string_lossy().replace("%s", "1"));
            files::check_pattern(&numbered)
                .map_err(|message| ConfigError::env("EVENT_SNAPSHOT", path.to_string_lossy(), message))?;
            self.snapshot_pattern = Some(path);
        }
        Ok(self)
    }

    /// Writes the event file as a sequence of segments (`EVENT_ROTATE`; docs/FORMAT.md,
    /// "Segments"; docs/guide/long-running-services.md): the [`file`](Self::file) path gives
    /// their names (`trace.evt`: `trace.000000.evt`, `trace.000001.evt`, ...), each written as
    /// `NAME.open` and renamed to `NAME` once sealed; a new segment starts when the one being
    /// written reaches `rotate`'s size or age, or on demand ([`Recording::rotate`]). Each
    /// segment is a whole stream that reads alone, with every thread name, label and interned
    /// string its events use. Not with [`Policy::Ring`], which writes the event file once, at
    /// the stop: [`start`](Self::start) refuses the two together ([`StartError::Config`]).
    ///
    /// A restart writes beside the earlier runs' segments (docs/guide/long-running-services.md,
    /// "Restarts"): its numbers follow theirs, its start seals a killed run's `.open` segment
    /// (one line says so), and the [`keep`](Self::keep) budget counts the directory's segments
    /// of the program, whichever run wrote them.
    ///
    /// ```no_run
    /// use event_runtime::{Keep, Recorder, Rotate};
    /// let recording = Recorder::new()
    ///     .file("/var/log/app/trace.evt")
    ///     .rotate(Rotate { size: Some(64 << 20), age: None })
    ///     .keep(Keep { segments: Some(10), ..Keep::default() })
    ///     .start()?;
    /// # Ok::<(), event_runtime::StartError>(())
    /// ```
    ///
    /// [`Recording::rotate`]: crate::Recording::rotate
    pub fn rotate(mut self, rotate: Rotate) -> Recorder {
        self.rotate = Some(rotate);
        self
    }

    /// The disk budget of the directory's segments (`EVENT_KEEP`): the oldest sealed segments
    /// of the program's names there, whichever run wrote them, are deleted to stay within it
    /// (and to keep [`Keep::free`] free on the disk), and the next segment counts them.
    /// Without [`rotate`](Self::rotate) there are no segments, and nothing is deleted.
    pub fn keep(mut self, keep: Keep) -> Recorder {
        self.keep = keep;
        self
    }

    /// Writes the stream to a file, created readable by its owner only. The path is a
    /// pattern, as `EVENT_FILE`'s (docs/guide/configuration.md): `%p` the process id, `%t` the
    /// start time, `%h` the host name ([`host`](Self::host)), `%n` the program name, `%r` the
    /// recording id (a new one each run), `%%` a `%`.
    ///
    /// The recorder never writes over what is not its own: when the path holds anything but
    /// an event log or ring file of ours (or an empty file), the recording starts without
    /// this file and says why in one line on stderr. An older trace at the path (an earlier
    /// run's) is kept as `PATH.old`, and one line says so; when a live process is writing the
    /// path, the stream goes to `STEM-PID.EXT` instead, and a line says so.
    pub fn file(mut self, path: impl Into<PathBuf>) -> Recorder {
        self.file = Some(path.into());
        self
    }

    /// Records into a ring file (flight recorder that survives a crash, readable live by
    /// `event-dump follow`), created readable by its owner only. The path is a pattern, and
    /// what is at it is treated, as for [`file`](Self::file).
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
    /// refuses events (zero, the default: it does not wait). Waiting threads are served first
    /// come, first served: a block the writer frees goes to the thread that has waited
    /// longest, never to one that comes later.
    pub fn wait(mut self, wait: Duration) -> Recorder {
        self.wait = wait;
        self
    }

    /// The buffer size in bytes: the pool of blocks under `switch`, the budget under `fill`,
    /// all the rings together under `ring`. At least 4 blocks: 256 KiB with the default 64 KiB
    /// blocks (4 KiB with the smallest, 1 KiB); `EVENT_BUFSIZE` takes 4k..=1024g. Memory is
    /// taken as blocks are first used, so a large buffer costs a program that records little
    /// almost nothing.
    pub fn buffer_size(mut self, bytes: u64) -> Recorder {
        self.buffer_size = bytes;
        self
    }

    /// The block size, a power of two in 1 KiB..=16 MiB.
    pub fn block_size(mut self, bytes: u32) -> Recorder {
        self.block_size = bytes;
        self
    }

    /// The most threads that hold a slot of the ring file at once (`EVENT_RING_THREADS`, 32
    /// by default, at most 65 536): a thread that starts while every slot is held by a
    /// running thread records nothing, and its events are counted. It does not divide the
    /// buffer: under `ring` the threads that record share the whole buffer, in memory and in
    /// a ring file alike (docs/guide/keeping-the-incident.md, "Sizing a flight recorder").
    pub fn ring_threads(mut self, threads: u32) -> Recorder {
        self.ring_threads = threads.clamp(1, config::MAX_RING_THREADS);
        self
    }

    /// The kind mask to start with: bit `i` records kind `i` (`events::Kind::X.mask()`), in
    /// every recorded set (meant for a program with one set; [`control`](Self::control)
    /// names kinds by set).
    pub fn kinds(mut self, mask: u64) -> Recorder {
        self.selection = SelectionChoice::Mask(mask);
        self
    }

    /// The events to record, in `EVENT_CONTROL`'s grammar (`"Pool Arena -Pool:PoolInit"`;
    /// `storage:Page` is the kind `Page` of the set `storage`).
    pub fn control(mut self, text: impl Into<String>) -> Recorder {
        self.selection = SelectionChoice::Text(text.into());
        self
    }

    /// Whether the writer packs (compresses) blocks before they reach the event file, its
    /// segments, snapshots and the memory sink; on by default, with the default [`Packing`]
    /// (zstd over the records in columns: under 4 bytes an event on the tour's trace, nine
    /// times smaller than the records). Packing costs the recording threads nothing: the
    /// writer thread packs, and only while it keeps up (docs/FORMAT.md, "Packed blocks"). A
    /// ring file is never packed. `false` is `EVENT_PACK=off`.
    pub fn pack(mut self, on: bool) -> Recorder {
        self.pack = on.then(Packing::default);
        self
    }

    /// How the writer packs blocks (`EVENT_PACK=zstd`, the default, or `lz4`, which every
    /// reader since format 1.1 reads): see [`pack`](Self::pack).
    ///
    /// ```
    /// use event_runtime::{Packing, Recorder};
    /// let recorder = Recorder::new().packing(Packing::LZ4);
    /// # drop(recorder);
    /// ```
    pub fn packing(mut self, packing: Packing) -> Recorder {
        self.pack = Some(packing);
        self
    }

    /// What to do when the buffers ([`buffer_size`](Self::buffer_size): the pool, the
    /// rings, the ring file) are larger than the machine can spare: [`BufResize::Auto`] (the
    /// default) lowers them to fit and says so in one line on stderr; [`BufResize::Manual`]
    /// refuses to start ([`StartError::BufferTooLarge`]). What fits is a quarter of the
    /// smallest of the physical memory, the memory available now and the cgroup's limit.
    pub fn bufresize(mut self, bufresize: BufResize) -> Recorder {
        self.bufresize = bufresize;
        self
    }

    /// Whether a child of `fork()` (without `exec`) records: on by default, into its own
    /// files, named as the parent's with the child's pid before the extension
    /// (`trace.evt` -> `trace-4242.evt`), from its first event on; off, the child records
    /// nothing. Either way the child never writes into its parent's buffers or files.
    pub fn record_forks(mut self, on: bool) -> Recorder {
        self.fork = on;
        self
    }

    /// Which signal handlers the recording installs; see [`Signals`]. By default
    /// ([`Signals::Default`]) it never takes SIGINT, SIGTERM or any signal the program
    /// handles or ignores; while it writes an event file it flushes that file on SIGABRT,
    /// SIGILL and SIGFPE (only those whose action is the default one at the start), and while
    /// a ring file is mapped it keeps a truncated ring file from killing the program
    /// (SIGBUS). [`Signals::None`] (`EVENT_SIGNALS=none`) installs nothing at all.
    ///
    /// ```
    /// use event_runtime::{Recorder, Signals};
    ///
    /// let recording = Recorder::new().memory().signals(Signals::None).start().unwrap();
    /// recording.stop().unwrap();
    /// ```
    pub fn signals(mut self, signals: Signals) -> Recorder {
        self.signals = signals;
        self
    }

    /// Triggers that make the recording write a snapshot of the window around them by itself,
    /// under any policy, in `EVENT_TRIGGER`'s grammar: the events of a selection
    /// (`EVENT_CONTROL`'s grammar), optionally with a condition in `event-dump`'s filter
    /// language, `panic`, or `lost`; how much to keep before it (`pre=` a duration; by default
    /// the rings, or the buffer's worth of a stream) and after it (`post=` a count of the
    /// triggering thread's events, or a duration); a rate policy (`every=N`, `every=once`,
    /// `every=N/PERIOD`; by default `every=1/1s`). Several are separated by `;`. Snapshots go
    /// to [`snapshots`](Self::snapshots)' pattern. The thread that records a trigger event
    /// keeps its own window (under `ring`, it copies its ring on its cold path).
    /// docs/guide/keeping-the-incident.md.
    ///
    /// ```
    /// event_runtime::include_events!("../events.def");
    ///
    /// fn main() {
    ///     let dir = std::env::temp_dir().join(format!("trigger-doc-{}", std::process::id()));
    ///     std::fs::create_dir_all(&dir).unwrap();
    ///     let recording = event_runtime::Recorder::new()
    ///         .policy(event_runtime::Policy::Ring)
    ///         .trigger("Client:ClientPhase if step >= 3, every=once")
    ///         .snapshots(dir.join("incident-%s.evt"))
    ///         .start()
    ///         .unwrap();
    ///     for step in 0..5u64 {
    ///         event!(ClientPhase, "work", step, 0);
    ///     }
    ///     recording.stop().unwrap();
    ///     // Step 3 took the snapshot (step 4 was declined: `every=once`).
    ///     assert!(dir.join("incident-1.evt").exists() && !dir.join("incident-2.evt").exists());
    ///     # std::fs::remove_dir_all(&dir).unwrap();
    /// }
    /// ```
    pub fn trigger(mut self, text: impl Into<String>) -> Recorder {
        self.trigger = Some(text.into());
        self
    }

    /// Pinned events (`EVENT_PIN`), in `EVENT_CONTROL`'s selection grammar (`Client:ClientPhase`,
    /// `Config`): rare events that a hot kind would overwrite in the rings, or a disk budget
    /// delete with their segment (start-up, configuration). They live as long as the
    /// recording: every new segment repeats them, and the latest 256 are kept apart for every
    /// snapshot (and a ring file's pin area). Each costs a copy of its record when it is
    /// recorded (off the common path, as a trigger event's check).
    pub fn pin(mut self, selection: impl Into<String>) -> Recorder {
        self.pin = Some(selection.into());
        self
    }

    /// Limits how many of some events each thread records (`EVENT_LIMIT`; docs/guide/aggregates.md):
    /// entries `SELECTION=LIMIT` separated by `;`, the selection in `EVENT_CONTROL`'s grammar,
    /// the limit `N/UNIT` (a token bucket: at most N a period, `1000/s`), `K/N` (the first K
    /// of every N, `1/100`) or `off`, over the `limit=` of events.def's rows. What a limit
    /// does not keep is counted, in `Suppressed` records, never dropped silently; a limited
    /// event costs its check on the cold side of `event!`, an unlimited one nothing more.
    /// [`control::limit`](crate::control::limit) changes them while the program runs, and
    /// `event-dump control RINGFILE --limit` from outside.
    ///
    /// ```
    /// event_runtime::include_events!("../events.def");
    ///
    /// fn main() {
    ///     let recording = event_runtime::Recorder::new().memory().limit("Client:ClientMark=1/10").start().unwrap();
    ///     for _ in 0..100 {
    ///         event!(ClientMark);
    ///     }
    ///     let bytes = recording.stop().unwrap();
    ///     use event_runtime::format::{Catalog, Decoder, Entry, Value};
    ///     let mut decoder = Decoder::new(&bytes[..]).unwrap();
    ///     let catalog = Catalog::new(&decoder.header().sets);
    ///     let (mut marks, mut suppressed) = (0, 0);
    ///     while let Some(block) = decoder.next_block() {
    ///         for entry in block.unwrap().entries(&catalog) {
    ///             let Entry::Event(e) = entry else { continue };
    ///             match e.desc.name.as_str() {
    ///                 "ClientMark" => marks += 1,
    ///                 "Suppressed" => {
    ///                     let Some(Value::Word(n)) = e.values().nth(2) else { panic!() };
    ///                     suppressed += n;
    ///                 }
    ///                 _ => {}
    ///             }
    ///         }
    ///     }
    ///     assert_eq!((marks, suppressed), (10, 90));
    /// }
    /// ```
    pub fn limit(mut self, text: impl Into<String>) -> Recorder {
        self.limit = Some(text.into());
        self
    }

    /// How often the histograms that events.def declares (`HISTOGRAM`) and the counts of
    /// what limits suppressed are written, as records of every thread that counted any (10 s
    /// by default); they are also written before a segment is sealed and at the stop, so a
    /// segment holds its period's distributions (docs/guide/aggregates.md).
    pub fn histogram_period(mut self, period: Duration) -> Recorder {
        self.histogram_period = period.max(Duration::from_millis(1));
        self
    }

    /// Where triggered snapshots go: a pattern as [`file`](Self::file)'s, with `%s` the
    /// snapshot's sequence number (without `%s`, `.N` goes before the extension). By default
    /// (`EVENT_SNAPSHOT` unset) `%n-%p-%r-snapshot-%s.evt` in the current directory. A path
    /// that exists is never written over: that snapshot is not taken, and a line says so.
    pub fn snapshots(mut self, pattern: impl Into<PathBuf>) -> Recorder {
        self.snapshot_pattern = Some(pattern.into());
        self
    }

    /// The host name the recording's header gives (`EVENT_HOST`), and `%h` in its files'
    /// patterns, instead of the system's (`gethostname`): in a container the system's name is
    /// the container's id; the node's or the pod's name tells a fleet's hosts apart.
    /// Readers show it beside the service (`host-a/api:T2`). 1 to 255 bytes, without `/` or
    /// control characters (refused at the start otherwise).
    pub fn host(mut self, name: impl Into<String>) -> Recorder {
        self.host = Some(name.into());
        self
    }

    /// A label of the recording (`EVENT_LABELS`), in its header (docs/FORMAT.md, "Labels"):
    /// `service` (the service's name, OpenTelemetry's `service.name`), `version`
    /// (`service.version`), `instance` (`service.instance.id`) or any other key, such as the
    /// pod or the region. Readers show the service and the host where they would show a pid,
    /// and the exports carry every label. A key given again replaces its value. A key is 1 to
    /// 128 ASCII letters, digits, `_`, `.` or `-`; a value at most 1024 bytes (refused at the
    /// start otherwise).
    ///
    /// ```
    /// let recording = event_runtime::Recorder::new()
    ///     .memory()
    ///     .label("service", "api")
    ///     .label("version", env!("CARGO_PKG_VERSION"))
    ///     .start()
    ///     .unwrap();
    /// let stream = recording.stop().unwrap();
    /// let header = event_format::decode::Decoder::new(&stream[..]).unwrap().header().clone();
    /// assert_eq!(header.properties.label("service"), Some("api"));
    /// ```
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Recorder {
        let (key, value) = (key.into(), value.into());
        match self.labels.iter_mut().find(|(k, _)| *k == key) {
            Some(label) => label.1 = value,
            None => self.labels.push((key, value)),
        }
        self
    }

    /// [`start`](Self::start) for a program that must run whatever its recorder's settings
    /// say: when the recording cannot start, one line on stderr says why (`event-runtime: not
    /// recording: ` and the error's sentence), and the program goes on without a recording
    /// (`None`: every event is a disabled one). The shortcut [`start_or_warn`](crate::start_or_warn)
    /// does the same for a recording configured by the environment alone.
    ///
    /// ```
    /// use event_runtime::{Policy, Recorder, Rotate};
    ///
    /// // `ring` writes its event file once, at the stop: there is nothing to rotate. The
    /// // start says so in one line, and the program runs on unrecorded.
    /// let recording = Recorder::new()
    ///     .file(std::env::temp_dir().join("never-written.evt"))
    ///     .policy(Policy::Ring)
    ///     .rotate(Rotate { size: Some(1 << 20), age: None })
    ///     .start_or_warn();
    /// assert!(recording.is_none());
    /// ```
    pub fn start_or_warn(self) -> Option<Recording> {
        match self.start() {
            Ok(recording) => Some(recording),
            Err(e) => {
                eprintln!("event-runtime: not recording: {e}");
                None
            }
        }
    }

    /// Where the buffer size was given, as given, for an error about it: the variable and its
    /// text, the method and its value, or the default.
    fn buffer_given(&self) -> String {
        match self.from_env.iter().find(|(v, _)| *v == "EVENT_BUFSIZE") {
            Some((v, text)) => format!("{v}={text:?}"),
            None if self.buffer_size == DEFAULT_BUFFER_SIZE => {
                format!("the default buffer size ({})", machine::size_text(DEFAULT_BUFFER_SIZE))
            }
            None => format!("Recorder::buffer_size({}) in the program's code", self.buffer_size),
        }
    }

    /// `e`, a setting's error, naming where its value came from: the variable and its text
    /// when [`from_env`](Self::from_env) applied it, else the method of the code that gave it.
    fn attribute(&self, mut e: ConfigError) -> ConfigError {
        if e.origin != Origin::Environment {
            return e;
        }
        match self.from_env.iter().find(|(v, _)| *v == e.variable) {
            Some((_, text)) => e.value = text.clone(),
            None => {
                e.variable = config::method_of(e.variable);
                e.origin = Origin::Code;
            }
        }
        e
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
    ///
    /// The recording's writer thread is started here and, as every new thread, runs on the
    /// CPUs the calling thread may run on (its affinity). A program that pins its busy
    /// threads to cores should start the recording before it pins them (or from a thread it
    /// does not pin): a writer confined to a recording thread's core takes that thread's
    /// time, which the benchmark measured at twice the cost of an event (BENCHMARKS.md).
    pub fn start(mut self) -> Result<Recording, StartError> {
        let (plan, time) = match self.check() {
            Ok(checked) => checked,
            Err(StartError::Config(e)) => return Err(StartError::Config(self.attribute(e))),
            Err(e) => return Err(e),
        };
        if self.rotate.is_some() && plan.file_path.is_none() {
            eprintln!(
                "event-runtime: EVENT_ROTATE (Recorder::rotate) is for an event file, and none is written; set EVENT_FILE"
            );
        }
        if self.rotate.is_none() && self.keep != Keep::default() {
            eprintln!(
                "event-runtime: EVENT_KEEP (Recorder::keep) is a budget for segments, and none are written; set EVENT_ROTATE"
            );
        }
        if let Some(triggers) = &plan.triggers {
            // A trigger or pin that cannot take effect is said, never accepted silently.
            for line in triggers.ineffective(&plan.header, &plan.selections) {
                eprintln!("event-runtime: {line}");
            }
            if triggers.fires()
                && let Ok(first) = triggers.path(1)
                && let Some(dir) = first.parent().filter(|d| !d.as_os_str().is_empty())
                && !dir.is_dir()
            {
                eprintln!(
                    "event-runtime: EVENT_SNAPSHOT puts snapshots in {}, which is not a directory: a trigger that fires takes none; create it or change EVENT_SNAPSHOT",
                    dir.display()
                );
            }
        }
        // The process's recorder is claimed before any file is touched.
        let Some(vacancy) = session::claim() else {
            return Err(StartError::AlreadyRunning);
        };
        fork::install();
        let (sinks, ring_file) = self.open_sinks(&plan)?;
        let mut plan = plan;
        let shared = self.share(&mut plan, time, sinks, ring_file);
        let generation = make_current(vacancy, &shared, plan);
        let recording = Recording::begin(Arc::clone(&shared), generation).map_err(StartError::WriterThread)?;
        crash::install(&shared, self.signals == Signals::Default);
        Ok(recording)
    }
}

/// What the start's first step ([`Recorder::check`]) found: every setting checked, nothing
/// touched yet (and the clock, which the shared state takes).
struct Plan {
    /// Blocks in the buffer (`buffer_size / block_size`, at least `MIN_BLOCKS`).
    blocks: u64,
    /// The recorded sets, and their schemas as the header names them.
    sets: Vec<&'static EventSet>,
    schemas: Vec<Schema>,
    /// Each set's first wire code: its event `j` is written as `first + j`.
    firsts: Vec<u16>,
    /// Each set's selection to start with.
    selections: Vec<Selection>,
    header: Header,
    header_bytes: Vec<u8>,
    /// What the recording gives its files' patterns (`%h`, `%r`).
    naming: files::Naming,
    /// The files' paths, their patterns expanded.
    file_path: Option<PathBuf>,
    ring_path: Option<PathBuf>,
    /// The triggers, parsed against the header.
    triggers: Option<crate::incident::trigger::Triggers>,
    /// The limits and histograms, against the header.
    aggregates: Option<crate::emit::aggregate::Aggregates>,
}

impl Recorder {
    /// The start's first step: every setting checked (sizes, sets, selection, clock and
    /// header, the files' names) before anything is touched.
    fn check(&mut self) -> Result<(Plan, TimeSource), StartError> {
        if let (Policy::Ring, Some(rotate)) = (self.policy, self.rotate) {
            return Err(StartError::Config(ConfigError::env(
                "EVENT_ROTATE",
                config::rotate_text(rotate),
                config::RING_ROTATE,
            )));
        }
        if let Some(rotate) = self.rotate {
            // What `EVENT_ROTATE` refuses, refused from code too (the environment's went
            // through `config::parse_rotate` already).
            config::check_rotate(rotate)
                .map_err(|message| ConfigError::env("EVENT_ROTATE", config::rotate_text(rotate), message))?;
        }
        config::check_keep(self.keep)
            .map_err(|message| ConfigError::env("EVENT_KEEP", config::keep_text(self.keep), message))?;
        if let Some(host) = &self.host {
            config::check_host(host).map_err(|message| ConfigError::env("EVENT_HOST", host.clone(), message))?;
        }
        for (key, value) in &self.labels {
            config::check_label(key, value)
                .map_err(|message| ConfigError::env("EVENT_LABELS", format!("{key}={value}"), message))?;
        }
        let blocks = self.blocks()?;
        let (sets, schemas) = self.recorded_sets()?;
        let selections = self.selections(&schemas)?;
        let time = match self.clock {
            ClockChoice::Best => TimeSource::best(),
            ClockChoice::Monotonic => TimeSource::monotonic(),
            ClockChoice::Deterministic => TimeSource::deterministic(),
        };
        let (header, firsts) = self.header(&schemas, &time);
        let header_bytes = header.encode().map_err(|e| StartError::BadEventSet(e.to_string()))?;
        let naming = files::Naming {
            host: header.producer.host.clone(),
            recording: header.properties.recording.map(|id| id.to_hex()).unwrap_or_default(),
        };
        let file_path = expand(&self.file, Purpose::EventFile, &naming)?;
        let ring_path = expand(&self.ring, Purpose::RingFile, &naming)?;
        let triggers = if self.trigger.is_some() || self.pin.is_some() {
            let pattern = self
                .snapshot_pattern
                .clone()
                .unwrap_or_else(|| PathBuf::from(crate::incident::trigger::DEFAULT_SNAPSHOT));
            // The recording's own escapes now; the process's when each snapshot is written.
            let pattern = files::pre_expand(&pattern, &naming);
            Some(crate::incident::trigger::parse(self.trigger.as_deref(), self.pin.as_deref(), &header, pattern)?)
        } else {
            None
        };
        let limits =
            crate::emit::aggregate::initial_limits(&header, self.limit.as_deref()).map_err(|e| self.attribute(e))?;
        let aggregates = crate::emit::aggregate::Aggregates::new(&header, limits, self.histogram_period);
        let plan = Plan {
            blocks,
            sets,
            schemas,
            firsts,
            selections,
            header,
            header_bytes,
            naming,
            file_path,
            ring_path,
            triggers,
            aggregates,
        };
        Ok((plan, time))
    }

    /// The number of blocks in the buffer, once the block size is checked and the buffers fit
    /// the machine (lowered to fit, or refused: `bufresize`).
    fn blocks(&mut self) -> Result<u64, StartError> {
        let bs = self.block_size;
        if !bs.is_power_of_two() || !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&bs) {
            return Err(StartError::BadBlockSize(bs));
        }
        if self.buffer_size / u64::from(bs) >= config::MIN_BLOCKS {
            // Before anything is allocated: the buffers must fit the machine.
            self.fit_buffers(&machine::limits())?;
        }
        let blocks = self.buffer_size / u64::from(bs);
        if blocks < config::MIN_BLOCKS {
            return Err(StartError::BadBufferSize { buffer: self.buffer_size, block: bs, given: self.buffer_given() });
        }
        Ok(blocks)
    }

    /// Each set's selection to start with, as configured.
    fn selections(&self, schemas: &[Schema]) -> Result<Vec<Selection>, StartError> {
        Ok(match &self.selection {
            SelectionChoice::All => schemas.iter().map(Selection::all).collect(),
            SelectionChoice::Mask(mask) => {
                schemas.iter().map(|_| Selection { kinds: *mask, overrides: Default::default() }).collect()
            }
            SelectionChoice::Given(selections) => selections.clone(),
            SelectionChoice::Text(text) => control::from_text(text, &schemas.iter().collect::<Vec<_>>())
                .map_err(|e| StartError::Config(ConfigError::env("EVENT_CONTROL", text.clone(), e.to_string())))?,
        })
    }

    /// The stream's header for `schemas` and the clock `time`, and each set's first wire code.
    fn header(&self, schemas: &[Schema], time: &TimeSource) -> (Header, Vec<u16>) {
        let clock = time.facts();
        let start_wall = if time.is_deterministic() { 0 } else { clock.ref_wall_ns };
        let entries = SetEntry::assign(schemas.iter().cloned());
        // Each set's range of wire codes: its event j is written as `first + j`.
        let firsts: Vec<u16> = entries.iter().map(|e| e.range().map_or(0, |(first, _)| first)).collect();
        let host = self.host.clone().or_else(files::host_name).unwrap_or_default();
        let mut header =
            Header::with_sets(entries, self.block_size, clock, Producer { host, ..Producer::current(start_wall) });
        header.properties.recording = Some(new_recording_id());
        header.properties.labels = self.labels.clone();
        (header, firsts)
    }

    /// The sinks (the event file claimed and its header written, the memory sink) and the
    /// ring file (claimed, backed on the disk, mapped). A file that is refused is said in one
    /// line, and the recording goes on without it; one that cannot be created is an error.
    fn open_sinks(&self, plan: &Plan) -> Result<(Sinks, Option<Arc<RingFile>>), StartError> {
        let memory = self.memory || (self.file.is_none() && self.ring.is_none());
        let sinks = match (&plan.file_path, self.rotate) {
            (Some(base), Some(rotate)) => {
                let pattern = self.file.as_deref().unwrap_or(base);
                let family = crate::sinks::segments::Family::new(pattern, base, &plan.naming);
                let mut segments = Segments::new(base.clone(), family, rotate, self.keep, plan.header.clone());
                let opened = segments.open(0).map_err(|error| StartError::Io {
                    what: "first segment",
                    path: crate::sinks::segments::segment_path(base, 0),
                    error,
                })?;
                let mut sinks =
                    Sinks::new(Some((opened.path, opened.file)), memory, self.pack, self.block_size, Some(segments));
                sinks.write(&opened.header);
                sinks
            }
            (path, _) => {
                let file = match path {
                    Some(path) => claim(path, Purpose::EventFile)?.map(|c| (c.path, c.file)),
                    None => None,
                };
                let mut sinks = Sinks::new(file, memory, self.pack, self.block_size, None);
                sinks.write(&plan.header_bytes);
                sinks
            }
        };
        let ring_file = match &plan.ring_path {
            Some(path) => self.open_ring_file(path, plan)?,
            None => None,
        };
        Ok((sinks, ring_file))
    }

    /// The ring file at `path`: claimed, backed on the disk (`ringfile::back`), mapped.
    /// `None` when it is refused (said in one line).
    fn open_ring_file(&self, path: &Path, plan: &Plan) -> Result<Option<Arc<RingFile>>, StartError> {
        let Some(claimed) = claim(path, Purpose::RingFile)? else { return Ok(None) };
        let slots = self.ring_threads;
        // The slots share the whole buffer (layout 1.1: `blocks_per_slot` counts the blocks
        // of the shared data area).
        let blocks = plan.blocks.clamp(2, u64::from(event_format::ring::MAX_POOL_BLOCKS)) as u32;
        let mut layout = Layout {
            order: Order::NATIVE,
            version: event_format::ring::RING_VERSION,
            block_size: self.block_size,
            slots,
            blocks_per_slot: blocks,
            header_len: plan.header_bytes.len() as u32,
            pid: u64::from(std::process::id()),
            created_ns: clock::wall_ns(),
            // With pinned events (`EVENT_PIN`), the pin area: halves of a block's records, so
            // that a reader puts each thread's pinned records back in one block.
            pin_half: if plan.triggers.as_ref().is_some_and(crate::incident::trigger::Triggers::pins_any) {
                self.block_size - event_format::wire::BLOCK_HEADER_LEN as u32
            } else {
                0
            },
        };
        // A pin area that cannot be made costs the pins kept in the file, never the file:
        // the in-memory pin ring (snapshots) keeps them still.
        if let Err(why) = layout.check_pin_half() {
            eprintln!(
                "event-runtime: the ring file {} keeps no pinned events: {why}; snapshots still hold them",
                claimed.path.display()
            );
            layout.pin_half = 0;
        }
        let mut len = layout.file_len();
        let mut backed = ringfile::back(&claimed.file, len);
        if let Err(error) = &backed
            && layout.pin_half > 0
            && ringfile::back(&claimed.file, layout.data_end()).is_ok()
        {
            eprintln!(
                "event-runtime: the ring file {} keeps no pinned events: cannot allocate its pin area ({}) on the file system: {error}; snapshots still hold them",
                claimed.path.display(),
                machine::size_text(len - layout.data_end())
            );
            layout.pin_half = 0;
            len = layout.file_len();
            backed = Ok(());
        }
        if let Err(error) = backed {
            // A ring file that its file system cannot hold is refused, as one that is not
            // ours: one line, and the recording goes on without it.
            eprintln!(
                "event-runtime: not recording to the ring file {}: cannot allocate its {} on the file system: {error}; free space there or lower EVENT_BUFSIZE",
                claimed.path.display(),
                machine::size_text(len)
            );
            files::discard(&claimed.path, &claimed.file);
            return Ok(None);
        }
        let guard = self.signals == Signals::Default;
        let ring = RingFile::create(claimed.file, &claimed.path, layout, &plan.header_bytes, guard)
            .map_err(|error| StartError::Io { what: "ring file", path: claimed.path.clone(), error })?;
        if self.policy == Policy::Fill {
            // Filled once: the rings only grow, and stop when the data area is used up.
            ring.fill_once();
        }
        Ok(Some(Arc::new(ring)))
    }

    /// The state every thread buffer of the recording shares: the pool and queue (when the
    /// stream sinks get blocks as they fill), the sinks, the ring file, the clock `time`.
    fn share(
        &self,
        plan: &mut Plan,
        time: TimeSource,
        mut sinks: Sinks,
        ring_file: Option<Arc<RingFile>>,
    ) -> Arc<Shared> {
        let (blocks, bs) = (plan.blocks, self.block_size);
        let streaming = self.policy != Policy::Ring && !sinks.is_empty();
        if streaming {
            // Snapshots of a stream read their windows back from what was written (`history`):
            // as much as the buffer holds, and the longest `pre=` a trigger asks for.
            let pre = plan.triggers.as_ref().and_then(crate::incident::trigger::Triggers::longest_pre);
            let tps = u128::from(plan.header.clock.ticks_per_second);
            let pre_ticks = pre.map_or(0, |d| (d.as_nanos() * tps / 1_000_000_000) as u64);
            let hold = plan.triggers.as_ref().map(|t| Arc::clone(&t.pending_count));
            sinks.keep_history(crate::incident::history::History::new(blocks as usize, pre_ticks, hold.clone()), hold);
        }
        let pooled = streaming; // Pool homes, or copies from ring-file slots.
        let exchange = if pooled {
            let budget = (self.policy == Policy::Fill && ring_file.is_none()).then_some(blocks);
            Exchange::new(blocks as usize, bs as usize, budget)
        } else {
            Exchange::new(0, bs as usize, None)
        };
        // Under `ring`, the threads' rings on the heap share the whole buffer (`ringpool`),
        // allocated when a thread first needs a ring (`Shared::heap_rings`).
        let heap_rings = HeapRingsCell::new(blocks.min(u64::from(u32::MAX)) as u32, bs as usize);
        Arc::new(Shared {
            block_size: bs,
            clock: plan.header.clock,
            catalog: Catalog::new(&plan.header.sets),
            sets: plan.sets.iter().copied().zip(plan.firsts.iter().copied()).collect(),
            time,
            next_thread: AtomicU64::new(1),
            policy: self.policy,
            wait: self.wait,
            exchange,
            ring_file,
            heap_rings: (self.policy == Policy::Ring).then_some(heap_rings),
            header: plan.header.clone(),
            pack: self.pack,
            incidents: Incidents { triggers: plan.triggers.take(), snapshots: std::sync::atomic::AtomicU32::new(0) },
            aggregates: plan.aggregates.take(),
            lanes: Mutex::default(),
            lost_base: session::lost_unattributed(),
            streaming,
            pool_blocks: if pooled { blocks as usize } else { 0 },
            pid: std::process::id(),
            after_fork: self.fork.then(|| self.after_fork()),
            writer: WriterOwned {
                sinks: Mutex::new(sinks),
                interned: Mutex::new(HashMap::new()),
                names: Mutex::new(Vec::new()),
                names_added: AtomicU64::new(0),
                names_learned: AtomicU64::new(0),
                labels: Mutex::new(HashMap::new()),
                retired: Mutex::new(Vec::new()),
                reports: Mutex::new(Vec::new()),
                reports_closed: Default::default(),
            },
        })
    }
}

/// Makes `shared` the process's running recording (in the place `vacancy` holds), installs
/// its selection and turns the built-in events on; returns its generation.
fn make_current(vacancy: session::Vacancy, shared: &Arc<Shared>, plan: Plan) -> u64 {
    let generation = vacancy.fill(shared);
    let recorded = plan.sets.iter().zip(plan.schemas).map(|(&set, schema)| control::Recorded { set, schema }).collect();
    control::install(recorded, plan.selections);
    // The events its triggers and pins watch divert to the cold path (`trigger`'s module
    // docs, "Cost"); without any, nothing does.
    if let Some(triggers) = &shared.incidents.triggers {
        crate::emit::divert::watch(generation, Some(triggers.mask));
    }
    // The events that are limited or that a histogram counts divert too (`aggregate`).
    if let Some(aggregates) = &shared.aggregates {
        crate::emit::divert::aggregate(generation, Some(aggregates.mask()));
    }
    session::set_running(true);
    generation
}

/// `path` (a pattern) expanded for `purpose` with the recording's `naming`; an unknown pattern
/// is a configuration error.
fn expand(path: &Option<PathBuf>, purpose: Purpose, naming: &files::Naming) -> Result<Option<PathBuf>, StartError> {
    match path {
        Some(p) => {
            files::expand(p, naming).map(Some).map_err(|message| StartError::Config(pattern_error(p, purpose, message)))
        }
        None => Ok(None),
    }
}

impl Recorder {
    /// The sets to record, in the header's order, and their schemas as the header names
    /// them: the explicit list, or every registered set ordered by name (and package
    /// version), or, in a program without any, the `tracing` bridge's empty set. Two sets of
    /// one name from semver-incompatible versions of one package are both kept, as
    /// `NAME-vMAJOR` (`storage-v0_3` for 0.3.x), and one line on stderr says so; two that
    /// cannot be told apart so are refused. (`Recorder::new().recorded_sets()` are every set
    /// linked into the program, which a test's capture names too.)
    pub(crate) fn recorded_sets(&self) -> Result<(Vec<&'static EventSet>, Vec<Schema>), StartError> {
        let sets = match &self.sets {
            Some(list) => list.clone(),
            None => {
                let mut all = EventSet::registered();
                all.sort_by(|a, b| (a.name(), a.package_version()).cmp(&(b.name(), b.package_version())));
                all
            }
        };
        #[cfg(feature = "tracing")]
        let sets: Vec<&'static EventSet> =
            if sets.is_empty() && self.sets.is_none() { vec![&crate::tracing_bridge::EVENTS] } else { sets };
        let mut schemas = Vec::with_capacity(sets.len());
        for set in &sets {
            let schema = set.schema().map_err(|e| StartError::BadEventSet(format!("set `{}`: {e}", set.name())))?;
            schemas.push(schema);
        }
        let names: Vec<String> = sets.iter().map(|s| s.name().to_owned()).collect();
        for name in names.iter().collect::<std::collections::BTreeSet<_>>() {
            let same: Vec<usize> = (0..sets.len()).filter(|&i| &names[i] == name).collect();
            if same.len() < 2 {
                continue;
            }
            let mut renamed = Vec::new();
            for &i in &same {
                let new = sets[i].versioned_name();
                if renamed.contains(&new) {
                    return Err(StartError::BadEventSet(format!(
                        "two event sets are named `{name}` (package versions {}); give one a SET(name) line in its events.def",
                        same.iter().map(|&i| sets[i].package_version()).collect::<Vec<_>>().join(", ")
                    )));
                }
                renamed.push(new);
            }
            eprintln!(
                "event-runtime: {} versions of the event set `{name}` are linked in; recorded as {}",
                same.len(),
                renamed.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(" and ")
            );
            for (&i, new) in same.iter().zip(renamed) {
                schemas[i].name = new;
            }
        }
        Ok((sets, schemas))
    }

    /// Under [`BufResize::Auto`], lowers the buffer size to what `limits` leave it (one line
    /// on stderr says so); under [`BufResize::Manual`], refuses a size that does not fit.
    fn fit_buffers(&mut self, limits: &[machine::Limit]) -> Result<(), StartError> {
        // The buffers of `buffer_size` each: the pool (streaming), the ring file, the heap
        // rings (`ring` without a ring file).
        let streaming = self.policy != Policy::Ring && (self.memory || self.file.is_some() || self.ring.is_none());
        let heap_rings = self.policy == Policy::Ring && self.ring.is_none();
        let regions = u64::from(streaming) + u64::from(self.ring.is_some()) + u64::from(heap_rings);
        let floor = config::MIN_BLOCKS * u64::from(self.block_size);
        let Some((fits, limit)) = machine::fit(self.buffer_size, regions, floor, limits) else { return Ok(()) };
        match self.bufresize {
            BufResize::Manual => {
                Err(StartError::BufferTooLarge { requested: self.buffer_size, fits, limit, given: self.buffer_given() })
            }
            BufResize::Auto => {
                eprintln!(
                    "event-runtime: buffer size lowered from {} to {} ({limit})",
                    machine::size_text(self.buffer_size),
                    machine::size_text(fits)
                );
                self.buffer_size = fits;
                Ok(())
            }
        }
    }

    /// What a child of `fork()` runs on its first event: this recorder again, with the
    /// child's pid in its files' names and the selection as it is then.
    fn after_fork(&self) -> AfterFork {
        let template = self.clone();
        AfterFork(Box::new(move || {
            let pid = std::process::id();
            let mut child = template.clone();
            child.file = child.file.map(|p| fork::child_path(&p, pid));
            child.ring = child.ring.map(|p| fork::child_path(&p, pid));
            child.selection = SelectionChoice::Given(control::selections());
            match child.start() {
                Ok(recording) => recording::adopt(recording),
                Err(e) => eprintln!("event-runtime: the forked child {pid} records nothing: {e}"),
            }
        }))
    }
}

/// Starts recording as the environment says, when it asks for a recording: the shortcut for
/// a program configured from outside, as `RUST_LOG` configures a logger. It records (every
/// event set linked into the program, `Recorder::new().from_env()?.start()`) when:
///
/// - `EVENT_FILE` or `EVENT_RING` names a file: into it (`EVENT_CONTROL` selects, `all`
///   without it);
/// - else `EVENT_CONTROL` selects at least one event, or `EVENT_TRIGGER` or `EVENT_PIN` is
///   set (each keeps the incident of a recording, and needs one): into the file `%n-%p-%r.evt`
///   (`<program>-<pid>-<recording id>.evt`: a name no other run's takes, however fast a
///   crash loop restarts and whatever its pid) in the current directory. When that file cannot be created, one
///   line on stderr says so and the program runs without a recording (`Ok(None)`).
///
/// Otherwise (no `EVENT_*` output variable, or `EVENT_CONTROL=none` alone) it records nothing
/// and writes nothing: `Ok(None)`. A telemetry default never stops a program from starting;
/// what the environment names explicitly (a bad value, a named file that cannot be created)
/// is an error, one line. A machine out of threads (the writer thread cannot be started) is
/// neither: one line on stderr, and `Ok(None)`. Use [`Recorder`] to record from code whatever
/// the environment says. The signal handlers a recording installs (by default only for the
/// fatal SIGABRT, SIGILL and SIGFPE, never SIGINT or SIGTERM; `EVENT_SIGNALS=none`, none at
/// all) are in [`Recorder`]'s docs, "Signals".
/// Keep the returned [`Recording`]: dropping it stops the recording and flushes it.
///
/// An error returned from `main` with `?` prints as its one-line sentence (`Error:
/// EVENT_POLICY="wait=5parsecs": ...`, not the variant's fields), and the program exits 1; a
/// service that should warn and run instead calls [`start_or_warn`].
///
/// ```no_run
/// event_runtime::include_events!("../events.def");
///
/// fn main() -> Result<(), event_runtime::StartError> {
///     let _recording = event_runtime::start()?; // None unless EVENT_* asks for a recording
///     event!(ClientPhase, "work", 1u64, 0);
///     Ok(())
/// }
/// ```
pub fn start() -> Result<Option<Recording>, StartError> {
    let mut recorder = Recorder::new().from_env()?;
    let named = recorder.file.is_some() || recorder.ring.is_some();
    if !named {
        // A trigger or a pin asks for a recording as a selection does: it has no effect
        // without one.
        let keeps = recorder.trigger.is_some() || recorder.pin.is_some();
        if !keeps && !recorder.selects_something()? {
            return Ok(None);
        }
        recorder.file = Some(PathBuf::from(files::DEFAULT_EVENT_FILE));
    }
    match recorder.start() {
        Ok(recording) => Ok(Some(recording)),
        // Nothing the environment said is wrong: the machine is out of threads.
        Err(e @ StartError::WriterThread(_)) => {
            eprintln!("event-runtime: not recording: {e}");
            Ok(None)
        }
        Err(StartError::Io { what, path, error }) if !named => {
            eprintln!(
                "event-runtime: not recording: cannot create the {what} {}: {error}; set EVENT_FILE to a writable path",
                path.display()
            );
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// [`start`] for a service that must run whatever its environment says: when [`start`]
/// returns an error (a bad `EVENT_*` value, a named file that cannot be created), one line on
/// stderr says so, `event-runtime: not recording: ` and the error's sentence, and the program
/// goes on without a recording (`None`: every event is a disabled one). Use [`start`] (and `?`)
/// where a mistake in the environment should stop the program instead.
///
/// ```
/// event_runtime::include_events!("../events.def");
///
/// fn main() {
///     // EVENT_POLICY=wait=5parsecs ./service prints
///     // `event-runtime: not recording: EVENT_POLICY="wait=5parsecs": ...` and runs.
///     let _recording = event_runtime::start_or_warn();
///     event!(ClientPhase, "work", 1u64, 0); // recorded only when a recording runs
/// }
/// ```
pub fn start_or_warn() -> Option<Recording> {
    match start() {
        Ok(recording) => recording,
        Err(e) => {
            eprintln!("event-runtime: not recording: {e}");
            None
        }
    }
}

/// A new recording's id: 128 bits no other recording of any host or run shares (docs/FORMAT.md,
/// "Header properties"). Two SipHash-1-3 digests keyed by std's per-thread random keys (from
/// the operating system's randomness, each `RandomState` a different key), of this process,
/// this moment and a count of the ids it made: no coordination, no dependency, and unique
/// with overwhelming probability (it is an identity, not a secret).
fn new_recording_id() -> RecordingId {
    use std::hash::{BuildHasher, Hasher};
    static MADE: AtomicU64 = AtomicU64::new(0);
    // Relaxed: only a distinct number per call is needed.
    let count = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut id = [0u8; 16];
    for (half, bytes) in id.chunks_exact_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(half);
        h.write_u64(count);
        h.write_u32(std::process::id());
        h.write_i64(clock::wall_ns());
        bytes.copy_from_slice(&h.finish().to_le_bytes());
    }
    RecordingId(id)
}

impl Recorder {
    /// Whether the environment's `EVENT_CONTROL` (the only selection [`start`] sees) selects
    /// an event of some set; `false` without it. A selection that does not parse is the
    /// error the start would give.
    fn selects_something(&self) -> Result<bool, StartError> {
        let SelectionChoice::Text(text) = &self.selection else { return Ok(false) };
        let (_, schemas) = self.recorded_sets()?;
        let selections = control::from_text(text, &schemas.iter().collect::<Vec<_>>())
            .map_err(|e| StartError::Config(ConfigError::env("EVENT_CONTROL", text.clone(), e.to_string())))?;
        if schemas.iter().all(|s| s.events.is_empty()) {
            // A program without events of its own (the `tracing` bridge's set alone) records
            // built-in events, which no selection names: anything but `none` asks for them.
            return Ok(text.trim() != "none");
        }
        Ok(selections
            .iter()
            .zip(&schemas)
            .any(|(selection, schema)| schema.events.iter().any(|e| selection.records(e))))
    }
}

/// The error of a path pattern that does not expand.
fn pattern_error(path: &Path, purpose: Purpose, message: String) -> ConfigError {
    ConfigError::env(purpose.variable(), path.to_string_lossy(), message)
}

/// Claims `path` for `purpose` (`files::claim`): `None`, after one line on stderr, when it
/// is refused (the recording goes on without it); an error when it cannot be created.
fn claim(path: &Path, purpose: Purpose) -> Result<Option<files::Claimed>, StartError> {
    match files::claim(path, purpose) {
        Ok(claimed) => {
            if let Some(notice) = &claimed.notice {
                eprintln!("event-runtime: {notice}");
            }
            Ok(Some(claimed))
        }
        Err(ClaimError::Refused(line)) => {
            eprintln!("event-runtime: {line}");
            Ok(None)
        }
        Err(ClaimError::Io(error)) => Err(StartError::Io { what: purpose.what(), path: path.to_owned(), error }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn environment_overrides_the_builder() {
        use crate::event_set::TEST_SET as SET;
        let vars = [("EVENT_POLICY", "fill"), ("EVENT_BUFSIZE", "1m"), ("EVENT_RING", "r.ring")];
        let get = |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| std::ffi::OsString::from(v));
        let r = Recorder::new().sets(&[&SET]).policy(Policy::Switch).buffer_size(4 << 20).with_env(get).unwrap();
        assert_eq!((r.policy, r.buffer_size, r.ring.as_deref()), (Policy::Fill, 1 << 20, Some(Path::new("r.ring"))));
    }

    /// The variables `from_env`'s rustdoc lists, the guide's table and `config::VARIABLES`
    /// (what `read_env` reads, and what a misspelt variable is compared with) are the same.
    #[test]
    fn from_env_documents_every_variable_it_reads() {
        fn variables(text: &str) -> std::collections::BTreeSet<String> {
            let mut found = std::collections::BTreeSet::new();
            let mut rest = text;
            while let Some(at) = rest.find("`EVENT_") {
                let name: String = rest[at + 1..].chars().take_while(|c| c.is_ascii_uppercase() || *c == '_').collect();
                found.insert(name);
                rest = &rest[at + 1..];
            }
            found
        }
        let source = include_str!("recorder.rs");
        let start = source.find("    /// Applies the `EVENT_*` environment variables").expect("from_env's docs");
        let end = start + source[start..].find("pub fn from_env").expect("from_env");
        let table: String =
            source[start..end].lines().filter(|l| l.trim_start().starts_with("/// | `EVENT_")).collect();
        let documented = variables(&table);
        let read: std::collections::BTreeSet<String> = config::VARIABLES.iter().map(|v| (*v).to_owned()).collect();
        assert_eq!(documented, read, "from_env's rustdoc lists every variable it reads, and no other");
        // Every variable the recorder reads: the environment given to `read_env` is asked
        // for exactly these.
        let asked = std::sync::Mutex::new(std::collections::BTreeSet::new());
        let _ = Recorder::new().with_env(|k| {
            asked.lock().unwrap().insert(k.to_owned());
            None
        });
        assert_eq!(asked.into_inner().unwrap(), read, "with_env asks for the variables of config::VARIABLES");
        let guide = include_str!("../../../docs/guide/configuration.md");
        let rows: std::collections::BTreeSet<String> = guide
            .lines()
            .filter_map(|l| l.strip_prefix("| `EVENT_"))
            .map(|l| format!("EVENT_{}", l.split('`').next().unwrap_or_default()))
            .filter(|name| name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'))
            .collect();
        assert_eq!(rows, read, "docs/guide/configuration.md has a row for each variable");
    }

    #[test]
    fn a_setting_from_code_is_named_by_its_method_and_from_the_environment_by_its_variable() {
        let dir = std::env::temp_dir();
        let code = Recorder::new()
            .file(dir.join("x.evt"))
            .policy(Policy::Ring)
            .rotate(Rotate { size: Some(1 << 20), age: None });
        let e = code.clone().start().unwrap_err().to_string();
        assert!(
            e.starts_with("Recorder::rotate(\"1m\") in the program's code: EVENT_ROTATE (segments) cannot go"),
            "{e}"
        );
        let get = |k: &str| (k == "EVENT_ROTATE").then(|| std::ffi::OsString::from("1024k"));
        let e = code.with_env(get).unwrap().start().unwrap_err().to_string();
        assert!(e.starts_with("EVENT_ROTATE=\"1024k\": EVENT_ROTATE (segments) cannot go"), "{e}");
        let e = Recorder::new().memory().control("NoSuchKind").start().unwrap_err().to_string();
        assert!(e.starts_with("Recorder::control(\"NoSuchKind\") in the program's code: "), "{e}");
        let e = Recorder::new().memory().label("bad key", "x").start().unwrap_err().to_string();
        assert!(e.starts_with("Recorder::label(\"bad key=x\") in the program's code: the label key"), "{e}");
        // The buffer's size, too small for the blocks: from code, from the environment, by default.
        let small = Recorder::new().memory().block_size(1 << 20).buffer_size(1 << 20);
        let e = small.clone().start().unwrap_err().to_string();
        assert!(
            e.starts_with("Recorder::buffer_size(1048576) in the program's code: buffer size 1m holds fewer"),
            "{e}"
        );
        let get = |k: &str| (k == "EVENT_BUFSIZE").then(|| std::ffi::OsString::from("1024k"));
        let e = small.with_env(get).unwrap().start().unwrap_err().to_string();
        assert!(e.starts_with("EVENT_BUFSIZE=\"1024k\": buffer size 1m holds fewer"), "{e}");
        let e = Recorder::new().memory().block_size(8 << 20).start().unwrap_err().to_string();
        assert!(e.starts_with("the default buffer size (16m): buffer size 16m holds fewer"), "{e}");
    }
}
