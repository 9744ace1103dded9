//! The service benchmark: an axum service whose handler is instrumented with an
//! `info_span!("request", id, method, route)` and records five `event!`s per request, under
//! a closed-loop load of its own client (16 connections, keep-alive), in four modes,
//! interleaved, five rounds:
//!
//! | mode | what runs |
//! |---|---|
//! | `off` | the registry and the bridge (`EventLayer`) installed, no recording |
//! | `event` | `event!` only: the registry under a layer that does nothing, without the bridge (`shared/tracing_only.rs`), a recording of segments |
//! | `bridge` | the registry and the bridge, a recording of segments: the spans and the events |
//! | `fmt` | tracing-subscriber's `fmt` layer into tracing-appender's non-blocking file writer (the events as `tracing::info!`) |
//! | `bridge-2.1.0` | as `bridge`, the bridge without callsites (`EventLayer::with_callsites(false)`: format 2.1.0's records); not run unless `--modes` names it |
//!
//! For each mode it prints the median over the rounds of: throughput against `off` of the
//! same round, the 99.9th percentile of the requests' latencies (closed loop), the bytes
//! the mode wrote per request, the largest share of its events a round's recording lost
//! (a writer that falls behind under `switch` loses events, and a recording that loses
//! events costs less: a throughput is read beside it), and the CPU time a request costs: the service thread's (the
//! one tokio worker's thread CPU clock) and the whole service process's (the recorder's
//! writer thread included), each also against `off` of the same round. The CPU times are
//! read by the service itself (`GET /cpu`) just before and just after the measured load, and
//! divided by the requests it served in between; on a shared machine they vary far less
//! than a closed loop's throughput, which counts every stall of the load generator too.
//! Below the table, each mode's per-round ratios against `off`, so that the spread the
//! medians hide is seen. `--cores one` runs the service (its one tokio worker and the
//! recorder's writer thread) on CPU 0 and the load on CPU 1 (what `taskset -c 0` does);
//! `--cores two` lets the service have both CPUs, the load unpinned.
//!
//! ```text
//! cargo run --release -p event-benches --example service -- --cores one
//! cargo run --release -p event-benches --example service -- --cores two --rounds 5 --seconds 3
//! ```
//!
//! The recordings take their configuration from the environment before their own (the file
//! and 64 MiB segments), as a service's: `EVENT_PACK=zstd:1` measures the writer's packing at
//! zstd's level 1.
//!
//! The service is this program run as a child (`--serve MODE --port N`), so that each mode
//! has a process of its own (one recording, one global subscriber), started afresh each
//! round.
//!
//! Each round runs the modes in the order `off`, `bridge`, `event`, `fmt`, and the next round
//! in the reverse order, and so on: `off` and `bridge` are adjacent in every round, and a
//! drift of the machine over a round (a neighbour's build starting) weighs on both alike
//! across two rounds. The table lists the modes in the order of `--modes` (by default `off`,
//! `event`, `bridge`, `fmt`).

event_runtime::include_events!("service.def");

#[path = "../benches/shared/cpu_clock.rs"]
mod cpu_clock;
#[path = "../benches/shared/tracing_only.rs"]
mod tracing_only;

use cpu_clock::cpu_clock;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const MODES: [&str; 4] = ["off", "event", "bridge", "fmt"];

