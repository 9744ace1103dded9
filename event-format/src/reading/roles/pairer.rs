//! The one rule that pairs a span's end with its begin (docs/FORMAT.md, "Meanings"):
//!
//! - a span of one thread ([`SpanKey::Thread`], [`SpanKey::Tracing`]) ends at the next end of
//!   its key on the same thread, which closes the innermost open span of that key there. A
//!   thread's spans nest: spans begun inside the one closed and still open are not paired
//!   (they are *cut*, unended, as one still open at the end of the log is);
//! - an async span ([`SpanKey::Async`]) ends at the next end of its span and id on any thread,
//!   which closes the latest open span of that key;
//! - an end that closes nothing is *unmatched*.
//!
//! Fed events in time order (a thread's in its order; async spans need all threads merged
//! by time, as event-dump's merge gives them), it hands back the begin's payload `T` with
//! each end, and at the end of the log what is still open. No time is ever invented for a
//! span that was not ended.
//!
//! Memory is the spans open at once. So that a log whose spans never end (or a hostile one)
//! costs no more than that: a thread holds at most [`MAX_DEPTH`] open spans, and the async
//! spans open at once are at most [`MAX_OPEN`]; beyond, the oldest is given up (counted,
//! [`Pairer::given_up`], and unended).

use super::SpanKey;
use std::collections::{BTreeMap, HashMap, VecDeque};

/// The most spans one thread holds open; a begin beyond gives up the thread's oldest.
pub const MAX_DEPTH: usize = 1 << 16;

/// The most async spans open at once; a begin beyond gives up the oldest.
pub const MAX_OPEN: usize = 1 << 20;

/// What an end closed: the begin's payload, and the payloads of the spans begun inside it on
/// its thread and still open, innermost first, which end unpaired with it (cut).
#[derive(Debug, PartialEq, Eq)]
pub struct Ended<T> {
    /// The payload given with the begin.
    pub begin: T,
    /// The spans cut by this end, innermost first; always empty for an async span.
    pub cut: Vec<T>,
}

/// The spans still open when a log ends.
#[derive(Debug, PartialEq, Eq)]
pub struct Unended<T> {
    /// Each thread with open spans, in order of thread ids, its spans innermost first.
    pub threads: Vec<(u64, Vec<(SpanKey, T)>)>,
    /// Each async key with open spans, in key order, its spans latest first.
    pub asyncs: Vec<(SpanKey, Vec<T>)>,
}

impl<T> Unended<T> {
    /// How many spans are unended.
    pub fn len(&self) -> usize {
        self.threads.iter().map(|(_, s)| s.len()).sum::<usize>()
            + self.asyncs.iter().map(|(_, s)| s.len()).sum::<usize>()
    }

    /// Whether every span ended.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Pairs spans' ends with their begins; see the module docs.
#[derive(Debug)]
pub struct Pairer<T> {
    /// Each thread's open spans, outermost first.
    threads: HashMap<u64, VecDeque<(SpanKey, T)>>,
    /// Open async spans by key, oldest first, each with its serial number.
    asyncs: HashMap<SpanKey, Vec<(u64, T)>>,
    /// The open async spans by serial number: the oldest is the first.
    order: BTreeMap<u64, SpanKey>,
    serial: u64,
    unmatched: u64,
    given_up: u64,
    /// The most open spans a thread holds, and async spans all together.
    max_depth: usize,
    max_open: usize,
}

impl<T> Default for Pairer<T> {
    fn default() -> Pairer<T> {
        Pairer::with_limits(MAX_DEPTH, MAX_OPEN)
    }
}

impl<T> Pairer<T> {
    /// A pairer with nothing open.
    pub fn new() -> Pairer<T> {
        Pairer::default()
    }

    /// A pairer that holds at most `max_depth` open spans on a thread and `max_open` async
    /// spans (at least 1 each) instead of [`MAX_DEPTH`] and [`MAX_OPEN`].
    pub fn with_limits(max_depth: usize, max_open: usize) -> Pairer<T> {
        Pairer {
            threads: HashMap::new(),
            asyncs: HashMap::new(),
            order: BTreeMap::new(),
            serial: 0,
            unmatched: 0,
            given_up: 0,
            max_depth: max_depth.max(1),
            max_open: max_open.max(1),
        }
    }

