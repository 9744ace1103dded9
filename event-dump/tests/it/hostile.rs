//! event-dump on hostile logs: random bytes, truncations at every block boundary and inside
//! records, bit flips, a packed block that does not unpack, lying lengths and counts (a record
//! length of 0xFFFF, a block size of 2^31, a header length of 2^24, a schema of 65535 events, a
//! string past its record) and ring files with lying geometry, slots and positions. Every
//! subcommand must exit 0 or 1 (never panic), say what is wrong in one-line messages, keep
//! showing the undamaged blocks, and use no more memory than the input backs: each child's
//! peak RSS (wait4's ru_maxrss) stays within 4 × the input + 64 × its stream header + 8 MiB of
//! the same subcommand's on a tiny log.
#![cfg(target_os = "linux")]

use crate::common::{self, DUMP};
use crate::events;
use event_format::decode::{Catalog, Decoder, Entry};
use event_format::raw;
use event_format::raw::{BLOCK_USED_AT, seal_block};
use event_format::ring;
use event_format::wire::{BLOCK_HEADER_LEN, BlockHeader, BlockWriter, Order, Value};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// What one run of event-dump did.
#[derive(Debug)]
struct Run {
    /// The exit code; `None` when a signal killed it.
    code: Option<i32>,
    signal: Option<i32>,
    stdout: String,
    stderr: String,
    /// Peak resident memory of the child, in KiB.
    peak_kib: u64,
}

/// The environment variable that makes [`launcher`] launch event-dump: its arguments,
/// separated by `\x1f`.
const LAUNCH: &str = "HOSTILE_LAUNCH";
/// Where [`launcher`] writes the child's stdout, stderr and status.
const LAUNCH_DIR: &str = "HOSTILE_LAUNCH_DIR";

/// Runs event-dump and measures the child's peak RSS. The child is started by a fresh copy of
/// this test binary ([`launcher`]): a process started from this one (spawn or fork) inherits
/// this process's high-water mark of memory in its `ru_maxrss`, and this one is large while
/// the tests run in parallel; a fresh copy is small.
fn run(args: &[&str]) -> Run {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = common::dir(&format!("hostile-run-{n}"));
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "hostile::launcher", "--nocapture", "--test-threads=1", "-q"])
        .env(LAUNCH, args.join("\x1f"))
        .env(LAUNCH_DIR, &*d)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "the launcher of event-dump {args:?} failed");
    let read = |name: &str| String::from_utf8_lossy(&std::fs::read(d.join(name)).unwrap()).into_owned();
    let facts: Vec<i64> = read("status").split_whitespace().map(|w| w.parse().unwrap()).collect();
    Run {
        code: (facts[0] >= 0).then_some(facts[0] as i32),
        signal: (facts[1] >= 0).then_some(facts[1] as i32),
        stdout: read("stdout"),
        stderr: read("stderr"),
        peak_kib: facts[2] as u64,
    }
}

/// Not a test: the launcher [`run`] starts in a fresh copy of this binary. It runs
/// event-dump with the arguments in `HOSTILE_LAUNCH` and writes its stdout, stderr and
/// "exit-code signal peak-KiB" (-1 for what does not apply) into `HOSTILE_LAUNCH_DIR`. A run
/// longer than a minute is a hang: it is killed and reported as signal 9. Without the
/// variables it does nothing.
#[test]
#[allow(clippy::zombie_processes, reason = "wait4 reaps the child: std's wait would lose its rusage")]
fn launcher() {
    let (Ok(spec), Ok(d)) = (std::env::var(LAUNCH), std::env::var(LAUNCH_DIR)) else { return };
    let d = PathBuf::from(d);
    let mut child = Command::new(DUMP)
        .args(spec.split('\x1f'))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(d.join("stdout")).unwrap())
        .stderr(std::fs::File::create(d.join("stderr")).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let deadline = Instant::now() + Duration::from_secs(60);
    let (status, usage) = loop {
        let mut status = 0;
        // SAFETY: rusage is plain integers, for which all zeroes is a valid value.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `pid` is our child and nothing else waits for it (the Child is only
        // killed, never waited on); `status` and `usage` are valid for writes.
        let got = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if got == pid {
            break (status, usage);
        }
        assert_eq!(got, 0, "wait4: {}", std::io::Error::last_os_error());
        if Instant::now() > deadline {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 };
    let signal = if libc::WIFSIGNALED(status) { libc::WTERMSIG(status) } else { -1 };
    std::fs::write(d.join("status"), format!("{code} {signal} {}", usage.ru_maxrss)).unwrap();
}

/// Every subcommand that reads a log, with the arguments to read `log`.
fn commands(log: &str, out: &str) -> Vec<Vec<String>> {
    let mut all: Vec<Vec<&str>> = vec![
        vec!["print", log],
        vec!["print", log, "--format", "json"],
        vec!["print", log, "--format", "csv"],
        vec!["stats", log],
        vec!["check", log],
        vec!["schema", log],
        vec!["follow", log, "--interval", "1"],
    ];
    for to in ["chrome", "sqlite", "ctf"] {
        all.push(vec!["export", "--to", to, log, "-o", out]);
    }
    all.into_iter().map(|a| a.into_iter().map(str::to_owned).collect()).collect()
}

/// The name of a command line, for the baselines: the subcommand and its format.
fn command_name(args: &[String]) -> String {
    match args[0].as_str() {
        "print" => format!("print {}", args.get(3).map_or("text", String::as_str)),
        "export" => format!("export {}", args[2]),
        other => other.to_owned(),
    }
}

/// Peak RSS of each subcommand on a tiny log: what the program costs before the input does.
fn baselines() -> &'static BTreeMap<String, u64> {
    static BASE: OnceLock<BTreeMap<String, u64>> = OnceLock::new();
    BASE.get_or_init(|| {
        let d = common::dir("hostile-baselines");
        let tiny = d.join("tiny.evt");
        std::fs::write(&tiny, event_format::testing::sample_stream(Order::Little)).unwrap();
        let ring = d.join("tiny.ring");
        std::fs::write(&ring, tiny_ring()).unwrap();
        let out = d.join("baseline-out");
        let mut base = BTreeMap::new();
        for args in commands(tiny.to_str().unwrap(), out.to_str().unwrap()) {
            let args =
                if args[0] == "follow" { vec!["follow".to_owned(), ring.to_str().unwrap().to_owned()] } else { args };
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let r = run(&argv);
            base.insert(command_name(&args), r.peak_kib);
        }
        base
    })
}

