//! Locks by lease id: acquire and release for a lease the caller names
//! (granted by [`Client::grant_lease`], or by another process), and the
//! lock views, one lock or all under a prefix. The guard API
//! ([`Lease::lock`](crate::Lease::lock)) acquires and releases through the
//! same two calls here (on its lease's session stream while that is open),
//! so both paths send the same requests.

use super::{ms, revision, Consistency};
use crate::acquire::LockOptions;
use crate::error::Error;
use crate::session::SessionSlot;
use crate::wire::{GetLockResponse, ListLocksResponse};
use crate::Client;
use leasehold_core::{LeaseId, LockName, Revision, Token};
use leasehold_proto::v1::lock_client::LockClient;
use leasehold_proto::v1::{AcquireRequest, GetLockRequest, ListLocksRequest, ReleaseRequest};
use std::time::Duration;
use tokio::time::Instant;

/// A lock granted by [`Client::acquire`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acquired {
    /// The fencing token: pass it to the protected resource with every write.
    pub token: Token,
    /// The revision of the grant.
    pub revision: Revision,
    /// The lease already held the lock; `token` is the one it had.
    pub already_held: bool,
    /// Time spent in the lock's queue.
    pub waited: Duration,
}

impl Client {
    /// Acquires `name` for `lease` with `options` (wait, fenced, lock
    /// delay, max hold, metadata; the `with_lock` settings are not used).
    /// A waiting acquire's call may take the wait longer than the call
    /// timeout, and a retry waits only for what is left of it, with the
    /// same request id. Fails with `Busy` (no wait) or `WaitTimeout`
    /// (naming how long it waited) if the lock is not had.
    pub async fn acquire(
        &self,
        lease: LeaseId,
        name: &LockName,
        options: &LockOptions,
    ) -> Result<Acquired, Error> {
        self.acquire_via(None, lease, name, options).await
    }

    /// [`Client::acquire`] on `session`'s stream while it is open, else
    /// unary: the guard API's path, on its lease's stream.
    pub(crate) async fn acquire_via(
        &self,
        session: Option<&SessionSlot>,
        lease: LeaseId,
        name: &LockName,
        options: &LockOptions,
    ) -> Result<Acquired, Error> {
        let request = AcquireRequest {
            lease: lease.0,
            name: name.to_string(),
            wait_ms: 0,
            request_id: crate::request_id::new_request_id(),
            fenced: options.fenced,
            lock_delay_ms: ms(options.lock_delay),
            max_hold_ms: options.max_hold.map_or(0, ms),
            metadata: options.metadata.clone().into_iter().collect(),
            permits: options.permits.map(Into::into),
        };
        let wait = options.wait;
        let started = Instant::now();
        let give_up_at = started + wait;
        let reply = self
            .send(session, wait, || {
                let mut request = request.clone();
                if !wait.is_zero() {
                    // A retry waits only for what is left (at least 1 ms, so
                    // it still queues rather than failing as busy).
                    let left = give_up_at.saturating_duration_since(Instant::now());
                    request.wait_ms = ms(left).max(1);
                }
                request
            })
            .await;
        match reply {
            Ok(reply) => Ok(Acquired {
                token: Token(reply.token),
                revision: revision(reply.header.as_ref()),
                already_held: reply.already_held,
                waited: Duration::from_millis(reply.waited_ms),
            }),
            Err(Error::WaitTimeout { .. }) => Err(Error::WaitTimeout {
                name: name.to_string(),
                waited: started.elapsed(),
            }),
            Err(other) => Err(other.about(name.as_str())),
        }
    }

    /// Releases `name`, held by `lease` under `token`. Loud: a lock held
    /// under another token fails with `NotHolder` (naming the holder's
    /// token and this one), a missing lock with `NoSuchLock` (naming look-alike names),
    /// a lease that is gone with `LeaseNotFound`/`LeaseExpired`. Returns the
    /// revision of the release.
    pub async fn release(
        &self,
        lease: LeaseId,
        name: &LockName,
        token: Token,
    ) -> Result<Revision, Error> {
        self.release_via(None, lease, name, token).await
    }

    /// [`Client::release`] on `session`'s stream while it is open, else
    /// unary: the guard API's path, on its lease's stream.
    pub(crate) async fn release_via(
        &self,
        session: Option<&SessionSlot>,
        lease: LeaseId,
        name: &LockName,
        token: Token,
    ) -> Result<Revision, Error> {
        let request = ReleaseRequest {
            lease: lease.0,
            name: name.to_string(),
            token: token.0,
            request_id: crate::request_id::new_request_id(),
        };
        let reply = self
            .send(session, Duration::ZERO, || request.clone())
            .await
            .map_err(|error| error.about(name.as_str()).presented(Some(lease), token))?;
        Ok(revision(reply.header.as_ref()))
    }

    /// Describes `name`: its holder (lease, token, owner, timings), its
    /// queue, its lock delay and the usual hold under its prefix. A lock
    /// that does not exist (free, nobody waiting) is `NoSuchLock`.
    pub async fn get_lock(
        &self,
        name: &LockName,
        consistency: Consistency,
    ) -> Result<GetLockResponse, Error> {
        let request = GetLockRequest {
            name: name.to_string(),
            stale: consistency.stale(),
        };
        self.call("GetLock", Duration::ZERO, |channel| {
            let request = request.clone();
            async move { LockClient::new(channel).get(request).await }
        })
        .await
        .map_err(|error| error.about(name.as_str()))
    }

    /// Lists the locks whose name starts with `prefix` ("" for all), up to
    /// the server's `LIST_LOCKS_MAX` (`truncated` says more matched).
    pub async fn list_locks(
        &self,
        prefix: &str,
        consistency: Consistency,
    ) -> Result<ListLocksResponse, Error> {
        let request = ListLocksRequest {
            prefix: prefix.to_owned(),
            limit: 0,
            stale: consistency.stale(),
        };
        self.call("ListLocks", Duration::ZERO, |channel| {
            let request = request.clone();
            async move { LockClient::new(channel).list(request).await }
        })
        .await
    }
}
