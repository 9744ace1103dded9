//! What a streaming recording (`switch`, `wait`, `fill`) wrote lately, and where: the index a
//! snapshot of such a recording reads its window from (docs/guide/keeping-the-incident.md,
//! "Snapshots of a stream").
//!
//! Under a streaming policy every block reaches the stream sinks: the event file (one file,
//! or the segment being written), the memory sink. The window around an incident is already
//! there, so a snapshot needs no second copy of it in memory: the writer thread notes, for
//! each block it writes, its thread, its number in the recording, its first and last times,
//! and where its bytes went (the segment and offset, or the offset in memory). A snapshot then
//! reads exactly those blocks back (`snapshot`), from files it opened while the sinks' lock was
//! held: a segment the disk budget deletes afterwards stays readable through its descriptor.
//! A block's first time is in its header; its last is not noted (that would walk its records
//! once more on the writer thread, two instructions an event): a block holds events from its
//! start up to the start of its thread's next block.
//!
//! The index keeps the latest blocks: at least as many as the buffer holds (a snapshot reaches
//! back as far as a ring of that size would), and those of the last `pre=` duration any
//! trigger asks for; while a triggered snapshot waits for its `post=` window, nothing leaves it
//! (and the budget deletes no segment: `segments`). Its memory is about 64 bytes a block.

use std::collections::VecDeque;

/// Where a written block's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// In the memory sink, from this offset.
    Memory(u64),
    /// In the event file: segment `segment` (0 for a recording of one file), from `offset`.
    File { segment: u64, offset: u64 },
}

/// A block the sinks wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) thread: u64,
    /// Its number in the recording (before a segment renumbered it).
    pub(crate) sequence: u64,
    pub(crate) base_time: u64,
    /// The bytes it took where it went (packed or not).
    pub(crate) len: u32,
    pub(crate) place: Place,
    /// A block of thread 0 that reports losses (`Dropped`): a snapshot keeps those of its
    /// window, and leaves the recorder's other blocks (names, stop markers) out.
    pub(crate) report: bool,
}

/// The index of the blocks written lately.
#[derive(Debug)]
pub(crate) struct History {
    entries: VecDeque<Entry>,
    /// Blocks kept at least (the buffer's).
    keep_blocks: usize,
    /// Ticks kept at least, before the newest block (the longest `pre=`).
    keep_ticks: u64,
    /// The latest block start noted.
    newest: u64,
    /// The entries of the program's threads (not thread 0's): what `keep_blocks` counts.
    programs: usize,
    /// While this is above 0, nothing leaves the index: triggered snapshots wait for their
    /// `post=` window (`trigger::Triggers::pending_count`).
    hold: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
}

impl History {
    /// An index that keeps at least `keep_blocks` blocks and `keep_ticks` ticks, and
    /// everything while `hold` is above 0.
    pub(crate) fn new(
        keep_blocks: usize,
        keep_ticks: u64,
        hold: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
    ) -> History {
        History { entries: VecDeque::new(), keep_blocks: keep_blocks.max(1), keep_ticks, newest: 0, programs: 0, hold }
    }

    /// Whether snapshots are waiting for their windows (nothing may leave).
    pub(crate) fn held(&self) -> bool {
        self.hold.as_ref().is_some_and(|h| h.load(std::sync::atomic::Ordering::Relaxed) > 0)
    }

    /// Notes a block just written, and lets the oldest go past what it keeps (a block whose
    /// start is `keep_ticks` before the newest start, beyond the `keep_blocks` newest of the
    /// program's threads: thread 0's blocks, which each new segment repeats, count for none).
    pub(crate) fn push(&mut self, entry: Entry) {
        self.newest = self.newest.max(entry.base_time);
        self.programs += usize::from(entry.thread != 0);
        self.entries.push_back(entry);
        if self.held() {
            return;
        }
        while self.programs > self.keep_blocks
            && self.entries.front().is_some_and(|e| e.base_time.saturating_add(self.keep_ticks) < self.newest)
        {
            if let Some(gone) = self.entries.pop_front() {
                self.programs -= usize::from(gone.thread != 0);
            }
        }
    }

    /// The disk budget deleted the segments up to `segment`: their blocks can no longer be
    /// read back.
    pub(crate) fn forget_segments(&mut self, segment: u64) {
        self.entries.retain(|e| !matches!(e.place, Place::File { segment: s, .. } if s <= segment));
        self.programs = self.entries.iter().filter(|e| e.thread != 0).count();
    }

