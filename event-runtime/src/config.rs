//! Settings from the environment: every variable of [`VARIABLES`]. A value that does not parse
//! is an error naming the variable, its value as given and what it accepts; it never silently
//! records nothing. The same check of a value given in code names the `Recorder` method
//! instead ([`Origin`]). Another `EVENT_*`
//! variable is one line of warning naming the closest setting (a misspelt `EVENT_FLIE` is
//! not ignored silently either), and the start goes on.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// What a recording does when its buffers are full (DTrace's buffer policies).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Streaming (the default): full blocks go to a writer thread that writes them to the
    /// sinks. When it falls behind and the pool of blocks runs dry, new events are refused
    /// and counted (or the recording thread waits, bounded, with [`Recorder::wait`]).
    ///
    /// [`Recorder::wait`]: crate::Recorder::wait
    Switch,
    /// Flight recorder: each thread keeps a ring of blocks, oldest overwritten; the sinks get
    /// the rings when the recording stops. With a ring file, the rings are the file.
    Ring,
    /// Record until the buffer is full, then refuse and count every later event.
    Fill,
}

impl Policy {
    /// Its name, as `EVENT_POLICY` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Switch => "switch",
            Policy::Ring => "ring",
            Policy::Fill => "fill",
        }
    }
}

/// What a recording does when its buffers are larger than the machine can hold (DTrace's
/// `bufresize` option).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BufResize {
    /// Lower the buffers to what fits, and say so in one line on stderr (the default).
    #[default]
    Auto,
    /// Refuse to start ([`StartError::BufferTooLarge`](crate::StartError::BufferTooLarge)).
    Manual,
}

/// Which signal handlers the recorder installs (`EVENT_SIGNALS`; docs/guide/guarantees.md).
/// It never takes SIGINT, SIGTERM or any signal a program handles: the host's signals are
/// the host's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Signals {
    /// The few that cannot change how the program reacts (the default): while a recording
    /// writes an event file, a handler for SIGABRT, SIGILL and SIGFPE, each only when its
    /// action is the default one at the start, which writes the signalled thread's partial
    /// block and the writer's queue to the event file and then lets the signal end the
    /// process as it would have; while a ring file is mapped, a SIGBUS handler that keeps a
    /// truncated ring file from killing the program and passes every other SIGBUS on to the
    /// handler it found.
    #[default]
    Default,
    /// No handler at all: an abort loses the event file's partial blocks, and a ring file
    /// truncated while recording kills the program with SIGBUS when a thread next writes it.
    None,
}

/// Where a setting's value came from: the environment (an `EVENT_*` variable) or the
/// program's code (a [`Recorder`](crate::Recorder) method).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Origin {
    /// An `EVENT_*` variable ([`Recorder::from_env`](crate::Recorder::from_env)).
    #[default]
    Environment,
    /// A [`Recorder`](crate::Recorder) method called by the program.
    Code,
}

/// A setting that is refused: its value does not parse, or does not go with another.
#[derive(Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The variable (`EVENT_ROTATE`); for a value given in code, the method
    /// (`Recorder::rotate`).
    pub variable: &'static str,
    /// Its value, as the user gave it: the variable's text, or the code's value written as
    /// the variable would take it.
    pub value: String,
    /// What is wrong and what it accepts.
    pub message: String,
    /// Where the value came from.
    pub origin: Origin,
}

impl ConfigError {
    /// An error of the environment's `variable`, whose text is `value`.
    pub(crate) fn env(variable: &'static str, value: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError { variable, value: value.into(), message: message.into(), origin: Origin::Environment }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.origin {
            Origin::Environment => write!(f, "{}={:?}: {}", self.variable, self.value, self.message),
            Origin::Code => write!(f, "{}({:?}) in the program's code: {}", self.variable, self.value, self.message),
        }
    }
}

/// `Debug` writes the one-line message that `Display` writes, not the variant and its
/// fields: an error returned from `main` (`fn main() -> Result<(), ConfigError>`, or through
/// `Box<dyn Error>`) is printed by the standard library with `Debug`, as `Error: {:?}`, and
/// that line is what the program's user reads. A program that needs the parts matches on
/// them.
impl fmt::Debug for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for ConfigError {}

/// Every variable the recorder reads, in docs/guide/configuration.md's order (a test keeps
/// this list, [`Recorder::from_env`](crate::Recorder::from_env)'s docs and the guide's table
/// the same).
pub(crate) const VARIABLES: [&str; 18] = [
    "EVENT_FILE",
    "EVENT_RING",
    "EVENT_CONTROL",
    "EVENT_POLICY",
    "EVENT_BUFSIZE",
    "EVENT_BUFRESIZE",
    "EVENT_FORK",
    "EVENT_PACK",
    "EVENT_SIGNALS",
    "EVENT_ROTATE",
    "EVENT_KEEP",
    "EVENT_TRIGGER",
    "EVENT_SNAPSHOT",
    "EVENT_PIN",
    "EVENT_LIMIT",
    "EVENT_HOST",
    "EVENT_LABELS",
    "EVENT_RING_THREADS",
];

