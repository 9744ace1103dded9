//! The recording session: the process's one running recording and the state its thread
//! buffers share. This is the floor the hot path stands on.
//!
//! The per-thread buffers (`buffer`), the built-in events (`annotate`), the crash handlers
//! (`crash`) and the `tracing` bridge read this state; only the start (`recorder`), the writer
//! thread (`writer`) and the stop (`recording`) change it. So that the hot path never depends
//! on start/stop code, everything a thread buffer needs while recording lives here: the
//! generation that tells a stale buffer, the running recording's [`Shared`] state, and the
//! counters of lost events. Nothing here starts, stops or spawns.
//!
//! [`Shared`] is cut by owner: the hot path's state first, together; then the incident
//! service's ([`Incidents`]: triggers, pins, the snapshots' count) and, behind it, what the
//! writer thread owns ([`WriterOwned`]: the sinks, the names and labels they repeat, the loss
//! reports, the retired rings), which a thread reaches only on its cold paths.

use crate::blocks::exchange::{BlockBuf, Exchange};
use crate::blocks::lane::{Lane, LaneTake};
use crate::blocks::ringfile::{RingFile, SlotCopy, SlotTake};
use crate::clock::TimeSource;
use crate::config::Policy;
use crate::emit::line::{LINE, Line};
use crate::event_set::EventSet;
use crate::locks::lock;
use crate::sinks::sink::Pace;
use crate::sinks::sink::Sinks;
use event_format::decode::Catalog;
use event_format::raw::seal_block_in_place;
use event_format::wire::Order;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// A thread's heap ring, as the stop took it (`ring` policy): its blocks that hold records,
/// oldest first, each finished (its `used` set), unsealed.
#[derive(Debug)]
pub(crate) struct RetiredRing {
    pub(crate) blocks: Vec<BlockBuf>,
}

/// The heap rings of a recording under `ring` (`lane::HeapRings`), made the first time a
/// thread needs a ring: a recording into a ring file allocates no second buffer for them
/// unless the ring file is lost (`busguard`) and threads record on the heap after all.
#[derive(Debug)]
pub(crate) struct HeapRingsCell {
    blocks: u32,
    block_size: usize,
    made: std::sync::OnceLock<Option<Arc<crate::blocks::lane::HeapRings>>>,
}

impl HeapRingsCell {
    pub(crate) fn new(blocks: u32, block_size: usize) -> HeapRingsCell {
        HeapRingsCell { blocks, block_size, made: std::sync::OnceLock::new() }
    }

    /// The rings, made now if they were not; `None` when the allocator cannot give their
    /// memory (said once, in one line: the threads that need a ring then record nothing, and
    /// their events are counted).
    pub(crate) fn get(&self) -> Option<&Arc<crate::blocks::lane::HeapRings>> {
        self.made
            .get_or_init(|| {
                let made = crate::blocks::lane::HeapRings::new(self.blocks, self.block_size).map(Arc::new);
                if made.is_none() {
                    eprintln!(
                        "event-runtime: cannot allocate the rings' {} bytes: the threads under `ring` record nothing (their events are counted lost); lower EVENT_BUFSIZE",
                        u64::from(self.blocks) * self.block_size as u64
                    );
                }
                made
            })
            .as_ref()
    }
}

