//! The start of a recording ([`Recorder::start`]), step by step, and [`start`], the
//! shortcut that configures from the environment alone. The steps, in this order, each a
//! function of its own:
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
use crate::config::{self, BufResize, ConfigError, Keep, Policy, Signals};
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
use event_format::wire::{Header, MAX_BLOCK_SIZE, MIN_BLOCK_SIZE, Order, Producer, RecordingId, SetEntry};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use crate::setup::recorder::{ClockChoice, Recorder, SelectionChoice, pattern_error};
use crate::setup::start_error::StartError;

impl Recorder {
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
