//! The locks and atomics the hand-off protocols use (the exchange's pool and queue, a thread's
//! lane and the stop that takes it), from std or, under `--cfg loom`, from loom, so that loom
//! can explore every interleaving of the real code (crossbeam-epoch's pattern).
//!
//! Run the models with:
//! `RUSTFLAGS="--cfg loom" cargo test -p event-runtime --lib --release loom`

#[cfg(loom)]
pub(crate) use loom::sync::atomic::AtomicU64;
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::AtomicU64;
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};
