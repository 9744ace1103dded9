//! Declared histograms (events.def's `HISTOGRAM`, since format 2.1.0): the buckets a value
//! falls into, the text a `Histogram` record carries its buckets in, and the merge of records
//! over threads, segments and logs, for every reader and for the recorder that writes them
//! (docs/FORMAT.md, "Histograms").
//!
//! - [`bucket`] and [`bounds`] are the one definition of the buckets: the recorder counts a
//!   value in `bucket(value, buckets)`, a reader shows bucket `i` as `bounds(i, buckets)`.
//! - [`Distribution`] is what one or many records hold: the count, sum, smallest and largest
//!   value and the count of each bucket; distributions of one declaration add up
//!   ([`Distribution::merge`]), and give percentiles to within a bucket's width.
//! - [`Declared`] lists the histograms a stream's header declares, in the order its records
//!   name them; [`Histograms`] gathers a log's (or several logs') records into one
//!   distribution per declaration, and per thread.
//!
//! ```
//! use event_format::histogram::{Distribution, bounds, bucket};
//! use event_format::schema::Buckets;
//!
//! let hdr2 = Buckets { precision: 2 };
//! assert_eq!((bucket(0, hdr2), bucket(3, hdr2), bucket(4, hdr2), bucket(7, hdr2), bucket(8, hdr2)), (0, 3, 4, 7, 8));
//! assert_eq!(bounds(bucket(1000, hdr2), hdr2), (896, 1024)); // 1000 is in [896, 1024)
//!
//! let mut a = Distribution::new(Buckets::LOG2);
//! for v in [1, 2, 3, 100] {
//!     a.record(v);
//! }
//! let mut b = Distribution::parse(Buckets::LOG2, 2, 9, 4, 5, "3:2")?;
//! b.merge(&a)?;
//! assert_eq!((b.count(), b.sum(), b.min(), b.max()), (6, 115, Some(1), Some(100)));
//! assert_eq!(b.buckets_text(), "1:1 2:2 3:2 7:1");
//! assert_eq!(b.percentile(50.0), Some(3)); // the 3rd value of 6 is in [2, 4): at most 3
//! # Ok::<(), String>(())
//! ```

use crate::codec::builtins::BuiltinEvent;
use crate::codec::decode::Event;
use crate::codec::wire::Header;
use event_def::schema::{Buckets, Histogram, HistogramOf};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The bucket of `value` (docs/FORMAT.md, "Histograms"): with `p` the buckets' precision and
/// `S = 2^p`, a value below `S` is its own bucket; else, with `e` the place of its highest
/// set bit, the bucket is `(e - p + 1) * S + (value >> (e - p)) - S`: its `p` bits below the
/// highest are kept. `LOG2` (p = 0): 0 for 0, `k + 1` for `[2^k, 2^(k+1))`.
pub fn bucket(value: u64, buckets: Buckets) -> usize {
    let p = u32::from(buckets.precision.min(Buckets::MAX_PRECISION));
    let s = 1u64 << p;
    if value < s {
        return value as usize;
    }
    let e = 63 - value.leading_zeros();
    ((u64::from(e - p) + 1) * s + (value >> (e - p)) - s) as usize
}

/// The values of bucket `index`: `[from, to)` (`to` may be 2^64).
pub fn bounds(index: usize, buckets: Buckets) -> (u64, u128) {
    let p = u32::from(buckets.precision.min(Buckets::MAX_PRECISION));
    let s = 1usize << p;
    if index < s {
        return (index as u64, index as u128 + 1);
    }
    let shift = (index / s - 1) as u32;
    let m = (index % s + s) as u128;
    let from = m << shift;
    let to = (m + 1) << shift;
    (u64::try_from(from).unwrap_or(u64::MAX), to)
}

/// The highest bucket of `buckets` (the bucket of `u64::MAX`).
pub fn last_bucket(buckets: Buckets) -> usize {
    bucket(u64::MAX, buckets)
}

