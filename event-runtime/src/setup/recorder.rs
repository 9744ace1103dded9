//! Configuring a recording: the [`Recorder`] builder and the settings it takes from code and
//! from the environment. Its start is `setup::start`'s; why a start fails, `StartError`.

use crate::config::{self, BufResize, ConfigError, Keep, Origin, Policy, Rotate, Signals};
use crate::event_set::EventSet;
use crate::files::{self, Purpose};
use crate::machine;
use crate::setup::recording::Recording;
use event_format::select::Selection;
use event_format::wire::Packing;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which clock the recorder reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ClockChoice {
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
    pub(super) sets: Option<Vec<&'static EventSet>>,
    pub(super) block_size: u32,
    pub(super) buffer_size: u64,
    pub(super) selection: SelectionChoice,
    pub(super) policy: Policy,
    pub(super) wait: Duration,
    pub(super) file: Option<PathBuf>,
    pub(super) ring: Option<PathBuf>,
    pub(super) memory: bool,
    pub(super) ring_threads: u32,
    pub(super) clock: ClockChoice,
    pub(super) pack: Option<Packing>,
    pub(super) bufresize: BufResize,
    pub(super) fork: bool,
    pub(super) signals: Signals,
    /// Segments instead of one event file (`EVENT_ROTATE`).
    pub(super) rotate: Option<Rotate>,
    /// The disk budget of the segments (`EVENT_KEEP`).
    pub(super) keep: Keep,
    /// `EVENT_TRIGGER`'s text (`trigger`), and where its snapshots go (`EVENT_SNAPSHOT`).
    pub(super) trigger: Option<String>,
    pub(super) snapshot_pattern: Option<PathBuf>,
    /// `EVENT_PIN`: the events every snapshot keeps whatever the rings overwrite.
    pub(super) pin: Option<String>,
    /// `EVENT_LIMIT`: limits over events.def's (`aggregate`).
    pub(super) limit: Option<String>,
    /// How often the writer thread writes the histograms and suppressions counted.
    pub(super) histogram_period: Duration,
    /// `EVENT_HOST`: the host name the header and `%h` give, instead of the system's.
    pub(super) host: Option<String>,
    /// `EVENT_LABELS`: the recording's labels, in the order given.
    pub(super) labels: Vec<(String, String)>,
    /// The `EVENT_*` variables whose values [`from_env`](Recorder::from_env) applied, with
    /// their text: a setting's error names the variable when it came from there, else the
    /// method of the code that gave it.
    pub(super) from_env: Vec<(&'static str, String)>,
}

impl Default for Recorder {
    fn default() -> Recorder {
        Recorder::new()
    }
}

#[derive(Debug, Clone)]
pub(super) enum SelectionChoice {
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
    /// the stop: [`start`](Self::start) refuses the two together ([`StartError::Config`](crate::StartError::Config)).
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
    /// refuses to start ([`StartError::BufferTooLarge`](crate::StartError::BufferTooLarge)). What fits is a quarter of the
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
    pub(super) fn buffer_given(&self) -> String {
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
    pub(super) fn attribute(&self, mut e: ConfigError) -> ConfigError {
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
}

/// The error of a path pattern that does not expand.
pub(super) fn pattern_error(path: &Path, purpose: Purpose, message: String) -> ConfigError {
    ConfigError::env(purpose.variable(), path.to_string_lossy(), message)
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
