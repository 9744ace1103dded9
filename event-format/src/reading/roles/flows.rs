//! The one rule that links the events of a flow (docs/FORMAT.md, "Meanings"): the events of
//! one flow name with equal id values are one piece of work, in time order. A `BEGIN` event
//! starts a piece (a new one, even while another of its id is open: that one is left
//! without an end); a `STEP` continues the open one, or starts one when none is; an `END`
//! ends the open one, and one with none open links nothing. Each piece gets a serial number,
//! unique within the [`Flows`], which viewers use as the flow's id.
//!
//! Memory is the pieces open at once, at most [`MAX_OPEN`](super::MAX_OPEN): beyond, the
//! oldest is forgotten (its later steps start a new piece).

use super::{IdValue, MAX_OPEN};
use event_def::schema::FlowStep;
use std::collections::{BTreeMap, HashMap};

/// How one event takes part in a piece of work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowLink {
    /// The piece's serial number, from 1.
    pub serial: u64,
    /// The piece comes into this event from an earlier one (a step or an end).
    pub incoming: bool,
    /// The piece goes on from this event to a later one (a begin or a step).
    pub outgoing: bool,
}

/// The pieces of work open, by flow and id; see the module docs.
#[derive(Debug)]
pub struct Flows {
    open: HashMap<(u32, IdValue), u64>,
    /// The open pieces by serial: the oldest is the first.
    order: BTreeMap<u64, (u32, IdValue)>,
    serial: u64,
    forgotten: u64,
    /// The most pieces open at once.
    max_open: usize,
}

impl Default for Flows {
    fn default() -> Flows {
        Flows::with_limit(MAX_OPEN)
    }
}

impl Flows {
    /// No piece open.
    pub fn new() -> Flows {
        Flows::default()
    }

    /// No piece open, and at most `max_open` (at least 1) open at once instead of
    /// [`MAX_OPEN`](super::MAX_OPEN).
    pub fn with_limit(max_open: usize) -> Flows {
        Flows { open: HashMap::new(), order: BTreeMap::new(), serial: 0, forgotten: 0, max_open: max_open.max(1) }
    }

    /// An event takes `step` in flow `flow` (its place in [`Roles::flows`](super::Roles::flows))
    /// for the piece `id`: how it is linked, or `None` for an end with no piece open.
    pub fn step(&mut self, flow: u32, id: IdValue, step: FlowStep) -> Option<FlowLink> {
        let key = (flow, id);
        match (step, self.open.get(&key).copied()) {
            (FlowStep::End, None) => None,
            (FlowStep::End, Some(serial)) => {
                self.open.remove(&key);
                self.order.remove(&serial);
                Some(FlowLink { serial, incoming: true, outgoing: false })
            }
            (FlowStep::Step, Some(serial)) => Some(FlowLink { serial, incoming: true, outgoing: true }),
            (FlowStep::Begin, _) | (FlowStep::Step, None) => {
                if let Some(old) = self.open.remove(&key) {
                    self.order.remove(&old);
                }
                if self.order.len() >= self.max_open
                    && let Some((_, oldest)) = self.order.pop_first()
                {
                    self.open.remove(&oldest);
                    self.forgotten += 1;
                }
                self.serial += 1;
                self.open.insert(key.clone(), self.serial);
                self.order.insert(self.serial, key);
                Some(FlowLink { serial: self.serial, incoming: false, outgoing: true })
            }
        }
    }

    /// The pieces forgotten to keep within [`MAX_OPEN`](super::MAX_OPEN).
    pub fn forgotten(&self) -> u64 {
        self.forgotten
    }
}