/// A distribution of values: what one `Histogram` record holds, or the sum of many of one
/// declaration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Distribution {
    buckets: Buckets,
    count: u64,
    /// Saturated at `u64::MAX`.
    sum: u64,
    min: u64,
    max: u64,
    /// The non-empty buckets, `(index, count)`, by index: sparse, so that a record of a few
    /// buckets far apart costs its reader memory in proportion to its text.
    counts: Vec<(u32, u64)>,
}

impl Distribution {
    /// An empty distribution in `buckets`.
    pub fn new(buckets: Buckets) -> Distribution {
        Distribution { buckets, count: 0, sum: 0, min: u64::MAX, max: 0, counts: Vec::new() }
    }

    /// Counts `value`.
    #[inline]
    pub fn record(&mut self, value: u64) {
        let i = bucket(value, self.buckets) as u32;
        // The latest bucket first: values come in runs.
        match self.counts.last_mut() {
            Some(last) if last.0 == i => last.1 += 1,
            _ => match self.counts.binary_search_by_key(&i, |e| e.0) {
                Ok(k) => self.counts[k].1 += 1,
                Err(k) => self.counts.insert(k, (i, 1)),
            },
        }
        self.count += 1;
        self.sum = self.sum.saturating_add(value);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    /// A distribution as a record gives it: its `count`, `sum`, `min`, `max` and `buckets`
    /// text. An error says what is wrong with it: text that is not `INDEX:COUNT` pairs
    /// (indexes increasing, counts above 0), an index past the buckets' last, counts that do
    /// not add up to `count`, or a `min` or `max` outside its buckets.
    pub fn parse(
        buckets: Buckets,
        count: u64,
        sum: u64,
        min: u64,
        max: u64,
        text: &str,
    ) -> Result<Distribution, String> {
        let mut d = Distribution { buckets, count, sum, min, max, counts: Vec::new() };
        let last = last_bucket(buckets);
        let mut total = 0u64;
        for pair in text.split(' ').filter(|p| !p.is_empty()) {
            let (index, n) = pair.split_once(':').ok_or_else(|| format!("`{pair}` is not INDEX:COUNT"))?;
            let index: usize = index.parse().map_err(|_| format!("`{index}` in `{pair}` is not a bucket index"))?;
            let n: u64 = n.parse().map_err(|_| format!("`{n}` in `{pair}` is not a count"))?;
            if index > last {
                return Err(format!("bucket {index} is past the last, {last}, of {}", buckets.word()));
            }
            if d.counts.last().is_some_and(|l| l.0 as usize >= index) {
                return Err(format!("bucket {index} comes after a higher one or twice"));
            }
            if n == 0 {
                return Err(format!("bucket {index} has a count of 0 (empty buckets are left out)"));
            }
            d.counts.push((index as u32, n));
            total = total.saturating_add(n);
        }
        if total != count {
            return Err(format!("its buckets hold {total} values, and its count says {count}"));
        }
        if count == 0 {
            d.min = u64::MAX;
            d.max = 0;
            return Ok(d);
        }
        let (first, last) = (d.counts[0].0 as usize, d.counts[d.counts.len() - 1].0 as usize);
        let (lo, _) = bounds(first, buckets);
        let (_, hi) = bounds(last, buckets);
        if min < lo || u128::from(max) >= hi || min > max {
            return Err(format!("its min {min} and max {max} are not within its buckets [{lo}, {hi})"));
        }
        Ok(d)
    }

    /// The distribution of a `Histogram` record (docs/FORMAT.md, "Histograms") in `buckets`
    /// (its declaration's), with the record's `thread`, `histogram` and `since`.
    pub fn of_record(event: &Event<'_>, buckets: Buckets) -> Result<(RecordFacts, Distribution), String> {
        let Some(BuiltinEvent::Histogram { thread, histogram, since, count, sum, min, max, buckets: text }) =
            BuiltinEvent::of(event)
        else {
            return Err("a Histogram record's arguments are not its format's".to_owned());
        };
        let text = std::str::from_utf8(text.bytes).map_err(|_| "its buckets are not UTF-8".to_owned())?;
        let facts = RecordFacts { thread, histogram: histogram as usize, since, until: event.time };
        Ok((facts, Distribution::parse(buckets, count, sum, min, max, text)?))
    }

    /// Adds `other`'s values to these: an error when its buckets are not these.
    pub fn merge(&mut self, other: &Distribution) -> Result<(), String> {
        if other.buckets != self.buckets {
            return Err(format!(
                "a histogram of {} buckets cannot merge with one of {}",
                other.buckets.word(),
                self.buckets.word()
            ));
        }
        let mut merged = Vec::with_capacity(self.counts.len() + other.counts.len());
        let (mut i, mut j) = (0, 0);
        let (a, b) = (&self.counts, &other.counts);
        while i < a.len() || j < b.len() {
            match (a.get(i), b.get(j)) {
                (Some(x), Some(y)) if x.0 == y.0 => {
                    merged.push((x.0, x.1.saturating_add(y.1)));
                    i += 1;
                    j += 1;
                }
                (Some(x), Some(y)) if x.0 < y.0 => {
                    merged.push(*x);
                    i += 1;
                }
                (Some(_), Some(y)) | (None, Some(y)) => {
                    merged.push(*y);
                    j += 1;
                }
                (Some(x), None) => {
                    merged.push(*x);
                    i += 1;
                }
                (None, None) => break,
            }
        }
        self.counts = merged;
        self.count = self.count.saturating_add(other.count);
        self.sum = self.sum.saturating_add(other.sum);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        Ok(())
    }

    /// Its buckets' layout.
    pub fn buckets(&self) -> Buckets {
        self.buckets
    }

    /// The values counted.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Their sum, saturated at `u64::MAX`.
    pub fn sum(&self) -> u64 {
        self.sum
    }

    /// The smallest value counted; `None` when none was.
    pub fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    /// The largest value counted; `None` when none was.
    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    /// The non-empty buckets, `(index, count)`, by index.
    pub fn nonempty(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.counts.iter().map(|&(i, n)| (i as usize, n))
    }

    /// Every bucket from the first non-empty one to the last, `(index, count)`: what a
    /// histogram's lines show.
    pub fn span(&self) -> Vec<(usize, u64)> {
        let (Some(first), Some(last)) = (self.counts.first(), self.counts.last()) else { return Vec::new() };
        let mut counts = self.counts.iter().peekable();
        (first.0..=last.0)
            .map(|i| match counts.peek() {
                Some(&&(j, n)) if j == i => {
                    counts.next();
                    (i as usize, n)
                }
                _ => (i as usize, 0),
            })
            .collect()
    }

    /// The buckets as a record writes them: `INDEX:COUNT` pairs of the non-empty buckets,
    /// separated by one space, indexes increasing; empty when nothing was counted.
    pub fn buckets_text(&self) -> String {
        let mut out = String::new();
        for (i, n) in self.nonempty() {
            if !out.is_empty() {
                out.push(' ');
            }
            let _ = write!(out, "{i}:{n}");
        }
        out
    }

    /// The `p`-th percentile (0 < p <= 100) to within a bucket: the value of nearest rank
    /// (the ⌈p·n/100⌉-th smallest) lies in some bucket, and this is that bucket's largest
    /// value, kept within the smallest and largest values counted. `None` when nothing was
    /// counted. Exact where a bucket holds one value (below 2^precision, or all of LOG2's
    /// first two), else at most one bucket's width (1/2^precision of the value) above.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((p / 100.0 * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0u64;
        for &(i, n) in &self.counts {
            seen = seen.saturating_add(n);
            if seen >= rank {
                let (_, to) = bounds(i as usize, self.buckets);
                let top = u64::try_from(to - 1).unwrap_or(u64::MAX);
                return Some(top.clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    /// Clears it, keeping its buckets (and its memory).
    pub fn clear(&mut self) {
        self.count = 0;
        self.sum = 0;
        self.min = u64::MAX;
        self.max = 0;
        self.counts.clear();
    }
}

/// What a `Histogram` record says besides its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordFacts {
    /// The thread whose values it counts.
    pub thread: u64,
    /// The histogram's place among those its stream's header declares ([`Declared`]).
    pub histogram: usize,
    /// When its period began, in the stream's ticks.
    pub since: u64,
    /// When it ended: the record's time.
    pub until: u64,
}

/// One histogram a stream's header declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclaredHistogram {
    /// The name of its set (empty for a stream of one unnamed set).
    pub set: String,
    /// Its declaration.
    pub histogram: Histogram,
    /// The unit of its values: `ns` for a span's durations, else its parameter's name.
    pub unit: String,
    /// What it counts, as people read it: `span request`, `ObjectAlloc.size`.
    pub of: String,
}

impl DeclaredHistogram {
    /// Its name as readers show it: `name`, or `set:name` when `qualified`.
    pub fn full_name(&self, qualified: bool) -> String {
        if qualified && !self.set.is_empty() {
            format!("{}:{}", self.set, self.histogram.name)
        } else {
            self.histogram.name.clone()
        }
    }
}

/// The histograms a stream's header declares, in the order its `Histogram` records number
/// them: set after set in the header's order, each set's in its declaration order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Declared {
    list: Vec<DeclaredHistogram>,
}

impl Declared {
    /// The declared histograms of `header`.
    pub fn new(header: &Header) -> Declared {
        let mut list = Vec::new();
        for set in &header.sets {
            for h in &set.schema.histograms {
                let (unit, of) = match &h.of {
                    HistogramOf::Span(span) => ("ns".to_owned(), format!("span {span}")),
                    HistogramOf::Param { event, param } => {
                        let name = set
                            .schema
                            .event_by_code(*event)
                            .map_or_else(|| format!("0x{event:04X}"), |e| e.name.clone());
                        (param.clone(), format!("{name}.{param}"))
                    }
                };
                list.push(DeclaredHistogram { set: set.schema.name.clone(), histogram: h.clone(), unit, of });
            }
        }
        Declared { list }
    }

