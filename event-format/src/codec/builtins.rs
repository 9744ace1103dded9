//! The built-in events, typed: what a reader learns from a `ThreadName`, a `Label` or a
//! `SpanCurrent` by the names of its arguments, never by their places.
//!
//! [`BuiltinEvent::of`] reads a decoded [`Event`] of a built-in code into its variant, as the
//! typed readers that event-macros generates from events.def read a user's events. The
//! variants' fields are declared once, below, in the order and with the letters of
//! [`builtin::ALL`], the table the recorder writes them by; a test holds
//! the two to the same names, codes, letters and parameter names, so that neither changes
//! alone.
//!
//! ```
//! use event_format::builtins::BuiltinEvent;
//! use event_format::decode::Entry;
//! # let log = event_format::testing::sample_stream(event_format::wire::Order::NATIVE);
//! # let mut decoder = event_format::decode::Decoder::new(&log[..]).unwrap();
//! # let catalog = event_format::decode::Catalog::new(&decoder.header().sets);
//! # let block = decoder.next_block().unwrap().unwrap();
//! let mut names = Vec::new();
//! for entry in block.entries(&catalog) {
//!     if let Entry::Event(event) = entry
//!         && let Some(BuiltinEvent::ThreadName { thread, name }) = BuiltinEvent::of(&event)
//!     {
//!         names.push((thread, name.to_string_lossy().into_owned()));
//!     }
//! }
//! assert_eq!(names, [(1, "main".to_owned())]);
//! ```

use crate::codec::decode::{Desc, Event};
use crate::codec::wire::{Text, Value};
use event_def::builtin;

/// The Rust type of an argument of `letter`, in a variant of lifetime `$a`.
macro_rules! field_type {
    ($a:lifetime, Address) => { u64 };
    ($a:lifetime, Word) => { u64 };
    ($a:lifetime, Unsigned) => { u32 };
    ($a:lifetime, Signed) => { i64 };
    ($a:lifetime, String) => { Text<$a> };
}

/// The next value of `values` as an argument of `letter`; `None` from the enclosing function
/// when there is none or it is of another letter.
macro_rules! take {
    ($values:ident, Address) => {
        match $values.next() {
            Some(Value::Address(v)) => v,
            _ => return None,
        }
    };
    ($values:ident, Word) => {
        match $values.next() {
            Some(Value::Word(v)) => v,
            _ => return None,
        }
    };
    ($values:ident, Unsigned) => {
        match $values.next() {
            Some(Value::Unsigned(v)) => v,
            _ => return None,
        }
    };
    ($values:ident, Signed) => {
        match $values.next() {
            Some(Value::Signed(v)) => v,
            _ => return None,
        }
    };
    ($values:ident, String) => {
        match $values.next() {
            Some(Value::Str(v)) => v,
            _ => return None,
        }
    };
}

