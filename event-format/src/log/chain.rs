//! The blocks of a recording of segments: each segment's, in order, as one [`BlockSource`];
//! each block says which segment it is of ([`Block::segment`]: its place among the
//! segments), since every segment restarts its threads' block numbers.

use super::SegmentFile;
use crate::decode::{Block, BlockError, BlockSource, DecodeOptions, Decoder};
use crate::wire::{Damage, Header};

use std::fs::File;
use std::io::BufReader;

/// The segments' blocks, one segment open at a time.
pub(super) struct Chain {
    files: Vec<SegmentFile>,
    /// The first segment's header: the log's.
    header: Header,
    decode: DecodeOptions,
    /// The segment being read, and its place.
    current: Option<(Decoder<BufReader<File>>, u32)>,
    /// The place of the next segment to open.
    next: usize,
}

impl Chain {
    pub(super) fn new(files: Vec<SegmentFile>, header: Header, decode: DecodeOptions) -> Chain {
        Chain { files, header, decode, current: None, next: 0 }
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
        let opened = File::open(&file.path).map_err(|e| unreadable(e.to_string()));
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
        loop {
            if let Some((decoder, segment)) = &mut self.current {
                match decoder.next_block() {
                    Some(Ok(mut block)) => {
                        block.segment = *segment;
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

    fn recycle(&mut self, block: Block) {
        if let Some((decoder, _)) = &mut self.current {
            decoder.recycle(block);
        }
    }
}
