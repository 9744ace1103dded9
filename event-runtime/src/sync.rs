//! The locks the hand-off protocol uses, from std or, under `--cfg loom`, from loom, so that
//! loom can explore every interleaving of the real code (crossbeam-epoch's pattern).
//!
//! Run the models with:
//! `RUSTFLAGS="--cfg loom" cargo test -p event-runtime --lib --release loom`

#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};
