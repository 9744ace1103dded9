//! `ship` (issue 44): a recording's sealed segments to object storage, against moto's S3
//! server on 127.0.0.1 and read back with AWS's own SDK (boto3, through `ship_s3.py`): every
//! sealed segment once, under the key its header decides, with its bytes; never a segment
//! still being written; a second shipper, two at once, or one told by the store that a key is
//! free just before another's put lands, add nothing; a put the store fails once is tried
//! again; a shipper killed mid-run (a real child process, SIGKILL) is resumed by the next run,
//! which deletes here only what the store holds; `--watch` ships segments as a running
//! recording seals them, waits out a store it cannot reach, and stops cleanly on SIGTERM; a
//! damaged segment gets the verdict line `print` gives it; each error a user meets is one line; and a
//! reader given an `s3://` log (an export an `s3://` destination) says the one command that
//! fetches it (copies it) instead.
//!
//! Without moto and boto3 (`python3 -m pip install 'moto[server]' boto3`) the tests that need
//! a store are skipped with a line saying so, unless `EVENT_REQUIRE_S3` is 1 (CI, `.ci/run`).

use crate::common::{self, DUMP, SERIAL, damaged_copy, stderr, stdout};
use event_format::log::{OpenOptions, segment_at};
use event_runtime::{Recorder, Recording, Rotate};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const SCRIPT: &str = include_str!("ship_s3.py");

/// Whether moto's server and boto3 are here; when not, says so past the harness's capture,
/// or fails when `EVENT_REQUIRE_S3` is 1.
fn have_moto() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import moto.server, boto3, flask"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("EVENT_REQUIRE_S3").as_deref() != Ok("1"),
            "moto not found (python3 -m pip install 'moto[server]' boto3), and EVENT_REQUIRE_S3=1 requires it"
        );
        let _ = writeln!(std::io::stderr(), "skipped: moto not found (python3 -m pip install 'moto[server]' boto3)");
    }
    ok
}

/// A child process serving on `port` (moto, or the proxy), ended when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Waits until something accepts connections on `port`.
fn wait_for(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on port {port} after a minute");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// moto's S3 server on a port of its own.
fn moto() -> Server {
    moto_with(&[])
}

/// [`moto`] with `env` set.
fn moto_with(env: &[(&str, &str)]) -> Server {
    let port = free_port();
    let child = Command::new("python3")
        .args(["-m", "moto.server", "-p", &port.to_string()])
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server { child, port };
    wait_for(port);
    server
}

/// `ship_s3.py`'s proxy in front of `upstream`, with `flags`.
fn proxy(upstream: &Server, flags: &[&str]) -> Server {
    proxy_on(free_port(), upstream, flags)
}

/// [`proxy`] on `port`.
fn proxy_on(port: u16, upstream: &Server, flags: &[&str]) -> Server {
    let mut child = Command::new("python3")
        .args(["-c", SCRIPT, "proxy", &port.to_string(), &upstream.port.to_string()])
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut ready).unwrap();
    assert_eq!(ready.trim(), "ready");
    Server { child, port }
}

/// `ship_s3.py ARGS`' output; it must succeed.
fn py(args: &[&str]) -> String {
    let out = Command::new("python3").args(["-c", SCRIPT]).args(args).output().unwrap();
    assert!(out.status.success(), "ship_s3.py {args:?}: {}", stderr(&out));
    stdout(&out)
}

/// The objects under `prefix` of `bucket`, by key: size, SHA-256 of their bytes, metadata,
/// time and ETag.
fn objects(store: &Server, bucket: &str, prefix: &str) -> BTreeMap<String, Json> {
    let text = py(&["ls", &store.url(), bucket, prefix]);
    serde_json::from_str(text.trim()).unwrap()
}

/// `event-dump ship ARGS` with the store at `url` and the test's credentials, none of the
/// caller's AWS settings.
fn ship(url: &str, args: &[&str]) -> Command {
    let mut command = Command::new(DUMP);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("AWS_") {
            command.env_remove(name);
        }
    }
    command
        .arg("ship")
        .args(args)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", url);
    command
}

fn ship_ok(url: &str, args: &[&str]) -> Output {
    let out = ship(url, args).output().unwrap();
    assert!(out.status.success(), "ship {args:?}: {}{}", stdout(&out), stderr(&out));
    out
}

/// The last line of `ship`'s output: its counts.
fn summary(out: &Output) -> String {
    stdout(out).lines().last().unwrap_or_default().to_owned()
}