/// What a stream header may cost in memory per byte, beyond the 4 per byte of input: its
/// schema decoded into structures (an event of 8 bytes in the header becomes some 100 bytes
/// of `EventType`, and again of the catalog's `Desc`, and `Schema::check` indexes them;
/// `schema` renders it as events.def text too: 60 × the header, measured, for 65279 events).
const SCHEMA_FACTOR: u64 = 64;

/// The header length `bytes` claim, if they start like a stream, capped by their length.
fn claimed_header_len(bytes: &[u8]) -> u64 {
    let len = match (bytes.starts_with(&event_format::wire::MAGIC), bytes.get(8..10), bytes.get(16..20)) {
        (true, Some([0xFF, 0xFE]), Some(l)) => Order::Little.u32(l),
        (true, Some([0xFE, 0xFF]), Some(l)) => Order::Big.u32(l),
        _ => 0,
    };
    u64::from(len).min(bytes.len() as u64)
}

/// Asserts what every run on a hostile input must hold, and returns the run. Memory: the
/// child's peak RSS may exceed the same subcommand's on a tiny log by at most 4 × the input,
/// plus [`SCHEMA_FACTOR`] × its stream header, plus 8 MiB.
fn hostile_run(what: &str, args: &[String], input_len: u64, header_len: u64) -> Run {
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = run(&argv);
    let ctx = format!("{what}: event-dump {}", args.join(" "));
    assert_eq!(r.signal, None, "{ctx}: killed by signal {:?}\n{}", r.signal, r.stderr);
    assert!(matches!(r.code, Some(0 | 1)), "{ctx}: exit code {:?}\n{}", r.code, r.stderr);
    assert!(!r.stderr.contains("panicked"), "{ctx}: panicked\n{}", r.stderr);
    for line in r.stderr.lines() {
        assert!(
            line.starts_with("event-dump: ") && line.len() > 14,
            "{ctx}: a message that is not one clear line: {line:?}"
        );
    }
    if r.code == Some(1) && r.stdout.is_empty() {
        assert!(!r.stderr.is_empty(), "{ctx}: failed without saying why");
    }
    let base = baselines()[&command_name(args)];
    let bound = base + (4 * input_len + SCHEMA_FACTOR * header_len) / 1024 + 8 * 1024;
    assert!(
        r.peak_kib <= bound,
        "{ctx}: peak RSS {} KiB, more than {bound} KiB (baseline {base} KiB + 4 × {} KiB input + {SCHEMA_FACTOR} × {} KiB header + 8 MiB)",
        r.peak_kib,
        input_len / 1024,
        header_len / 1024,
    );
    r
}

