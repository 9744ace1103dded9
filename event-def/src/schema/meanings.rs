//! The rules of a set's spans, counters and flows ([`crate::meaning`]): part of
//! [`Schema::check`], apart from the data they check so that `meaning` imports nothing of
//! the schema.

use super::{EventType, Place, Problem, Rules, Schema, identifier_problem_by};
use crate::letter::Letter;
use crate::meaning::{
    Buckets, HistogramOf, MAX_UNIT_LEN, Rate, is_counter_letter, is_flow_id_letter, is_histogram_letter,
    is_span_id_letter,
};
use std::collections::{HashMap, HashSet};

impl Schema {
    /// The histogram named `name`, with its index among the set's.
    pub fn histogram(&self, name: &str) -> Option<(usize, &crate::meaning::Histogram)> {
        self.histograms.iter().enumerate().find(|(_, h)| h.name == name)
    }

    /// The limit that events.def gives the event of code `code`, if any.
    pub fn limit_of(&self, code: u16) -> Option<Rate> {
        self.limits.iter().find(|l| l.event == code).map(|l| l.rate)
    }

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

        let mut names = HashSet::new();
        for (i, histogram) in self.histograms.iter().enumerate() {
            name_rule(problems, &mut names, "histogram", &histogram.name, Place::HistogramName(i));
            match &histogram.of {
                HistogramOf::Span(span) => {
                    if !self.spans.iter().any(|s| &s.name == span) {
                        let spans: Vec<String> = self.spans.iter().map(|s| s.name.clone()).collect();
                        problems.push(Problem {
                            place: Place::HistogramOf(i),
                            message: format!("histogram `{}` counts span `{span}`, which no SPAN line declares", histogram.name),
                            help: format!(
                                "name a span of this events.def (its spans are {}), or an event and its parameter: HISTOGRAM(name, Event, param, LOG2)",
                                listing(&spans)
                            ),
                        });
                    }
                }
                HistogramOf::Param { event: code, param: name } => match event(*code) {
                    None => missing_event(
                        problems,
                        *code,
                        Place::HistogramOf(i),
                        &format!("histogram `{}`'s event", histogram.name),
                    ),
                    Some(e) => param(
                        problems,
                        e,
                        name,
                        Place::HistogramParam(i),
                        is_histogram_letter,
                        "a histogram's value is an unsigned integer: W or U",
                    ),
                },
            }
            if histogram.buckets.precision > Buckets::MAX_PRECISION {
                problems.push(Problem {
                    place: Place::HistogramBuckets(i),
                    message: format!(
                        "histogram `{}` has {} sub-bucket bits, more than the {} allowed",
                        histogram.name,
                        histogram.buckets.precision,
                        Buckets::MAX_PRECISION
                    ),
                    help: "write LOG2, or HDR1 to HDR7".to_owned(),
                });
            }
        }

        let mut limited: HashMap<u16, usize> = HashMap::new();
        for (i, limit) in self.limits.iter().enumerate() {
            if event(limit.event).is_none() {
                missing_event(problems, limit.event, Place::Limit(i), "a limit's event");
            }
            if limited.insert(limit.event, i).is_some() {
                problems.push(Problem {
                    place: Place::Limit(i),
                    message: format!("{} has two limits", named(limit.event)),
                    help: "keep one `limit=` per event".to_owned(),
                });
            }
            let bad = match limit.rate {
                Rate::PerPeriod { count, period_ns } => count == 0 || period_ns == 0,
                Rate::Sample { keep, of } => keep == 0 || of < keep,
            };
            if bad {
                problems.push(Problem {
                    place: Place::Limit(i),
                    message: format!(
                        "{}'s limit `{}` keeps nothing or more than there are",
                        named(limit.event),
                        limit.rate
                    ),
                    help: "write N/UNIT (1000/s) or K/N (1/100), with N and K at least 1 and K at most N".to_owned(),
                });
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
