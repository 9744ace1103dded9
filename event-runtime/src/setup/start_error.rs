//! Why a recording could not start: [`StartError`], one line that says what is wrong and what
//! to do.

use crate::config::{self, ConfigError};
use crate::machine;
use event_format::wire::{MAX_BLOCK_SIZE, MIN_BLOCK_SIZE};
use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why a recording could not start. Its message is one line: what is wrong, what to do.
#[non_exhaustive]
pub enum StartError {
    /// Another recording is running in this process.
    AlreadyRunning,
    /// The block size is not a power of two in range.
    BadBlockSize(u32),
    /// The buffer size is too small for the block size.
    BadBufferSize {
        /// The buffer size.
        buffer: u64,
        /// The block size.
        block: u32,
        /// Where the buffer size was given, as given: `EVENT_BUFSIZE="300k"`,
        /// `Recorder::buffer_size(307200) in the program's code`, or `the default buffer size`.
        given: String,
    },
    /// The embedded event set does not parse or encode.
    BadEventSet(String),
    /// A setting from the environment does not parse.
    Config(ConfigError),
    /// The buffers are larger than the machine can hold, and `EVENT_BUFRESIZE=manual`
    /// (or [`Recorder::bufresize`](crate::Recorder::bufresize)) forbids lowering them.
    BufferTooLarge {
        /// The buffer size asked for.
        requested: u64,
        /// The largest that fits.
        fits: u64,
        /// The limit that decides it (`available memory`, ...).
        limit: &'static str,
        /// Where the buffer size was given, as given (as [`StartError::BadBufferSize`]'s).
        given: String,
    },
    /// The recorder's writer thread could not be started (the process or its user reached a
    /// thread limit: `ulimit -u`, a cgroup's `pids.max`).
    WriterThread(io::Error),
    /// A sink's file could not be created.
    Io {
        /// What the file is for (`event file`, `ring file`).
        what: &'static str,
        /// Its path.
        path: PathBuf,
        /// Why.
        error: io::Error,
    },
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::AlreadyRunning => {
                write!(f, "a recording is already running in this process; stop it before starting another")
            }
            StartError::BadBlockSize(n) => write!(
                f,
                "block size {n} is not a power of two in {MIN_BLOCK_SIZE}..={MAX_BLOCK_SIZE}; choose one such as 65536"
            ),
            StartError::BadBufferSize { buffer, block, given } => {
                write!(
                    f,
                    "{given}: buffer size {} holds fewer than {} blocks of {}; set it (EVENT_BUFSIZE, Recorder::buffer_size) to at least {}, or make the blocks smaller (Recorder::block_size)",
                    machine::size_text(*buffer),
                    config::MIN_BLOCKS,
                    machine::size_text(u64::from(*block)),
                    machine::size_text(config::MIN_BLOCKS * u64::from(*block))
                )
            }
            StartError::BadEventSet(why) => write!(f, "the event set cannot be recorded: {why}"),
            StartError::BufferTooLarge { requested, fits, limit, given } => write!(
                f,
                "{given}: buffer size {} is more than this machine can spare ({} fits, a quarter of {limit}); lower EVENT_BUFSIZE or set EVENT_BUFRESIZE=auto",
                machine::size_text(*requested),
                machine::size_text(*fits)
            ),
            StartError::Config(e) => write!(f, "{e}"),
            StartError::WriterThread(error) => write!(
                f,
                "cannot start the recorder's writer thread: {error}; the process has reached a thread limit (ulimit -u, the cgroup's pids.max)"
            ),
            StartError::Io { what, path, error } => {
                write!(f, "cannot create the {what} {}: {error}; choose a writable path", path.display())
            }
        }
    }
}

/// `Debug` writes the one-line message that `Display` writes, not the variant and its
/// fields: an error returned from `main` (`fn main() -> Result<(), StartError>`, or through
/// `Box<dyn Error>`) is printed by the standard library with `Debug`, as `Error: {:?}`, and
/// that line is what the program's user reads. A program that needs the parts matches on
/// them.
impl fmt::Debug for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for StartError {}

impl From<ConfigError> for StartError {
    fn from(e: ConfigError) -> StartError {
        StartError::Config(e)
    }
}