/// A recording of segments in `dir` (`trace.evt`, 1 KiB blocks), which this thread records
/// into; the caller holds [`SERIAL`].
fn record(dir: &Path) -> Recording {
    record_as(dir, "trace.evt")
}

/// [`record`] into `dir/NAME`.
fn record_as(dir: &Path, name: &str) -> Recording {
    let rotate = Rotate { size: Some(64 << 20), age: None };
    Recorder::new().file(dir.join(name)).block_size(1024).rotate(rotate).start().unwrap()
}

/// Records `n` events into the recording.
fn events(n: u64) {
    for i in 0..n {
        event!(ObjectAlloc, 0x1000usize, 0x2000 + i as usize, i, 3u32);
    }
}

/// The sealed segments of `dir` (not `*.open`), by the key `ship` gives each under `prefix`:
/// `PREFIX/<recording id>/<index>.evt`, both read from the segment's header; with each one's
/// path and SHA-256.
fn sealed(dir: &Path, prefix: &str) -> BTreeMap<String, (PathBuf, String)> {
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().ends_with(".open") {
            continue;
        }
        let Some(segment) = segment_at(&path, OpenOptions::default()) else { continue };
        let key = format!("{prefix}/{}/{:06}.evt", segment.recording, segment.segment.index);
        found.insert(key, (path.clone(), sha256(&std::fs::read(&path).unwrap())));
    }
    found
}

fn sha256(bytes: &[u8]) -> String {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Every key of `want` is in the store with the bytes (and the metadata SHA-256) of its
/// segment, and nothing else is under the prefix.
fn holds_exactly(store: &Server, bucket: &str, prefix: &str, want: &BTreeMap<String, (PathBuf, String)>) {
    let got = objects(store, bucket, prefix);
    assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "the keys under {prefix}");
    for (key, (path, sha)) in want {
        assert_eq!(got[key]["sha256"].as_str(), Some(sha.as_str()), "{key}: the bytes of {}", path.display());
        assert_eq!(got[key]["meta"]["sha256"].as_str(), Some(sha.as_str()), "{key}: its metadata");
    }
}

/// The number before `what` in `line` (`3 shipped`).
fn count(line: &str, what: &str) -> u64 {
    let before = &line[..line.find(what).unwrap_or_else(|| panic!("no `{what}` in {line:?}"))];
    before.split(|c: char| !c.is_ascii_digit()).rfind(|s| !s.is_empty()).unwrap().parse().unwrap()
}

#[test]
fn every_sealed_segment_once_and_never_one_still_being_written() {
    if !have_moto() {
        return;
    }
    let store = moto();
    py(&["mb", &store.url(), "fleet"]);
    // The store honours the create-only put that `ship` makes (If-None-Match: *).
    assert_eq!(py(&["create-only", &store.url(), "fleet"]).trim(), "honoured");
    let scratch = common::dir("ship-once");
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let recording = record(&scratch);
    for _ in 0..3 {
        events(500);
        recording.rotate().unwrap();
    }
    events(500);
    let dir = scratch.to_str().unwrap();
    // Segments 0, 1 and 2 are sealed; 3 is being written (`trace.000003.evt.open`).
    let first = sealed(&scratch, "traces");
    assert_eq!(first.len(), 3);
    let out = ship_ok(&store.url(), &[dir, "s3://fleet/traces/"]);
    assert_eq!(summary(&out), "3 shipped, 0 already there, 1 still being written (not taken), 0 failed");
    holds_exactly(&store, "fleet", "traces", &first);
    let before = objects(&store, "fleet", "traces");

    // A second shipper (or this one after a restart) adds nothing, whatever the files are
    // called now: keys are the headers'.
    let (renamed, _) = &first.values().nth(1).unwrap();
    std::fs::rename(renamed, scratch.join("renamed-by-hand.evt")).unwrap();
    let out = ship_ok(&store.url(), &[dir, "s3://fleet/traces"]);
    assert_eq!(summary(&out), "0 shipped, 3 already there, 1 still being written (not taken), 0 failed");
    assert_eq!(objects(&store, "fleet", "traces"), before, "nothing written again");

    // Sealed at the stop, the last segment is shipped in its turn.
    recording.stop().unwrap();
    let all = sealed(&scratch, "traces");
    assert_eq!(all.len(), 4);
    let out = ship_ok(&store.url(), &[dir, "s3://fleet/traces"]);
    assert_eq!(summary(&out), "1 shipped, 3 already there, 0 still being written (not taken), 0 failed");
    holds_exactly(&store, "fleet", "traces", &all);

    // Fetched back (as `aws s3 cp --recursive s3://fleet/traces/ID/ DIR` does), the
    // recording reads as one whole log with the events recorded.
    let id = all.keys().next().unwrap().split('/').nth(1).unwrap().to_owned();
    let back = common::dir("ship-once-back");
    py(&["fetch", &store.url(), "fleet", &format!("traces/{id}/"), back.to_str().unwrap()]);
    let check = common::run(&["check", back.to_str().unwrap()]);
    assert!(check.status.success(), "{}{}", stdout(&check), stderr(&check));
    let (here, there) = (common::run(&["print", dir]), common::run(&["print", back.to_str().unwrap()]));
    assert!(here.status.success() && !here.stdout.is_empty());
    assert_eq!(stdout(&there), stdout(&here));
}

