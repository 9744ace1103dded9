//! The recording's side of the limits and histograms (`aggregate`): the cold half of
//! `event!`'s test for a diverted event, which asks the event's limit on its thread
//! ([`admit`]), and the flushes that write what the threads counted ([`flush`]).
//!
//! The counting itself, and the state every thread registers, are `aggregate`'s, which the
//! session holds; this module stands above the thread buffers, whose records it writes.

use crate::emit::aggregate::{self, Decision, Flush, Said};
use crate::emit::buffer;
use crate::emit::session::{self, Shared};
use crate::locks::lock;
use crate::sinks::sink::Pace;
use event_format::builtin;
use event_format::wire::{Text, Value, body};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// The cold half of `event!`'s test for a diverted event (`__private::route`): whether its
/// arguments are evaluated, for a record or (its limit did not keep it, a histogram counts
/// it) for the histograms alone, `aggregate::unkept_code` then saying so to the thread
/// buffer. While a capture runs, the capture decides (`capture_buffer::enabled_here`), and no
/// limit applies; else a limited event asks its limit on this thread (`aggregate`'s module
/// docs).
#[cold]
#[inline(never)]
pub(crate) fn admit(bits: &[AtomicU64], index: u16) -> bool {
    if crate::emit::divert::capturing() {
        return crate::emit::capture_buffer::enabled_here(bits, index);
    }
    buffer::with_event(bits, index, |buffer, wire| {
        // A mark of this event left by an earlier call whose arguments never got to the
        // buffer (they panicked) is not this call's. Another event's mark stays: an argument
        // may record an event of its own between this event's test and its record.
        aggregate::unkept_code(wire);
        let shared = Arc::clone(buffer.shared());
        let Some(agg) = &shared.aggregates else { return true };
        let (generation, thread) = (buffer.generation(), buffer.thread());
        match agg.decide(generation, thread, wire, &shared.time) {
            // Not limited (or no state to be had): recorded, and looked at.
            None => true,
            Some(Decision::Kept(said)) => {
                if let Some((count, window)) = said
                    && !buffer.write_suppressed(wire, count, window)
                {
                    // Refused for want of room: the count goes back, for the recorder to write.
                    agg.unsay(generation, thread, wire, count);
                }
                true
            }
            Some(Decision::Unkept { late }) => {
                if late {
                    // After the stop's flush: nothing writes it any more, so it is a loss.
                    session::count_lost_unattributed(1);
                }
                let measured = agg.measures(wire);
                if measured {
                    aggregate::mark_unkept(wire);
                }
                measured
            }
        }
    })
    .unwrap_or(true)
}

/// Writes what the threads counted since the last flush, as `Suppressed` and `Histogram`
/// records ([`Flush`] says where).
pub(crate) fn flush(shared: &Shared, how: Flush) {
    let Some(agg) = &shared.aggregates else { return };
    let now = shared.time.now();
    let said = aggregate::take_all(agg, now, how != Flush::Period);
    if said.is_empty() {
        return;
    }
    if how == Flush::Last || (how == Flush::Period && shared.streaming) {
        let records: Vec<(u16, Vec<Value<'_>>)> = said.iter().map(Said::values).collect();
        let mut sinks = lock(&shared.writer.sinks);
        if sinks.is_empty() {
            let unsaid = said.iter().map(|s| if let Said::Suppressed { count, .. } = s { *count } else { 0 }).sum();
            session::count_lost_unattributed(unsaid);
            return;
        }
        let blocks = crate::sinks::sink::recorder_blocks(shared.block_size, sinks.recorder_sequence(), now, &records);
        sinks.advance_recorder_sequence(blocks.len() as u64);
        for block in &blocks {
            sinks.write_block(block, Pace::Keep);
        }
        return;
    }
    for one in said {
        let written = match &one {
            Said::Suppressed { thread, code, count, window } => {
                buffer::emit_checked(builtin::SUPPRESSED, builtin::SUPPRESSED_FIXED, &[], |w| {
                    body::suppressed(w, *thread, *code, *count, *window)
                })
            }
            Said::Histogram { head, text } => {
                let strs = [Text::new(text)];
                buffer::emit_checked(builtin::HISTOGRAM, builtin::HISTOGRAM_FIXED, &strs, |w| body::histogram(w, head))
            }
        };
        if !written && let Said::Suppressed { thread, code, count, .. } = one {
            // Kept for the stop's last flush, which cannot be refused.
            aggregate::put_back(agg, thread, code, count, now);
        }
    }
}