/// Writes `bytes` to a file named `name` and runs every subcommand on it.
fn every_command(name: &str, bytes: &[u8]) -> BTreeMap<String, Run> {
    // Tests run in parallel: each input gets a file of its own.
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let name = format!("{}-{name}", COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let d = common::dir(&format!("hostile-{name}"));
    let path = d.join(&name);
    std::fs::write(&path, bytes).unwrap();
    let out = d.join(format!("{name}.out"));
    let mut runs = BTreeMap::new();
    for args in commands(path.to_str().unwrap(), out.to_str().unwrap()) {
        let r = hostile_run(&name, &args, bytes.len() as u64, claimed_header_len(bytes));
        runs.insert(command_name(&args), r);
    }
    runs
}

/// [`common::two_threads_log`], made once for each `packed`.
fn sample_log(packed: bool) -> Vec<u8> {
    static LOGS: [OnceLock<Vec<u8>>; 2] = [OnceLock::new(), OnceLock::new()];
    LOGS[usize::from(packed)]
        .get_or_init(|| {
            let d = common::dir(&format!("hostile-sample-{packed}"));
            let path = d.join(format!("sample-{packed}.evt"));
            common::two_threads_log(&path, packed);
            std::fs::read(&path).unwrap()
        })
        .clone()
}

/// The bytes of [`common::tiny_ring`], made once.
fn tiny_ring() -> Vec<u8> {
    static RING: OnceLock<Vec<u8>> = OnceLock::new();
    RING.get_or_init(|| {
        let d = common::dir("hostile-tiny-ring");
        let path = d.join("tiny.ring");
        common::tiny_ring(&path);
        std::fs::read(&path).unwrap()
    })
    .clone()
}

/// Facts of a good stream, from the library: header length, block size, and each block's
/// offset, length in the stream and events.
struct Shape {
    header_len: usize,
    block_size: usize,
    offsets: Vec<usize>,
    lens: Vec<usize>,
    events: Vec<usize>,
}

impl Shape {
    /// The block that byte `at` (past the header) belongs to.
    fn block_at(&self, at: usize) -> usize {
        self.offsets.iter().rposition(|&o| o <= at).unwrap()
    }
}

fn shape(bytes: &[u8]) -> Shape {
    let mut decoder = Decoder::new(bytes).unwrap();
    let catalog = Catalog::new(&decoder.header().sets);
    let (header_len, block_size) = (decoder.header_len() as usize, decoder.header().block_size as usize);
    let mut s = Shape { header_len, block_size, offsets: Vec::new(), lens: Vec::new(), events: Vec::new() };
    while let Some(block) = decoder.next_block() {
        let block = block.unwrap();
        s.offsets.push(block.offset as usize);
        s.lens.push(block.stored_len as usize);
        s.events.push(block.entries(&catalog).filter(|e| matches!(e, Entry::Event(_))).count());
    }
    s
}

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_owned).collect()
}

/// The text lines of `runs`' print, which must all be lines of the whole log's print.
fn printed_subset(what: &str, runs: &BTreeMap<String, Run>, whole: &HashSet<String>) -> usize {
    let printed = lines(&runs["print text"].stdout);
    for line in &printed {
        assert!(whole.contains(line), "{what}: a line the whole log does not have: {line}");
    }
    printed.len()
}

fn whole_lines(bytes: &[u8]) -> HashSet<String> {
    let runs = every_command("whole.evt", bytes);
    assert_eq!(runs["check"].code, Some(0), "the sample log is whole: {}", runs["check"].stdout);
    lines(&runs["print text"].stdout).into_iter().collect()
}

#[test]
fn random_bytes_are_refused_in_one_line() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let good = sample_log(false);
    let header_len = shape(&good).header_len;
    for (i, len) in [0usize, 1, 7, 24, 83, 4096, 100 << 10].into_iter().enumerate() {
        let random: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let runs = every_command(&format!("random-{i}.evt"), &random);
        for (name, r) in &runs {
            assert_eq!(r.code, Some(1), "random bytes {len}: {name} refuses them");
            assert_eq!(r.stderr.lines().count(), 1, "random bytes {len}: {name}: {}", r.stderr);
        }
        // A good header, then random blocks: reported (the reader looks for the next sync
        // word after a damaged block, so random bytes give one report or a few), none printed.
        let mut mixed = good[..header_len].to_vec();
        mixed.extend_from_slice(&random);
        let runs = every_command(&format!("random-blocks-{i}.evt"), &mixed);
        assert_eq!(runs["print text"].stdout, "", "random blocks hold no event");
        let blocks = len.div_ceil(1024);
        // The damage reported, beside `print`'s closing verdict (below).
        let reports = runs["print text"].stderr.lines().filter(|l| !l.contains(": NOT whole: ")).count();
        assert!(
            reports <= blocks && (reports > 0) == (blocks > 0),
            "{blocks} random blocks: {}",
            runs["print text"].stderr
        );
        // Without blocks: a 2.0.1 stream cut after its header has no clean-stop marker, and
        // `print` gives `check`'s verdict.
        assert_eq!(runs["check"].code, Some(1));
        assert_eq!(runs["print text"].stderr.lines().filter(|l| l.contains(": NOT whole: ")).count(), 1);
    }
}

