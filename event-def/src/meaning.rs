//! What a set's events mean beyond their parameters, declared in events.def and carried in the
//! stream (since format 2.0.2): spans, counters and flows.
//!
//! ```text
//! SPAN(request, ReqBegin, ReqEnd)              # a span on one thread: nested, per thread
//! SPAN(job, JobStart, JobDone, id)             # async: begin and end paired by their `id`
//! COUNTER(queue, QueueDepth, depth, "items")   # QueueDepth samples a counter: its `depth`
//! FLOW(conn, Accept, fd, BEGIN)                # one piece of work across threads, by `fd`
//! FLOW(conn, Dispatch, fd, STEP)
//! FLOW(conn, Handle, fd, END)
//! ```
//!
//! Declarations name events by name in events.def and by code in a [`Schema`]; parameters by
//! name. Their rules are [`Schema::check`]'s, like every other rule of a set: a hand-written
//! file and a stream's embedded declarations are held to the same ones.

use crate::letter::Letter;
use crate::schema::{EventType, Place, Problem, Rules, Schema, identifier_problem_by};
use std::collections::{HashMap, HashSet};

/// The longest counter unit, in bytes.
pub const MAX_UNIT_LEN: usize = 255;

/// A span: an interval that one event begins and another ends (events.def's `SPAN`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Span {
    /// The span's name, an identifier: what viewers and `latency` call it.
    pub name: String,
    /// The code of the event that begins it.
    pub begin: u16,
    /// The code of the event that ends it.
    pub end: u16,
    /// For an async span, the parameter (of both events) whose value pairs a begin with its
    /// end, whichever threads record them; `None` for a span on one thread, which ends the
    /// innermost open span of its name on the thread that ends it.
    pub id: Option<String>,
}

/// A counter: an event whose parameter samples a value over time (events.def's `COUNTER`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Counter {
    /// The counter's name, an identifier.
    pub name: String,
    /// The code of the event that samples it.
    pub event: u16,
    /// The parameter that holds the value (a number: `W`, `U`, `I` or `D`).
    pub value: String,
    /// The value's unit, free text (`bytes`, `items`; may be empty).
    pub unit: String,
}

/// What an event does to a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FlowStep {
    /// The flow starts here (`BEGIN`).
    Begin,
    /// The flow passes through here (`STEP`).
    Step,
    /// The flow ends here (`END`).
    End,
}

impl FlowStep {
    /// Every step, as events.def spells it.
    pub const ALL: [(&'static str, FlowStep); 3] =
        [("BEGIN", FlowStep::Begin), ("STEP", FlowStep::Step), ("END", FlowStep::End)];

    /// The step as events.def spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowStep::Begin => "BEGIN",
            FlowStep::Step => "STEP",
            FlowStep::End => "END",
        }
    }

    /// Its number in the stream (docs/FORMAT.md, "Header properties").
    pub fn to_byte(self) -> u8 {
        match self {
            FlowStep::Begin => 0,
            FlowStep::Step => 1,
            FlowStep::End => 2,
        }
    }

    /// The step of a number in the stream.
    pub fn from_byte(b: u8) -> Option<FlowStep> {
        match b {
            0 => Some(FlowStep::Begin),
            1 => Some(FlowStep::Step),
            2 => Some(FlowStep::End),
            _ => None,
        }
    }
}

/// A flow: events on any threads that carry one piece of work, linked by the value of an id
/// parameter (events.def's `FLOW`, one line per event of the flow).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Flow {
    /// The flow's name, an identifier; the lines of one flow share it.
    pub name: String,
    /// The code of the event.
    pub event: u16,
    /// The parameter whose value identifies the piece of work (an integer: `P`, `A`, `W`,
    /// `U` or `I`).
    pub id: String,
    /// What the event does to the flow.
    pub step: FlowStep,
}

/// Whether a parameter of `letter` can pair an async span's begin and end.
pub fn is_span_id_letter(letter: Letter) -> bool {
    !matches!(letter, Letter::Double | Letter::Bool)
}

/// Whether a parameter of `letter` can be a counter's value.
pub fn is_counter_letter(letter: Letter) -> bool {
    matches!(letter, Letter::Word | Letter::Unsigned | Letter::Signed | Letter::Double)
}

/// Whether a parameter of `letter` can identify a flow.
pub fn is_flow_id_letter(letter: Letter) -> bool {
    matches!(letter, Letter::Pointer | Letter::Address | Letter::Word | Letter::Unsigned | Letter::Signed)
}

impl Schema {
    /// Whether the set declares any span, counter or flow.
    pub fn declares_meanings(&self) -> bool {
        !(self.spans.is_empty() && self.counters.is_empty() && self.flows.is_empty())
    }

