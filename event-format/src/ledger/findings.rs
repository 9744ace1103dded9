//! The ledger's findings: what a log lost and what is wrong with it, as counts with stable
//! names ([`Findings`], from [`Ledger::findings`](super::Ledger::findings)), and the words
//! every reader says them in ([`Findings::losses_line`]). A reader that reports losses or
//! damage (event-dump's `stats`, `summary`, `top`) takes both from here, so that one log
//! gets one verdict in one voice, in text and in JSON alike.

use std::collections::BTreeMap;

/// What a log lost and what is wrong with it, as its ledger counted (see the
/// [`Ledger`](super::Ledger)'s methods of the same names). Findings of several logs (or of
/// the segments a live reader met one by one) add up ([`Findings::add`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Findings {
    /// Events read.
    pub events: u64,
    /// Verified blocks (stop markers not counted).
    pub blocks: u64,
    /// Events lost: every thread's, between segments and not written ([`Ledger::lost`](super::Ledger::lost)).
    pub lost: u64,
    /// Events lost per thread (0: of no thread).
    pub lost_by_thread: BTreeMap<u64, u64>,
    /// Blocks missing: every thread's gaps, a ring's overwritten blocks included.
    pub missing_blocks: u64,
    /// Of those, the oldest blocks rings overwrote (as a ring keeps only the latest: no problem).
    pub overwritten_blocks: u64,
    /// Blocks that failed their checks.
    pub damaged_blocks: u64,
    /// Records that break the format.
    pub bad_records: u64,
    /// Records of codes nothing describes.
    pub unknown_records: u64,
    /// Strings their writer cut.
    pub truncated_strings: u64,
    /// Segments the disk budget removed, and the events they held: reported, no problem.
    pub removed_segments: u64,
    /// The events of [`removed_segments`](Findings::removed_segments).
    pub removed_events: u64,
    /// Segments missing that the budget did not remove.
    pub segment_gaps: u64,
}

impl Findings {
    /// Adds `other`'s counts (saturating: counts from a log may lie).
    pub fn add(&mut self, other: &Findings) {
        let sum = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        sum(&mut self.events, other.events);
        sum(&mut self.blocks, other.blocks);
        sum(&mut self.lost, other.lost);
        for (t, n) in &other.lost_by_thread {
            sum(self.lost_by_thread.entry(*t).or_default(), *n);
        }
        sum(&mut self.missing_blocks, other.missing_blocks);
        sum(&mut self.overwritten_blocks, other.overwritten_blocks);
        sum(&mut self.damaged_blocks, other.damaged_blocks);
        sum(&mut self.bad_records, other.bad_records);
        sum(&mut self.unknown_records, other.unknown_records);
        sum(&mut self.truncated_strings, other.truncated_strings);
        sum(&mut self.removed_segments, other.removed_segments);
        sum(&mut self.removed_events, other.removed_events);
        sum(&mut self.segment_gaps, other.segment_gaps);
    }

    /// Whether nothing was lost, missing or damaged (a ring's overwritten blocks and the
    /// segments the budget removed are no loss of this kind; a ring's are counted missing).
    pub fn is_whole(&self) -> bool {
        self.lost == 0
            && self.missing_blocks == 0
            && self.damaged_blocks == 0
            && self.bad_records == 0
            && self.unknown_records == 0
            && self.segment_gaps == 0
    }

    /// The one line of what was lost and what is wrong, as `stats` writes it:
    /// `0 events lost, 0 blocks missing (overwritten or dropped), 0 damaged blocks, 0 bad
    /// records, 0 records of unknown codes`.
    pub fn losses_line(&self) -> String {
        format!(
            "{} events lost, {} blocks missing (overwritten or dropped), {} damaged blocks, {} bad records, {} records of unknown codes",
            self.lost, self.missing_blocks, self.damaged_blocks, self.bad_records, self.unknown_records
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_add_up_and_say_one_line() {
        let mut a = Findings { events: 5, lost: 2, lost_by_thread: [(1, 2)].into(), ..Findings::default() };
        assert!(!a.is_whole());
        let b = Findings { events: u64::MAX, lost: 1, lost_by_thread: [(1, 1), (2, 0)].into(), ..Findings::default() };
        a.add(&b);
        assert_eq!((a.events, a.lost, a.lost_by_thread.get(&1).copied()), (u64::MAX, 3, Some(3)));
        assert_eq!(
            a.losses_line(),
            "3 events lost, 0 blocks missing (overwritten or dropped), 0 damaged blocks, 0 bad records, 0 records of unknown codes"
        );
        assert!(Findings::default().is_whole());
    }
}