    /// The histogram a record numbers `index`.
    pub fn get(&self, index: usize) -> Option<&DeclaredHistogram> {
        self.list.get(index)
    }

    /// Every declared histogram, in order.
    pub fn iter(&self) -> impl Iterator<Item = &DeclaredHistogram> + '_ {
        self.list.iter()
    }

    /// Whether the header declares none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// The key a histogram is merged under across logs: its set, name, what it counts and its
/// buckets (two logs that declare a name differently keep two histograms).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HistogramKey {
    /// Its set's name.
    pub set: String,
    /// Its name.
    pub name: String,
    /// What it counts, as [`DeclaredHistogram::of`] says.
    pub of: String,
    /// Its buckets' precision.
    pub precision: u8,
}

/// One declared histogram, merged over the records given.
#[derive(Clone, Debug)]
pub struct Merged {
    /// Its declaration (the first log's that declares it).
    pub declared: DeclaredHistogram,
    /// Every thread's values together.
    pub total: Distribution,
    /// Each thread's, by (log's place, thread).
    pub threads: BTreeMap<(usize, u64), Distribution>,
    /// The records merged.
    pub records: u64,
    /// The earliest `since` and the latest record time, per log (in that log's ticks).
    pub periods: BTreeMap<usize, (u64, u64)>,
}

