//! Declared histograms and limits in the header (properties 11 and 12, since 2.1.0), and the
//! `Suppressed` and `Histogram` records as the ledger and the histogram merge read them.

use event_format::builtin;
use event_format::decode::{Catalog, Decoder, Entry};
use event_format::histogram::{Distribution, Histograms};
use event_format::ledger::{Ledger, describe_suppressed};
use event_format::raw::{TAG_HISTOGRAMS, TAG_LIMITS};
use event_format::schema::{Buckets, Rate, Version};
use event_format::testing::sample_header;
use event_format::wire::{BlockHeader, BlockWriter, Header, Order, SetEntry, Text, Value};

fn declaring_header(order: Order) -> Header {
    let app =
        event_format::def::parse("SET(app)\nVERSION(1, 0, 0)\nKIND(K)\nRELATION(Tick, 1, TRUE, K, 0)\n", "app.def")
            .unwrap();
    let net = event_format::def::parse(
        "SET(net)\nVERSION(1, 0, 0)\nKIND(Req)\n\
         RELATION(Begin, 1, TRUE, Req, WS, id, path, limit=1000/s)\nRELATION(End, 2, TRUE, Req, WU, id, status)\n\
         RELATION(Sent, 3, TRUE, Req, W, size, limit=1/100)\n\
         SPAN(request, Begin, End)\nHISTOGRAM(request_ns, request, HDR3)\nHISTOGRAM(sizes, Sent, size, LOG2)\n",
        "net.def",
    )
    .unwrap();
    let mut header = sample_header(order);
    header.sets = SetEntry::assign([app, net]);
    header
}

/// The value of the property with `tag` of an encoded little-endian header whose last two
/// properties are the histograms' and the limits' (in the order of their tags): the limits'
/// ends at the CRC, the histograms' where the limits' starts.
fn property(bytes: &[u8], tag: u16) -> Option<Vec<u8>> {
    let end = bytes.len() - 4;
    (0..end.saturating_sub(6)).find_map(|at| {
        let t = u16::from_le_bytes([bytes[at], bytes[at + 1]]);
        let len = u32::from_le_bytes(bytes[at + 2..at + 6].try_into().unwrap()) as usize;
        let after = at + 6 + len;
        let ends_right = match tag {
            TAG_LIMITS => after == end,
            _ => bytes.get(after..after + 2) == Some(&TAG_LIMITS.to_le_bytes()[..]),
        };
        (t == tag && after <= end && ends_right).then(|| bytes[at + 6..after].to_vec())
    })
}

#[test]
fn histograms_and_limits_travel_in_header_properties_since_2_1_0() {
    for order in [Order::Little, Order::Big] {
        let header = declaring_header(order);
        let bytes = header.encode().unwrap();
        let decoded = Header::decode(&bytes, false).unwrap();
        assert_eq!(decoded, header, "the declarations read back into their set");
        let net = &decoded.sets[1].schema;
        assert_eq!(net.histograms.len(), 2);
        assert_eq!(net.histograms[0].buckets, Buckets { precision: 3 });
        assert_eq!(net.limit_of(1), Some(Rate::PerPeriod { count: 1000, period_ns: 1_000_000_000 }));
        assert_eq!(net.limit_of(3), Some(Rate::Sample { keep: 1, of: 100 }));
        assert!(decoded.sets[0].schema.histograms.is_empty() && decoded.sets[0].schema.limits.is_empty());
    }

    // The values as docs/FORMAT.md lays them out, little-endian.
    let bytes = declaring_header(Order::Little).encode().unwrap();
    let histograms = property(&bytes, TAG_HISTOGRAMS).expect("tag 11");
    let mut want = vec![1, 0, 1, 0, 2, 0]; // one set: set 1, two histograms
    want.extend([10, 0]);
    want.extend(b"request_ns");
    want.extend([0, 7, 0]);
    want.extend(b"request");
    want.push(3); // a span's durations, HDR3
    want.extend([5, 0]);
    want.extend(b"sizes");
    want.extend([1, 3, 0, 4, 0]);
    want.extend(b"size");
    want.push(0); // event 3's `size`, LOG2
    assert_eq!(histograms, want);
    let limits = property(&bytes, TAG_LIMITS).expect("tag 12");
    let mut want = vec![1, 0, 1, 0, 2, 0]; // one set: set 1, two limits
    want.extend([1, 0, 0]);
    want.extend(1000u64.to_le_bytes());
    want.extend(1_000_000_000u64.to_le_bytes());
    want.extend([3, 0, 1]);
    want.extend(1u64.to_le_bytes());
    want.extend(100u64.to_le_bytes());
    assert_eq!(limits, want);

    // A 2.0.3 writer cannot carry them; a 2.0.3 reader skips them by their lengths.
    let mut older = declaring_header(Order::Little);
    older.format = Version::new(2, 0, 3);
    assert!(older.encode().unwrap_err().to_string().contains("cannot carry histograms or limits"), "refused");
    older.sets[1].schema.histograms.clear();
    older.sets[1].schema.limits.clear();
    assert!(older.encode().is_ok());
}

