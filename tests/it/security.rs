//! What SECURITY.md promises about `event-dump control`: it changes what a program records
//! only through a live ring file of a layout and stream version it reads; anything else (an
//! event stream, random bytes, an empty file, a ring file of another major or a newer median
//! version, a closed ring file, a dead program's) is refused with one line and exit code 1,
//! and a file refused before the request is written is left unchanged.

use crate::common::{DUMP, child, start_ready};
use event_format::ring::{Layout, RingReader};
use std::path::Path;
use std::process::{Child, Command, Output};

fn dir(name: &str) -> crate::common::Scratch {
    crate::common::dir("security", name)
}

/// A child process, killed when dropped (so that a failed assertion leaves none running).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A `recorder-child` recording into `ring`, paced, started and ready.
fn recording(mode: &[&str]) -> Running {
    Running(start_ready(child(mode, &[("EVENT_BUFSIZE", "256k")])))
}

fn control(path: &Path) -> Output {
    Command::new(DUMP)
        .args(["control", path.to_str().unwrap(), "--disable", "Object", "--timeout", "300"])
        .output()
        .unwrap()
}

/// `bytes` with the ring layout's version replaced (its checksum fixed).
fn with_layout_version(bytes: &[u8], major: u16, median: u16) -> Vec<u8> {
    let mut layout = Layout::decode(bytes, false).unwrap();
    layout.version.major = major;
    layout.version.median = median;
    // `major.median.0`: the version a newer layout would start at (this one may have a minor).
    layout.version.minor = 0;
    let mut out = bytes.to_vec();
    let fixed = layout.encode();
    out[..fixed.len()].copy_from_slice(&fixed);
    out
}

/// `bytes` with the embedded stream header's format version replaced by `major`.0.0 (its
/// CRC fixed).
fn with_stream_major(bytes: &[u8], major: u16) -> Vec<u8> {
    let layout = Layout::decode(bytes, false).unwrap();
    let (at, len) = (layout.stream_header() as usize, layout.header_len as usize);
    let mut out = bytes.to_vec();
    let header = &mut out[at..at + len];
    let o = layout.order;
    o.put_u16(&mut header[10..], major);
    o.put_u16(&mut header[12..], 0);
    o.put_u16(&mut header[14..], 0);
    let crc = crc32fast::hash(&header[..len - 4]);
    o.put_u32(&mut header[len - 4..], crc);
    out
}

#[test]
fn control_refuses_what_is_not_a_live_ring_file_of_a_version_it_reads() {
    let d = dir("refused");
    let live = d.join("live.ring");
    let _child = recording(&["ring", live.to_str().unwrap(), "1", "100"]);
    let ring = std::fs::read(&live).unwrap();
    let mut random = vec![0u8; 1 << 16];
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for b in &mut random {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    let v = event_format::ring::RING_VERSION;
    let stream = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/data/v1.0.0/tour-le.evt")).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("an event stream", stream),
        ("random bytes", random),
        ("an empty file", Vec::new()),
        ("a ring file of another major layout", with_layout_version(&ring, v.major + 1, 0)),
        ("a ring file of a newer median layout", with_layout_version(&ring, v.major, v.median + 1)),
        (
            "a ring file holding a stream of another major",
            with_stream_major(&ring, event_format::wire::FORMAT_VERSION.major + 1),
        ),
    ];
    let mut report = String::new();
    for (name, bytes) in &cases {
        let path = d.join("refused");
        std::fs::write(&path, bytes).unwrap();
        let out = control(&path);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{name}: one line: {stderr}");
        assert_eq!(&std::fs::read(&path).unwrap(), bytes, "{name}: the file is left as it was");
        // Versions by what they are, so that the snapshot outlives a version bump.
        let (f, r) = (event_format::wire::FORMAT_VERSION, v);
        let stderr = stderr
            .replace(path.to_str().unwrap(), "PATH")
            .replace(&format!("{}.{}.x", f.major, f.median), "STREAM_MAJOR.STREAM_MEDIAN.x")
            .replace(&format!("format {}.x", f.major), "format STREAM_MAJOR.x")
            .replace(&format!("format {}.x", f.major + 1), "format STREAM_MAJOR+1.x")
            .replace(&format!("format {}.0.0", f.major + 1), "format STREAM_MAJOR+1.0.0")
            .replace(&format!("it reads {}.{}.x", r.major, r.median), "it reads RING_MAJOR.RING_MEDIAN.x")
            .replace(&format!("layout {}.0.0", r.major + 1), "layout RING_MAJOR+1.0.0")
            .replace(&format!("layout {}.{}.0", r.major, r.median + 1), "layout RING_MAJOR.RING_MEDIAN+1.0");
        report.push_str(&format!("{name}: {stderr}"));
    }
    insta::assert_snapshot!(report);
    // The live ring file itself is accepted: the refusals above are not the test's doing.
    let out = control(&live);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("now recording: "));
}

#[test]
fn control_refuses_a_closed_ring_file_and_gives_up_on_a_dead_program() {
    let d = dir("closed-dead");
    // Closed: the program stopped its recording and exited.
    let closed = d.join("closed.ring");
    let mut c = recording(&["follow", closed.to_str().unwrap(), "1", "100"]);
    assert!(c.0.wait().unwrap().success());
    let before = std::fs::read(&closed).unwrap();
    let out = control(&closed);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("its program is not recording any more"), "{stderr}");
    assert_eq!(std::fs::read(&closed).unwrap(), before, "a closed file is left as it was");
    // Dead: killed while recording; nobody answers, and control says so at once (its lock is
    // free), without waiting for its timeout.
    let dead = d.join("dead.ring");
    drop(recording(&["ring", dead.to_str().unwrap(), "1", "100"])); // SIGKILL
    assert!(RingReader::open(std::fs::File::open(&dead).unwrap(), Default::default()).is_ok());
    let out = control(&dead);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("is not running any more: it ended without closing the file"), "{stderr}");
}
