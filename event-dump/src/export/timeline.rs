//! The logs of a viewer's export (Chrome, Perfetto) on one time line: each log is a process,
//! with its own pid, and its events' times count in nanoseconds, exact as `print`'s seconds
//! are, from the start of the log that started first (several logs are aligned on their
//! wall clocks; one log's times are its own, from its start).

use crate::log::Log;
use event_format::wire::Timebase;
use std::collections::BTreeSet;

/// Where each log's events go on the trace: its process id and its times.
pub(crate) struct Timeline {
    /// Each log's pid: its header's, unless an earlier log took it (two logs of one process,
    /// or of two machines): then the next number no log has.
    pub(crate) pids: Vec<u64>,
    /// Each log's timebase.
    times: Vec<Timebase>,
    /// Each log's start on the time line, in nanoseconds from the earliest start.
    offsets: Vec<i128>,
}

impl Timeline {
    pub(crate) fn new(logs: &[Log]) -> Timeline {
        let clocks: Vec<_> = logs.iter().map(|l| l.header().clock).collect();
        let starts: Vec<i128> = clocks.iter().map(|c| c.wall_ns(c.start_ticks)).collect();
        let earliest = starts.iter().copied().min().unwrap_or(0);
        let offsets = if logs.len() > 1 { starts.iter().map(|s| s - earliest).collect() } else { vec![0; logs.len()] };
        Timeline { pids: assign_pids(logs), times: clocks.iter().map(Timebase::new).collect(), offsets }
    }

    /// The time of `ticks` of log `file` on the time line, in nanoseconds.
    #[inline]
    pub(crate) fn ns(&self, file: usize, ticks: u64) -> i128 {
        self.times[file].nanos(ticks) + self.offsets[file]
    }
}

/// The pid each log's events get; see [`Timeline::pids`].
fn assign_pids(logs: &[Log]) -> Vec<u64> {
    let real: BTreeSet<u64> = logs.iter().map(|l| l.header().producer.pid).collect();
    let mut taken = BTreeSet::new();
    let mut pids = Vec::with_capacity(logs.len());
    for log in logs {
        let mut pid = log.header().producer.pid;
        if taken.contains(&pid) {
            while real.contains(&pid) || taken.contains(&pid) {
                pid = pid.wrapping_add(1);
            }
        }
        taken.insert(pid);
        pids.push(pid);
    }
    pids
}
