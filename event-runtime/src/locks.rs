//! The recorder's std mutexes, taken whatever a panic elsewhere left them: every update under
//! them is complete before it is released, so a poisoned lock holds no half state, and a
//! recorder that panicked on one thread must not panic on every other.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, poisoned or not.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
