//! Settings from the environment: `EVENT_FILE`, `EVENT_RING`, `EVENT_CONTROL`,
//! `EVENT_POLICY`, `EVENT_BUFSIZE`, `EVENT_BUFRESIZE`, `EVENT_PACK`, `EVENT_FORK`,
//! `EVENT_SIGNALS`, `EVENT_ROTATE`, `EVENT_KEEP`, `EVENT_TRIGGER`, `EVENT_SNAPSHOT`, `EVENT_PIN`,
//! `EVENT_LIMIT`. A value that does not parse is an error naming the
//! variable and what it accepts; it never silently records nothing. Another `EVENT_*`
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

/// A setting from the environment that does not parse.
#[derive(Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The variable.
    pub variable: &'static str,
    /// Its value.
    pub value: String,
    /// What is wrong and what it accepts.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={:?}: {}", self.variable, self.value, self.message)
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

/// Every variable the recorder reads, in docs/guide/configuration.md's order.
pub(crate) const VARIABLES: [&str; 15] = [
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
];

/// When a recording to an event file ends its segment and goes on in a new one
/// (`EVENT_ROTATE`; docs/guide/long-running-services.md): at a size, an age, or whichever
/// comes first. Rotation on demand needs neither ([`Recording::rotate`](crate::Recording::rotate)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rotate {
    /// A segment is sealed once it holds this many bytes (or more: a block is never split).
    pub size: Option<u64>,
    /// A segment is sealed once it has been written this long.
    pub age: Option<Duration>,
}

/// How many sealed segments a recording keeps (`EVENT_KEEP`): the oldest are deleted to stay
/// within every limit given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Keep {
    /// At most this many sealed segments.
    pub segments: Option<u64>,
    /// At most this many bytes of sealed segments.
    pub bytes: Option<u64>,
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

/// `rotate` written as `EVENT_ROTATE` takes it (`256k,1s`), for a message about it.
pub(crate) fn rotate_text(rotate: Rotate) -> String {
    let size = rotate.size.map(|b| if b % 1024 == 0 { format!("{}k", b / 1024) } else { format!("{b} bytes") });
    let age = rotate.age.map(|a| format!("{}s", a.as_secs()));
    [size, age].into_iter().flatten().collect::<Vec<_>>().join(",")
}

/// Why `EVENT_ROTATE` and `EVENT_POLICY=ring` are refused together (docs/guide/configuration.md):
/// under `ring` nothing reaches the event file until the stop, which writes the rings once, so
/// there is no stream to cut by size or age while the program runs.
pub(crate) const RING_ROTATE: &str = "EVENT_ROTATE (segments) cannot go with EVENT_POLICY=ring, which writes the event file once, at the stop (there is nothing to rotate while it runs); unset EVENT_ROTATE, or choose another EVENT_POLICY (switch streams into segments)";

