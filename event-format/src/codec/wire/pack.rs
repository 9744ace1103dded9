//! Packing: how a writer makes a sealed block's records smaller for a stream, and how a reader
//! gets them back (docs/FORMAT.md, "Packed blocks").
//!
//! Three flags of the block header say how a packed block's bytes were made; the records a
//! reader gets back are the same whichever were used:
//!
//! - [`BLOCK_PACKED`] (bit 0, since 1.1): the block is packed, `48 + used` bytes rounded up to
//!   8 in the stream; its bytes are one LZ4 block unless bit 1 says otherwise;
//! - [`BLOCK_ZSTD`] (bit 1, since 2.1): the packed bytes are one zstd frame (RFC 8878);
//! - [`BLOCK_COLUMNS`] (bit 2, since 2.1): what the codec gives back is the records in
//!   columns ([`columns`]), which the reader turns back into the records, byte for byte.
//!
//! A writer packs through a [`Packer`] (one per writer: it keeps its zstd context and buffers
//! from block to block), a reader unpacks through an [`Unpacker`] (one per reader, likewise).

use super::block::{Damage, packed_len, seal_block};
use super::{BLOCK_COLUMNS, BLOCK_HEADER_LEN, BLOCK_PACKED, BLOCK_ZSTD, Order};
use std::fmt;
use zstd::zstd_safe;

/// The first four bytes of every zstd frame (RFC 8878, "Zstandard Frames"), as they are in
/// the stream.
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// The compressor a [`Packing`] uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Codec {
    /// The LZ4 block format (format 1.1 and later): about 9 bytes an event on the tour, and
    /// twice as fast as zstd to unpack; to pack, it saves a writer little over zstd's level 1
    /// (about a third of its time on the tour's blocks, nothing on a service's: BENCHMARKS.md).
    Lz4,
    /// zstd (format 2.1 and later): about twice as small as LZ4, packed on the writer thread.
    Zstd,
}

/// How a writer packs the blocks of a stream (`EVENT_PACK`, `Recorder::packing`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Packing {
    /// The compressor.
    pub codec: Codec,
    /// Whether the records are laid out in [`columns`] before they are compressed.
    pub columns: bool,
    /// zstd's compression level (1 ..= 22; ignored by LZ4).
    pub level: i32,
}

impl Packing {
    /// zstd's level by default: chosen by measurement (BENCHMARKS.md, "Sizes at rest"): on the
    /// tour's blocks in columns, level 3 gives 3.70 bytes an event, level 1 3.76, level 5 3.49
    /// and level 9 3.53; on the service workload (`service_sizes`) level 3 gives 4.00 to 4.03,
    /// level 5 3.78 to 3.79. Level 5 costs the writer thread about twice level 3's
    /// instructions a block (level 9 four times), which it spends only while it keeps up.
    pub const DEFAULT_ZSTD_LEVEL: i32 = 5;
    /// zstd's level for a writer behind its threads ([`Packer::pack_fast`]): on the service
    /// workload's blocks in columns level 1 packs about twice as fast as level 5, for 3.99
    /// bytes an event instead of 3.76 (BENCHMARKS.md).
    pub const FAST_ZSTD_LEVEL: i32 = 1;
    /// LZ4, the records as they are: what format 1.1 to 2.0 wrote, readable by every reader
    /// since 1.1.
    pub const LZ4: Packing = Packing { codec: Codec::Lz4, columns: false, level: 0 };
    /// The default: the records in columns, then zstd at [`Packing::DEFAULT_ZSTD_LEVEL`].
    pub const ZSTD: Packing = Packing { codec: Codec::Zstd, columns: true, level: Packing::DEFAULT_ZSTD_LEVEL };

