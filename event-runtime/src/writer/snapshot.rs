//! Snapshots: the window around an incident, written as a whole, independently readable
//! event file while the program goes on recording (issues 32 and 40;
//! docs/guide/keeping-the-incident.md).
//!
//! A snapshot is taken off the recording threads: by the thread that asks
//! ([`Recording::snapshot`](crate::Recording::snapshot)), by the writer thread for a trigger
//! or a request through the ring file's control page (`event-dump control RING --snapshot
//! OUT`), or by the panicking thread for a `panic` trigger. Its blocks come from:
//!
//! - under `ring`, the rings: every heap ring, one block at a time under its pool's lock
//!   (`lane::Lane::copy_ring`: a recording thread waits at most for the copy of one block, and
//!   only on its cold path), and the ring file's blocks, as a reader reads a live ring file
//!   (`RingStream`: each block copied, then checked), with the blocks the triggering thread
//!   copied of its own ring when it recorded the trigger (`with_held`);
//! - under a streaming policy, the stream: the blocks of the window read back from where the
//!   sinks wrote them (`history`, `Sinks::window`), and the threads' current blocks
//!   (`Shared::peek_pool_lanes`) after the writer's queue (`stream_blocks`);
//! - and always the names the recording knows (every thread's name, every interned string and
//!   label), into one block of thread 0, so that the snapshot reads alone, and the pinned
//!   events its window does not hold (`pinned_blocks`).
//!
//! Nothing in the rings or the stream changes: an event recorded while the snapshot is taken
//! is in the snapshot or still in its ring (or stream); never lost because of the snapshot.
//!
//! The file is created new (never over anything that exists) and readable by its owner only.
//! When it cannot be written whole (a full disk), what was written is removed, and the error
//! returned: the recording goes on.

use crate::clock;
use crate::emit::session::{self, Shared};
use crate::incident::trigger::Cause;
use crate::locks::lock;
use crate::sinks::sink::Pace;
use crate::sinks::sink::Sinks;
use event_format::builtin;
use event_format::raw::seal_block_in_place;
use event_format::wire::{
    BLOCK_HEADER_LEN, BlockHeader, BlockWriter, Order, PushError, RecordIter, StopCause, Text, Value,
};
use std::collections::BTreeSet;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

/// What a snapshot wrote ([`Recording::snapshot`](crate::Recording::snapshot)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SnapshotInfo {
    /// The file it wrote.
    pub path: PathBuf,
    /// Its number among the recording's snapshots, from 1 (the header's `sequence`).
    pub sequence: u32,
    /// The events it holds (every record of its blocks, the names block's included).
    pub events: u64,
    /// The threads whose blocks it holds (the recorder's own, thread 0, not counted).
    pub threads: usize,
    /// The time of its earliest and latest event, in the recording's clock ticks; `None`
    /// when it holds no event of a thread.
    pub span: Option<(u64, u64)>,
    /// `span` as a duration, by the recording's clock.
    pub duration: std::time::Duration,
}

/// Serves a control request for a snapshot (`@snapshot PATH`, docs/FORMAT.md, "Control
/// protocol") on the writer thread: the reply says what was written, or why not.
pub(crate) fn requested(shared: &Shared, request: &str) -> Result<String, String> {
    let path = request[event_format::ring::SNAPSHOT_REQUEST.trim_end().len()..].trim();
    if path.is_empty() || !Path::new(path).is_absolute() {
        return Err(format!("a snapshot request names the new file's absolute path, not `{path}`"));
    }
    let info = take(shared, Path::new(path), Cause::on_demand()).map_err(|e| e.to_string())?;
    Ok(format!(
        "{}: {} events of {} threads over {:.6} s",
        info.path.display(),
        info.events,
        info.threads,
        info.duration.as_secs_f64()
    ))
}

