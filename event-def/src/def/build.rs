//! Turns statements into a [`Schema`], then holds it to [`Schema::check`].
//!
//! This module reads each argument for what its place asks (a name, a number, `TRUE` or
//! `FALSE`, a format) and remembers where every item came from, so that each [`Problem`] of
//! the check is reported at its token. The rules of the event set themselves (unique names
//! and codes, code ranges, identifiers, counts) are the check's alone.

use super::lex::{self, Token, TokenKind};
use super::parse::{self, Keyword, Statement};
use super::suggest::{closest, shown};
use super::{Diag, Pos};
use crate::letter::Letter;
use crate::meaning::{Buckets, Counter, Flow, FlowStep, Histogram, HistogramOf, Limit, Rate, Span};
use crate::schema::{self, EventType, Kind, Place, Problem, Retired, Schema, Version};
use std::collections::{HashMap, HashSet};

/// Parses `source`, naming the set `default_name` when it has no `SET` line; see
/// [`super::parse_set`].
pub(super) fn parse(source: &str, default_name: &str) -> Result<Schema, Vec<Diag>> {
    let mut diags = Vec::new();
    let tokens = lex::lex(source, &mut diags);
    let statements = parse::statements(&tokens, &mut diags);
    let mut builder = Builder { diags, ..Builder::default() };
    for statement in &statements {
        builder.statement(statement);
    }
    if builder.places.set.is_none() {
        builder.schema.name = default_name.to_owned();
        if let Some(why) = schema::set_name_problem(default_name) {
            builder.error(
                Pos::START,
                format!("the set has no SET line, and its default name will not do: {why}"),
                "name the set with a SET line at the top, such as `SET(storage)`",
            );
        }
    }
    builder.finish()
}

const RELATION_HELP: &str = "write RELATION(Name, code, TRUE|FALSE, Kind, Format[, parameter names...][, limit=RATE])";
const LIMIT_HELP: &str = "write limit=N/UNIT for at most N a period on each thread (limit=1000/s; ns, us, ms, s, min or h), or limit=K/N for the first K of every N (limit=1/100)";
const FORMAT_HELP: &str =
    "write the format letters together, from P A W U I D B S, such as `PAW`, or 0 for no parameters";

/// Where the items of the schema came from, index for index.
#[derive(Default)]
struct Places {
    set: Option<Pos>,
    version: Option<Pos>,
    kind_name: Vec<Pos>,
    /// The description, or the name when there is none.
    kind_doc: Vec<Pos>,
    /// The `RELATION` keyword.
    event_row: Vec<Pos>,
    event_name: Vec<Pos>,
    event_code: Vec<Pos>,
    event_kind: Vec<Pos>,
    event_format: Vec<Pos>,
    /// Each parameter name; empty when the names are the defaults.
    params: Vec<Vec<Pos>>,
    retired_name: Vec<Pos>,
    retired_code: Vec<Pos>,
    /// Each declaration's arguments, by its statement's argument index (`SPAN`'s name, begin,
    /// end and id; `COUNTER`'s name, event, value and unit; `FLOW`'s name, event, id and step).
    spans: Vec<[Pos; 4]>,
    counters: Vec<[Pos; 4]>,
    flows: Vec<[Pos; 4]>,
    /// `HISTOGRAM`'s name, span or event, parameter (the buckets' place for a span's) and
    /// buckets.
    histograms: Vec<[Pos; 4]>,
    /// Each limit's `limit=` setting.
    limits: Vec<Pos>,
}

impl Places {
    fn of(&self, place: Place) -> Pos {
        let at = |v: &[Pos], i: usize| v.get(i).copied().unwrap_or(Pos::START);
        let arg = |v: &[[Pos; 4]], i: usize, j: usize| v.get(i).map_or(Pos::START, |a| a[j]);
        match place {
            Place::Version => self.version.unwrap_or(Pos::START),
            Place::KindName(i) => at(&self.kind_name, i),
            Place::KindDoc(i) => at(&self.kind_doc, i),
            Place::Event(i) => at(&self.event_row, i),
            Place::EventName(i) => at(&self.event_name, i),
            Place::EventCode(i) => at(&self.event_code, i),
            Place::EventKind(i) => at(&self.event_kind, i),
            Place::EventFormat(i) => at(&self.event_format, i),
            Place::Param(i, j) => match self.params.get(i).and_then(|p| p.get(j)) {
                Some(pos) => *pos,
                None => at(&self.event_format, i),
            },
            Place::RetiredName(i) => at(&self.retired_name, i),
            Place::RetiredCode(i) => at(&self.retired_code, i),
            Place::SpanName(i) => arg(&self.spans, i, 0),
            Place::SpanBegin(i) => arg(&self.spans, i, 1),
            Place::SpanEnd(i) => arg(&self.spans, i, 2),
            Place::SpanId(i) => arg(&self.spans, i, 3),
            Place::CounterName(i) => arg(&self.counters, i, 0),
            Place::CounterEvent(i) => arg(&self.counters, i, 1),
            Place::CounterValue(i) => arg(&self.counters, i, 2),
            Place::CounterUnit(i) => arg(&self.counters, i, 3),
            Place::FlowName(i) => arg(&self.flows, i, 0),
            Place::FlowEvent(i) => arg(&self.flows, i, 1),
            Place::FlowId(i) => arg(&self.flows, i, 2),
            Place::FlowStep(i) => arg(&self.flows, i, 3),
            Place::HistogramName(i) => arg(&self.histograms, i, 0),
            Place::HistogramOf(i) => arg(&self.histograms, i, 1),
            Place::HistogramParam(i) => arg(&self.histograms, i, 2),
            Place::HistogramBuckets(i) => arg(&self.histograms, i, 3),
            Place::Limit(i) => at(&self.limits, i),
        }
    }
}

