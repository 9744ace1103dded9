//! The ledger's findings: what a log lost and what is wrong with it, as counts with stable
//! names ([`Findings`], from [`Ledger::findings`](super::Ledger::findings)), every kind of
//! finding declared once in [`FINDINGS`] with its key, its [`Severity`] and its words (as
//! perfetto's `storage/stats.h` declares every counter), and the one rule of whether a log is
//! whole ([`Findings::is_whole`]). Every reader that reports losses or damage (event-dump's
//! `check`, `stats`, `print`, `summary`, `top`, `follow`, the exports, the typed reader's
//! summary) takes its verdict and its words from here, so that one log gets one verdict in
//! one voice, in text and in JSON alike.

use std::collections::BTreeMap;

/// How much a finding matters to whether a log is whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Reported, no problem: what the recording was configured to do (a ring keeps only its
    /// latest blocks, a disk budget removes the oldest segments) or what its writer chose
    /// (strings cut to their limit).
    Note,
    /// Events the recorder counted and could not keep: the log is not whole.
    Loss,
    /// The log is damaged, or does not agree with itself: the log is not whole.
    Problem,
}

impl Severity {
    /// Its name, as JSON and the docs say it: `note`, `loss`, `problem`.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Loss => "loss",
            Severity::Problem => "problem",
        }
    }
}

/// One kind of finding, as [`FINDINGS`] declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Finding {
    /// Events lost: blocks' `lost` fields, `Dropped` events, events not written between
    /// segments or at a stop for a full disk or a write error.
    Lost,
    /// Blocks missing from a thread's numbers that no ring overwrote: dropped or damaged.
    GapBlocks,
    /// A thread's oldest blocks, which its ring overwrote: a problem only when strict.
    OverwrittenBlocks,
    /// Blocks that failed their checks.
    DamagedBlocks,
    /// Records that break the format.
    BadRecords,
    /// Records of codes nothing describes (a newer event set or format wrote them).
    UnknownRecords,
    /// Blocks whose number an earlier block of their thread had.
    RepeatedBlocks,
    /// Blocks that came after a higher-numbered block of their thread.
    LateBlocks,
    /// Segments missing that the disk budget did not remove.
    SegmentGaps,
    /// A log (or a segment before the last) without its stop marker, or with blocks after it,
    /// whose writer is not alive.
    NotStopped,
    /// Counts a stop marker says its writer wrote that the blocks before it do not match.
    MarkerDisagreements,
    /// A ring file's pin area that failed its checks.
    DamagedPinArea,
    /// Segments the disk budget removed.
    RemovedSegments,
    /// Strings their writer cut to their limit.
    TruncatedStrings,
}

/// What [`FINDINGS`] says of one kind of finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Declared {
    /// The finding.
    pub finding: Finding,
    /// Its stable name: the field of `event-dump summary`'s JSON, the word docs/OUTPUT.md uses.
    pub key: &'static str,
    /// How much it matters ([`Findings::severity`] raises overwritten blocks when strict).
    pub severity: Severity,
    /// Its words after a count of 1 (`1 damaged block`) and of any other count.
    pub one: &'static str,
    /// See [`one`](Declared::one).
    pub many: &'static str,
}

impl Declared {
    /// `n` and its words: `1 damaged block`, `3 damaged blocks`.
    pub fn count(&self, n: u64) -> String {
        format!("{n} {}", if n == 1 { self.one } else { self.many })
    }
}

/// Every finding a reader reports, with its key, severity and words: the one table.
pub const FINDINGS: [Declared; 14] = [
    declare(Finding::Lost, "lost", Severity::Loss, "event lost", "events lost"),
    declare(
        Finding::GapBlocks,
        "gap_blocks",
        Severity::Problem,
        "block missing (dropped or damaged)",
        "blocks missing (dropped or damaged)",
    ),
    declare(
        Finding::OverwrittenBlocks,
        "overwritten_blocks",
        Severity::Note,
        "block overwritten by its ring",
        "blocks overwritten by their rings",
    ),
    declare(Finding::DamagedBlocks, "damaged_blocks", Severity::Problem, "damaged block", "damaged blocks"),
    declare(Finding::BadRecords, "bad_records", Severity::Problem, "bad record", "bad records"),
    declare(
        Finding::UnknownRecords,
        "unknown_records",
        Severity::Problem,
        "record of an unknown code",
        "records of unknown codes",
    ),
    declare(Finding::RepeatedBlocks, "repeated_blocks", Severity::Problem, "block repeated", "blocks repeated"),
    declare(Finding::LateBlocks, "late_blocks", Severity::Problem, "block out of order", "blocks out of order"),
    declare(Finding::SegmentGaps, "segment_gaps", Severity::Problem, "segment missing", "segments missing"),
    declare(
        Finding::NotStopped,
        "not_stopped",
        Severity::Problem,
        "recording or segment not stopped cleanly",
        "recordings or segments not stopped cleanly",
    ),
    declare(
        Finding::MarkerDisagreements,
        "marker_disagreements",
        Severity::Problem,
        "count that disagrees with its stop marker",
        "counts that disagree with their stop markers",
    ),
    declare(Finding::DamagedPinArea, "damaged_pin_areas", Severity::Problem, "damaged pin area", "damaged pin areas"),
    declare(
        Finding::RemovedSegments,
        "removed_segments",
        Severity::Note,
        "segment removed by the disk budget",
        "segments removed by the disk budget",
    ),
    declare(
        Finding::TruncatedStrings,
        "truncated_strings",
        Severity::Note,
        "string cut by its writer",
        "strings cut by their writers",
    ),
];

