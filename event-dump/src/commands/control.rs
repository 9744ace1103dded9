//! `control`: shows or changes what a running program records, through the control page of
//! its ring file (docs/FORMAT.md, "Control protocol"), and the request itself ([`send_request`]):
//! it writes to the file and waits for the program's answer, so it lives here, beside its
//! one caller, and not in event-format, which does no I/O of its own. Why the writes and
//! reads here see the program's mapping is event-format's `ring` module's "Memory" section.

use super::{Result, write_all};
use crate::cli::ControlArgs;
use crate::log::DumpError;
use event_format::decode::DecodeOptions;
use event_format::log::WriterLiveness;
use event_format::raw::control_at;
use event_format::ring::{REPLY_MAX, REQUEST_MAX, ROTATE_REQUEST, RingError, RingReader, STATE_RECORDING};
use std::fmt;
use std::fs::File;
use std::io;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Why a control request got no answer.
#[derive(Debug)]
pub enum ControlError {
    /// The request is longer than the control page holds.
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// The file is not a ring file this reader reads.
    Ring(RingError),
    /// The program has stopped recording: the file is closed, nobody answers.
    NotRecording,
    /// The program died without closing the file: its process is gone (or, where that
    /// cannot be asked, its heartbeat stopped), nobody answers.
    Dead {
        /// The writer's process id, as the file names it.
        pid: u64,
    },
    /// The program did not answer in time (it died, or is stopped).
    TimedOut(Duration),
    /// Reading or writing the file failed.
    Io(io::Error),
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControlError::TooLong { len } => write!(f, "the request is {len} bytes; the most is {REQUEST_MAX}"),
            ControlError::Ring(e) => e.fmt(f),
            ControlError::NotRecording => f.write_str("its program is not recording any more (the file is closed)"),
            ControlError::Dead { pid } => write!(
                f,
                "its program (pid {pid}) is not running any more: it ended without closing the file; `event-dump` reads what it recorded"
            ),
            ControlError::TimedOut(timeout) => {
                write!(f, "the program did not answer within {} ms; is it still running?", timeout.as_millis())
            }
            ControlError::Io(e) => write!(f, "cannot read or write the ring file: {e}"),
        }
    }
}

impl std::error::Error for ControlError {}

impl From<io::Error> for ControlError {
    fn from(e: io::Error) -> ControlError {
        ControlError::Io(e)
    }
}

/// Sends a control request to the program writing the ring file `file` (opened for reading
/// and writing) and waits up to `timeout` for its answer: whether it applied the request,
/// and its reply (the selection now, or why it refused). The request is `text` in the
/// `EVENT_CONTROL` grammar, applied to the program's running selection; an empty `text`
/// changes nothing, and a program whose runtime reads it so answers with its selection (an
/// older one refuses it). A program that has closed the file or died is an error at once,
/// and so is one that dies while the request waits. One monitor at a time: two at once may
/// see each other's replies.
pub fn send_request(file: &File, text: &str, timeout: Duration) -> std::result::Result<(bool, String), ControlError> {
    if text.len() > REQUEST_MAX {
        return Err(ControlError::TooLong { len: text.len() });
    }
    let reader = RingReader::open(file, DecodeOptions::default()).map_err(ControlError::Ring)?;
    let (o, base, pid) = (reader.layout().order, reader.layout().control(), reader.layout().pid);
    // Whether anybody can answer: the file open for recording, its writer running (as
    // `check` and `follow` tell: its lock, else its heartbeat).
    let answerable = || -> std::result::Result<(), ControlError> {
        let status = reader.status()?;
        if status.state != STATE_RECORDING {
            return Err(ControlError::NotRecording);
        }
        if !WriterLiveness::of_file(file, Some(status.heartbeat_ns)).is_running() {
            return Err(ControlError::Dead { pid });
        }
        Ok(())
    };
    answerable()?;
    let seq = reader.read_u64(base + control_at::REQUEST_SEQ as u64)? + 1;
    write_at(file, text.as_bytes(), base + control_at::REQUEST as u64)?;
    let mut b = [0u8; 8];
    o.put_u32(&mut b, text.len() as u32);
    write_at(file, &b[..4], base + control_at::REQUEST_LEN as u64)?;
    // Between two system calls, a store barrier: the program that sees the new sequence
    // number sees the text (event-format's `ring` module docs, "Memory").
    std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
    o.put_u64(&mut b, seq);
    write_at(file, &b, base + control_at::REQUEST_SEQ as u64)?;
    let deadline = Instant::now() + timeout;
    while reader.read_u64(base + control_at::ACK_SEQ as u64)? != seq {
        if Instant::now() >= deadline {
            return Err(ControlError::TimedOut(timeout));
        }
        answerable()?;
        std::thread::sleep(Duration::from_millis(5));
    }
    // A load barrier: the reply was written before the acknowledgement.
    std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
    let status = reader.read_u32(base + control_at::STATUS as u64)?;
    let len = (reader.read_u32(base + control_at::REPLY_LEN as u64)? as usize).min(REPLY_MAX);
    let mut reply = vec![0u8; len];
    event_format::ring::ReadAt::read_exact_at(file, &mut reply, base + control_at::REPLY as u64)?;
    Ok((status == 0, String::from_utf8_lossy(&reply).into_owned()))
}

