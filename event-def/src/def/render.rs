//! Writes a schema as events.def text, laid out for people to read and edit.

use crate::letter;
use crate::schema::{self, EventType, HistogramOf, Schema};
use std::fmt::Write as _;

/// Renders a schema as events.def text; `parse(render(s)) == s` for every schema that passes
/// [`Schema::check`].
///
/// The text has a comment line, the `SET` line (when the set has a name: a 1.x stream's set
/// has none), the `VERSION` line, the `KIND` lines, then the `RELATION`
/// lines under a comment naming their columns (a row's `limit=` last), then the `RETIRED`
/// lines, then the `SPAN`, `COUNTER`, `FLOW` and `HISTOGRAM` lines (events named by their
/// names). Columns line up;
/// codes are written in hexadecimal (`0x001F`); parameter names are left out when they are
/// the defaults `f0`, `f1`, ...
///
/// ```
/// use event_def::{def, EventType, Kind, Letter, Schema, Version};
///
/// let schema = Schema {
///     name: "mps".into(),
///     version: Version::new(1, 2, 0),
///     kinds: vec![Kind { name: "Arena".into(), doc: "arenas".into() }],
///     events: vec![EventType {
///         name: "ArenaCreate".into(),
///         code: 1,
///         always: true,
///         kind: 0,
///         format: vec![Letter::Pointer, Letter::Word],
///         params: vec!["arena".into(), "size".into()],
///     }],
///     ..Schema::default()
/// };
/// let text = def::render(&schema);
/// assert!(text.contains("RELATION(ArenaCreate, 0x0001, TRUE,  Arena, PW,    arena, size)"));
/// assert!(text.contains("SET(mps)\nVERSION(1, 2, 0)"));
/// assert_eq!(def::parse(&text, "events.def").unwrap(), schema);
/// ```
pub fn render(schema: &Schema) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# The event set, version {}. Written by event-format.", schema.version);
    if !schema.name.is_empty() {
        // A name with '-' (a package name) is not a word of events.def: it is written as a string.
        if schema.name.contains('-') {
            let _ = writeln!(out, "SET({})", quoted(&schema.name));
        } else {
            let _ = writeln!(out, "SET({})", schema.name);
        }
    }
    let v = schema.version;
    let _ = writeln!(out, "VERSION({}, {}, {})", v.major, v.median, v.minor);
    if !schema.kinds.is_empty() {
        out.push('\n');
        render_kinds(schema, &mut out);
    }
    if !schema.events.is_empty() {
        out.push('\n');
        render_events(schema, &mut out);
    }
    if !schema.retired.is_empty() {
        out.push('\n');
        let rows: Vec<Vec<String>> = schema.retired.iter().map(|r| vec![r.name.clone(), code(r.code)]).collect();
        let widths = column_widths(&rows, &[]);
        write_rows(&mut out, "RETIRED(", &rows, &widths);
    }
    render_meanings(schema, &mut out);
    out
}

/// The `SPAN`, `COUNTER` and `FLOW` lines, each kind in a paragraph of its own.
fn render_meanings(schema: &Schema, out: &mut String) {
    // An event the schema does not declare (not a valid schema) is named by its code.
    let name = |code: u16| schema.event_by_code(code).map_or_else(|| format!("Event0x{code:04X}"), |e| e.name.clone());
    let spans: Vec<Vec<String>> = schema
        .spans
        .iter()
        .map(|s| {
            let mut row = vec![s.name.clone(), name(s.begin), name(s.end)];
            row.extend(s.id.clone());
            row
        })
        .collect();
    let counters: Vec<Vec<String>> = schema
        .counters
        .iter()
        .map(|c| {
            let mut row = vec![c.name.clone(), name(c.event), c.value.clone()];
            if !c.unit.is_empty() {
                row.push(quoted(&c.unit));
            }
            row
        })
        .collect();
    let flows: Vec<Vec<String>> = schema
        .flows
        .iter()
        .map(|f| vec![f.name.clone(), name(f.event), f.id.clone(), f.step.as_str().to_owned()])
        .collect();
    let histograms: Vec<Vec<String>> = schema
        .histograms
        .iter()
        .map(|h| {
            let mut row = vec![h.name.clone()];
            match &h.of {
                HistogramOf::Span(span) => row.push(span.clone()),
                HistogramOf::Param { event, param } => row.extend([name(*event), param.clone()]),
            }
            row.push(h.buckets.word());
            row
        })
        .collect();
    for (head, rows) in [("SPAN(", spans), ("COUNTER(", counters), ("FLOW(", flows), ("HISTOGRAM(", histograms)] {
        if !rows.is_empty() {
            out.push('\n');
            let widths = column_widths(&rows, &[]);
            write_rows(out, head, &rows, &widths);
        }
    }
}