    /// The rules of the declarations (docs/FORMAT.md, "Meanings"; the module docs).
    pub(crate) fn check_meanings(&self, problems: &mut Vec<Problem>, rules: Rules) {
        let events: HashMap<u16, &EventType> = self.events.iter().map(|e| (e.code, e)).collect();
        let event = |code: u16| events.get(&code).copied();
        let name_rule = |problems: &mut Vec<Problem>, seen: &mut HashSet<String>, what, name: &str, place| {
            if let Some(why) = identifier_problem_by(name, rules) {
                problems.push(Problem {
                    place,
                    message: format!("bad {what} name: {why}"),
                    help: format!("name {what}s with identifiers such as `request`"),
                });
            }
            if !seen.insert(name.to_owned()) {
                problems.push(Problem {
                    place,
                    message: format!("{what} `{name}` is declared twice"),
                    help: format!("give each {what} its own name"),
                });
            }
        };
        let missing_event = |problems: &mut Vec<Problem>, code: u16, place, role: &str| {
            problems.push(Problem {
                place,
                message: format!("{role} is event code 0x{code:04X}, which no RELATION of the set declares"),
                help: "name an event of this events.def (retired events cannot be used)".to_owned(),
            });
        };
        // `role` says what the parameter is for, and which letters it takes:
        // "an async span's id is one of P A W U I S".
        let param =
            |problems: &mut Vec<Problem>, e: &EventType, name: &str, place, ok: fn(Letter) -> bool, role| match e
                .params
                .iter()
                .position(|p| p == name)
            {
                None => problems.push(Problem {
                    place,
                    message: format!("event `{}` has no parameter `{name}`", e.name),
                    help: format!("its parameters are {}", listing(&e.params)),
                }),
                Some(j) if !e.format.get(j).copied().is_some_and(ok) => problems.push(Problem {
                    place,
                    message: format!(
                        "parameter `{name}` of `{}` is a {} ({}), and {role}",
                        e.name,
                        e.format.get(j).map_or("?", |l| l.describe()),
                        e.format.get(j).map_or('?', |l| l.as_char())
                    ),
                    help: format!("choose another parameter of `{}`", e.name),
                }),
                Some(_) => {}
            };
        let named =
            |code: u16| events.get(&code).map_or_else(|| format!("event 0x{code:04X}"), |e| format!("`{}`", e.name));

        let mut names = HashSet::new();
        let (mut begins, mut ends): (HashMap<u16, usize>, HashMap<u16, usize>) = (HashMap::new(), HashMap::new());
        for (i, span) in self.spans.iter().enumerate() {
            name_rule(problems, &mut names, "span", &span.name, Place::SpanName(i));
            let begin = event(span.begin);
            let end = event(span.end);
            if begin.is_none() {
                missing_event(problems, span.begin, Place::SpanBegin(i), &format!("span `{}`'s begin", span.name));
            }
            if end.is_none() {
                missing_event(problems, span.end, Place::SpanEnd(i), &format!("span `{}`'s end", span.name));
            }
            if span.begin == span.end {
                problems.push(Problem {
                    place: Place::SpanEnd(i),
                    message: format!("span `{}` begins and ends with the same event", span.name),
                    help: "a span needs two events: one that begins it and one that ends it".to_owned(),
                });
            }
            if let Some(&first) = begins.get(&span.begin) {
                problems.push(Problem {
                    place: Place::SpanBegin(i),
                    message: format!(
                        "{} already begins span `{}`; an event begins at most one span",
                        named(span.begin),
                        self.spans[first].name
                    ),
                    help: "declare another event as this span's begin".to_owned(),
                });
            } else {
                begins.insert(span.begin, i);
            }
            if let Some(&first) = ends.get(&span.end) {
                problems.push(Problem {
                    place: Place::SpanEnd(i),
                    message: format!(
                        "{} already ends span `{}`; an event ends at most one span",
                        named(span.end),
                        self.spans[first].name
                    ),
                    help: "declare another event as this span's end".to_owned(),
                });
            } else {
                ends.insert(span.end, i);
            }
            if let Some(id) = &span.id {
                for e in [begin, end].into_iter().flatten() {
                    param(
                        problems,
                        e,
                        id,
                        Place::SpanId(i),
                        is_span_id_letter,
                        "an async span's id is one of P A W U I S",
                    );
                }
            }
        }

        let mut names = HashSet::new();
        for (i, counter) in self.counters.iter().enumerate() {
            name_rule(problems, &mut names, "counter", &counter.name, Place::CounterName(i));
            match event(counter.event) {
                None => missing_event(
                    problems,
                    counter.event,
                    Place::CounterEvent(i),
                    &format!("counter `{}`'s event", counter.name),
                ),
                Some(e) => param(
                    problems,
                    e,
                    &counter.value,
                    Place::CounterValue(i),
                    is_counter_letter,
                    "a counter's value is a number: W, U, I or D",
                ),
            }
            if counter.unit.len() > MAX_UNIT_LEN {
                problems.push(Problem {
                    place: Place::CounterUnit(i),
                    message: format!(
                        "counter unit is {} bytes long, more than the {MAX_UNIT_LEN} allowed",
                        counter.unit.len()
                    ),
                    help: "shorten the unit, such as \"bytes\"".to_owned(),
                });
            }
        }

        // A flow's lines share its name; an event takes part in a flow once.
        let mut parts: HashMap<(&str, u16), usize> = HashMap::new();
        for (i, flow) in self.flows.iter().enumerate() {
            if let Some(why) = identifier_problem_by(&flow.name, rules) {
                problems.push(Problem {
                    place: Place::FlowName(i),
                    message: format!("bad flow name: {why}"),
                    help: "name flows with identifiers such as `request`".to_owned(),
                });
            }
            if parts.insert((flow.name.as_str(), flow.event), i).is_some() {
                problems.push(Problem {
                    place: Place::FlowEvent(i),
                    message: format!("{} takes part in flow `{}` twice", named(flow.event), flow.name),
                    help: "keep one FLOW line per event and flow".to_owned(),
                });
            }
            match event(flow.event) {
                None => {
                    missing_event(problems, flow.event, Place::FlowEvent(i), &format!("flow `{}`'s event", flow.name))
                }
                Some(e) => param(
                    problems,
                    e,
                    &flow.id,
                    Place::FlowId(i),
                    is_flow_id_letter,
                    "a flow's id is an integer: P, A, W, U or I",
                ),
            }
        }
    }
}

/// `a`, `b` and `c`, or "none" for no names.
fn listing(names: &[String]) -> String {
    if names.is_empty() {
        return "none".to_owned();
    }
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}