/// What every thread buffer of one recording shares: the state the hot path reads, together,
/// and behind it what the writer thread owns ([`WriterOwned`], `writer`).
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) block_size: u32,
    pub(crate) time: TimeSource,
    pub(crate) clock: event_format::wire::Clock,
    pub(crate) catalog: Catalog,
    /// The recorded sets and the wire code of each one's first event (docs/EVENT-SETS.md,
    /// decision 1): event `j` of a set is written as `first + j`. Read on a thread's cold
    /// path, when it meets a set it has not resolved.
    pub(crate) sets: Vec<(&'static EventSet, u16)>,
    /// The next thread id; ids start at 1 (0 is the recorder's own reports).
    pub(crate) next_thread: AtomicU64,
    pub(crate) policy: Policy,
    /// How long a thread waits for a free block before refusing events (`wait`).
    pub(crate) wait: Duration,
    /// The pool and queue between threads and the writer (no blocks under `ring`).
    pub(crate) exchange: Exchange,
    pub(crate) ring_file: Option<Arc<RingFile>>,
    /// The rings on the heap (`ring` policy: every thread's without a ring-file slot), which
    /// share the whole buffer (`ringpool`), made when a thread first needs one; `None` under
    /// the other policies.
    pub(crate) heap_rings: Option<HeapRingsCell>,
    /// The stream's header, which a snapshot's starts from.
    pub(crate) header: event_format::wire::Header,
    /// Whether blocks are packed before they reach a file (a snapshot's too).
    pub(crate) pack: Option<event_format::wire::Packing>,
    /// The incident service: the triggers and pins the thread buffers consult on their cold
    /// path, and the snapshots the writer thread serves once a turn (`writer::snapshot`).
    pub(crate) incidents: Incidents,
    /// The limits and histograms (`aggregate`), if the recording has any.
    pub(crate) aggregates: Option<crate::emit::aggregate::Aggregates>,
    /// Every thread's lane (`lane::Lane`), for the stop to take: the pool lanes of
    /// threads alive, and every ring lane. Closed by the stop.
    pub(crate) lanes: Mutex<Lanes>,
    /// The unattributed-loss counter when the recording started.
    pub(crate) lost_base: u64,
    /// Whether the stream sinks get blocks as they fill (`switch`, `fill`), not only at stop.
    pub(crate) streaming: bool,
    /// The blocks in the pool (0 without one).
    pub(crate) pool_blocks: usize,
    /// The process that started the recording. In a child of `fork()` it differs from
    /// `std::process::id()`: everything here is the parent's and is never touched (the cold
    /// paths compare it: `fork`'s module docs).
    pub(crate) pid: u32,
    /// Starts the recording of a child of `fork()`; `None` when children record nothing
    /// (`EVENT_FORK=off`).
    pub(crate) after_fork: Option<AfterFork>,
    /// What the writer thread owns: the sinks and what they repeat in a new segment, and the
    /// losses it reports. The hot path reaches it only on its cold paths (a thread's name at
    /// its start, a loss report, a block written directly).
    pub(crate) writer: WriterOwned,
}

/// A recording's incident service (`Shared::incidents`): the triggers and pins that watch
/// events (`incident::trigger`; docs/guide/keeping-the-incident.md) and the count of the
/// snapshots taken, whoever took them (`writer::snapshot`).
#[derive(Debug)]
pub(crate) struct Incidents {
    /// The triggers that take snapshots by themselves (`EVENT_TRIGGER`) and the pins
    /// (`EVENT_PIN`), if any.
    pub(crate) triggers: Option<crate::incident::trigger::Triggers>,
    /// Snapshots taken so far (the next one's sequence is this plus one).
    pub(crate) snapshots: std::sync::atomic::AtomicU32,
}

/// What the writer thread owns of a recording (`Shared::writer`): the sinks, the names and
/// labels they repeat in every new segment, the recorder's loss reports and the rings the
/// stop took. The writer thread writes them out; a thread reaches them only on a cold path,
/// and a stop or a snapshot under their locks.
#[derive(Debug)]
pub(crate) struct WriterOwned {
    /// The sinks every block goes to (`Sinks`): the writer thread's, a stop's and a
    /// snapshot's under this one lock.
    pub(crate) sinks: Mutex<Sinks>,
    /// Interned strings and their ids, per recording.
    pub(crate) interned: Mutex<HashMap<String, u64>>,
    /// Each thread's id and name, as its `ThreadName` said, and whether it has ended (its
    /// last block handed on): given to the sinks at each rotation, which name again in a new
    /// segment the threads whose blocks it holds. The writer thread forgets an ended thread's
    /// name once that block is written (`writer::thread::forget_ended`), so the list holds the threads
    /// alive, not every thread the program ever ran.
    pub(crate) names: Mutex<Vec<(u64, String, bool)>>,
    /// How many names were added to `names` so far (a thread's start): the writer thread hands
    /// the sinks the new ones before it writes a block (`learn_names`), so that a segment can
    /// name a thread that started after the last rotation even when its own `ThreadName`
    /// record was refused (a full pool) and its first block does not name it.
    pub(crate) names_added: AtomicU64,
    /// `names_added` as the writer thread last handed the names to the sinks.
    pub(crate) names_learned: AtomicU64,
    /// Every labelled address and its label's interned id (the latest): repeated in each
    /// new segment.
    pub(crate) labels: Mutex<HashMap<u64, u64>>,
    /// The thread rings the stop took, written to the sinks at stop.
    pub(crate) retired: Mutex<Vec<RetiredRing>>,
    /// Losses for the recorder to report in its own `Dropped` events: (thread, count).
    pub(crate) reports: Mutex<Vec<(u64, u64)>>,
    /// The stop has written its last report: later losses are counted in
    /// [`lost_unattributed`] only. Set and read under `reports`' lock.
    pub(crate) reports_closed: AtomicBool,
}