#[test]
fn shippers_at_once_and_a_failing_store_write_each_segment_once() {
    if !have_moto() {
        return;
    }
    let store = moto();
    py(&["mb", &store.url(), "fleet"]);
    let scratch = common::dir("ship-at-once");
    {
        let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let recording = record(&scratch);
        for _ in 0..7 {
            events(300);
            recording.rotate().unwrap();
        }
        recording.stop().unwrap();
    }
    let dir = scratch.to_str().unwrap();
    let want = sealed(&scratch, "both");
    assert_eq!(want.len(), 8);

    // Two shippers at once: between them, each segment is shipped once and found there once.
    let spawn = || ship(&store.url(), &[dir, "s3://fleet/both"]).stdout(Stdio::piped()).spawn().unwrap();
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success() && b.status.success(), "{}{}", stderr(&a), stderr(&b));
    let (a, b) = (summary(&a), summary(&b));
    assert_eq!(count(&a, " shipped") + count(&b, " shipped"), 8, "{a} / {b}");
    assert_eq!(count(&a, " already there") + count(&b, " already there"), 8, "{a} / {b}");
    holds_exactly(&store, "fleet", "both", &want);

    // Half shipped by a first shipper; then a second is told by the store that every key is
    // free just before its put (as when a third's put lands between its look and its put),
    // and its first put of each key fails (503): its create-only puts find the first
    // shipper's objects and write nothing over them, and the others are put on a second try.
    let want = sealed(&scratch, "race");
    let early: Vec<PathBuf> = want.values().take(4).map(|(p, _)| p.clone()).collect();
    let half = common::dir("ship-at-once-half");
    for p in &early {
        std::fs::copy(p, half.join(p.file_name().unwrap())).unwrap();
    }
    ship_ok(&store.url(), &[half.to_str().unwrap(), "s3://fleet/race"]);
    let before = objects(&store, "fleet", "race");
    let racing = proxy(&store, &["race-head", "fail-put"]);
    let out = ship_ok(&racing.url(), &[dir, "s3://fleet/race"]);
    assert_eq!(summary(&out), "4 shipped, 4 already there, 0 still being written (not taken), 0 failed");
    holds_exactly(&store, "fleet", "race", &want);
    let after = objects(&store, "fleet", "race");
    for (key, object) in &before {
        assert_eq!(&after[key], object, "{key} was written once");
    }
}

#[test]
fn a_killed_shipper_is_resumed_and_deletes_only_what_the_store_holds() {
    if !have_moto() {
        return;
    }
    let store = moto();
    py(&["mb", &store.url(), "fleet"]);
    let scratch = common::dir("ship-killed");
    {
        let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let recording = record(&scratch);
        for _ in 0..5 {
            events(300);
            recording.rotate().unwrap();
        }
        recording.stop().unwrap();
    }
    let dir = scratch.to_str().unwrap();
    let want = sealed(&scratch, "killed");
    assert_eq!(want.len(), 6);
    // Each put's answer comes a second after the store wrote the object: the shipper is
    // killed while it waits for one, once it has shipped (and deleted) the first segment.
    let slow = proxy(&store, &["slow-put=1"]);
    let mut child = ship(&slow.url(), &[dir, "s3://fleet/killed", "--delete"]).stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next().unwrap().unwrap();
    assert!(line.starts_with("shipped ") && line.ends_with("; deleted here"), "{line}");
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "killed mid-run, not finished: {status}");
    let shipped = objects(&store, "fleet", "killed").len();
    assert!((1..6).contains(&shipped), "{shipped} of 6 objects before the kill");
    let left: Vec<_> = want.values().filter(|(p, _)| p.exists()).collect();
    assert!(left.len() < 6 && left.len() >= 6 - shipped, "{} left here, {shipped} in the store", left.len());

    // The next run ships the rest, finds what the killed one put (deleted here or not), and
    // deletes here each segment the store holds.
    let out = ship_ok(&store.url(), &[dir, "s3://fleet/killed", "--delete"]);
    let line = summary(&out);
    assert_eq!(count(&line, " shipped") + count(&line, " already there"), left.len() as u64, "{line}");
    assert_eq!(count(&line, " deleted here"), left.len() as u64, "{line}");
    assert!(line.contains(" 0 failed"), "{line}");
    for (key, (path, _)) in &want {
        assert!(!path.exists(), "{key}: {} deleted once shipped", path.display());
    }
    holds_exactly(&store, "fleet", "killed", &want);
}