/// On the writer thread, every 20 ms or so: fires the `lost` trigger when events were lost
/// since the last look (`lost_seen`), and takes the triggered snapshots whose `post` window
/// is over. A snapshot that cannot be taken is said in one line; the recording goes on.
pub(crate) fn serve(shared: &Shared) {
    let Some(triggers) = &shared.incidents.triggers else { return };
    // The stop takes what is left while it holds this (`Triggers::serving`).
    let Ok(_serving) = triggers.serving.try_lock() else { return };
    notice_losses(shared, triggers);
    for pending in triggers.ready(std::time::Instant::now()) {
        triggered(shared, triggers, pending.cause, pending.held);
        triggers.taken();
    }
}

/// At the stop, while the recording still runs: takes every pending snapshot (their `post`
/// windows end with the recording), and says what the rate policies declined since the last
/// snapshot each took.
pub(crate) fn at_stop(shared: &Shared) {
    let Some(triggers) = &shared.incidents.triggers else { return };
    // Waits for the writer thread to finish the snapshots it took out of the list.
    let _serving = crate::locks::lock(&triggers.serving);
    // Losses since the writer thread last looked (it looks about every 20 ms) are noticed
    // here, so that a `lost` trigger misses none.
    notice_losses(shared, triggers);
    for pending in triggers.all_pending() {
        triggered(shared, triggers, pending.cause, pending.held);
        triggers.taken();
    }
    for line in triggers.declined_lines() {
        eprintln!("event-runtime: {line}");
    }
    let dropped = triggers.pins_dropped();
    if dropped > 0 {
        eprintln!(
            "event-runtime: {dropped} pinned events left the pin ring to make room for newer ones (it keeps the latest {}): snapshots hold the latest only",
            crate::incident::trigger::PIN_RECORDS
        );
    }
}

/// Fires the `lost` trigger when events were lost since the last look: unattributed, or
/// waiting in the recorder's reports.
fn notice_losses(shared: &Shared, triggers: &crate::incident::trigger::Triggers) {
    if !triggers.watches_losses() {
        return;
    }
    let lost = shared.lost_here().saturating_add(lock(&shared.writer.reports).iter().map(|r| r.1).sum());
    if lost > triggers.lost_seen.swap(lost, Ordering::Relaxed) {
        triggers.on_lost(shared.time.now());
    }
}

/// Takes a triggered snapshot into the next path of the triggers' pattern, with the blocks
/// its triggering thread `held` (copies of its own ring, `trigger::Pending::held`).
pub(crate) fn triggered(
    shared: &Shared,
    triggers: &crate::incident::trigger::Triggers,
    cause: Cause,
    held: Vec<Box<[u8]>>,
) {
    let path = |sequence| triggers.path(sequence).map_err(io::Error::other);
    let taken = take_numbered(shared, path, cause, held);
    if let Err(e) = taken {
        eprintln!("event-runtime: a triggered snapshot was not taken: {e}");
    }
}

/// Takes a snapshot of `shared`'s rings into a new file at `path`.
pub(crate) fn take(shared: &Shared, path: &Path, cause: Cause) -> io::Result<SnapshotInfo> {
    take_numbered(shared, |_| Ok(path.to_owned()), cause, Vec::new())
}

/// Takes a snapshot of `shared`'s rings into a new file at the path `path` gives for its
/// sequence number.
fn take_numbered(
    shared: &Shared,
    path: impl FnOnce(u32) -> io::Result<PathBuf>,
    cause: Cause,
    held: Vec<Box<[u8]>>,
) -> io::Result<SnapshotInfo> {
    if shared.is_parents() || !session::is_running() {
        return Err(io::Error::other("the recording is stopping or is not this process's; no snapshot taken"));
    }
    let taken_time = shared.time.now();
    let taken_wall_ns = if shared.time.is_deterministic() { 0 } else { clock::wall_ns() };
    let sequence = shared.incidents.snapshots.fetch_add(1, Ordering::Relaxed) + 1;
    let path = &path(sequence)?;

    // The file first: nothing is copied for a path that cannot be written.
    let file = create_new(path)?;
    // A second descriptor of it: the sink gives its own up on a write error, and this one
    // tells whether the path still names our file when it is removed.
    let ours = file.try_clone()?;

    let mut blocks = window(shared, &cause, held, taken_time)?;
    let pinned = pinned_blocks(shared, &blocks);
    let (names, recorder_sequence) = renumber(shared, &mut blocks, taken_time);
    let header = snapshot_header(shared, cause, taken_wall_ns, taken_time, sequence)?;
    let contents = Contents { header, names, pinned, blocks, recorder_sequence };
    write_file(shared, path, file, &ours, sequence, taken_time, contents)
}