/// A log's (or several logs') `Histogram` records, merged per declaration; see the module
/// docs.
///
/// ```
/// use event_format::histogram::Histograms;
/// let histograms = Histograms::new();
/// assert!(histograms.is_empty());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Histograms {
    /// Per log (its place): its header's declarations.
    declared: Vec<Declared>,
    merged: BTreeMap<HistogramKey, Merged>,
    /// Records that could not be merged, with why (a record of an undeclared histogram, or
    /// whose buckets do not read).
    unreadable: Vec<String>,
}

impl Histograms {
    /// Nothing merged yet.
    pub fn new() -> Histograms {
        Histograms::default()
    }

    /// Makes `header` the header of log `file` (its place among the logs read): its
    /// declarations are what its records name. Every declared histogram is listed, with
    /// nothing counted until records come.
    pub fn add_log(&mut self, file: usize, header: &Header) {
        if self.declared.len() <= file {
            self.declared.resize(file + 1, Declared::default());
        }
        let declared = Declared::new(header);
        for d in declared.iter() {
            self.merged.entry(key(d)).or_insert_with(|| Merged {
                declared: d.clone(),
                total: Distribution::new(d.histogram.buckets),
                threads: BTreeMap::new(),
                records: 0,
                periods: BTreeMap::new(),
            });
        }
        self.declared[file] = declared;
    }