/// Declares [`BuiltinEvent`], its reading and its layout (for the test against the table)
/// from one list: each built-in's variant, code and arguments with their letters.
macro_rules! builtin_events {
    ($(
        $(#[$doc:meta])*
        $name:ident = $code:ident {
            $( $(#[$field_doc:meta])* $field:ident : $letter:ident ),* $(,)?
        }
    ),* $(,)?) => {
        /// A built-in event's arguments, by name: one variant per event of
        /// [`builtin::ALL`], whose docs say what each argument means.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum BuiltinEvent<'a> {
            $(
                $(#[$doc])*
                $name {
                    $( $(#[$field_doc])* $field: field_type!('a, $letter), )*
                },
            )*
        }

        impl<'a> BuiltinEvent<'a> {
            /// The built-in event `event` is, with its arguments; `None` for an event of a
            /// set, and for a built-in whose arguments do not read as its format says (which
            /// the decoder has already refused, so never for a decoded event).
            #[inline]
            pub fn of(event: &Event<'a>) -> Option<BuiltinEvent<'a>> {
                if !event.desc.is_builtin() {
                    return None;
                }
                let mut values = event.values();
                Some(match event.desc.code {
                    $( builtin::$code => BuiltinEvent::$name { $( $field: take!(values, $letter), )* }, )*
                    _ => return None,
                })
            }

            /// Its name, as [`builtin::ALL`] gives it.
            pub fn name(&self) -> &'static str {
                match self {
                    $( BuiltinEvent::$name { .. } => stringify!($name), )*
                }
            }
        }

        /// Each variant's name, code, letters and argument names, in declaration order.
        #[cfg(test)]
        const LAYOUT: &[(&str, u16, &[event_def::Letter], &[&str])] = &[
            $( (
                stringify!($name),
                builtin::$code,
                &[$(event_def::Letter::$letter),*],
                &[$(stringify!($field)),*],
            ), )*
        ];
    };
}

builtin_events! {
    /// `Intern`: interned string `id` stands for `text` from here on.
    Intern = INTERN {
        /// The id later events name the string by.
        id: Word,
        /// The string.
        text: String,
    },
    /// `Label`: `address` is labelled with the interned string `id`.
    Label = LABEL {
        /// The labelled address.
        address: Address,
        /// The id of an earlier `Intern`.
        id: Word,
    },
    /// `ThreadName`: the thread with id `thread` is called `name`.
    ThreadName = THREAD_NAME {
        /// The thread's id.
        thread: Word,
        /// Its name.
        name: String,
    },
    /// `Dropped`: `count` events of thread `thread` (0: of no thread) were lost before this
    /// point.
    Dropped = DROPPED {
        /// The thread whose events were lost; 0 for none.
        thread: Word,
        /// How many.
        count: Word,
    },
    /// `ClockSync`: counter value `ticks` was wall time `wall_ns`.
    ClockSync = CLOCK_SYNC {
        /// The counter's value.
        ticks: Word,
        /// The wall time, in nanoseconds since the Unix epoch.
        wall_ns: Signed,
    },
    /// `TimeExtend`: the running time of the block becomes `time` (consumed while records are
    /// delimited; a reader seldom meets one).
    TimeExtend = TIME_EXTEND {
        /// The absolute time, in ticks.
        time: Word,
    },
    /// `Message`: a free-text message from the program.
    Message = MESSAGE {
        /// The message.
        text: String,
    },
    /// `TraceEvent`: an event of the `tracing` crate.
    TraceEvent = TRACE_EVENT {
        /// 1 = ERROR .. 5 = TRACE ([`builtin::trace_level_name`]).
        level: Unsigned,
        /// The event's target.
        target: String,
        /// Its message and its other fields.
        text: String,
    },
    /// `SpanEnter`: the thread entered the `tracing` span `span`.
    SpanEnter = SPAN_ENTER {
        /// The span's id.
        span: Word,
        /// Its name.
        name: String,
        /// Its fields recorded so far (`key=value` separated by spaces).
        fields: String,
    },
    /// `SpanExit`: the thread left the `tracing` span `span`.
    SpanExit = SPAN_EXIT {
        /// The span's id.
        span: Word,
        /// Its name.
        name: String,
    },
    /// `SpanOpen`: the `tracing` span `span` was created inside `parent`.
    SpanOpen = SPAN_OPEN {
        /// The span's id.
        span: Word,
        /// Its parent's id; 0 for a root span.
        parent: Word,
        /// Its name.
        name: String,
        /// The fields given at its creation.
        fields: String,
    },
    /// `SpanClose`: the `tracing` span `span` closed.
    SpanClose = SPAN_CLOSE {
        /// The span's id.
        span: Word,
    },
    /// `SpanRecord`: fields recorded into the open span `span` after its creation.
    SpanRecord = SPAN_RECORD {
        /// The span's id.
        span: Word,
        /// The fields recorded.
        fields: String,
    },
    /// `SpanFollows`: the open span `span` follows from span `follows`.
    SpanFollows = SPAN_FOLLOWS {
        /// The span's id.
        span: Word,
        /// The id of the span it follows from.
        follows: Word,
    },
    /// `SpanCurrent`: the thread's later events were recorded inside span `span`.
    SpanCurrent = SPAN_CURRENT {
        /// The innermost entered span; 0 for none.
        span: Word,
    },
    /// `Suppressed`: `count` events of wire code `code` on thread `thread` were not kept by
    /// the event's limit in the `window` nanoseconds that end here.
    Suppressed = SUPPRESSED {
        /// The thread that recorded them.
        thread: Word,
        /// Their wire code.
        code: Unsigned,
        /// How many.
        count: Word,
        /// The window, in nanoseconds.
        window: Word,
    },
    /// `Histogram`: the values histogram `histogram` counted on thread `thread` since `since`.
    Histogram = HISTOGRAM {
        /// The thread that counted them.
        thread: Word,
        /// The histogram's place among those the header declares.
        histogram: Unsigned,
        /// The start of the period, in ticks.
        since: Word,
        /// How many values.
        count: Word,
        /// Their sum, saturated.
        sum: Word,
        /// The smallest.
        min: Word,
        /// The largest.
        max: Word,
        /// The non-empty buckets, `INDEX:COUNT` pairs separated by one space.
        buckets: String,
    },
    /// `Callsite`: in its block, callsite `id` of the `tracing` bridge is `name` of `target`.
    /// Consumed as a block's records are delimited, as a `TimeExtend` is: a reader meets it
    /// only in a block's bytes; the records that name it it sees expanded
    /// ([`callsites`](crate::callsites)).
    Callsite = CALLSITE {
        /// The id the block's records name it by.
        id: Word,
        /// 1 = ERROR .. 5 = TRACE.
        level: Unsigned,
        /// The span's or event's name.
        name: String,
        /// Its target.
        target: String,
        /// Its field names, by index, separated by one space.
        fields: String,
    },
    /// `SpanOpenAt`: a `SpanOpen` by callsite, as a block holds it. A reader sees it as
    /// the `SpanOpen` it stands for; it meets one only when its block does not define its
    /// callsite.
    SpanOpenAt = SPAN_OPEN_AT {
        /// The span's id.
        span: Word,
        /// Its parent's id; 0 for a root span.
        parent: Word,
        /// Its callsite.
        callsite: Word,
        /// The fields given at its creation, each keyed by its index.
        values: String,
    },
    /// `SpanRecordAt`: a `SpanRecord` by callsite (see `SpanOpenAt`).
    SpanRecordAt = SPAN_RECORD_AT {
        /// The span's id.
        span: Word,
        /// The span's callsite.
        callsite: Word,
        /// The fields recorded, each keyed by its index.
        values: String,
    },
    /// `TraceEventAt`: a `TraceEvent` by callsite (see `SpanOpenAt`).
    TraceEventAt = TRACE_EVENT_AT {
        /// Its callsite.
        callsite: Word,
        /// Its message.
        message: String,
        /// Its other fields, each keyed by its index.
        values: String,
    },
}

/// The place of the argument of an event of `desc` that is the id of an interned string
/// (`Label`'s `id`), `None` when it has none: where a reader shows the string the id names.
#[inline]
pub fn interned_arg(desc: &Desc) -> Option<usize> {
    (desc.is_builtin() && desc.code == builtin::LABEL).then_some(LABEL_ID)
}

/// The place of `Label`'s `id` among its arguments.
const LABEL_ID: usize = 1;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::decode::{Catalog, Decoder, Entry};
    use crate::codec::wire::{BlockHeader, BlockWriter, Clock, Header, Order, Producer};

    /// The typed view and the table the recorder writes by agree on every built-in: names,
    /// codes, letters and argument names, in the table's order.
    #[test]
    fn the_view_is_the_table() {
        let view: Vec<_> =
            LAYOUT.iter().map(|&(name, code, format, params)| (name, code, format.to_vec(), params.to_vec())).collect();
        let table: Vec<_> =
            builtin::ALL.iter().map(|b| (b.name, b.code, b.format.to_vec(), b.params.to_vec())).collect();
        assert_eq!(view, table);
        let label = builtin::by_code(builtin::LABEL).unwrap();
        assert_eq!(label.params[LABEL_ID], "id");
    }

    /// Every built-in, written as the table says, reads back into its variant with its
    /// arguments; an event of a set with a built-in's code is not one.
    #[test]
    fn every_builtin_reads_back() {
        let schema = event_def::def::parse(
            "VERSION(1, 0, 0)\nKIND(Pool, \"pools\")\nRELATION(Init, 0x0001, TRUE, Pool, WS, pool, class)\n",
            "events.def",
        )
        .unwrap();
        let header = Header::new(schema, 4096, Clock::deterministic(), Producer::current(0));
        let mut stream = header.encode().unwrap();
        let mut block = BlockWriter::new(Order::NATIVE, 4096, &BlockHeader { thread: 1, ..BlockHeader::default() });
        // A TimeExtend and a Callsite are consumed as records are delimited: never events,
        // left out here. (The records by callsite name callsite `n`, which no `Callsite` of
        // the block defines: they read as they are.)
        let written: Vec<_> =
            builtin::ALL.iter().filter(|b| b.code != builtin::TIME_EXTEND && b.code != builtin::CALLSITE).collect();
        for (n, b) in written.iter().enumerate() {
            let n = n as u64 + 1;
            let values: Vec<Value<'_>> = b
                .format
                .iter()
                .map(|letter| match letter {
                    event_def::Letter::Address => Value::Address(n),
                    event_def::Letter::Word => Value::Word(n),
                    event_def::Letter::Unsigned => Value::Unsigned(n as u32),
                    event_def::Letter::Signed => Value::Signed(-(n as i64)),
                    event_def::Letter::String => Value::Str(Text::new(b.name)),
                    other => panic!("{} has a {other:?}: the view has no type for it", b.name),
                })
                .collect();
            block.push(b.code, n, &values).unwrap();
        }
        block.push(0x0001, 99, &[Value::Word(1), Value::Str(Text::new("x"))]).unwrap();
        stream.extend(block.finish());
        let mut decoder = Decoder::new(&stream[..]).unwrap();
        let catalog = Catalog::new(&decoder.header().sets);
        let block = decoder.next_block().unwrap().unwrap();
        let mut read = Vec::new();
        for entry in block.entries(&catalog) {
            let Entry::Event(event) = entry else { panic!("{entry:?}") };
            read.push(BuiltinEvent::of(&event));
        }
        assert_eq!(read.pop(), Some(None), "an event of a set");
        let names: Vec<_> = read.iter().map(|e| e.unwrap().name()).collect();
        let want: Vec<_> = written.iter().map(|b| b.name).collect();
        assert_eq!(names, want);
        let label = read.iter().find_map(|e| match e {
            Some(BuiltinEvent::Label { address, id }) => Some((*address, *id)),
            _ => None,
        });
        assert_eq!(label, Some((2, 2)));
        assert!(read.contains(&Some(BuiltinEvent::ThreadName { thread: 3, name: Text::new("ThreadName") })));
        assert!(read.contains(&Some(BuiltinEvent::ClockSync { ticks: 5, wall_ns: -5 })));
        assert!(read.contains(&Some(BuiltinEvent::TraceEvent {
            level: 7,
            target: Text::new("TraceEvent"),
            text: Text::new("TraceEvent")
        })));
    }

    #[test]
    fn only_a_label_names_an_interned_string() {
        let catalog = Catalog::new(&[]);
        for b in builtin::ALL {
            let desc = catalog.get(b.code).unwrap();
            assert_eq!(interned_arg(desc), (b.code == builtin::LABEL).then_some(1), "{}", b.name);
        }
    }
}
