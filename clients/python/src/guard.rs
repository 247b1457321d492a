//! `_native.Guard`: one held lock, its fencing token, and its release.

use crate::call::{deliver, plain, spawn, Call};
use crate::convert::release_outcome;
use crate::loss::{Loss, Watched};
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
    lost: Loss,
    /// The client the lock was acquired through, for `proclaim`.
    client: leasehold_client::Client,
}

impl Guard {
    pub fn new(guard: LockGuard, client: leasehold_client::Client) -> Guard {
        let handle = guard.handle();
        Guard {
            lost: Loss::new(Watched::Lock(handle.clone())),
            handle,
            guard: Mutex::new(Some(guard)),
            client,
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

    /// Its loss: `check()`, `loss()`, `wait(timeout)`, `on_lost(callback)`.
    #[getter]
    fn lost(&self) -> Loss {
        self.lost.clone()
    }

    /// The token if the lock is still ours now, else raises `LockLost`.
    fn fence(&self, py: Python<'_>) -> PyResult<u64> {
        self.lost.check(py)?;
        Ok(self.handle.token().0)
    }

    /// Leading an election: sets its value (raises `LockLost` if the lead
    /// is already lost here). Delivers the revision.
    fn proclaim(&self, py: Python<'_>, value: String) -> PyResult<Call> {
        let token = self.fence(py)?;
        let (lease, name) = (self.handle.lease_id().0, self.handle.name().clone());
        Ok(crate::election::proclaim(
            self.client.clone(),
            lease,
            name,
            token,
            value,
        ))
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
