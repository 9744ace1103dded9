//! `schema`: the log's embedded schema as events.def text, or how it differs from an
//! events.def and whether the two are compatible.

use super::{Result, write_all};
use crate::cli::SchemaArgs;
use crate::log::{self, DumpError};
use event_format::schema::Schema;
use std::fmt::Write as _;
use std::process::ExitCode;

/// `schema`: the embedded schema, or with `--against`, the differences and a verdict.
pub(crate) fn schema(args: &SchemaArgs) -> Result<ExitCode> {
    let log = log::open(&args.log, args.force)?;
    let sets = &log.header().sets;
    let Some(against) = &args.against else {
        // Every set, as events.def text with its SET line, one after another.
        let texts: Vec<String> = sets.iter().map(|s| event_format::def::render(&s.schema)).collect();
        write_all(&texts.join("\n"))?;
        return Ok(ExitCode::SUCCESS);
    };
    let text = std::fs::read_to_string(against)
        .map_err(|e| DumpError::new(format!("{}: cannot read: {e}", against.display())))?;
    let def = event_format::def::parse(&text, &against.display().to_string())
        .map_err(|e| DumpError::new(e.to_string().lines().next().unwrap_or("").to_owned()))?;
    // Compared per set, by name: the log's set of the events.def's name, or its only set.
    let schema = match log.header().set(&def.name).or_else(|| log.header().single_set()) {
        Some(set) => set.schema.clone(),
        None => {
            let names: Vec<&str> = sets.iter().map(|s| s.schema.name.as_str()).collect();
            // An events.def without a SET line is named after its file: say how to name it.
            let hint = if text.lines().any(|l| l.trim_start().starts_with("SET")) {
                ""
            } else {
                " (name the set to compare with a SET line in the events.def)"
            };
            return Err(DumpError::new(format!(
                "{}: the log has no set named `{}`; its sets are {}{hint}",
                against.display(),
                def.name,
                names.join(", ")
            )));
        }
    };
    let mut out = String::new();
    let (changes, additions) = diff(&schema, &def);
    let (lv, dv) = (schema.version, def.version);
    let verdict = if lv.major != dv.major {
        format!("incompatible: the log's event set is {lv}, events.def is {dv}: another major version")
    } else if !changes.is_empty() {
        format!(
            "incompatible: events with the same code mean different things (the log's event set is {lv}, events.def is {dv}; such a change needs a new major version)"
        )
    } else if lv.median != dv.median {
        format!("not compatible without care: the log's event set is {lv}, events.def is {dv}: another median version")
    } else if lv == dv && !additions.is_empty() {
        format!("incompatible: both say version {lv} but they differ; the newer one should have a higher minor version")
    } else {
        format!("compatible: the log's event set is {lv}, events.def is {dv}; only additions differ")
    };
    let _ = writeln!(out, "{verdict}");
    if changes.is_empty() && additions.is_empty() {
        let _ = writeln!(out, "no differences in kinds or events");
    }
    for d in changes.iter().chain(&additions) {
        let _ = writeln!(out, "  {d}");
    }
    write_all(&out)?;
    Ok(if verdict.starts_with("compatible") { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// What differs between the log's schema and an events.def, one line each: changes of
/// meaning (a kind's bit, an event's name, format, kind or parameters under the same code),
/// then additions (in one and not the other).
fn diff(log: &Schema, def: &Schema) -> (Vec<String>, Vec<String>) {
    let mut out = Vec::new();
    let mut added = Vec::new();
    let kind = |s: &Schema, i: u8| s.kinds.get(i as usize).map_or("?", |k| k.name.as_str()).to_owned();
    for (i, k) in log.kinds.iter().enumerate() {
        match def.kinds.iter().position(|d| d.name == k.name) {
            None => added.push(format!("kind {} is in the log, not in events.def", k.name)),
            Some(j) if j != i => out.push(format!("kind {} is bit {i} in the log, bit {j} in events.def", k.name)),
            _ => {}
        }
    }
    for k in &def.kinds {
        if !log.kinds.iter().any(|l| l.name == k.name) {
            added.push(format!("kind {} is in events.def, not in the log", k.name));
        }
    }
    for e in &log.events {
        match def.events.iter().find(|d| d.code == e.code) {
            None => added.push(format!("event {} ({:#06x}) is in the log, not in events.def", e.name, e.code)),
            Some(d) => {
                if d.name != e.name {
                    out.push(format!("code {:#06x} is {} in the log, {} in events.def", e.code, e.name, d.name));
                }
                let (lf, df) =
                    (event_format::letter::format_string(&e.format), event_format::letter::format_string(&d.format));
                if lf != df {
                    out.push(format!("event {} has format {lf} in the log, {df} in events.def", e.name));
                }
                if kind(log, e.kind) != kind(def, d.kind) {
                    out.push(format!(
                        "event {} is of kind {} in the log, {} in events.def",
                        e.name,
                        kind(log, e.kind),
                        kind(def, d.kind)
                    ));
                }
                if e.params != d.params {
                    out.push(format!(
                        "event {} has parameters ({}) in the log, ({}) in events.def",
                        e.name,
                        e.params.join(", "),
                        d.params.join(", ")
                    ));
                }
            }
        }
    }
    for d in &def.events {
        if !log.events.iter().any(|e| e.code == d.code) {
            added.push(format!("event {} ({:#06x}) is in events.def, not in the log", d.name, d.code));
        }
    }
    (out, added)
}