/// An event whose kind is resolved once every `KIND` line has been read.
struct PendingKind<'a> {
    /// The event's index in the schema.
    event: usize,
    /// The kind's name as written.
    name: &'a str,
}

/// A declaration (`SPAN`, `COUNTER`, `FLOW`) whose events are named: it joins the schema
/// once every `RELATION` has been read and its names are found.
struct PendingDecl<'a> {
    what: Decl,
    /// Its events' names as written, with where: a span's begin and end, or the one event of
    /// a counter or a flow line.
    events: Vec<(&'a str, Pos)>,
    /// The positions of its four arguments (the last ones where they are missing: its `)`).
    places: [Pos; 4],
}

/// A `HISTOGRAM` line whose span or event is looked up once every line has been read.
struct PendingHistogram<'a> {
    name: &'a str,
    /// The span's or event's name, and where.
    of: (&'a str, Pos),
    /// The parameter, for a histogram of an event's parameter.
    param: Option<&'a str>,
    buckets: Buckets,
    places: [Pos; 4],
}

/// A declaration with its events' codes left to fill in.
enum Decl {
    Span(Span),
    Counter(Counter),
    Flow(Flow),
}

#[derive(Default)]
struct Builder<'a> {
    schema: Schema,
    places: Places,
    diags: Vec<Diag>,
    /// Events whose kind is yet to be looked up.
    pending: Vec<PendingKind<'a>>,
    /// Declarations whose events are yet to be looked up, in the order of their lines.
    declared: Vec<PendingDecl<'a>>,
    /// Histograms whose span or event is yet to be looked up, in the order of their lines.
    histograms: Vec<PendingHistogram<'a>>,
    /// Events whose kind, format or some parameter name could not be read: the check's
    /// problems about those parts would only repeat the error already given.
    unknown_kind: HashSet<usize>,
    bad_format: HashSet<usize>,
    bad_count: HashSet<usize>,
}

impl<'a> Builder<'a> {
    fn error(&mut self, pos: Pos, message: impl Into<String>, help: impl Into<String>) {
        self.diags.push(Diag::new(pos, message, help));
    }

    fn statement(&mut self, statement: &Statement<'a>) {
        if statement.keyword != Keyword::Relation && statement.args.iter().any(|a| a.setting().is_some()) {
            // `limit=` and the like are settings of a RELATION row: reported once each, then
            // the statement is read without them.
            let mut without = statement.clone();
            without.args.retain(|a| a.setting().is_none());
            for arg in statement.args.iter().filter(|a| a.setting().is_some()) {
                let key = arg.setting().map_or("", |(k, _)| k);
                self.error(
                    arg.start,
                    format!("`{}=` is not a setting of {}", shown(key), statement.head.text),
                    "settings such as `limit=1000/s` go at the end of a RELATION row",
                );
            }
            return self.statement(&without);
        }
        match statement.keyword {
            Keyword::Set => self.set(statement),
            Keyword::Version => self.version(statement),
            Keyword::Kind => self.kind(statement),
            Keyword::Relation => self.relation(statement),
            Keyword::Retired => self.retired(statement),
            Keyword::Span => self.span(statement),
            Keyword::Counter => self.counter(statement),
            Keyword::Flow => self.flow(statement),
            Keyword::Histogram => self.histogram(statement),
        }
    }

