//! Starting and stopping: the recorder's settings (`recorder`), its start (`start`) and why
//! one fails (`start_error`), the running
//! recording and its stop (`recording`), a test's capture (`capture`), and what a recording
//! installs in its process: the crash and panic handlers (`crash`) and the `fork()` handlers
//! (`fork`).
//!
//! This is the top of the recorder: it puts the floors below together and is what the crate
//! root re-exports as the API.

pub(crate) mod capture;
pub(crate) mod crash;
pub(crate) mod fork;
pub(crate) mod recorder;
pub(crate) mod recording;
pub(crate) mod start;
pub(crate) mod start_error;
