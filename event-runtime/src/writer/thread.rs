//! Off the recording threads' path: the writer thread, which takes the blocks threads hand
//! on and writes them (`write`), reports losses, serves the ring file (heartbeat, control
//! requests, answered by `control`), the incidents (the snapshots triggers queued,
//! `snapshot::serve`), the limits' and histograms' flushes, and the clock (`ClockSync`).
//!
//! Its loop is one [`turn`] after another, each job a step of its own. It stands on the
//! session (`session::Shared`) and the thread buffers, and is started and ended by the
//! recording (`recording`); the thread buffers never call it.

use crate::blocks::exchange::Batch;
use crate::blocks::ringfile::RingFile;
use crate::emit::annotate;
use crate::emit::buffer;
use crate::emit::session::{self, Shared};
use crate::locks::lock;
use crate::writer::control;
use crate::writer::snapshot;
use crate::writer::write;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the writer thread looks at the ring file's control page and heartbeat.
const SERVICE_PERIOD: Duration = Duration::from_millis(20);
/// How often the writer thread records a `ClockSync` event.
const CLOCK_SYNC_PERIOD: Duration = Duration::from_secs(1);
/// How often the writer thread flushes idle threads' partial blocks (`Shared::flush_idle_lanes`):
/// a thread's records reach the sinks at most two periods after its last.
pub(crate) const IDLE_FLUSH_PERIOD: Duration = Duration::from_secs(1);

/// How many nice levels the writer thread runs below the thread that started the recording
/// (Linux; at most 19): the writer yields to its host. On a core it shares with a program's thread, the scheduler gives the program
/// the core whenever both want it, and the writer the time the program leaves (EEVDF, as
/// CFS before it, gives a thread of nice 10 about a tenth of a contended core, and never lets
/// it preempt the program on waking). Packing a block costs about 0.1 ms, so a tenth of a
/// core packs some 60 MB/s; a writer that falls behind packs at zstd's fast level, then
/// writes blocks unpacked (`write_batch`'s pace, more blocks a turn), then drops (counted),
/// and never makes the program wait.
const WRITER_NICE: i32 = 10;

/// Starts the writer thread of the recording of `generation`; it ends once the exchange is
/// closed and drained. The thread is detached as it starts: the stop waits for its end
/// through the returned [`WriterEnd`] and never joins it (`fork`'s module docs say why).
pub(crate) fn spawn(shared: &Arc<Shared>, generation: u64) -> io::Result<WriterEnd> {
    let (ended, end) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new().name("event-writer".into()).spawn({
        let shared = Arc::clone(shared);
        move || {
            let ending = Ending(ended);
            writer_main(&shared, generation);
            // Its share of the recording goes before it says it ended: the stop then finds
            // nothing of the writer's left.
            drop(shared);
            drop(ending);
        }
    })?;
    // Detached: never joined, so no `pthread_join` can meet a descriptor that a stale handle
    // detached (a child of `fork()` dropping its parent's `JoinHandle`s).
    drop(thread);
    Ok(WriterEnd(end))
}

/// The end of a recording's writer thread, as the stop waits for it (a detached thread is
/// not joined).
#[derive(Debug)]
pub(crate) struct WriterEnd(std::sync::mpsc::Receiver<bool>);

impl WriterEnd {
    /// Waits until the writer thread has ended; `false` when it panicked.
    pub(crate) fn wait(self) -> bool {
        matches!(self.0.recv(), Ok(false))
    }
}

/// Says, when the writer thread's work ends (returned or unwound), whether it panicked.
struct Ending(std::sync::mpsc::Sender<bool>);

impl Drop for Ending {
    fn drop(&mut self) {
        let _ = self.0.send(std::thread::panicking());
    }
}

/// The writer thread: one [`turn`] after another, until the exchange is closed and drained.
fn writer_main(shared: &Arc<Shared>, generation: u64) {
    buffer::mark_writer();
    crate::files::lower_this_thread(WRITER_NICE);
    let mut last = Last::now();
    while !turn(shared, &mut last) {}
    // The writer's own block (its ClockSync events) goes to the sinks before it ends.
    buffer::detach_this_thread(generation);
}

/// When the writer thread last did each of its periodic jobs.
struct Last {
    sync: Instant,
    idle_flush: Instant,
    aggregate: Instant,
}

impl Last {
    fn now() -> Last {
        let now = Instant::now();
        Last { sync: now, idle_flush: now, aggregate: now }
    }
}

/// One turn of the writer thread, its jobs in this order: the blocks handed on, written; the
/// reports and idle threads' blocks of a stream; the ring file's service; a rotation due; the
/// limits' and histograms' flush due; the incidents (snapshots the triggers queued); the
/// names of threads that ended; the clock. Returns whether this was the last turn (the
/// exchange is closed and drained).
fn turn(shared: &Shared, last: &mut Last) -> bool {
    // Threads that ended before this turn: every block they handed on is written by its
    // end (the batch takes every block queued), and then their names are forgotten.
    let ended: Vec<u64> = lock(&shared.writer.names).iter().filter(|e| e.2).map(|e| e.0).collect();
    let batch = shared.exchange.next_batch(SERVICE_PERIOD);
    let closed = matches!(batch, Batch::Closed);
    if let Batch::Blocks(blocks) = batch {
        write::write_batch(shared, blocks);
    }
    if shared.streaming {
        write::write_reports(shared, &[]);
        if last.idle_flush.elapsed() >= IDLE_FLUSH_PERIOD {
            last.idle_flush = Instant::now();
            shared.flush_idle_lanes();
        }
    }
    if let Some(ring) = &shared.ring_file {
        serve_ring_file(shared, ring);
    }
    write::rotate_if_due(shared);
    if let Some(aggregates) = &shared.aggregates
        && session::is_running()
        && last.aggregate.elapsed() >= aggregates.period
    {
        last.aggregate = Instant::now();
        crate::emit::admit::flush(shared, crate::emit::aggregate::Flush::Period);
    }
    if session::is_running() {
        snapshot::serve(shared);
    }
    forget_ended(shared, &ended);
    if !shared.time.is_deterministic() && session::is_running() && last.sync.elapsed() >= CLOCK_SYNC_PERIOD {
        last.sync = Instant::now();
        annotate::clock_sync(&shared.time);
    }
    closed
}

/// The ring file's service, once a turn: the losses to say, the heartbeat and the count of
/// losses a reader shows, and a control request, answered (`control::answer`).
fn serve_ring_file(shared: &Shared, ring: &RingFile) {
    if let Some(line) = ring.loss_to_say(shared.streaming) {
        eprintln!("event-runtime: {line}");
    }
    ring.heartbeat();
    ring.set_lost(shared.lost_here());
    if let Some((seq, text)) = ring.request() {
        match control::answer(shared, &text) {
            Ok(now) => ring.reply(seq, true, &now),
            Err(e) => ring.reply(seq, false, &e),
        }
    }
}

/// Forgets the names of the threads that had ended before this turn began (`ended`): their
/// last blocks and loss reports are written, so no later segment needs their names.
fn forget_ended(shared: &Shared, ended: &[u64]) {
    if ended.is_empty() {
        return;
    }
    lock(&shared.writer.names).retain(|e| !ended.contains(&e.0));
    lock(&shared.writer.sinks).forget_threads(ended);
}