    /// Reports a statement's arguments past `parts.len()`, or the first of the `least` it
    /// needs that is missing; `true` when it has at least `least`. `needs` says what it needs
    /// ("a name, an event and a value parameter"); `parts` name each argument.
    fn arity(&mut self, statement: &Statement<'a>, least: usize, needs: &str, parts: &[&str], help: &str) -> bool {
        let (args, keyword) = (&statement.args, statement.head.text);
        if let Some(extra) = args.get(parts.len()) {
            self.error(
                extra.start,
                format!(
                    "{keyword} takes at most {} arguments ({}), found {}",
                    parts.len(),
                    parts.join(", "),
                    args.len()
                ),
                help,
            );
        }
        if args.len() < least {
            if !statement.broken {
                self.error(
                    statement.close,
                    format!(
                        "{keyword} needs {needs}, found {} arguments; the {} is missing",
                        args.len(),
                        parts[args.len()]
                    ),
                    help,
                );
            }
            return false;
        }
        true
    }

    /// Where argument `i` of `statement` is, or its `)` when it has none.
    fn place(statement: &Statement<'a>, i: usize) -> Pos {
        statement.args.get(i).map_or(statement.close, |a| a.start)
    }

    fn places4(statement: &Statement<'a>) -> [Pos; 4] {
        [0, 1, 2, 3].map(|i| Builder::place(statement, i))
    }

    /// `SPAN(name, Begin, End[, id])`: a span that event `Begin` begins and `End` ends; with
    /// `id`, an async span whose begin and end are paired by that parameter.
    fn span(&mut self, statement: &Statement<'a>) {
        const HELP: &str = "write SPAN(name, BeginEvent, EndEvent), or SPAN(name, BeginEvent, EndEvent, id) for a span paired by its `id` across threads";
        let whole = self.arity(
            statement,
            3,
            "a name, a begin event and an end event",
            &["name", "begin event", "end event", "id"],
            HELP,
        );
        let args = &statement.args;
        let name =
            args.first().and_then(|a| self.name(a, "the span's name", "name spans with identifiers such as `request`"));
        let begin = args.get(1).and_then(|a| self.name(a, "the event that begins the span", HELP));
        let end = args.get(2).and_then(|a| self.name(a, "the event that ends the span", HELP));
        let id = args.get(3).and_then(|a| self.name(a, "the span's id parameter", HELP));
        let (true, Some((name, _)), Some(begin), Some(end)) = (whole, name, begin, end) else { return };
        if args.len() > 3 && id.is_none() {
            return;
        }
        let span = Span { name: name.to_owned(), begin: 0, end: 0, id: id.map(|(i, _)| i.to_owned()) };
        self.declared.push(PendingDecl {
            what: Decl::Span(span),
            events: vec![begin, end],
            places: Builder::places4(statement),
        });
    }

    /// `COUNTER(name, Event, value[, "unit"])`: event `Event` samples counter `name` in its
    /// parameter `value`.
    fn counter(&mut self, statement: &Statement<'a>) {
        const HELP: &str =
            "write COUNTER(name, Event, value, \"unit\"), such as `COUNTER(queue, QueueDepth, depth, \"items\")`";
        let whole = self.arity(
            statement,
            3,
            "a name, an event and a value parameter",
            &["name", "event", "value parameter", "unit"],
            HELP,
        );
        let args = &statement.args;
        let name = args
            .first()
            .and_then(|a| self.name(a, "the counter's name", "name counters with identifiers such as `queue`"));
        let event = args.get(1).and_then(|a| self.name(a, "the event that samples the counter", HELP));
        let value = args.get(2).and_then(|a| self.name(a, "the parameter that holds the value", HELP));
        let unit = match args.get(3) {
            None => Some(String::new()),
            Some(arg) => match &arg.kind {
                TokenKind::Str { value, .. } => Some(value.clone()),
                _ => {
                    self.error(
                        arg.start,
                        format!("expected the counter's unit in double quotes, found {}", arg.describe()),
                        HELP,
                    );
                    None
                }
            },
        };
        let (true, Some((name, _)), Some(event), Some((value, _)), Some(unit)) = (whole, name, event, value, unit)
        else {
            return;
        };
        let counter = Counter { name: name.to_owned(), event: 0, value: value.to_owned(), unit };
        self.declared.push(PendingDecl {
            what: Decl::Counter(counter),
            events: vec![event],
            places: Builder::places4(statement),
        });
    }