/// The `Recorder` method that sets what `variable` sets, for an error of a value given in
/// code.
pub(crate) fn method_of(variable: &str) -> &'static str {
    match variable {
        "EVENT_FILE" => "Recorder::file",
        "EVENT_RING" => "Recorder::ring_file",
        "EVENT_CONTROL" => "Recorder::control",
        "EVENT_POLICY" => "Recorder::policy",
        "EVENT_BUFSIZE" => "Recorder::buffer_size",
        "EVENT_BUFRESIZE" => "Recorder::bufresize",
        "EVENT_FORK" => "Recorder::record_forks",
        "EVENT_PACK" => "Recorder::pack",
        "EVENT_SIGNALS" => "Recorder::signals",
        "EVENT_ROTATE" => "Recorder::rotate",
        "EVENT_KEEP" => "Recorder::keep",
        "EVENT_TRIGGER" => "Recorder::trigger",
        "EVENT_SNAPSHOT" => "Recorder::snapshots",
        "EVENT_PIN" => "Recorder::pin",
        "EVENT_LIMIT" => "Recorder::limit",
        "EVENT_HOST" => "Recorder::host",
        "EVENT_LABELS" => "Recorder::label",
        "EVENT_RING_THREADS" => "Recorder::ring_threads",
        _ => "Recorder",
    }
}

/// When a recording to an event file ends its segment and goes on in a new one
/// (`EVENT_ROTATE`; docs/guide/long-running-services.md): at a size, an age, or whichever
/// comes first. Rotation on demand needs neither ([`Recording::rotate`](crate::Recording::rotate)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rotate {
    /// A segment is sealed once it holds this many bytes (or more: a block is never split).
    pub size: Option<u64>,
    /// A segment is sealed once it has been written this long and holds an event of the
    /// program's: an idle program's segment waits for its first event (the names each new
    /// segment repeats do not count), so that idle hours do not push its history out of the
    /// budget.
    pub age: Option<Duration>,
}

/// The disk budget of a directory's segments (`EVENT_KEEP`): the oldest sealed segments of
/// the program's name pattern in the directory, whichever run wrote them, are deleted to stay
/// within every limit given (docs/guide/long-running-services.md, "A disk budget").
///
/// ```
/// use event_runtime::Keep;
/// // At most 24 sealed segments, at most 1 GiB of them, and 2 GiB left free on the disk.
/// let keep = Keep { segments: Some(24), bytes: Some(1 << 30), free: Some(2 << 30) };
/// # let _ = keep;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Keep {
    /// At most this many sealed segments.
    pub segments: Option<u64>,
    /// At most this many bytes of sealed segments.
    pub bytes: Option<u64>,
    /// At least this many bytes left free on the file system (journald's `SystemKeepFree`):
    /// the oldest sealed segments are deleted to keep it, and when none is left to delete the
    /// recording stops writing (its segment sealed as for a full disk, the events counted)
    /// until there is room again.
    pub free: Option<u64>,
}

/// The smallest segment size `EVENT_ROTATE` takes: 4 KiB, the smallest block (a segment holds
/// its header and whole blocks, so it is always larger than one block).
pub(crate) const MIN_SEGMENT: u64 = 4 << 10;

/// A size for a segment or a budget: digits with a `k`, `m` or `g` suffix (powers of 1024).
fn parse_file_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let shift = match t.as_bytes().last().map(u8::to_ascii_lowercase)? {
        b'k' => 10,
        b'm' => 20,
        b'g' => 30,
        _ => return None,
    };
    let digits = &t[..t.len() - 1];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(1 << shift)
}

/// An age: digits with `s`, `min`, `h` or `d`.
fn parse_age(text: &str) -> Option<Duration> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit())?;
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let seconds = match unit {
        "s" => n,
        "min" => n.checked_mul(60)?,
        "h" => n.checked_mul(3600)?,
        "d" => n.checked_mul(86400)?,
        _ => return None,
    };
    (seconds > 0).then(|| Duration::from_secs(seconds))
}

/// `EVENT_ROTATE`: a size (`64m`), an age (`1h`), or both (`64m,1h`).
pub(crate) fn parse_rotate(text: &str) -> Result<Rotate, String> {
    let accepted = "write a size (64m: k, m or g), an age (1h: s, min, h or d) or both (64m,1h)";
    let mut rotate = Rotate::default();
    for part in text.split(',') {
        if let Some(size) = parse_file_size(part) {
            if rotate.size.replace(size).is_some() {
                return Err(format!("two sizes; {accepted}"));
            }
            if size < MIN_SEGMENT {
                return Err(format!("{size} bytes is smaller than the smallest segment, 4k; {accepted}"));
            }
        } else if let Some(age) = parse_age(part) {
            if rotate.age.replace(age).is_some() {
                return Err(format!("two ages; {accepted}"));
            }
        } else {
            return Err(format!("{:?} is neither a size nor an age; {accepted}", part.trim()));
        }
    }
    Ok(rotate)
}

/// What `EVENT_ROTATE` would refuse of `rotate`, given in code: a size smaller than the
/// smallest segment, an age of zero.
pub(crate) fn check_rotate(rotate: Rotate) -> Result<(), String> {
    if let Some(size) = rotate.size.filter(|&s| s < MIN_SEGMENT) {
        return Err(format!("{size} bytes is smaller than the smallest segment, 4k"));
    }
    if rotate.age == Some(Duration::ZERO) {
        return Err("an age of zero would seal every segment at once; give a positive age, or None".to_owned());
    }
    Ok(())
}

/// What `EVENT_KEEP` would refuse of `keep`, given in code: zero segments.
pub(crate) fn check_keep(keep: Keep) -> Result<(), String> {
    if keep.segments == Some(0) {
        return Err("0 segments would keep nothing; keep at least 1, or None".to_owned());
    }
    Ok(())
}

