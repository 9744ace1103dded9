//! The bodies of the fuzz targets in `fuzz/` (cargo-fuzz, its own workspace), here so that
//! the normal test suite replays every corpus file through exactly the code the fuzzers run
//! (`tests/it/fuzz_corpus.rs`). Not a stable API: for the fuzzers and the tests only.
//!
//! Each function takes arbitrary bytes and panics only when an invariant of the reader is
//! broken (a round trip that does not hold, a count that disagrees); anything a hostile
//! input can cause must end in an error value instead.

use crate::codec::decode::{Block, BlockError, BlockSource, Catalog, DecodeOptions, Decoder, Entry};
use crate::codec::ring::{self, Follower, RingBlocks, RingReader, RingStream};
use crate::codec::wire::{BLOCK_HEADER_LEN, BLOCK_SYNC, Header, MAGIC, Order, Unpacker, seal_block};
use crate::reading::ledger::{Ledger, Step};
use std::io::{self, Read};

mod filter;

pub use filter::fuzz_filter;

/// `def_parse`: the events.def parser on `data` as UTF-8 (or, when it is not UTF-8, its lossy
/// conversion). When it parses, the schema rendered back to events.def text must parse to
/// the same schema; when it does not, every error must render as one line.
pub fn fuzz_def(data: &[u8]) {
    match std::str::from_utf8(data) {
        Ok(text) => def_round_trip(text),
        Err(_) => def_round_trip(&String::from_utf8_lossy(data)),
    }
}

fn def_round_trip(text: &str) {
    match event_def::def::parse(text, "fuzz.def") {
        Ok(schema) => {
            assert!(schema.check().is_ok(), "the parser returned a schema that breaks the rules");
            let rendered = event_def::def::render(&schema);
            match event_def::def::parse(&rendered, "rendered.def") {
                Ok(again) => assert_eq!(again, schema, "render then parse changed the schema:\n{rendered}"),
                Err(e) => panic!("a rendered schema does not parse: {e}\n{rendered}"),
            }
        }
        Err(errors) => {
            assert!(!errors.0.is_empty(), "an error without a message");
            for e in &errors.0 {
                assert!(!e.to_string().contains('\n'), "a multi-line error: {e}");
            }
        }
    }
}

/// `decode_stream`: `data` read as a stream and as a ring file (a stream reader refuses a
/// ring file and the other way round, so one of them stops at once), each as it is and
/// again with its CRCs repaired, so that the fuzzer gets past the checksums to the fields
/// behind them. Every block, every entry and every value is decoded and rendered as text;
/// a stream is read twice, whole and in short reads, and both must give the same result;
/// and its block index ([`index_blocks`](crate::decode::index_blocks)) must list the blocks
/// the decoder finds whenever it finds no damaged one.
pub fn fuzz_decode(data: &[u8]) {
    decode_both(data);
    let mut repaired = data.to_vec();
    if repair_crcs(&mut repaired) {
        decode_both(&repaired);
    }
    column_image(data);
}

/// The bytes as a column image (docs/FORMAT.md, "Columns"), in both orders: one that turns
/// back into records fits the limit, and is what the records lay out in columns again (the
/// image and the records are one-to-one); and the bytes as a zstd frame, which unpacks within
/// a block or is refused.
fn column_image(data: &[u8]) {
    use crate::codec::wire::{BLOCK_COLUMNS, BLOCK_PACKED, BLOCK_ZSTD, columns};
    let limit = 4096 - BLOCK_HEADER_LEN;
    for order in [Order::Little, Order::Big] {
        let mut records = Vec::new();
        if columns::decode(order, data, limit, &mut records).is_ok() {
            assert!(records.len() <= limit, "a column image unpacked past its limit");
            let mut again = Vec::new();
            assert!(columns::encode(order, &records, &mut again), "records from columns delimit");
            assert_eq!(again, data, "a column image is what its records lay out");
        }
    }
    let mut unpacker = Unpacker::new();
    let mut records = Vec::new();
    for flags in [BLOCK_PACKED | BLOCK_ZSTD, BLOCK_PACKED | BLOCK_ZSTD | BLOCK_COLUMNS, BLOCK_PACKED | BLOCK_COLUMNS] {
        if unpacker.unpack_into(Order::Little, flags, data, 4096, &mut records).is_ok() {
            assert!(records.len() <= limit, "a packed block unpacked past the block size");
        }
    }
}

