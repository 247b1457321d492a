//! `_native.Guard`: one held lock, its fencing token, and its release.

use crate::call::{deliver, plain, spawn, Call};
use crate::convert::release_outcome;
use crate::loss::Watched;
use crate::runtime::runtime;
use leasehold_client::{LockGuard, LockHandle};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::sync::{Mutex, MutexGuard};

/// A held lock. `fence()` before each protected write; `release()` when
/// done (dropping it releases in the background).
#[pyclass(frozen, module = "leasehold._native")]
pub struct Guard {
    /// `None` once released here.
    guard: Mutex<Option<LockGuard>>,
    handle: LockHandle,
    watched: Watched,
}

impl Guard {
    pub fn new(guard: LockGuard) -> Guard {
        let handle = guard.handle();
        Guard {
            watched: Watched::Lock(handle.clone()),
            handle,
            guard: Mutex::new(Some(guard)),
        }
    }

    fn guard(&self) -> MutexGuard<'_, Option<LockGuard>> {
        self.guard
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // A guard's drop sends its release on the runtime it finds.
        let _runtime = runtime().enter();
        drop(self.guard().take());
    }
}

#[pymethods]
impl Guard {
    /// The lock's name.
    #[getter]
    fn name(&self) -> String {
        self.handle.name().to_string()
    }

    /// The fencing token of this grant.
    #[getter]
    fn token(&self) -> u64 {
        self.handle.token().0
    }

    /// The lease holding the lock.
    #[getter]
    fn lease_id(&self) -> u64 {
        self.handle.lease_id().0
    }

    /// The token if the lock is still ours now, else raises `LockLost`.
    fn fence(&self, py: Python<'_>) -> PyResult<u64> {
        self.watched.ensure(py)?;
        Ok(self.handle.token().0)
    }

    /// `None` while the lock is ours, else the `LockLost` saying why not.
    fn loss(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.watched.loss(py)
    }

    /// Waits up to `timeout` seconds for the loss; returns whether lost.
    #[pyo3(signature = (timeout=None))]
    fn wait_lost(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        self.watched.wait(py, timeout)
    }

    /// Calls `callback(error)` when the lock is taken away.
    fn on_lost(&self, callback: Py<PyAny>) {
        self.watched.on_lost(callback);
    }

    /// Releases the lock. Delivers `(status, holder_token, nearby)`.
    fn release(&self) -> PyResult<Call> {
        let guard = self.guard().take().ok_or_else(|| {
            PyRuntimeError::new_err(format!(
                "lock {} was already released through this guard",
                self.handle.name()
            ))
        })?;
        Ok(spawn(async move {
            deliver(guard.release().await, |py, outcome| {
                plain(py, release_outcome(outcome))
            })
        }))
    }
}
