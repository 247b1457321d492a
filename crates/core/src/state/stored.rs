//! How a [`State`] is written: its fields in order, as the derived encoding
//! wrote them, except that three tables are written from what the state
//! keeps in their place: the lease table with each row's id
//! (`lease_rows`), the lock table with each row's name (`lock_rows`), and
//! the grant requests as a map from request id to lease,
//! the ids borrowed from the lease rows (`grant_requests`). Reading is
//! `State`'s derived `Deserialize`, field for field.

use super::{grant_requests, lease_rows, lock_rows, FailedRelease, ForceReleaseRecord, State};
use crate::auth::Auth;
use crate::fenced::FencedStore;
use crate::{Lease, LeaseId, Lock, LockName, Reply, RequestId, Revision};
use imbl::OrdMap;
use serde::{Serialize, Serializer};
use std::collections::{BTreeSet, VecDeque};

/// The state's fields, borrowed, in the order they are stored.
#[derive(Serialize)]
#[serde(rename = "State")]
struct StateOut<'a> {
    revision: &'a Revision,
    #[serde(serialize_with = "leases_with_ids")]
    leases: &'a OrdMap<LeaseId, Box<Lease>>,
    #[serde(serialize_with = "locks_with_names")]
    locks: &'a OrdMap<LockName, Box<Lock>>,
    grant_requests: grant_requests::Stored<'a>,
    expired_order: &'a VecDeque<LeaseId>,
    expired: &'a BTreeSet<LeaseId>,
    failed_releases: &'a VecDeque<FailedRelease>,
    revocations: &'a VecDeque<(LeaseId, RequestId, Reply)>,
    fenced: &'a FencedStore,
    force_releases: &'a VecDeque<ForceReleaseRecord>,
    auth: &'a Auth,
}

impl Serialize for State {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        StateOut {
            revision: &self.revision,
            leases: &self.leases,
            locks: &self.locks,
            grant_requests: self.grant_requests.stored(&self.leases),
            expired_order: &self.expired_order,
            expired: &self.expired,
            failed_releases: &self.failed_releases,
            revocations: &self.revocations,
            fenced: &self.fenced,
            force_releases: &self.force_releases,
            auth: &self.auth,
        }
        .serialize(serializer)
    }
}

/// The lock table with each row's name (`lock_rows`), from its borrow.
fn locks_with_names<S: Serializer>(
    locks: &&OrdMap<LockName, Box<Lock>>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    lock_rows::serialize(locks, serializer)
}

fn leases_with_ids<S: Serializer>(
    leases: &&OrdMap<LeaseId, Box<Lease>>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    lease_rows::serialize(leases, serializer)
}
