//! `_native.Lease`: a lease renewed on the runtime, and the acquires made
//! under it.

use crate::call::{deliver, plain, spawn, Call};
use crate::convert::{optional_seconds, seconds};
use crate::guard::Guard;
use crate::loss::{Loss, Watched};
use leasehold_client::Error;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// A granted lease. Renewal goes on while this object or a guard of it
/// lives; `revoke()` (or dropping everything) ends it.
#[pyclass(frozen, module = "leasehold._native")]
pub struct Lease {
    /// `None` once revoked here.
    lease: Mutex<Option<leasehold_client::Lease>>,
    lost: Loss,
    id: u64,
    ttl: f64,
}

impl Lease {
    pub fn new(lease: leasehold_client::Lease) -> Lease {
        Lease {
            lost: Loss::new(Watched::Lease(lease.handle())),
            id: lease.id().0,
            ttl: lease.timing().ttl.as_secs_f64(),
            lease: Mutex::new(Some(lease)),
        }
    }

    fn lease(&self) -> MutexGuard<'_, Option<leasehold_client::Lease>> {
        self.lease
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn live(&self) -> PyResult<leasehold_client::Lease> {
        self.lease().clone().ok_or_else(|| {
            PyRuntimeError::new_err(format!(
                "lease {} was revoked by this process; grant a new lease",
                self.id
            ))
        })
    }
}

#[pymethods]
impl Lease {
    /// The lease id.
    #[getter]
    fn id(&self) -> u64 {
        self.id
    }

    /// The ttl, in seconds.
    #[getter]
    fn ttl(&self) -> f64 {
        self.ttl
    }

    /// Its loss: `check()`, `loss()`, `wait(timeout)`, `on_lost(callback)`.
    #[getter]
    fn lost(&self) -> Loss {
        self.lost.clone()
    }

    /// Acquires `name` under this lease (as a lock, or with `limit`,
    /// `shared` or `exclusive` as a semaphore or a read-write lock; the
    /// caller checks that at most one of those is given). Delivers a
    /// `Guard`.
    #[pyo3(signature = (name, wait=0.0, fenced=false, lock_delay=None, max_hold=None, metadata=BTreeMap::new(), limit=None, shared=false, exclusive=false, permits=1))]
    #[allow(clippy::too_many_arguments, reason = "Python keyword arguments")]
    fn acquire(
        &self,
        name: String,
        wait: f64,
        fenced: bool,
        lock_delay: Option<f64>,
        max_hold: Option<f64>,
        metadata: BTreeMap<String, String>,
        limit: Option<u32>,
        shared: bool,
        exclusive: bool,
        permits: u32,
    ) -> PyResult<Call> {
        let mut request = self
            .live()?
            .lock(name)
            .wait(seconds("wait")(wait)?)
            .fenced(fenced);
        if let Some(limit) = limit {
            request = request.semaphore(limit, permits);
        }
        if shared {
            request = request.shared();
        }
        if exclusive {
            request = request.exclusive();
        }
        if let Some(delay) = optional_seconds("lock_delay", lock_delay)? {
            request = request.lock_delay(delay);
        }
        if let Some(max_hold) = optional_seconds("max_hold", max_hold)? {
            request = request.max_hold(max_hold);
        }
        for (key, value) in metadata {
            request = request.metadata(key, value);
        }
        let client = self.live()?.client().clone();
        Ok(spawn(async move {
            deliver(request.acquire().await, |py, guard| {
                plain(py, Guard::new(guard, client))
            })
        }))
    }

    /// Acquires every lock of `names` under this lease, all or none,
    /// waiting up to `wait` seconds. Delivers a `Guard` per lock, in order.
    #[pyo3(signature = (names, wait=0.0, fenced=false))]
    fn acquire_all(&self, names: Vec<String>, wait: f64, fenced: bool) -> PyResult<Call> {
        let lease = self.live()?;
        let client = lease.client().clone();
        let request = lease
            .lock_all(names)
            .wait(seconds("wait")(wait)?)
            .fenced(fenced);
        Ok(spawn(async move {
            deliver(request.acquire().await, move |py, guards| {
                let guards: Vec<Guard> = guards
                    .into_iter()
                    .map(|guard| Guard::new(guard, client.clone()))
                    .collect();
                plain(py, guards)
            })
        }))
    }

    /// Ends the lease now, releasing its locks. Delivers their names
    /// (none if the server had already ended it).
    fn revoke(&self) -> Call {
        let lease = self.lease().take();
        spawn(async move {
            // A lease the server already ended (expired, revoked by an
            // operator) holds nothing more to release.
            let revoked = match lease {
                Some(lease) => match lease.revoke().await {
                    Err(Error::LeaseNotFound { .. } | Error::LeaseExpired { .. }) => Ok(Vec::new()),
                    other => other,
                },
                None => Ok(Vec::new()),
            };
            deliver(revoked, plain)
        })
    }

    /// Renews once, now. Delivers the seconds then left.
    fn keep_alive_once(&self) -> PyResult<Call> {
        let lease = self.live()?;
        Ok(spawn(async move {
            deliver(lease.keep_alive_once().await, |py, left| {
                plain(py, left.as_secs_f64())
            })
        }))
    }
}
