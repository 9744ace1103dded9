//! Snapshots: what a running recording's rings hold at one moment, written as a whole,
//! independently readable event file while the program goes on recording (issue 32;
//! docs/guide/keeping-the-incident.md).
//!
//! A snapshot is taken off the recording threads: by the thread that asks
//! ([`Recording::snapshot`](crate::Recording::snapshot)), or by the writer thread for a
//! request through the ring file's control page (`event-dump control RING --snapshot OUT`).
//! It copies:
//!
//! - every heap ring (`ring` without a ring file, or the rings of threads that found no slot),
//!   one block at a time under its lane's lock (`lane::Lane::copy_ring`): a recording thread
//!   waits at most for the copy of one block, and only on its cold path (a block change);
//! - the ring file's blocks, as a reader reads a live ring file (`RingStream`: each slot
//!   copied, then checked against a second read), which takes no lock at all;
//! - the names the recording knows (every thread's name, every interned string and label),
//!   into one block of thread 0, so that the snapshot reads alone even when the rings no
//!   longer hold the events that named them.
//!
//! Nothing in the rings changes: an event recorded while the snapshot is taken is in the
//! snapshot (if the copy reached its block after it) or still in its ring (for the next
//! snapshot, the ring file, the stop); never lost because of the snapshot.
//!
//! The file is created new (never over anything that exists) and readable by its owner only.
//! When it cannot be written whole (a full disk), what was written is removed, and the error
//! returned: the recording goes on.

use crate::clock;
use crate::config::Policy;
use crate::locks::lock;
use crate::session::{self, Shared};
use crate::sink::Sinks;
use crate::trigger::Cause;
use event_format::builtin;
use event_format::wire::{
    BLOCK_HEADER_LEN, BlockHeader, BlockWriter, Order, PushError, RecordIter, StopCause, Text, Value,
    seal_block_in_place,
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
    let Some(triggers) = &shared.triggers else { return };
    notice_losses(shared, triggers);
    for pending in triggers.ready(std::time::Instant::now()) {
        triggered(shared, triggers, pending.cause);
    }
}

/// At the stop, while the recording still runs: takes every pending snapshot (their `post`
/// windows end with the recording), and says what the rate policies declined since the last
/// snapshot each took.
pub(crate) fn at_stop(shared: &Shared) {
    let Some(triggers) = &shared.triggers else { return };
    // Losses since the writer thread last looked (it looks about every 20 ms) are noticed
    // here, so that a `lost` trigger misses none.
    notice_losses(shared, triggers);
    for pending in triggers.all_pending() {
        triggered(shared, triggers, pending.cause);
    }
    for line in triggers.declined_lines() {
        eprintln!("event-runtime: {line}");
    }
    let dropped = triggers.pins_dropped();
    if dropped > 0 {
        eprintln!(
            "event-runtime: {dropped} pinned events left the pin ring to make room for newer ones (it keeps the latest {}): snapshots hold the latest only",
            crate::trigger::PIN_RECORDS
        );
    }
}

/// Fires the `lost` trigger when events were lost since the last look: unattributed, or
/// waiting in the recorder's reports.
fn notice_losses(shared: &Shared, triggers: &crate::trigger::Triggers) {
    if !triggers.watches_losses() {
        return;
    }
    let lost = shared.lost_here().saturating_add(lock(&shared.reports).iter().map(|r| r.1).sum());
    if lost > triggers.lost_seen.swap(lost, Ordering::Relaxed) {
        triggers.on_lost(shared.time.now());
    }
}

/// Takes a triggered snapshot into the next path of the triggers' pattern.
pub(crate) fn triggered(shared: &Shared, triggers: &crate::trigger::Triggers, cause: Cause) {
    let taken = take_numbered(shared, |sequence| triggers.path(sequence).map_err(io::Error::other), cause);
    if let Err(e) = taken {
        eprintln!("event-runtime: a triggered snapshot was not taken: {e}");
    }
}

/// Takes a snapshot of `shared`'s rings into a new file at `path`.
pub(crate) fn take(shared: &Shared, path: &Path, cause: Cause) -> io::Result<SnapshotInfo> {
    take_numbered(shared, |_| Ok(path.to_owned()), cause)
}

/// Takes a snapshot of `shared`'s rings into a new file at the path `path` gives for its
/// sequence number.
fn take_numbered(
    shared: &Shared,
    path: impl FnOnce(u32) -> io::Result<PathBuf>,
    cause: Cause,
) -> io::Result<SnapshotInfo> {
    if shared.policy != Policy::Ring {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a snapshot needs a recording whose policy keeps the latest events (EVENT_POLICY=ring); under switch and fill every event already goes to the event file",
        ));
    }
    if shared.is_parents() || !session::is_running() {
        return Err(io::Error::other("the recording is stopping or is not this process's; no snapshot taken"));
    }
    let taken_time = shared.time.now();
    let taken_wall_ns = if shared.time.is_deterministic() { 0 } else { clock::wall_ns() };
    let sequence = shared.snapshots.fetch_add(1, Ordering::Relaxed) + 1;
    let path = &path(sequence)?;

    // The file first: nothing is copied for a path that cannot be written.
    let file = create_new(path)?;
    // A second descriptor of it: the sink gives its own up on a write error, and this one
    // tells whether the path still names our file when it is removed.
    let ours = file.try_clone()?;

    let mut blocks = copy_blocks(shared)?;
    let bs = shared.block_size;
    let pinned = pinned_blocks(shared, &blocks);
    // Thread 0's blocks are numbered anew: the names block first, then any loss report the
    // ring file's reading wrote, then the clean-stop marker.
    let first_time = blocks.iter().map(|b| BlockHeader::read(Order::NATIVE, b).base_time).min().unwrap_or(taken_time);
    let names = names_blocks(shared, bs, first_time.min(taken_time));
    let mut recorder_sequence = names.len() as u64;
    for block in &mut blocks {
        let mut header = BlockHeader::read(Order::NATIVE, block);
        if header.thread == 0 {
            header.sequence = recorder_sequence;
            recorder_sequence += 1;
            header.write(Order::NATIVE, block);
        }
        seal_block_in_place(Order::NATIVE, block);
    }

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
    let header_bytes = header.encode().map_err(io::Error::other)?;

    let mut info = SnapshotInfo {
        path: path.to_owned(),
        sequence,
        events: 0,
        threads: 0,
        span: None,
        duration: std::time::Duration::ZERO,
    };
    let mut threads = BTreeSet::new();
    let mut sinks = Sinks::new(Some((path.to_owned(), file)), false, shared.pack, bs, None);
    sinks.write(&header_bytes);
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
        sinks.write_block(block, false);
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
        sinks.discard_as(path, &ours);
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
        blocks.extend(lane.copy_ring());
    }
    Ok(blocks)
}