/// The lanes of a recording's threads (`Shared::lanes`).
#[derive(Debug, Default)]
pub(crate) struct Lanes {
    list: Vec<Arc<Lane>>,
    /// The ring-file slots whose blocks the stream sinks get copies of (`switch`, `fill`).
    slots: Vec<Arc<SlotCopy>>,
    /// The stop has taken them: a thread that comes later gets no lane.
    closed: bool,
}

/// What a child of `fork()` runs to start its own recording (built by the recorder, which
/// knows the settings; called by a thread buffer on the child's first event).
pub(crate) struct AfterFork(pub(crate) Box<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for AfterFork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AfterFork")
    }
}

impl WriterOwned {
    /// On the writer thread, before it writes a block: hands the sinks the names of the threads
    /// that started since it last did (`names_added`), for the segment being written to name
    /// them (`Sinks::learn_names`). The block's thread added its name before it committed a
    /// record, and the writer took the block after (through the exchange's lock, or the lane's
    /// acquire of the committed end): the count read here covers it.
    pub(crate) fn learn_names(&self) {
        let added = self.names_added.load(Ordering::Acquire);
        if added == self.names_learned.swap(added, Ordering::Relaxed) {
            return;
        }
        let names: Vec<(u64, String)> = lock(&self.names).iter().map(|e| (e.0, e.1.clone())).collect();
        lock(&self.sinks).learn_names(names);
    }

    /// `count` events of `thread` were lost where its own blocks cannot say so.
    pub(crate) fn report_dropped(&self, thread: u64, count: u64) {
        if count > 0 {
            let mut reports = lock(&self.reports);
            if self.reports_closed.load(Ordering::Relaxed) {
                // After the stop's last report: counted where the process's losses are.
                count_lost_unattributed(count);
            } else {
                reports.push((thread, count));
            }
        }
    }

    /// Ends the reports: the stop writes the last ones now.
    pub(crate) fn close_reports(&self) {
        let _reports = lock(&self.reports);
        // Relaxed: read and written under the `reports` lock.
        self.reports_closed.store(true, Ordering::Relaxed);
    }
}

