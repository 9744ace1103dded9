//! `ship`: a recording's sealed segments to object storage (S3 and the stores that speak its
//! protocol), each once, under a key its header decides.
//!
//! A segment's key is `PREFIX/<recording id>/<segment index>.evt` (the index in six digits
//! at least, as the recorder names its files): the recording id is the header's property 1
//! and the index its segment property's (docs/FORMAT.md, "Header properties"), never the
//! file's name, so that two shippers of one directory, a shipper run again after a restart,
//! or a segment renamed meanwhile, all name the same object (docs/OUTPUT.md, "Shipped
//! segments"). Every object is written with a create-only put (`If-None-Match: *`), so no
//! object is ever written twice or replaced: a put that finds one there compares it with the
//! segment (its size and the SHA-256 stored in its metadata) instead.
//!
//! A segment is taken only once sealed: a file whose name ends in `.open` is still being
//! written (or was left by a killed writer) and is never taken. Before a segment is uploaded
//! it is read through the one opener and the ledger: a segment that is not whole gets the
//! verdict line every reader gives it (it is shipped all the same: the bucket then holds
//! what the disk held).
//! With `--delete`, the local file is removed only once the store holds an object of the same
//! size and SHA-256. With `--watch`, the directory is looked at again every `--interval`
//! until SIGTERM or Ctrl-C, which stop it after the segment being uploaded (a second one at
//! once); a store that cannot be reached meanwhile is tried again, less often, until it can.
//!
//! The state is the bucket's: nothing is kept between runs, and a run killed at any point
//! leaves either no object or a whole one (a put is atomic), which the next run finds.

mod store;

use crate::cli::ShipArgs;
use crate::log::DumpError;
use event_format::log::{self, Kind, OPEN_SUFFIX};
use event_format::wire::RecordingId;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};
use store::{Destination, Put, Remote, Scope, Store, StoreError};

/// The most one create-only put may carry: S3's limit for a single PUT (5 GiB).
const MOST_IN_ONE_PUT: u64 = 5 << 30;

/// The key of segment `index` of recording `recording` under `destination`'s prefix.
pub(crate) fn key_of(destination: &Destination, recording: RecordingId, index: u64) -> String {
    destination.key(&format!("{recording}/{index:06}.evt"))
}

