//! The stream sinks: the event file and the memory copy that sealed blocks are written to, in
//! order (the ring file is not one of them: threads write it in place, `ringfile`).
//!
//! A sink is plain I/O with no knowledge of threads or policies, so that the session, the
//! writer thread and the stop can all write through it under one lock (`Shared::sinks`). A
//! write error gives the file sink up with one line on stderr and is returned by the stop;
//! it never stops the program.

use event_format::builtin::DROPPED;
use event_format::wire::{BLOCK_HEADER_LEN, BlockHeader, Order, RecordIter, Stop, pack_block};
use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;

/// The stream sinks: where sealed blocks are written, in order.
#[derive(Debug, Default)]
pub(crate) struct Sinks {
    file: Option<(PathBuf, File)>,
    memory: Option<Vec<u8>>,
    /// The first write error; the file sink is given up after it.
    failed: Option<String>,
    /// Blocks the file sink could not write.
    unwritten: u64,
    /// The next sequence number of the recorder's own blocks (thread 0).
    recorder_sequence: u64,
    /// What the blocks written so far hold, for the clean-stop marker (docs/FORMAT.md, "The
    /// clean stop").
    written: Stop,
    /// Pack blocks before writing them (docs/FORMAT.md, "Packed blocks").
    pack: bool,
    /// Where a block is packed; reused.
    packed: Vec<u8>,
}

impl Sinks {
    /// Sinks to `file` (claimed by `files::claim`) and, when `memory`, to memory; blocks
    /// packed when `pack`.
    pub(crate) fn new(file: Option<(PathBuf, File)>, memory: bool, pack: bool) -> Sinks {
        Sinks { file, memory: memory.then(Vec::new), pack, ..Sinks::default() }
    }

    /// The event file's path, while the file sink is written (`None` without one, or after
    /// a write failed and it was given up).
    pub(crate) fn file_path(&self) -> Option<&std::path::Path> {
        self.file.as_ref().map(|(path, _)| path.as_path())
    }

    /// Whether there is no sink at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.file.is_none() && self.memory.is_none()
    }

    /// Writes one sealed block (or the header) to every sink.
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        if let Some(memory) = &mut self.memory {
            memory.extend_from_slice(bytes);
        }
        if let Some((path, file)) = &mut self.file {
            if let Err(e) = file.write_all(bytes) {
                let message = format!(
                    "writing the event file {} failed: {e}; the rest of the trace is not in it",
                    path.display()
                );
                eprintln!("event-runtime: {message}");
                self.failed = Some(message);
                self.file = None;
            }
        } else if self.failed.is_some() {
            self.unwritten += 1;
        }
    }

    /// Writes one sealed block to every sink: packed when `pack` is on, the block is worth
    /// packing, and the writer is keeping up (`hurry` false).
    pub(crate) fn write_block(&mut self, block: &[u8], hurry: bool) {
        self.count(block);
        if !self.pack || hurry {
            return self.write(block);
        }
        // Taken out and put back: `write` borrows the whole of `self`.
        let mut packed = std::mem::take(&mut self.packed);
        packed.clear();
        self.write(if pack_block(Order::NATIVE, block, &mut packed) { &packed } else { block });
        self.packed = packed;
    }

    /// Counts a sealed block for the clean-stop marker: its events (every record but
    /// `TimeExtend`) and the losses it reports (its `lost` field, its `Dropped` counts). A walk
    /// of the record headers, on the writer thread or at stop, never on a recording thread's
    /// hot path.
    fn count(&mut self, block: &[u8]) {
        let header = BlockHeader::read(Order::NATIVE, block);
        let end = (BLOCK_HEADER_LEN + header.used as usize).min(block.len());
        let mut events = 0u64;
        let mut lost = header.lost;
        for record in RecordIter::new(&block[BLOCK_HEADER_LEN..end], Order::NATIVE, 0).flatten() {
            events += 1;
            if record.code == DROPPED && record.args.len() >= 16 {
                lost = lost.saturating_add(Order::NATIVE.u64(&record.args[8..]));
            }
        }
        let w = &mut self.written;
        w.blocks += 1;
        w.events += events;
        w.lost = w.lost.saturating_add(lost);
    }

    /// What the blocks written so far hold: the clean-stop marker's counts.
    pub(crate) fn written(&self) -> Stop {
        self.written
    }

    /// The sequence number of the recorder's next own block (thread 0).
    pub(crate) fn recorder_sequence(&self) -> u64 {
        self.recorder_sequence
    }

    /// Counts `blocks` more of the recorder's own blocks as written.
    pub(crate) fn advance_recorder_sequence(&mut self, blocks: u64) {
        self.recorder_sequence += blocks;
    }

    /// Records a failure that is not a write's (copying the ring file at stop).
    pub(crate) fn fail(&mut self, message: String) {
        self.failed = Some(message);
    }

    /// The memory sink's stream so far (empty without one).
    pub(crate) fn memory_copy(&self) -> Vec<u8> {
        self.memory.clone().unwrap_or_default()
    }

    /// The end of the sinks: the first failure, or else the memory sink's stream (empty
    /// without one).
    pub(crate) fn finish(&mut self) -> io::Result<Vec<u8>> {
        match self.failed.take() {
            Some(message) => Err(io::Error::other(message)),
            None => Ok(self.memory.take().unwrap_or_default()),
        }
    }

    /// Flushes the event file, if there is one.
    pub(crate) fn flush_file(&self) {
        if let Some((_, file)) = &self.file {
            let _ = (&*file).flush();
        }
    }

    /// Closes the event file, which releases its lock (`files`): the recording has ended, and
    /// another may claim the path.
    pub(crate) fn close_file(&mut self) {
        self.flush_file();
        self.file = None;
    }

    /// Closes the event file of a recording that never ran (its writer thread could not
    /// start), and removes it when it holds no event and no loss (a trace of nothing that
    /// would say it stopped cleanly) and its path still names it: it is this recording's own
    /// file, made by it, and removed while its lock is held, before another may claim the path.
    pub(crate) fn discard_file(&mut self) {
        if let Some((path, file)) = &self.file
            && self.written.events == 0
            && self.written.lost == 0
        {
            crate::files::discard(path, file);
        }
        self.close_file();
    }

    /// Gives the event file up, whatever it holds, and removes it when its path still names
    /// `ours` (a copy of its descriptor, kept by the caller that made the file): a snapshot
    /// cut short (`snapshot`).
    pub(crate) fn discard_as(&mut self, path: &std::path::Path, ours: &File) {
        self.file = None;
        crate::files::discard(path, ours);
    }

    /// The file sink's descriptor, for a fatal signal's last write.
    #[cfg(unix)]
    pub(crate) fn raw_fd(&self) -> Option<i32> {
        use std::os::fd::AsRawFd;
        self.file.as_ref().map(|(_, f)| f.as_raw_fd())
    }
}