/// The blocks of a snapshot's window, unsealed: the stream's (read back) or the rings' (with
/// the blocks `held` that the triggering thread copied), from the `pre=` window's start and
/// up to the `post=` window's end when the cause has them.
fn window(shared: &Shared, cause: &Cause, held: Vec<Box<[u8]>>, taken_time: u64) -> io::Result<Vec<Box<[u8]>>> {
    let from = cause.pre.map(|pre| {
        let ticks = (pre.as_nanos() * u128::from(shared.clock.ticks_per_second) / 1_000_000_000) as u64;
        cause.trigger_time.unwrap_or(taken_time).saturating_sub(ticks)
    });
    let mut blocks = if shared.streaming {
        stream_blocks(shared, from, cause.trigger_time.unwrap_or(taken_time))?
    } else {
        newest_runs(with_held(copy_blocks(shared)?, held))
    };
    if let Some(from) = from {
        blocks = from_time(blocks, from);
    }
    if let Some(until) = cause.until {
        // The window ends with the `post=` window (or at the trigger): blocks that start after
        // it hold only later events (the writer took the snapshot a while after).
        blocks.retain(|b| {
            let h = BlockHeader::read(Order::NATIVE, b);
            h.thread == 0 || h.base_time <= until
        });
    }
    Ok(blocks)
}

/// Numbers thread 0's blocks of the window anew, after the names blocks made here, and seals
/// every block; returns the names blocks and the next number of thread 0's blocks.
fn renumber(shared: &Shared, blocks: &mut [Box<[u8]>], taken_time: u64) -> (Vec<Box<[u8]>>, u64) {
    let bs = shared.block_size;
    // Thread 0's blocks are numbered anew: the names block first, then any loss report the
    // ring file's reading wrote, then the clean-stop marker.
    let first_time = blocks.iter().map(|b| BlockHeader::read(Order::NATIVE, b).base_time).min().unwrap_or(taken_time);
    let names = names_blocks(shared, bs, first_time.min(taken_time));
    let mut recorder_sequence = names.len() as u64;
    for block in blocks.iter_mut() {
        let mut header = BlockHeader::read(Order::NATIVE, block);
        if header.thread == 0 {
            header.sequence = recorder_sequence;
            recorder_sequence += 1;
            header.write(Order::NATIVE, block);
        }
        seal_block_in_place(Order::NATIVE, block);
    }
    (names, recorder_sequence)
}

/// The snapshot's stream header: the recording's, with the snapshot's properties.
fn snapshot_header(
    shared: &Shared,
    cause: Cause,
    taken_wall_ns: i64,
    taken_time: u64,
    sequence: u32,
) -> io::Result<Vec<u8>> {
    let mut header = shared.header.clone();
    header.properties.snapshot = Some(event_format::wire::Snapshot {
        taken_wall_ns,
        taken_time,
        sequence,
        not_taken: cause.not_taken,
        cause: cause.cause,
        trigger_code: cause.trigger_code,
        trigger_time: cause.trigger_time.unwrap_or(taken_time),
        trigger: cause.trigger,
    });
    header.encode().map_err(io::Error::other)
}