#[test]
fn watch_ships_segments_as_they_are_sealed_and_stops_on_sigterm() {
    if !have_moto() {
        return;
    }
    let store = moto();
    py(&["mb", &store.url(), "fleet"]);
    let scratch = common::dir("ship-watch");
    let dir = scratch.to_str().unwrap();
    let mut child = ship(&store.url(), &[dir, "s3://fleet/live", "--watch", "--interval", "100"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    // The line that says segment `index` was shipped.
    let shipped = |index: u64| {
        let suffix = format!("/{index:06}.evt");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let line = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).expect("a line");
            if line.starts_with("shipped ") && line.contains(&suffix) {
                return;
            }
            assert!(line.starts_with("shipped "), "{line}");
        }
    };
    {
        let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let recording = record(&scratch);
        for index in 0..3 {
            events(300);
            recording.rotate().unwrap();
            shipped(index);
        }
        events(300);
        recording.stop().unwrap();
        shipped(3);
    }
    // SIGTERM: a clean stop, with the counts.
    // SAFETY: `kill` with the pid of our own child, which has not been waited for.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = child.wait().unwrap();
    reader.join().unwrap();
    let last: Vec<String> = rx.try_iter().collect();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{status}: {err}");
    assert_eq!(
        last.last().map(String::as_str),
        Some("4 shipped, 0 already there, 0 still being written (not taken), 0 failed"),
        "{last:?}"
    );
    holds_exactly(&store, "fleet", "live", &sealed(&scratch, "live"));
}

