//! The writes of the writer thread and of a stop: the blocks threads hand on (sealed, packed,
//! written to the sinks), the recorder's loss reports, a segment's rotation with the names
//! it repeats, the rings and the ring file's copy at stop, and the clean-stop marker.
//!
//! These are what a snapshot of a stream also asks for on the writer thread (the blocks
//! queued, [`write_queued`]); the thread's turn that orders them is `writer`'s.

use crate::blocks::exchange::{Batch, BlockBuf};
use crate::blocks::ringfile::RingFile;
use crate::emit::session::Shared;
use crate::locks::lock;
use crate::sinks::sink;
use crate::sinks::sink::Pace;
use crate::writer::contention;
use event_format::builtin;
use event_format::raw::dropped_report;
use event_format::raw::seal_block_in_place;
use event_format::ring::{RingReader, RingStream};
use event_format::wire::Order;
use event_format::wire::{StopCause, Text, Value};
use std::io::{self, Read};
use std::time::Duration;

/// The writer's one point of yielding, after each turn's work ([`BETWEEN_YIELDS`]): a
/// program's thread that is ready to run on this core runs before the next, so that the
/// program waits for at most about one block's packing, never for a batch.
/// `sched_yield` moves the writer behind it (EEVDF: its deadline a slice later); with nothing
/// else to run it returns at once.
fn yield_to_host() {
    std::thread::yield_now();
}

/// On the writer thread, before a snapshot of a stream: writes the blocks queued now, so that
/// the snapshot finds them in the sinks (those of the trigger's thread up to its trigger among
/// them).
pub(crate) fn write_queued(shared: &Shared) {
    if let Batch::Blocks(blocks) = shared.exchange.next_batch(Duration::ZERO) {
        write_batch(shared, blocks);
    }
}

/// The writer's work between two yields, in eighths: a block packed as configured (8), a block
/// packed at zstd's fast level (4: two a turn), a block written whole (1: eight a turn). A
/// block packed costs 0.1 to 0.3 ms; a block written whole (the writer far behind) its CRC and
/// a `write`, some 10 to 20 us. Yielding after each block held a writer of nice 10 to a block
/// or so a scheduling period on a core the program kept busy, whatever the block cost, so that
/// it fell further behind until the threads lost events (the service benchmark on one core
/// lost 17 to 34 % of its events with the `tracing` bridge: BENCHMARKS.md). A turn stays under
/// a block's packing at the configured level, which bounds the program's wait for the writer.
const BETWEEN_YIELDS: usize = 8;

/// Writes a batch of full blocks and gives them back to the pool, a few at a time so
/// that threads waiting for a block get one early.
pub(crate) fn write_batch(shared: &Shared, blocks: Vec<BlockBuf>) {
    const GIVE_BACK_EVERY: usize = 8;
    let mut written = Vec::with_capacity(GIVE_BACK_EVERY);
    let mut since_yield = 0;
    for mut block in blocks {
        seal_block_in_place(Order::NATIVE, &mut block);
        // Packing costs the writer about 0.15 to 0.4 ms per 64 KiB block (zstd level 5 over
        // columns at 150 to 450 MB/s on a shared 2-core VM; level 1 about twice as fast): when
        // fewer than a quarter of the pool's blocks are free, the program is outrunning the
        // writer, which packs at zstd's fast level; under an eighth, blocks go as they are,
        // so that no event is dropped for the sake of size. (Under half, the fast level cost a
        // service-like workload 2 % of its size where level 5 kept up: BENCHMARKS.md.)
        // (A pool of a few blocks: whole with none free, level 1 with one.) A writer that
        // shares a busy CPU with its program packs at the fast level too: the time it packs
        // is the program's there (`contention`).
        let free = shared.exchange.free_hint();
        let pace = if free < (shared.pool_blocks / 8).max(1) {
            Pace::Hurry
        } else if free < (shared.pool_blocks / 4).max(2) || contention::this_thread_shares_busy_cpu() {
            Pace::Behind
        } else {
            Pace::Keep
        };
        rotate_if_due(shared);
        shared.writer.learn_names();
        let packs = {
            let mut sinks = lock(&shared.writer.sinks);
            sinks.write_block(&block, pace);
            sinks.packs()
        };
        written.push(block);
        // A turn's work between two yields: a block packed as configured, two at the fast
        // level, or eight whole.
        since_yield += match pace {
            Pace::Keep if packs => BETWEEN_YIELDS,
            Pace::Behind if packs => BETWEEN_YIELDS / 2,
            _ => 1,
        };
        if since_yield >= BETWEEN_YIELDS {
            since_yield = 0;
            yield_to_host();
        }
        if written.len() == GIVE_BACK_EVERY {
            shared.exchange.give_back(std::mem::replace(&mut written, Vec::with_capacity(GIVE_BACK_EVERY)));
        }
    }
    shared.exchange.give_back(written);
}

