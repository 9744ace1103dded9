//! Version skew, as `event-dump` meets it (docs/FORMAT.md, "Reader's rules"): checked-in logs
//! in `tests/data/skew/` that claim a newer minor, a newer median and another major than
//! this reader's `FORMAT_VERSION`, run through `event-dump print`, `stats` and `check`.
//!
//! - a newer minor is read; its record of an event code this reader does not know is skipped
//!   by its length and counted, and every other event is printed;
//! - a newer median is refused with one line naming both versions, unless `--force`, and
//!   then read;
//! - another major is refused, naming the versions this reader reads, even with `--force`.
//!
//! The logs are the current version's checked-in fixture (`tests/data/vX.Y.Z/tour-le.evt`)
//! with the header's format version rewritten (and its CRC); the newer minor also gets one
//! more block holding a record of an unknown code between two known ones. Made again, from
//! the current `FORMAT_VERSION`, by
//! `UPDATE_FIXTURES=1 cargo test -p event-tests --test it versions::`.

use crate::common::DUMP;
use event_format::decode::{Catalog, Decoder, Entry};
use event_format::schema::Version;
use event_format::wire::{BlockHeader, BlockWriter, FORMAT_VERSION, Text, Value};
use std::path::PathBuf;
use std::process::{Command, Output};

/// The code of the record a newer minor adds: a built-in code this reader does not define
/// (a new built-in event is what a minor bump may add).
const UNKNOWN_CODE: u16 = 0xFF40;

fn skew(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/skew").join(name)
}

fn base_path() -> PathBuf {
    let v = FORMAT_VERSION;
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("data/v{}.{}.{}/tour-le.evt", v.major, v.median, v.minor))
}

fn newer_minor() -> Version {
    Version::new(FORMAT_VERSION.major, FORMAT_VERSION.median, FORMAT_VERSION.minor + 1)
}

fn newer_median() -> Version {
    Version::new(FORMAT_VERSION.major, FORMAT_VERSION.median + 1, 0)
}

fn other_major() -> Version {
    Version::new(FORMAT_VERSION.major + 1, 0, 0)
}

/// The byte order of a stream, from its byte-order mark.
fn order_of(stream: &[u8]) -> event_format::wire::Order {
    match [stream[8], stream[9]] {
        [0xFF, 0xFE] => event_format::wire::Order::Little,
        _ => event_format::wire::Order::Big,
    }
}

/// `stream` with its header's format version set to `v` and the header's CRC made good.
fn with_version(stream: &[u8], v: Version) -> Vec<u8> {
    let o = order_of(stream);
    let mut out = stream.to_vec();
    o.put_u16(&mut out[10..], v.major);
    o.put_u16(&mut out[12..], v.median);
    o.put_u16(&mut out[14..], v.minor);
    let header_len = o.u32(&out[16..]) as usize;
    let crc = crc32fast::hash(&out[..header_len - 4]);
    o.put_u32(&mut out[header_len - 4..], crc);
    out
}

/// One more block for thread 1 (its next sequence, after its last event): a known event, a
/// record of [`UNKNOWN_CODE`], another known event.
fn unknown_block(stream: &[u8]) -> Vec<u8> {
    let decoder = Decoder::new(stream).expect("the base log decodes");
    let block_size = decoder.header().block_size;
    let catalog = Catalog::new(&decoder.header().sets);
    let (mut sequence, mut time) = (0, 0);
    for block in decoder {
        let block = block.expect("the base log has no damaged block");
        if block.header.thread == 1 {
            sequence = block.header.sequence + 1;
        }
        for entry in block.entries(&catalog) {
            if let Entry::Event(e) = entry {
                time = time.max(e.time);
            }
        }
    }
    // A second after the base log's last event, so that they print last.
    let time = time + 1_000_000_000;
    let mut w = BlockWriter::new(
        order_of(stream),
        block_size,
        &BlockHeader { thread: 1, sequence, base_time: time, ..Default::default() },
    );
    // ArenaDestroy(arena, committed): code 0x0002, format PW in every events.def of 1.x.
    w.push(0x0002, time, &[Value::Pointer(0x7f3a_0000_1000), Value::Word(1)]).expect("fits");
    w.push(UNKNOWN_CODE, time + 10, &[Value::Word(42), Value::Str(Text::new("from a newer minor"))]).expect("fits");
    w.push(0x0002, time + 20, &[Value::Pointer(0x7f3a_0000_1000), Value::Word(2)]).expect("fits");
    w.finish()
}

/// The checked-in log `name`, written first from the current fixture when
/// `UPDATE_FIXTURES` is set; refused when it does not claim `version` (made for another
/// reader version: make it again).
fn log(name: &str, version: Version) -> String {
    let path = skew(name);
    if std::env::var_os("UPDATE_FIXTURES").is_some() {
        let base = std::fs::read(base_path())
            .unwrap_or_else(|e| panic!("{}: {e}; the current version's fixtures come first", base_path().display()));
        let mut bytes = with_version(&base, version);
        if version == newer_minor() {
            bytes.extend(unknown_block(&base));
        }
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
    }
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        panic!("{}: {e} (make it: UPDATE_FIXTURES=1 cargo test -p event-tests --test it versions::)", path.display())
    });
    let o = order_of(&bytes);
    let claimed = Version::new(o.u16(&bytes[10..]), o.u16(&bytes[12..]), o.u16(&bytes[14..]));
    assert_eq!(
        claimed, version,
        "{name} was made for another reader version; make it again: UPDATE_FIXTURES=1 cargo test -p event-tests --test it versions::"
    );
    path.to_str().unwrap().to_owned()
}