/// What a snapshot file holds, in this order, before its clean-stop marker.
struct Contents {
    header: Vec<u8>,
    /// The names the recording knows, in blocks of thread 0.
    names: Vec<Box<[u8]>>,
    /// The pinned events the window does not hold.
    pinned: Vec<Box<[u8]>>,
    /// The window's blocks, sealed.
    blocks: Vec<Box<[u8]>>,
    /// The next number of thread 0's blocks.
    recorder_sequence: u64,
}

/// Writes a snapshot's `contents` into `file` (new, at `path`; `ours` is a second descriptor
/// of it) and ends it with the clean-stop marker; what it wrote. A file that cannot be
/// written whole is removed.
fn write_file(
    shared: &Shared,
    path: &Path,
    file: std::fs::File,
    ours: &std::fs::File,
    sequence: u32,
    taken_time: u64,
    contents: Contents,
) -> io::Result<SnapshotInfo> {
    let Contents { header, names, pinned, blocks, recorder_sequence } = contents;
    let mut info = SnapshotInfo {
        path: path.to_owned(),
        sequence,
        events: 0,
        threads: 0,
        span: None,
        duration: std::time::Duration::ZERO,
    };
    let mut threads = BTreeSet::new();
    let mut sinks = Sinks::new(Some((path.to_owned(), file)), false, shared.pack, shared.block_size, None);
    sinks.write(&header);
    for block in names.iter().chain(&pinned).chain(&blocks) {
        let h = BlockHeader::read(Order::NATIVE, block);
        if h.thread != 0 {
            let end = (BLOCK_HEADER_LEN + h.used as usize).min(block.len());
            for record in RecordIter::new(&block[BLOCK_HEADER_LEN..end], Order::NATIVE, h.base_time).flatten() {
                threads.insert(h.thread);
                let (a, b) = info.span.unwrap_or((record.time, record.time));
                info.span = Some((a.min(record.time), b.max(record.time)));
            }
        }
        sinks.write_block(block, Pace::Keep);
    }
    sinks.advance_recorder_sequence(recorder_sequence);
    sinks.write_stop(taken_time, StopCause::Stopped);
    info.events = sinks.written().events;
    info.threads = threads.len();
    if let Some((a, b)) = info.span {
        let tps = shared.clock.ticks_per_second.max(1) as u128;
        let ns = u128::from(b - a) * 1_000_000_000 / tps;
        info.duration = std::time::Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX));
    }
    sinks.flush_file();
    if let Err(e) = sinks.finish() {
        // A snapshot cut short is no snapshot: ours, made here, removed (`discard` checks
        // that the path still names our file).
        sinks.discard_as(path, ours);
        return Err(io::Error::other(format!(
            "the snapshot {} was not written whole and is removed: {e}",
            path.display()
        )));
    }
    sinks.close_file();
    Ok(info)
}

/// Creates the snapshot's file, new, readable by its owner only: a path that exists is
/// never written over (it may be anything: another snapshot, a file of the user's).
fn create_new(path: &Path) -> io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path).map_err(|e| {
        if e.kind() == io::ErrorKind::AlreadyExists {
            io::Error::new(
                e.kind(),
                format!("{} exists; a snapshot never writes over a file: choose another path", path.display()),
            )
        } else {
            io::Error::new(
                e.kind(),
                format!("cannot create the snapshot {}: {e}; choose a writable path", path.display()),
            )
        }
    })
}