/// The pinned events (`EVENT_PIN`) that the rings copied into `blocks` no longer hold: for
/// each thread, a block of its own numbered just below its oldest block there, holding its
/// pinned events older than that block (docs/FORMAT.md, "Snapshot"). A thread whose ring
/// still holds its block 0 (nothing overwritten) has them there already; one without blocks
/// in the snapshot gets them as its block 0. Sealed.
fn pinned_blocks(shared: &Shared, blocks: &[Box<[u8]>]) -> Vec<Box<[u8]>> {
    let Some(triggers) = &shared.triggers else { return Vec::new() };
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
    let mut by_thread: std::collections::BTreeMap<u64, Vec<&crate::trigger::Pinned>> =
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
    let threads: Vec<(u64, String)> = lock(&shared.names).iter().map(|(t, name, _)| (*t, name.clone())).collect();
    let mut interned: Vec<(u64, String)> = lock(&shared.interned).iter().map(|(s, &id)| (id, s.clone())).collect();
    interned.sort();
    let labels: Vec<(u64, u64)> = lock(&shared.labels).iter().map(|(&a, &id)| (a, id)).collect();
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
    use crate::event_set::TEST_SET as SET;
    use crate::{Policy, Recorder};
    use event_format::decode::{Catalog, Decoder, Entry};
    use event_format::wire::Value;

    /// The words of every `E` event of a stream, per thread, in order; and the thread names.
    fn read(
        bytes: &[u8],
    ) -> (std::collections::BTreeMap<u64, Vec<u64>>, Vec<String>, Option<event_format::wire::Stop>) {
        let mut decoder = Decoder::new(bytes).unwrap();
        assert!(decoder.header().properties.snapshot.is_some(), "the header says it is a snapshot");
        let catalog = Catalog::new(&decoder.header().sets);
        let (mut words, mut names, mut stop) = (std::collections::BTreeMap::<u64, Vec<u64>>::new(), Vec::new(), None);
        while let Some(block) = decoder.next_block() {
            let block = block.unwrap();
            if let Some(s) = block.stop() {
                stop = Some(s);
            }
            for entry in block.entries(&catalog) {
                if let Entry::Event(e) = entry {
                    let values: Vec<Value<'_>> = e.values().collect();
                    match (e.desc.name.as_str(), values.as_slice()) {
                        ("E", [Value::Word(w)]) => words.entry(block.header.thread).or_default().push(*w),
                        ("ThreadName", [_, Value::Str(s)]) => names.push(String::from_utf8_lossy(s.bytes).into_owned()),
                        _ => {}
                    }
                }
            }
        }
        (words, names, stop)
    }

    /// A snapshot of heap rings that went round: each thread's latest events, consecutive and
    /// ending with its last, every thread named although the rings lost their `ThreadName`;
    /// the recording goes on and its stop still has every event the rings keep.
    #[test]
    fn a_snapshot_holds_the_latest_events_of_every_thread_and_their_names() {
        let _serial = crate::session::TEST_RECORDING.lock().unwrap_or_else(|p| p.into_inner());
        let dir = std::env::temp_dir().join(format!("snapshot-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.evt");
        let _ = std::fs::remove_file(&path);
        let recording = Recorder::new()
            .sets(&[&SET])
            .policy(Policy::Ring)
            .block_size(1024)
            .buffer_size(64 << 10)
            .ring_threads(4)
            .memory()
            .start()
            .unwrap();
        let emit = |i: u64| crate::buffer::emit_event(&SET, 0, 8, &[], |w| w.word(i));
        std::thread::scope(|s| {
            for t in 0..3u64 {
                s.spawn(move || {
                    (0..5000).for_each(|i| emit(t * 100_000 + i));
                });
            }
        });
        let taken = recording.snapshot(&path).unwrap();
        let again = recording.snapshot(&path).unwrap_err();
        assert!(again.to_string().contains("never writes over"), "{again}");
        emit(7);
        recording.stop().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let (words, names, stop) = read(&bytes);
        assert_eq!(words.len(), 3, "three threads");
        for list in words.values() {
            let t = list[0] / 100_000;
            assert!(list.len() < 5000, "the ring went round: {}", list.len());
            assert_eq!(*list.last().unwrap(), t * 100_000 + 4999, "ends with the thread's last event");
            assert!(list.windows(2).all(|w| w[1] == w[0] + 1), "consecutive, in order");
        }
        assert!(names.len() >= 3, "every thread named: {names:?}");
        let stop = stop.expect("the snapshot ends with the clean-stop marker");
        assert_eq!(stop.events, taken.events);
        assert_eq!((taken.threads, taken.sequence), (3, 1));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
