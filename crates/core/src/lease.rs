//! The lease table's row: one client's time-bound liveness, and the locks it
//! holds or waits for (kept here too so ending a lease touches only its own
//! locks instead of scanning the lock table).

use crate::auth::Principal;
use crate::dedup::Dedup;
use crate::{LeaseId, NameSet, OwnerInfo, RequestId, Revision, WaitSet};
use serde::{Deserialize, Serialize};

/// A live lease.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The lease id (= `granted_revision`).
    pub id: LeaseId,
    /// Time to live without a renewal, in ms.
    pub ttl_ms: u64,
    /// Who holds the lease.
    pub owner: OwnerInfo,
    /// Revision of the grant.
    pub granted_revision: Revision,
    /// Proposer's wall time of the grant (display only).
    pub granted_unix_ms: u64,
    /// Proposer's wall time of the latest renewal (display only).
    pub renewed_unix_ms: u64,
    /// Keep-alives applied so far. The leader's expiry names the count it
    /// saw, so a renewal applied between the decision to expire and the
    /// expiry itself wins (an acknowledged renewal is never undone).
    pub renewals: u64,
    /// Locks this lease holds.
    pub holds: NameSet,
    /// Locks this lease is queued for.
    pub waits: WaitSet,
    /// Outcomes of recent requests, for idempotent retries.
    pub(crate) dedup: Dedup,
    /// The request id of the grant, so ending the lease also forgets it in
    /// the state's grant-request map.
    pub(crate) grant_request_id: Option<RequestId>,
    /// The principal that granted the lease (`None`: granted anonymously,
    /// with auth disabled). With auth enabled only it, or an admin, may
    /// renew, revoke or use the lease; its quota counts the lease's use.
    pub principal: Option<Principal>,
}
