//! Sizes at rest: every packing on the blocks of streams already written (BENCHMARKS.md,
//! "Sizes at rest"). For each stream and packing: the stream's bytes per event (its header
//! and its blocks, each packed when that makes it smaller, as the writer packs), the time
//! to pack its records (MB/s of records) and to unpack them again (MB/s of records), and what
//! a block costs the writer thread in its order (its CRC, then its packing, the block warm
//! from the CRC: microseconds a block).
//!
//! `cargo run --release -p event-format --example pack_sizes -- LOG...`; the logs are
//! read as they are (write them with `EVENT_PACK=off`, or any packing: packed blocks are
//! unpacked first). With `PACK_OUT=DIR`, each log packed each way is written there too
//! (`DIR/NAME.PACKING.evt`), for the readers' timings. Timings are of one thread on a machine that may be shared: sizes are
//! exact, speeds are what this run saw.

use event_format::decode::Decoder;
use event_format::raw::{seal_block, seal_block_in_place};
use event_format::wire::{BLOCK_HEADER_LEN, Codec, Packer, Packing, RecordIter, Unpacker};
use std::time::Instant;

fn main() {
    let logs: Vec<String> = std::env::args().skip(1).collect();
    if logs.is_empty() {
        eprintln!("usage: pack_sizes LOG...");
        std::process::exit(2);
    }
    let packings = [
        Packing::LZ4,
        Packing { codec: Codec::Zstd, columns: false, level: 1 },
        Packing { codec: Codec::Zstd, columns: false, level: 3 },
        Packing { codec: Codec::Zstd, columns: false, level: 9 },
        Packing { codec: Codec::Lz4, columns: true, level: 0 },
        Packing { codec: Codec::Zstd, columns: true, level: -5 },
        Packing { codec: Codec::Zstd, columns: true, level: -1 },
        Packing { codec: Codec::Zstd, columns: true, level: 1 },
        Packing { codec: Codec::Zstd, columns: true, level: 2 },
        Packing { codec: Codec::Zstd, columns: true, level: 3 },
        Packing { codec: Codec::Zstd, columns: true, level: 4 },
        Packing { codec: Codec::Zstd, columns: true, level: 5 },
        Packing { codec: Codec::Zstd, columns: true, level: 9 },
        Packing { codec: Codec::Zstd, columns: true, level: 19 },
    ];
    println!(
        "| log | events | records B/event | packing | B/event at rest | pack MB/s | unpack MB/s | the writer's us a block |"
    );
    println!("|---|---:|---:|---|---:|---:|---:|---:|");
    for log in &logs {
        let bytes = std::fs::read(log).unwrap_or_else(|e| panic!("{log}: {e}"));
        let mut decoder = Decoder::new(&bytes[..]).unwrap_or_else(|e| panic!("{log}: {e}"));
        let header_len = decoder.header_len() as usize;
        let (order, block_size) = (decoder.header().order, decoder.header().block_size);
        // Each block again whole: its header and its (unpacked) records as the writer wrote
        // them (records by callsite not expanded: expanded, they may not fit a block).
        let mut blocks: Vec<Vec<u8>> = Vec::new();
        let mut events = 0u64;
        let mut records_bytes = 0u64;
        let (mut unpacker, mut spare) = (Unpacker::new(), Vec::new());
        while let Some(block) = decoder.next_pending() {
            let Ok(block) = block.and_then(|b| b.unpack_as_written(&mut unpacker, &mut spare)) else { continue };
            let records = block.records;
            let mut whole = vec![0u8; block_size as usize];
            let mut header = block.header;
            header.flags = 0;
            header.write(order, &mut whole);
            whole[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + records.len()].copy_from_slice(&records);
            seal_block(order, &mut whole, records.len() as u32);
            events += RecordIter::new(&records, order, 0).flatten().count() as u64;
            records_bytes += records.len() as u64;
            blocks.push(whole);
        }
        let name = std::path::Path::new(log).file_name().map_or(log.clone(), |n| n.to_string_lossy().into_owned());
        // `PACKINGS=lz4,zstd` measures only those (by `Packing::name`).
        let only = std::env::var("PACKINGS").ok();
        for packing in packings {
            if only.as_ref().is_some_and(|o| !o.split(',').any(|n| n == packing.name())) {
                continue;
            }
            let mut packer = Packer::new(packing);
            let mut out = Vec::new();
            let mut total = header_len as u64;
            let mut packed_blocks = Vec::new();
            let t = Instant::now();
            for block in &blocks {
                out.clear();
                if packer.pack(order, block, &mut out) {
                    total += out.len() as u64;
                    packed_blocks.push(out.clone());
                } else {
                    total += block.len() as u64;
                }
            }
            let pack_s = t.elapsed().as_secs_f64();
            // In the writer's order: each block sealed (its CRC, which brings it into the
            // cache, as the writer's seal does after the thread handed it on) and then packed.
            let t = Instant::now();
            for block in blocks.iter_mut() {
                seal_block_in_place(order, block);
                out.clear();
                let _ = packer.pack(order, block, &mut out);
            }
            let writer_us = t.elapsed().as_secs_f64() * 1e6 / blocks.len().max(1) as f64;
            if let Some(dir) = std::env::var_os("PACK_OUT") {
                let mut stream = bytes[..header_len].to_vec();
                let mut packer = Packer::new(packing);
                for block in &blocks {
                    if !packer.pack(order, block, &mut stream) {
                        stream.extend_from_slice(block);
                    }
                }
                let out = std::path::Path::new(&dir).join(format!("{name}.{}.evt", packing.name()));
                std::fs::write(&out, stream).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
            }
            let mut unpacker = Unpacker::new();
            let mut records = Vec::new();
            // `REPEAT=N` unpacks the blocks N times (for a profiler); the speed is of the first.
            let repeat: usize = std::env::var("REPEAT").ok().and_then(|r| r.parse().ok()).unwrap_or(1).max(1);
            for _ in 1..repeat {
                for block in &packed_blocks {
                    let flags = order.u16(&block[4..]);
                    let used = order.u32(&block[40..]) as usize;
                    let body = &block[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + used];
                    unpacker.unpack_into(order, flags, body, block_size, &mut records).expect("unpacks");
                }
            }
            let t = Instant::now();
            for block in &packed_blocks {
                let flags = order.u16(&block[4..]);
                let used = order.u32(&block[40..]) as usize;
                unpacker
                    .unpack_into(
                        order,
                        flags,
                        &block[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + used],
                        block_size,
                        &mut records,
                    )
                    .expect("what was packed unpacks");
            }
            let unpack_s = t.elapsed().as_secs_f64();
            let mb = records_bytes as f64 / 1e6;
            println!(
                "| {name} | {events} | {:.2} | {} | {:.2} | {:.0} | {:.0} | {writer_us:.1} |",
                records_bytes as f64 / events.max(1) as f64,
                packing.name(),
                total as f64 / events.max(1) as f64,
                mb / pack_s,
                mb / unpack_s.max(1e-9),
            );
        }
    }
}