#[test]
fn a_property_that_breaks_its_layout_is_a_malformed_header() {
    let mut header = declaring_header(Order::Little);
    // A limit of an event the set does not have: the schema's rules refuse it on reading.
    header.sets[1].schema.limits[0].event = 9;
    let bytes = header.encode();
    assert!(bytes.is_err(), "the encoder holds the schema to its rules");
    let mut header = declaring_header(Order::Little);
    header.sets[1].schema.histograms[1].buckets = Buckets { precision: 9 };
    assert!(header.encode().unwrap_err().to_string().contains("sub-bucket bits"));
}

/// A stream of `header` with thread 1's `Suppressed` and `Histogram` records, and thread 0's.
fn stream(header: &Header, histogram_text: &'static str) -> Vec<u8> {
    let order = header.order;
    let mut out = header.encode().unwrap();
    let begin = header.sets[1].wire_code_of(1).unwrap();
    let sent = header.sets[1].wire_code_of(3).unwrap();
    let mut b =
        BlockWriter::new(order, header.block_size, &BlockHeader { thread: 1, base_time: 1000, ..Default::default() });
    b.push(begin, 1000, &[Value::Word(1), Value::Str(Text::new("/a"))]).unwrap();
    b.push(
        builtin::SUPPRESSED,
        1100,
        &[Value::Word(1), Value::Unsigned(u32::from(begin)), Value::Word(40), Value::Word(90)],
    )
    .unwrap();
    b.push(begin, 1200, &[Value::Word(2), Value::Str(Text::new("/b"))]).unwrap();
    out.extend(b.finish());
    let mut r =
        BlockWriter::new(order, header.block_size, &BlockHeader { thread: 0, base_time: 2000, ..Default::default() });
    r.push(
        builtin::SUPPRESSED,
        2000,
        &[Value::Word(1), Value::Unsigned(u32::from(begin)), Value::Word(2), Value::Word(5)],
    )
    .unwrap();
    r.push(
        builtin::SUPPRESSED,
        2000,
        &[Value::Word(4), Value::Unsigned(u32::from(sent)), Value::Word(99), Value::Word(7)],
    )
    .unwrap();
    // Histogram 1 (`sizes`, LOG2) of thread 1: 1, 2, 3 and 100; of thread 4: 100.
    let hist = |thread, count, sum, min, max, text: &'static str| {
        vec![
            Value::Word(thread),
            Value::Unsigned(1),
            Value::Word(1000),
            Value::Word(count),
            Value::Word(sum),
            Value::Word(min),
            Value::Word(max),
            Value::Str(Text::new(text)),
        ]
    };
    r.push(builtin::HISTOGRAM, 2100, &hist(1, 4, 106, 1, 100, histogram_text)).unwrap();
    r.push(builtin::HISTOGRAM, 2100, &hist(4, 1, 100, 100, 100, "7:1")).unwrap();
    // One of a histogram the header does not declare.
    let mut bad = hist(4, 1, 100, 100, 100, "7:1");
    bad[1] = Value::Unsigned(5);
    r.push(builtin::HISTOGRAM, 2100, &bad).unwrap();
    out.extend(r.finish());
    out
}