const fn declare(
    finding: Finding,
    key: &'static str,
    severity: Severity,
    one: &'static str,
    many: &'static str,
) -> Declared {
    Declared { finding, key, severity, one, many }
}

impl Finding {
    /// What [`FINDINGS`] declares of it.
    pub fn declared(self) -> &'static Declared {
        // The table is in the order of the enum (a unit test holds it so).
        &FINDINGS[self as usize]
    }
}

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
    /// Blocks whose number an earlier block of their thread had.
    pub repeated_blocks: u64,
    /// Blocks that came after a higher-numbered block of their thread.
    pub late_blocks: u64,
    /// The log (or segments before its last) not stopped cleanly: no stop marker, or blocks
    /// after it, and (for the log's end) its writer not alive.
    pub not_stopped: u64,
    /// Counts (blocks, events, losses) that stop markers say their writer wrote and that the
    /// blocks before them do not match, one per count and marker.
    pub marker_disagreements: u64,
    /// A ring file's pin area that failed its checks (0 or 1 a file).
    pub damaged_pin_areas: u64,
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
        sum(&mut self.repeated_blocks, other.repeated_blocks);
        sum(&mut self.late_blocks, other.late_blocks);
        sum(&mut self.not_stopped, other.not_stopped);
        sum(&mut self.marker_disagreements, other.marker_disagreements);
        sum(&mut self.damaged_pin_areas, other.damaged_pin_areas);
    }

    /// The count of `finding`.
    pub fn count(&self, finding: Finding) -> u64 {
        match finding {
            Finding::Lost => self.lost,
            Finding::GapBlocks => self.missing_blocks.saturating_sub(self.overwritten_blocks),
            Finding::OverwrittenBlocks => self.overwritten_blocks,
            Finding::DamagedBlocks => self.damaged_blocks,
            Finding::BadRecords => self.bad_records,
            Finding::UnknownRecords => self.unknown_records,
            Finding::RepeatedBlocks => self.repeated_blocks,
            Finding::LateBlocks => self.late_blocks,
            Finding::SegmentGaps => self.segment_gaps,
            Finding::NotStopped => self.not_stopped,
            Finding::MarkerDisagreements => self.marker_disagreements,
            Finding::DamagedPinArea => self.damaged_pin_areas,
            Finding::RemovedSegments => self.removed_segments,
            Finding::TruncatedStrings => self.truncated_strings,
        }
    }

    /// How much `finding` matters: as declared, but a ring's overwritten blocks are a problem
    /// when `strict` (`event-dump check --strict`).
    pub fn severity(finding: Finding, strict: bool) -> Severity {
        match finding {
            Finding::OverwrittenBlocks if strict => Severity::Problem,
            _ => finding.declared().severity,
        }
    }

    /// Each finding counted (its count above 0), in the order of [`FINDINGS`], with its
    /// severity (`strict`: see [`severity`](Findings::severity)).
    pub fn each(&self, strict: bool) -> impl Iterator<Item = (&'static Declared, Severity, u64)> + '_ {
        FINDINGS.iter().filter_map(move |d| {
            let n = self.count(d.finding);
            (n > 0).then(|| (d, Findings::severity(d.finding, strict), n))
        })
    }

    /// Whether the log is whole: no finding of a loss or a problem. A ring's overwritten
    /// blocks are no problem unless `strict`; the segments a disk budget removed and the
    /// strings their writer cut never are. The one rule of every reader.
    pub fn is_whole(&self, strict: bool) -> bool {
        self.each(strict).all(|(_, severity, _)| severity == Severity::Note)
    }

    /// The verdict in words: `whole`, or `NOT whole: ` and each loss and problem counted
    /// (`NOT whole: 5 events lost, 1 damaged block`).
    pub fn verdict(&self, strict: bool) -> String {
        let against: Vec<String> =
            self.each(strict).filter(|(_, s, _)| *s != Severity::Note).map(|(d, _, n)| d.count(n)).collect();
        if against.is_empty() { "whole".to_owned() } else { format!("NOT whole: {}", against.join(", ")) }
    }

    /// Each of `findings` counted (above 0), as a count and its words (`1 damaged block`):
    /// what a reader says of a few findings (what an export or `latency` left out).
    pub fn said(&self, findings: &[Finding]) -> Vec<String> {
        let counted = findings.iter().map(|f| (f, self.count(*f))).filter(|(_, n)| *n > 0);
        counted.map(|(f, n)| f.declared().count(n)).collect()
    }

    /// The one line of what was lost and what is wrong, as `stats` writes it:
    /// `0 events lost, 0 blocks missing (overwritten or dropped), 0 damaged blocks, 0 bad
    /// records, 0 records of unknown codes`.
    pub fn losses_line(&self) -> String {
        let many = |f: Finding| f.declared().many;
        format!(
            "{} {}, {} blocks missing (overwritten or dropped), {} {}, {} {}, {} {}",
            self.lost,
            many(Finding::Lost),
            self.missing_blocks,
            self.damaged_blocks,
            many(Finding::DamagedBlocks),
            self.bad_records,
            many(Finding::BadRecords),
            self.unknown_records,
            many(Finding::UnknownRecords)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_add_up_and_say_one_line() {
        let mut a = Findings { events: 5, lost: 2, lost_by_thread: [(1, 2)].into(), ..Findings::default() };
        assert!(!a.is_whole(false));
        let b = Findings { events: u64::MAX, lost: 1, lost_by_thread: [(1, 1), (2, 0)].into(), ..Findings::default() };
        a.add(&b);
        assert_eq!((a.events, a.lost, a.lost_by_thread.get(&1).copied()), (u64::MAX, 3, Some(3)));
        assert_eq!(
            a.losses_line(),
            "3 events lost, 0 blocks missing (overwritten or dropped), 0 damaged blocks, 0 bad records, 0 records of unknown codes"
        );
        assert_eq!(a.verdict(false), "NOT whole: 3 events lost");
        assert_eq!(a.said(&[Finding::DamagedBlocks, Finding::Lost]), ["3 events lost"]);
        assert!(Findings::default().is_whole(true));
        assert_eq!(Findings::default().verdict(true), "whole");
    }

    #[test]
    fn the_table_is_in_the_order_of_its_findings_and_its_keys_are_unique() {
        for (i, d) in FINDINGS.iter().enumerate() {
            assert_eq!(d.finding as usize, i, "{d:?}");
            assert_eq!(d.finding.declared(), d);
        }
        let keys: std::collections::BTreeSet<&str> = FINDINGS.iter().map(|d| d.key).collect();
        assert_eq!(keys.len(), FINDINGS.len());
    }

    #[test]
    fn a_ring_overwritten_is_whole_unless_strict_and_notes_never_count() {
        let wrapped = Findings { missing_blocks: 4, overwritten_blocks: 4, ..Findings::default() };
        assert!(wrapped.is_whole(false) && !wrapped.is_whole(true));
        assert_eq!(wrapped.verdict(true), "NOT whole: 4 blocks overwritten by their rings");
        let noted = Findings { removed_segments: 2, truncated_strings: 1, ..Findings::default() };
        assert!(noted.is_whole(true));
        // A gap beside the overwritten blocks is a problem either way.
        let gap = Findings { missing_blocks: 5, overwritten_blocks: 4, ..Findings::default() };
        assert_eq!(gap.verdict(false), "NOT whole: 1 block missing (dropped or damaged)");
        for (finding, field) in [
            (Finding::UnknownRecords, Findings { unknown_records: 1, ..Findings::default() }),
            (Finding::RepeatedBlocks, Findings { repeated_blocks: 1, ..Findings::default() }),
            (Finding::NotStopped, Findings { not_stopped: 1, ..Findings::default() }),
            (Finding::DamagedPinArea, Findings { damaged_pin_areas: 1, ..Findings::default() }),
        ] {
            assert!(!field.is_whole(false), "{finding:?}");
        }
    }
}
