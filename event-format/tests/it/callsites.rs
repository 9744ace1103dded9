//! Records by callsite (docs/FORMAT.md, "Callsites"): a reader expands each into the record it
//! stands for where its block defines its callsite, and leaves it as it is otherwise, in both
//! byte orders; hostile blocks (undefined ids, values that are not fields by index, cut or
//! repeated definitions, mutations of every byte) cost the records concerned, never a panic.

use event_format::builtin;
use event_format::decode::{Catalog, Decoder, Entry};
use event_format::fuzzing::fuzz_decode;
use event_format::testing::sample_header;
use event_format::wire::{BlockHeader, BlockWriter, Order, STRING_MAX, Text, Value};

/// A stream of `sample_header` with one block of thread 1 holding `records` (code, time,
/// values).
fn stream(order: Order, records: &[(u16, u64, Vec<Value<'_>>)]) -> Vec<u8> {
    let mut header = sample_header(order);
    header.block_size = 4096;
    let mut out = header.encode().expect("the sample header encodes");
    let mut block =
        BlockWriter::new(order, header.block_size, &BlockHeader { thread: 1, base_time: 1000, ..Default::default() });
    for (code, time, values) in records {
        block.push(*code, *time, values).expect("fits the block");
    }
    out.extend(block.finish());
    out
}

fn site<'a>(id: u64, name: &'a str, fields: &'a str) -> Vec<Value<'a>> {
    vec![
        Value::Word(id),
        Value::Unsigned(3),
        Value::Str(Text::new(name)),
        Value::Str(Text::new("app::db")),
        Value::Str(Text::new(fields)),
    ]
}

/// Each event of `stream`: its name and its values as text (strings with `!` when cut).
fn read(stream: &[u8]) -> Vec<(String, Vec<String>)> {
    let mut decoder = Decoder::new(stream).expect("a header");
    let catalog = Catalog::new(&decoder.header().sets);
    let mut out = Vec::new();
    while let Some(block) = decoder.next_block() {
        for entry in block.expect("an undamaged block").entries(&catalog) {
            let Entry::Event(e) = entry else { panic!("{entry:?}") };
            let values = e
                .values()
                .map(|v| match v {
                    Value::Str(t) => format!("{}{}", t.to_string_lossy(), if t.truncated { "!" } else { "" }),
                    Value::Word(w) => w.to_string(),
                    Value::Unsigned(u) => u.to_string(),
                    other => format!("{other:?}"),
                })
                .collect();
            out.push((e.desc.name.clone(), values));
        }
    }
    out
}

fn strs(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| (*v).to_owned()).collect()
}

/// What each record by callsite reads as, and what is left as it is; the `Callsite`s
/// themselves are consumed as the records are delimited, as `TimeExtend`s are.
#[test]
fn records_by_callsite_read_as_what_they_stand_for_or_as_they_are() {
    for order in [Order::Little, Order::Big] {
        let records = vec![
            (builtin::CALLSITE, 1000, site(1, "query", "sql rows")),
            // Its block defines it after this record: definitions hold for the whole block.
            (
                builtin::TRACE_EVENT_AT,
                1005,
                vec![Value::Word(2), Value::Str(Text::new("slow")), Value::Str(Text::new("0=3"))],
            ),
            (builtin::CALLSITE, 1010, site(2, "event app/db.rs:7", "attempt")),
            (
                builtin::SPAN_OPEN_AT,
                1020,
                vec![Value::Word(5), Value::Word(0), Value::Word(1), Value::Str(Text::new(r#"0="SELECT 1" 1=2"#))],
            ),
            (builtin::SPAN_RECORD_AT, 1030, vec![Value::Word(5), Value::Word(1), Value::Str(Text::new("1=3"))]),
            // A second definition of id 1 is ignored: the first holds.
            (builtin::CALLSITE, 1040, site(1, "other", "x")),
            (
                builtin::SPAN_OPEN_AT,
                1050,
                vec![Value::Word(6), Value::Word(5), Value::Word(1), Value::Str(Text::new(""))],
            ),
            // Left as they are: an id the block does not define, a key that is not an index,
            // an index past the callsite's fields, a key with a leading zero, a value that
            // is not a token.
            (
                builtin::SPAN_OPEN_AT,
                1060,
                vec![Value::Word(7), Value::Word(0), Value::Word(9), Value::Str(Text::new("0=1"))],
            ),
            (builtin::SPAN_RECORD_AT, 1070, vec![Value::Word(5), Value::Word(1), Value::Str(Text::new("sql=1"))]),
            (builtin::SPAN_RECORD_AT, 1080, vec![Value::Word(5), Value::Word(1), Value::Str(Text::new("2=1"))]),
            (builtin::SPAN_RECORD_AT, 1090, vec![Value::Word(5), Value::Word(1), Value::Str(Text::new("01=1"))]),
            (builtin::SPAN_RECORD_AT, 1100, vec![Value::Word(5), Value::Word(1), Value::Str(Text::new("0=a b"))]),
        ];
        let got = read(&stream(order, &records));
        let expected = vec![
            ("TraceEvent", strs(&["3", "app::db", "slow attempt=3"])),
            ("SpanOpen", strs(&["5", "0", "query", r#"sql="SELECT 1" rows=2"#])),
            ("SpanRecord", strs(&["5", "rows=3"])),
            ("SpanOpen", strs(&["6", "5", "query", ""])),
            ("SpanOpenAt", strs(&["7", "0", "9", "0=1"])),
            ("SpanRecordAt", strs(&["5", "1", "sql=1"])),
            ("SpanRecordAt", strs(&["5", "1", "2=1"])),
            ("SpanRecordAt", strs(&["5", "1", "01=1"])),
            ("SpanRecordAt", strs(&["5", "1", "0=a b"])),
        ];
        let expected: Vec<(String, Vec<String>)> = expected.into_iter().map(|(n, v)| (n.to_owned(), v)).collect();
        assert_eq!(got, expected, "{order:?}");
    }
}

/// A message the fields grammar would read as ending in fields is written as the field
/// `message="..."` once named; a callsite whose strings were cut defines nothing; a text that
/// named is longer than a string may be is cut as a writer cuts it, and flagged.
#[test]
fn expansion_joins_and_cuts_as_a_writer_does() {
    let order = Order::Little;
    let long_name = "n".repeat(600);
    let values = format!("0=\"{}\"", "v".repeat(600));
    let cut_site = vec![
        Value::Word(3),
        Value::Unsigned(2),
        Value::Str(Text { bytes: b"cut", truncated: true }),
        Value::Str(Text::new("t")),
        Value::Str(Text::new("a")),
    ];
    let records = vec![
        (builtin::CALLSITE, 1000, site(1, "e", "a")),
        (
            builtin::TRACE_EVENT_AT,
            1000,
            vec![Value::Word(1), Value::Str(Text::new("x=1")), Value::Str(Text::new("0=2"))],
        ),
        (builtin::CALLSITE, 1000, site(2, "e", &long_name)),
        (
            builtin::TRACE_EVENT_AT,
            1000,
            vec![Value::Word(2), Value::Str(Text::new("m")), Value::Str(Text::new(&values))],
        ),
        (builtin::CALLSITE, 1000, cut_site),
        (builtin::TRACE_EVENT_AT, 1000, vec![Value::Word(3), Value::Str(Text::new("m")), Value::Str(Text::new("0=1"))]),
    ];
    let got = read(&stream(order, &records));
    assert_eq!(got[0], ("TraceEvent".to_owned(), strs(&["3", "app::db", "message=\"x=1\" a=2"])));
    let (name, values) = &got[1];
    assert_eq!(name, "TraceEvent");
    assert!(values[2].ends_with('!'), "cut and flagged");
    assert_eq!(values[2].len(), STRING_MAX + 1);
    assert!(values[2].starts_with(&format!("m {long_name}=\"vvv")));
    assert_eq!(got[2].0, "TraceEventAt", "a cut definition defines nothing");
    assert_eq!(got.len(), 3, "the definitions are consumed, not events: {got:?}");
}

/// Every byte of a block by callsite inverted, in turn, with the CRCs repaired (`fuzz_decode`
/// repairs them): the reader reports or reads, and never panics.
#[test]
fn a_damaged_block_by_callsite_costs_what_it_damages() {
    let records = vec![
        (builtin::CALLSITE, 1000, site(1, "query", "sql rows")),
        (
            builtin::SPAN_OPEN_AT,
            1020,
            vec![Value::Word(5), Value::Word(0), Value::Word(1), Value::Str(Text::new(r#"0="SELECT 1" 1=2"#))],
        ),
        (builtin::TRACE_EVENT_AT, 1030, vec![Value::Word(1), Value::Str(Text::new("m")), Value::Str(Text::new("1=2"))]),
    ];
    let clean = stream(Order::Little, &records);
    let header_len = Decoder::new(&clean[..]).expect("a header").header_len() as usize;
    for at in header_len..clean.len() {
        let mut bytes = clean.clone();
        bytes[at] ^= 0xFF;
        fuzz_decode(&bytes);
    }
}

/// A follower's place in a block counts records as written: `expand_in_place_from` finds the
/// same record in the expansion, before and after records that grew, and past what does
/// not delimit.
#[test]
fn a_place_in_the_records_as_written_is_the_same_record_expanded() {
    use event_format::callsites::expand_in_place_from;
    use event_format::wire::{BLOCK_HEADER_LEN, RecordIter};
    for order in [Order::Little, Order::Big] {
        let at = |n: u64| {
            vec![
                Value::Word(1),
                Value::Str(Text::new("slow")),
                Value::Str(Text::new(if n.is_multiple_of(2) { "0=3" } else { "0=4 1=x" })),
            ]
        };
        let mut records = vec![(builtin::CALLSITE, 1000, site(1, "event app/db.rs:7", "attempt reason"))];
        records.extend((0..5).map(|n| (builtin::TRACE_EVENT_AT, 1001 + n, at(n))));
        let bytes = stream(order, &records);
        let header_len = Decoder::new(&bytes[..]).unwrap().header_len() as usize;
        let block = &bytes[header_len..];
        let used = order.u32(&block[40..]) as usize;
        let written = block[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + used].to_vec();
        let ends: Vec<usize> =
            RecordIter::new(&written, order, 1000).map(|r| r.unwrap()).map(|r| r.offset + 8 + r.args.len()).collect();
        let all = {
            let mut r = written.clone();
            assert_eq!(expand_in_place_from(order, &mut r, 0, 4096), 0);
            r
        };
        assert!(all.len() > written.len());
        let expanded_ends: Vec<usize> =
            RecordIter::new(&all, order, 1000).map(|r| r.unwrap()).map(|r| r.offset + 8 + r.args.len()).collect();
        assert_eq!(ends.len(), 5);
        for (end, expanded_end) in ends.iter().zip(&expanded_ends) {
            let mut r = written.clone();
            let from = expand_in_place_from(order, &mut r, *end, 4096);
            assert_eq!(r, all);
            assert_eq!(from, *expanded_end, "{order:?}, after {end} bytes");
        }
        // Past the records, into bytes that do not delimit: the same distance past them.
        let mut tail = written.clone();
        tail.extend_from_slice(&[0xFF; 5]);
        let from = expand_in_place_from(order, &mut tail, written.len() + 3, 4096);
        assert_eq!(from, all.len() + 3);
    }
}
