//! What a set's events mean beyond their parameters, declared in events.def and carried in the
//! stream: spans, counters and flows (since format 2.0.2), and the histograms the recorder
//! keeps and the limits on how many of an event it records (since format 2.1.0).
//!
//! ```text
//! SPAN(request, ReqBegin, ReqEnd)              # a span on one thread: nested, per thread
//! SPAN(job, JobStart, JobDone, id)             # async: begin and end paired by their `id`
//! COUNTER(queue, QueueDepth, depth, "items")   # QueueDepth samples a counter: its `depth`
//! FLOW(conn, Accept, fd, BEGIN)                # one piece of work across threads, by `fd`
//! FLOW(conn, Dispatch, fd, STEP)
//! FLOW(conn, Handle, fd, END)
//! HISTOGRAM(request_ns, request, HDR3)        # the recorder keeps request's durations
//! HISTOGRAM(depths, QueueDepth, depth, LOG2)  # ... and QueueDepth's `depth`
//! RELATION(Retry, 7, TRUE, Net, W, n, limit=100/s)   # at most 100 a second on each thread
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

/// How a declared histogram's values fall into buckets (events.def's `LOG2` and `HDR1` ..
/// `HDR7`): `precision` bits of each value below its highest set bit are kept, so that a
/// bucket's width is at most 1/2^`precision` of its lower bound (HdrHistogram's log-linear
/// buckets, in binary). `LOG2` (precision 0) has one bucket per power of two, as bpftrace's
/// `hist` and `event-dump latency`: bucket 0 holds 0, bucket `k + 1` holds `[2^k, 2^(k+1))`.
///
/// The bucket of a value and the bounds of a bucket are docs/FORMAT.md's ("Histograms");
/// event-format's `histogram` module computes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Buckets {
    /// Sub-bucket bits: 0 for `LOG2`, `n` for `HDRn`, at most [`Buckets::MAX_PRECISION`].
    pub precision: u8,
}

impl Buckets {
    /// The most sub-bucket bits (`HDR7`: buckets at most 1/128 of their lower bound wide).
    pub const MAX_PRECISION: u8 = 7;
    /// One bucket per power of two.
    pub const LOG2: Buckets = Buckets { precision: 0 };

    /// The buckets events.def spells `word` (`LOG2`, `HDR1` .. `HDR7`).
    pub fn from_word(word: &str) -> Option<Buckets> {
        if word == "LOG2" {
            return Some(Buckets::LOG2);
        }
        let n: u8 = word.strip_prefix("HDR")?.parse().ok()?;
        (1..=Buckets::MAX_PRECISION).contains(&n).then_some(Buckets { precision: n })
    }

    /// The buckets as events.def spells them.
    pub fn word(self) -> String {
        if self.precision == 0 { "LOG2".to_owned() } else { format!("HDR{}", self.precision) }
    }
}

/// What a declared histogram counts.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum HistogramOf {
    /// The durations of a span of the set, named (a `SPAN` line), in nanoseconds.
    Span(String),
    /// The values of an event's numeric parameter (`W` or `U`).
    Param {
        /// The event's code.
        event: u16,
        /// The parameter's name.
        param: String,
    },
}

/// A histogram that the recorder keeps (events.def's `HISTOGRAM`): the distribution of a
/// span's durations or of an event's parameter, per thread, written as records every period
/// and when a segment or the recording ends, however many of the events themselves are kept
/// (docs/FORMAT.md, "Histograms").
///
/// ```text
/// HISTOGRAM(request_ns, request, HDR3)          # span `request`'s durations
/// HISTOGRAM(alloc_size, ObjectAlloc, size, LOG2) # ObjectAlloc's `size`
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Histogram {
    /// The histogram's name, an identifier.
    pub name: String,
    /// What it counts.
    pub of: HistogramOf,
    /// How values fall into its buckets.
    pub buckets: Buckets,
}

/// Whether a parameter of `letter` can be a histogram's value: an unsigned integer.
pub fn is_histogram_letter(letter: Letter) -> bool {
    matches!(letter, Letter::Word | Letter::Unsigned)
}

/// How many of an event's occurrences a limit keeps, on each thread (events.def's `limit=`,
/// `EVENT_LIMIT`): what it does not keep is counted in `Suppressed` records, never dropped
/// silently (docs/FORMAT.md, "Limits").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rate {
    /// `N/PERIOD` (`1000/s`, `5/10ms`): a token bucket that holds up to `count` tokens,
    /// gains `count` every `period_ns` nanoseconds and starts with one; each event kept
    /// takes one (Guava's `SmoothBursty`: the first passes, a steady flood keeps `count`
    /// a period, an idle thread may burst `count`).
    PerPeriod {
        /// Events a period, at least 1.
        count: u64,
        /// The period in nanoseconds, at least 1.
        period_ns: u64,
    },
    /// `K/N` (`1/100`): the first `keep` events of every `of` (counted per thread).
    Sample {
        /// Events kept of each `of`, at least 1.
        keep: u64,
        /// The cycle's length, at least `keep`.
        of: u64,
    },
}

