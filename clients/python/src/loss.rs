//! Watching for the loss of a lease or of one lock: [`Loss`] (a lease's or
//! a guard's `lost`) asks "still ours?" from the clock now, waits for the
//! loss with the GIL released, and runs Python callbacks at the loss from
//! the notifier thread. It holds views that keep nothing renewed.

use crate::call::block_on;
use crate::convert::optional_seconds;
use crate::errors::{lost_to_py, lost_value};
use crate::runtime::{call_reporting, notify, runtime};
use leasehold_client::{LeaseHandle, LockHandle, LockLost};
use pyo3::prelude::*;

/// The loss of a lease or of one lock: `check()`, `loss()`,
/// `wait(timeout)`, `on_lost(callback)`.
#[pyclass(frozen, module = "leasehold._native")]
#[derive(Clone)]
pub struct Loss {
    watched: Watched,
}

/// A lease, or one lock held under a lease.
#[derive(Clone)]
pub enum Watched {
    Lease(LeaseHandle),
    Lock(LockHandle),
}

impl Watched {
    /// Whether ownership still holds now, read from the boot clock.
    pub fn check(&self) -> Result<(), LockLost> {
        match self {
            Watched::Lease(lease) => lease.check().map(drop),
            Watched::Lock(lock) => lock.fence().map(drop),
        }
    }

    async fn lost(&self) -> LockLost {
        match self {
            Watched::Lease(lease) => lease.lost().await,
            Watched::Lock(lock) => lock.lost().await,
        }
    }
}

impl Loss {
    pub fn new(watched: Watched) -> Loss {
        Loss { watched }
    }
}

#[pymethods]
impl Loss {
    /// `None` while ownership holds, else the `LockLost` exception value.
    fn loss(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.watched.check().err().map(|lost| lost_value(py, &lost))
    }

    /// Raises `LockLost` if ownership is gone.
    pub fn check(&self, py: Python<'_>) -> PyResult<()> {
        self.watched.check().map_err(|lost| lost_to_py(py, &lost))
    }

    /// Waits up to `timeout` seconds (`None`: without bound) for the loss,
    /// with the GIL released; returns whether it was lost.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let timeout = optional_seconds("timeout", timeout)?;
        let watched = self.watched.clone();
        Ok(block_on(py, async move {
            match timeout {
                Some(timeout) => tokio::time::timeout(timeout, watched.lost()).await.is_ok(),
                None => {
                    watched.lost().await;
                    true
                }
            }
        }))
    }

    /// Calls `callback(error)` from the notifier thread when ownership is
    /// taken away (not when this process releases or revokes it).
    fn on_lost(&self, callback: Py<PyAny>) {
        let watched = self.watched.clone();
        runtime().spawn(async move {
            let lost = watched.lost().await;
            if lost.cause.is_voluntary() {
                return;
            }
            notify(move |py| {
                let error = lost_value(py, &lost);
                call_reporting(py, &callback, Some(error));
            });
        });
    }
}