/// The order of the modes in a round (every other round reversed): `off` and `bridge`, whose
/// ratio issue 42 bounds, next to each other.
const SCHEDULE: [&str; 4] = ["off", "bridge", "event", "fmt"];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    if let Some(mode) = opt("--serve") {
        let port: u16 = opt("--port").and_then(|p| p.parse().ok()).expect("--port N");
        let cpus = opt("--cpus").unwrap_or_default();
        return serve(&mode, port, &cpus, opt("--dir").map(PathBuf::from).expect("--dir DIR"));
    }
    let rounds: usize = opt("--rounds").and_then(|r| r.parse().ok()).unwrap_or(5);
    let seconds: f64 = opt("--seconds").and_then(|r| r.parse().ok()).unwrap_or(3.0);
    let connections: usize = opt("--connections").and_then(|r| r.parse().ok()).unwrap_or(16);
    let cores = opt("--cores").unwrap_or_else(|| "one".to_owned());
    let modes: Vec<String> = match opt("--modes") {
        Some(m) => m.split(',').map(str::to_owned).collect(),
        None => MODES.iter().map(|m| (*m).to_owned()).collect(),
    };
    let (service_cpus, load_cpus) = match cores.as_str() {
        "one" => ("0", Some(1)),
        "two" => ("0,1", None),
        other => panic!("--cores one|two, not {other}"),
    };
    let scratch = std::env::temp_dir().join(format!("event-service-bench-{}", std::process::id()));
    let mut results: Vec<(String, Vec<Run>)> = modes.iter().map(|m| (m.clone(), Vec::new())).collect();
    eprintln!(
        "{rounds} rounds of {} modes, {seconds} s each, {connections} connections, service on CPUs {service_cpus}",
        modes.len()
    );
    // The modes of SCHEDULE first, in its order, then any others as given.
    let mut order: Vec<usize> = SCHEDULE.iter().filter_map(|m| modes.iter().position(|x| x == m)).collect();
    let rest: Vec<usize> = (0..modes.len()).filter(|i| !order.contains(i)).collect();
    order.extend(rest);
    for round in 0..rounds {
        let this_round: Vec<usize> = if round % 2 == 0 { order.clone() } else { order.iter().rev().copied().collect() };
        for i in this_round {
            let dir = scratch.join(format!("{}-{round}", modes[i]));
            std::fs::create_dir_all(&dir).expect("the scratch directory");
            let run = measure(&modes[i], service_cpus, load_cpus, &dir, seconds, connections);
            eprintln!(
                "round {round} {:>6}: {:>8.0} req/s  p99.9 {:>7.3} ms  {:>6.1} B/req  CPU {:>6.2} us/req thread, {:>6.2} process  lost {:.1} %",
                modes[i],
                run.throughput,
                run.p999_ms,
                run.bytes as f64 / run.requests as f64,
                run.thread_us,
                run.process_us,
                run.lost * 100.0
            );
            results[i].1.push(run);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let off: Option<&Vec<Run>> = results.iter().find(|(m, _)| m == "off").map(|(_, runs)| runs);
    // A mode's per-round ratios of `value` against `off`'s in the same round.
    let against_off = |runs: &[Run], value: fn(&Run) -> f64| -> Option<Vec<f64>> {
        off.map(|off| runs.iter().zip(off).map(|(r, o)| value(r) / value(o)).collect())
    };
    let show = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |r| format!("{r:.3}"));
    println!(
        "| mode | throughput vs off | p99.9 (closed loop) | bytes per request | events lost | req/s | CPU a request, service thread | vs off | CPU a request, process | vs off |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (mode, runs) in &results {
        let ratio = against_off(runs, |r| r.throughput).map(median);
        let p999 = median(runs.iter().map(|r| r.p999_ms).collect());
        let bytes = median(runs.iter().map(|r| r.bytes as f64 / r.requests as f64).collect());
        let rps = median(runs.iter().map(|r| r.throughput).collect());
        let spread = runs.iter().map(|r| r.p999_ms).fold((f64::MAX, 0f64), |(lo, hi), p| (lo.min(p), hi.max(p)));
        let thread = median(runs.iter().map(|r| r.thread_us).collect());
        let process = median(runs.iter().map(|r| r.process_us).collect());
        let lost = runs.iter().map(|r| r.lost).fold(0f64, f64::max);
        println!(
            "| {mode} | {} | {p999:.3} ms ({:.3} to {:.3}) | {bytes:.0} | {} | {rps:.0} | {thread:.2} us | {} | {process:.2} us | {} |",
            show(ratio),
            spread.0,
            spread.1,
            if lost > 0.0 { format!("up to {:.1} %", lost * 100.0) } else { "0".to_owned() },
            show(against_off(runs, |r| r.thread_us).map(median)),
            show(against_off(runs, |r| r.process_us).map(median)),
        );
    }
    println!();
    for (mode, runs) in results.iter().filter(|(m, _)| m != "off") {
        let rounds =
            |v: Option<Vec<f64>>| v.unwrap_or_default().iter().map(|r| format!("{r:.3}")).collect::<Vec<_>>().join(" ");
        println!(
            "{mode} against off, per round: throughput {}; CPU a request, service thread {}; process {}",
            rounds(against_off(runs, |r| r.throughput)),
            rounds(against_off(runs, |r| r.thread_us)),
            rounds(against_off(runs, |r| r.process_us)),
        );
    }
}