    /// `FLOW(name, Event, id, BEGIN|STEP|END)`: event `Event` begins, continues or ends the
    /// piece of work of flow `name` that its parameter `id` names.
    fn flow(&mut self, statement: &Statement<'a>) {
        const HELP: &str =
            "write FLOW(name, Event, id, BEGIN), with STEP or END for the events that continue or end the flow";
        let whole = self.arity(
            statement,
            4,
            "a name, an event, an id parameter and a step",
            &["name", "event", "id parameter", "step"],
            HELP,
        );
        let args = &statement.args;
        let name =
            args.first().and_then(|a| self.name(a, "the flow's name", "name flows with identifiers such as `request`"));
        let event = args.get(1).and_then(|a| self.name(a, "the event", HELP));
        let id = args.get(2).and_then(|a| self.name(a, "the id parameter", HELP));
        let step = args.get(3).and_then(|arg| {
            let step =
                FlowStep::ALL.iter().find(|(w, _)| arg.kind == TokenKind::Word && *w == arg.text).map(|(_, s)| *s);
            if step.is_none() {
                let help = match FlowStep::ALL.iter().find(|(w, _)| w.eq_ignore_ascii_case(arg.text)) {
                    Some((w, _)) => format!("write {w} (upper case)"),
                    None => "write BEGIN, STEP or END".to_owned(),
                };
                self.error(arg.start, format!("a flow's step is BEGIN, STEP or END, found {}", arg.describe()), help);
            }
            step
        });
        let (true, Some((name, _)), Some(event), Some((id, _)), Some(step)) = (whole, name, event, id, step) else {
            return;
        };
        let flow = Flow { name: name.to_owned(), event: 0, id: id.to_owned(), step };
        self.declared.push(PendingDecl {
            what: Decl::Flow(flow),
            events: vec![event],
            places: Builder::places4(statement),
        });
    }

    /// `HISTOGRAM(name, Span, BUCKETS)` or `HISTOGRAM(name, Event, param, BUCKETS)`: the
    /// recorder keeps the distribution of span `Span`'s durations, or of parameter `param`
    /// of `Event`, in buckets `LOG2` or `HDR1` .. `HDR7`.
    fn histogram(&mut self, statement: &Statement<'a>) {
        let args = &statement.args;
        const HELP: &str = "write HISTOGRAM(name, Span, LOG2) for a span's durations, or HISTOGRAM(name, Event, param, LOG2) for an event's parameter (buckets LOG2, or HDR1 to HDR7)";
        // Three arguments or four: the buckets are always last.
        let parts: &[&str] = if args.len() < 3 {
            &["name", "span or event", "bucket layout"]
        } else {
            &["name", "span or event", "parameter", "bucket layout"]
        };
        let whole = self.arity(statement, 3, "a name, a span or an event, and buckets", parts, HELP);
        let name = args.first().and_then(|a| {
            self.name(a, "the histogram's name", "name histograms with identifiers such as `request_ns`")
        });
        let of = args.get(1).and_then(|a| self.name(a, "the span or the event it counts", HELP));
        let (param, buckets_arg) = match args.len() {
            4 => (args.get(2).and_then(|a| self.name(a, "the parameter it counts", HELP)), args.get(3)),
            _ => (None, args.get(2)),
        };
        let buckets = buckets_arg.and_then(|arg| {
            let found = (arg.kind == TokenKind::Word).then(|| Buckets::from_word(arg.text)).flatten();
            if found.is_none() {
                let upper = arg.text.to_ascii_uppercase();
                let help = if Buckets::from_word(&upper).is_some() {
                    format!("write {upper} (upper case)")
                } else if upper.starts_with("HDR") {
                    format!(
                        "HDR takes 1 to {} sub-bucket bits: HDR1 .. HDR{}",
                        Buckets::MAX_PRECISION,
                        Buckets::MAX_PRECISION
                    )
                } else if args.len() == 3 && arg.kind == TokenKind::Word {
                    format!("write the buckets last: HISTOGRAM(name, Event, {}, LOG2) counts a parameter", arg.text)
                } else {
                    "write LOG2 (one bucket per power of two) or HDR1 .. HDR7 (2 .. 128 buckets per power of two)"
                        .to_owned()
                };
                self.error(
                    arg.start,
                    format!("a histogram's buckets are LOG2 or HDR1 .. HDR7, found {}", arg.describe()),
                    help,
                );
            }
            found
        });
        let (true, Some((name, _)), Some(of), Some(buckets)) = (whole, name, of, buckets) else { return };
        if args.len() == 4 && param.is_none() {
            return;
        }
        let param = param.map(|(p, _)| p);
        let places = match args.len() {
            4 => Builder::places4(statement),
            _ => {
                let p = Builder::places4(statement);
                [p[0], p[1], p[2], p[2]]
            }
        };
        self.histograms.push(PendingHistogram { name, of, param, buckets, places });
    }