    /// Its name, as `EVENT_PACK` spells it: `lz4`, `zstd`, or the parts (`zstd-rows`,
    /// `lz4-columns`, a level `zstd:9`) for the others.
    pub fn name(&self) -> String {
        let codec = match self.codec {
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        };
        let layout = match (self.codec, self.columns) {
            (Codec::Lz4, true) => "-columns",
            (Codec::Zstd, false) => "-rows",
            _ => "",
        };
        let level = if self.codec == Codec::Zstd && self.level != Packing::DEFAULT_ZSTD_LEVEL {
            format!(":{}", self.level)
        } else {
            String::new()
        };
        format!("{codec}{layout}{level}")
    }
}

impl Default for Packing {
    fn default() -> Packing {
        Packing::ZSTD
    }
}

/// Packs sealed blocks as a [`Packing`] says; keeps the zstd context and a buffer from one
/// block to the next. The writer's one packing call ([`Packer::pack`]).
pub struct Packer {
    packing: Packing,
    cctx: Option<zstd_safe::CCtx<'static>>,
    /// The records in columns, reused.
    image: Vec<u8>,
    /// What laying them out needs, reused.
    columns: columns::Scratch,
}

impl fmt::Debug for Packer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Packer").field("packing", &self.packing).finish_non_exhaustive()
    }
}

impl Packer {
    /// A packer of `packing`.
    pub fn new(packing: Packing) -> Packer {
        Packer { packing, cctx: None, image: Vec::new(), columns: columns::Scratch::default() }
    }

    /// Its packing.
    pub fn packing(&self) -> Packing {
        self.packing
    }

    /// Packs a sealed, unpacked block: appends to `out` the packed block (header with
    /// [`BLOCK_PACKED`] and the packing's flags set, `used` and CRC of the packed bytes, zero
    /// padding to a multiple of 8) and returns true, when that is smaller than the block; else
    /// appends nothing and returns false. Writers pack blocks only in streams, never in a ring
    /// file, whose slots have a fixed size.
    pub fn pack(&mut self, order: Order, block: &[u8], out: &mut Vec<u8>) -> bool {
        self.pack_at(order, block, out, self.packing.level)
    }

    /// [`pack`](Packer::pack) at zstd's level [`Packing::FAST_ZSTD_LEVEL`] when the packing's
    /// is higher: what a writer that has fallen behind its threads packs at, for about half
    /// of level 5's time a block (BENCHMARKS.md). The same packing otherwise; a reader sees
    /// no difference but the size.
    pub fn pack_fast(&mut self, order: Order, block: &[u8], out: &mut Vec<u8>) -> bool {
        self.pack_at(order, block, out, self.packing.level.min(Packing::FAST_ZSTD_LEVEL))
    }

    fn pack_at(&mut self, order: Order, block: &[u8], out: &mut Vec<u8>, level: i32) -> bool {
        let used = order.u32(&block[super::BLOCK_USED_AT..]) as usize;
        let Some(records) = block.get(BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + used) else { return false };
        let mut flags = BLOCK_PACKED;
        let body: &[u8] =
            if self.packing.columns && columns::encode_with(order, records, &mut self.image, &mut self.columns) {
                flags |= BLOCK_COLUMNS;
                &self.image
            } else {
                records
            };
        let start = out.len();
        out.extend_from_slice(&block[..BLOCK_HEADER_LEN]);
        let packed = match self.packing.codec {
            Codec::Lz4 => {
                out.resize(start + BLOCK_HEADER_LEN + lz4_flex::block::get_maximum_output_size(body.len()), 0);
                lz4_flex::block::compress_into(body, &mut out[start + BLOCK_HEADER_LEN..]).ok()
            }
            Codec::Zstd => {
                flags |= BLOCK_ZSTD;
                let cctx = self.cctx.get_or_insert_with(|| {
                    let mut cctx = zstd_safe::CCtx::create();
                    // The frame says its content size (a reader sizes nothing by it, but
                    // Python's `zstandard` and the zstd tool want it) and carries no checksum
                    // (the block's CRC covers the frame).
                    let _ = cctx.set_parameter(zstd_safe::CParameter::ContentSizeFlag(true));
                    let _ = cctx.set_parameter(zstd_safe::CParameter::ChecksumFlag(false));
                    cctx
                });
                let _ = cctx.set_parameter(zstd_safe::CParameter::CompressionLevel(level));
                out.resize(start + BLOCK_HEADER_LEN + zstd_safe::compress_bound(body.len()), 0);
                cctx.compress2(&mut out[start + BLOCK_HEADER_LEN..], body).ok()
            }
        };
        let Some(packed) = packed else {
            out.truncate(start);
            return false;
        };
        let len = packed_len(packed as u32);
        if len >= block.len() {
            out.truncate(start);
            return false;
        }
        out.truncate(start + BLOCK_HEADER_LEN + packed);
        out.resize(start + len, 0);
        let flags = order.u16(&block[4..]) | flags;
        let packed_block = &mut out[start..];
        order.put_u16(&mut packed_block[4..], flags);
        seal_block(order, packed_block, packed as u32);
        true
    }
}

