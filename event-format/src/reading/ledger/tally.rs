//! What the ledger counts of records, apart from the blocks they come in: events, records of
//! unknown codes, bad records, the losses blocks and `Dropped` events report, what limits
//! suppressed, strings their writer cut. A [`Ledger`](super::Ledger) keeps one; a reader that
//! classifies records on threads of its own (event-dump's `print`) keeps one a block there
//! and hands it to the log's ledger in the log's order ([`Ledger::add`](super::Ledger::add)),
//! so that its records are counted once, where they are read.

use super::{BadRecord, truncated_strings};
use crate::codec::decode::{Entry, Event};
use crate::codec::wire::{RecordError, Value};
use event_def::builtin::{DROPPED, STOP, SUPPRESSED, TIME_EXTEND};
use std::collections::BTreeMap;

/// The counts of records (and of the losses blocks report), apart from the blocks they come
/// in: a [`Ledger`](super::Ledger) keeps one, and a reader that classifies records on threads
/// of its own keeps one a block and hands it on with [`Ledger::add`](super::Ledger::add).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Records the walk yields (events, unknown codes, bad arguments), stop blocks' included.
    pub(super) records: u64,
    pub(super) events: u64,
    pub(super) unknown: BTreeMap<u16, u64>,
    pub(super) bad: Vec<BadRecord>,
    /// Thread (0: of no thread) -> events lost.
    pub(super) lost: BTreeMap<u64, u64>,
    /// (wire code, thread) -> events its limit suppressed (`Suppressed` events).
    pub(super) suppressed: BTreeMap<(u16, u64), u64>,
    pub(super) truncated_strings: u64,
}

impl Tally {
    /// Counts one record of the block of `thread` numbered `sequence`, as the catalog
    /// classified it: see [`Ledger::entry`](super::Ledger::entry).
    ///
    /// A reader calls it for every record, so the common record (an event of a set without a
    /// string: nothing to count but itself) costs two additions here, inlined in the reader's
    /// loop; what needs the record's arguments is looked at out of line.
    #[inline]
    pub fn entry(&mut self, thread: u64, sequence: u64, entry: &Entry<'_>) {
        match entry {
            Entry::Event(event) => {
                self.records += 1;
                self.events += 1;
                // Built-in events (`Dropped`, `Suppressed`) and events with strings (cut
                // strings) say more than that they happened.
                let desc = event.desc;
                if desc.is_builtin() || desc.strings {
                    self.event_args(event);
                }
            }
            _ => self.not_event(thread, sequence, entry),
        }
    }

    /// Counts a record that is not an event: an unknown code or a bad record.
    fn not_event(&mut self, thread: u64, sequence: u64, entry: &Entry<'_>) {
        match entry {
            Entry::Event(_) => {}
            Entry::Unknown { code, .. } => {
                self.records += 1;
                *self.unknown.entry(*code).or_default() += 1;
            }
            Entry::Bad(error) => {
                // A record with bad arguments is a record its writer wrote (and counted);
                // a TimeExtend or Stop without its arguments, or bytes that delimit no
                // record, are not.
                if let RecordError::BadArguments { code, .. } = error
                    && *code != TIME_EXTEND
                    && *code != STOP
                {
                    self.records += 1;
                }
                self.bad.push(BadRecord { thread, sequence, error: error.clone() });
            }
        }
    }

    /// Counts what an event's arguments say: a `Dropped` event's lost events, a `Suppressed`
    /// event's suppressed ones, an event's cut strings (the event itself is counted by
    /// [`entry`](Tally::entry)).
    fn event_args(&mut self, event: &Event<'_>) {
        let desc = event.desc;
        if desc.code == DROPPED && desc.is_builtin() {
            let mut v = event.values();
            if let (Some(Value::Word(thread)), Some(Value::Word(count))) = (v.next(), v.next()) {
                self.add_lost(thread, count);
            }
        } else if desc.code == SUPPRESSED && desc.is_builtin() {
            let mut v = event.values();
            if let (Some(Value::Word(thread)), Some(Value::Unsigned(code)), Some(Value::Word(count))) =
                (v.next(), v.next(), v.next())
                && count > 0
            {
                let n = self.suppressed.entry((code as u16, thread)).or_default();
                *n = n.saturating_add(count);
            }
        } else if desc.strings {
            self.truncated_strings += truncated_strings(event);
        }
    }