#[test]
fn suppressed_counts_are_the_ledgers_and_histogram_records_merge_over_threads() {
    let header = declaring_header(Order::Big);
    let bytes = stream(&header, "1:1 2:2 7:1");
    let mut decoder = Decoder::new(&bytes[..]).unwrap();
    let catalog = Catalog::new(&decoder.header().sets);
    let mut ledger = Ledger::new(decoder.header().format);
    let mut histograms = Histograms::new();
    histograms.add_log(0, decoder.header());
    while let Some(block) = decoder.next_block() {
        let block = block.unwrap();
        ledger.block(&block);
        for entry in block.entries(&catalog) {
            ledger.entry(block.header.thread, block.header.sequence, &entry);
            if let Entry::Event(event) = entry {
                histograms.take(0, &event);
            }
        }
    }
    let begin = header.sets[1].wire_code_of(1).unwrap();
    let sent = header.sets[1].wire_code_of(3).unwrap();
    assert_eq!(ledger.suppressed_by_code().into_iter().collect::<Vec<_>>(), [(begin, 42), (sent, 99)]);
    assert_eq!(ledger.lost(), 0, "a suppression is no loss");
    assert_eq!(
        describe_suppressed(&ledger, &catalog),
        [
            "suppressed by its limit: net:Req.Begin, 42 events (T1 42)",
            "suppressed by its limit: net:Req.Sent, 99 events (T4 99)"
        ]
    );

    let merged: Vec<_> = histograms.iter().collect();
    assert_eq!(merged.len(), 2, "both declared histograms are listed");
    let (_, sizes) = merged.iter().find(|(k, _)| k.name == "sizes").unwrap();
    assert_eq!((sizes.records, sizes.total.count(), sizes.total.sum()), (2, 5, 206));
    assert_eq!(sizes.total.buckets_text(), "1:1 2:2 7:2");
    assert_eq!(sizes.threads.len(), 2);
    assert_eq!(sizes.declared.unit, "size");
    assert_eq!(sizes.declared.of, "Sent.size");
    let mut want = Distribution::new(Buckets::LOG2);
    for v in [1, 2, 3, 100, 100] {
        want.record(v);
    }
    assert_eq!(sizes.total, want);
    let (_, request) = merged.iter().find(|(k, _)| k.name == "request_ns").unwrap();
    assert_eq!((request.records, request.declared.unit.as_str()), (0, "ns"));
    assert_eq!(histograms.unreadable().len(), 1, "{:?}", histograms.unreadable());
    assert!(histograms.unreadable()[0].contains("histogram 5"));
}

#[test]
fn a_record_whose_buckets_break_their_rules_is_not_merged() {
    let header = declaring_header(Order::Little);
    let bytes = stream(&header, "1:1 2:1 7:1");
    let mut decoder = Decoder::new(&bytes[..]).unwrap();
    let catalog = Catalog::new(&decoder.header().sets);
    let mut histograms = Histograms::new();
    histograms.add_log(0, decoder.header());
    while let Some(block) = decoder.next_block() {
        for entry in block.unwrap().entries(&catalog) {
            if let Entry::Event(event) = entry {
                histograms.take(0, &event);
            }
        }
    }
    assert_eq!(histograms.unreadable().len(), 2);
    assert!(
        histograms.unreadable()[0].contains("hold 3 values, and its count says 4"),
        "{:?}",
        histograms.unreadable()
    );
}