fn decode_both(data: &[u8]) {
    let whole = decode_stream(data, DecodeOptions::default());
    // The same bytes in short reads of 1 to 8 bytes must decode the same.
    let step = data.first().map_or(1, |b| usize::from(b % 8) + 1);
    let chunked = decode_stream(Chunked { data, step }, DecodeOptions::default());
    assert_eq!(whole, chunked, "short reads changed what was decoded");
    // Packed blocks handed on packed and unpacked after (as `print`'s workers do) must give
    // the same blocks, damage and records.
    if let Ok(decoder) = Decoder::new(data) {
        let mut after = UnpackedAfter { source: decoder, unpacker: Unpacker::new(), spare: Vec::new() };
        assert_eq!(whole, tally_blocks(&mut after), "unpacking after reading changed what was decoded");
    }
    decode_stream(data, DecodeOptions { force: true });
    index_agrees(data);
    decode_ring(data);
}

/// A stream without damage is indexed, and its index is the blocks the decoder finds.
fn index_agrees(data: &[u8]) {
    let Ok(mut decoder) = Decoder::new(data) else { return };
    let index = crate::codec::decode::index_blocks(data, decoder.header(), decoder.header_len(), data.len() as u64);
    let mut found = Vec::new();
    while let Some(block) = decoder.next_block() {
        match block {
            Ok(b) => found.push(crate::codec::decode::BlockStart { offset: b.offset, base_time: b.header.base_time }),
            // With damage the decoder looks for sync words, which the index does not.
            Err(_) => return,
        }
    }
    match index {
        Ok(Some(index)) => assert_eq!(index, found, "the index of a stream without damage"),
        Ok(None) => panic!("a stream without damage has no index"),
        Err(e) => panic!("reading a slice failed: {e}"),
    }
}

/// What a decode found, to compare two reads of the same bytes: the header's refusal, or the
/// [`Ledger`] of its blocks (what every reader counts), and the length of the text of its
/// events.
#[derive(Debug, PartialEq, Eq)]
pub struct Tally {
    /// Why the header was refused, if it was.
    pub header: Option<String>,
    /// What the blocks held that is wrong or lost, and their events.
    pub ledger: Option<Ledger>,
    /// Bytes of the events' text.
    pub text_len: usize,
}

/// The tally of `data` read as a stream, as the `decode_stream` fuzz target reads it (and
/// checks it on the way): what a test compares with what other readers count.
pub fn tally_stream(data: &[u8]) -> Tally {
    decode_stream(data, DecodeOptions::default())
}

/// A source read with [`BlockSource::next_pending`], each block unpacked once it is read.
struct UnpackedAfter<S> {
    source: S,
    unpacker: Unpacker,
    spare: Vec<u8>,
}

impl<S: BlockSource> BlockSource for UnpackedAfter<S> {
    fn header(&self) -> &Header {
        self.source.header()
    }

    fn next_block(&mut self) -> Option<Result<Block, BlockError>> {
        let block = self.source.next_pending()?;
        Some(block.and_then(|block| block.unpack(&mut self.unpacker, &mut self.spare)))
    }
}

/// A reader that hands out at most `step` bytes per call.
struct Chunked<'a> {
    data: &'a [u8],
    step: usize,
}

impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn decode_stream<R: Read>(reader: R, options: DecodeOptions) -> Tally {
    let mut decoder = match Decoder::with_options(reader, options) {
        Ok(d) => d,
        Err(e) => return Tally { header: Some(e.to_string()), ledger: None, text_len: 0 },
    };
    header_round_trip(decoder.header());
    tally_blocks(&mut decoder)
}

/// Walks every block of `source` and every record of each into a [`Ledger`], checking what
/// must hold of blocks and events that passed their checks, and of the ledger's counts.
fn tally_blocks<S: BlockSource>(source: &mut S) -> Tally {
    let header = source.header().clone();
    let catalog = Catalog::new(&header.sets);
    let block_size = header.block_size as usize;
    let mut ledger = Ledger::new(header.format);
    let (mut text_len, mut skipped, mut line) = (0, 0u128, String::new());
    while let Some(block) = source.next_block() {
        let block = match block {
            Ok(b) => b,
            Err(e) => {
                ledger.damaged(&e);
                continue;
            }
        };
        if let Step::Ahead { skipped: n } = ledger.block(&block) {
            skipped += u128::from(n);
        }
        // A block that defines callsites may have been expanded (`callsites`): longer.
        let expanded = crate::codec::callsites::defines_any(block.order, &block.records);
        if !expanded && block.header.flags & crate::codec::wire::BLOCK_PACKED == 0 {
            assert_eq!(block.records.len(), block.header.used as usize, "a whole block's records are not `used` bytes");
        } else if !expanded {
            assert!(
                block.records.len() <= block_size - BLOCK_HEADER_LEN,
                "a packed block unpacked past the block size"
            );
        }
        for entry in block.entries(&catalog) {
            if let Entry::Event(event) = &entry {
                assert_eq!(event.values().count(), event.desc.format.len(), "a checked event lacks values");
                line.clear();
                // Writing to a String cannot fail.
                let _ = crate::reading::text::write_event(&mut line, &header.clock, event);
                let _ = header.clock.wall_ns(event.time);
                let _ = header.clock.seconds_since_start(event.time);
                text_len += line.len();
            }
            ledger.entry(block.header.thread, block.header.sequence, &entry);
        }
    }
    // The gaps a streaming reader reports as it goes, less the blocks that came late, are
    // the gaps at the end (docs/FORMAT.md, "Block order").
    let missing: u128 = ledger.threads().map(|(_, s)| u128::from(s.missing())).sum();
    assert_eq!(skipped - ledger.late_blocks() as u128, missing, "the gaps seen on the way and at the end disagree");
    Tally { header: None, ledger: Some(ledger), text_len }
}

/// A decoded header encodes, in its own major's layout, and the encoding decodes to the same
/// header: the encoder holds the sets to the rules the decoder checks.
fn header_round_trip(header: &Header) {
    let bytes = match header.encode() {
        Ok(b) => b,
        Err(e) => panic!("a header the decoder accepted does not encode: {e}"),
    };
    match Header::decode(&bytes, true) {
        Ok(again) => {
            assert_eq!(again, Header { skipped_bytes: 0, ..header.clone() }, "a header's round trip changed it")
        }
        Err(e) => panic!("a re-encoded header does not decode: {e}"),
    }
}

fn decode_ring(data: &[u8]) {
    let options = DecodeOptions::default();
    let Ok(reader) = RingReader::open(data, options) else { return };
    let stream = RingStream::new(reader);
    let tally = decode_stream(stream, options);
    assert!(tally.header.is_none(), "the stream of an accepted ring file has a bad header: {:?}", tally.header);
    // The dumper reads the blocks directly; the stream the runtime copies must hold the same.
    if let (Ok(reader), Some(copied)) = (RingReader::open(data, options), &tally.ledger) {
        let mut blocks = RingBlocks::new(reader);
        let direct = tally_blocks(&mut blocks);
        let counts = |l: &Ledger| {
            (l.blocks(), l.events(), l.unknown_records(), l.bad_records().len(), l.lost(), l.missing_blocks())
        };
        assert_eq!(
            direct.ledger.as_ref().map(counts),
            Some(counts(copied)),
            "a ring file's blocks and its stream disagree"
        );
    }
    if let Ok(reader) = RingReader::open(data, options) {
        let mut follower = Follower::new(reader);
        // The file does not change: a second poll finds nothing new.
        let _ = follower.poll();
        if let Ok(again) = follower.poll() {
            assert!(
                !again.iter().any(|item| matches!(item, ring::FollowItem::Records { .. })),
                "a second poll of an unchanged ring file yielded records again"
            );
        }
    }
}

