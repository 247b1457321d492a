//! Leader election for Python: `Client.leader`, `Client.observe` (an
//! [`Observer`] whose `next()` delivers each change) and `Guard.proclaim`.
//! A leader crosses as `(lease, token, owner, value)`, a change as
//! `(leader or None, revision)`.

use crate::call::{deliver, plain, spawn, Call};
use leasehold_client::wire::{Leader, LeaderChange};
use leasehold_client::{Client, Error, LeaderStream, LockName};
use pyo3::prelude::*;
use std::sync::Arc;

/// A leader as Python receives it.
type LeaderTuple = (u64, u64, String, String);

fn leader_tuple(leader: Leader) -> LeaderTuple {
    (leader.lease, leader.token, leader.owner, leader.value)
}

fn change_tuple(change: LeaderChange) -> (Option<LeaderTuple>, u64) {
    (change.leader.map(leader_tuple), change.revision)
}

/// The leader of `name` now, or `None`. Delivers that.
pub fn leader(client: Client, name: String) -> Call {
    spawn(async move {
        let found = async {
            let name = LockName::parse(&name).map_err(Error::from)?;
            client.leader(&name).await
        }
        .await;
        deliver(found, |py, leader| plain(py, leader.map(leader_tuple)))
    })
}

/// Opens an observer of `name`. Delivers an `Observer`.
pub fn observe(client: Client, name: String) -> Call {
    spawn(async move {
        let opened = async {
            let name = LockName::parse(&name).map_err(Error::from)?;
            client.observe(&name).await
        }
        .await;
        deliver(opened, |py, stream| {
            let stream = Arc::new(tokio::sync::Mutex::new(stream));
            plain(py, Observer { stream })
        })
    })
}

/// One election's changes, in order.
#[pyclass(frozen, module = "leasehold._native")]
pub struct Observer {
    stream: Arc<tokio::sync::Mutex<LeaderStream>>,
}

#[pymethods]
impl Observer {
    /// The next change: the leader at the start, then each new leader,
    /// value, or no leader. Delivers `(leader or None, revision)`, or
    /// `None` if the server ended the stream.
    fn next(&self) -> Call {
        let stream = self.stream.clone();
        spawn(async move {
            let next = stream.lock().await.next().await;
            deliver(next, |py, change| plain(py, change.map(change_tuple)))
        })
    }
}

/// Sets the value of `name`, led by `lease` in the epoch `token`.
/// Delivers the revision.
pub fn proclaim(client: Client, lease: u64, name: LockName, token: u64, value: String) -> Call {
    spawn(async move {
        let lease = leasehold_client::LeaseId(lease);
        let token = leasehold_client::Token(token);
        let said = client.proclaim(lease, &name, token, &value).await;
        deliver(said, |py, revision| plain(py, revision.0))
    })
}
