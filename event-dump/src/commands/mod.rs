//! The subcommands that read logs and write text: one module each, on the selection and
//! output helpers below. (`export` has its own module beside this one.)
//!
//! - [`print`]: events, threads and logs merged by time.
//! - [`census`]: `stats` and `check`, one pass over each log.
//! - [`schema`]: the embedded schema, and how it differs from an events.def.
//! - [`follow`]: a running program's ring file, live.
//! - [`control`]: a request to a running program through its ring file.

pub(crate) mod census;
pub(crate) mod control;
pub(crate) mod follow;
pub(crate) mod print;
pub(crate) mod schema;

use crate::cli::Select;
use crate::filter::Filter;
use crate::log::DumpError;
use crate::render::EventFields;
use event_format::builtin;
use event_format::decode::Event;
use event_format::schema::Schema;
use event_format::wire::Clock;
use std::collections::BTreeSet;
use std::io::{self, Write};
use std::ops::ControlFlow;

type Result<T> = std::result::Result<T, DumpError>;

/// Matches `text` against a glob with `*` and `?`.
pub(crate) fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// The selection of `print` and `follow`, compiled against the logs' schemas.
pub(crate) struct Selection {
    kinds: Option<Vec<String>>,
    events: Option<Vec<String>>,
    threads: Option<BTreeSet<u64>>,
    since: Option<f64>,
    until: Option<f64>,
    filter: Option<Filter>,
}

impl Selection {
    pub(crate) fn new(select: &Select, schemas: &[&Schema]) -> Result<Selection> {
        let list = |s: &Option<String>| {
            s.as_ref().map(|s| s.split(',').map(|x| x.trim().to_owned()).filter(|x| !x.is_empty()).collect::<Vec<_>>())
        };
        let kinds = list(&select.kind);
        if let Some(kinds) = &kinds {
            for k in kinds {
                let known =
                    schemas.iter().any(|s| s.kinds.iter().any(|kind| glob(k, &kind.name))) || glob(k, "Builtin");
                if !known {
                    let names: Vec<&str> = schemas[0].kinds.iter().map(|k| k.name.as_str()).collect();
                    let hint = event_format::def::closest(k, names.iter().copied())
                        .map(|c| format!(" (did you mean `{c}`?)"))
                        .unwrap_or_default();
                    return Err(DumpError::new(format!(
                        "--kind {k}: no such kind in the log{hint}; its kinds are {}, Builtin",
                        names.join(", ")
                    )));
                }
            }
        }
        let events = list(&select.event);
        if let Some(events) = &events {
            for e in events {
                let known =
                    schemas.iter().any(|s| {
                        s.events.iter().any(|ev| {
                            glob(e, &ev.name) || glob(e, &format!("{}.{}", s.kinds[ev.kind as usize].name, ev.name))
                        })
                    }) || builtin::ALL.iter().any(|b| glob(e, b.name) || glob(e, &format!("Builtin.{}", b.name)));
                if !known {
                    let names: Vec<&str> = schemas[0].events.iter().map(|e| e.name.as_str()).collect();
                    let hint = event_format::def::closest(e, names.iter().copied())
                        .map(|c| format!(" (did you mean `{c}`?)"))
                        .unwrap_or_default();
                    return Err(DumpError::new(format!("--event {e}: no such event in the log{hint}")));
                }
            }
        }
        let threads = match list(&select.thread) {
            None => None,
            Some(ids) => Some(
                ids.iter()
                    .map(|t| {
                        t.trim_start_matches('T').parse::<u64>().map_err(|_| {
                            DumpError::new(format!("--thread {t}: not a thread id; write numbers such as 1,3"))
                        })
                    })
                    .collect::<Result<BTreeSet<u64>>>()?,
            ),
        };
        let filter = match &select.filter {
            None => None,
            Some(expr) => {
                let mut fields: BTreeSet<String> = BTreeSet::new();
                for s in schemas {
                    for e in &s.events {
                        fields.extend(e.params.iter().cloned());
                    }
                }
                for b in builtin::ALL {
                    fields.extend(b.params.iter().map(|p| (*p).to_owned()));
                }
                let names: Vec<&str> = fields.iter().map(String::as_str).collect();
                Some(
                    Filter::parse(expr, &names)
                        .map_err(|e| DumpError::new(e.render(expr).replacen("error: ", "", 1)))?,
                )
            }
        };
        Ok(Selection { kinds, events, threads, since: select.since, until: select.until, filter })
    }

    pub(crate) fn keeps(&self, event: &Event<'_>, clock: &Clock) -> bool {
        if let Some(kinds) = &self.kinds
            && !kinds.iter().any(|k| glob(k, &event.desc.kind_name))
        {
            return false;
        }
        if let Some(events) = &self.events
            && !events
                .iter()
                .any(|g| glob(g, &event.desc.name) || glob(g, &format!("{}.{}", event.desc.kind_name, event.desc.name)))
        {
            return false;
        }
        if let Some(threads) = &self.threads
            && !threads.contains(&event.thread)
        {
            return false;
        }
        let seconds = clock.seconds_since_start(event.time);
        if self.since.is_some_and(|s| seconds < s) || self.until.is_some_and(|u| seconds >= u) {
            return false;
        }
        match &self.filter {
            Some(f) => f.matches(&EventFields { event, clock }),
            None => true,
        }
    }
}

/// Writes a line to stdout; `Break` when stdout is closed (`| head`).
pub(crate) fn out_line(out: &mut impl Write, line: &str) -> Result<ControlFlow<()>> {
    match out.write_all(line.as_bytes()).and_then(|()| out.write_all(b"\n")) {
        Ok(()) => Ok(ControlFlow::Continue(())),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ControlFlow::Break(())),
        Err(e) => Err(DumpError::new(format!("cannot write the output: {e}"))),
    }
}

/// Writes `text` to stdout; a closed stdout (`| head`) is not an error.
pub(crate) fn write_all(text: &str) -> Result<()> {
    match io::stdout().lock().write_all(text.as_bytes()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(DumpError::new(format!("cannot write the output: {e}"))),
    }
}