/// Writes the recorder's reports (`Dropped` events of thread 0), if any, in one block.
pub(crate) fn write_reports(shared: &Shared, extra: &[(u64, u64)]) {
    let mut reports = std::mem::take(&mut *lock(&shared.writer.reports));
    reports.extend_from_slice(extra);
    if reports.is_empty() {
        return;
    }
    let time = shared.time.now();
    let mut sinks = lock(&shared.writer.sinks);
    // A segment names the threads whose losses it reports, before the report.
    sinks.name_threads(reports.iter().map(|&(thread, _)| thread), time);
    let blocks = dropped_report(Order::NATIVE, shared.block_size, sinks.recorder_sequence(), time, &reports);
    sinks.advance_recorder_sequence(blocks.len() as u64);
    for block in &blocks {
        sinks.write_block(block, Pace::Keep);
    }
}

/// The clean-stop marker (docs/FORMAT.md, "The clean stop"): a block of thread 0 whose one
/// `Stop` record counts the blocks, events and losses written before it. Written last, after
/// every other block, by a stop that lost nothing it could not count.
pub(crate) fn write_stop(shared: &Shared) {
    let time = shared.time.now();
    lock(&shared.writer.sinks).write_stop(time, StopCause::Stopped);
}

/// Seals the segment being written and starts the next when it is due (docs/FORMAT.md,
/// "Segments"); after a full disk, tries again for room. On the writer thread (or at stop):
/// never on a recording thread.
pub(crate) fn rotate_if_due(shared: &Shared) {
    if !lock(&shared.writer.sinks).rotation_due() {
        return;
    }
    // The histograms and suppressions of the segment's last period go into it.
    crate::emit::admit::flush(shared, crate::emit::aggregate::Flush::Period);
    // Made before the sinks are locked: a thread may hold the table of interned strings while
    // it hands a block to the sinks.
    let time = shared.time.now();
    let names = names_blocks(shared, 0, time);
    let mut threads: Vec<(u64, String)> =
        lock(&shared.writer.names).iter().map(|(thread, name, _)| (*thread, name.clone())).collect();
    // Pinned events (`EVENT_PIN`) are repeated in every new segment, with their threads'
    // names, also of threads that ended.
    let pins =
        shared.incidents.triggers.as_ref().map(crate::incident::trigger::Triggers::pinned_now).unwrap_or_default();
    if let Some(triggers) = &shared.incidents.triggers {
        for (thread, name) in triggers.pinned_names() {
            if !threads.iter().any(|t| t.0 == thread) {
                threads.push((thread, name));
            }
        }
    }
    lock(&shared.writer.sinks).rotate_if_due(time, names, threads, &pins);
}

/// Blocks of thread 0, numbered from `first`, that repeat in a new segment every interned
/// string and label of the recording so far, so that the segment reads alone with the names
/// of the whole recording. Thread names are not among them: the sinks name in each segment
/// the threads whose blocks it holds (`Sinks::write_block`), so that a segment does not
/// repeat the name of every thread the program ever ran.
fn names_blocks(shared: &Shared, first: u64, time: u64) -> Vec<Vec<u8>> {
    let labels = lock(&shared.writer.labels).clone();
    let mut interned: Vec<(u64, String)> =
        lock(&shared.writer.interned).iter().map(|(text, &id)| (id, text.clone())).collect();
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
    let rings = std::mem::take(&mut *lock(&shared.writer.retired));
    let mut sinks = lock(&shared.writer.sinks);
    for ring in rings {
        for mut block in ring.blocks {
            seal_block_in_place(Order::NATIVE, &mut block);
            sinks.write_block(&block, Pace::Keep);
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
    let mut sinks = lock(&shared.writer.sinks);
    loop {
        match stream.read_exact(&mut block) {
            Ok(()) => sinks.write_block(&block, Pace::Keep),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}
