//! Leases without a keeper: grant one, renew it once, revoke it, describe
//! it. For a script that holds locks across several invocations and renews
//! from a sidecar (`leasehold lease …`); a process that holds a lock itself
//! wants [`Client::lease`], whose keeper renews in the background and
//! reports the loss.

use super::{ms, revision, Consistency};
use crate::error::Error;
use crate::wire::{LeaseInfo, OwnerInfo};
use crate::Client;
use leasehold_core::{LeaseId, Revision};
use leasehold_proto::v1::lease_client::LeaseClient;
use leasehold_proto::v1::{
    GetLeaseRequest, GrantRequest, KeepAliveRequest, ListLeasesRequest, ListLeasesResponse,
    RevokeRequest,
};
use std::time::Duration;

/// A lease granted by [`Client::grant_lease`]. Nothing renews it: it
/// expires after `ttl` unless renewed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Granted {
    /// The lease id.
    pub lease: LeaseId,
    /// Its time to live, as the server granted it.
    pub ttl: Duration,
    /// The revision of the grant.
    pub revision: Revision,
}

/// One renewal by [`Client::renew_lease`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Renewal {
    /// The lease renewed.
    pub lease: LeaseId,
    /// Its time to live, from now.
    pub ttl: Duration,
    /// The revision of the renewal.
    pub revision: Revision,
}

impl Client {
    /// Grants a lease with time to live `ttl` (within `TTL_MS_MIN..=
    /// TTL_MS_MAX`, checked before sending) owned by `owner` (build it with
    /// [`owner_info`](crate::owner_info)), and returns it without renewing
    /// it. A retry after a lost reply carries the same request id, so it
    /// returns the same lease.
    pub async fn grant_lease(&self, ttl: Duration, owner: OwnerInfo) -> Result<Granted, Error> {
        let ttl_ms = ms(ttl);
        leasehold_core::command::check_ttl(ttl_ms)?;
        let request = GrantRequest {
            ttl_ms,
            owner: Some(owner),
            request_id: crate::request_id::new_request_id(),
        };
        let reply = self
            .call("Grant", Duration::ZERO, |channel| {
                let request = request.clone();
                async move { LeaseClient::new(channel).grant(request).await }
            })
            .await?;
        Ok(Granted {
            lease: LeaseId(reply.lease),
            ttl: Duration::from_millis(reply.ttl_ms),
            revision: revision(reply.header.as_ref()),
        })
    }

    /// Renews `lease` once (a unary keep-alive, acknowledged once the
    /// renewal is committed). A lease that is gone fails with
    /// `LeaseNotFound` or `LeaseExpired`.
    pub async fn renew_lease(&self, lease: LeaseId) -> Result<Renewal, Error> {
        let request = KeepAliveRequest {
            lease: lease.0,
            seq: 0,
            // No holds known here: the reply lists them.
            holdings_digest: 0,
        };
        let reply = self
            .call("KeepAlive", Duration::ZERO, |channel| async move {
                LeaseClient::new(channel).keep_alive(request).await
            })
            .await?;
        Ok(Renewal {
            lease: LeaseId(reply.lease),
            ttl: Duration::from_millis(reply.ttl_ms),
            revision: revision(reply.header.as_ref()),
        })
    }

    /// Revokes `lease`, releasing every lock it holds; returns their names.
    /// Idempotent across retries (one request id).
    pub async fn revoke_lease(&self, lease: LeaseId) -> Result<Vec<String>, Error> {
        let request = RevokeRequest {
            lease: lease.0,
            request_id: crate::request_id::new_request_id(),
        };
        let reply = self
            .call("Revoke", Duration::ZERO, |channel| {
                let request = request.clone();
                async move { LeaseClient::new(channel).revoke(request).await }
            })
            .await?;
        Ok(reply.released)
    }

    /// Describes `lease`: ttl and time left, owner, the locks it holds
    /// (with their tokens) and waits for, when it was granted and renewed.
    pub async fn lease_info(&self, lease: LeaseId) -> Result<LeaseInfo, Error> {
        let request = GetLeaseRequest { lease: lease.0 };
        let reply = self
            .call("GetLease", Duration::ZERO, |channel| async move {
                LeaseClient::new(channel).get(request).await
            })
            .await?;
        reply.lease.ok_or(Error::LeaseNotFound { lease })
    }

    /// Lists the live leases in id order (each as [`lease_info`](Self::lease_info)
    /// describes one), up to the server's `LIST_LEASES_MAX` (`truncated`
    /// says more are live).
    pub async fn list_leases(&self, consistency: Consistency) -> Result<ListLeasesResponse, Error> {
        let request = ListLeasesRequest {
            limit: 0,
            stale: consistency.stale(),
        };
        self.call("ListLeases", Duration::ZERO, |channel| async move {
            LeaseClient::new(channel).list(request).await
        })
        .await
    }
}