/// Packs a sealed, unpacked block with LZ4 over its records (what format 1.1 to 2.0 wrote):
/// appends to `out` the packed block (header with [`BLOCK_PACKED`] set, `used` and CRC of
/// the compressed records, zero padding to a multiple of 8) and returns true, when that is
/// smaller than the block; else appends nothing and returns false. Writers pack blocks only
/// in streams, never in a ring file, whose slots have a fixed size. [`Packer`] packs with
/// any [`Packing`].
pub fn pack_block(order: Order, block: &[u8], out: &mut Vec<u8>) -> bool {
    Packer::new(Packing::LZ4).pack(order, block, out)
}

/// Unpacks the records of packed blocks, whatever their packing; keeps the zstd context and a
/// buffer from one block to the next.
#[derive(Default)]
pub struct Unpacker {
    dctx: Option<zstd_safe::DCtx<'static>>,
    /// A column image, unpacked before it becomes the records; reused.
    image: Vec<u8>,
    /// What turning a column image back needs; reused.
    columns: columns::Scratch,
}

impl fmt::Debug for Unpacker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unpacker").finish_non_exhaustive()
    }
}

impl Unpacker {
    /// An unpacker; its zstd context is made at the first zstd block.
    pub fn new() -> Unpacker {
        Unpacker::default()
    }

    /// The records of a verified packed block whose flags are `flags` and whose packed bytes
    /// are `packed`, in a stream of blocks of `block_size` bytes, into `records` (its bytes
    /// replaced): at most `block_size - 48` bytes, or [`Damage::BadPacking`]. Allocates no
    /// more than the packed bytes can expand to, and never more than a block.
    pub fn unpack_into(
        &mut self,
        order: Order,
        flags: u16,
        packed: &[u8],
        block_size: u32,
        records: &mut Vec<u8>,
    ) -> Result<(), Damage> {
        let limit = (block_size as usize).saturating_sub(BLOCK_HEADER_LEN);
        if flags & BLOCK_COLUMNS == 0 {
            return self.decompress(flags, packed, limit, records);
        }
        let mut image = std::mem::take(&mut self.image);
        // The image is the records and their count (4 bytes).
        let result = self.decompress(flags, packed, limit + 4, &mut image).and_then(|()| {
            columns::decode_with(order, &image, limit, records, &mut self.columns).map_err(|why| {
                records.clear();
                Damage::BadPacking(format!("its columns: {why}"))
            })
        });
        self.image = image;
        result
    }