/// The rings' blocks as copied now (`blocks`), with the blocks a triggering thread `held`
/// (its own ring, copied at the trigger and during its `post=N` window): one block of each
/// (thread, sequence), the copy that holds more records when both have it. A thread whose
/// ring went round past its newest held block before the rings were copied (it recorded more
/// than its ring holds since) keeps its held blocks only, so that its events in the snapshot
/// follow one another without a gap: the window ends at its trigger (and `post=` events).
fn with_held(blocks: Vec<Box<[u8]>>, held: Vec<Box<[u8]>>) -> Vec<Box<[u8]>> {
    if held.is_empty() {
        return blocks;
    }
    use std::collections::{BTreeMap, BTreeSet};
    let key = |b: &[u8]| {
        let h = BlockHeader::read(Order::NATIVE, b);
        (h.thread, h.sequence, h.used)
    };
    let mut kept: BTreeMap<(u64, u64), Box<[u8]>> = BTreeMap::new();
    for block in held {
        let (thread, seq, used) = key(&block);
        if kept.get(&(thread, seq)).is_none_or(|b| key(b).2 < used) {
            kept.insert((thread, seq), block);
        }
    }
    // Each held thread's newest held block: the copies taken now follow on only when they
    // still hold that block (their copy of it replaces the held one, which may be partial:
    // the block being written when it was held), else the thread's ring went round past it.
    let newest_held: BTreeMap<u64, u64> = kept.keys().map(|&(t, s)| (t, s)).collect();
    let still: BTreeSet<u64> =
        blocks.iter().map(|b| key(b)).filter(|&(t, s, _)| newest_held.get(&t) == Some(&s)).map(|(t, _, _)| t).collect();
    let mut out = Vec::new();
    for block in blocks {
        let (thread, seq, used) = key(&block);
        match newest_held.get(&thread) {
            Some(&held_to) if thread != 0 => {
                if (seq <= held_to || still.contains(&thread))
                    && kept.get(&(thread, seq)).is_none_or(|b| key(b).2 < used)
                {
                    kept.insert((thread, seq), block);
                }
            }
            _ => out.push(block),
        }
    }
    let mut held: Vec<Box<[u8]>> = kept.into_values().collect();
    held.append(&mut out);
    held
}

/// `blocks` with each thread's newest run of consecutive blocks only: a ring that its thread
/// went on writing while the writer copied it may have lost blocks in the middle of the copy
/// (overwritten between two reads); the blocks older than such a gap go too, as a ring keeps
/// only its latest, so that every thread's events in the snapshot follow one another.
fn newest_runs(blocks: Vec<Box<[u8]>>) -> Vec<Box<[u8]>> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut sequences: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for b in &blocks {
        let h = BlockHeader::read(Order::NATIVE, b);
        if h.thread != 0 {
            sequences.entry(h.thread).or_default().insert(h.sequence);
        }
    }
    // Each thread's first block of the run that ends with its newest.
    let first: BTreeMap<u64, u64> = sequences
        .into_iter()
        .map(|(thread, seqs)| {
            let mut from = *seqs.last().unwrap_or(&0);
            while from > 0 && seqs.contains(&(from - 1)) {
                from -= 1;
            }
            (thread, from)
        })
        .collect();
    blocks
        .into_iter()
        .filter(|b| {
            let h = BlockHeader::read(Order::NATIVE, b);
            h.thread == 0 || first.get(&h.thread).is_none_or(|&from| h.sequence >= from)
        })
        .collect()
}

/// `blocks` without those of a thread that hold only events before `from` (`pre=`): a block
/// whose thread's next block starts before `from` (a thread's records are in time order).
fn from_time(blocks: Vec<Box<[u8]>>, from: u64) -> Vec<Box<[u8]>> {
    use std::collections::BTreeMap;
    let mut starts: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for block in &blocks {
        let h = BlockHeader::read(Order::NATIVE, block);
        starts.insert((h.thread, h.sequence), h.base_time);
    }
    blocks
        .into_iter()
        .filter(|block| {
            let h = BlockHeader::read(Order::NATIVE, block);
            h.thread == 0 || starts.get(&(h.thread, h.sequence + 1)).is_none_or(|&next| next >= from)
        })
        .collect()
}

