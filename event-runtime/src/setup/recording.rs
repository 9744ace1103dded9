//! A running recording, as its owner holds it: [`flush`] what was recorded so far, read the
//! memory sink's [`bytes`](Recording::bytes), and [`stop`](Recording::stop) (or drop) it.
//!
//! The stop undoes the start in reverse: the crash handlers and the control selection go,
//! the built-in events stop, the stop takes what every thread committed to its lane (its
//! partial block, or its ring: `lane::Lane`; the block it is writing in a ring-file
//! slot, when the event file gets copies: `ringfile::SlotCopy`), whether the thread has ended, still runs or
//! is blocked, the writer thread drains and ends, the session is closed (every thread buffer
//! of it is then stale), and what only the stop can write (the lanes it took, the rings, the
//! ring file's copy, the last loss report) goes to the sinks.
//!
//! So every event a thread committed before the stop took its lane is in the stream; one it
//! was still writing then, or recorded later, is counted in [`lost_unattributed`]
//! (`crate::lost_unattributed`), and, when the thread notices before the stop ends, in the
//! stream's report too.

use crate::blocks::ringfile::SlotTake;
use crate::emit::buffer;
use crate::emit::session::{self, Shared};
use crate::locks::lock;
use crate::setup::crash;
use crate::sinks::sink::Pace;
use crate::writer::control;
use crate::writer::thread as writer;
use crate::writer::write;
use std::io;
use std::sync::Arc;
use std::time::Duration;

/// How long a flush waits for the writer thread.
const FLUSH_WAIT: Duration = Duration::from_secs(1);

/// A running recording. Dropping it stops it.
///
/// The stop collects what every thread recorded: a thread that ended, one still running (a
/// tokio worker, a thread never joined, a scoped thread whose thread-local destructors have
/// not run yet) and one that is blocked. Nothing needs to be joined or flushed first. An
/// event that a thread is recording at the very moment the stop takes its blocks, or records
/// after, is not in the stream; it is counted ([`lost_unattributed`](crate::lost_unattributed)).
#[derive(Debug)]
pub struct Recording {
    shared: Arc<Shared>,
    generation: u64,
    /// The writer thread's end, which the stop waits for (the thread is detached, never
    /// joined); `None` only when it could not start (then the recording never ran, and the
    /// stop removes the event file it made if that holds nothing) or after the stop.
    writer: Option<writer::WriterEnd>,
    stopped: bool,
}

/// In a child of `fork()`: the child's own recording, started on its first event
/// (`session::start_after_fork`), which the parent's `Recording`, copied into the child,
/// stops in its place. Taken out before it is stopped: never held while another lock is taken.
static ADOPTED: std::sync::Mutex<Option<Recording>> = std::sync::Mutex::new(None);

/// Keeps a forked child's own recording for the parent's `Recording` to stop. A copy of a
/// grandparent's one (the child forked again) is the parent's state: let go untouched.
pub(crate) fn adopt(recording: Recording) {
    let older = lock(&ADOPTED).replace(recording);
    if let Some(older) = older {
        older.abandon();
    }
}

/// Takes the adopted recording (`fork`'s *prepare* does not: adoption happens only in a
/// child, on its first event, and is never held across a lock).
fn take_adopted() -> Option<Recording> {
    lock(&ADOPTED).take()
}

impl Recording {
    /// The recording of `generation`, now current in the session, with its writer thread
    /// started. When the thread cannot be started, the recording is stopped again (dropped)
    /// and the error returned.
    pub(crate) fn begin(shared: Arc<Shared>, generation: u64) -> io::Result<Recording> {
        let mut recording = Recording { shared, generation, writer: None, stopped: false };
        debug_assert!(!recording.shared.is_parents(), "a recording starts in its own process");
        // Without its writer the recording cannot run: dropping it undoes the start.
        recording.writer = Some(writer::spawn(&recording.shared, generation)?);
        Ok(recording)
    }

    /// The memory sink's stream so far: the header and every block written. Empty without
    /// a memory sink. Under `switch` and `fill`, call [`flush`](crate::flush) first to include
    /// this thread's partial block.
    ///
    /// In a child of `fork()`, the child's own recording's stream.
    pub fn bytes(&self) -> Vec<u8> {
        if self.shared.is_parents() {
            return lock(&ADOPTED).as_ref().map(Recording::bytes).unwrap_or_default();
        }
        lock(&self.shared.writer.sinks).memory_copy()
    }