    /// Decompresses `packed` by its codec into `out`, at most `limit` bytes.
    fn decompress(&mut self, flags: u16, packed: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), Damage> {
        if flags & BLOCK_ZSTD == 0 {
            return super::block::unpack_lz4_into(packed, limit, out);
        }
        let bad = |out: &mut Vec<u8>, why: String| {
            out.clear();
            Err(Damage::BadPacking(why))
        };
        if packed.get(..4) != Some(&ZSTD_MAGIC[..]) {
            return bad(out, "not a zstd frame (its magic number is not 28 B5 2F FD)".to_owned());
        }
        // One frame, and nothing after it: a second frame would be decompressed after the
        // first, which the format does not allow.
        match zstd_safe::find_frame_compressed_size(packed) {
            Ok(n) if n == packed.len() => {}
            Ok(n) => return bad(out, format!("{} bytes follow its zstd frame of {n}", packed.len() - n)),
            Err(code) => return bad(out, format!("a damaged zstd frame ({})", zstd_safe::get_error_name(code))),
        }
        match zstd_safe::get_frame_content_size(packed) {
            Ok(Some(size)) if size > limit as u64 => {
                return bad(out, format!("its zstd frame says {size} bytes, more than a block's {limit}"));
            }
            Ok(_) => {}
            Err(_) => return bad(out, "a damaged zstd frame header".to_owned()),
        }
        let dctx = self.dctx.get_or_insert_with(zstd_safe::DCtx::create);
        out.resize(limit, 0);
        match dctx.decompress(&mut out[..], packed) {
            Ok(n) => {
                out.truncate(n);
                Ok(())
            }
            Err(code) => bad(
                out,
                format!("its zstd frame does not decompress into a block ({})", zstd_safe::get_error_name(code)),
            ),
        }
    }
}

/// The records of a block in columns (docs/FORMAT.md, "Columns"): what a writer compresses in
/// place of the records when [`BLOCK_COLUMNS`] is set. The records' headers first, then their
/// arguments grouped by record kind (code and length) with each group's bytes stored column
/// by column, so that the bytes that vary alike (the low bytes of a size, the high bytes of an
/// address) lie together for the compressor. It needs no schema: it is the same whatever the
/// records mean, and a reader turns it back into the records byte for byte.
///
/// ```text
/// u32            n, the number of records
/// n × 4 bytes    each record's code and length (its header's bytes 0..4), in order
/// n × 4 bytes    each record's delta (its header's bytes 4..8), in order
/// for each group (records of one code and length, in the order of their first record):
///   L × m bytes  byte 0 of the arguments of each of its m records, in order, then byte 1, ...,
///                up to byte L − 1 (L = the length − 8)
/// ```
pub mod columns {
    use super::super::{Order, RECORD_HEADER_LEN};

    /// Groups of records by their first 4 bytes (code and length), numbered in the order they
    /// come: an open-addressing table, since a block has few kinds of records and a general
    /// hash map costs more than the bytes it sorts.
    struct Kinds {
        /// (key + 1, group); 0 is empty. Its length is a power of two, at least twice the keys.
        slots: Vec<(u64, u32)>,
        len: usize,
    }

    impl Kinds {
        fn new() -> Kinds {
            Kinds { slots: vec![(0, 0); 64], len: 0 }
        }

        /// Empty again, its table kept.
        fn clear(&mut self) {
            self.slots.fill((0, 0));
            self.len = 0;
        }

        /// The group of `key`, and whether it is new (numbered `len` before the call).
        #[inline(always)]
        fn group(&mut self, key: u32) -> (u32, bool) {
            let mask = self.slots.len() - 1;
            let mut at = (key.wrapping_mul(0x9E37_79B1) >> 7) as usize & mask;
            loop {
                let (k, g) = self.slots[at];
                if k == u64::from(key) + 1 {
                    return (g, false);
                }
                if k == 0 {
                    let g = self.len as u32;
                    self.slots[at] = (u64::from(key) + 1, g);
                    self.len += 1;
                    if self.len * 2 > self.slots.len() {
                        self.grow();
                    }
                    return (g, true);
                }
                at = (at + 1) & mask;
            }
        }

