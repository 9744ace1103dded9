//! A recording of segments as its segments' header properties describe it (docs/FORMAT.md,
//! "Reading segments"): which segments are missing between those present, how many of them
//! the recorder's disk budget removed (with their events), which are gaps (missing for any
//! other reason), and the events the recorder could not write between two segments.
//!
//! Pure: it is given the present segments' properties, in order of their index, and reads
//! nothing.

use crate::wire::Segment;

/// One segment of a recording, as the log's opener found it: its file's name (for messages)
/// and its header's segment property.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentEntry {
    /// The file's name, as messages show it.
    pub name: String,
    /// Its header's segment property.
    pub segment: Segment,
}

/// A run of consecutive segment indexes that no present segment has, before a present one
/// (`before`): the budget removed the oldest `removed` of them (holding `removed_events`
/// events), the rest are gaps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Missing {
    /// The first missing index.
    pub first: u64,
    /// How many indexes are missing.
    pub count: u64,
    /// How many of them the disk budget removed, by the next present segment's cumulative
    /// counts (at most `count`).
    pub removed: u64,
    /// The events the removed segments held, by the same counts.
    pub removed_events: u64,
    /// The place (among the present segments) of the segment after the run.
    pub before: usize,
}

impl Missing {
    /// Missing segments the budget did not remove: deleted, moved or not given.
    pub fn gaps(&self) -> u64 {
        self.count - self.removed
    }

    /// The first index of the gap (after the removed ones, which are the oldest).
    pub fn first_gap(&self) -> u64 {
        self.first + self.removed
    }
}

/// The present segments of a recording and what is missing between them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Segments {
    present: Vec<SegmentEntry>,
    missing: Vec<Missing>,
}

impl Segments {
    /// What `present` (in increasing order of index, no index twice) says of the recording.
    ///
    /// Walking the indexes from 0: the indexes before a present segment that no segment has
    /// are missing; the rise of the segment's cumulative `removed_segments` over the previous
    /// present segment's says how many of them the budget removed (the oldest: the budget
    /// removes the oldest sealed segments first), and the rise of `removed_events` the events
    /// they held. Missing indexes beyond that rise are gaps. A rise larger than the run (a
    /// property that lies) removes the whole run and no more.
    pub fn new(present: Vec<SegmentEntry>) -> Segments {
        let mut missing = Vec::new();
        let (mut expect, mut removed, mut removed_events) = (0u64, 0u64, 0u64);
        for (at, entry) in present.iter().enumerate() {
            let s = &entry.segment;
            let count = s.index.saturating_sub(expect);
            let rise = s.removed_segments.saturating_sub(removed);
            let rise_events = s.removed_events.saturating_sub(removed_events);
            if count > 0 || rise > 0 {
                let run =
                    Missing { first: expect, count, removed: rise.min(count), removed_events: rise_events, before: at };
                missing.push(run);
            }
            expect = s.index.saturating_add(1);
            removed = removed.max(s.removed_segments);
            removed_events = removed_events.max(s.removed_events);
        }
        Segments { present, missing }
    }

    /// The present segments, in order.
    pub fn present(&self) -> &[SegmentEntry] {
        &self.present
    }

    /// The runs of missing indexes, in order (a run the budget removed wholly too).
    pub fn missing(&self) -> &[Missing] {
        &self.missing
    }

    /// Segments the budget removed, and the events they held.
    pub fn removed(&self) -> (u64, u64) {
        self.missing
            .iter()
            .fold((0u64, 0u64), |(s, e), m| (s.saturating_add(m.removed), e.saturating_add(m.removed_events)))
    }

    /// Segments missing that the budget did not remove.
    pub fn gaps(&self) -> u64 {
        self.missing.iter().map(Missing::gaps).fold(0, u64::saturating_add)
    }

    /// Events the recorder could not write between segments (the present segments'
    /// `lost_between`).
    pub fn lost_between(&self) -> u64 {
        self.present.iter().map(|e| e.segment.lost_between).fold(0, u64::saturating_add)
    }

    /// The name of the segment at `place` among the present ones.
    pub fn name(&self, place: u32) -> Option<&str> {
        self.present.get(place as usize).map(|e| e.name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(index: u64, removed_segments: u64, removed_events: u64, lost_between: u64) -> SegmentEntry {
        let segment = Segment { index, removed_segments, removed_events, lost_between };
        SegmentEntry { name: format!("trace.{index:06}.evt"), segment }
    }

    #[test]
    fn consecutive_segments_miss_nothing() {
        let s = Segments::new(vec![entry(0, 0, 0, 0), entry(1, 0, 0, 0), entry(2, 0, 0, 7)]);
        assert_eq!((s.missing().len(), s.removed(), s.gaps(), s.lost_between()), (0, (0, 0), 0, 7));
    }

    #[test]
    fn segments_the_budget_removed_are_counted_with_their_events() {
        // 0 and 1 removed (100 events), 2 present, 3 removed (50 more), 4 present.
        let s = Segments::new(vec![entry(2, 2, 100, 0), entry(4, 3, 150, 0)]);
        let m = s.missing();
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].first, m[0].count, m[0].removed, m[0].removed_events, m[0].gaps()), (0, 2, 2, 100, 0));
        assert_eq!((m[1].first, m[1].count, m[1].removed, m[1].removed_events, m[1].gaps()), (3, 1, 1, 50, 0));
        assert_eq!((s.removed(), s.gaps()), ((3, 150), 0));
    }

    #[test]
    fn a_segment_deleted_by_someone_else_is_a_gap() {
        // 1 is missing and no budget count rose: a gap.
        let s = Segments::new(vec![entry(0, 0, 0, 0), entry(2, 0, 0, 0)]);
        assert_eq!((s.removed(), s.gaps()), ((0, 0), 1));
        assert_eq!((s.missing()[0].first_gap(), s.missing()[0].before), (1, 1));
        // 0..=2 missing, the budget removed one: the oldest, 0; 1 and 2 are gaps.
        let s = Segments::new(vec![entry(3, 1, 10, 0)]);
        assert_eq!((s.removed(), s.gaps(), s.missing()[0].first_gap()), ((1, 10), 2, 1));
    }

    #[test]
    fn counts_that_lie_neither_overflow_nor_remove_more_than_is_missing() {
        let s = Segments::new(vec![entry(u64::MAX, u64::MAX, u64::MAX, u64::MAX), entry(1, 0, 0, u64::MAX)]);
        assert_eq!(s.lost_between(), u64::MAX);
        let s = Segments::new(vec![entry(1, 9, 90, 0)]);
        assert_eq!((s.removed(), s.gaps()), ((1, 90), 0));
    }
}