/// `EVENT_KEEP`: a count of segments (`10`), a total size (`1g`), or both (`10,1g`).
pub(crate) fn parse_keep(text: &str) -> Result<Keep, String> {
    let accepted = "write a number of segments (10), a total size (1g: k, m or g) or both (10,1g)";
    let mut keep = Keep::default();
    for part in text.split(',') {
        let part = part.trim();
        if let Some(size) = parse_file_size(part) {
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
    pub(crate) pack: Option<bool>,
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
}

/// How long `EVENT_POLICY=wait` waits for a free block before refusing an event.
pub(crate) const DEFAULT_WAIT: Duration = Duration::from_millis(100);

/// Reads the variables through `get` (the process environment, or a test's table).
pub(crate) fn read_env(get: impl Fn(&str) -> Option<OsString>) -> Result<Env, ConfigError> {
    let text = |variable: &'static str| -> Result<Option<String>, ConfigError> {
        match get(variable) {
            None => Ok(None),
            Some(v) => match v.into_string() {
                Ok(s) if s.trim().is_empty() => {
                    Err(ConfigError { variable, value: s, message: "is empty; set it to a value or unset it".into() })
                }
                Ok(s) => Ok(Some(s)),
                Err(v) => Err(ConfigError {
                    variable,
                    value: v.to_string_lossy().into_owned(),
                    message: "is not valid UTF-8".into(),
                }),
            },
        }
    };
    let path = |variable: &'static str| -> Result<Option<PathBuf>, ConfigError> {
        match get(variable) {
            Some(v) if v.is_empty() => Err(ConfigError {
                variable,
                value: String::new(),
                message: "is empty; set it to a file path or unset it".into(),
            }),
            v => Ok(v.map(PathBuf::from)),
        }
    };
    let mut env = Env {
        file: path("EVENT_FILE")?,
        ring: path("EVENT_RING")?,
        control: text("EVENT_CONTROL")?,
        trigger: text("EVENT_TRIGGER")?,
        snapshot: path("EVENT_SNAPSHOT")?,
        pin: text("EVENT_PIN")?,
        limit: text("EVENT_LIMIT")?,
        ..Env::default()
    };
    if let Some(v) = text("EVENT_POLICY")? {
        env.policy = Some(parse_policy(&v).map_err(|message| ConfigError {
            variable: "EVENT_POLICY",
            value: v.clone(),
            message,
        })?);
    }
    if let Some(v) = text("EVENT_BUFSIZE")? {
        env.bufsize = Some(parse_size(&v).map_err(|message| ConfigError {
            variable: "EVENT_BUFSIZE",
            value: v.clone(),
            message,
        })?);
    }
    let on_off = |variable: &'static str| -> Result<Option<bool>, ConfigError> {
        let Some(v) = text(variable)? else { return Ok(None) };
        match v.as_str() {
            "on" | "1" | "yes" => Ok(Some(true)),
            "off" | "0" | "no" => Ok(Some(false)),
            _ => Err(ConfigError { variable, value: v.clone(), message: "not a choice; write on or off".to_owned() }),
        }
    };
    env.pack = on_off("EVENT_PACK")?;
    env.fork = on_off("EVENT_FORK")?;
    if let Some(v) = text("EVENT_BUFRESIZE")? {
        env.bufresize = Some(match v.as_str() {
            "auto" => BufResize::Auto,
            "manual" => BufResize::Manual,
            _ => {
                return Err(ConfigError {
                    variable: "EVENT_BUFRESIZE",
                    value: v.clone(),
                    message: "not a choice; write auto (lower the buffers to what fits) or manual (refuse to start)"
                        .to_owned(),
                });
            }
        });
    }
    if let Some(v) = text("EVENT_SIGNALS")? {
        env.signals = Some(match v.as_str() {
            "default" => Signals::Default,
            "none" => Signals::None,
            _ => {
                return Err(ConfigError {
                    variable: "EVENT_SIGNALS",
                    value: v.clone(),
                    message: "not a choice; write default (flush the event file on SIGABRT, SIGILL and SIGFPE left to their default action; guard the ring file against SIGBUS) or none (install no signal handler)".to_owned(),
                });
            }
        });
    }
    if let Some(v) = text("EVENT_ROTATE")? {
        env.rotate = Some(parse_rotate(&v).map_err(|message| ConfigError {
            variable: "EVENT_ROTATE",
            value: v.clone(),
            message,
        })?);
    }
    if let Some(v) = text("EVENT_KEEP")? {
        env.keep = Some(parse_keep(&v).map_err(|message| ConfigError {
            variable: "EVENT_KEEP",
            value: v.clone(),
            message,
        })?);
    }
    Ok(env)
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
        assert_eq!(parse_keep("10"), Ok(Keep { segments: Some(10), bytes: None }));
        assert_eq!(parse_keep("1g"), Ok(Keep { segments: None, bytes: Some(1 << 30) }));
        assert_eq!(parse_keep("10,1g"), Ok(Keep { segments: Some(10), bytes: Some(1 << 30) }));
        for bad in ["0", "10,20", "1g,2g", "ten", "1h", ""] {
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
                 EVENT_SNAPSHOT, EVENT_PIN, EVENT_LIMIT",
                "EVENT_CONTORL is not a setting of the recorder and is ignored; did you mean EVENT_CONTROL?",
                "EVENT_FLIE is not a setting of the recorder and is ignored; did you mean EVENT_FILE?",
            ]
        );
    }

    #[test]
    fn environment() {
        let e = env(&[("EVENT_FILE", "a.evt"), ("EVENT_POLICY", "fill"), ("EVENT_BUFSIZE", "1m")]).unwrap();
        assert_eq!(e.file, Some(PathBuf::from("a.evt")));
        assert_eq!(e.policy, Some((Policy::Fill, Duration::ZERO)));
        assert_eq!(e.bufsize, Some(1 << 20));
        assert_eq!(env(&[("EVENT_PACK", "off")]).unwrap().pack, Some(false));
        assert_eq!(env(&[("EVENT_PACK", "on")]).unwrap().pack, Some(true));
        assert_eq!(
            env(&[("EVENT_PACK", "maybe")]).unwrap_err().to_string(),
            "EVENT_PACK=\"maybe\": not a choice; write on or off"
        );
        assert_eq!(env(&[]).unwrap(), Env::default());
        assert_eq!(env(&[("EVENT_FORK", "off")]).unwrap().fork, Some(false));
        assert_eq!(env(&[("EVENT_BUFRESIZE", "manual")]).unwrap().bufresize, Some(BufResize::Manual));
        assert_eq!(env(&[("EVENT_BUFRESIZE", "auto")]).unwrap().bufresize, Some(BufResize::Auto));
        assert_eq!(env(&[("EVENT_BUFRESIZE", "grow")]).unwrap_err().variable, "EVENT_BUFRESIZE");
        assert_eq!(env(&[("EVENT_FORK", "maybe")]).unwrap_err().variable, "EVENT_FORK");
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
    }
}
