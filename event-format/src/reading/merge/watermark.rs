//! How far a merge by time ([`Order`](super::Order), of `print` and of [`Merge`](super::Merge))
//! may hand on before it has read every block: the earliest time a block not yet merged can
//! hold, from the logs' block indexes ([`index_blocks`]).
//!
//! A block's records start no earlier than its header's `base_time` (the reference writer
//! starts a block at the time of its first record, and a new block when its thread's clock
//! steps back past that; docs/FORMAT.md, "Writing times" and "Merging"). So once a block is merged, every line earlier
//! than the least `base_time` of the blocks after it, in every log, is in its place and can
//! be written: `print` holds what is out of order in the file, not a window's worth of lines
//! that already are in order. The merge window still bounds what it holds.
//!
//! The index is trusted only while the blocks agree with it. A log without one (a ring file,
//! a pipe, a stream whose block lost its sync word), a block the index does not list or
//! lists with another `base_time`, or a block with a line earlier than its `base_time` ends
//! the early writing for the rest of the run: from there, the window alone orders the lines.
//! A line written early that a later block then precedes is counted, as the window's are,
//! and [`Watermark::early`] tells `print` which logs broke the rule, so that it can say why.
//!
//! [`index_blocks`]: crate::decode::index_blocks

use crate::codec::decode::BlockStart;
use crate::codec::wire::Clock;

/// One log's index and how far its merge has come.
#[derive(Debug)]
struct Log {
    /// Its blocks, in the order of their offsets.
    index: Vec<BlockStart>,
    /// `after[i]`: the least `base_time` of blocks `i..`; `after[n]` is `u64::MAX`.
    after: Vec<u64>,
    /// The least `base_time` of the blocks not yet merged (`u64::MAX`: none is left);
    /// `None`: not known (no index, or the blocks did not agree with it).
    bound: Option<u64>,
    /// A block had a line earlier than its `base_time`.
    early: bool,
}

/// The logs' indexes, and the time before which every line is known to be merged.
#[derive(Debug)]
pub struct Watermark {
    logs: Vec<Log>,
    /// Each log's clock, when several are merged on wall-clock time.
    wall: Option<Vec<Clock>>,
}

impl Watermark {
    /// The marks of logs whose indexes are `indexes` (`None` for a log without one), merged
    /// on wall-clock time by `wall` when several are.
    pub fn new(indexes: Vec<Option<Vec<BlockStart>>>, wall: Option<Vec<Clock>>) -> Watermark {
        let logs = indexes
            .into_iter()
            .map(|index| {
                let indexed = index.is_some();
                let index = index.unwrap_or_default();
                let mut after = vec![u64::MAX; index.len() + 1];
                for i in (0..index.len()).rev() {
                    after[i] = after[i + 1].min(index[i].base_time);
                }
                let bound = indexed.then_some(after[0]);
                Log { index, after, bound, early: false }
            })
            .collect();
        Watermark { logs, wall }
    }

    /// The block of log `file` at `offset` is merged: `block` gives its `base_time` and the
    /// time of its earliest line (`None` without lines), or is `None` for a damaged block.
    pub fn merged(&mut self, file: usize, offset: u64, block: Option<(u64, Option<u64>)>) {
        let Some(log) = self.logs.get_mut(file) else { return };
        if log.bound.is_none() {
            return;
        }
        let at = log.index.partition_point(|b| b.offset < offset);
        let listed = log.index.get(at).is_some_and(|b| b.offset == offset);
        log.bound = match block {
            // A damaged block holds no line: the blocks after it are what is left.
            None => Some(log.after[at + usize::from(listed)]),
            Some((base_time, earliest)) => {
                if earliest.is_some_and(|t| t < base_time) {
                    log.early = true;
                    None
                } else if !listed || log.index[at].base_time != base_time {
                    // A block the index does not know (the file changed, or the decoder found a
                    // block after damage that the headers did not lead to).
                    None
                } else {
                    Some(log.after[at + 1])
                }
            }
        };
    }

