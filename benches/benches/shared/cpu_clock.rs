//! A CPU clock read, one copy for the examples that time a thread's or a process's own CPU
//! (`examples/emit_probe.rs`, `examples/service.rs`).

/// A CPU clock's time (`libc::CLOCK_THREAD_CPUTIME_ID`, `libc::CLOCK_PROCESS_CPUTIME_ID`), in
/// nanoseconds; 0 when the clock cannot be read.
pub(crate) fn cpu_clock(clock: libc::clockid_t) -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec for the call to write; any clock id is safe to ask for.
    let ok = unsafe { libc::clock_gettime(clock, &mut t) } == 0;
    if ok { t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64 } else { 0 }
}