    /// Looks up each histogram's span or event: found, it joins the schema (its rules are the
    /// check's); not found, an error here with the nearest name.
    fn resolve_histograms(&mut self) {
        for h in std::mem::take(&mut self.histograms) {
            let (of_name, of_pos) = h.of;
            let of = match h.param {
                None => {
                    if !self.schema.spans.iter().any(|s| s.name == of_name) {
                        let help = if self.schema.event(of_name).is_some() {
                            format!(
                                "`{of_name}` is an event: name the parameter it counts, HISTOGRAM({}, {of_name}, param, {})",
                                h.name,
                                h.buckets.word()
                            )
                        } else {
                            match closest(of_name, self.schema.spans.iter().map(|s| s.name.as_str())) {
                                Some(similar) => format!("did you mean `{similar}`?"),
                                None => "declare it with SPAN(name, Begin, End), or name an event and its parameter"
                                    .to_owned(),
                            }
                        };
                        self.error(of_pos, format!("unknown span `{}`", shown(of_name)), help);
                        continue;
                    }
                    HistogramOf::Span(of_name.to_owned())
                }
                Some(param) => match self.schema.event(of_name) {
                    Some(e) => HistogramOf::Param { event: e.code, param: param.to_owned() },
                    None => {
                        let help = match closest(of_name, self.schema.events.iter().map(|e| e.name.as_str())) {
                            Some(similar) => format!("did you mean `{similar}`?"),
                            None => "name an event declared with RELATION in this file".to_owned(),
                        };
                        self.error(of_pos, format!("unknown event `{}`", shown(of_name)), help);
                        continue;
                    }
                },
            };
            self.schema.histograms.push(Histogram { name: h.name.to_owned(), of, buckets: h.buckets });
            self.places.histograms.push(h.places);
        }
    }

    /// Looks up the events of every declaration: one whose events are all found joins the
    /// schema (its rules are the check's); an unknown event name is an error here, with the
    /// nearest name.
    fn resolve_declarations(&mut self) {
        let codes: HashMap<&str, u16> = self.schema.events.iter().map(|e| (e.name.as_str(), e.code)).collect();
        let mut found = Vec::new();
        let mut unknown = Vec::new();
        for decl in std::mem::take(&mut self.declared) {
            let resolved: Vec<Option<u16>> = decl.events.iter().map(|(n, _)| codes.get(n).copied()).collect();
            for ((name, pos), code) in decl.events.iter().zip(&resolved) {
                if code.is_none() {
                    let help = match closest(name, codes.keys().copied()) {
                        Some(similar) => format!("did you mean `{similar}`?"),
                        None => "name an event declared with RELATION in this file".to_owned(),
                    };
                    unknown.push((*pos, format!("unknown event `{}`", shown(name)), help));
                }
            }
            let codes: Option<Vec<u16>> = resolved.into_iter().collect();
            if let Some(codes) = codes {
                found.push((decl, codes));
            }
        }
        drop(codes);
        for (pos, message, help) in unknown {
            self.error(pos, message, help);
        }
        for (decl, codes) in found {
            match decl.what {
                Decl::Span(mut span) => {
                    (span.begin, span.end) = (codes[0], codes[1]);
                    self.schema.spans.push(span);
                    self.places.spans.push(decl.places);
                }
                Decl::Counter(mut counter) => {
                    counter.event = codes[0];
                    self.schema.counters.push(counter);
                    self.places.counters.push(decl.places);
                }
                Decl::Flow(mut flow) => {
                    flow.event = codes[0];
                    self.schema.flows.push(flow);
                    self.places.flows.push(decl.places);
                }
            }
        }
    }

    /// `SET(name)`: the set's name, a word or, for names with `-` (package names), a string.
    fn set(&mut self, statement: &Statement<'a>) {
        let help = "write SET(name), such as `SET(storage)`, or SET(\"my-crate\") for a name with '-'";
        if let Some(first) = self.places.set {
            self.error(
                statement.head.start,
                "SET is given twice",
                format!("keep one SET line; the first is on line {}", first.line),
            );
            return;
        }
        self.places.set = Some(statement.head.start);
        let args = &statement.args;
        let Some(arg) = args.first() else {
            if !statement.broken {
                self.error(statement.close, "SET needs the set's name", help);
            }
            return;
        };
        if let Some(extra) = args.get(1) {
            self.error(extra.start, format!("SET takes one name, found {} arguments", args.len()), help);
        }
        let name = match &arg.kind {
            TokenKind::Word => arg.text.to_owned(),
            TokenKind::Str { value, .. } => value.clone(),
            _ => {
                self.error(arg.start, format!("expected the set's name, found {}", arg.describe()), help);
                return;
            }
        };
        if let Some(why) = schema::set_name_problem(&name) {
            self.error(arg.start, format!("bad set name: {why}"), help);
            return;
        }
        self.schema.name = name;
    }