/// Under a streaming policy: the blocks of the window, unsealed, read back from what the
/// sinks wrote (`history`: from `from`, or as much as the buffer holds before `trigger`, and
/// everything after), and what they do not have yet: the pool lanes' current blocks and, with
/// a ring file, the slots' current blocks (copied as committed now), and the blocks queued to
/// the writer thread (written then, or waited for). One block of each (thread, sequence), the
/// fuller copy; ordered by thread and sequence, the reports of thread 0 last.
fn stream_blocks(shared: &Shared, from: Option<u64>, trigger: u64) -> io::Result<Vec<Box<[u8]>>> {
    // The threads' current blocks first, then the queue written: a block handed on meanwhile
    // is in one or the other (or both: the fuller copy is kept), never in neither.
    let mut live = shared.peek_pool_lanes();
    if shared.ring_file.is_some() {
        live.extend(copy_blocks(shared)?);
    }
    if crate::emit::buffer::is_writer() {
        crate::writer::write::write_queued(shared);
    } else {
        shared.exchange.wait_drained(std::time::Duration::from_secs(1));
    }
    let (window, newest) = {
        let sinks = lock(&shared.writer.sinks);
        let window = sinks.window(from, trigger);
        let threads: BTreeSet<u64> = live.iter().map(|b| BlockHeader::read(Order::NATIVE, b).thread).collect();
        let newest: std::collections::BTreeMap<u64, Option<u64>> =
            threads.into_iter().map(|t| (t, sinks.newest_written(t))).collect();
        (window, newest)
    };
    let header_bytes = shared.header.encode().map_err(io::Error::other)?;
    let written = read_window(&header_bytes, shared.block_size, window);
    let mut kept: std::collections::BTreeMap<(u64, u64), Box<[u8]>> = std::collections::BTreeMap::new();
    let mut reports = Vec::new();
    let unwritten = |b: &[u8]| {
        let h = BlockHeader::read(Order::NATIVE, b);
        newest.get(&h.thread).copied().flatten().is_none_or(|n| h.sequence > n)
    };
    for block in written.into_iter().chain(live.into_iter().filter(|b| unwritten(b))) {
        let h = BlockHeader::read(Order::NATIVE, &block);
        if h.thread == 0 {
            reports.push(block);
        } else if kept.get(&(h.thread, h.sequence)).is_none_or(|b| BlockHeader::read(Order::NATIVE, b).used < h.used) {
            kept.insert((h.thread, h.sequence), block);
        }
    }
    Ok(kept.into_values().chain(reports).collect())
}

/// The blocks of `window` read back and decoded (unpacked, whatever the packing), each as
/// an unsealed block of `block_size` bytes numbered as in the recording. A block that cannot
/// be read (its file cut short under the recording) or decoded is left out: the snapshot then
/// shows its place as a gap.
fn read_window(
    header: &[u8],
    block_size: u32,
    window: Vec<(crate::incident::history::Entry, crate::sinks::sink::WindowBytes)>,
) -> Vec<Box<[u8]>> {
    use crate::sinks::sink::WindowBytes;
    let mut out = Vec::new();
    for chunk in window.chunks(64) {
        let mut bytes = header.to_vec();
        let mut starts = Vec::with_capacity(chunk.len());
        for (entry, source) in chunk {
            let at = bytes.len();
            match source {
                WindowBytes::Copied(b) => bytes.extend_from_slice(b),
                WindowBytes::File(file, offset) => {
                    bytes.resize(at + entry.len as usize, 0);
                    if read_at(file, &mut bytes[at..], *offset).is_err() {
                        bytes.truncate(at);
                        continue;
                    }
                }
            }
            starts.push((at as u64, *entry));
        }
        let Ok(mut decoder) = event_format::decode::Decoder::new(&bytes[..]) else { continue };
        let (mut unpacker, mut spare) = (event_format::wire::Unpacker::new(), Vec::new());
        // The records as written (records by callsite not expanded): they fit the block.
        while let Some(block) = decoder.next_pending() {
            let Ok(block) = block.and_then(|b| b.unpack_as_written(&mut unpacker, &mut spare)) else { continue };
            let Ok(i) = starts.binary_search_by_key(&block.offset, |s| s.0) else { continue };
            let entry = starts[i].1;
            let mut raw = vec![0u8; block_size as usize].into_boxed_slice();
            let len = block.records.len().min(raw.len() - BLOCK_HEADER_LEN);
            let header = BlockHeader { flags: 0, sequence: entry.sequence, used: len as u32, crc: 0, ..block.header };
            header.write(Order::NATIVE, &mut raw);
            Order::NATIVE.put_u32(&mut raw[event_format::raw::BLOCK_USED_AT..], len as u32);
            raw[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + len].copy_from_slice(&block.records[..len]);
            out.push(raw);
        }
    }
    out
}