#[test]
fn truncation_at_every_block_boundary_and_inside_records_keeps_the_blocks_before() {
    for packed in [false, true] {
        let good = sample_log(packed);
        let whole = whole_lines(&good);
        let s = shape(&good);
        assert!(s.events.len() >= 6, "the sample spans several blocks: {:?}", s.events);
        assert_eq!(s.lens.iter().any(|&l| l < s.block_size), packed, "packed blocks are shorter: {:?}", s.lens);
        // Inside the header: refused, one line.
        for cut in [0, 5, 8, 23, 24, 80, s.header_len - 1] {
            let runs = every_command(&format!("cut-header-{cut}.evt"), &good[..cut]);
            for (name, r) in &runs {
                assert_eq!(r.code, Some(1), "cut at {cut}: {name}");
            }
            assert!(
                runs["print text"].stderr.contains("truncated") || runs["print text"].stderr.contains("ends inside"),
                "{}",
                runs["print text"].stderr
            );
        }
        for k in 0..=s.events.len() {
            let boundary = s.offsets.get(k).copied().unwrap_or(good.len());
            let before: usize = s.events[..k].iter().sum();
            // At the boundary: a shorter, whole log.
            let runs = every_command(&format!("cut-{k}.evt"), &good[..boundary]);
            assert_eq!(
                printed_subset("cut at a boundary", &runs, &whole),
                before,
                "blocks before a cut at block {k} all print"
            );
            // A shorter log: nothing damaged; without its stop marker (all but the whole log),
            // `print`'s one closing line is `check`'s verdict.
            let said = &runs["print text"].stderr;
            if boundary == good.len() {
                assert_eq!(said, "", "the whole log");
            } else {
                assert!(
                    said.lines().count() == 1
                        && said.contains(": NOT whole: 1 recording or segment not stopped cleanly;"),
                    "a cut at a block boundary is a shorter log: {said}"
                );
                assert_eq!(runs["check"].code, Some(1), "{said}");
            }
            // Mid-record, and one byte short of the next block: the last block is reported.
            if k < s.events.len() {
                for inside in [BLOCK_HEADER_LEN + 13, s.lens[k] - 1] {
                    let runs = every_command(&format!("cut-{k}-{inside}.evt"), &good[..boundary + inside]);
                    assert_eq!(printed_subset("cut inside a block", &runs, &whole), before, "cut inside block {k}");
                    assert!(
                        runs["print text"].stderr.contains("ends inside the block"),
                        "{}",
                        runs["print text"].stderr
                    );
                    assert_eq!(runs["check"].code, Some(1), "a cut log is not whole");
                }
            }
        }
    }
}

#[test]
fn a_bit_flip_costs_its_block_only() {
    for packed in [false, true] {
        let good = sample_log(packed);
        let whole = whole_lines(&good);
        let s = shape(&good);
        let total: usize = s.events.iter().sum();
        let mut flipped_blocks = 0;
        // Many positions: every header byte region, and in every block its header, its
        // records and its padding.
        let mut positions: Vec<usize> = (0..s.header_len).step_by(7).collect();
        for (&start, &len) in s.offsets.iter().zip(&s.lens) {
            positions.extend([0, 5, 17, 41, 46, 60, 333, len - 1].into_iter().filter(|&p| p < len).map(|p| start + p));
        }
        for (n, &at) in positions.iter().enumerate() {
            let mut bytes = good.clone();
            bytes[at] ^= 1 << (n % 8);
            let runs = every_command(&format!("flip-{packed}-{at}.evt"), &bytes);
            if at < s.header_len {
                for (name, r) in &runs {
                    assert_eq!(r.code, Some(1), "a flip in the header at {at}: {name} refuses the log");
                }
                continue;
            }
            let block = s.block_at(at);
            let printed = printed_subset("bit flip", &runs, &whole);
            assert!(
                printed >= total - s.events[block] && printed <= total,
                "a flip at {at} in block {block} costs at most its {} events: {printed} of {total} printed",
                s.events[block]
            );
            if printed < total {
                flipped_blocks += 1;
                assert_eq!(runs["check"].code, Some(1), "check sees the damage at {at}");
                assert!(
                    runs["print text"].stderr.contains(&format!("block {block} ")),
                    "the damaged block is named: {}",
                    runs["print text"].stderr
                );
            }
        }
        assert!(flipped_blocks >= s.events.len(), "flips in headers and records damage blocks");
    }
}

/// A packed block whose CRC holds over bytes that do not unpack, with a copy of the next block
/// inside them ([`common::unpackable_block`]): every command reads on at its end (`print` on
/// its workers, the others as they read), none reads the copy, and it costs its own events
/// only, named once by `print`.
#[test]
fn a_packed_block_that_does_not_unpack_costs_its_events_only() {
    let good = sample_log(true);
    let whole = whole_lines(&good);
    let total: usize = shape(&good).events.iter().sum();
    let (bytes, offset, lost) = common::unpackable_block(&good);
    let runs = every_command("unpackable.evt", &bytes);
    let printed = printed_subset("a block that does not unpack", &runs, &whole);
    assert_eq!(printed, total - lost, "its {lost} events of {total}, no more and no fewer");
    for name in ["print json", "print csv"] {
        assert_eq!(runs[name].stderr, runs["print text"].stderr, "{name}");
    }
    let said = &runs["print text"].stderr;
    assert_eq!(said.lines().filter(|l| l.contains(" skipped: ")).count(), 1, "{said}");
    assert!(said.contains(&format!("block 1 at offset {offset} skipped: ")), "{said}");
    assert_eq!(runs["check"].code, Some(1));
    // Nor does any other command read the copy (a block repeated).
    for (name, r) in &runs {
        assert!(!r.stdout.contains("repeated") && !r.stderr.contains("repeated"), "{name}: {}{}", r.stdout, r.stderr);
    }
}

