//! An application with its own events.def that uses two instrumented libraries, `storage`
//! and `net` (tests/sets). It starts one recording (`event_runtime::start()`, as the
//! `EVENT_*` variables say) and every set linked in is recorded: its own, `storage`'s and
//! `net`'s, on several threads. It also emits one of `storage`'s events itself, through
//! `storage::event!`.
//!
//! `sets-app THREADS ROUNDS`: each thread `t` records, per round `i`, with `n = t * 1000 + i`:
//! `app Open(n)`, `storage PageWrite(n, n / 4)`, `net Open(n, "peer-n")`,
//! `storage PageRead(n, n is even)` (from here, through `storage::event!`), `net Send(n, n)`,
//! `app Done(n, -n)`. The main thread then records `app Intern(7, "gc")`,
//! `app Label(0x1000, 7)` and `app Fix(0x2000, 0x3000, 2, "weak")`.

event_runtime::include_events!("events.def");

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).map(|a| a.parse().expect("a number")).collect();
    let (threads, rounds) = (args.first().copied().unwrap_or(4), args.get(1).copied().unwrap_or(100));
    let recording = event_runtime::start().unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    storage::open("/var/db");
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..rounds {
                    let n = t * 1000 + i;
                    event!(Open, n);
                    storage::write_page(n, n as f64 / 4.0);
                    net::connect(n, &format!("peer-{n}"));
                    storage::event!(PageRead, n, n % 2 == 0);
                    net::send(n, n as u32);
                    event!(Done, n, -(n as i64));
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a worker");
    }
    event!(Intern, 7u64, "gc");
    event!(Label, 0x1000usize, 7u64);
    event!(Fix, 0x2000usize, 0x3000usize, 2u32, "weak");
    if let Some(recording) = recording {
        recording.stop().unwrap_or_else(|e| {
            eprintln!("error: {e}");
            std::process::exit(2)
        });
    }
}