/// Reads `buf.len()` bytes of `file` at `offset`, without moving a cursor another reader of
/// the file may use.
fn read_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(not(unix))]
    {
        use std::io::Seek;
        let mut file = file.try_clone()?;
        file.seek(io::SeekFrom::Start(offset))?;
        file.read_exact(buf)
    }
}

/// Every ring's blocks, unsealed: the ring file's (as read live), then the heap rings'.
fn copy_blocks(shared: &Shared) -> io::Result<Vec<Box<[u8]>>> {
    let mut blocks = Vec::new();
    if let Some(ring) = &shared.ring_file
        && !ring.cut_short()
    {
        use event_format::ring::{RingReader, RingStream};
        let file = ring.reopen()?;
        let reader =
            RingReader::open(file, event_format::decode::DecodeOptions::default()).map_err(io::Error::other)?;
        let skip = reader.header_bytes().len();
        let mut stream = RingStream::new(reader);
        let mut header = vec![0u8; skip];
        stream.read_exact(&mut header)?;
        loop {
            let mut block = vec![0u8; shared.block_size as usize].into_boxed_slice();
            match stream.read_exact(&mut block) {
                Ok(()) => blocks.push(block),
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                Err(e) => return Err(e),
            }
        }
    }
    for lane in shared.ring_lanes() {
        blocks.extend(lane.copy_ring(0, u64::MAX));
    }
    Ok(blocks)
}

/// The pinned events (`EVENT_PIN`) that the rings copied into `blocks` no longer hold: for
/// each thread, a block of its own numbered just below its oldest block there, holding its
/// pinned events older than that block (docs/FORMAT.md, "Snapshot"). A thread whose ring
/// still holds its block 0 (nothing overwritten) has them there already; one without blocks
/// in the snapshot gets them as its block 0. Sealed.
fn pinned_blocks(shared: &Shared, blocks: &[Box<[u8]>]) -> Vec<Box<[u8]>> {
    let Some(triggers) = &shared.incidents.triggers else { return Vec::new() };
    let pinned = triggers.pinned_now();
    if pinned.is_empty() {
        return Vec::new();
    }
    // Each thread's oldest block in the snapshot: (sequence, base time).
    let mut oldest: std::collections::BTreeMap<u64, (u64, u64)> = std::collections::BTreeMap::new();
    for block in blocks {
        let h = BlockHeader::read(Order::NATIVE, block);
        if h.thread != 0 {
            let e = oldest.entry(h.thread).or_insert((h.sequence, h.base_time));
            if h.sequence < e.0 {
                *e = (h.sequence, h.base_time);
            }
        }
    }
    let mut by_thread: std::collections::BTreeMap<u64, Vec<&crate::incident::trigger::Pinned>> =
        std::collections::BTreeMap::new();
    for p in &pinned {
        match oldest.get(&p.thread) {
            Some(&(0, _)) => {}
            Some(&(_, base)) if p.time >= base => {}
            _ => by_thread.entry(p.thread).or_default().push(p),
        }
    }
    let mut out = Vec::new();
    for (thread, records) in by_thread {
        let sequence = oldest.get(&thread).map_or(0, |&(first, _)| first - 1);
        let base_time = records.iter().map(|p| p.time).min().unwrap_or(0);
        let header = BlockHeader { flags: 0, sequence, thread, base_time, lost: 0, used: 0, crc: 0 };
        let mut writer = BlockWriter::new(Order::NATIVE, shared.block_size, &header);
        for p in records {
            let Some(Ok(record)) = RecordIter::new(&p.record, Order::NATIVE, p.time).next() else { continue };
            let event_format::decode::Entry::Event(event) = shared.catalog.entry(record, thread, Order::NATIVE) else {
                continue;
            };
            let values: Vec<Value<'_>> = event.values().collect();
            // The pin ring is smaller than a block: a record that does not fit is left out.
            let _ = writer.push(event.desc.wire, p.time, &values);
        }
        if !writer.is_empty() {
            out.push(writer.finish().into_boxed_slice());
        }
    }
    out
}