fn dump(args: &[&str]) -> Output {
    Command::new(DUMP).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Names of versions replaced by what they are, so that snapshots survive a version bump.
fn named(s: &str, path: &str) -> String {
    s.replace(path, "LOG")
        .replace(&newer_minor().to_string(), "NEWER_MINOR")
        .replace(&newer_median().to_string(), "NEWER_MEDIAN")
        .replace(&other_major().to_string(), "OTHER_MAJOR")
        .replace(&FORMAT_VERSION.to_string(), "READER")
        .replace(&format!("{}.{}.x", FORMAT_VERSION.major, FORMAT_VERSION.median), "READER_MAJOR.READER_MEDIAN.x")
        .replace(&format!("format {}.x", FORMAT_VERSION.major), "format READER_MAJOR.x")
        .replace(&format!("format {}.x", other_major().major), "format OTHER_MAJOR.x")
}

#[test]
fn a_newer_minor_is_read_and_its_unknown_record_skipped_and_counted() {
    let path = log("newer-minor.evt", newer_minor());
    let base = base_path();
    let base = base.to_str().unwrap();

    let print = dump(&["print", &path]);
    assert!(print.status.success(), "{}", text(&print.stderr));
    let (lines, base_lines) = (text(&print.stdout), text(&dump(&["print", base]).stdout));
    assert_eq!(
        text(&print.stderr),
        format!(
            "event-dump: {path}: 1 records of unknown code {UNKNOWN_CODE:#06x} skipped (a newer event set or format wrote them)\n\
             event-dump: {path}: NOT whole: 16 events lost, 1 record of an unknown code, 1 recording or segment not \
             stopped cleanly; `event-dump check {path}` tells more\n"
        )
    );
    // Every event of the base log, then the two known events around the unknown record.
    let lines: Vec<&str> = lines.lines().collect();
    assert_eq!(lines.len(), base_lines.lines().count() + 2, "{lines:#?}");
    assert_eq!(lines[..lines.len() - 2], base_lines.lines().collect::<Vec<_>>()[..]);
    assert!(
        lines[lines.len() - 2].ends_with("Arena.ArenaDestroy arena=0x7f3a00001000[\"tour arena\"] committed=1"),
        "{}",
        lines[lines.len() - 2]
    );
    assert!(
        lines[lines.len() - 1].ends_with("Arena.ArenaDestroy arena=0x7f3a00001000[\"tour arena\"] committed=2"),
        "{}",
        lines[lines.len() - 1]
    );

    let stats = dump(&["stats", &path]);
    assert!(stats.status.success(), "{}", text(&stats.stderr));
    let stats = named(&text(&stats.stdout), &path);
    assert!(stats.contains("format NEWER_MINOR,"), "{stats}");
    assert!(stats.contains(" 1 records of unknown codes"), "{stats}");

    let check = dump(&["check", &path]);
    let check_text = named(&text(&check.stdout), &path);
    assert_eq!(check.status.code(), Some(1), "not whole: {check_text}");
    assert!(check_text.contains(&format!("unknown code {UNKNOWN_CODE:#06x}: 1 records skipped")), "{check_text}");
    insta::assert_snapshot!(
        "newer_minor_stats_and_check",
        format!("$ event-dump stats LOG\n{stats}\n$ event-dump check LOG\n{check_text}")
    );
}

#[test]
fn a_newer_median_is_refused_unless_forced() {
    let path = log("newer-median.evt", newer_median());
    let base = base_path();
    let mut report = String::new();
    for cmd in ["print", "stats", "check"] {
        let out = dump(&[cmd, &path]);
        assert_eq!(out.status.code(), Some(1), "{cmd}");
        let err = text(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{cmd}: one line: {err}");
        assert!(
            err.contains(&newer_median().to_string()) && err.contains(&FORMAT_VERSION.to_string()),
            "{cmd}: both versions: {err}"
        );
        assert!(err.contains("--force"), "{err}");
        report.push_str(&format!("{cmd}: {}", named(&err, &path)));
    }
    insta::assert_snapshot!("newer_median_refused", report);
    // Forced: read by this reader's rules, the same events as the base log.
    let forced = dump(&["print", "--force", &path]);
    assert!(forced.status.success(), "{}", text(&forced.stderr));
    assert_eq!(text(&forced.stdout), text(&dump(&["print", base.to_str().unwrap()]).stdout));
    for cmd in ["stats", "check"] {
        let forced = dump(&[cmd, "--force", &path]);
        let base_out = dump(&[cmd, base.to_str().unwrap()]);
        assert_eq!(forced.status.code(), base_out.status.code(), "{cmd} --force");
        assert!(!text(&forced.stdout).is_empty(), "{cmd} --force reads it");
    }
}

#[test]
fn another_major_is_refused_even_forced() {
    let path = log("other-major.evt", other_major());
    let mut report = String::new();
    for cmd in ["print", "stats", "check"] {
        for force in [false, true] {
            let args: Vec<&str> = if force { vec![cmd, "--force", &path] } else { vec![cmd, &path] };
            let out = dump(&args);
            assert_eq!(out.status.code(), Some(1), "{args:?}");
            assert!(out.stdout.is_empty(), "{args:?}: nothing read");
            let err = text(&out.stderr);
            assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
            assert!(err.contains(&other_major().to_string()), "{args:?}: names the log's version: {err}");
            assert!(
                err.contains(&format!("reads format {}.x", FORMAT_VERSION.major)),
                "{args:?}: names what it reads: {err}"
            );
            report.push_str(&format!("{}: {}", args.join(" ").replace(&path, "LOG"), named(&err, &path)));
        }
    }
    insta::assert_snapshot!("other_major_refused", report);
}
