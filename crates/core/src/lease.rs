//! The lease table's row: one client's time-bound liveness, and the locks it
//! holds or waits for (kept here too so ending a lease touches only its own
//! locks instead of scanning the lock table).
//!
//! The row does not keep its grant's revision: it is the lease id (a lease
//! id is the revision of its grant). The encoding still carries it, in its
//! old place, so stored snapshots read unchanged (`LeaseOut`, `LeaseIn`).

use crate::auth::Principal;
use crate::dedup::Dedup;
use crate::{LeaseId, LeaseOwner, NameSet, RequestId, Revision, WaitSet};
use serde::{Deserialize, Serialize, Serializer};

/// A live lease.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(from = "LeaseIn")]
pub struct Lease {
    /// The lease id (= the revision of its grant).
    pub id: LeaseId,
    /// Time to live without a renewal, in ms.
    pub ttl_ms: u64,
    /// Who holds the lease (packed: `lease_owner.rs`).
    pub owner: LeaseOwner,
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

impl Lease {
    /// Revision of the grant: the lease id.
    pub fn granted_revision(&self) -> Revision {
        Revision(self.id.0)
    }
}

/// A lease as stored: the row's fields, borrowed, with the grant's
/// revision where rows used to keep it.
#[derive(Serialize)]
#[serde(rename = "Lease")]
struct LeaseOut<'a> {
    id: LeaseId,
    ttl_ms: u64,
    owner: &'a LeaseOwner,
    granted_revision: Revision,
    granted_unix_ms: u64,
    renewed_unix_ms: u64,
    renewals: u64,
    holds: &'a NameSet,
    waits: &'a WaitSet,
    dedup: &'a Dedup,
    grant_request_id: &'a Option<RequestId>,
    principal: &'a Option<Principal>,
}

/// A lease as read back; the stored grant revision is the id, and dropped.
#[derive(Deserialize)]
#[serde(rename = "Lease")]
struct LeaseIn {
    id: LeaseId,
    ttl_ms: u64,
    owner: LeaseOwner,
    #[allow(dead_code, reason = "stored for older readers; always the id")]
    granted_revision: Revision,
    granted_unix_ms: u64,
    renewed_unix_ms: u64,
    renewals: u64,
    holds: NameSet,
    waits: WaitSet,
    dedup: Dedup,
    grant_request_id: Option<RequestId>,
    principal: Option<Principal>,
}

impl Serialize for Lease {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        LeaseOut {
            id: self.id,
            ttl_ms: self.ttl_ms,
            owner: &self.owner,
            granted_revision: self.granted_revision(),
            granted_unix_ms: self.granted_unix_ms,
            renewed_unix_ms: self.renewed_unix_ms,
            renewals: self.renewals,
            holds: &self.holds,
            waits: &self.waits,
            dedup: &self.dedup,
            grant_request_id: &self.grant_request_id,
            principal: &self.principal,
        }
        .serialize(serializer)
    }
}

impl From<LeaseIn> for Lease {
    fn from(stored: LeaseIn) -> Lease {
        Lease {
            id: stored.id,
            ttl_ms: stored.ttl_ms,
            owner: stored.owner,
            granted_unix_ms: stored.granted_unix_ms,
            renewed_unix_ms: stored.renewed_unix_ms,
            renewals: stored.renewals,
            holds: stored.holds,
            waits: stored.waits,
            dedup: stored.dedup,
            grant_request_id: stored.grant_request_id,
            principal: stored.principal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LockName, OwnerInfo};

    /// The row as builds before the packed owner stored it.
    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct OlderLease {
        id: LeaseId,
        ttl_ms: u64,
        owner: OwnerInfo,
        granted_revision: Revision,
        granted_unix_ms: u64,
        renewed_unix_ms: u64,
        renewals: u64,
        holds: Vec<LockName>,
        waits: Vec<LockName>,
        dedup: Vec<()>,
        grant_request_id: Option<RequestId>,
        principal: Option<Principal>,
    }

    fn older() -> OlderLease {
        OlderLease {
            id: LeaseId(41),
            ttl_ms: 10_000,
            owner: OwnerInfo {
                owner: "billing".into(),
                host: "web-7".into(),
                pid: 812,
                process_start_unix_ms: 1_764_700_000_000,
                labels: Default::default(),
            },
            granted_revision: Revision(41),
            granted_unix_ms: 1_764_700_001_000,
            renewed_unix_ms: 1_764_700_002_000,
            renewals: 3,
            holds: vec![LockName::parse("jobs/a").unwrap()],
            waits: vec![],
            dedup: vec![],
            grant_request_id: RequestId::parse("3w5e11264sgsf.1").unwrap(),
            principal: None,
        }
    }

    #[test]
    fn a_row_is_stored_as_older_builds_stored_it() {
        let bytes = postcard::to_allocvec(&older()).unwrap();
        let lease: Lease = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(lease.granted_revision(), Revision(41));
        assert_eq!(lease.owner.host(), "web-7");
        assert_eq!(postcard::to_allocvec(&lease).unwrap(), bytes);
        let back: OlderLease = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, older());
    }
}