/// `rotate` written as `EVENT_ROTATE` takes it (`1m,1s`), for a message about a value given
/// in code.
pub(crate) fn rotate_text(rotate: Rotate) -> String {
    let age = rotate.age.map(|a| {
        let s = a.as_secs();
        match s {
            _ if s > 0 && s % 86400 == 0 => format!("{}d", s / 86400),
            _ if s > 0 && s % 3600 == 0 => format!("{}h", s / 3600),
            _ if s > 0 && s % 60 == 0 => format!("{}min", s / 60),
            _ => format!("{s}s"),
        }
    });
    [rotate.size.map(size_text), age].into_iter().flatten().collect::<Vec<_>>().join(",")
}

/// `keep` written as `EVENT_KEEP` takes it (`10,1g,free=2g`).
pub(crate) fn keep_text(keep: Keep) -> String {
    let parts = [
        keep.segments.map(|n| n.to_string()),
        keep.bytes.map(size_text),
        keep.free.map(|b| format!("free={}", size_text(b))),
    ];
    parts.into_iter().flatten().collect::<Vec<_>>().join(",")
}

/// A size in the largest unit (`g`, `m`, `k`) that writes it exactly, else in bytes.
fn size_text(bytes: u64) -> String {
    for (shift, unit) in [(30, "g"), (20, "m"), (10, "k")] {
        if bytes > 0 && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{bytes} bytes")
}

/// Why `EVENT_ROTATE` and `EVENT_POLICY=ring` are refused together (docs/guide/configuration.md):
/// under `ring` nothing reaches the event file until the stop, which writes the rings once, so
/// there is no stream to cut by size or age while the program runs.
pub(crate) const RING_ROTATE: &str = "EVENT_ROTATE (segments) cannot go with EVENT_POLICY=ring, which writes the event file once, at the stop (there is nothing to rotate while it runs); unset EVENT_ROTATE, or choose another EVENT_POLICY (switch streams into segments)";

/// `EVENT_KEEP`: a count of segments (`10`), a total size (`1g`), a floor of free space
/// (`free=2g`), or any of them together (`10,1g,free=2g`).
pub(crate) fn parse_keep(text: &str) -> Result<Keep, String> {
    let accepted = "write a number of segments (10), a total size (1g: k, m or g), the space to keep free on the disk (free=2g), or several (10,1g,free=2g)";
    let mut keep = Keep::default();
    for part in text.split(',') {
        let part = part.trim();
        if let Some(free) = part.strip_prefix("free=") {
            let size = parse_file_size(free).ok_or_else(|| format!("{free:?} is not a size; {accepted}"))?;
            if keep.free.replace(size).is_some() {
                return Err(format!("two free= floors; {accepted}"));
            }
        } else if let Some(size) = parse_file_size(part) {
            if keep.bytes.replace(size).is_some() {
                return Err(format!("two sizes; {accepted}"));
            }
        } else if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
            let n: u64 = part.parse().map_err(|_| format!("{part:?} is too large; {accepted}"))?;
            if n == 0 {
                return Err(format!("0 segments would keep nothing; {accepted}"));
            }
            if keep.segments.replace(n).is_some() {
                return Err(format!("two counts; {accepted}"));
            }
        } else {
            return Err(format!("{part:?} is neither a count nor a size; {accepted}"));
        }
    }
    Ok(keep)
}

/// `EVENT_*` variables that are not the recorder's and are not warned about: this project's
/// own test switches (event-dump's tests of the babeltrace2, DuckDB and Perfetto readers),
/// which its test programs inherit.
const NOT_OURS: [&str; 3] = ["EVENT_REQUIRE_BABELTRACE", "EVENT_REQUIRE_DUCKDB", "EVENT_REQUIRE_PERFETTO"];

/// One warning (without a prefix) for each `EVENT_*` variable among `names` that the recorder
/// does not read: a misspelt setting must not be ignored silently. It names the closest
/// setting when one is likely meant (`EVENT_FLIE`: `EVENT_FILE`), else every setting.
pub(crate) fn unknown_variables(names: impl IntoIterator<Item = OsString>) -> Vec<String> {
    let mut lines = Vec::new();
    for name in names {
        let name = name.to_string_lossy();
        if !name.starts_with("EVENT_") || VARIABLES.contains(&&*name) || NOT_OURS.contains(&&*name) {
            continue;
        }
        let hint = match event_format::def::closest(&name, VARIABLES) {
            Some(close) => format!("did you mean {close}?"),
            None => format!("the settings are {}", VARIABLES.join(", ")),
        };
        lines.push(format!("{name} is not a setting of the recorder and is ignored; {hint}"));
    }
    lines.sort();
    lines
}

/// The recorder's settings that the environment gives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Env {
    pub(crate) file: Option<PathBuf>,
    pub(crate) ring: Option<PathBuf>,
    pub(crate) control: Option<String>,
    pub(crate) policy: Option<(Policy, Duration)>,
    pub(crate) bufsize: Option<u64>,
    /// `EVENT_PACK`: `Some(None)` is `off`.
    pub(crate) pack: Option<Option<event_format::wire::Packing>>,
    pub(crate) bufresize: Option<BufResize>,
    pub(crate) fork: Option<bool>,
    pub(crate) signals: Option<Signals>,
    pub(crate) rotate: Option<Rotate>,
    pub(crate) keep: Option<Keep>,
    /// `EVENT_TRIGGER`'s text, parsed at the start against the recorded sets (`trigger`).
    pub(crate) trigger: Option<String>,
    /// `EVENT_SNAPSHOT`: where triggered snapshots go (a pattern).
    pub(crate) snapshot: Option<PathBuf>,
    /// `EVENT_PIN`'s selection, parsed at the start (`trigger`).
    pub(crate) pin: Option<String>,
    /// `EVENT_LIMIT`'s text, parsed at the start against the recorded sets (`aggregate`).
    pub(crate) limit: Option<String>,
    /// `EVENT_HOST`: the host name the header and `%h` give.
    pub(crate) host: Option<String>,
    /// `EVENT_LABELS`: the recording's labels, in the order given.
    pub(crate) labels: Option<Vec<(String, String)>>,
    /// `EVENT_RING_THREADS`: the most threads that have a slot of the ring file at once.
    pub(crate) ring_threads: Option<u32>,
}