/// `bytes` with block `block` of the stream changed by `edit` (given the records area)
/// and resealed, so that the CRC passes and the lie is in the fields themselves.
fn edit_block(bytes: &[u8], s: &Shape, block: usize, edit: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let mut bytes = bytes.to_vec();
    let start = s.offsets[block];
    let b = &mut bytes[start..start + s.block_size];
    let order = Order::NATIVE;
    let used = order.u32(&b[BLOCK_USED_AT..]);
    edit(&mut b[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + used as usize]);
    seal_block(order, b, used);
    bytes
}

/// Offsets of the records of a records area (the sample has no time extensions).
fn record_offsets(records: &[u8]) -> Vec<usize> {
    let mut at = 0;
    let mut out = Vec::new();
    while at + 8 <= records.len() {
        out.push(at);
        at += usize::from(Order::NATIVE.u16(&records[at + 2..]));
    }
    out
}

#[test]
fn lying_record_and_string_lengths_cost_what_they_cover() {
    let good = sample_log(false);
    let whole = whole_lines(&good);
    let s = shape(&good);
    let total: usize = s.events.iter().sum();
    let block = 2;
    let start = s.offsets[block];
    let used = Order::NATIVE.u32(&good[start + BLOCK_USED_AT..]) as usize;
    let offsets = record_offsets(&good[start + BLOCK_HEADER_LEN..start + BLOCK_HEADER_LEN + used]);
    assert_eq!(offsets.len(), s.events[block]);

    // A record length of 0xFFFF: the records before it print, the rest of its block is lost.
    let j = 5;
    let bytes = edit_block(&good, &s, block, |r| Order::NATIVE.put_u16(&mut r[offsets[j] + 2..], 0xFFFF));
    let runs = every_command("length-ffff.evt", &bytes);
    assert_eq!(printed_subset("length 0xFFFF", &runs, &whole), total - (s.events[block] - j));
    assert!(runs["print text"].stderr.contains("length 65535"), "{}", runs["print text"].stderr);
    assert_eq!(runs["check"].code, Some(1));

    // A length of 0 and of 7: the same.
    for len in [0u16, 7] {
        let bytes = edit_block(&good, &s, block, |r| Order::NATIVE.put_u16(&mut r[offsets[j] + 2..], len));
        let runs = every_command(&format!("length-{len}.evt"), &bytes);
        assert_eq!(printed_subset("short length", &runs, &whole), total - (s.events[block] - j));
    }

    // A string whose length runs past its record (and past the block): that record only.
    let code = |at: usize| Order::NATIVE.u16(&good[start + BLOCK_HEADER_LEN + at..]);
    // Records carry wire codes: AllocFail's in this stream.
    let header = event_format::decode::Decoder::new(&good[..]).unwrap().header().clone();
    let alloc_fail = header.sets[0].wire_code_of(events::code::AllocFail).unwrap();
    let with_string = *offsets.iter().find(|&&at| code(at) == alloc_fail).expect("an AllocFail in the block");
    for prefix in [0x7FFFu16, 0xFFFF, 1000] {
        let bytes = edit_block(&good, &s, block, |r| Order::NATIVE.put_u16(&mut r[with_string + 8 + 16..], prefix));
        let runs = every_command(&format!("string-{prefix}.evt"), &bytes);
        assert_eq!(
            printed_subset("string past the block", &runs, &whole),
            total - 1,
            "only the record with the string is lost"
        );
        assert!(runs["print text"].stderr.contains("runs past the record"), "{}", runs["print text"].stderr);
        assert_eq!(runs["check"].code, Some(1));
    }

    // `used` larger than the block, resealed over what fits: the block is skipped.
    let mut bytes = good.clone();
    Order::NATIVE.put_u32(&mut bytes[start + BLOCK_USED_AT..], u32::MAX);
    let runs = every_command("used-max.evt", &bytes);
    assert_eq!(printed_subset("used too large", &runs, &whole), total - s.events[block]);
}