    fn version(&mut self, statement: &Statement<'a>) {
        if let Some(first) = self.places.version {
            self.error(
                statement.head.start,
                "VERSION is given twice",
                format!("keep one VERSION line; the first is on line {}", first.line),
            );
            return;
        }
        self.places.version = Some(statement.head.start);
        let args = &statement.args;
        let parts = ["major", "median", "minor"];
        let numbers: Vec<Option<u16>> = args
            .iter()
            .zip(parts)
            .map(|(arg, part)| self.number(arg, &format!("the {part} version"), "at most 65535"))
            .collect();
        if args.len() > 3 {
            self.error(
                args[3].start,
                format!("VERSION takes 3 numbers (major, median, minor), found {}", args.len()),
                "write VERSION(major, median, minor), such as `VERSION(1, 0, 0)`",
            );
        } else if args.len() < 3 && !statement.broken {
            self.error(
                statement.close,
                format!(
                    "VERSION takes 3 numbers (major, median, minor), found {}; the {} version is missing",
                    args.len(),
                    parts[args.len()]
                ),
                "write VERSION(major, median, minor), such as `VERSION(1, 0, 0)`",
            );
        }
        if let [Some(major), Some(median), Some(minor)] = numbers[..] {
            self.schema.version = Version::new(major, median, minor);
        }
    }

    fn kind(&mut self, statement: &Statement<'a>) {
        let args = &statement.args;
        let help = "write KIND(Name, \"description\"), or KIND(Name)";
        let Some(name) = args.first() else {
            if !statement.broken {
                self.error(statement.close, "KIND needs a name", help);
            }
            return;
        };
        let name = self.name(name, "the kind's name", "name kinds with identifiers such as `Arena`");
        let doc = match args.get(1) {
            Some(arg) => match &arg.kind {
                TokenKind::Str { value, .. } => Some((value.clone(), arg.start)),
                _ => {
                    self.error(
                        arg.start,
                        format!("expected the kind's description in double quotes, found {}", arg.describe()),
                        help,
                    );
                    None
                }
            },
            None => None,
        };
        if let Some(extra) = args.get(2) {
            self.error(
                extra.start,
                format!("KIND takes a name and a description, found {} arguments", args.len()),
                help,
            );
        }
        if let Some((name, name_pos)) = name {
            let (doc, doc_pos) = doc.unwrap_or((String::new(), name_pos));
            self.schema.kinds.push(Kind { name: name.to_owned(), doc });
            self.places.kind_name.push(name_pos);
            self.places.kind_doc.push(doc_pos);
        }
    }