impl Shared {
    /// The wire code of `set`'s first event in this recording; `None` when it does not
    /// hold `set` (compared by address: one static per set).
    pub(crate) fn first_of(&self, set: &'static EventSet) -> Option<u16> {
        self.sets.iter().find(|(s, _)| std::ptr::eq(*s, set)).map(|&(_, first)| first)
    }

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
            lock(&self.writer.sinks).write_block(&copy, Pace::Keep);
            return;
        }
        match self.exchange.take(self.wait) {
            Some(mut copy) => {
                copy.copy_from_slice(block);
                if !self.exchange.submit(copy) {
                    count_lost_unattributed(records);
                }
            }
            None => self.writer.report_dropped(thread, records),
        }
    }

    /// The writer's idle flush (`Lane::flush_idle`): every pool lane whose thread recorded
    /// nothing since the last call gets its unflushed records written to the stream sinks.
    /// Called every `writer::thread::IDLE_FLUSH_PERIOD`, so an idle thread's records reach the sinks
    /// within two periods of its last one.
    pub(crate) fn flush_idle_lanes(&self) {
        let lanes = {
            let lanes = lock(&self.lanes);
            if lanes.closed {
                return;
            }
            lanes.list.clone()
        };
        for lane in lanes.iter().filter(|lane| !lane.is_ring()) {
            // Lock order: the lane's, then the sinks' (as a direct write under the lane's).
            lane.flush_idle(|block| {
                self.writer.learn_names();
                lock(&self.writer.sinks).write_block(block, Pace::Keep);
            });
        }
    }

    /// Writes the writer thread's own full block now, and returns it for reuse.
    pub(crate) fn write_now(&self, mut block: BlockBuf) -> BlockBuf {
        seal_block_in_place(Order::NATIVE, &mut block);
        lock(&self.writer.sinks).write_block(&block, Pace::Keep);
        block
    }

    /// Registers a thread's lane for the stop to take; `false` once the stop took them (the
    /// thread records nothing in this recording). Pool lanes whose threads ended (the list
    /// holds their last reference) are let go here.
    pub(crate) fn add_lane(&self, lane: &Arc<Lane>) -> bool {
        let mut lanes = lock(&self.lanes);
        if lanes.closed {
            return false;
        }
        lanes.list.retain(|l| l.is_ring() || Arc::strong_count(l) > 1);
        lanes.list.push(Arc::clone(lane));
        true
    }

    /// Registers a thread's ring-file slot for the stop to take its current block's copy
    /// (`ringfile::SlotCopy`); `false` once the stop took them. Those of ended threads are
    /// let go here.
    pub(crate) fn add_slot_copy(&self, slot: &Arc<SlotCopy>) -> bool {
        let mut lanes = lock(&self.lanes);
        if lanes.closed {
            return false;
        }
        lanes.slots.retain(|s| Arc::strong_count(s) > 1);
        lanes.slots.push(Arc::clone(slot));
        true
    }

    /// The stop's take of every registered slot's current block (`ringfile::SlotCopy::take`),
    /// after [`take_lanes`](Self::take_lanes) closed the list.
    pub(crate) fn take_slots(&self) -> Vec<SlotTake> {
        let slots = std::mem::take(&mut lock(&self.lanes).slots);
        slots.iter().filter_map(|slot| slot.take()).collect()
    }

    /// The current blocks of the pool lanes of threads alive, as committed now
    /// (`lane::Lane::peek`): what a snapshot of a stream takes that the sinks do not have yet.
    pub(crate) fn peek_pool_lanes(&self) -> Vec<Box<[u8]>> {
        let lanes = {
            let lanes = lock(&self.lanes);
            if lanes.closed {
                return Vec::new();
            }
            lanes.list.clone()
        };
        lanes.iter().filter(|lane| !lane.is_ring()).filter_map(|lane| lane.peek()).collect()
    }

    /// Every ring lane registered so far, for a snapshot to copy (`lane::Lane::copy_ring`);
    /// none once the stop took them.
    pub(crate) fn ring_lanes(&self) -> Vec<Arc<Lane>> {
        let lanes = lock(&self.lanes);
        if lanes.closed {
            return Vec::new();
        }
        lanes.list.iter().filter(|l| l.is_ring()).cloned().collect()
    }

    /// The stop's take of every thread's lane (`lane::Lane::take`): what each committed,
    /// whether its thread is still running, blocked, or gone. No lane is added after this.
    pub(crate) fn take_lanes(&self) -> Vec<LaneTake> {
        let lanes = {
            let mut lanes = lock(&self.lanes);
            lanes.closed = true;
            lanes.list.clone()
        };
        lanes.iter().filter_map(|lane| lane.take()).collect()
    }

    /// Whether this is a child of `fork()` looking at its parent's recording, which it must
    /// not touch (`fork`'s module docs). A system call: for cold paths only.
    pub(crate) fn is_parents(&self) -> bool {
        self.pid != std::process::id()
    }

    /// Events lost unattributed during this recording.
    pub(crate) fn lost_here(&self) -> u64 {
        LOST_UNATTRIBUTED.load(Ordering::Relaxed).saturating_sub(self.lost_base)
    }
}

/// The unit tests that start a recording take this first: a process has one recording at a
/// time, and the test harness runs tests at once (without it they failed with
/// `AlreadyRunning`, now and then).
#[cfg(test)]
pub(crate) static TEST_RECORDING: Mutex<()> = Mutex::new(());

// The recorder's generation (`line::Line::generation`, on the line the divert word shares:
// an enabled event reads both): bumped at every start and stop; a thread buffer of another
// generation is stale.

/// The process's recorder: the running recording and its generation, and in a child of
/// `fork()` the parent's recording whose settings the child's own starts from.
#[derive(Debug)]
pub(crate) struct Current {
    /// The running recording and its generation; `None` while none runs.
    running: Option<(u64, Arc<Shared>)>,
    /// In a child of `fork()` that has not started its own recording yet: the parent's
    /// recording (never touched but for its `after_fork`).
    forked: Option<Arc<Shared>>,
}

static CURRENT: Mutex<Current> = Mutex::new(Current { running: None, forked: None });
/// Events that could not be attributed to any thread's block: emitted while the thread was
/// exiting, re-entrantly, with no ring-file slot free, or as a recording stopped.
static LOST_UNATTRIBUTED: AtomicU64 = AtomicU64::new(0);

#[inline(always)]
pub(crate) fn generation() -> u64 {
    generation_at(&LINE)
}

/// The recorder's generation, read through `line`, the address of [`LINE`] that a set's
/// control bits keep (`__private::Bits`: generated code reaches it without the global
/// offset table).
#[inline(always)]
pub(crate) fn generation_at(line: &Line) -> u64 {
    // Relaxed: a thread that sees a stale generation for a moment records into the previous
    // recording's buffer, which is flushed when it notices; nothing else is ordered by it.
    line.generation.load(Ordering::Relaxed)
}

/// The shared state of the recording of `generation`, if it is the running one.
pub(crate) fn current(generation: u64) -> Option<Arc<Shared>> {
    lock(&CURRENT).running.as_ref().filter(|(g, _)| *g == generation).map(|(_, s)| Arc::clone(s))
}