/// `EVENT_LABELS`: `key=value` pairs separated by commas (`service=api,version=1.4.2`). A key
/// is 1 to 128 letters, digits, `_`, `.` or `-`, given once; a value at most 1024 bytes,
/// without a comma (a value with one is given in code, `Recorder::label`).
pub(crate) fn parse_labels(text: &str) -> Result<Vec<(String, String)>, String> {
    let accepted = "write key=value pairs separated by commas (service=api,version=1.4.2,pod=api-7f9c)";
    let mut labels: Vec<(String, String)> = Vec::new();
    for part in text.split(',') {
        let Some((key, value)) = part.split_once('=') else {
            return Err(format!("{:?} is not key=value; {accepted}", part.trim()));
        };
        let (key, value) = (key.trim(), value.trim());
        check_label(key, value).map_err(|why| format!("{why}; {accepted}"))?;
        if labels.iter().any(|(k, _)| k == key) {
            return Err(format!("the label {key:?} is given twice; {accepted}"));
        }
        labels.push((key.to_owned(), value.to_owned()));
    }
    Ok(labels)
}

/// Why a label cannot be recorded, if it cannot (docs/FORMAT.md, "Labels").
pub(crate) fn check_label(key: &str, value: &str) -> Result<(), String> {
    use event_format::wire::{MAX_LABEL_KEY, MAX_LABEL_VALUE, valid_label_key};
    if !valid_label_key(key) {
        return Err(format!("the label key {key:?} is not 1 to {MAX_LABEL_KEY} letters, digits, `_`, `.` or `-`"));
    }
    if value.len() > MAX_LABEL_VALUE {
        return Err(format!("the label {key}'s value is {} bytes long, more than {MAX_LABEL_VALUE}", value.len()));
    }
    Ok(())
}

/// Why a host name cannot be recorded, if it cannot: empty, longer than 255 bytes, or holding
/// a `/` or a control character.
pub(crate) fn check_host(host: &str) -> Result<(), String> {
    if host.is_empty() || host.len() > 255 || host.chars().any(|c| c == '/' || c.is_control()) {
        return Err("not a host name; write 1 to 255 bytes without `/` or control characters".to_owned());
    }
    Ok(())
}

/// The most slots a ring file has (`EVENT_RING_THREADS`), as its layout allows.
pub(crate) const MAX_RING_THREADS: u32 = event_format::ring::MAX_SLOTS;

/// How long `EVENT_POLICY=wait` waits for a free block before refusing an event.
pub(crate) const DEFAULT_WAIT: Duration = Duration::from_millis(100);

/// Reads the variables through `get` (the process environment, or a test's table).
pub(crate) fn read_env(get: impl Fn(&str) -> Option<OsString>) -> Result<Env, ConfigError> {
    let vars = Vars(get);
    Ok(Env {
        file: vars.path("EVENT_FILE")?,
        ring: vars.path("EVENT_RING")?,
        control: vars.text("EVENT_CONTROL")?,
        trigger: vars.text("EVENT_TRIGGER")?,
        snapshot: vars.path("EVENT_SNAPSHOT")?,
        pin: vars.text("EVENT_PIN")?,
        limit: vars.text("EVENT_LIMIT")?,
        host: vars.parsed("EVENT_HOST", |v| check_host(v.trim()).map(|()| v.trim().to_owned()))?,
        labels: vars.parsed("EVENT_LABELS", parse_labels)?,
        policy: vars.parsed("EVENT_POLICY", parse_policy)?,
        bufsize: vars.parsed("EVENT_BUFSIZE", parse_size)?,
        pack: vars.parsed("EVENT_PACK", parse_pack)?,
        fork: vars.parsed("EVENT_FORK", parse_on_off)?,
        bufresize: vars.parsed("EVENT_BUFRESIZE", parse_bufresize)?,
        signals: vars.parsed("EVENT_SIGNALS", parse_signals)?,
        rotate: vars.parsed("EVENT_ROTATE", parse_rotate)?,
        ring_threads: vars.parsed("EVENT_RING_THREADS", parse_ring_threads)?,
        keep: vars.parsed("EVENT_KEEP", parse_keep)?,
    })
}

/// The variables, read through a lookup (the process environment, or a test's table); an
/// error names the variable, its value and what to write instead.
struct Vars<G>(G);

impl<G: Fn(&str) -> Option<OsString>> Vars<G> {
    /// A variable's text: `None` when it is unset, an error when it is empty or not UTF-8.
    fn text(&self, variable: &'static str) -> Result<Option<String>, ConfigError> {
        match (self.0)(variable) {
            None => Ok(None),
            Some(v) => match v.into_string() {
                Ok(s) if s.trim().is_empty() => {
                    Err(ConfigError::env(variable, s, "is empty; set it to a value or unset it"))
                }
                Ok(s) => Ok(Some(s)),
                Err(v) => Err(ConfigError::env(variable, v.to_string_lossy(), "is not valid UTF-8")),
            },
        }
    }