/// Writes `bytes` at `offset` of `file`.
#[cfg(unix)]
fn write_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
}

/// Writes `bytes` at `offset` of `file`: only where positioned writes are known to reach
/// the program's mapping.
#[cfg(not(unix))]
fn write_at(_file: &File, _bytes: &[u8], _offset: u64) -> io::Result<()> {
    Err(io::Error::other("control needs a Unix system"))
}

/// `control`: sends the request and prints the program's answer; without `--enable` and
/// `--disable`, an empty request, which changes nothing, and the selection it answers.
pub(crate) fn control(args: &ControlArgs) -> Result<ExitCode> {
    let shown = args.ring.display().to_string();
    let mut items: Vec<String> = Vec::new();
    for e in &args.enable {
        items.extend(e.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned));
    }
    for d in &args.disable {
        items.extend(d.split(',').map(str::trim).filter(|s| !s.is_empty()).map(|s| format!("-{s}")));
    }
    if args.rotate && !items.is_empty() {
        return Err(DumpError::new(
            "--rotate is a request of its own; give --enable and --disable in another `control` call".to_owned(),
        ));
    }
    let mut text = if args.rotate { ROTATE_REQUEST.to_owned() } else { items.join(" ") };
    if let Some(limits) = &args.limit {
        text = format!("{} {}", event_format::ring::LIMIT_REQUEST, limits.trim()).trim_end().to_owned();
    }
    let snapshot = match &args.snapshot {
        Some(out) => {
            // The program writes it, from its own working directory: the path is made whole here.
            let out = std::path::absolute(out)
                .map_err(|e| DumpError::new(format!("{}: cannot make the path absolute: {e}", out.display())))?;
            text = format!("{}{}", event_format::ring::SNAPSHOT_REQUEST, out.display());
            Some(out)
        }
        None => None,
    };
    let file = std::fs::OpenOptions::new().read(true).write(true).open(&args.ring).map_err(|e| {
        DumpError::new(format!(
            "{shown}: cannot open for writing: {e}; only the ring file's owner can change what its program records"
        ))
    })?;
    let began = Instant::now();
    let answer = send_request(&file, &text, Duration::from_millis(args.timeout));
    match answer {
        Ok((true, wrote)) if snapshot.is_some() => {
            write_all(&format!("snapshot written: {wrote} (answered in {} ms)\n", began.elapsed().as_millis()))?;
            Ok(ExitCode::SUCCESS)
        }
        Ok((false, why)) if snapshot.is_some() => Err(DumpError::new(format!("{shown}: no snapshot: {why}"))),
        Ok((true, now)) if args.limit.is_some() => {
            write_all(&format!("limits: {now} (answered in {} ms)\n", began.elapsed().as_millis()))?;
            Ok(ExitCode::SUCCESS)
        }
        Ok((false, why)) if args.limit.is_some() => {
            Err(DumpError::new(format!("{shown}: the program refused the limits: {why}")))
        }
        Ok((true, now)) if text.is_empty() => {
            write_all(&format!("recording: {now}\n"))?;
            Ok(ExitCode::SUCCESS)
        }
        Ok((false, _)) if text.is_empty() => Err(DumpError::new(format!(
            "{shown}: the program did not say what it records (its event-runtime predates the empty request); change something with --enable or --disable to see it"
        ))),
        Ok((true, now)) if args.rotate => {
            write_all(&format!("{now} (answered in {} ms)\n", began.elapsed().as_millis()))?;
            Ok(ExitCode::SUCCESS)
        }
        Ok((false, why)) if args.rotate => Err(DumpError::new(format!("{shown}: the program did not rotate: {why}"))),
        Ok((true, now)) => {
            write_all(&format!("now recording: {now} (answered in {} ms)\n", began.elapsed().as_millis()))?;
            Ok(ExitCode::SUCCESS)
        }
        Ok((false, why)) => Err(DumpError::new(format!("{shown}: the program refused `{text}`: {why}"))),
        Err(e) => Err(DumpError::new(format!("{shown}: {e}"))),
    }
}