#[test]
fn lying_counters_in_blocks_do_not_wrap() {
    let good = sample_log(false);
    let s = shape(&good);
    // Every block claims u64::MAX lost events and the largest sequence number: the sums
    // saturate instead of wrapping (or panicking), and check still reports.
    let mut bytes = good.clone();
    for block in 0..s.events.len() {
        let start = s.offsets[block];
        let b = &mut bytes[start..start + s.block_size];
        let mut header = BlockHeader::read(Order::NATIVE, b);
        header.lost = u64::MAX;
        header.sequence = u64::MAX - (block as u64 % 2);
        header.write(Order::NATIVE, b);
        let used = Order::NATIVE.u32(&b[BLOCK_USED_AT..]);
        seal_block(Order::NATIVE, b, used);
    }
    let runs = every_command("lost-max.evt", &bytes);
    assert_eq!(runs["check"].code, Some(1));
    assert!(runs["check"].stdout.contains(&format!("{} events", u64::MAX)), "{}", runs["check"].stdout);
    assert!(runs["stats"].stdout.contains(&format!("{} events lost", u64::MAX)), "{}", runs["stats"].stdout);
}

/// Rewrites a stream header's CRC after its fields were changed.
fn reseal_header(bytes: &mut [u8], header_len: usize) {
    let crc = crc32fast::hash(&bytes[..header_len - 4]);
    Order::NATIVE.put_u32(&mut bytes[header_len - 4..], crc);
}

#[test]
fn lying_header_sizes_cost_no_memory() {
    let good = sample_log(false);
    let s = shape(&good);
    // Blocks of 2^31 bytes: refused before anything is read.
    let mut bytes = good.clone();
    Order::NATIVE.put_u32(&mut bytes[20..], 1 << 31);
    reseal_header(&mut bytes, s.header_len);
    let runs = every_command("block-2-31.evt", &bytes);
    for (name, r) in &runs {
        assert_eq!(r.code, Some(1), "{name}");
    }
    assert!(runs["print text"].stderr.contains("block size 2147483648 is invalid"), "{}", runs["print text"].stderr);

    // Blocks of 16 MiB, the largest valid size, in a file of about 100 KiB: one truncated
    // block, and memory bounded by the file (every_command asserts it).
    let mut bytes = good.clone();
    Order::NATIVE.put_u32(&mut bytes[20..], 1 << 24);
    reseal_header(&mut bytes, s.header_len);
    bytes.resize(100 << 10, 0);
    let runs = every_command("block-2-24.evt", &bytes);
    assert!(runs["print text"].stderr.contains("ends inside the block"), "{}", runs["print text"].stderr);
    assert_eq!(runs["check"].code, Some(1));

    // A header of 16 MiB claimed by a file of 100 KiB.
    let mut bytes = good.clone();
    Order::NATIVE.put_u32(&mut bytes[16..], 1 << 24);
    bytes.resize(100 << 10, 0);
    let runs = every_command("header-2-24.evt", &bytes);
    for (name, r) in &runs {
        assert_eq!(r.code, Some(1), "{name}");
    }
    assert!(runs["print text"].stderr.contains("ends inside its header"), "{}", runs["print text"].stderr);
}