/// `ship DIR s3://BUCKET/PREFIX`.
pub(crate) fn ship(args: &ShipArgs) -> Result<ExitCode, DumpError> {
    let destination = Destination::parse(&args.to).map_err(DumpError::new)?;
    if !args.dir.is_dir() {
        return Err(DumpError::new(format!(
            "{}: not a directory; give the directory the recorder writes its segments in",
            args.dir.display()
        )));
    }
    let store = Store::from_env(destination).map_err(|e| DumpError::new(e.line))?;
    store.check().map_err(|e| DumpError::new(e.line))?;
    let stop = watch_signals(&store);
    let mut shipper = Shipper { store: &store, args, tally: Tally::default(), settled: HashMap::new(), said: None };
    let interval = Duration::from_millis(args.interval.max(10));
    let mut pause = interval;
    let mut complete = true;
    loop {
        let outcome = shipper.pass(&stop).map(|whole| complete = whole);
        if !args.watch || stop.load(Ordering::Relaxed) {
            if let Err(e) = outcome {
                shipper.summary();
                return Err(DumpError::new(e.line));
            }
            break;
        }
        // A store that cannot be reached is asked again less and less often (up to a
        // minute), and said once until it answers again.
        match outcome {
            Ok(()) => {
                shipper.said = None;
                pause = interval;
            }
            Err(e) => {
                if shipper.said.as_deref() != Some(e.line.as_str()) {
                    eprintln!("event-dump: {}; trying again", e.line);
                    shipper.said = Some(e.line);
                }
                pause = (pause * 2).min(Duration::from_secs(60)).max(interval);
            }
        }
        let until = Instant::now() + pause;
        while Instant::now() < until && !stop.load(Ordering::Relaxed) {
            let slice = until.saturating_duration_since(Instant::now()).min(Duration::from_millis(100));
            store.block_on(async { tokio::time::sleep(slice).await });
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    shipper.summary();
    if !args.watch && !complete {
        return Err(DumpError::new("stopped by a signal before every segment was looked at; run it again to go on"));
    }
    Ok(if shipper.tally.failing.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// SIGTERM and SIGINT (Ctrl-C): the first sets the flag returned, and `ship` stops after the
/// segment it is uploading; the second ends the process at once (an upload cut short leaves
/// no object: a put is whole or nothing).
fn watch_signals(store: &Store) -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let runtime = store.runtime();
    // The handlers are installed now, in the runtime's context; the task that reads them runs
    // whenever the store waits on its runtime (a request, the pause between passes).
    let _context = runtime.enter();
    #[cfg(unix)]
    let signals = {
        use tokio::signal::unix::{SignalKind, signal};
        match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
            (Ok(term), Ok(int)) => Some((term, int)),
            _ => None,
        }
    };
    #[cfg(unix)]
    if let Some((mut term, mut int)) = signals {
        runtime.spawn(async move {
            for round in 0.. {
                let term = Box::pin(term.recv());
                let int = Box::pin(int.recv());
                futures_util::future::select(term, int).await;
                if round == 0 {
                    flag.store(true, Ordering::Relaxed);
                    eprintln!("event-dump: stopping after the segment being shipped (again to stop at once)");
                } else {
                    eprintln!("event-dump: stopped");
                    std::process::exit(130);
                }
            }
        });
    }
    #[cfg(not(unix))]
    runtime.spawn(async move {
        for round in 0.. {
            if tokio::signal::ctrl_c().await.is_err() {
                return;
            }
            if round == 0 {
                flag.store(true, Ordering::Relaxed);
                eprintln!("event-dump: stopping after the segment being shipped (again to stop at once)");
            } else {
                std::process::exit(130);
            }
        }
    });
    stop
}

/// What `ship` did, for its last line.
#[derive(Debug, Default)]
struct Tally {
    shipped: u64,
    already: u64,
    deleted: u64,
    /// Removed before they could be shipped (by the recorder's disk budget, or by hand).
    gone: u64,
    /// Still being written (`*.open`), at the last look.
    open: u64,
    /// Segments that failed at their last try, with when to try each again (`--watch`) and
    /// the wait before that.
    failing: BTreeMap<PathBuf, (Instant, Duration)>,
}

/// A file of the directory, and what it is.
#[derive(Debug)]
struct Found {
    path: PathBuf,
    name: String,
    len: u64,
    modified: Option<SystemTime>,
    what: What,
}

#[derive(Debug)]
enum What {
    /// A sealed segment: its recording and index.
    Sealed { recording: RecordingId, index: u64 },
    /// A segment still being written (`*.open`).
    Open,
    /// Not a segment of a recording (a ring file, a stream recorded without segments, not a
    /// log at all): passed over.
    Other,
    /// A stream whose header cannot be read: the opener's line.
    Unreadable(String),
}

/// A file settled: as it was then, and whether it was not a segment.
#[derive(Debug)]
struct Settled {
    len: u64,
    modified: Option<SystemTime>,
    other: bool,
}

struct Shipper<'a> {
    store: &'a Store,
    args: &'a ShipArgs,
    tally: Tally,
    /// Files settled (shipped and kept, found there, passed over), by path: their length and
    /// time when settled. A `--watch` pass leaves them alone while they stay as they were.
    settled: HashMap<PathBuf, Settled>,
    /// The store's failure last said, while it lasts.
    said: Option<String>,
}

impl Shipper<'_> {
    /// One look at the directory: every sealed segment not yet settled is shipped (or found
    /// there): `true`; `false` when a signal stopped it first; `Err` when the store fails as a
    /// whole, which ends the pass.
    fn pass(&mut self, stop: &AtomicBool) -> Result<bool, StoreError> {
        let found = self.scan().map_err(|line| StoreError { line, scope: Scope::Store })?;
        self.tally.open = found.iter().filter(|f| matches!(f.what, What::Open)).count() as u64;
        for f in &found {
            if stop.load(Ordering::Relaxed) {
                return Ok(false);
            }
            match &f.what {
                What::Open => {}
                What::Other => self.settle(f),
                What::Unreadable(line) => self.fail(f, line.clone()),
                &What::Sealed { recording, index } => {
                    let key = key_of(&self.store.destination, recording, index);
                    match self.one(f, &key) {
                        Ok(()) => {}
                        Err(e) if e.scope == Scope::Store => {
                            // The store's failure, not the segment's: it is tried again as soon
                            // as the store answers.
                            self.tally.failing.entry(f.path.clone()).or_insert((Instant::now(), Duration::ZERO));
                            return Err(e);
                        }
                        Err(e) => self.fail(f, e.line),
                    }
                }
            }
        }
        Ok(true)
    }

    /// The files of the directory not yet settled, segments in the order of their recording
    /// and index.
    fn scan(&mut self) -> Result<Vec<Found>, String> {
        let dir = &self.args.dir;
        let entries =
            std::fs::read_dir(dir).map_err(|e| format!("{}: cannot read the directory: {e}", dir.display()))?;
        let options = crate::log::options(self.args.force, false);
        let mut found = Vec::new();
        let mut seen = HashSet::new();
        let now = Instant::now();
        for entry in entries {
            let Ok(entry) = entry else { continue };
            let name = entry.file_name().to_string_lossy().into_owned();
            // Hidden files are a recorder's or a tool's own (a lock, a temporary name).
            if name.starts_with('.') || !entry.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            let (len, modified) = (meta.len(), meta.modified().ok());
            seen.insert(path.clone());
            if self.settled.get(&path).is_some_and(|s| (s.len, s.modified) == (len, modified)) {
                continue;
            }
            // A segment that failed waits its turn to be tried again.
            if self.tally.failing.get(&path).is_some_and(|(at, _)| *at > now) {
                continue;
            }
            let what = if name.ends_with(OPEN_SUFFIX) {
                What::Open
            } else {
                match log::kind(&path) {
                    Ok(Kind::Stream) => match log::segment_at(&path, options) {
                        Some(s) => What::Sealed { recording: s.recording, index: s.segment.index },
                        // Not a segment, or a header that cannot be read: the opener says which.
                        None => match log::open(&path, options) {
                            Err(e) => What::Unreadable(e.to_string()),
                            Ok(_) => What::Other,
                        },
                    },
                    Ok(_) => What::Other,
                    // Gone since the directory was read.
                    Err(_) => continue,
                }
            };
            found.push(Found { path, name, len, modified, what });
        }
        // What is no longer there needs no memory.
        self.settled.retain(|path, _| seen.contains(path));
        self.tally.failing.retain(|path, _| seen.contains(path));
        found.sort_by(|a, b| {
            let place = |f: &Found| match f.what {
                What::Sealed { recording, index } => (0, recording.0, index),
                _ => (1, [0; 16], 0),
            };
            place(a).cmp(&place(b)).then_with(|| a.name.cmp(&b.name))
        });
        Ok(found)
    }

    /// Ships the sealed segment `f` as `key`, or finds it there; deletes it here after, with
    /// `--delete`.
    fn one(&mut self, f: &Found, key: &str) -> Result<(), StoreError> {
        let url = self.store.destination.url(key);
        let object = |line: String| StoreError { line, scope: Scope::Object };
        let bytes = match std::fs::read(&f.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.tally.gone += 1;
                eprintln!("event-dump: {}: removed before it could be shipped", f.name);
                return Ok(());
            }
            Err(e) => return Err(object(format!("{}: cannot read: {e}", f.path.display()))),
        };
        let len = bytes.len() as u64;
        if len > MOST_IN_ONE_PUT {
            return Err(object(format!(
                "{}: {len} bytes, more than one create-only put may carry (5 GiB); record smaller segments (EVENT_ROTATE)",
                f.name
            )));
        }
        let sha256 = sha256(&bytes);
        // What is there already: a segment shipped before (by this shipper before a restart,
        // or by another), which is compared; else the segment is put, create-only, and a put
        // that finds one there after all (another shipper's, just now) compares it too.
        let mut there = self.store.head(key)?;
        let mut created = false;
        if there.is_none() {
            // What the ledger finds wrong in it is said; it is shipped all the same.
            if let Some(line) = verdict(&f.path, self.args.force) {
                eprintln!("event-dump: {line}");
            }
            match self.store.put_new(key, bytes::Bytes::from(bytes), &sha256)? {
                Put::Created => created = true,
                Put::Exists => there = self.store.head(key)?,
            }
        }
        if created && !self.args.delete {
            self.tally.shipped += 1;
            self.tally.failing.remove(&f.path);
            self.say(format!("shipped {} as {url} ({len} bytes)", f.name));
            self.settle(f);
            return Ok(());
        }
        if created {
            // Deleted here only once the store is seen to hold it.
            there = self.store.head(key)?;
        }
        let same = match there {
            None => return Err(object(format!("{url}: not there right after it was written"))),
            Some(Remote { size, .. }) if size != len => {
                return Err(object(format!(
                    "{url} holds {size} bytes and {} has {len}: two different segments claim one recording id and \
                     index",
                    f.name
                )));
            }
            Some(Remote { sha256: Some(theirs), .. }) => theirs == sha256,
            // Not written by `ship` (no SHA-256 in its metadata): its bytes are compared.
            Some(Remote { sha256: None, .. }) => self::sha256(&self.store.get(key)?) == sha256,
        };
        if !same {
            return Err(object(format!(
                "{url} holds other bytes than {} (as many): two different segments claim one recording id and index",
                f.name
            )));
        }
        let done = if created {
            self.tally.shipped += 1;
            format!("shipped {} as {url} ({len} bytes)", f.name)
        } else {
            self.tally.already += 1;
            format!("already there: {} as {url}", f.name)
        };
        self.tally.failing.remove(&f.path);
        if !self.args.delete {
            self.say(done);
            self.settle(f);
            return Ok(());
        }
        match std::fs::remove_file(&f.path) {
            Ok(()) => {
                self.tally.deleted += 1;
                self.say(format!("{done}; deleted here"));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.say(format!("{done}; already gone here")),
            Err(e) => return Err(object(format!("{}: shipped, but cannot delete it: {e}", f.path.display()))),
        }
        Ok(())
    }

    /// `f` needs nothing more until it changes.
    fn settle(&mut self, f: &Found) {
        let other = matches!(f.what, What::Other);
        self.settled.insert(f.path.clone(), Settled { len: f.len, modified: f.modified, other });
    }

    /// `f` could not be shipped, for the reason `line`: said (once while it keeps failing,
    /// in a `--watch`), and tried again after 5 s, then less and less often (up to every
    /// five minutes), as a conflict may last.
    fn fail(&mut self, f: &Found, line: String) {
        let now = Instant::now();
        match self.tally.failing.get_mut(&f.path) {
            Some((at, wait)) if !wait.is_zero() => {
                *wait = (*wait * 2).min(Duration::from_secs(300));
                *at = now + *wait;
            }
            _ => {
                let wait = Duration::from_secs(5);
                self.tally.failing.insert(f.path.clone(), (now + wait, wait));
                eprintln!("event-dump: {line}; not shipped");
                return;
            }
        }
        if !self.args.watch {
            eprintln!("event-dump: {line}; not shipped");
        }
    }

    /// A line of what was done, on stdout.
    fn say(&self, line: String) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    /// The last line: what was shipped, found there, left and failed.
    fn summary(&self) {
        let t = &self.tally;
        let mut line = format!(
            "{} shipped, {} already there, {} still being written (not taken), {} failed",
            t.shipped,
            t.already,
            t.open,
            t.failing.len()
        );
        if self.args.delete {
            line.push_str(&format!("; {} deleted here", t.deleted));
        }
        if t.gone > 0 {
            line.push_str(&format!("; {} removed before they could be shipped", t.gone));
        }
        let passed_over = self.settled.values().filter(|s| s.other).count();
        if passed_over > 0 {
            line.push_str(&format!("; {passed_over} other files passed over (not segments)"));
        }
        self.say(line);
    }
}

/// The line every reader closes with for the sealed segment at `path` when it is not whole
/// (the ledger's one verdict, [`crate::log::not_whole_line`]), or the one line of why it
/// cannot be read; `None` for a whole segment.
fn verdict(path: &Path, force: bool) -> Option<String> {
    let shown = path.display().to_string();
    let mut log = match log::open(path, crate::log::options(force, false)) {
        Ok(log) => log,
        Err(e) => return Some(format!("{shown}: {e}")),
    };
    let findings = crate::log::ledger_of(&mut log).findings(|| false);
    crate::log::not_whole_line(&shown, &findings)
}

/// The SHA-256 of `bytes`, in hex.
fn sha256(bytes: &[u8]) -> String {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_recording_id_and_the_index() {
        let d = Destination::parse("s3://fleet/traces").unwrap();
        let id = RecordingId([0xab; 16]);
        assert_eq!(key_of(&d, id, 3), format!("traces/{}/000003.evt", "ab".repeat(16)));
        assert_eq!(key_of(&d, id, 12_345_678), format!("traces/{}/12345678.evt", "ab".repeat(16)));
    }
}