        #[cold]
        #[inline(never)]
        fn grow(&mut self) {
            let size = self.slots.len() * 2;
            let old = std::mem::replace(&mut self.slots, vec![(0, 0); size]);
            let mask = self.slots.len() - 1;
            for (k, g) in old.into_iter().filter(|&(k, _)| k != 0) {
                let mut at = (((k - 1) as u32).wrapping_mul(0x9E37_79B1) >> 7) as usize & mask;
                while self.slots[at].0 != 0 {
                    at = (at + 1) & mask;
                }
                self.slots[at] = (k, g);
            }
        }
    }

    /// Transposes the 8 × 8 bytes of `w` (byte `j` of word `i` becomes byte `i` of word `j`):
    /// three rounds of swaps, of single bytes, of pairs and of quadruples (Hacker's Delight,
    /// "Transposing a bit matrix", on bytes).
    #[inline(always)]
    fn transpose8(w: &mut [u64; 8]) {
        #[inline(always)]
        fn swap(w: &mut [u64; 8], a: usize, b: usize, shift: u32, mask: u64) {
            let t = ((w[a] >> shift) ^ w[b]) & mask;
            w[b] ^= t;
            w[a] ^= t << shift;
        }
        const BYTES: u64 = 0x00FF_00FF_00FF_00FF;
        const PAIRS: u64 = 0x0000_FFFF_0000_FFFF;
        const QUADS: u64 = 0x0000_0000_FFFF_FFFF;
        swap(w, 0, 1, 8, BYTES);
        swap(w, 2, 3, 8, BYTES);
        swap(w, 4, 5, 8, BYTES);
        swap(w, 6, 7, 8, BYTES);
        swap(w, 0, 2, 16, PAIRS);
        swap(w, 1, 3, 16, PAIRS);
        swap(w, 4, 6, 16, PAIRS);
        swap(w, 5, 7, 16, PAIRS);
        swap(w, 0, 4, 32, QUADS);
        swap(w, 1, 5, 32, QUADS);
        swap(w, 2, 6, 32, QUADS);
        swap(w, 3, 7, 32, QUADS);
    }