    fn relation(&mut self, statement: &Statement<'a>) {
        let args = &statement.args;
        if args.len() < 5 && !statement.broken {
            let missing = ["name", "code", "always flag", "kind", "format"][args.len()];
            self.error(
                statement.close,
                format!(
                    "RELATION needs a name, code, always flag, kind and format, found {} arguments; the {missing} is missing",
                    args.len()
                ),
                RELATION_HELP,
            );
        }
        // Read every argument there is, so that each gets its errors, even when the row is
        // incomplete and will not be an event.
        let name = args
            .first()
            .and_then(|a| self.name(a, "the event's name", "name events with identifiers such as `ArenaCreate`"));
        let code = args.get(1).and_then(|a| self.code(a, "the event's code"));
        let always = args.get(2).and_then(|a| self.always(a));
        let kind = args.get(3).and_then(|a| self.kind_name(a));
        let format = args.get(4).and_then(|a| self.format(a));
        // Parameter names, then settings (`limit=1000/s`).
        let rest: Vec<&Token<'a>> = args.iter().skip(5).collect();
        let first_setting = rest.iter().position(|a| a.setting().is_some()).unwrap_or(rest.len());
        let names: Vec<Option<(&'a str, Pos)>> = rest[..first_setting]
            .iter()
            .map(|a| self.name(a, "a parameter name", "name parameters with identifiers such as `size`"))
            .collect();
        let mut limit = None;
        for arg in &rest[first_setting..] {
            let Some((key, value)) = arg.setting() else {
                self.error(
                    arg.start,
                    format!("{} after a setting: parameter names come before settings", arg.describe()),
                    "move the parameter names before `limit=`",
                );
                continue;
            };
            if key != "limit" {
                let help = match closest(key, ["limit"]) {
                    Some(k) => format!("did you mean `{k}=`? a RELATION row takes `limit=RATE`"),
                    None => "a RELATION row takes one setting, `limit=RATE` (limit=1000/s, limit=1/100)".to_owned(),
                };
                self.error(arg.start, format!("unknown setting `{}=`", shown(key)), help);
                continue;
            }
            if limit.is_some() {
                self.error(arg.start, "`limit=` is given twice", "keep one `limit=` per row");
                continue;
            }
            if value.is_empty() {
                self.error(arg.start, "`limit=` has no rate", LIMIT_HELP);
                continue;
            }
            match Rate::parse(value) {
                Ok(rate) => limit = Some((rate, arg.start)),
                Err(why) => {
                    // The value's column: just after `limit=`.
                    self.error(arg.start.right(key.chars().count() + 1), format!("bad limit: {why}"), LIMIT_HELP);
                }
            }
        }
        let (Some((name, name_pos)), Some((code, code_pos))) = (name, code) else {
            return;
        };
        let (Some(kind_arg), Some(format_arg)) = (args.get(3), args.get(4)) else {
            return;
        };
        let event = self.schema.events.len();
        let all_names_read = names.iter().all(Option::is_some);
        let (params, param_places): (Vec<String>, Vec<Pos>) =
            names.into_iter().flatten().map(|(n, p)| (n.to_owned(), p)).unzip();
        // An unreadable format or parameter name has had its error: the check hears of the
        // rest of the row, but not of the count of names, which would only repeat it.
        if format.is_none() {
            self.bad_format.insert(event);
        }
        if format.is_none() || !all_names_read {
            self.bad_count.insert(event);
        }
        let format = format.unwrap_or_else(|| vec![Letter::Word; params.len()]);
        let params = if param_places.is_empty() && all_names_read {
            (0..format.len()).map(schema::default_param_name).collect()
        } else {
            params
        };
        match kind {
            Some(kind_name) => self.pending.push(PendingKind { event, name: kind_name }),
            None => {
                self.unknown_kind.insert(event);
            }
        }
        self.schema.events.push(EventType {
            name: name.to_owned(),
            code,
            always: always.unwrap_or(false),
            kind: 0,
            format,
            params,
        });
        self.places.event_row.push(statement.head.start);
        self.places.event_name.push(name_pos);
        self.places.event_code.push(code_pos);
        self.places.event_kind.push(kind_arg.start);
        self.places.event_format.push(format_arg.start);
        self.places.params.push(param_places);
        if let Some((rate, pos)) = limit {
            self.schema.limits.push(Limit { event: code, rate });
            self.places.limits.push(pos);
        }
    }

    fn retired(&mut self, statement: &Statement<'a>) {
        let args = &statement.args;
        let help = "write RETIRED(Name, code)";
        if args.len() < 2 && !statement.broken {
            let missing = ["name", "code"][args.len()];
            self.error(
                statement.close,
                format!("RETIRED needs a name and a code, found {} arguments; the {missing} is missing", args.len()),
                help,
            );
        }
        let name = args.first().and_then(|a| self.name(a, "the retired event's name", "write the name the event had"));
        let code = args.get(1).and_then(|a| self.code(a, "the retired event's code"));
        if let Some(extra) = args.get(2) {
            self.error(extra.start, format!("RETIRED takes a name and a code, found {} arguments", args.len()), help);
        }
        if let (Some((name, name_pos)), Some((code, code_pos))) = (name, code) {
            self.schema.retired.push(Retired { name: name.to_owned(), code });
            self.places.retired_name.push(name_pos);
            self.places.retired_code.push(code_pos);
        }
    }

    /// A name: any word. Whether it is a valid identifier is the check's to say.
    fn name(&mut self, arg: &Token<'a>, what: &str, help: &str) -> Option<(&'a str, Pos)> {
        if arg.kind == TokenKind::Word {
            return Some((arg.text, arg.start));
        }
        self.error(arg.start, format!("expected {what}, found {}", arg.describe()), help);
        None
    }

    fn code(&mut self, arg: &Token<'a>, what: &str) -> Option<(u16, Pos)> {
        let code = self.number(arg, what, "event codes are 16-bit, in 0x0001..=0xFEFF")?;
        Some((code, arg.start))
    }

    /// A 16-bit number, decimal or `0x` hexadecimal. `limit_help` says what fits.
    fn number(&mut self, arg: &Token<'a>, what: &str, limit_help: &str) -> Option<u16> {
        let text = arg.text;
        let (digits, radix) = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            Some(hex) => (hex, 16),
            None => (text, 10),
        };
        let well_formed =
            arg.kind == TokenKind::Number && !digits.is_empty() && digits.chars().all(|c| c.is_digit(radix));
        if !well_formed {
            let message = if arg.kind == TokenKind::Number {
                format!("`{}` is not a number", shown(text))
            } else {
                format!("expected {what} (a number), found {}", arg.describe())
            };
            self.error(arg.start, message, "write a decimal number such as 17 or a hexadecimal one such as 0x0011");
            return None;
        }
        match u16::from_str_radix(digits, radix) {
            Ok(n) => Some(n),
            Err(_) => {
                self.error(arg.start, format!("{what} {} is too large for 16 bits", shown(text)), limit_help);
                None
            }
        }
    }

    fn always(&mut self, arg: &Token<'a>) -> Option<bool> {
        match arg.text {
            "TRUE" if arg.kind == TokenKind::Word => return Some(true),
            "FALSE" if arg.kind == TokenKind::Word => return Some(false),
            _ => {}
        }
        let message = format!("the always flag must be TRUE or FALSE, found {}", arg.describe());
        let help = if arg.text.eq_ignore_ascii_case("true") || arg.text.eq_ignore_ascii_case("false") {
            format!("write {} (upper case)", arg.text.to_ascii_uppercase())
        } else {
            "write TRUE or FALSE: TRUE keeps the event in the `hot` variety".to_owned()
        };
        self.error(arg.start, message, help);
        None
    }

