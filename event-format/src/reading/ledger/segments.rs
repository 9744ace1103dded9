//! A recording of segments as its segments' header properties describe it (docs/FORMAT.md,
//! "Reading segments"): which segments are missing between those present, how many of them
//! the recorder's disk budget removed (with their events), which are gaps (missing for any
//! other reason), and the events the recorder could not write between two segments.
//!
//! Pure: it is given the present segments' properties, in order of their index, and reads
//! nothing.

use crate::codec::wire::Segment;

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
/// (`before`): the budget removed the lowest `removed` of them, the rest are gaps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Missing {
    /// The first missing index.
    pub first: u64,
    /// How many indexes are missing.
    pub count: u64,
    /// How many of them (the lowest) the disk budget removed.
    pub removed: u64,
    /// The place (among the present segments) of the segment after the run.
    pub before: usize,
}

impl Missing {
    /// Missing segments the budget did not remove: deleted, moved or not given.
    pub fn gaps(&self) -> u64 {
        self.count - self.removed
    }

    /// The first index of the gap (after the removed ones, which are the lowest).
    pub fn first_gap(&self) -> u64 {
        self.first + self.removed
    }
}

/// The present segments of a recording and what is missing between them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Segments {
    present: Vec<SegmentEntry>,
    missing: Vec<Missing>,
    /// The segments the budget removed and the events they accounted for, as the last
    /// present segment counts them (the segments capped at the indexes absent).
    removed: (u64, u64),
}

impl Segments {
    /// What `present` (in increasing order of index, no index twice) says of the recording
    /// (docs/FORMAT.md, "Counting a recording of segments").
    ///
    /// The indexes below the last present segment's that no segment has are absent. The
    /// budget deletes the oldest sealed segments first, so of the absent indexes the lowest,
    /// as many as the last present segment's cumulative `removed_segments`, are the budget's;
    /// the others are gaps. The events the removed segments accounted for are that segment's
    /// `removed_events`. A count larger than the indexes absent (a property that lies)
    /// removes every absent index and no more. `later`, the segments and events later
    /// recordings' budgets removed of it (they delete the oldest first too), are added to the
    /// last segment's counts.
    pub fn new(present: Vec<SegmentEntry>, later: (u64, u64)) -> Segments {
        let (said, events) = present.last().map_or((0, 0), |e| (e.segment.removed_segments, e.segment.removed_events));
        let (said, events) = (said.saturating_add(later.0), events.saturating_add(later.1));
        let mut left = said;
        let mut missing = Vec::new();
        let mut expect = 0u64;
        for (at, entry) in present.iter().enumerate() {
            let index = entry.segment.index;
            let count = index.saturating_sub(expect);
            if count > 0 {
                let removed = left.min(count);
                left -= removed;
                missing.push(Missing { first: expect, count, removed, before: at });
            }
            expect = expect.max(index.saturating_add(1));
        }
        Segments { present, missing, removed: (said - left, events) }
    }

    /// The present segments, in order.
    pub fn present(&self) -> &[SegmentEntry] {
        &self.present
    }

    /// The runs of absent indexes, in order (a run the budget removed wholly too).
    pub fn missing(&self) -> &[Missing] {
        &self.missing
    }

    /// Segments the budget removed, and the events they accounted for.
    pub fn removed(&self) -> (u64, u64) {
        self.removed
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

    impl Segments {
        fn new_own(present: Vec<SegmentEntry>) -> Segments {
            Segments::new(present, (0, 0))
        }
    }

    #[test]
    fn what_later_recordings_removed_is_the_next_lowest_absent() {
        // Its own budget removed 0 (10 events); a later recording's removed 1 and 2 (30).
        let s = Segments::new(vec![entry(3, 1, 10, 0), entry(4, 1, 10, 0)], (2, 30));
        assert_eq!((s.removed(), s.gaps()), ((3, 40), 0));
        // A later recording's budget alone: 0 and 1 removed, none is a gap.
        let s = Segments::new(vec![entry(2, 0, 0, 0)], (2, 20));
        assert_eq!((s.removed(), s.gaps(), s.missing()[0].removed), ((2, 20), 0, 2));
    }

    fn entry(index: u64, removed_segments: u64, removed_events: u64, lost_between: u64) -> SegmentEntry {
        let segment = Segment { index, removed_segments, removed_events, lost_between };
        SegmentEntry { name: format!("trace.{index:06}.evt"), segment }
    }

    #[test]
    fn consecutive_segments_miss_nothing() {
        let s = Segments::new_own(vec![entry(0, 0, 0, 0), entry(1, 0, 0, 0), entry(2, 0, 0, 7)]);
        assert_eq!((s.missing().len(), s.removed(), s.gaps(), s.lost_between()), (0, (0, 0), 0, 7));
    }

    #[test]
    fn segments_the_budget_removed_are_the_lowest_absent() {
        // 0 and 1 removed before 2 started (100 events), 3 removed later (50 more): the last
        // present segment counts 3 and 150.
        let s = Segments::new_own(vec![entry(2, 2, 100, 0), entry(4, 3, 150, 0)]);
        let m = s.missing();
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].first, m[0].count, m[0].removed, m[0].gaps(), m[0].before), (0, 2, 2, 0, 0));
        assert_eq!((m[1].first, m[1].count, m[1].removed, m[1].gaps(), m[1].before), (3, 1, 1, 0, 1));
        assert_eq!((s.removed(), s.gaps()), ((3, 150), 0));
    }

    #[test]
    fn a_segment_deleted_by_someone_else_is_a_gap() {
        // 1 is missing and nothing was removed: a gap.
        let s = Segments::new_own(vec![entry(0, 0, 0, 0), entry(2, 0, 0, 0)]);
        assert_eq!((s.removed(), s.gaps()), ((0, 0), 1));
        assert_eq!((s.missing()[0].first_gap(), s.missing()[0].before), (1, 1));
        // 0..=2 absent, the budget removed one: the lowest, 0; 1 and 2 are gaps.
        let s = Segments::new_own(vec![entry(3, 1, 10, 0)]);
        assert_eq!((s.removed(), s.gaps(), s.missing()[0].first_gap()), ((1, 10), 2, 1));
        // Absent 0, 1 (before 2) and 4 (before 5); 3 removed: the lowest three, 0, 1 and 4.
        let s = Segments::new_own(vec![entry(2, 0, 0, 0), entry(3, 0, 0, 0), entry(5, 3, 30, 0)]);
        assert_eq!((s.removed(), s.gaps()), ((3, 30), 0));
    }

    #[test]
    fn counts_that_lie_neither_overflow_nor_remove_more_than_is_absent() {
        let s = Segments::new_own(vec![entry(1, 0, 0, u64::MAX), entry(u64::MAX, u64::MAX, u64::MAX, u64::MAX)]);
        assert_eq!(s.lost_between(), u64::MAX);
        assert_eq!(s.removed(), (u64::MAX - 1, u64::MAX));
        let s = Segments::new_own(vec![entry(1, 9, 90, 0)]);
        assert_eq!((s.removed(), s.gaps()), ((1, 90), 0));
    }
}