    /// A variable that names a file: any bytes but none.
    fn path(&self, variable: &'static str) -> Result<Option<PathBuf>, ConfigError> {
        match (self.0)(variable) {
            Some(v) if v.is_empty() => {
                Err(ConfigError::env(variable, String::new(), "is empty; set it to a file path or unset it"))
            }
            v => Ok(v.map(PathBuf::from)),
        }
    }

    /// A variable's text read by `parse`, whose error message says what to write.
    fn parsed<T>(
        &self,
        variable: &'static str,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Result<Option<T>, ConfigError> {
        let Some(v) = self.text(variable)? else { return Ok(None) };
        parse(&v).map(Some).map_err(|message| ConfigError::env(variable, v, message))
    }
}

/// `on` or `off` (`1`/`0`, `yes`/`no`).
fn parse_on_off(v: &str) -> Result<bool, String> {
    match v {
        "on" | "1" | "yes" => Ok(true),
        "off" | "0" | "no" => Ok(false),
        _ => Err("not a choice; write on or off".to_owned()),
    }
}

/// `EVENT_BUFRESIZE`: `auto` or `manual`.
fn parse_bufresize(v: &str) -> Result<BufResize, String> {
    match v {
        "auto" => Ok(BufResize::Auto),
        "manual" => Ok(BufResize::Manual),
        _ => Err("not a choice; write auto (lower the buffers to what fits) or manual (refuse to start)".to_owned()),
    }
}

/// `EVENT_SIGNALS`: `default` or `none`.
fn parse_signals(v: &str) -> Result<Signals, String> {
    match v {
        "default" => Ok(Signals::Default),
        "none" => Ok(Signals::None),
        _ => Err("not a choice; write default (flush the event file on SIGABRT, SIGILL and SIGFPE left to their default action; guard the ring file against SIGBUS) or none (install no signal handler)".to_owned()),
    }
}

/// `EVENT_RING_THREADS`: 1 to [`MAX_RING_THREADS`].
fn parse_ring_threads(v: &str) -> Result<u32, String> {
    v.trim().parse::<u32>().ok().filter(|n| (1..=MAX_RING_THREADS).contains(n)).ok_or_else(|| {
        format!(
            "not a number of threads; write how many threads may hold a slot of the ring file at once, 1..={MAX_RING_THREADS} (the rings share EVENT_BUFSIZE whatever it is)"
        )
    })
}

// The buffer's limits, stated once: docs/guide/configuration.md, the rustdoc of
// `Recorder::buffer_size` and `Recorder::block_size` and the errors below and in
// `StartError` say these numbers. The block size's own limits are the format's
// (`event_format::wire::{MIN_BLOCK_SIZE, MAX_BLOCK_SIZE}`, docs/FORMAT.md).

/// The default block size: 64 KiB. The environment does not set the block size
/// ([`Recorder::block_size`] does), so with it `EVENT_BUFSIZE` must hold at least
/// 4 blocks of this size: 256k.
///
/// [`Recorder::block_size`]: crate::Recorder::block_size
pub const DEFAULT_BLOCK_SIZE: u32 = 64 << 10;
/// The fewest blocks a buffer holds: a thread's block, one being written, and room to keep
/// recording while the writer catches up. Checked at the start, against the block size.
pub(crate) const MIN_BLOCKS: u64 = 4;
/// The smallest buffer at all: [`MIN_BLOCKS`] blocks of the smallest block size (4k); with
/// the default block size the start needs 256k (`StartError::BadBufferSize`).
pub(crate) const MIN_BUFSIZE: u64 = MIN_BLOCKS * event_format::wire::MIN_BLOCK_SIZE as u64;
/// The largest `EVENT_BUFSIZE` (1024 GiB); larger than the machine can spare is lowered or
/// refused at the start (`EVENT_BUFRESIZE`).
pub(crate) const MAX_BUFSIZE: u64 = 1 << 40;

/// A size in bytes: digits with an optional `k`, `m` or `g` (powers of 1024, either case).
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let accepted = "write a number of bytes with an optional k, m or g suffix (powers of 1024), e.g. 16m";
    let (digits, shift) = match t.as_bytes().last().map(u8::to_ascii_lowercase) {
        Some(b'k') => (&t[..t.len() - 1], 10),
        Some(b'm') => (&t[..t.len() - 1], 20),
        Some(b'g') => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("not a size; {accepted}"));
    }
    let n: u64 = digits.parse().map_err(|_| format!("too large; {accepted}"))?;
    let bytes = n.checked_mul(1 << shift).ok_or_else(|| format!("too large; {accepted}"))?;
    if !(MIN_BUFSIZE..=MAX_BUFSIZE).contains(&bytes) {
        return Err(format!(
            "{bytes} bytes is out of range; the buffer size is {}..={}, and at least {MIN_BLOCKS} blocks: {} with the default {} blocks",
            crate::machine::size_text(MIN_BUFSIZE),
            crate::machine::size_text(MAX_BUFSIZE),
            crate::machine::size_text(MIN_BLOCKS * u64::from(DEFAULT_BLOCK_SIZE)),
            crate::machine::size_text(u64::from(DEFAULT_BLOCK_SIZE)),
        ));
    }
    Ok(bytes)
}