    /// The event file this recording writes, its pattern expanded (`EVENT_FILE=trace-%p.evt`
    /// gives `trace-4242.evt`): the path to read the trace from after the stop. `None`
    /// without an event file, or once writing it failed (said on stderr).
    ///
    /// In a child of `fork()`, the child's own recording's file.
    pub fn file_path(&self) -> Option<std::path::PathBuf> {
        if self.shared.is_parents() {
            return lock(&ADOPTED).as_ref().and_then(Recording::file_path);
        }
        lock(&self.shared.writer.sinks).file_path()
    }

    /// Seals the segment being written and starts the next (a recording of segments,
    /// [`Recorder::rotate`](crate::Recorder::rotate), `EVENT_ROTATE`); `event-dump control
    /// RINGFILE --rotate` asks the same of a running program. The writer thread does it, as
    /// it seals segments by size or age: this call waits for it, up to a second, and returns
    /// the number of the segment now being written. `None` when the recording writes no
    /// segments (or, in a child of `fork()`, has none of its own).
    pub fn rotate(&self) -> Option<u64> {
        if self.shared.is_parents() {
            return lock(&ADOPTED).as_ref().and_then(Recording::rotate);
        }
        let before = lock(&self.shared.writer.sinks).request_rotation()?;
        let deadline = std::time::Instant::now() + FLUSH_WAIT;
        loop {
            let now = lock(&self.shared.writer.sinks).segment_index();
            if now.is_some_and(|n| n > before) || std::time::Instant::now() >= deadline {
                return now;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Writes a snapshot of the latest events into a new file at `path`, while the recording
    /// goes on: a whole, independently readable event file, with every thread's name, the
    /// interned strings and the labels, and a header property that says it is a snapshot
    /// (docs/FORMAT.md, "Snapshot"); returns what it wrote. Under `ring` it holds what the
    /// rings hold now (in memory or in the ring file); under a streaming policy (`switch`,
    /// `wait`, `fill`) the buffer's worth of blocks before now, read back from what the
    /// recording wrote (the event file, its segments, the memory sink) and each thread's
    /// current block (docs/guide/keeping-the-incident.md, "Where a snapshot comes from").
    ///
    /// A recording thread waits for it at most for the copy of one of its blocks, and only
    /// when it changes blocks; an event recorded meanwhile is in the snapshot or still in its
    /// ring or stream. The file is created new: a path that exists is an error, never written
    /// over. A snapshot that cannot be written whole (a full disk) is removed and the error
    /// returned; the recording goes on either way.
    ///
    /// ```
    /// event_runtime::include_events!("../events.def");
    ///
    /// fn main() {
    ///     let dir = std::env::temp_dir().join(format!("snapshot-doc-{}", std::process::id()));
    ///     std::fs::create_dir_all(&dir).unwrap();
    ///     let recording = event_runtime::Recorder::new().policy(event_runtime::Policy::Ring).start().unwrap();
    ///     for i in 0..100u64 {
    ///         event!(ClientPhase, "work", i, 0);
    ///     }
    ///     let taken = recording.snapshot(dir.join("incident.evt")).unwrap();
    ///     assert!(taken.events >= 100 && taken.threads == 1);
    ///     // The recording goes on; the snapshot reads as any event file.
    ///     event!(ClientPhase, "after", 0u64, 0);
    ///     recording.stop().unwrap();
    ///     # std::fs::remove_dir_all(&dir).unwrap();
    /// }
    /// ```
    pub fn snapshot(&self, path: impl AsRef<std::path::Path>) -> io::Result<crate::writer::snapshot::SnapshotInfo> {
        if self.shared.is_parents() {
            let adopted = lock(&ADOPTED);
            return match adopted.as_ref() {
                Some(own) => own.snapshot(path),
                None => Err(io::Error::other("this child of fork() has recorded nothing; no snapshot taken")),
            };
        }
        crate::writer::snapshot::take(&self.shared, path.as_ref(), crate::incident::trigger::Cause::on_demand())
    }

    /// Stops recording and returns the memory sink's stream (empty without one). Errors
    /// when a sink could not be written, the writer thread ended early, or the ring file was
    /// lost; the recording is stopped all the same.
    ///
    /// In a child of `fork()` this stops the child's own recording (if it recorded anything)
    /// and returns its stream; the parent's recording is the parent's to stop.
    pub fn stop(mut self) -> io::Result<Vec<u8>> {
        if self.shared.is_parents() {
            self.let_go();
            return take_adopted().map_or(Ok(Vec::new()), Recording::stop);
        }
        let ended = self.end();
        let finished = lock(&self.shared.writer.sinks).finish();
        ended.and(finished)
    }

    /// A copy of the parent's recording in a child of `fork()`: nothing of it is ours; the
    /// writer thread it names does not exist here, and its channel is the parent's (never
    /// touched: forgotten).
    fn let_go(&mut self) {
        self.stopped = true;
        std::mem::forget(self.writer.take());
    }

    /// Lets go of a grandparent's recording copied into a forked child (`adopt`).
    fn abandon(mut self) {
        self.let_go();
    }

    /// Ends the recording; an error (already said on stderr) when the writer thread ended
    /// early.
    fn end(&mut self) -> io::Result<()> {
        if self.stopped {
            return Ok(());
        }
        if self.shared.is_parents() {
            self.let_go();
            session::forget_forked();
            if let Some(own) = take_adopted() {
                drop(own);
            }
            return Ok(());
        }
        self.stopped = true;
        let never_ran = self.writer.is_none();
        self.turn_off();
        // Every thread's committed records, taken before the pool closes: a thread that hands
        // a block on before its lane is taken still finds the writer there.
        let taken = self.shared.take_lanes();
        let slots = self.shared.take_slots();
        self.shared.exchange.close();
        let result = self.wait_for_writer();
        session::close(self.generation);
        let shared = &self.shared;
        let whole = write_the_rest(shared, taken, &slots);
        // The marker is the last block: a stop whose writer thread failed, or whose stream
        // misses the ring file's copy, is not clean.
        if result.is_ok() && whole {
            write::write_stop(shared);
        }
        close_sinks(shared, never_ran);
        result
    }

    /// The stop's first step, while the recording still runs: the triggered snapshots still
    /// waiting for their `post` window are taken, the handlers, the built-in events, the
    /// divert word and the selection turned off, and this thread's records handed on.
    fn turn_off(&self) {
        // Triggered snapshots still waiting for their `post` window are taken now, while the
        // rings are whole.
        crate::writer::snapshot::at_stop(&self.shared);
        crash::uninstall();
        session::set_running(false);
        crate::emit::divert::watch(self.generation, None);
        crate::emit::divert::aggregate(self.generation, None);
        control::uninstall();
        // Under `ring`, what the threads counted goes into this thread's ring before the stop
        // takes the rings: a ring file then holds it too (`aggregate::Flush`).
        if !self.shared.streaming {
            crate::emit::admit::flush(&self.shared, crate::emit::aggregate::Flush::IntoRing);
        }
        buffer::detach_this_thread(self.generation);
    }

    /// Waits for the writer thread to end (the exchange closed); an error when it panicked.
    fn wait_for_writer(&mut self) -> io::Result<()> {
        if let Some(writer) = self.writer.take()
            && !writer.wait()
        {
            // The writer thread panicked (its message is on stderr already): the blocks it
            // had not written are lost, and the stop says so.
            let message = "the event-writer thread ended early; blocks queued after it stopped are lost".to_owned();
            eprintln!("event-runtime: {message}");
            return Err(io::Error::other(message));
        }
        Ok(())
    }
}

/// The stop's writes once the writer thread has ended, in order: the threads' committed
/// records and the ring-file slots' current blocks, what the threads counted, the ring file's
/// copy or the rings, and the last loss report. Returns whether the stream holds all it
/// should (no copy of the ring file that it misses): then the clean-stop marker follows.
fn write_the_rest(shared: &Shared, taken: Vec<crate::blocks::lane::LaneTake>, slots: &[SlotTake]) -> bool {
    write_taken(shared, taken);
    // The current blocks of ring-file slots, whose copies no hand-on queued.
    for take in slots {
        lock(&shared.writer.sinks).write_block(&take.block, Pace::Keep);
    }
    // What the threads counted since the last period: histograms and suppressions, in
    // blocks of thread 0; what a thread counts after this is a loss (`aggregate`).
    crate::emit::admit::flush(shared, crate::emit::aggregate::Flush::Last);
    shared.writer.close_reports();
    let lost = shared.lost_here();
    if let Some(ring) = &shared.ring_file {
        ring.set_lost(lost);
    }
    let unattributed: &[(u64, u64)] = if lost > 0 { &[(0, lost)] } else { &[] };
    let cut_short = say_cut_short(shared);
    // Whether the stream misses what it should have copied: then it does not say it
    // stopped cleanly.
    let mut copy_failed = false;
    match &shared.ring_file {
        Some(ring) if !shared.streaming && !cut_short => {
            // The copy of the ring file carries its own loss report (RingStream's block of
            // thread 0). Nothing else reports here: no thread refuses under `ring`, and a
            // thread without a slot counts its events as unattributed (the file's `lost`).
            if !lock(&shared.writer.sinks).is_empty()
                && let Err(e) = write::write_ring_file(shared, ring)
            {
                let message = format!("copying the ring file to the sinks failed: {e}");
                eprintln!("event-runtime: {message}");
                lock(&shared.writer.sinks).fail(message);
                copy_failed = true;
            }
        }
        _ => {
            // Under `ring` with a ring file cut short, the rings of the threads that
            // started after the cut (on the heap) are all there is to copy.
            copy_failed = shared.ring_file.is_some() && !shared.streaming && !lock(&shared.writer.sinks).is_empty();
            write::write_rings(shared);
            write::write_reports(shared, unattributed);
        }
    }
    !copy_failed
}

/// Whether the ring file was cut short under its mapping (`busguard`): then said once (the
/// writer thread may have said it), and the stop's error.
fn say_cut_short(shared: &Shared) -> bool {
    let cut_short = shared.ring_file.as_ref().is_some_and(|ring| ring.cut_short());
    if let Some(ring) = &shared.ring_file
        && cut_short
    {
        let line = ring.loss_to_say(shared.streaming);
        if let Some(line) = &line {
            eprintln!("event-runtime: {line}");
        }
        lock(&shared.writer.sinks).fail(
            line.unwrap_or_else(|| format!("the ring file {} was truncated while recording", ring.path().display())),
        );
    }
    cut_short
}

/// The stop's last step: the ring file closed (said when it was removed or replaced while
/// recording), and the event file closed, or removed when the writer thread never ran.
fn close_sinks(shared: &Shared, never_ran: bool) {
    if let Some(ring) = &shared.ring_file {
        ring.close();
        if !ring.path_is_ours() {
            let copy =
                if lock(&shared.writer.sinks).is_empty() { "" } else { "; the event file or memory holds a copy" };
            eprintln!(
                "event-runtime: the ring file {} was removed or replaced while recording; its events are not there{copy}",
                ring.path().display()
            );
        }
    }
    if never_ran {
        lock(&shared.writer.sinks).discard_file();
    } else {
        lock(&shared.writer.sinks).close_file();
    }
}

/// Writes what the stop took from the threads' lanes: the partial pool blocks now, the rings
/// with the others (`write::write_rings`), and each thread's refusals as a report.
fn write_taken(shared: &Shared, taken: Vec<crate::blocks::lane::LaneTake>) {
    use event_format::raw::{BLOCK_USED_AT, seal_block_in_place};
    use event_format::wire::{BLOCK_HEADER_LEN, Order};
    for mut take in taken {
        shared.writer.report_dropped(take.thread, take.refused);
        if !take.ring.is_empty() {
            lock(&shared.writer.retired).push(session::RetiredRing { blocks: take.ring });
        } else if take.bytes.is_empty() {
            continue;
        } else if take.end > BLOCK_HEADER_LEN {
            let block = &mut take.bytes;
            Order::NATIVE.put_u32(&mut block[BLOCK_USED_AT..], (take.end - BLOCK_HEADER_LEN) as u32);
            seal_block_in_place(Order::NATIVE, block);
            lock(&shared.writer.sinks).write_block(block, Pace::Keep);
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        // Every error was said on stderr where it happened (one line each).
        let _ = self.end();
    }
}

/// Flushes what this thread recorded: hands its partial block on and waits (up to a second)
/// until the writer thread has written every block handed on so far, so that the recording's
/// sinks (the event file, [`Recording::bytes`]) hold it. Any thread may call it; when no
/// recording runs it waits for nothing. Under `ring` a flush moves no block: the blocks
/// stay in their rings (a ring file holds every record as soon as it is recorded).
///
/// The stop needs no flush: it takes every thread's partial block itself ([`Recording`]).
pub fn flush() {
    buffer::flush_this_thread();
    if buffer::is_writer() {
        // The writer cannot wait for itself; its blocks go to the sinks as they fill.
        return;
    }
    if let Some(shared) = session::current(session::generation()) {
        shared.exchange.wait_drained(FLUSH_WAIT);
        lock(&shared.writer.sinks).flush_file();
    }
}

#[cfg(test)]
mod tests {
    use crate::Recorder;
    use crate::event_set::TEST_SET as SET;
    use event_format::decode::Decoder;

    /// A thread whose clock steps back past the start of its block (a thread moved to a core
    /// whose counter is behind) starts a new block at the earlier time: every record of a
    /// block is at its `base_time` or later, as `print`'s merge takes it to be, and no event
    /// is lost. (Before, the record went into the same block after a `TimeExtend` back.)
    #[test]
    fn a_clock_that_steps_back_past_its_blocks_start_starts_a_new_block() {
        let _serial = crate::emit::session::TEST_RECORDING.lock().unwrap_or_else(|p| p.into_inner());
        let recording = Recorder::new().sets(&[&SET]).memory().deterministic_clock().start().unwrap();
        let emit = |i: u64| crate::emit::buffer::emit_event(&SET, 0, 8, &[], |w| w.word(i));
        std::thread::scope(|s| {
            s.spawn(|| {
                (0..10).for_each(emit);
                // Back to the clock's first reading: before this thread's block started.
                recording.shared.time.set_next(0);
                (10..20).for_each(emit);
                crate::flush();
            });
        });
        let bytes = recording.stop().unwrap();
        let mut decoder = Decoder::new(&bytes[..]).unwrap();
        let catalog = event_format::decode::Catalog::new(&decoder.header().sets);
        let (mut words, mut blocks) = (Vec::new(), 0);
        while let Some(block) = decoder.next_block() {
            let block = block.unwrap();
            blocks += 1;
            for record in block.records() {
                let record = record.unwrap();
                assert!(
                    record.time >= block.header.base_time,
                    "a record at {} in a block that starts at {}",
                    record.time,
                    block.header.base_time
                );
                if let event_format::decode::Entry::Event(e) = catalog.entry(record, block.header.thread, block.order)
                    && e.desc.name == "E"
                {
                    words.extend(e.values().filter_map(|v| match v {
                        event_format::wire::Value::Word(w) => Some(w),
                        _ => None,
                    }));
                }
            }
        }
        assert_eq!(words, (0..20).collect::<Vec<u64>>(), "every event, in order");
        assert!(blocks >= 2, "the step back started a block");
    }

    /// An event without strings whose fixed arguments no block holds is refused and counted
    /// (`ThreadBuffer::write` leaves the block's limit to `make_room`): the events around it
    /// are kept, in one block, none handed on for it.
    #[test]
    fn a_record_longer_than_a_block_is_refused_and_counted() {
        let _serial = crate::emit::session::TEST_RECORDING.lock().unwrap_or_else(|p| p.into_inner());
        let recording = Recorder::new().sets(&[&SET]).memory().block_size(1024).deterministic_clock().start().unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                crate::emit::buffer::emit_event(&SET, 0, 8, &[], |w| w.word(1));
                crate::emit::buffer::emit_event(&SET, 0, 1024, &[], |_| unreachable!("a refused record is not filled"));
                crate::emit::buffer::emit_event(&SET, 0, 8, &[], |w| w.word(2));
                crate::flush();
            });
        });
        let bytes = recording.stop().unwrap();
        let mut decoder = Decoder::new(&bytes[..]).unwrap();
        let catalog = event_format::decode::Catalog::new(&decoder.header().sets);
        let (mut words, mut lost, mut blocks) = (Vec::new(), 0, 0);
        while let Some(block) = decoder.next_block() {
            let block = block.unwrap();
            lost += block.header.lost;
            let mut holds_e = false;
            for entry in block.entries(&catalog) {
                let event_format::decode::Entry::Event(e) = entry else { continue };
                let values: Vec<u64> = e
                    .values()
                    .filter_map(|v| match v {
                        event_format::wire::Value::Word(w) => Some(w),
                        _ => None,
                    })
                    .collect();
                if e.desc.code == event_format::builtin::DROPPED {
                    lost += values[1];
                } else if e.desc.name == "E" {
                    words.extend(values);
                    holds_e = true;
                }
            }
            blocks += u64::from(holds_e);
        }
        assert_eq!(words, [1, 2], "the events around it, in order");
        assert_eq!(blocks, 1, "both in one block: none handed on for the long one");
        assert_eq!(lost, 1, "the long one counted");
    }