/// In a child of `fork()` that records (`EVENT_FORK`, on by default): starts the child's own
/// recording, once, and returns it with its generation. `None` elsewhere, or when it could
/// not start (it said why on stderr).
#[cold]
pub(crate) fn start_after_fork() -> Option<(u64, Arc<Shared>)> {
    let parent = lock(&CURRENT).forked.take()?;
    if let Some(start) = &parent.after_fork {
        (start.0)();
    }
    // Never dropped here: the parent's state is not ours to free (`fork`'s module docs).
    std::mem::forget(parent);
    lock(&CURRENT).running.as_ref().map(|(g, s)| (*g, Arc::clone(s)))
}

/// Forgets the parent's recording in a child of `fork()` that ends before it recorded.
pub(crate) fn forget_forked() {
    if let Some(parent) = lock(&CURRENT).forked.take() {
        std::mem::forget(parent);
    }
}

/// The process's recorder, held across `fork()` (the `prepare` handler takes it, the parent
/// and child handlers give it back), so that the child never finds it locked by a thread
/// that does not exist there (jemalloc's `prefork`/`postfork`).
#[derive(Debug)]
pub(crate) struct ForkHold(MutexGuard<'static, Current>);

/// Takes the process's recorder for a `fork()`.
pub(crate) fn hold_for_fork() -> ForkHold {
    ForkHold(lock(&CURRENT))
}

impl ForkHold {
    /// In the child, just after `fork()`, on the only thread: the parent's recording is no
    /// longer current (it is kept as `forked` when the child records, for its settings), and
    /// every thread buffer is stale. Returns whether the child records. No allocation, no
    /// free, no lock: only moves and atomic stores.
    pub(crate) fn in_child(mut self) -> bool {
        let records;
        if let Some((_, parent)) = self.0.running.take() {
            records = parent.after_fork.is_some();
            if records {
                if let Some(older) = self.0.forked.replace(parent) {
                    std::mem::forget(older);
                }
            } else {
                std::mem::forget(parent);
            }
        } else {
            records = self.0.forked.as_ref().is_some_and(|p| p.after_fork.is_some());
        }
        LINE.generation.fetch_add(1, Ordering::Relaxed);
        if !records {
            set_running(false);
        }
        drop(self);
        records
    }
}

/// The running recording's shared state, if any (`try_lock`: safe to call from a panic hook).
pub(crate) fn try_current() -> Option<Arc<Shared>> {
    CURRENT.try_lock().ok()?.running.as_ref().map(|(_, s)| Arc::clone(s))
}

/// Whether a recording runs: the built-in events of `annotate` and the `tracing` bridge test
/// it first (`line::Line::running`, on the line an enabled event reads anyway).
#[inline]
pub(crate) fn is_running() -> bool {
    // Relaxed: as for the enable bits, a late view records or skips an event or two.
    LINE.running.load(Ordering::Relaxed)
}

/// Turns the built-in events on (a recording has started) or off (it is stopping).
pub(crate) fn set_running(on: bool) {
    // Relaxed: see `is_running`.
    LINE.running.store(on, Ordering::Relaxed);
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

/// The process's recorder, claimed by a start: held from the check that none runs until the
/// new recording is in place, so that two starts cannot both succeed.
#[derive(Debug)]
pub(crate) struct Vacancy(MutexGuard<'static, Current>);

/// Claims the process's recorder; `None` when a recording is running. A recording started
/// in a child of `fork()` replaces the one the child would have started from its parent's.
pub(crate) fn claim() -> Option<Vacancy> {
    let mut current = lock(&CURRENT);
    if current.running.is_some() {
        return None;
    }
    if let Some(parent) = current.forked.take() {
        std::mem::forget(parent);
    }
    Some(Vacancy(current))
}

impl Vacancy {
    /// Makes `shared` the running recording, of a new generation, and returns the generation.
    pub(crate) fn fill(mut self, shared: &Arc<Shared>) -> u64 {
        let generation = LINE.generation.fetch_add(1, Ordering::Relaxed) + 1;
        self.0.running = Some((generation, Arc::clone(shared)));
        generation
    }
}

/// Ends the recording of `generation`: it is no longer current, and every thread buffer of it
/// is stale from now on.
pub(crate) fn close(generation: u64) {
    let mut current = lock(&CURRENT);
    if current.running.as_ref().is_some_and(|(g, _)| *g == generation) {
        current.running = None;
    }
    LINE.generation.fetch_add(1, Ordering::Relaxed);
}