/// One mode's run: its throughput, tail, bytes and CPU time.
struct Run {
    throughput: f64,
    p999_ms: f64,
    requests: u64,
    bytes: u64,
    /// The service thread's CPU time a request of the measured load, in microseconds.
    thread_us: f64,
    /// The service process's CPU time a request of the measured load (all its threads).
    process_us: f64,
    /// The share of its events the recording lost (counted in its blocks; 0 without one):
    /// a writer that cannot keep up loses events under `switch`, and costs less.
    lost: f64,
}

/// The service's counters at one moment (`GET /cpu`): requests served, its thread's and its
/// process's CPU time in nanoseconds.
#[derive(Clone, Copy)]
struct Cpu {
    served: u64,
    thread_ns: u64,
    process_ns: u64,
}

impl Cpu {
    /// Asks the service at `addr`.
    fn read(addr: SocketAddr) -> Cpu {
        let mut buf = Vec::new();
        get(&mut TcpStream::connect(addr).expect("connects"), "/cpu", &mut buf).expect("a reply");
        let body = buf.windows(4).position(|w| w == b"\r\n\r\n").map_or(&buf[..], |at| &buf[at + 4..]);
        let numbers: Vec<u64> =
            std::str::from_utf8(body).unwrap_or("").split_whitespace().filter_map(|n| n.parse().ok()).collect();
        match numbers[..] {
            [served, thread_ns, process_ns] => Cpu { served, thread_ns, process_ns },
            _ => panic!("`/cpu` replied {:?}", String::from_utf8_lossy(body)),
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Starts the service in `mode`, loads it for `seconds` after a warm-up, stops it, and
/// measures.
fn measure(mode: &str, cpus: &str, load_cpu: Option<usize>, dir: &Path, seconds: f64, connections: usize) -> Run {
    let port = free_port();
    let mut child = Command::new(std::env::current_exe().expect("this program"))
        .args(["--serve", mode, "--port", &port.to_string(), "--cpus", cpus, "--dir"])
        .arg(dir)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the service starts");
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    wait_ready(addr, &mut child);
    if let Some(cpu) = load_cpu {
        pin(&cpu.to_string());
    }
    // Warm-up: the allocator, the connections, the first blocks.
    load(addr, connections, Duration::from_millis(500));
    let before = Cpu::read(addr);
    let (requests, latencies, took) = load(addr, connections, Duration::from_secs_f64(seconds));
    let after = Cpu::read(addr);
    let served_now = after.served.saturating_sub(before.served).max(1) as f64;
    let per_request = |ns: fn(&Cpu) -> u64| ns(&after).saturating_sub(ns(&before)) as f64 / served_now / 1e3;
    if load_cpu.is_some() {
        pin("0,1");
    }
    // Stops the service: it stops its recording (or flushes its appender) and exits.
    let _ = get(&mut TcpStream::connect(addr).expect("connects"), "/quit", &mut Vec::new());
    let served = {
        let mut out = String::new();
        let _ = child.stdout.take().expect("piped").read_to_string(&mut out);
        out.trim().parse::<u64>().unwrap_or(0)
    };
    let status = child.wait().expect("the service exits");
    assert!(status.success(), "the service in mode {mode} failed: {status}");
    let mut sorted = latencies;
    sorted.sort_unstable();
    let p999 = sorted[(sorted.len() * 999).div_ceil(1000).saturating_sub(1)];
    Run {
        throughput: requests as f64 / took.as_secs_f64(),
        p999_ms: p999 as f64 / 1e6,
        requests: served.max(1),
        bytes: dir_bytes(dir),
        thread_us: per_request(|c| c.thread_ns),
        process_us: per_request(|c| c.process_ns),
        lost: lost_share(dir),
    }
}

/// The share of the events recorded under `dir` that the recording lost: the losses its
/// blocks count against the events they hold and the losses (0 for the `fmt` mode's log).
fn lost_share(dir: &Path) -> f64 {
    let (mut events, mut lost) = (0u64, 0u64);
    let Ok(entries) = std::fs::read_dir(dir) else { return 0.0 };
    for entry in entries.flatten() {
        if entry.path().extension().is_none_or(|e| e != "evt") {
            continue;
        }
        let Ok(bytes) = std::fs::read(entry.path()) else { continue };
        let Ok(mut decoder) = event_format::decode::Decoder::new(&bytes[..]) else { continue };
        let catalog = event_format::decode::Catalog::new(&decoder.header().sets);
        let mut ledger = event_format::ledger::Ledger::new(decoder.header().format);
        while let Some(block) = decoder.next_block() {
            let Ok(block) = block else { continue };
            ledger.block(&block);
            for entry in block.entries(&catalog) {
                events += u64::from(matches!(entry, event_format::decode::Entry::Event(_)));
                ledger.entry(block.header.thread, block.header.sequence, &entry);
            }
        }
        lost += ledger.lost();
    }
    lost as f64 / (events + lost).max(1) as f64
}

/// A port free now on the loopback.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

fn wait_ready(addr: SocketAddr, child: &mut Child) {
    let start = Instant::now();
    while TcpStream::connect(addr).is_err() {
        assert!(child.try_wait().ok().flatten().is_none(), "the service exited at its start");
        assert!(start.elapsed() < Duration::from_secs(20), "the service did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Pins this thread (and the threads it starts) to `cpus` (`"0"`, `"0,1"`).
fn pin(cpus: &str) {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes within it for CPU numbers
    // below CPU_SETSIZE; sched_setaffinity(0, ..) sets the calling thread's mask.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for cpu in cpus.split(',').filter_map(|c| c.parse::<usize>().ok()) {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Bytes of the files under `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// `connections` closed loops, each its own thread and connection, for `time`: the requests
/// made, every latency in ns, and the time it took.
fn load(addr: SocketAddr, connections: usize, time: Duration) -> (u64, Vec<u64>, Duration) {
    let start = Instant::now();
    let deadline = start + time;
    let loops: Vec<_> = (0..connections)
        .map(|c| {
            std::thread::spawn(move || {
                let mut stream = TcpStream::connect(addr).expect("connects");
                stream.set_nodelay(true).expect("nodelay");
                let mut buf = Vec::with_capacity(4096);
                let mut latencies = Vec::with_capacity(1 << 16);
                let mut id = c as u64 * 1_000_000_000;
                while Instant::now() < deadline {
                    id += 1;
                    let t = Instant::now();
                    get(&mut stream, &format!("/orders/{id}"), &mut buf).expect("a reply");
                    latencies.push(t.elapsed().as_nanos() as u64);
                }
                latencies
            })
        })
        .collect();
    let mut all = Vec::new();
    for l in loops {
        all.extend(l.join().expect("a load thread"));
    }
    (all.len() as u64, all, start.elapsed())
}

/// One request on a keep-alive connection: reads the whole reply (headers, then the body by
/// its `content-length`).
fn get(stream: &mut TcpStream, path: &str, buf: &mut Vec<u8>) -> std::io::Result<()> {
    write!(stream, "GET {path} HTTP/1.1\r\nhost: bench\r\n\r\n")?;
    buf.clear();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = std::str::from_utf8(&buf[..end]).unwrap_or("");
            let length = head
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned()))
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + length {
                let n = stream.read(&mut chunk)?;
                if n == 0 {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            return Ok(());
        }
    }
}

/// The service, in `mode`, on `port`: one tokio worker (pinned with its recorder's writer to
/// `cpus`), until `GET /quit`; then prints the requests it served.
fn serve(mode: &str, port: u16, cpus: &str, dir: PathBuf) {
    use tracing_subscriber::layer::SubscriberExt as _;
    if !cpus.is_empty() {
        // Before anything starts a thread: the writer and the worker inherit it.
        pin(cpus);
    }
    let mut guard = None;
    let recording = match mode {
        "off" | "bridge" | "bridge-2.1.0" => {
            let layer = event_runtime::tracing_bridge::EventLayer::new().with_callsites(mode != "bridge-2.1.0");
            tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer)).expect("subscriber");
            (mode != "off").then(|| record(&dir))
        }
        "event" => {
            tracing::subscriber::set_global_default(tracing_only::registry()).expect("subscriber");
            Some(record(&dir))
        }
        "fmt" => {
            let (writer, g) = tracing_appender::non_blocking(tracing_appender::rolling::never(&dir, "service.log"));
            guard = Some(g);
            let layer = tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(false);
            tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer)).expect("subscriber");
            None
        }
        other => panic!("mode {other}"),
    };
    let fmt = mode == "fmt";
    let served = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("the runtime");
    runtime.block_on(async {
        let (quit, quitting) = tokio::sync::oneshot::channel::<()>();
        let quit = std::sync::Arc::new(std::sync::Mutex::new(Some(quit)));
        let app = axum::Router::new()
            .route(
                "/orders/{id}",
                axum::routing::get({
                    let served = served.clone();
                    move |axum::extract::Path(id): axum::extract::Path<u64>| {
                        served.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        order(id, fmt)
                    }
                }),
            )
            .route(
                "/cpu",
                axum::routing::get({
                    let served = served.clone();
                    // On the one worker thread: its CPU clock is the service thread's.
                    move || async move {
                        format!(
                            "{} {} {}",
                            served.load(std::sync::atomic::Ordering::Relaxed),
                            cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID),
                            cpu_clock(libc::CLOCK_PROCESS_CPUTIME_ID)
                        )
                    }
                }),
            )
            .route(
                "/quit",
                axum::routing::get(move || async move {
                    if let Some(q) = quit.lock().ok().and_then(|mut q| q.take()) {
                        let _ = q.send(());
                    }
                    "bye"
                }),
            );
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.expect("binds");
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = quitting.await;
            })
            .await
            .expect("serves");
    });
    if let Some(recording) = recording {
        recording.stop().expect("the recording stops");
    }
    drop(guard);
    println!("{}", served.load(std::sync::atomic::Ordering::Relaxed));
}