/// Rewrites the CRCs of whatever in `data` looks like a stream header and blocks, or a
/// ring file's page 0, stream header and blocks. Returns whether anything was rewritten.
fn repair_crcs(data: &mut [u8]) -> bool {
    if data.starts_with(&MAGIC) {
        return repair_stream(data);
    }
    if !data.starts_with(&ring::RING_MAGIC) || data.len() < ring::at::CRC + 4 {
        return false;
    }
    let Some(order) = order_at(data, ring::at::ORDER) else { return false };
    let crc = crc32fast::hash(&data[..ring::at::CRC]);
    order.put_u32(&mut data[ring::at::CRC..], crc);
    let Ok(layout) = ring::Layout::decode(&data[..ring::at::CRC + 4], true) else { return true };
    let Ok(end) = usize::try_from(layout.file_len()) else { return true };
    if end > data.len() {
        return true;
    }
    let start = layout.stream_header() as usize;
    let header_end = start + layout.header_len as usize;
    if header_end <= data.len() && data[start..].starts_with(&MAGIC) {
        repair_stream(&mut data[start..header_end]);
    }
    let data_start = layout.data() as usize;
    repair_blocks(&mut data[data_start..end], order, layout.block_size as usize);
    true
}

/// Repairs the header CRC of the stream `data` starts with, then its blocks. Returns whether
/// it found a header to repair.
fn repair_stream(data: &mut [u8]) -> bool {
    let Some(order) = order_at(data, 8) else { return false };
    let (Some(len), Some(size)) = (data.get(16..20), data.get(20..24)) else { return false };
    let (header_len, block_size) = (order.u32(len) as usize, order.u32(size) as usize);
    if !(84..=data.len()).contains(&header_len) {
        return false;
    }
    let crc = crc32fast::hash(&data[..header_len - 4]);
    order.put_u32(&mut data[header_len - 4..], crc);
    if block_size.is_power_of_two() && block_size >= BLOCK_HEADER_LEN {
        repair_blocks(&mut data[header_len..], order, block_size);
    }
    true
}

/// Reseals every block in `data` (whole, or packed and shorter) that has a sync word at a
/// multiple of 8 and a `used` that fits.
fn repair_blocks(data: &mut [u8], order: Order, block_size: usize) {
    let mut at = 0;
    while at + BLOCK_HEADER_LEN <= data.len() {
        if order.u32(&data[at..]) != BLOCK_SYNC {
            at += 8;
            continue;
        }
        let used = order.u32(&data[at + crate::codec::wire::BLOCK_USED_AT..]);
        let packed = order.u16(&data[at + 4..]) & crate::codec::wire::BLOCK_PACKED != 0;
        let len = if packed { crate::codec::wire::packed_len(used) } else { block_size };
        if used as usize > block_size - BLOCK_HEADER_LEN || at + len > data.len() {
            at += 8;
            continue;
        }
        seal_block(order, &mut data[at..at + len], used);
        at += len;
    }
}

fn order_at(data: &[u8], at: usize) -> Option<Order> {
    match data.get(at..at + 2)? {
        [0xFF, 0xFE] => Some(Order::Little),
        [0xFE, 0xFF] => Some(Order::Big),
        _ => None,
    }
}