    /// The merge key (ticks of the one log, or wall-clock nanoseconds of several) before
    /// which every line is merged; `None` when no line may be written early.
    pub fn key(&self) -> Option<i128> {
        let mut key = i128::MAX;
        for (f, log) in self.logs.iter().enumerate() {
            let bound = log.bound?;
            if bound == u64::MAX {
                continue;
            }
            let k = match &self.wall {
                Some(clocks) => clocks[f].wall_ns(bound),
                None => i128::from(bound),
            };
            key = key.min(k);
        }
        Some(key)
    }

    /// Whether a block of log `file` had a line earlier than its `base_time`.
    pub fn early(&self, file: usize) -> bool {
        self.logs.get(file).is_some_and(|l| l.early)
    }

    /// Whether a block of any log had a line earlier than its `base_time`.
    pub fn any_early(&self) -> bool {
        self.logs.iter().any(|l| l.early)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn starts(blocks: &[(u64, u64)]) -> Option<Vec<BlockStart>> {
        Some(blocks.iter().map(|&(offset, base_time)| BlockStart { offset, base_time }).collect())
    }

    #[test]
    fn the_mark_is_the_least_base_time_of_the_blocks_left() {
        // Thread blocks out of time order in the file: 100, 50, 300, 200.
        let mut w = Watermark::new(vec![starts(&[(0, 100), (10, 50), (20, 300), (30, 200)])], None);
        assert_eq!(w.key(), Some(50));
        w.merged(0, 0, Some((100, Some(100))));
        assert_eq!(w.key(), Some(50));
        w.merged(0, 10, Some((50, Some(60))));
        assert_eq!(w.key(), Some(200));
        // A damaged block: the blocks after it are what is left.
        w.merged(0, 20, None);
        assert_eq!(w.key(), Some(200));
        w.merged(0, 30, Some((200, None)));
        assert_eq!(w.key(), Some(i128::MAX), "every block is merged");
        assert!(!w.early(0));
    }

    #[test]
    fn several_logs_wait_for_the_one_furthest_behind_and_one_without_an_index_for_all() {
        let mut w = Watermark::new(vec![starts(&[(0, 100), (10, 400)]), starts(&[(0, 300)])], None);
        assert_eq!(w.key(), Some(100));
        w.merged(0, 0, Some((100, Some(100))));
        assert_eq!(w.key(), Some(300));
        w.merged(1, 0, Some((300, Some(300))));
        assert_eq!(w.key(), Some(400));
        let w = Watermark::new(vec![starts(&[(0, 100)]), None], None);
        assert_eq!(w.key(), None);
        assert_eq!(Watermark::new(vec![None, None], None).key(), None);
        // An indexed log of no blocks waits for nothing.
        let w = Watermark::new(vec![starts(&[]), starts(&[(0, 7)])], None);
        assert_eq!(w.key(), Some(7));
    }

    #[test]
    fn blocks_that_disagree_with_the_index_end_early_writing() {
        let index = || vec![starts(&[(0, 100), (10, 200), (20, 300)])];
        // A line earlier than its block's base_time: said, and the window orders the rest.
        let mut w = Watermark::new(index(), None);
        w.merged(0, 0, Some((100, Some(99))));
        assert_eq!(w.key(), None);
        assert!(w.early(0));
        w.merged(0, 10, Some((200, Some(200))));
        assert_eq!(w.key(), None, "for the rest of the run");
        // A block the index does not list, or lists with another base_time.
        let mut w = Watermark::new(index(), None);
        w.merged(0, 5, Some((150, Some(150))));
        assert_eq!(w.key(), None);
        assert!(!w.early(0));
        let mut w = Watermark::new(index(), None);
        w.merged(0, 10, Some((250, Some(250))));
        assert_eq!(w.key(), None);
        // A damaged block where the index has none (the decoder looking for a sync word).
        let mut w = Watermark::new(index(), None);
        w.merged(0, 15, None);
        assert_eq!(w.key(), Some(300));
    }
}