    /// The kind argument of a row: its name, looked up once every kind is known.
    fn kind_name(&mut self, arg: &Token<'a>) -> Option<&'a str> {
        if arg.kind == TokenKind::Word {
            return Some(arg.text);
        }
        self.error(
            arg.start,
            format!("expected the event's kind (a kind's name), found {}", arg.describe()),
            "write the name of a kind declared with KIND, such as `Arena`",
        );
        None
    }

    /// A format: letters written together, or `0`. Every bad letter is reported at its column.
    fn format(&mut self, arg: &Token<'a>) -> Option<Vec<Letter>> {
        match arg.kind {
            TokenKind::Number if arg.text == "0" => return Some(Vec::new()),
            TokenKind::Word => {}
            _ => {
                self.error(arg.start, format!("expected a format, found {}", arg.describe()), FORMAT_HELP);
                return None;
            }
        }
        let mut letters = Vec::new();
        let mut good = true;
        for (i, c) in arg.text.chars().enumerate() {
            if let Some(letter) = Letter::from_char(c) {
                letters.push(letter);
                continue;
            }
            good = false;
            let pos = arg.start.right(i);
            if let Some(letter) = Letter::from_char(c.to_ascii_uppercase()) {
                self.error(
                    pos,
                    format!("format letter `{c}` is lower case"),
                    format!("write `{}`: the letters are {}, upper case", letter.as_char(), Letter::SPELLED),
                );
            } else {
                let shown_c = if c.is_ascii_graphic() { format!("`{c}`") } else { format!("U+{:04X}", u32::from(c)) };
                let case = if c.is_lowercase() { ", upper case" } else { "" };
                self.error(
                    pos,
                    format!("bad format letter {shown_c} in `{}`", shown(arg.text)),
                    format!("the letters are {}{case}; write 0 for no parameters", Letter::SPELLED),
                );
            }
        }
        good.then_some(letters)
    }

    /// Resolves the kinds of events, runs the check and gathers every error.
    fn finish(mut self) -> Result<Schema, Vec<Diag>> {
        let pending = std::mem::take(&mut self.pending);
        let mut kinds: HashMap<&str, usize> = HashMap::new();
        for (index, kind) in self.schema.kinds.iter().enumerate() {
            kinds.entry(kind.name.as_str()).or_insert(index);
        }
        let mut resolved = Vec::new();
        let mut unknown = Vec::new();
        for PendingKind { event, name } in pending {
            match kinds.get(name) {
                Some(&index) => resolved.push((event, index)),
                None => unknown.push((event, name)),
            }
        }
        drop(kinds);
        for (event, index) in resolved {
            // More than 255 kinds: the check reports too many kinds already.
            self.schema.events[event].kind = u8::try_from(index).unwrap_or(u8::MAX);
        }
        for (event, name) in unknown {
            self.unknown_kind.insert(event);
            let pos = self.places.event_kind[event];
            // Past MAX_KINDS the check reports too many kinds; suggest among the valid ones only.
            let declared = self.schema.kinds.iter().take(schema::MAX_KINDS).map(|k| k.name.as_str());
            let help = match closest(name, declared) {
                Some(similar) => format!("did you mean `{similar}`?"),
                None => format!("declare it with `KIND({}, \"...\")`", shown(name)),
            };
            self.error(pos, format!("unknown kind `{}`", shown(name)), help);
        }
        if self.places.version.is_none() {
            self.error(Pos::START, "missing VERSION line", "add `VERSION(1, 0, 0)` at the top");
        }
        self.resolve_declarations();
        self.resolve_histograms();
        if let Err(problems) = self.schema.check() {
            for Problem { place, message, help } in problems {
                if self.repeats_an_error(place) {
                    continue;
                }
                let pos = self.places.of(place);
                self.diags.push(Diag { pos, message, help });
            }
        }
        if self.diags.is_empty() {
            return Ok(self.schema);
        }
        // By position; errors at the same place keep the order they were found in.
        self.diags.sort_by_key(|d| d.pos);
        Err(self.diags)
    }

    /// Whether a problem is about a part of an event that could not be read, whose error
    /// has been given already.
    fn repeats_an_error(&self, place: Place) -> bool {
        match place {
            Place::EventKind(i) => self.unknown_kind.contains(&i),
            Place::EventFormat(i) => self.bad_format.contains(&i),
            Place::Event(i) => self.bad_count.contains(&i),
            _ => false,
        }
    }
}