/// A policy: `switch`, `ring`, `fill`, or `wait` / `wait=DURATION` (switch, waiting up to
/// `EVENT_PACK`'s value: `zstd` (or `on`, `1`, `yes`: the default), `zstd:LEVEL`, `lz4`, or
/// `off` (`0`, `no`); `None` for off.
fn parse_pack(v: &str) -> Result<Option<event_format::wire::Packing>, String> {
    use event_format::wire::Packing;
    match v {
        "zstd" | "on" | "1" | "yes" => return Ok(Some(Packing::ZSTD)),
        "lz4" => return Ok(Some(Packing::LZ4)),
        "off" | "0" | "no" => return Ok(None),
        _ => {}
    }
    if let Some(level) = v.strip_prefix("zstd:") {
        return match level.parse::<i32>() {
            Ok(level) if (1..=22).contains(&level) => Ok(Some(Packing { level, ..Packing::ZSTD })),
            _ => Err(format!("zstd's level {level} is not in 1..=22; write zstd, zstd:LEVEL, lz4 or off")),
        };
    }
    Err("not a packing; write zstd (the default), zstd:LEVEL (1 to 22), lz4 (readable by format 1.1 readers) or off"
        .to_owned())
}

/// that long for the writer before refusing an event). Returns the wait, zero when none.
pub(crate) fn parse_policy(text: &str) -> Result<(Policy, Duration), String> {
    let accepted = "write switch, ring, fill, wait or wait=DURATION (e.g. wait=50ms)";
    match text.trim() {
        "switch" => Ok((Policy::Switch, Duration::ZERO)),
        "ring" => Ok((Policy::Ring, Duration::ZERO)),
        "fill" => Ok((Policy::Fill, Duration::ZERO)),
        "wait" => Ok((Policy::Switch, DEFAULT_WAIT)),
        t => match t.strip_prefix("wait=") {
            Some(d) => {
                let wait = parse_duration(d).map_err(|why| format!("{why}; {accepted}"))?;
                Ok((Policy::Switch, wait))
            }
            None => Err(format!("unknown policy; {accepted}")),
        },
    }
}

