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
//! Declarations name events by name in events.def and by code in a [`Schema`](crate::schema::Schema); parameters by
//! name. Their rules are [`Schema::check`](crate::schema::Schema::check)'s (checked in
//! `schema::meanings`), like every other rule of a set: a hand-written
//! file and a stream's embedded declarations are held to the same ones.

use crate::letter::Letter;

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
