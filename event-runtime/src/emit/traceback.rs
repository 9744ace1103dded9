//! The panic traceback (MPS `.sol.traceback`): the panicking thread's last events, decoded
//! and written as `event-dump print` writes them. The panic hook (`crash`) prints them; the
//! thread buffers (`buffer`) only lend copies of their latest blocks.

use crate::emit::buffer;
use event_format::decode::{Block, Entry};
use event_format::wire::{BLOCK_HEADER_LEN, BlockHeader, Order};

/// How many events the traceback shows.
pub const TRACEBACK_EVENTS: usize = 16;

/// The last `n` events this thread recorded in the running recording, decoded, oldest first;
/// `None` when it has recorded none or is recording one now.
pub(crate) fn last_events_of_this_thread(n: usize) -> Option<Vec<String>> {
    let (shared, blocks) = buffer::recent_blocks_of_this_thread()?;
    let mut lines = Vec::new();
    for b in &blocks {
        let block = Block {
            index: 0,
            segment: 0,
            offset: 0,
            header: BlockHeader::read(Order::NATIVE, b),
            records: {
                let mut records = b[BLOCK_HEADER_LEN..].to_vec();
                event_format::callsites::expand_in_place(Order::NATIVE, &mut records, shared.block_size);
                records
            },
            order: Order::NATIVE,
            stored_len: b.len() as u64,
        };
        for entry in block.entries(&shared.catalog) {
            let mut line = String::new();
            match entry {
                Entry::Event(e) => {
                    let _ = event_format::text::write_event(&mut line, &shared.clock, &e);
                }
                other => line = format!("{other:?}"),
            }
            lines.push(line);
        }
    }
    let skip = lines.len().saturating_sub(n);
    Some(lines.split_off(skip))
}

/// Prints this thread's last [`TRACEBACK_EVENTS`] events to stderr, as it panics (thread
/// `name`), in one write.
pub(crate) fn print(name: &str) {
    match last_events_of_this_thread(TRACEBACK_EVENTS) {
        Some(lines) if !lines.is_empty() => {
            let mut text =
                format!("event-runtime: the last {} events of thread '{name}' before it panicked:\n", lines.len());
            for line in lines {
                text.push_str("    ");
                text.push_str(&line);
                text.push('\n');
            }
            eprint!("{text}");
        }
        _ => eprintln!("event-runtime: thread '{name}' recorded no events before it panicked"),
    }
}