    /// Takes `event` of log `file` when it is a `Histogram` record: merges it and returns
    /// `true`; `false` for any other event. A record that does not read (an index no
    /// declaration has, buckets that break its rules) is counted among the
    /// [`unreadable`](Histograms::unreadable) ones.
    pub fn take(&mut self, file: usize, event: &Event<'_>) -> bool {
        if event.desc.code != event_def::builtin::HISTOGRAM || !event.desc.is_builtin() {
            return false;
        }
        let Some(BuiltinEvent::Histogram { histogram, .. }) = BuiltinEvent::of(event) else { return true };
        let index = histogram as usize;
        let Some(declared) = self.declared.get(file).and_then(|d| d.get(index)).cloned() else {
            self.unreadable
                .push(format!("a Histogram record names histogram {index}, which its header does not declare"));
            return true;
        };
        match Distribution::of_record(event, declared.histogram.buckets) {
            Ok((facts, d)) => {
                let merged = self.merged.get_mut(&key(&declared)).expect("every declared histogram is listed");
                // Same buckets: the merges cannot fail.
                let _ = merged.total.merge(&d);
                let _ = merged
                    .threads
                    .entry((file, facts.thread))
                    .or_insert_with(|| Distribution::new(d.buckets()))
                    .merge(&d);
                merged.records += 1;
                let period = merged.periods.entry(file).or_insert((facts.since, facts.until));
                period.0 = period.0.min(facts.since);
                period.1 = period.1.max(facts.until);
            }
            Err(why) => self.unreadable.push(format!("a Histogram record of `{}`: {why}", declared.histogram.name)),
        }
        true
    }

    /// Every declared histogram, by set and name, merged.
    pub fn iter(&self) -> impl Iterator<Item = (&HistogramKey, &Merged)> + '_ {
        self.merged.iter()
    }

    /// Whether no log given declares a histogram.
    pub fn is_empty(&self) -> bool {
        self.merged.is_empty()
    }

    /// Why the records that could not be merged could not.
    pub fn unreadable(&self) -> &[String] {
        &self.unreadable
    }

    /// Whether the histograms' names need their sets to tell them apart (they come from more
    /// than one set).
    pub fn qualified(&self) -> bool {
        let mut sets = self.merged.keys().map(|k| k.set.as_str());
        let first = sets.next();
        sets.any(|s| Some(s) != first)
    }
}