    /// The blocks of a snapshot's window, in the order they were written: those that start
    /// at `from` or later (`pre=`), and of each thread the last that starts before (it may
    /// hold events from `from` on); without `from`, from the start of the `keep_blocks`-th
    /// newest block that starts at `trigger` or before (as much time as the buffer's worth of
    /// blocks covers), for every thread alike. Blocks of thread 0 only when they report losses.
    pub(crate) fn window(&self, from: Option<u64>, trigger: u64) -> Vec<Entry> {
        let from = from.unwrap_or_else(|| {
            let mut before: Vec<u64> =
                self.entries.iter().filter(|e| e.base_time <= trigger && e.thread != 0).map(|e| e.base_time).collect();
            before.sort_unstable();
            before.len().checked_sub(self.keep_blocks).map_or(0, |skip| before[skip])
        });
        // Each thread's last block that starts before `from`, by its place in the index.
        let mut straddling: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
        for (i, e) in self.entries.iter().enumerate() {
            if e.base_time < from && e.thread != 0 {
                straddling.insert(e.thread, i);
            }
        }
        self.entries
            .iter()
            .enumerate()
            .filter(|&(i, e)| {
                let kept = if e.thread == 0 { e.report } else { true };
                kept && (e.base_time >= from || straddling.get(&e.thread) == Some(&i))
            })
            .map(|(_, e)| *e)
            .collect()
    }

    /// The newest number written of each thread (for a snapshot's live part: a thread's block
    /// that is not written yet comes after it).
    pub(crate) fn newest(&self, thread: u64) -> Option<u64> {
        self.entries.iter().rev().find(|e| e.thread == thread).map(|e| e.sequence)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(thread: u64, sequence: u64, t: u64) -> Entry {
        Entry { thread, sequence, base_time: t, len: 64, place: Place::Memory(t * 64), report: false }
    }

    #[test]
    fn keeps_the_latest_blocks_and_the_longest_pre() {
        let mut h = History::new(3, 25, None);
        for i in 0..10 {
            h.push(entry(1, i, i * 10));
        }
        // At least 3 blocks, and those starting within 25 ticks of the newest start (90).
        let kept: Vec<u64> = h.entries.iter().map(|e| e.sequence).collect();
        assert_eq!(kept, [7, 8, 9]);
        let mut h = History::new(2, 45, None);
        for i in 0..10 {
            h.push(entry(1, i, i * 10));
        }
        let kept: Vec<u64> = h.entries.iter().map(|e| e.sequence).collect();
        assert_eq!(kept, [5, 6, 7, 8, 9]);
    }

    /// Thread 0's blocks (the names, pins and stop blocks each new segment repeats, clock
    /// syncs) do not count as the buffer's worth: with segments of one block, they once took
    /// the places of the program's blocks, and a snapshot's window held only the trigger's.
    #[test]
    fn the_recorders_own_blocks_take_no_programs_blocks_place() {
        let mut h = History::new(3, 0, None);
        for i in 0..10 {
            h.push(entry(1, i, i * 10));
            h.push(entry(0, 100 + 2 * i, i * 10 + 1));
            h.push(entry(0, 101 + 2 * i, i * 10 + 2));
        }
        let kept: Vec<u64> = h.entries.iter().filter(|e| e.thread == 1).map(|e| e.sequence).collect();
        assert_eq!(kept, [7, 8, 9]);
        let window: Vec<u64> = h.window(None, 95).iter().map(|e| e.sequence).collect();
        assert_eq!(window, [7, 8, 9]);
    }

    #[test]
    fn nothing_leaves_while_held_and_deleted_segments_go() {
        let hold = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(1));
        let mut h = History::new(1, 0, Some(hold.clone()));
        for i in 0..5 {
            let mut e = entry(1, i, i * 10);
            e.place = Place::File { segment: i / 2, offset: 0 };
            h.push(e);
        }
        assert_eq!(h.entries.len(), 5);
        h.forget_segments(1);
        let kept: Vec<u64> = h.entries.iter().map(|e| e.sequence).collect();
        assert_eq!(kept, [4]);
        hold.store(0, std::sync::atomic::Ordering::Relaxed);
    }

    #[test]
    fn a_window_is_as_many_blocks_as_the_buffer_before_the_trigger_and_all_after() {
        let mut h = History::new(3, 1000, None);
        for i in 0..10 {
            h.push(entry(1 + i % 2, i, i * 10));
        }
        let seqs = |w: Vec<Entry>| w.iter().map(|e| e.sequence).collect::<Vec<_>>();
        // Blocks starting at 50 or before: 0..=5; the time of the latest 3 of them (from 30),
        // everything since, and each thread's block that starts before and may reach into it.
        assert_eq!(seqs(h.window(None, 50)), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
        // pre=: those starting at 65 or later, and each thread's last block before.
        assert_eq!(seqs(h.window(Some(65), 50)), [5, 6, 7, 8, 9]);
        assert_eq!(h.newest(1), Some(8));
        assert_eq!(h.newest(3), None);
    }
}
