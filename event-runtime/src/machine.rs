//! How much memory the machine can give the recorder's buffers (DTrace's `bufresize`).
//!
//! Linux overcommits: a buffer far larger than memory is allocated without an error, and the
//! kernel's OOM killer ends the host program once the pages are touched. So the recorder
//! cannot, as DTrace does, halve a buffer until its allocation succeeds; it asks before it
//! allocates. It reads the physical memory (`MemTotal`), the memory available now
//! (`MemAvailable`, /proc/meminfo) and the cgroup limit of the process (cgroup v2
//! `memory.max` less `memory.current`, on the process's cgroup and its ancestors; cgroup v1
//! `memory.limit_in_bytes` less `memory.usage_in_bytes`), and lets the buffers have at most
//! [`SHARE`] of the smallest. Elsewhere it knows no limit and changes nothing.

use std::path::{Path, PathBuf};

/// The part of the smallest limit the buffers may take: a quarter. The recorder is a guest:
/// the memory is for the host program, whose working set grows as it runs (and is measured
/// here at one instant), and its buffers are also touched only as they fill. A quarter
/// leaves the host three quarters of what is available even when every buffer is full.
pub(crate) const SHARE: u64 = 4;

/// A limit on memory: its size in bytes and what it is, for the message.
pub(crate) type Limit = (u64, &'static str);

/// The machine's limits, smallest first matters not; an empty list where none is known.
pub(crate) fn limits() -> Vec<Limit> {
    let mut out = Vec::new();
    if let Ok(text) = std::fs::read_to_string("/proc/meminfo") {
        let field = |name: &str| {
            text.lines().find_map(|l| {
                l.strip_prefix(name)?.strip_prefix(':')?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()
            })
        };
        if let Some(kb) = field("MemTotal") {
            out.push((kb.saturating_mul(1024), "physical memory"));
        }
        if let Some(kb) = field("MemAvailable") {
            out.push((kb.saturating_mul(1024), "available memory"));
        }
    }
    if let Some(left) = cgroup_left() {
        out.push((left, "the cgroup's memory limit"));
    }
    out
}

/// What the process's cgroup (or the tightest of its ancestors) lets it allocate still.
fn cgroup_left() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut best: Option<u64> = None;
    let mut consider = |left: u64| best = Some(best.map_or(left, |b| b.min(left)));
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else { continue };
        let path = path.trim_start_matches('/');
        if id == "0" && controllers.is_empty() {
            // cgroup v2: the limit may be set on any ancestor.
            let mut dir = PathBuf::from("/sys/fs/cgroup").join(path);
            loop {
                if let Some(left) = headroom(&dir, "memory.max", "memory.current") {
                    consider(left);
                }
                if dir == Path::new("/sys/fs/cgroup") || !dir.pop() {
                    break;
                }
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            let dir = PathBuf::from("/sys/fs/cgroup/memory").join(path);
            for d in [dir.as_path(), Path::new("/sys/fs/cgroup/memory")] {
                if let Some(left) = headroom(d, "memory.limit_in_bytes", "memory.usage_in_bytes") {
                    consider(left);
                }
            }
        }
    }
    best
}

/// `limit` less `usage` in `dir`; `None` without a limit (`max`, or v1's huge "unlimited").
fn headroom(dir: &Path, limit: &str, usage: &str) -> Option<u64> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok()?.trim().parse::<u64>().ok();
    let limit = read(limit).filter(|&l| l < 1 << 60)?;
    Some(limit.saturating_sub(read(usage).unwrap_or(0)))
}

/// The buffer size to use instead of `requested` when `regions` buffers of that size (the
/// pool, the rings, the ring file) do not fit in [`SHARE`] of the smallest of `limits`: the
/// largest power of two that does, but not below `floor`. `None` when `requested` fits.
/// With the new size, the limit that decided it.
pub(crate) fn fit(requested: u64, regions: u64, floor: u64, limits: &[Limit]) -> Option<(u64, &'static str)> {
    let (smallest, what) = limits.iter().copied().min_by_key(|(bytes, _)| *bytes)?;
    let allowed = smallest / SHARE / regions.max(1);
    if requested <= allowed {
        return None;
    }
    let lowered = if allowed == 0 { floor } else { (1u64 << allowed.ilog2()).max(floor) };
    (lowered < requested).then_some((lowered, what))
}

/// A size as `EVENT_BUFSIZE` writes it: `2g`, `512m`, `64k`, or bytes.
pub(crate) fn size_text(bytes: u64) -> String {
    for (shift, unit) in [(30, "g"), (20, "m"), (10, "k")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_is_lowered_to_a_power_of_two_in_a_quarter_of_the_smallest_limit() {
        let limits = [(64 << 30, "physical memory"), (9 << 30, "available memory")];
        assert_eq!(fit(1000 << 30, 1, 1 << 20, &limits), Some((2 << 30, "available memory")));
        assert_eq!(fit(1000 << 30, 2, 1 << 20, &limits), Some((1 << 30, "available memory")));
        assert_eq!(fit(16 << 20, 1, 1 << 20, &limits), None, "a buffer that fits stays");
        assert_eq!(
            fit(16 << 20, 1, 1 << 20, &[(1 << 20, "the cgroup's memory limit")]),
            Some((1 << 20, "the cgroup's memory limit"))
        );
        assert_eq!(fit(1000 << 30, 1, 1 << 20, &[]), None, "no limit known");
        assert_eq!(
            (size_text(2 << 30), size_text(1000 << 30), size_text(3 << 20), size_text(4097)),
            ("2g".into(), "1000g".into(), "3m".into(), "4097".into())
        );
    }

    #[test]
    fn this_machine_has_limits() {
        if cfg!(target_os = "linux") {
            assert!(limits().iter().any(|(_, what)| *what == "physical memory"));
        }
    }
}