fn key(d: &DeclaredHistogram) -> HistogramKey {
    HistogramKey {
        set: d.set.clone(),
        name: d.histogram.name.clone(),
        of: d.of.clone(),
        precision: d.histogram.buckets.precision,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_once_in_order() {
        for precision in 0..=Buckets::MAX_PRECISION {
            let b = Buckets { precision };
            let mut expected_from = 0u128;
            for i in 0..=last_bucket(b) {
                let (from, to) = bounds(i, b);
                assert_eq!(u128::from(from), expected_from, "{precision} {i}");
                assert!(to > u128::from(from));
                assert_eq!(bucket(from, b), i);
                assert_eq!(bucket(u64::try_from(to - 1).unwrap_or(u64::MAX), b), i);
                expected_from = to;
            }
            assert_eq!(expected_from, 1u128 << 64, "{precision}");
        }
        // LOG2 is latency's: 0, 1, [2, 4), [4, 8) ...
        assert_eq!((0..6).map(|v| bucket(v, Buckets::LOG2)).collect::<Vec<_>>(), [0, 1, 2, 2, 3, 3]);
        assert_eq!(bounds(11, Buckets::LOG2), (1024, 2048));
    }

    #[test]
    fn a_bucket_is_at_most_a_share_of_its_values() {
        for precision in 1..=Buckets::MAX_PRECISION {
            let b = Buckets { precision };
            for v in [1000u64, 123_456_789, u64::MAX / 3] {
                let (from, to) = bounds(bucket(v, b), b);
                assert!((to - u128::from(from)) * (1 << precision) <= u128::from(from).max(1 << precision));
            }
        }
    }

    #[test]
    fn records_read_back_and_refuse_what_breaks_their_rules() {
        let mut d = Distribution::new(Buckets { precision: 3 });
        for v in [0, 7, 8, 9, 1_000_000, 1_000_001, 5] {
            d.record(v);
        }
        let text = d.buckets_text();
        let back = Distribution::parse(d.buckets(), d.count(), d.sum(), d.min().unwrap(), d.max().unwrap(), &text);
        assert_eq!(back.as_ref(), Ok(&d));
        let parse = |count, min, max, text: &str| Distribution::parse(Buckets::LOG2, count, 0, min, max, text);
        assert!(parse(1, 1, 1, "1:1").is_ok());
        assert!(parse(0, 0, 0, "").is_ok());
        assert!(parse(2, 1, 1, "1:1").unwrap_err().contains("count says 2"));
        assert!(parse(2, 1, 2, "2:1 1:1").unwrap_err().contains("after a higher"));
        assert!(parse(1, 1, 1, "1:0 2:1").unwrap_err().contains("count of 0"));
        assert!(parse(1, 1, 1, "99:1").unwrap_err().contains("past the last"));
        assert!(parse(1, 1, 1, "x").unwrap_err().contains("INDEX:COUNT"));
        assert!(parse(1, 9, 9, "2:1").unwrap_err().contains("not within"));
    }

    #[test]
    fn merges_add_bucket_by_bucket_in_any_order_and_hold_what_they_read() {
        let of = |values: &[u64]| {
            let mut d = Distribution::new(Buckets { precision: 1 });
            values.iter().for_each(|&v| d.record(v));
            d
        };
        let (a, b, c) = (of(&[1, 9, 1000]), of(&[2, 9, 9, 70_000]), of(&[u64::MAX, 0]));
        let mut left = a.clone();
        left.merge(&b).unwrap();
        left.merge(&c).unwrap();
        let mut right = c.clone();
        right.merge(&b).unwrap();
        right.merge(&a).unwrap();
        assert_eq!(left, right);
        assert_eq!(left, of(&[1, 9, 1000, 2, 9, 9, 70_000, u64::MAX, 0]));
        assert!(left.merge(&Distribution::new(Buckets::LOG2)).unwrap_err().contains("cannot merge"));
        // Two buckets far apart: two entries, whatever their indexes.
        let far = Distribution::parse(Buckets { precision: 7 }, 2, 0, 0, u64::MAX, "0:1 7423:1").unwrap();
        assert_eq!(far.counts.len(), 2);
        assert_eq!(far.span().len(), 7424, "the lines a reader draws: every bucket between");
    }

    #[test]
    fn percentiles_are_the_rank_buckets_top_within_min_and_max() {
        let mut d = Distribution::new(Buckets::LOG2);
        for v in 1..=100 {
            d.record(v);
        }
        // The 50th of 100 is 50, in [32, 64): 63. The 100th is 100, in [64, 128): max 100.
        assert_eq!((d.percentile(50.0), d.percentile(100.0), d.percentile(1.0)), (Some(63), Some(100), Some(1)));
        let mut exact = Distribution::new(Buckets { precision: 7 });
        exact.record(100);
        exact.record(3);
        assert_eq!(exact.percentile(50.0), Some(3));
        assert_eq!(Distribution::new(Buckets::LOG2).percentile(50.0), None);
    }
}