/// A recording of 64 MiB segments in `dir`, as a service records, configured from the
/// environment as a service is (`EVENT_PACK=zstd:1`: the writer's packing).
fn record(dir: &Path) -> event_runtime::Recording {
    event_runtime::Recorder::new()
        .from_env()
        .expect("the EVENT_* variables")
        .file(dir.join("service.evt"))
        .rotate(event_runtime::Rotate { size: Some(64 << 20), age: None })
        .start()
        .expect("the recording starts")
}

/// The handler: a request span around a future that records five steps and yields once
/// (two polls, as a handler that awaits something has).
async fn order(id: u64, fmt: bool) -> String {
    use tracing::Instrument as _;
    let span = tracing::info_span!("request", id, method = "GET", route = "/orders/{id}");
    async move {
        step(fmt, id, 0);
        step(fmt, id, 1);
        tokio::task::yield_now().await;
        step(fmt, id, 2);
        let body = format!("order {id}: 3 items\n");
        step(fmt, id, 3);
        step(fmt, id, 4);
        body
    }
    .instrument(span)
    .await
}

/// One step of a request: an `event!`, or for the `fmt` mode the same as `tracing::info!`.
#[inline]
fn step(fmt: bool, id: u64, step: u32) {
    if fmt {
        tracing::info!(id, step, "step");
        return;
    }
    match step {
        0 => event!(ReqParsed, id, 1u64),
        1 => event!(CacheLookup, id, id.is_multiple_of(3)),
        2 => event!(DbQuery, id, 3u64),
        3 => event!(Rendered, id, 24u64),
        _ => event!(Replied, id, 200u32),
    }
}
