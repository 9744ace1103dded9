//! Off the recording threads' path: the writer thread, which seals the blocks threads hand on
//! and writes them to the sinks, reports losses, and serves the ring file (heartbeat, control
//! requests) and the clock (`ClockSync`); and the last writes of a stop (the rings, the ring
//! file's copy, the final loss report), which are the same kind of work.
//!
//! It stands on the session (`session::Shared`) and the thread buffers, and is started and
//! ended by the recording (`recording`); the thread buffers never call it.

use crate::annotate;
use crate::buffer;
use crate::control;
use crate::exchange::{Batch, BlockBuf};
use crate::locks::lock;
use crate::ringfile::RingFile;
use crate::session::{self, Shared};
use crate::sink;
use crate::snapshot;
use event_format::builtin;
use event_format::ring::{ROTATE_REQUEST, RingReader, RingStream};
use event_format::wire::{BLOCK_HEADER_LEN, BLOCK_USED_AT, Order, seal_block_in_place};
use event_format::wire::{StopCause, Text, Value, dropped_report};
use std::io::{self, Read};
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
/// core packs some 60 MB/s; a writer that falls further behind writes blocks unpacked
/// (`write_batch`'s `hurry`), then drops (counted), and never makes the program wait.
const WRITER_NICE: i32 = 10;

/// The writer's one point of yielding, between two blocks it writes (packing included,
/// whatever the codec): a program's thread that is ready to run on this core runs before the
/// next block, so that the program waits for at most one block's packing, never for a batch.
/// `sched_yield` moves the writer behind it (EEVDF: its deadline a slice later); with nothing
/// else to run it returns at once.
fn yield_to_host() {
    std::thread::yield_now();
}

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

/// The writer thread: writes full blocks to the sinks, reports losses, and serves the ring
/// file (heartbeat, control requests) and the clock (`ClockSync`).
fn writer_main(shared: &Arc<Shared>, generation: u64) {
    buffer::mark_writer();
    crate::files::lower_this_thread(WRITER_NICE);
    let mut last_sync = Instant::now();
    let mut last_idle_flush = Instant::now();
    let mut last_aggregate = Instant::now();
    loop {
        // Threads that ended before this turn: every block they handed on is written by its
        // end (the batch takes every block queued), and then their names are forgotten.
        let ended: Vec<u64> = lock(&shared.names).iter().filter(|e| e.2).map(|e| e.0).collect();
        let batch = shared.exchange.next_batch(SERVICE_PERIOD);
        let closed = matches!(batch, Batch::Closed);
        if let Batch::Blocks(blocks) = batch {
            write_batch(shared, blocks);
        }
        if shared.streaming {
            write_reports(shared, &[]);
            if last_idle_flush.elapsed() >= IDLE_FLUSH_PERIOD {
                last_idle_flush = Instant::now();
                shared.flush_idle_lanes();
            }
        }
        if let Some(ring) = &shared.ring_file {
            if let Some(line) = ring.loss_to_say(shared.streaming) {
                eprintln!("event-runtime: {line}");
            }
            ring.heartbeat();
            ring.set_lost(shared.lost_here());
            if let Some((seq, text)) = ring.request() {
                // An empty request reads the selection (docs/FORMAT.md, "Control protocol").
                let answer = match text.trim() {
                    "" => control::describe().ok_or_else(|| "no recording runs".to_owned()),
                    ROTATE_REQUEST => match lock(&shared.sinks).request_rotation() {
                        Some(index) => Ok(format!("segment {index} is being sealed; the next one starts")),
                        None => Err("this recording writes no segments (EVENT_ROTATE is not set)".to_owned()),
                    },
                    t if t.starts_with(event_format::ring::SNAPSHOT_REQUEST.trim_end()) => {
                        snapshot::requested(shared, t)
                    }
                    t if t.starts_with(event_format::ring::LIMIT_REQUEST) => {
                        let limits = t[event_format::ring::LIMIT_REQUEST.len()..].trim();
                        if limits.is_empty() {
                            control::limits().ok_or_else(|| "no recording runs".to_owned())
                        } else {
                            control::limit(limits).map_err(|e| e.to_string())
                        }
                    }
                    _ => control::apply(&text).map_err(|e| e.to_string()),
                };
                match answer {
                    Ok(now) => ring.reply(seq, true, &now),
                    Err(e) => ring.reply(seq, false, &e),
                }
            }
        }
        rotate_if_due(shared);
        if let Some(aggregates) = &shared.aggregates
            && session::is_running()
            && last_aggregate.elapsed() >= aggregates.period
        {
            last_aggregate = Instant::now();
            crate::aggregate::flush(shared, crate::aggregate::Flush::Period);
        }
        if session::is_running() {
            snapshot::serve(shared);
        }
        forget_ended(shared, &ended);
        if !shared.time.is_deterministic() && session::is_running() && last_sync.elapsed() >= CLOCK_SYNC_PERIOD {
            last_sync = Instant::now();
            annotate::clock_sync(&shared.time);
        }
        if closed {
            break;
        }
    }
    // The writer's own block (its ClockSync events) goes to the sinks before it ends.
    buffer::detach_this_thread(generation);
}