/// Blocks of thread 0 that name every thread, interned string and label the recording
/// knows, at `time`, numbered from 0.
fn names_blocks(shared: &Shared, bs: u32, time: u64) -> Vec<Box<[u8]>> {
    let threads: Vec<(u64, String)> =
        lock(&shared.writer.names).iter().map(|(t, name, _)| (*t, name.clone())).collect();
    let mut interned: Vec<(u64, String)> =
        lock(&shared.writer.interned).iter().map(|(s, &id)| (id, s.clone())).collect();
    interned.sort();
    let labels: Vec<(u64, u64)> = lock(&shared.writer.labels).iter().map(|(&a, &id)| (a, id)).collect();
    let mut records: Vec<(u16, Vec<Value<'_>>)> = Vec::new();
    for (thread, name) in &threads {
        records.push((builtin::THREAD_NAME, vec![Value::Word(*thread), Value::Str(Text::new(name))]));
    }
    for (id, text) in &interned {
        records.push((builtin::INTERN, vec![Value::Word(*id), Value::Str(Text::new(text))]));
    }
    for (address, id) in &labels {
        records.push((builtin::LABEL, vec![Value::Address(*address), Value::Word(*id)]));
    }
    let mut out = Vec::new();
    let new_block = |sequence: u64| {
        let header = BlockHeader { flags: 0, sequence, thread: 0, base_time: time, lost: 0, used: 0, crc: 0 };
        BlockWriter::new(Order::NATIVE, bs, &header)
    };
    let mut writer = new_block(0);
    for (code, values) in &records {
        match writer.push(*code, time, values) {
            Ok(()) => {}
            Err(PushError::Full) => {
                let full = std::mem::replace(&mut writer, new_block(out.len() as u64 + 1));
                out.push(full.finish().into_boxed_slice());
                // Fits a new block: `push` cut its strings to the block.
                let _ = writer.push(*code, time, values);
            }
            // A name longer than any block holds even cut: cannot happen (strings are cut
            // to the block); left out if it did.
            Err(_) => {}
        }
    }
    if !writer.is_empty() {
        out.push(writer.finish().into_boxed_slice());
    }
    out
}

#[cfg(all(test, not(loom)))]
mod tests {
    /// A thread's copied ring with a gap in the middle (blocks overwritten while the writer
    /// copied it): the blocks before the gap go, the newest run stays, thread 0's stay.
    #[test]
    fn a_copy_with_a_gap_keeps_each_threads_newest_run() {
        use event_format::wire::{BlockHeader, BlockWriter, Order};
        let block = |thread: u64, sequence: u64| -> Box<[u8]> {
            let header = BlockHeader { thread, sequence, ..BlockHeader::default() };
            BlockWriter::new(Order::NATIVE, 256, &header).finish().into_boxed_slice()
        };
        let blocks =
            vec![block(2, 10), block(2, 11), block(2, 14), block(2, 15), block(3, 4), block(0, 1), block(2, 16)];
        let kept: Vec<(u64, u64)> = super::newest_runs(blocks)
            .iter()
            .map(|b| {
                let h = BlockHeader::read(Order::NATIVE, b);
                (h.thread, h.sequence)
            })
            .collect();
        assert_eq!(kept, [(2, 14), (2, 15), (3, 4), (0, 1), (2, 16)]);
    }
}
