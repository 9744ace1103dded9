//! `export --to folded`: the logs' nested spans as folded stacks, one line per stack,
//! `frame;frame;frame WEIGHT`, which inferno (`inferno-flamegraph`), Brendan Gregg's
//! `flamegraph.pl` and speedscope read.
//!
//! Spans are what every reader pairs (`event_format::roles`: events.def's `SPAN` lines, the
//! naming convention, the `tracing` bridge's spans), through the merge in time order, with
//! `latency`'s rules: a thread's spans nest, and a span's stack is the spans open around it
//! on its thread, outermost first; an async span (paired by an id across threads) nests in
//! nothing and holds nothing, a stack of its own. The weight is nanoseconds, as `print`
//! shows times: a span's *self* time (its duration less that of the spans it encloses, the
//! default: what a flame graph draws) or its *total* time (its duration: the sum of the
//! lines that end in a span's name is then `latency`'s `total_ns` for it). Spans are chosen
//! by their begin (as `latency` chooses them); one left out still encloses, and what it
//! encloses hangs from its nearest chosen ancestor. A span never ended (or cut by the end
//! of one enclosing it) has no time and is said on stderr, with the ends that closed
//! nothing.
//!
//! Lines are merged over threads and logs (the default), or per thread (`--per-thread`:
//! the thread a span began on), each stack under a frame naming its thread as `stats` does
//! (`T3 (worker-1)`), after who wrote its log for several logs (`host-a/api:T3`, as `print`
//! and `latency` name threads: `crate::identity::prefixes`). Lines are sorted by stack: the same logs give the same file. A `;` or
//! a line break in a span's name is written `_` (a frame holds neither).

use super::{Said, Window};
use crate::cli::Weight;
use crate::export::Item;
use crate::log::{DumpError, Log};
use event_format::builtins::BuiltinEvent;
use event_format::ledger::Ledger;
use event_format::roles::{Pairer, Roles};
use event_format::text::Seconds;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

/// A span begun and not yet ended.
struct Open {
    /// Its stack: the chosen spans open around it on its thread, and it, joined by `;`.
    stack: String,
    ns: i128,
    /// The thread it began on, whose stack it is (an async span may end on another).
    thread: u64,
    /// The durations of the spans it enclosed that ended, in ns.
    inner: u128,
    chosen: bool,
}

/// A stack's place: its thread (with `--per-thread`: log and thread) and its frames.
type Key = (Option<(usize, u64)>, String);

pub(crate) fn export(
    logs: &mut [Log],
    out: &Path,
    window: &mut Window,
    weight: Weight,
    per_thread: bool,
) -> Result<ExitCode, DumpError> {
    let (stacks, names, ledgers, counts) = fold(logs, window, weight, per_thread)?;
    let several = logs.len() > 1;
    let prefixes = crate::identity::prefixes(&logs.iter().map(|l| l.header()).collect::<Vec<_>>());
    let write = |w: &mut dyn Write| -> io::Result<()> {
        for ((thread, stack), ns) in &stacks {
            if *ns == 0 {
                continue;
            }
            if let Some((file, t)) = thread {
                let mut frame = if several { format!("{}:T{t}", prefixes[*file]) } else { format!("T{t}") };
                if let Some(name) = names.get(&(*file, *t)) {
                    frame.push_str(&format!(" ({})", frame_text(name)));
                }
                write!(w, "{frame};")?;
            }
            writeln!(w, "{stack} {ns}")?;
        }
        w.flush()
    };
    if out.as_os_str() == "-" {
        let stdout = io::stdout();
        match write(&mut io::BufWriter::new(stdout.lock())) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
            Err(e) => return Err(DumpError::new(format!("cannot write the output: {e}"))),
        }
    } else {
        super::trace_file::write_whole(out, "trace.folded", |mut file| write(&mut file))?;
    }
    let mut notes = Vec::new();
    if counts.unended > 0 {
        notes.push(format!("{} spans never ended (no time given)", counts.unended));
    }
    if counts.unmatched > 0 {
        notes.push(format!("{} ends closed no span", counts.unmatched));
    }
    if counts.backwards > 0 {
        notes.push(format!("{} spans ended before they began (left out)", counts.backwards));
    }
    if stacks.is_empty() {
        notes.push("no span in the logs: nothing to fold".to_owned());
    }
    Said::of(&ledgers).report("folded", &notes, window);
    Ok(ExitCode::SUCCESS)
}