/// A duration: digits followed by `us`, `ms` or `s`, at most 60 s.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits.parse().map_err(|_| format!("{text:?} is not a duration"))?;
    let d = match unit {
        "us" => Duration::from_micros(n),
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "" => return Err(format!("{text:?} needs a unit: us, ms or s")),
        _ => return Err(format!("{text:?}: unknown unit {unit:?} (use us, ms or s)")),
    };
    if d > Duration::from_secs(60) {
        return Err(format!("{text:?} is longer than the longest wait, 60s"));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> Result<Env, ConfigError> {
        let table: HashMap<String, OsString> = vars.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        read_env(|k| table.get(k).cloned())
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("16M"), Ok(16 << 20));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("1024g"), Ok(1 << 40));
        for bad in ["", "k", "12q", "-1", "1.5m", "99999999999999999999", "1k", "2000g", "1025g"] {
            assert!(parse_size(bad).is_err(), "{bad:?} is refused");
        }
        // The limits as docs/guide/configuration.md states them.
        assert_eq!(
            parse_size("1k").unwrap_err(),
            "1024 bytes is out of range; the buffer size is 4k..=1024g, and at least 4 blocks: 256k with the default 64k blocks"
        );
    }

    #[test]
    fn rotation_and_budget() {
        let mb = |n: u64| Some(n << 20);
        assert_eq!(parse_rotate("64m"), Ok(Rotate { size: mb(64), age: None }));
        assert_eq!(parse_rotate("1h"), Ok(Rotate { size: None, age: Some(Duration::from_secs(3600)) }));
        assert_eq!(parse_rotate("64m,1h"), Ok(Rotate { size: mb(64), age: Some(Duration::from_secs(3600)) }));
        assert_eq!(parse_rotate("10min"), Ok(Rotate { size: None, age: Some(Duration::from_secs(600)) }));
        for bad in ["64", "1k", "64m,64m", "1h,2h", "fast", "0s", ""] {
            assert!(parse_rotate(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_keep("10"), Ok(Keep { segments: Some(10), ..Keep::default() }));
        assert_eq!(parse_keep("1g"), Ok(Keep { bytes: Some(1 << 30), ..Keep::default() }));
        assert_eq!(parse_keep("10,1g"), Ok(Keep { segments: Some(10), bytes: Some(1 << 30), free: None }));
        assert_eq!(parse_keep("free=2g"), Ok(Keep { free: Some(2 << 30), ..Keep::default() }));
        assert_eq!(
            parse_keep("3, free=512m ,1g"),
            Ok(Keep { segments: Some(3), bytes: Some(1 << 30), free: Some(512 << 20) })
        );
        assert_eq!(
            keep_text(Keep { segments: Some(3), bytes: Some(1 << 30), free: Some(512 << 20) }),
            "3,1g,free=512m"
        );
        for bad in ["0", "10,20", "1g,2g", "ten", "1h", "", "free=", "free=2", "free=1g,free=2g"] {
            assert!(parse_keep(bad).is_err(), "{bad}");
        }
        let e = env(&[("EVENT_ROTATE", "64")]).unwrap_err();
        assert_eq!(e.variable, "EVENT_ROTATE");
        assert!(e.message.contains("neither a size nor an age"), "{e}");
        let e = env(&[("EVENT_ROTATE", "1m"), ("EVENT_KEEP", "3,8m")]).unwrap();
        assert_eq!((e.rotate.unwrap().size, e.keep.unwrap().segments), (mb(1), Some(3)));
    }

    #[test]
    fn policies() {
        assert_eq!(parse_policy("switch"), Ok((Policy::Switch, Duration::ZERO)));
        assert_eq!(parse_policy("ring"), Ok((Policy::Ring, Duration::ZERO)));
        assert_eq!(parse_policy("fill"), Ok((Policy::Fill, Duration::ZERO)));
        assert_eq!(parse_policy("wait"), Ok((Policy::Switch, DEFAULT_WAIT)));
        assert_eq!(parse_policy("wait=250us"), Ok((Policy::Switch, Duration::from_micros(250))));
        assert_eq!(parse_policy("wait=2s"), Ok((Policy::Switch, Duration::from_secs(2))));
        for bad in ["Switch", "rings", "wait=", "wait=5", "wait=5h", "wait=61s"] {
            assert!(parse_policy(bad).is_err(), "{bad:?} is refused");
        }
    }

    #[test]
    fn a_wait_of_an_unknown_unit_names_the_unit_and_the_units() {
        assert_eq!(
            env(&[("EVENT_POLICY", "wait=5parsecs")]).unwrap_err().to_string(),
            "EVENT_POLICY=\"wait=5parsecs\": \"5parsecs\": unknown unit \"parsecs\" (use us, ms or s); write switch, \
             ring, fill, wait or wait=DURATION (e.g. wait=50ms)"
        );
        assert_eq!(
            parse_policy("wait=5").unwrap_err(),
            "\"5\" needs a unit: us, ms or s; write switch, ring, fill, wait or wait=DURATION (e.g. wait=50ms)"
        );
    }

    #[test]
    fn unknown_variables_are_named_with_the_closest_setting() {
        let names = [
            "PATH",
            "EVENT_FLIE",
            "EVENT_FILE",
            "EVENT_CONTORL",
            "EVENT_COLOUR_SCHEME",
            "EVENT_REQUIRE_DUCKDB",
            "EVENT_REQUIRE_PERFETTO",
        ];
        assert_eq!(
            unknown_variables(names.map(OsString::from)),
            [
                "EVENT_COLOUR_SCHEME is not a setting of the recorder and is ignored; the settings are EVENT_FILE, \
                 EVENT_RING, EVENT_CONTROL, EVENT_POLICY, EVENT_BUFSIZE, EVENT_BUFRESIZE, EVENT_FORK, EVENT_PACK, \
                 EVENT_SIGNALS, EVENT_ROTATE, EVENT_KEEP, EVENT_TRIGGER, \
                 EVENT_SNAPSHOT, EVENT_PIN, EVENT_LIMIT, EVENT_HOST, EVENT_LABELS, EVENT_RING_THREADS",
                "EVENT_CONTORL is not a setting of the recorder and is ignored; did you mean EVENT_CONTROL?",
                "EVENT_FLIE is not a setting of the recorder and is ignored; did you mean EVENT_FILE?",
            ]
        );
    }

    #[test]
    fn labels_and_host() {
        let e = env(&[("EVENT_LABELS", "service=api, version=1.4.2,pod=api-7f9c"), ("EVENT_HOST", "host-a")]).unwrap();
        assert_eq!(
            e.labels.unwrap(),
            [("service", "api"), ("version", "1.4.2"), ("pod", "api-7f9c")].map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
        assert_eq!(e.host.as_deref(), Some("host-a"));
        assert_eq!(
            env(&[("EVENT_LABELS", "service=api,service=web")]).unwrap_err().to_string(),
            "EVENT_LABELS=\"service=api,service=web\": the label \"service\" is given twice; write key=value pairs \
             separated by commas (service=api,version=1.4.2,pod=api-7f9c)"
        );
        for bad in ["service", "=api", "a b=c", "service=api,,"] {
            assert_eq!(env(&[("EVENT_LABELS", bad)]).unwrap_err().variable, "EVENT_LABELS", "{bad:?}");
        }
        assert!(parse_labels(&format!("k={}", "v".repeat(1025))).unwrap_err().contains("more than 1024"));
        for bad in ["a/b", "tab\there"] {
            assert_eq!(env(&[("EVENT_HOST", bad)]).unwrap_err().variable, "EVENT_HOST", "{bad:?}");
        }
    }

    #[test]
    fn an_error_says_whether_the_value_came_from_the_environment_or_the_code() {
        let from_env = ConfigError::env("EVENT_ROTATE", "1m", "cannot go with ring");
        assert_eq!(from_env.to_string(), "EVENT_ROTATE=\"1m\": cannot go with ring");
        let from_code = ConfigError { variable: "Recorder::rotate", origin: Origin::Code, ..from_env };
        assert_eq!(from_code.to_string(), "Recorder::rotate(\"1m\") in the program's code: cannot go with ring");
        // A value from code written as the variable takes it, in its own units.
        assert_eq!(rotate_text(Rotate { size: Some(1 << 20), age: None }), "1m");
        assert_eq!(rotate_text(Rotate { size: Some(64 << 10), age: Some(Duration::from_secs(3600)) }), "64k,1h");
        assert_eq!(rotate_text(Rotate { size: Some(5000), age: Some(Duration::from_secs(90)) }), "5000 bytes,90s");
        assert!(check_rotate(Rotate { size: Some(1000), age: None }).unwrap_err().contains("smallest segment"));
        assert!(check_keep(Keep { segments: Some(0), ..Keep::default() }).is_err());
        for v in VARIABLES {
            assert!(method_of(v).starts_with("Recorder::") && method_of(v) != "Recorder", "{v} has a method");
        }
    }

    #[test]
    fn environment() {
        let e = env(&[("EVENT_FILE", "a.evt"), ("EVENT_POLICY", "fill"), ("EVENT_BUFSIZE", "1m")]).unwrap();
        assert_eq!(e.file, Some(PathBuf::from("a.evt")));
        assert_eq!(e.policy, Some((Policy::Fill, Duration::ZERO)));
        assert_eq!(e.bufsize, Some(1 << 20));
        use event_format::wire::Packing;
        assert_eq!(env(&[("EVENT_PACK", "off")]).unwrap().pack, Some(None));
        assert_eq!(env(&[("EVENT_PACK", "on")]).unwrap().pack, Some(Some(Packing::ZSTD)));
        assert_eq!(env(&[("EVENT_PACK", "zstd")]).unwrap().pack, Some(Some(Packing::ZSTD)));
        assert_eq!(env(&[("EVENT_PACK", "lz4")]).unwrap().pack, Some(Some(Packing::LZ4)));
        assert_eq!(env(&[("EVENT_PACK", "zstd:9")]).unwrap().pack, Some(Some(Packing { level: 9, ..Packing::ZSTD })));
        assert_eq!(
            env(&[("EVENT_PACK", "zstd:30")]).unwrap_err().to_string(),
            "EVENT_PACK=\"zstd:30\": zstd's level 30 is not in 1..=22; write zstd, zstd:LEVEL, lz4 or off"
        );
        assert_eq!(
            env(&[("EVENT_PACK", "maybe")]).unwrap_err().to_string(),
            "EVENT_PACK=\"maybe\": not a packing; write zstd (the default), zstd:LEVEL (1 to 22), lz4 (readable by format 1.1 readers) or off"
        );
        assert_eq!(env(&[]).unwrap(), Env::default());
        assert_eq!(env(&[("EVENT_FORK", "off")]).unwrap().fork, Some(false));
        assert_eq!(env(&[("EVENT_BUFRESIZE", "manual")]).unwrap().bufresize, Some(BufResize::Manual));
        assert_eq!(env(&[("EVENT_BUFRESIZE", "auto")]).unwrap().bufresize, Some(BufResize::Auto));
        assert_eq!(
            env(&[("EVENT_BUFRESIZE", "grow")]).unwrap_err().to_string(),
            "EVENT_BUFRESIZE=\"grow\": not a choice; write auto (lower the buffers to what fits) or manual (refuse to start)"
        );
        assert_eq!(
            env(&[("EVENT_FORK", "maybe")]).unwrap_err().to_string(),
            "EVENT_FORK=\"maybe\": not a choice; write on or off"
        );
        assert_eq!(env(&[("EVENT_FORK", "yes")]).unwrap().fork, Some(true));
        assert_eq!(env(&[("EVENT_RING_THREADS", " 8 ")]).unwrap().ring_threads, Some(8));
        assert_eq!(
            env(&[("EVENT_RING_THREADS", "0")]).unwrap_err().to_string(),
            format!(
                "EVENT_RING_THREADS=\"0\": not a number of threads; write how many threads may hold a slot of the ring \
                 file at once, 1..={MAX_RING_THREADS} (the rings share EVENT_BUFSIZE whatever it is)"
            )
        );
        assert_eq!(env(&[("EVENT_HOST", " host-a ")]).unwrap().host.as_deref(), Some("host-a"));
        assert_eq!(
            env(&[("EVENT_FILE", "")]).unwrap_err().to_string(),
            "EVENT_FILE=\"\": is empty; set it to a file path or unset it"
        );
        assert_eq!(
            env(&[("EVENT_CONTROL", " ")]).unwrap_err().to_string(),
            "EVENT_CONTROL=\" \": is empty; set it to a value or unset it"
        );
        assert_eq!(env(&[("EVENT_SIGNALS", "none")]).unwrap().signals, Some(Signals::None));
        assert_eq!(env(&[("EVENT_SIGNALS", "default")]).unwrap().signals, Some(Signals::Default));
        assert_eq!(
            env(&[("EVENT_SIGNALS", "off")]).unwrap_err().to_string(),
            "EVENT_SIGNALS=\"off\": not a choice; write default (flush the event file on SIGABRT, SIGILL and SIGFPE left to their default action; guard the ring file against SIGBUS) or none (install no signal handler)"
        );
        let err = env(&[("EVENT_POLICY", "swtich")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "EVENT_POLICY=\"swtich\": unknown policy; write switch, ring, fill, wait or wait=DURATION (e.g. wait=50ms)"
        );
        let err = env(&[("EVENT_BUFSIZE", "lots")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "EVENT_BUFSIZE=\"lots\": not a size; write a number of bytes with an optional k, m or g suffix (powers of 1024), e.g. 16m"
        );
        assert_eq!(env(&[("EVENT_FILE", "")]).unwrap_err().variable, "EVENT_FILE");
        assert_eq!(env(&[("EVENT_CONTROL", " ")]).unwrap_err().variable, "EVENT_CONTROL");
        assert_eq!(env(&[("EVENT_RING_THREADS", "4")]).unwrap().ring_threads, Some(4));
        for bad in ["0", "many", "65537", "-1"] {
            assert_eq!(env(&[("EVENT_RING_THREADS", bad)]).unwrap_err().variable, "EVENT_RING_THREADS", "{bad}");
        }
    }
}
