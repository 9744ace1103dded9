//! The blocks of a recording of segments: each segment's, in order, as one [`BlockSource`];
//! each block says which segment it is of ([`Block::segment`]: its place among the
//! segments), since every segment restarts its threads' block numbers.

use super::SegmentFile;
use crate::codec::decode::{
    Block, BlockError, BlockSource, BlockStart, DecodeOptions, Decoder, PendingBlock, index_blocks,
};
use crate::codec::wire::{Damage, Header};

use std::fs::File;
use std::io::{BufReader, Read, Take};

/// The segments' blocks, one segment open at a time.
pub(super) struct Chain {
    files: Vec<SegmentFile>,
    /// The first segment's header: the log's.
    header: Header,
    decode: DecodeOptions,
    /// The segment being read, and its place.
    current: Option<(Decoder<BufReader<Take<File>>>, u32)>,
    /// Whether each segment is read up to the length it was found (and indexed) at, so that
    /// its blocks are those its index lists.
    limited: bool,
    /// The place of the next segment to open.
    next: usize,
}

impl Chain {
    pub(super) fn new(files: Vec<SegmentFile>, header: Header, decode: DecodeOptions) -> Chain {
        Chain { files, header, decode, current: None, next: 0, limited: false }
    }

    /// The blocks of every segment from their headers ([`index_blocks`]), each block's offset
    /// made its place in the log (its segment's start, the lengths of the segments before it,
    /// plus its offset: `Log::segment_starts`); `None` when a segment cannot be indexed. From
    /// then on each segment is read up to the length it was found at.
    pub(super) fn index(&mut self) -> Option<Vec<BlockStart>> {
        let mut all = Vec::new();
        let mut start = 0u64;
        for f in &self.files {
            let file = File::open(&f.path).ok()?;
            let header = Decoder::with_options(BufReader::new((&file).take(f.header_len)), self.decode).ok()?;
            let blocks = index_blocks(&file, header.header(), f.header_len, f.len).ok()??;
            all.extend(blocks.into_iter().map(|b| BlockStart { offset: start + b.offset, ..b }));
            start = start.saturating_add(f.len);
        }
        self.limited = true;
        Some(all)
    }

    pub(super) fn files(&self) -> &[SegmentFile] {
        &self.files
    }

    /// Opens the next segment; a segment that cannot be opened (removed or damaged since it
    /// was found) is a damaged block of its own, so that the reading goes on.
    fn open_next(&mut self) -> Option<Result<(), BlockError>> {
        let place = self.next;
        let file = self.files.get(place)?;
        self.next += 1;
        let segment = u32::try_from(place).unwrap_or(u32::MAX);
        let unreadable = |why: String| BlockError {
            index: 0,
            segment,
            offset: 0,
            damage: Damage::Unreadable(format!("segment {}: {why}", file.path.display())),
        };
        let limit = if self.limited { file.len } else { u64::MAX };
        let opened = File::open(&file.path).map(|f| f.take(limit)).map_err(|e| unreadable(e.to_string()));
        let decoder = opened.and_then(|f| {
            Decoder::with_options(BufReader::with_capacity(1 << 20, f), self.decode)
                .map_err(|e| unreadable(e.to_string()))
        });
        match decoder {
            Ok(decoder) => {
                self.current = Some((decoder, segment));
                Some(Ok(()))
            }
            Err(e) => Some(Err(e)),
        }
    }
}

impl BlockSource for Chain {
    fn header(&self) -> &Header {
        &self.header
    }

    fn next_block(&mut self) -> Option<Result<Block, BlockError>> {
        // Unpacked by the decoder, the block is never left packed.
        self.next(true).map(|block| block.map(|pending| pending.block))
    }

    fn next_pending(&mut self) -> Option<Result<PendingBlock, BlockError>> {
        self.next(false)
    }

    fn recycle(&mut self, block: Block) {
        if let Some((decoder, _)) = &mut self.current {
            decoder.recycle(block);
        }
    }
}

impl Chain {
    /// The next block of the segment being read, or of the next one, its records unpacked
    /// when `unpack` ([`Decoder::next_block`], [`Decoder::next_pending`]).
    fn next(&mut self, unpack: bool) -> Option<Result<PendingBlock, BlockError>> {
        loop {
            if let Some((decoder, segment)) = &mut self.current {
                let next = if unpack {
                    decoder.next_block().map(|b| b.map(PendingBlock::ready))
                } else {
                    decoder.next_pending()
                };
                match next {
                    Some(Ok(mut block)) => {
                        block.block.segment = *segment;
                        return Some(Ok(block));
                    }
                    Some(Err(mut error)) => {
                        error.segment = *segment;
                        return Some(Err(error));
                    }
                    None => self.current = None,
                }
            }
            if let Err(e) = self.open_next()? {
                return Some(Err(e));
            }
        }
    }
}