/// What the fold met that has no time.
#[derive(Default)]
struct Counts {
    unended: u64,
    unmatched: u64,
    backwards: u64,
}

/// The stacks' weights, the threads' names, the logs' ledgers and what had no time.
type Folded = (BTreeMap<Key, u128>, BTreeMap<(usize, u64), String>, Vec<Ledger>, Counts);

fn fold(logs: &mut [Log], window: &mut Window, weight: Weight, per_thread: bool) -> Result<Folded, DumpError> {
    let roles: Vec<Roles> = logs.iter().map(|l| Roles::new(&l.header().sets)).collect();
    let seconds: Vec<Seconds> = logs.iter().map(|l| Seconds::new(&l.header().clock)).collect();
    let mut pairers: Vec<Pairer<Open>> = logs.iter().map(|_| Pairer::new()).collect();
    let mut stacks: BTreeMap<Key, u128> = BTreeMap::new();
    let mut names: BTreeMap<(usize, u64), String> = BTreeMap::new();
    let mut counts = Counts::default();
    let ledgers = super::merge_all(logs, "folded", |Item { file, event }| {
        if let Some(BuiltinEvent::ThreadName { thread, name }) = BuiltinEvent::of(&event) {
            names.insert((file, thread), name.to_string_lossy().into_owned());
        }
        let roles = &roles[file];
        let Some(role) = roles.of(event.desc.wire) else { return Ok(()) };
        let ns = seconds[file].nanos(event.time);
        let pairer = &mut pairers[file];
        if let Some(end) = role.ends
            && let Some(key) = roles.key(&end, &event)
        {
            match pairer.end(event.thread, &key) {
                Some(closed) => {
                    counts.unended += closed.cut.iter().filter(|c| c.chosen).count() as u64;
                    let span = closed.begin;
                    match u128::try_from(ns - span.ns) {
                        Err(_) => counts.backwards += u64::from(span.chosen),
                        Ok(duration) => {
                            // Its parent's time less its own: a thread span's enclosing span.
                            if !key.is_async()
                                && let Some(parent) = pairer.innermost_mut(event.thread)
                            {
                                parent.inner += duration;
                            }
                            if span.chosen {
                                let own = match weight {
                                    Weight::Own => duration.saturating_sub(span.inner),
                                    Weight::Total => duration,
                                };
                                let thread = per_thread.then_some((file, span.thread));
                                *stacks.entry((thread, span.stack)).or_default() += own;
                            }
                        }
                    }
                }
                None => {
                    counts.unmatched += u64::from(window.keeps(file, &event));
                }
            }
        }
        if let Some(begin) = role.begins
            && let Some(key) = roles.key(&begin, &event)
        {
            let chosen = window.keeps(file, &event);
            let name = frame_text(&roles.begin_name(&begin, &event));
            let parent = if key.is_async() { None } else { pairer.innermost_mut(event.thread) };
            let stack = match parent.map(|p| &p.stack) {
                Some(outer) if chosen && !outer.is_empty() => format!("{outer};{name}"),
                Some(outer) if !chosen => outer.clone(),
                _ if chosen => name,
                _ => String::new(),
            };
            pairer.begin(event.thread, key, Open { stack, ns, thread: event.thread, inner: 0, chosen });
        }
        Ok(())
    })
    .map_err(|e| DumpError::new(format!("cannot read the logs: {e}")))?;
    for pairer in pairers {
        let left = pairer.finish();
        let open = left.threads.into_iter().flat_map(|(_, s)| s.into_iter().map(|(_, o)| o));
        counts.unended += open.chain(left.asyncs.into_iter().flat_map(|(_, s)| s)).filter(|o| o.chosen).count() as u64;
    }
    Ok((stacks, names, ledgers, counts))
}

/// A name as a frame writes it: `;` and line breaks, which end a frame or a line, as `_`.
fn frame_text(name: &str) -> String {
    name.replace([';', '\n', '\r'], "_")
}

#[cfg(test)]
mod tests {
    #[test]
    fn frames_hold_no_separator() {
        assert_eq!(super::frame_text("a;b\nc d"), "a_b_c d");
    }
}
