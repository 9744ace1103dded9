//! One thread's block sequence numbers, in the order its verified blocks came: the one gap
//! rule of docs/FORMAT.md ("Block order") and the order problems it names.

use std::collections::BTreeMap;

/// What one more block of a thread was, by its sequence number: see [`Sequences::add`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A number above every earlier one of the thread; `skipped` numbers between the highest
    /// before it and it (from 0 for the thread's first block) are missing so far.
    Ahead {
        /// How many numbers it jumps over.
        skipped: u64,
    },
    /// A new number below the highest of the thread's earlier blocks (`after`): a block that
    /// comes late, and fills a number that was a gap until then.
    Late {
        /// The highest number of the thread's blocks before it.
        after: u64,
    },
    /// A number an earlier block of the thread already had.
    Repeat,
}

/// The sequence numbers one thread's verified blocks had, in stream order.
///
/// Numbers are kept as ranges, so a thread whose blocks come in order costs one range
/// whatever their number, and a hostile order costs at most one range per block. Every
/// question the readers ask is answered from them: the gaps (numbers from 0 up to the
/// highest that no block had), the repeats and the late blocks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sequences {
    /// The numbers seen: disjoint, non-adjacent ranges `start => end` (inclusive).
    seen: BTreeMap<u64, u64>,
    /// How many distinct numbers the ranges hold (up to 2^64).
    distinct: u128,
    /// The highest number seen.
    highest: Option<u64>,
    /// Each repeated number, in stream order.
    repeats: Vec<u64>,
    /// Each late block: (the highest number before it, its number), in stream order.
    late: Vec<(u64, u64)>,
}

impl Sequences {
    /// Adds the next block's number; what it was.
    pub fn add(&mut self, n: u64) -> Step {
        if self.contains(n) {
            self.repeats.push(n);
            return Step::Repeat;
        }
        self.insert(n);
        match self.highest {
            Some(h) if n < h => {
                self.late.push((h, n));
                Step::Late { after: h }
            }
            highest => {
                self.highest = Some(n);
                // n > h here: the numbers strictly between them, or from 0 for a first block.
                let skipped = highest.map_or(n, |h| n - h - 1);
                Step::Ahead { skipped }
            }
        }
    }

    fn contains(&self, n: u64) -> bool {
        self.seen.range(..=n).next_back().is_some_and(|(_, &end)| end >= n)
    }

    /// Inserts a number not yet seen, merging it with the ranges it touches.
    fn insert(&mut self, n: u64) {
        self.distinct += 1;
        let before = self.seen.range(..n).next_back().filter(|(_, end)| end.checked_add(1) == Some(n)).map(|(&s, _)| s);
        let after = n.checked_add(1).and_then(|next| self.seen.get(&next).map(|&end| (next, end)));
        match (before, after) {
            (Some(start), Some((next, end))) => {
                self.seen.remove(&next);
                self.seen.insert(start, end);
            }
            (Some(start), None) => {
                self.seen.insert(start, n);
            }
            (None, Some((next, end))) => {
                self.seen.remove(&next);
                self.seen.insert(n, end);
            }
            (None, None) => {
                self.seen.insert(n, n);
            }
        }
    }

    /// The highest number seen, if any block was.
    pub fn highest(&self) -> Option<u64> {
        self.highest
    }

    /// The gaps: numbers from 0 up to the highest that no block had, as (first, count), in
    /// increasing order.
    pub fn gaps(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let mut expect = Some(0u64);
        self.seen.iter().filter_map(move |(&start, &end)| {
            let from = expect?;
            // A range ending at u64::MAX is the last there can be.
            expect = end.checked_add(1);
            (start > from).then(|| (from, start - from))
        })
    }

    /// How many numbers are missing: the gaps' lengths together (saturating at `u64::MAX`).
    pub fn missing(&self) -> u64 {
        let span = self.highest.map_or(0, |h| u128::from(h) + 1);
        u64::try_from(span - self.distinct).unwrap_or(u64::MAX)
    }

    /// The blocks overwritten by a ring: the gap from 0, when the thread's first numbers are
    /// missing (docs/FORMAT.md, "Losses in a ring file").
    pub fn oldest_missing(&self) -> u64 {
        match self.seen.first_key_value() {
            Some((&start, _)) => start,
            None => 0,
        }
    }

    /// Each repeated number, in stream order.
    pub fn repeats(&self) -> &[u64] {
        &self.repeats
    }

    /// Each late block as (the highest number before it, its number), in stream order.
    pub fn late(&self) -> &[(u64, u64)] {
        &self.late
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(numbers: &[u64]) -> (Sequences, Vec<Step>) {
        let mut s = Sequences::default();
        let steps = numbers.iter().map(|&n| s.add(n)).collect();
        (s, steps)
    }

    #[test]
    fn blocks_in_order_have_no_gap_and_one_range() {
        let (s, steps) = of(&[0, 1, 2, 3]);
        assert!(steps.iter().all(|s| *s == Step::Ahead { skipped: 0 }));
        assert_eq!((s.missing(), s.gaps().count(), s.seen.len()), (0, 0, 1));
    }

    #[test]
    fn gaps_repeats_and_late_blocks_follow_the_highest_so_far() {
        // 0, 3, 1, 2, 2, 6: 1 and 2 come late (after 3), 2 again, 4..=5 missing.
        let (s, steps) = of(&[0, 3, 1, 2, 2, 6]);
        assert_eq!(
            steps,
            [
                Step::Ahead { skipped: 0 },
                Step::Ahead { skipped: 2 },
                Step::Late { after: 3 },
                Step::Late { after: 3 },
                Step::Repeat,
                Step::Ahead { skipped: 2 },
            ]
        );
        assert_eq!(s.gaps().collect::<Vec<_>>(), [(4, 2)]);
        assert_eq!((s.missing(), s.repeats(), s.late()), (2, &[2][..], &[(3, 1), (3, 2)][..]));
        // What was skipped, less what came late, is what is missing at the end.
        let skipped: u64 = steps.iter().map(|s| if let Step::Ahead { skipped } = s { *skipped } else { 0 }).sum();
        assert_eq!(skipped - s.late().len() as u64, s.missing());
    }

    #[test]
    fn a_thread_whose_first_blocks_are_missing_has_its_oldest_overwritten() {
        let (s, steps) = of(&[5, 6, 8]);
        assert_eq!(steps[0], Step::Ahead { skipped: 5 });
        assert_eq!(s.gaps().collect::<Vec<_>>(), [(0, 5), (7, 1)]);
        assert_eq!((s.oldest_missing(), s.missing()), (5, 6));
    }

    #[test]
    fn the_largest_numbers_neither_overflow_nor_panic() {
        let (s, _) = of(&[u64::MAX, 0, u64::MAX - 1, u64::MAX]);
        assert_eq!(s.missing(), u64::MAX - 2);
        assert_eq!(s.gaps().collect::<Vec<_>>(), [(1, u64::MAX - 2)]);
        assert_eq!(s.repeats(), [u64::MAX]);
    }

    #[test]
    fn ranges_merge_from_both_sides() {
        let (s, _) = of(&[0, 2, 4, 3, 1]);
        assert_eq!((s.seen.len(), s.missing()), (1, 0));
    }
}