#[test]
fn watch_waits_out_a_store_it_cannot_reach() {
    if !have_moto() {
        return;
    }
    let store = moto();
    py(&["mb", &store.url(), "fleet"]);
    let scratch = common::dir("ship-outage");
    let dir = scratch.to_str().unwrap();
    let front = proxy(&store, &[]);
    let port = front.port;
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let one = |name: &str| {
        let recording = record_as(&scratch, name);
        events(300);
        recording.stop().unwrap();
    };
    one("a.evt");
    let mut child = ship(&front.url(), &[dir, "s3://fleet/outage", "--watch", "--interval", "100"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = out.next().unwrap().unwrap();
    // The recording a line's key names (file names are the recorder's to choose).
    let id = |line: &str| {
        assert!(line.starts_with("shipped ") && line.contains("/000000.evt ("), "{line}");
        line.split("s3://fleet/outage/").nth(1).unwrap().split('/').next().unwrap().to_owned()
    };
    let a = id(&line);
    // The store goes away; a segment is sealed meanwhile.
    drop(front);
    one("b.evt");
    let line = err.next().unwrap().unwrap();
    assert!(
        line.contains(&format!("cannot reach http://127.0.0.1:{port}")) && line.ends_with("trying again"),
        "{line}"
    );
    // Back: the segment is shipped, without a word more on stderr.
    let _back = proxy_on(port, &store, &[]);
    let line = out.next().unwrap().unwrap();
    assert_ne!(id(&line), a, "{line}");
    // SAFETY: `kill` with the pid of our own child, which has not been waited for.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    assert!(child.wait().unwrap().success());
    assert_eq!(out.next().unwrap().unwrap(), "2 shipped, 0 already there, 0 still being written (not taken), 0 failed");
    let rest: Vec<String> = err.map_while(Result::ok).collect();
    assert_eq!(rest, ["event-dump: stopping after the segment being shipped (again to stop at once)"]);
    holds_exactly(&store, "fleet", "outage", &sealed(&scratch, "outage"));
}

#[test]
fn a_damaged_segment_gets_prints_verdict_and_is_shipped() {
    if !have_moto() {
        return;
    }
    let store = moto();
    py(&["mb", &store.url(), "fleet"]);
    let scratch = common::dir("ship-damaged");
    {
        let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let recording = record(&scratch);
        events(300);
        recording.stop().unwrap();
    }
    let damaged = common::dir("ship-damaged-copy");
    let first = sealed(&scratch, "d").into_values().next().unwrap().0;
    damaged_copy(&first, &damaged.join("trace.000000.evt"), 1);
    let out = ship_ok(&store.url(), &[damaged.to_str().unwrap(), "s3://fleet/d"]);
    // The one verdict: the line `print` closes with for the same file, word for word.
    let segment = damaged.join("trace.000000.evt");
    let printed = Command::new(DUMP).arg("print").arg(&segment).output().unwrap();
    let verdict = stderr(&printed).lines().find(|l| l.contains("NOT whole")).map(str::to_owned);
    let verdict = verdict.unwrap_or_else(|| panic!("print gives no verdict: {}", stderr(&printed)));
    assert!(verdict.contains(": NOT whole: ") && verdict.contains("1 damaged block"), "{verdict}");
    let err = stderr(&out);
    assert!(err.lines().any(|l| l == verdict), "ship does not say print's verdict {verdict:?}: {err}");
    assert_eq!(summary(&out), "1 shipped, 0 already there, 0 still being written (not taken), 0 failed");
    holds_exactly(&store, "fleet", "d", &sealed(&damaged, "d"));
}

/// One line on stderr, exit 1, and the line says `what`.
fn one_line(out: &Output, what: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(what), "{err}");
}

#[test]
fn each_error_is_one_line() {
    let scratch = common::dir("ship-errors");
    let dir = scratch.to_str().unwrap();
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    one_line(&ship(&nowhere, &[dir, "fleet/traces"]).output().unwrap(), "not an s3:// address");
    let file = scratch.join("file");
    std::fs::write(&file, b"x").unwrap();
    one_line(&ship(&nowhere, &[file.to_str().unwrap(), "s3://fleet"]).output().unwrap(), "not a directory");
    one_line(
        &ship(&nowhere, &[dir, "s3://fleet"]).output().unwrap(),
        &format!("cannot reach {nowhere}: connection refused"),
    );
    // No credentials: none in the environment, and no instance role to ask (the metadata
    // service disabled, or nothing answering where it is said to be).
    let bare = |extra: (&str, &str)| {
        ship(&nowhere, &[dir, "s3://fleet"])
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env(extra.0, extra.1)
            .output()
            .unwrap()
    };
    one_line(&bare(("AWS_EC2_METADATA_DISABLED", "true")), "no AWS credentials");
    one_line(&bare(("AWS_METADATA_ENDPOINT", &nowhere)), "no AWS credentials");
    let half = ship(&nowhere, &[dir, "s3://fleet"]).env_remove("AWS_SECRET_ACCESS_KEY").output().unwrap();
    one_line(&half, "AWS_SECRET_ACCESS_KEY is not");
    // A reader given an s3:// log, an export an s3:// destination: the command that fetches
    // (or copies), not a file named `s3:`.
    let id = "5f0c9a1e2b7d4c3a8e6f1029384756ab";
    for command in ["print", "check", "stats", "latency", "summary"] {
        one_line(
            &common::run(&[command, &format!("s3://fleet/traces/{id}/")]),
            &format!("fetch it first (`aws s3 cp --recursive s3://fleet/traces/{id}/ {id}/`), then read {id}/"),
        );
    }
    let export = common::run(&["export", "--to", "parquet", dir, "-o", "s3://fleet/dataset"]);
    one_line(&export, "then copy it (`aws s3 sync DIR/ s3://fleet/dataset`)");
    assert!(!Path::new("s3:").exists());
    if !have_moto() {
        return;
    }
    let store = moto();
    one_line(&ship(&store.url(), &[dir, "s3://missing/traces"]).output().unwrap(), "no bucket `missing`");
    // A store that checks credentials and knows none of these.
    let strict = moto_with(&[("INITIAL_NO_AUTH_ACTION_COUNT", "0")]);
    one_line(&ship(&strict.url(), &[dir, "s3://fleet"]).output().unwrap(), "does not know the access key");
}
