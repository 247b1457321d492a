//! Leader election, one call at a time: who leads ([`Client::leader`]),
//! following every change ([`Client::observe`]), and the leader setting
//! its value ([`Client::proclaim`]). An election is a lock: a campaign is
//! an acquire carrying a value (`Lease::campaign`), the epoch is the
//! grant's token, resigning is releasing.

use super::{revision, Consistency};
use crate::error::Error;
use crate::wire::{Leader, LeaderChange};
use crate::Client;
use leasehold_core::election::VALUE_KEY;
use leasehold_core::{LeaseId, LockName, Revision, Token};
use leasehold_proto::v1::lock_client::LockClient;
use leasehold_proto::v1::watch_client::WatchClient;
use leasehold_proto::v1::{ObserveRequest, ProclaimRequest};
use std::time::Duration;
use tonic::Streaming;

/// An open stream of one election's leader changes (see [`Client::observe`]).
#[derive(Debug)]
pub struct LeaderStream {
    inner: Streaming<LeaderChange>,
}

impl LeaderStream {
    /// The next change: first the leader at the start, then each new
    /// leader, new value, and "no leader" (`leader: None`). `Ok(None)`
    /// when the server ended the stream (its node shut down); an error
    /// ends it (`Unavailable` for a broken connection, `ResourceExhausted`
    /// for an observer that fell too far behind): observe again.
    pub async fn next(&mut self) -> Result<Option<LeaderChange>, Error> {
        self.inner
            .message()
            .await
            .map_err(|status| Error::from_status(&status).0)
    }
}

impl Client {
    /// The leader of `election` now (`None`: nobody leads), after a read
    /// barrier.
    pub async fn leader(&self, election: &LockName) -> Result<Option<Leader>, Error> {
        let lock = match self.get_lock(election, Consistency::Linearizable).await {
            Ok(found) => found.lock,
            Err(Error::NoSuchLock { .. }) => return Ok(None),
            Err(other) => return Err(other),
        };
        let holder = lock.and_then(|lock| lock.holder);
        Ok(holder.map(|holder| Leader {
            lease: holder.lease,
            token: holder.token,
            owner: holder.owner.map(|o| o.owner).unwrap_or_default(),
            value: holder.metadata.get(VALUE_KEY).cloned().unwrap_or_default(),
        }))
    }

    /// Follows `election`: its leader now, then every change, in log order.
    pub async fn observe(&self, election: &LockName) -> Result<LeaderStream, Error> {
        let request = ObserveRequest {
            name: election.to_string(),
        };
        let inner = self
            .call("Observe", Duration::ZERO, |channel| {
                let request = request.clone();
                async move { WatchClient::new(channel).observe(request).await }
            })
            .await
            .map_err(|error| error.about(election.as_str()))?;
        Ok(LeaderStream { inner })
    }

    /// Sets the value of `election`, led by `lease` in the epoch `token`.
    /// Refused with `NotHolder` if that is not the leader now (another
    /// leads, or this lease led in an earlier epoch). Returns the revision.
    pub async fn proclaim(
        &self,
        lease: LeaseId,
        election: &LockName,
        token: Token,
        value: &str,
    ) -> Result<Revision, Error> {
        let request = ProclaimRequest {
            lease: lease.0,
            name: election.to_string(),
            token: token.0,
            value: value.to_owned(),
            request_id: crate::request_id::new_request_id(),
        };
        let reply = self
            .call("Proclaim", Duration::ZERO, |channel| {
                let request = request.clone();
                async move { LockClient::new(channel).proclaim(request).await }
            })
            .await
            .map_err(|error| error.about(election.as_str()).presented(Some(lease), token))?;
        Ok(revision(reply.header.as_ref()))
    }
}