impl Rate {
    /// What [`Rate::parse`] accepts, for a message's help.
    pub const ACCEPTED: &'static str = "write N/UNIT for at most N a period on each thread (1000/s; ns, us, ms, s, min or h; 5/10ms), or K/N for the first K of every N (1/100)";

    /// The units of a period, with their nanoseconds.
    const UNITS: [(&'static str, u64); 6] = [
        ("ns", 1),
        ("us", 1_000),
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
        ("min", 60_000_000_000),
        ("h", 3_600_000_000_000),
    ];

    /// Reads a rate: `N/UNIT` or `N/MUNIT` (a token bucket: `1000/s`, `5/10ms`; units `ns`,
    /// `us`, `ms`, `s`, `min`, `h`), or `K/N` (`1/100`: the first K of every N). The error says
    /// what is wrong ([`Rate::ACCEPTED`] says what is accepted).
    ///
    /// ```
    /// use event_def::meaning::Rate;
    /// assert_eq!(Rate::parse("1000/s"), Ok(Rate::PerPeriod { count: 1000, period_ns: 1_000_000_000 }));
    /// assert_eq!(Rate::parse("5/10ms"), Ok(Rate::PerPeriod { count: 5, period_ns: 10_000_000 }));
    /// assert_eq!(Rate::parse("1/100"), Ok(Rate::Sample { keep: 1, of: 100 }));
    /// assert_eq!(Rate::parse("1/100").unwrap().to_string(), "1/100");
    /// assert!(Rate::parse("100/parsec").unwrap_err().contains("unknown unit"));
    /// ```
    pub fn parse(text: &str) -> Result<Rate, String> {
        let text = text.trim();
        let Some((count, per)) = text.split_once('/') else {
            return Err(format!("`{text}` is not a rate"));
        };
        let count = count.trim();
        let per = per.trim();
        let n: u64 = match count.parse() {
            Ok(n) if n > 0 => n,
            Ok(_) => return Err(format!("`{text}` keeps nothing; a limit keeps at least 1")),
            Err(_) => return Err(format!("`{count}` in `{text}` is not a count")),
        };
        let digits = per.bytes().take_while(u8::is_ascii_digit).count();
        let (amount, unit) = per.split_at(digits);
        if unit.is_empty() {
            let of: u64 = amount.parse().map_err(|_| format!("`{per}` in `{text}` is not a count"))?;
            if of < n {
                return Err(format!("`{text}` keeps {n} of every {of}, more than there are"));
            }
            return Ok(Rate::Sample { keep: n, of });
        }
        let Some(&(_, unit_ns)) = Rate::UNITS.iter().find(|(u, _)| *u == unit) else {
            return Err(format!("unknown unit `{unit}` in `{text}`"));
        };
        let amount: u64 = if amount.is_empty() {
            1
        } else {
            amount.parse().map_err(|_| format!("`{amount}` in `{text}` is too large"))?
        };
        match amount.checked_mul(unit_ns) {
            Some(0) => Err(format!("`{text}` has a period of 0")),
            Some(period_ns) => Ok(Rate::PerPeriod { count: n, period_ns }),
            None => Err(format!("the period of `{text}` is too long")),
        }
    }
}

impl std::fmt::Display for Rate {
    /// The rate as [`Rate::parse`] reads it: `1000/s`, `5/10ms`, `1/100`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Rate::Sample { keep, of } => write!(f, "{keep}/{of}"),
            Rate::PerPeriod { count, period_ns } => {
                let (unit, ns) = Rate::UNITS
                    .iter()
                    .rev()
                    .find(|(_, ns)| period_ns.is_multiple_of(*ns))
                    .map_or(("ns", 1), |&(u, ns)| (u, ns));
                match period_ns / ns {
                    1 => write!(f, "{count}/{unit}"),
                    m => write!(f, "{count}/{m}{unit}"),
                }
            }
        }
    }
}

/// A limit on how many of an event's occurrences are recorded, on each thread (events.def's
/// `limit=` on its `RELATION` row).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Limit {
    /// The event's code.
    pub event: u16,
    /// How many it keeps.
    pub rate: Rate,
}