    /// Snapshots of a running recording ([`Recording::snapshot`](crate::Recording::snapshot);
    /// `writer::snapshot`), as a program takes them.
    #[cfg(not(loom))]
    mod snapshots {
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
            let (mut words, mut names, mut stop) =
                (std::collections::BTreeMap::<u64, Vec<u64>>::new(), Vec::new(), None);
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
                            ("ThreadName", [_, Value::Str(s)]) => {
                                names.push(String::from_utf8_lossy(s.bytes).into_owned())
                            }
                            _ => {}
                        }
                    }
                }
            }
            (words, names, stop)
        }

        /// A snapshot of a streaming recording (`switch`, the memory sink): the window read back
        /// from what was written, as many blocks as the buffer holds before the snapshot (the
        /// last thread's latest events, consecutive, ending with its last), then what a thread's
        /// current block holds and the sinks do not have yet; every thread named.
        #[test]
        fn a_snapshot_of_a_stream_reads_its_window_back() {
            use crate::Policy;
            let dir = std::env::temp_dir().join(format!("snapshot-stream-unit-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join("s.evt");
            let _ = std::fs::remove_file(&path);
            let _serial = crate::emit::session::TEST_RECORDING.lock().unwrap_or_else(|p| p.into_inner());
            let recording = Recorder::new()
                .sets(&[&SET])
                .policy(Policy::Switch)
                .wait(std::time::Duration::from_secs(5))
                .block_size(1024)
                .buffer_size(16 << 10)
                .memory()
                .start()
                .unwrap();
            let emit = |i: u64| crate::emit::buffer::emit_event(&SET, 0, 8, &[], |w| w.word(i));
            for t in 0..3u64 {
                std::thread::scope(|s| {
                    s.spawn(move || {
                        (0..5000).for_each(|i| emit(t * 100_000 + i));
                        crate::flush();
                    });
                });
            }
            emit(7);
            let taken = recording.snapshot(&path).unwrap();
            recording.stop().unwrap();
            let bytes = std::fs::read(&path).unwrap();
            let (words, names, stop) = read(&bytes);
            let lists: Vec<&Vec<u64>> = words.values().collect();
            let last = lists.iter().find(|l| l[0] / 100_000 == 2).expect("the last thread's events");
            assert_eq!(*last.last().unwrap(), 204_999, "ends with the thread's last event");
            assert!(last.windows(2).all(|w| w[1] == w[0] + 1), "consecutive, in order");
            assert!(lists.iter().any(|l| l.as_slice() == [7]), "the live block: {lists:?}");
            let all: usize = lists.iter().map(|l| l.len()).sum();
            // 16 blocks of 1 KiB hold 60 events of 16 bytes each, with the live one's.
            assert!((900..=1100).contains(&all), "as much as the buffer holds, not the whole stream: {all}");
            assert!(names.len() >= 2, "every thread named: {names:?}");
            assert_eq!(stop.expect("a clean-stop marker").events, taken.events);
            std::fs::remove_dir_all(&dir).unwrap();
        }

        /// A snapshot of heap rings that went round: each thread's latest events, consecutive and
        /// ending with its last, every thread named although the rings lost their `ThreadName`;
        /// the recording goes on and its stop still has every event the rings keep.
        #[test]
        fn a_snapshot_holds_the_latest_events_of_every_thread_and_their_names() {
            let _serial = crate::emit::session::TEST_RECORDING.lock().unwrap_or_else(|p| p.into_inner());
            let dir = std::env::temp_dir().join(format!("snapshot-unit-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join("s.evt");
            let _ = std::fs::remove_file(&path);
            let recording = Recorder::new()
                .sets(&[&SET])
                .policy(Policy::Ring)
                .block_size(1024)
                .buffer_size(64 << 10)
                .memory()
                .start()
                .unwrap();
            let emit = |i: u64| crate::emit::buffer::emit_event(&SET, 0, 8, &[], |w| w.word(i));
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
}