    /// A span of `key` begins on `thread`; `payload` comes back with its end. Returns the
    /// payload of the span given up to make room for it ([`Pairer::given_up`]), if one was:
    /// a reader that keeps more of a span than the payload frees it there.
    pub fn begin(&mut self, thread: u64, key: SpanKey, payload: T) -> Option<T> {
        let mut given_up = None;
        if key.is_async() {
            if self.order.len() >= self.max_open
                && let Some((_, oldest)) = self.order.pop_first()
            {
                if let Some(open) = self.asyncs.get_mut(&oldest) {
                    given_up = Some(open.remove(0).1);
                    if open.is_empty() {
                        self.asyncs.remove(&oldest);
                    }
                }
                self.given_up += 1;
            }
            self.serial += 1;
            self.order.insert(self.serial, key.clone());
            self.asyncs.entry(key).or_default().push((self.serial, payload));
            return given_up;
        }
        let stack = self.threads.entry(thread).or_default();
        if stack.len() >= self.max_depth {
            given_up = stack.pop_front().map(|(_, p)| p);
            self.given_up += 1;
        }
        stack.push_back((key, payload));
        given_up
    }

    /// A span of `key` ends on `thread`: what it closed, or `None` when it closes nothing
    /// (counted, [`Pairer::unmatched`]).
    pub fn end(&mut self, thread: u64, key: &SpanKey) -> Option<Ended<T>> {
        if key.is_async() {
            let Some(open) = self.asyncs.get_mut(key) else {
                self.unmatched += 1;
                return None;
            };
            let (serial, begin) = open.pop()?;
            if open.is_empty() {
                self.asyncs.remove(key);
            }
            self.order.remove(&serial);
            return Some(Ended { begin, cut: Vec::new() });
        }
        let stack = self.threads.get_mut(&thread);
        let Some(at) = stack.as_ref().and_then(|s| s.iter().rposition(|(k, _)| k == key)) else {
            self.unmatched += 1;
            return None;
        };
        let stack = stack?;
        let mut cut = Vec::new();
        while stack.len() > at + 1 {
            if let Some((_, inner)) = stack.pop_back() {
                cut.push(inner);
            }
        }
        let (_, begin) = stack.pop_back()?;
        Some(Ended { begin, cut })
    }

    /// The innermost span open on `thread` (of one thread: an async span is on none), if
    /// any: the parent of a span `thread` begins now, and after an end the span the ended
    /// one was inside. For a reader that nests spans (a folded stack's frames).
    pub fn innermost_mut(&mut self, thread: u64) -> Option<&mut T> {
        self.threads.get_mut(&thread)?.back_mut().map(|(_, payload)| payload)
    }

    /// The spans open now.
    pub fn open(&self) -> usize {
        self.threads.values().map(VecDeque::len).sum::<usize>() + self.order.len()
    }

    /// The ends that closed nothing so far.
    pub fn unmatched(&self) -> u64 {
        self.unmatched
    }

    /// The spans given up so far, to keep within its limits ([`MAX_DEPTH`], [`MAX_OPEN`]):
    /// unended.
    pub fn given_up(&self) -> u64 {
        self.given_up
    }

    /// What is still open at the end of the log.
    pub fn finish(self) -> Unended<T> {
        let mut threads: Vec<(u64, Vec<(SpanKey, T)>)> = self
            .threads
            .into_iter()
            .filter(|(_, s)| !s.is_empty())
            .map(|(t, s)| (t, s.into_iter().rev().collect()))
            .collect();
        threads.sort_by_key(|(t, _)| *t);
        let mut asyncs: Vec<(SpanKey, Vec<T>)> =
            self.asyncs.into_iter().map(|(k, s)| (k, s.into_iter().rev().map(|(_, p)| p).collect())).collect();
        asyncs.sort_by(|a, b| a.0.cmp(&b.0));
        Unended { threads, asyncs }
    }
}