/// A stream header with `events` events E0, E1, ... of codes 1, 2, ... (no parameters,
/// one kind), and `blocks` blocks each holding one record of every 1000th code.
fn big_schema_stream(events: u32, blocks: usize) -> Vec<u8> {
    let mut h = event_format::testing::sample_header(Order::NATIVE).encode().unwrap();
    // The sample's producer strings end where its schema starts: find the kinds count by
    // re-encoding the schema part ourselves.
    let schema_at = 80 + 2 + "x86_64".len() + 2 + "linux".len() + 2 + "sample".len();
    h.truncate(schema_at);
    let o = Order::NATIVE;
    let put16 = |h: &mut Vec<u8>, v: u16| {
        let mut b = [0; 2];
        o.put_u16(&mut b, v);
        h.extend_from_slice(&b);
    };
    // One set (format 2): its name, version 0.0.0, first wire code 1 (so wire codes are
    // the events' own codes), then its schema.
    put16(&mut h, 1);
    put16(&mut h, 3);
    h.extend_from_slice(b"big");
    for v in [0, 0, 0, 1] {
        put16(&mut h, v);
    }
    put16(&mut h, 1);
    put16(&mut h, 1);
    h.push(b'K');
    put16(&mut h, 0);
    put16(&mut h, events as u16);
    for i in 0..events {
        put16(&mut h, (i + 1) as u16);
        let name = format!("E{i}");
        put16(&mut h, name.len() as u16);
        h.extend_from_slice(name.as_bytes());
        h.extend_from_slice(&[0, 0, 0]); // flags, kind, no parameters
    }
    put16(&mut h, 0);
    let len = h.len() + 4;
    o.put_u32(&mut h[16..], len as u32);
    h.extend_from_slice(&[0; 4]);
    reseal_header(&mut h, len);
    for b in 0..blocks {
        let mut w = BlockWriter::new(
            o,
            1024,
            &BlockHeader { thread: 1, sequence: b as u64, base_time: 1000, ..Default::default() },
        );
        for code in (1..=events.min(0xFEFF)).step_by(1000) {
            w.push(code as u16, 1000 + u64::from(code), &[] as &[Value<'_>]).unwrap();
        }
        h.extend(w.finish());
    }
    if blocks > 0 {
        // Stopped cleanly (format 2.0.1): the blocks are all there is.
        common::end_with_stop(&mut h);
    }
    h
}

#[test]
fn a_schema_of_65535_events() {
    // 65535 codes from 1: the last 256 are the built-ins' range, so the schema is refused,
    // in one line.
    let bytes = big_schema_stream(65535, 0);
    assert!(bytes.len() > 500 << 10);
    let runs = every_command("schema-65535.evt", &bytes);
    for (name, r) in &runs {
        assert_eq!(r.code, Some(1), "{name}");
        assert_eq!(r.stderr.lines().count(), 1, "{name}: {}", r.stderr);
    }
    assert!(runs["print text"].stderr.contains("more problems"), "{}", runs["print text"].stderr);

    // 65279 events, every user code: accepted, and read.
    let bytes = big_schema_stream(0xFEFF, 2);
    let runs = every_command("schema-65279.evt", &bytes);
    assert_eq!(runs["check"].code, Some(0), "{}", runs["check"].stdout);
    assert_eq!(lines(&runs["print text"].stdout).len(), 2 * 66);
    assert_eq!(runs["schema"].stdout.matches("RELATION(").count(), 0xFEFF);

    // A count of 65535 events with the bytes of none: malformed.
    let mut bytes = big_schema_stream(0, 0);
    let len = bytes.len();
    let count_at = len - 4 - 2 - 2; // events count, retired count, CRC
    Order::NATIVE.put_u16(&mut bytes[count_at..], 65535);
    reseal_header(&mut bytes, len);
    let runs = every_command("schema-count.evt", &bytes);
    assert!(runs["print text"].stderr.contains("malformed header"), "{}", runs["print text"].stderr);
}

/// `ring` with page 0's fixed part changed by `edit` and its CRC resealed.
fn edit_page0(ring: &[u8], edit: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let mut bytes = ring.to_vec();
    edit(&mut bytes[..raw::at::CRC]);
    let crc = crc32fast::hash(&bytes[..raw::at::CRC]);
    Order::NATIVE.put_u32(&mut bytes[raw::at::CRC..], crc);
    bytes
}

#[test]
fn ring_files_with_lying_counts_and_positions() {
    let good = tiny_ring();
    let o = Order::NATIVE;
    let layout = ring::Layout::decode(&good, false).unwrap();
    let reference = every_command("ring-good.ring", &good);
    assert_eq!(reference["follow"].code, Some(0), "{}", reference["follow"].stderr);
    let shown: HashSet<String> = lines(&reference["print text"].stdout).into_iter().collect();
    assert!(shown.len() > 20, "the ring holds events");

    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    for (name, at, value) in [
        ("slots", raw::at::SLOTS, ring::MAX_SLOTS),
        ("slots-0", raw::at::SLOTS, 0),
        ("blocks-per-slot", raw::at::BLOCKS_PER_SLOT, raw::MAX_BLOCKS_PER_SLOT),
        ("header-len", raw::at::HEADER_LEN, 1 << 24),
        ("header-len-small", raw::at::HEADER_LEN, 100),
        ("block-size", raw::at::BLOCK_SIZE, 1 << 31),
    ] {
        cases.push((name.to_owned(), edit_page0(&good, |b| o.put_u32(&mut b[at..], value))));
    }
    // Slots whose positions lie: the largest sequence, an end past the block, an end inside
    // the block header, and a slot that claims a thread it has no block of.
    let slot = |i: u32| layout.slot(i) as usize;
    for (name, position) in [
        ("pos-max", u64::MAX),
        ("pos-seq-max", raw::position(u64::from(u32::MAX), 48 + 16)),
        ("pos-end-past", raw::position(3, layout.block_size + 1)),
        ("pos-end-small", raw::position(3, 20)),
        ("pos-zero", 0),
    ] {
        let mut bytes = good.clone();
        for i in 0..layout.slots {
            o.put_u64(&mut bytes[slot(i) + raw::slot_at::POSITION..], position);
        }
        cases.push((name.to_owned(), bytes));
    }
    let mut bytes = good.clone();
    for i in 0..layout.slots {
        o.put_u64(&mut bytes[slot(i)..], raw::RECLAIMING);
        o.put_u64(&mut bytes[slot(i) + raw::slot_at::REFUSED..], u64::MAX);
    }
    cases.push(("reclaiming".to_owned(), bytes));
    let mut bytes = good.clone();
    for i in 0..layout.slots {
        o.put_u64(&mut bytes[slot(i) + raw::slot_at::REFUSED..], u64::MAX);
    }
    o.put_u64(&mut bytes[raw::at::LOST..], u64::MAX);
    cases.push(("refused-max".to_owned(), bytes));
    // The file cut short of its layout.
    cases.push(("cut".to_owned(), good[..good.len() - 1].to_vec()));
    // Random bytes over the slot table and the data area.
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut bytes = good.clone();
    for b in &mut bytes[layout.slot_table() as usize..] {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        *b = seed as u8;
    }
    cases.push(("random-slots".to_owned(), bytes));

    for (name, bytes) in &cases {
        let runs = every_command(&format!("ring-{name}.ring"), bytes);
        // Thread 0's lines are the reader's own reports of what the ring says it lost.
        for line in lines(&runs["print text"].stdout).into_iter().filter(|l| !l.contains(" T0 ")) {
            assert!(shown.contains(&line), "ring {name}: a line the good ring does not have: {line}");
        }
        if name == "refused-max" {
            assert!(runs["check"].stdout.contains(&format!("{} events", u64::MAX)), "{}", runs["check"].stdout);
        }
    }
}

/// The fuzzers' seed inputs (`fuzz/seeds/decode_stream`): the logs these tests build from.
/// With `UPDATE_FUZZ_SEEDS=1` it writes them; otherwise it checks that every seed is still
/// a log this reader opens, so that a format change cannot leave the fuzzer stale seeds.
#[test]
fn fuzz_seeds_are_current_logs() {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/decode_stream");
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("sample-le.evt", event_format::testing::sample_stream(Order::Little)),
        ("sample-be.evt", event_format::testing::sample_stream(Order::Big)),
        ("recorded.evt", sample_log(false)),
        ("recorded-packed.evt", sample_log(true)),
        ("small-schema.evt", big_schema_stream(3, 2)),
        ("tiny.ring", tiny_ring()),
    ];
    if std::env::var_os("UPDATE_FUZZ_SEEDS").is_some() {
        std::fs::create_dir_all(&seeds).unwrap();
        for (name, bytes) in &files {
            std::fs::write(seeds.join(name), bytes).unwrap();
        }
    }
    for (name, _) in &files {
        let path = seeds.join(name);
        let out = run(&["stats", path.to_str().unwrap()]);
        assert!(
            out.code == Some(0),
            "{name}: a seed the reader refuses (rewrite them: UPDATE_FUZZ_SEEDS=1 cargo test -p event-dump --test it hostile::fuzz_seeds): {}",
            out.stderr
        );
    }
}

/// Issue 31: nothing helped size a ring that held 0.09 s. `stats` of a ring file whose rings
/// overwrote says how long the soonest-wrapped thread's ring held at the rate it recorded,
/// computed from the events left, and the `EVENT_BUFSIZE` that holds 10 s at that rate (issue
/// 40: the rings share the whole buffer, layout 1.1).
#[test]
fn stats_of_a_wrapped_ring_says_how_long_it_held_and_what_holds_ten_seconds() {
    let d = common::dir("hostile-ring-size");
    let path = d.join("tiny.ring");
    std::fs::write(&path, tiny_ring()).unwrap();
    let out = common::run(&["stats", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let text = common::stdout(&out);
    let printed = common::print_json(&[path.to_str().unwrap()]);
    // The worker's events left in its ring: the span they cover, from print's times.
    let thread = printed.iter().filter(|p| p.event == "ObjectFree").map(|p| p.thread.clone()).next().unwrap();
    let held: Vec<i128> = printed.iter().filter(|p| p.thread == thread).map(|p| p.ns).collect();
    let seconds = (held.iter().max().unwrap() - held.iter().min().unwrap()) as f64 / 1e9;
    let line = text.lines().find(|l| l.trim_start().starts_with("ring size:")).unwrap_or_else(|| panic!("{text}"));
    let expected = format!(
        "ring size: the threads' rings share 8 blocks of 1024 bytes (EVENT_BUFSIZE=8k); they held about {seconds:.3} s \
         at the rate seen ({thread}, the soonest to wrap: {} events, ",
        held.len()
    );
    assert!(line.trim_start().starts_with(&expected), "{line}\nexpected {expected}");
    // 10 s at that rate: the shared buffer scaled by 10 s over what it held, whole blocks.
    let blocks = (8.0 * 10.0 / seconds).ceil() as u64;
    let wanted = blocks * 1024;
    let size = if wanted >= 1 << 30 {
        format!("{}g", wanted.div_ceil(1 << 30))
    } else if wanted >= 1 << 20 {
        format!("{}m", wanted.div_ceil(1 << 20))
    } else {
        format!("{}k", wanted.div_ceil(1 << 10))
    };
    if blocks <= u64::from(event_format::ring::MAX_POOL_BLOCKS) {
        assert!(line.ends_with(&format!("; EVENT_BUFSIZE={size} would hold about 10 s")), "{line}");
    } else {
        assert!(line.contains("at the most a ring file holds"), "{line}");
    }
    // A stream says nothing of rings.
    let stream = d.join("stream.evt");
    common::many_events_log(&stream, 100);
    assert!(!common::stdout(&common::run(&["stats", stream.to_str().unwrap()])).contains("ring size"));
}