    /// Reads 8 bytes at `at`.
    #[inline]
    fn word(b: &[u8], at: usize) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[at..at + 8]);
        u64::from_le_bytes(w)
    }

    /// Lays the `m` rows of `l` bytes that start at `rows_at` in `records` out column by column
    /// into `dst` (byte 0 of every row, then byte 1, ...): squares of 8 rows × 8 bytes at a
    /// time, each row's 8 bytes read as one word and each column's written as one; the edges
    /// byte by byte.
    fn gather_columns(records: &[u8], rows_at: &[u32], dst: &mut [u8], l: usize) {
        let m = rows_at.len();
        let mut j = 0;
        while j + 8 <= m {
            let rows = &rows_at[j..j + 8];
            let mut i = 0;
            while i + 8 <= l {
                let mut w = [0u64; 8];
                for (w, &at) in w.iter_mut().zip(rows) {
                    *w = word(records, at as usize + i);
                }
                transpose8(&mut w);
                for (c, w) in w.iter().enumerate() {
                    let at = (i + c) * m + j;
                    dst[at..at + 8].copy_from_slice(&w.to_le_bytes());
                }
                i += 8;
            }
            for c in i..l {
                for (r, &at) in rows.iter().enumerate() {
                    dst[c * m + j + r] = records[at as usize + c];
                }
            }
            j += 8;
        }
        for (r, &at) in rows_at.iter().enumerate().skip(j) {
            for c in 0..l {
                dst[c * m + r] = records[at as usize + c];
            }
        }
    }

    /// The inverse of [`gather_columns`]: the `l` columns of `m` bytes of `src` written as the
    /// rows that start at `rows_at` in `records`. Squares of 8 columns × 8 rows: the 8 columns
    /// cut once (of one length, so that one test bounds the reads of all 8), then each square
    /// read as 8 words, transposed and written as 8 words, one a row. 4 columns left over are
    /// half squares (4 bytes a row); fewer, and the rows past the last 8, byte by byte.
    fn scatter_columns(src: &[u8], records: &mut [u8], rows_at: &[u32], l: usize) {
        let m = rows_at.len();
        let full = m - m % 8;
        let mut i = 0;
        while i + 4 <= l {
            let half = i + 8 > l;
            let column = |c: usize| if half && c >= 4 { &[][..] } else { &src[(i + c) * m..(i + c) * m + full] };
            let cols = [column(0), column(1), column(2), column(3), column(4), column(5), column(6), column(7)];
            for (k, rows) in rows_at[..full].chunks_exact(8).enumerate() {
                let j = 8 * k;
                let mut w = [0u64; 8];
                for (w, col) in w.iter_mut().zip(&cols) {
                    if let Some(b) = col.get(j..j + 8) {
                        *w = word(b, 0);
                    }
                }
                transpose8(&mut w);
                for (w, &at) in w.iter().zip(rows) {
                    let at = at as usize + i;
                    if half {
                        records[at..at + 4].copy_from_slice(&(*w as u32).to_le_bytes());
                    } else {
                        records[at..at + 8].copy_from_slice(&w.to_le_bytes());
                    }
                }
            }
            i += if half { 4 } else { 8 };
        }
        // The columns past the last square, then the rows past it.
        for c in i..l {
            let col = &src[c * m..c * m + full];
            for (&b, &at) in col.iter().zip(&rows_at[..full]) {
                records[at as usize + c] = b;
            }
        }
        for (r, &at) in rows_at.iter().enumerate().skip(full) {
            for c in 0..l {
                records[at as usize + c] = src[c * m + r];
            }
        }
    }

    /// Each group's members' argument offsets, grouped: `of[i]` is record `i`'s group and
    /// `args_at[i]` where its arguments start; into `grouped`, the offsets ordered by group
    /// (each group's in record order), and into `starts` where each group's start in it
    /// (`next` a working buffer; all three the caller's, kept from block to block).
    fn by_group_into(
        of: &[u32],
        args_at: &[u32],
        sizes: &[(usize, usize)],
        grouped: &mut Vec<u32>,
        starts: &mut Vec<usize>,
        next: &mut Vec<usize>,
    ) {
        starts.clear();
        let mut at = 0;
        for &(_, members) in sizes {
            starts.push(at);
            at += members;
        }
        starts.push(at);
        next.clear();
        next.extend_from_slice(starts);
        grouped.clear();
        grouped.resize(of.len(), 0);
        for (&g, &a) in of.iter().zip(args_at) {
            grouped[next[g as usize]] = a;
            next[g as usize] += 1;
        }
    }

    /// What [`encode_with`] and [`decode_with`] need besides the records and the image, kept
    /// by a writer or a reader from one block to the next so that laying out records or
    /// turning an image back allocates nothing once they have grown.
    pub struct Scratch {
        kinds: Kinds,
        sizes: Vec<(usize, usize)>,
        of: Vec<u32>,
        args_at: Vec<u32>,
        grouped: Vec<u32>,
        starts: Vec<usize>,
        next: Vec<usize>,
    }

    impl std::fmt::Debug for Scratch {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Scratch").finish_non_exhaustive()
        }
    }

    impl Default for Scratch {
        fn default() -> Scratch {
            Scratch {
                kinds: Kinds::new(),
                sizes: Vec::new(),
                of: Vec::new(),
                args_at: Vec::new(),
                grouped: Vec::new(),
                starts: Vec::new(),
                next: Vec::new(),
            }
        }
    }

    /// Lays out `records` (a block's records area) in columns into `image`, its bytes
    /// replaced; `false` (and `image` unspecified) when the records cannot be delimited to
    /// their end (no writer writes such a block; it is packed as it is).
    pub fn encode(order: Order, records: &[u8], image: &mut Vec<u8>) -> bool {
        encode_with(order, records, image, &mut Scratch::default())
    }

    /// [`encode`] with buffers the caller keeps from one block to the next (a writer's
    /// [`Packer`](super::Packer) does): once they have grown, a block allocates nothing, and
    /// a reused image is not cleared first, since every one of its `4 + records.len()` bytes
    /// is written (the count, each record's head and delta, and each record's arguments in
    /// its group's columns).
    pub fn encode_with(order: Order, records: &[u8], image: &mut Vec<u8>, scratch: &mut Scratch) -> bool {
        let Scratch { kinds, sizes, of, args_at, grouped, starts, next } = scratch;
        kinds.clear();
        // Per group: (argument bytes a record, records); per record: its group and where its
        // arguments start.
        sizes.clear();
        of.clear();
        args_at.clear();
        let mut at = 0;
        while at < records.len() {
            let rest = &records[at..];
            if rest.len() < RECORD_HEADER_LEN {
                return false;
            }
            let len = usize::from(order.u16(&rest[2..]));
            if len < RECORD_HEADER_LEN || len > rest.len() {
                return false;
            }
            let (group, new) = kinds.group(u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]));
            if new {
                sizes.push((len - RECORD_HEADER_LEN, 0));
            }
            sizes[group as usize].1 += 1;
            of.push(group);
            args_at.push((at + RECORD_HEADER_LEN) as u32);
            at += len;
        }
        let n = of.len();
        let need = records.len() + 4;
        if image.len() < need {
            image.resize(need, 0);
        } else {
            image.truncate(need);
        }
        order.put_u32(&mut image[..4], n as u32);
        let (heads, rest) = image[4..].split_at_mut(4 * n);
        let (deltas, args) = rest.split_at_mut(4 * n);
        let headers = heads.chunks_exact_mut(4).zip(deltas.chunks_exact_mut(4));
        for ((head, delta), &a) in headers.zip(args_at.iter()) {
            let start = a as usize - RECORD_HEADER_LEN;
            let header = &records[start..start + RECORD_HEADER_LEN];
            head.copy_from_slice(&header[..4]);
            delta.copy_from_slice(&header[4..]);
        }
        by_group_into(of, args_at, sizes, grouped, starts, next);
        let mut off = 0;
        for (g, &(l, m)) in sizes.iter().enumerate() {
            gather_columns(records, &grouped[starts[g]..starts[g + 1]], &mut args[off..off + l * m], l);
            off += l * m;
        }
        true
    }

    /// The records that `image` lays out in columns, into `records` (its bytes replaced), at
    /// most `limit` bytes; why not, where `image` is not a column image of records that fit.
    pub fn decode(order: Order, image: &[u8], limit: usize, records: &mut Vec<u8>) -> Result<(), String> {
        decode_with(order, image, limit, records, &mut Scratch::default())
    }

    /// [`decode`] with buffers the caller keeps from one block to the next.
    pub fn decode_with(
        order: Order,
        image: &[u8],
        limit: usize,
        records: &mut Vec<u8>,
        scratch: &mut Scratch,
    ) -> Result<(), String> {
        let result = decode_checked(order, image, limit, records, scratch);
        if result.is_err() {
            records.clear();
        }
        result
    }

    /// Why an image whose records run past the bytes it holds for them is refused: the error
    /// that reading every record's length in order gives (the first length below 8, records
    /// past a block's `limit`, or arguments more than the image's `args` bytes), as the
    /// first pass of [`decode_checked`] would have given it. Cold: no image a writer made
    /// gets here.
    #[cold]
    #[inline(never)]
    fn past_room(order: Order, heads: &[u8], n: usize, args: usize, limit: usize) -> String {
        let mut total = 0usize;
        for head in heads.chunks_exact(4) {
            let len = usize::from(order.u16(&head[2..]));
            if len < RECORD_HEADER_LEN {
                return format!("a record of length {len}");
            }
            total += len;
            if total > limit {
                return format!("its records are more than a block's {limit} bytes");
            }
        }
        format!("its records' arguments are {} bytes, and it holds {args}", total - n * RECORD_HEADER_LEN)
    }

    fn decode_checked(
        order: Order,
        image: &[u8],
        limit: usize,
        records: &mut Vec<u8>,
        scratch: &mut Scratch,
    ) -> Result<(), String> {
        let n = image.get(..4).map(|b| order.u32(b) as usize).ok_or("fewer than 4 bytes")?;
        if n > limit / RECORD_HEADER_LEN || 4 + n * RECORD_HEADER_LEN > image.len() {
            return Err(format!("{n} records do not fit its {} bytes", image.len()));
        }
        let heads = &image[4..4 + 4 * n];
        let deltas = &image[4 + 4 * n..4 + 8 * n];
        let args = &image[4 + 8 * n..];
        let Scratch { kinds, sizes, of, args_at, grouped, starts, next } = scratch;
        kinds.clear();
        sizes.clear();
        // Sized first and written through slices: the loop keeps their lengths in registers.
        of.clear();
        of.resize(n, 0);
        args_at.clear();
        args_at.resize(n, 0);
        // Sized first to what the image holds records for (the records of a whole image: its
        // heads and deltas are their headers, and every other byte an argument's), at most a
        // block, so that each record's header is written in the pass that reads it. Only
        // grown: every byte below the records' end is written before it is read, so no block
        // pays for zeroing the buffer it reuses.
        let room = limit.min(image.len() - 4);
        if records.len() < room {
            records.resize(room, 0);
        }
        let out = &mut records[..room];
        let mut total = 0usize;
        // Members are counted a run at a time: records of one kind come in runs, and a count
        // kept in memory would make each record wait for the one before.
        let (mut run_group, mut run) = (0u32, 0usize);
        let records_of = heads.chunks_exact(4).zip(deltas.chunks_exact(4));
        for (((head, delta), of), args_at) in records_of.zip(of.iter_mut()).zip(args_at.iter_mut()) {
            let len = usize::from(order.u16(&head[2..]));
            if len < RECORD_HEADER_LEN {
                return Err(format!("a record of length {len}"));
            }
            let at = total;
            total += len;
            if total > room {
                return Err(past_room(order, heads, n, args.len(), limit));
            }
            // In `out`: at + RECORD_HEADER_LEN <= total <= room.
            let header = &mut out[at..at + RECORD_HEADER_LEN];
            header[..4].copy_from_slice(head);
            header[4..].copy_from_slice(delta);
            *args_at = (at + RECORD_HEADER_LEN) as u32;
            let (group, new) = kinds.group(u32::from_le_bytes([head[0], head[1], head[2], head[3]]));
            if new {
                sizes.push((len - RECORD_HEADER_LEN, 0));
            }
            if group != run_group {
                if let Some(size) = sizes.get_mut(run_group as usize) {
                    size.1 += run;
                }
                (run_group, run) = (group, 0);
            }
            run += 1;
            *of = group;
        }
        if let Some(size) = sizes.get_mut(run_group as usize) {
            size.1 += run;
        }
        if total - n * RECORD_HEADER_LEN != args.len() {
            return Err(format!(
                "its records' arguments are {} bytes, and it holds {}",
                total - n * RECORD_HEADER_LEN,
                args.len()
            ));
        }
        records.truncate(total);
        by_group_into(of, args_at, sizes, grouped, starts, next);
        let mut off = 0;
        for (g, &(l, m)) in sizes.iter().enumerate() {
            let rows = &grouped[starts[g]..starts[g + 1]];
            scatter_columns(&args[off..off + l * m], records, rows, l);
            off += l * m;
        }
        Ok(())
    }
}