fn render_kinds(schema: &Schema, out: &mut String) {
    let rows: Vec<Vec<String>> = schema
        .kinds
        .iter()
        .map(|k| {
            let mut row = vec![k.name.clone()];
            if !k.doc.is_empty() {
                row.push(quoted(&k.doc));
            }
            row
        })
        .collect();
    let widths = column_widths(&rows, &[]);
    write_rows(out, "KIND(", &rows, &widths);
}

/// The names of the columns of `RELATION` rows, for the comment above them.
const COLUMNS: [&str; 6] = ["name", "code", "always", "kind", "format", "parameter names"];
/// The columns that line up: all but the parameter names.
const ALIGNED: usize = 5;

fn render_events(schema: &Schema, out: &mut String) {
    let rows: Vec<Vec<String>> = schema
        .events
        .iter()
        .map(|e| {
            let kind = match schema.kinds.get(usize::from(e.kind)) {
                Some(kind) => kind.name.clone(),
                // Not a valid schema: say so where the kind should be.
                None => format!("UndeclaredKind{}", e.kind),
            };
            let always = if e.always { "TRUE" } else { "FALSE" };
            let mut row = vec![e.name.clone(), code(e.code), always.to_owned(), kind, letter::format_string(&e.format)];
            if !has_default_names(e) {
                row.extend(e.params.iter().cloned());
            }
            if let Some(rate) = schema.limit_of(e.code) {
                row.push(format!("limit={rate}"));
            }
            row
        })
        .collect();
    let named = rows.iter().any(|r| r.len() > ALIGNED);
    let header = if named { &COLUMNS[..] } else { &COLUMNS[..ALIGNED] };
    let mins: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    let widths = column_widths(&rows, &mins);
    // A comment that names the columns, each word over its column.
    let mut line = String::from("#");
    let mut column_start = "RELATION(".len();
    for (i, word) in header.iter().enumerate() {
        pad_to(&mut line, column_start);
        line.push_str(word);
        column_start += widths.get(i).copied().unwrap_or(0) + 1;
    }
    out.push_str(&line);
    out.push('\n');
    write_rows(out, "RELATION(", &rows, &widths);
}

/// Whether an event's parameter names are `f0`, `f1`, ... and can be left out.
fn has_default_names(event: &EventType) -> bool {
    event.params.len() == event.format.len()
        && event.params.iter().enumerate().all(|(i, p)| *p == schema::default_param_name(i))
}

/// The width of each of the first [`ALIGNED`] columns, comma included: its widest cell that a
/// comma follows, and at least `mins[i]`.
fn column_widths(rows: &[Vec<String>], mins: &[usize]) -> Vec<usize> {
    (0..ALIGNED)
        .map(|i| {
            let widest = rows.iter().filter(|r| i + 1 < r.len()).map(|r| r[i].chars().count() + 1).max().unwrap_or(0);
            widest.max(mins.get(i).copied().unwrap_or(0))
        })
        .collect()
}

/// Writes one statement per row: `head`, then the cells separated by `, `, each of the first
/// [`ALIGNED`] with its comma padded to `widths[i]` so that the columns line up.
fn write_rows(out: &mut String, head: &str, rows: &[Vec<String>], widths: &[usize]) {
    for row in rows {
        let mut line = String::from(head);
        for (i, cell) in row.iter().enumerate() {
            let column_start = line.chars().count();
            line.push_str(cell);
            if i + 1 == row.len() {
                break;
            }
            line.push(',');
            if let Some(width) = widths.get(i).filter(|_| i < ALIGNED) {
                pad_to(&mut line, column_start + width);
            }
            line.push(' ');
        }
        line.push(')');
        out.push_str(&line);
        out.push('\n');
    }
}

fn pad_to(line: &mut String, width: usize) {
    let len = line.chars().count();
    line.extend(std::iter::repeat_n(' ', width.saturating_sub(len)));
}

fn code(code: u16) -> String {
    format!("0x{code:04X}")
}

/// A string as events.def writes it: in double quotes, with `"`, `\`, line feed and tab
/// escaped.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