    /// Adds `n` lost events to `thread`'s count. Counts come from the log, which may lie: they
    /// saturate rather than wrap.
    pub(super) fn add_lost(&mut self, thread: u64, n: u64) {
        if n > 0 {
            let count = self.lost.entry(thread).or_default();
            *count = count.saturating_add(n);
        }
    }

    /// Adds `other`'s counts (saturating), its bad records after this one's.
    pub(super) fn add(&mut self, other: &Tally) {
        self.records = self.records.saturating_add(other.records);
        self.events = self.events.saturating_add(other.events);
        for (code, n) in &other.unknown {
            let count = self.unknown.entry(*code).or_default();
            *count = count.saturating_add(*n);
        }
        self.bad.extend(other.bad.iter().cloned());
        for (thread, n) in &other.lost {
            self.add_lost(*thread, *n);
        }
        for (key, n) in &other.suppressed {
            let count = self.suppressed.entry(*key).or_default();
            *count = count.saturating_add(*n);
        }
        self.truncated_strings = self.truncated_strings.saturating_add(other.truncated_strings);
    }

    /// Forgets every count (keeping what it allocated), for the next block's.
    pub fn clear(&mut self) {
        self.records = 0;
        self.events = 0;
        self.unknown.clear();
        self.bad.clear();
        self.lost.clear();
        self.suppressed.clear();
        self.truncated_strings = 0;
    }
}

#[cfg(test)]
mod tests {
    use crate::codec::decode::{Catalog, Decoder, Entry};
    use crate::codec::wire::{Order, RawRecord, STRING_TRUNCATED};
    use crate::reading::ledger::{Ledger, Tally};
    use event_def::letter::Letter;

    /// The catalog says which events have strings as their formats do, and the tally, which
    /// looks at the arguments of those alone, counts a cut string of an event of a set.
    #[test]
    fn events_with_strings_are_told_by_their_flag() {
        let header = crate::testing::sample_header(Order::Little);
        let catalog = Catalog::new(&header.sets);
        for desc in catalog.iter() {
            assert_eq!(desc.strings, desc.format.contains(&Letter::String), "{}", desc.name);
        }
        let pool_init = catalog.iter().find(|d| d.name == "PoolInit").unwrap();
        assert!(pool_init.strings && !pool_init.is_builtin());
        // PoolInit(pool, arena, class, align): `class` cut ("AM" of a longer name).
        let mut args = Vec::new();
        args.extend([0x7u64.to_le_bytes(), 0x8u64.to_le_bytes()].concat());
        args.extend((2 | STRING_TRUNCATED).to_le_bytes());
        args.extend(b"AM");
        args.extend(8u32.to_le_bytes());
        let record = RawRecord { code: pool_init.wire, time: 5, args: &args, offset: 0 };
        let entry = catalog.entry(record, 1, Order::Little);
        assert!(matches!(entry, Entry::Event(_)), "{entry:?}");
        let mut tally = Tally::default();
        tally.entry(1, 0, &entry);
        assert_eq!((tally.records, tally.events, tally.truncated_strings), (1, 1, 1));
    }

    /// A ledger handed each block's tally counts what one that counts the records itself does.
    #[test]
    fn tallies_handed_on_count_as_the_ledger_does() {
        let bytes = crate::testing::sample_stream(Order::Little);
        let mut decoder = Decoder::new(&bytes[..]).unwrap();
        let catalog = Catalog::new(&decoder.header().sets);
        let format = decoder.header().format;
        let (mut itself, mut handed, mut tally) = (Ledger::new(format), Ledger::new(format), Tally::default());
        while let Some(block) = decoder.next_block() {
            let block = block.unwrap();
            itself.block(&block);
            handed.block(&block);
            for entry in block.entries(&catalog) {
                itself.entry(block.header.thread, block.header.sequence, &entry);
                tally.entry(block.header.thread, block.header.sequence, &entry);
            }
            handed.add(&mut tally);
            assert_eq!(tally, Tally::default(), "left empty for the next block");
        }
        assert!(itself.events() > 0 && itself.lost() > 0);
        assert_eq!(handed, itself);
    }
}