/// Writes a batch of full blocks and gives them back to the pool, a few at a time so
/// that threads waiting for a block get one early.
fn write_batch(shared: &Shared, blocks: Vec<BlockBuf>) {
    const GIVE_BACK_EVERY: usize = 8;
    let mut written = Vec::with_capacity(GIVE_BACK_EVERY);
    for mut block in blocks {
        seal_block_in_place(Order::NATIVE, &mut block);
        // Packing costs the writer about 0.1 ms per 64 KiB block (LZ4 at 600-900 MB/s on
        // the tour's trace): when fewer than a quarter of the pool's blocks are free, the
        // program is outrunning the writer, and blocks go as they are, so that no event
        // is dropped for the sake of size.
        let hurry = shared.exchange.free_hint() < shared.pool_blocks / 4;
        rotate_if_due(shared);
        shared.learn_names();
        lock(&shared.sinks).write_block(&block, hurry);
        written.push(block);
        yield_to_host();
        if written.len() == GIVE_BACK_EVERY {
            shared.exchange.give_back(std::mem::replace(&mut written, Vec::with_capacity(GIVE_BACK_EVERY)));
        }
    }
    shared.exchange.give_back(written);
}

/// Forgets the names of the threads that had ended before this turn began (`ended`): their
/// last blocks and loss reports are written, so no later segment needs their names.
fn forget_ended(shared: &Shared, ended: &[u64]) {
    if ended.is_empty() {
        return;
    }
    lock(&shared.names).retain(|e| !ended.contains(&e.0));
    lock(&shared.sinks).forget_threads(ended);
}

/// Writes the recorder's reports (`Dropped` events of thread 0), if any, in one block.
pub(crate) fn write_reports(shared: &Shared, extra: &[(u64, u64)]) {
    let mut reports = std::mem::take(&mut *lock(&shared.reports));
    reports.extend_from_slice(extra);
    if reports.is_empty() {
        return;
    }
    let time = shared.time.now();
    let mut sinks = lock(&shared.sinks);
    // A segment names the threads whose losses it reports, before the report.
    sinks.name_threads(reports.iter().map(|&(thread, _)| thread), time);
    let blocks = dropped_report(Order::NATIVE, shared.block_size, sinks.recorder_sequence(), time, &reports);
    sinks.advance_recorder_sequence(blocks.len() as u64);
    for block in &blocks {
        sinks.write_block(block, false);
    }
}

/// The clean-stop marker (docs/FORMAT.md, "The clean stop"): a block of thread 0 whose one
/// `Stop` record counts the blocks, events and losses written before it. Written last, after
/// every other block, by a stop that lost nothing it could not count.
pub(crate) fn write_stop(shared: &Shared) {
    let time = shared.time.now();
    lock(&shared.sinks).write_stop(time, StopCause::Stopped);
}

/// Seals the segment being written and starts the next when it is due (docs/FORMAT.md,
/// "Segments"); after a full disk, tries again for room. On the writer thread (or at stop):
/// never on a recording thread.
fn rotate_if_due(shared: &Shared) {
    if !lock(&shared.sinks).rotation_due() {
        return;
    }
    // The histograms and suppressions of the segment's last period go into it.
    crate::aggregate::flush(shared, crate::aggregate::Flush::Period);
    // Made before the sinks are locked: a thread may hold the table of interned strings while
    // it hands a block to the sinks.
    let time = shared.time.now();
    let names = names_blocks(shared, 0, time);
    let threads = lock(&shared.names).iter().map(|(thread, name, _)| (*thread, name.clone())).collect();
    lock(&shared.sinks).rotate_if_due(time, names, threads);
}

/// Blocks of thread 0, numbered from `first`, that repeat in a new segment every interned
/// string and label of the recording so far, so that the segment reads alone with the names
/// of the whole recording. Thread names are not among them: the sinks name in each segment
/// the threads whose blocks it holds (`Sinks::write_block`), so that a segment does not
/// repeat the name of every thread the program ever ran.
fn names_blocks(shared: &Shared, first: u64, time: u64) -> Vec<Vec<u8>> {
    let labels = lock(&shared.labels).clone();
    let mut interned: Vec<(u64, String)> =
        lock(&shared.interned).iter().map(|(text, &id)| (id, text.clone())).collect();
    interned.sort();
    let mut records: Vec<(u16, Vec<Value<'_>>)> = Vec::new();
    for (id, text) in &interned {
        records.push((builtin::INTERN, vec![Value::Word(*id), Value::Str(Text::new(text))]));
    }
    for (address, id) in &labels {
        records.push((builtin::LABEL, vec![Value::Address(*address), Value::Word(*id)]));
    }
    sink::recorder_blocks(shared.block_size, first, time, &records)
}

/// Under `ring`: every thread's ring, oldest block first, to the stream sinks.
pub(crate) fn write_rings(shared: &Shared) {
    let bs = shared.block_size as usize;
    let rings = std::mem::take(&mut *lock(&shared.retired));
    let mut sinks = lock(&shared.sinks);
    for mut ring in rings {
        let first = (ring.sequence + 1).saturating_sub(ring.ring_blocks);
        for seq in first..=ring.sequence {
            let index = (seq % ring.ring_blocks) as usize;
            // Cannot fail: the ring holds `ring_blocks` blocks of `bs` bytes; skipped if not.
            let Some(block) = ring.blocks.get_mut(index * bs..(index + 1) * bs) else { continue };
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
pub(crate) fn write_ring_file(shared: &Shared, ring: &RingFile) -> io::Result<()> {
    // Through our own descriptor: the path may have been removed or replaced meanwhile.
    let file = ring.reopen()?;
    let reader = RingReader::open(file, event_format::decode::DecodeOptions::default()).map_err(io::Error::other)?;
    let skip = reader.header_bytes().len();
    let mut stream = RingStream::new(reader);
    let mut header = vec![0u8; skip];
    stream.read_exact(&mut header)?;
    let mut block = vec![0u8; shared.block_size as usize];
    let mut sinks = lock(&shared.sinks);
    loop {
        match stream.read_exact(&mut block) {
            Ok(()) => sinks.write_block(&block, false),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}
