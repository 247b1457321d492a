//! The lease table's row: one client's time-bound liveness, and the locks it
//! holds or waits for (kept here too so ending a lease touches only its own
//! locks instead of scanning the lock table).
//!
//! The row keeps neither its id (the table's key: readers get a
//! [`LeaseView`], the id and the row) nor its grant's revision (the id: a
//! lease id is the revision of its grant). The stored row still carries
//! both, in their old places, so stored snapshots read unchanged
//! (`LeaseOut`, `LeaseIn`, written and read by the table's
//! `state/lease_rows.rs`).
//!
//! The ttl and the renewal count share one word (`Term`): a ttl is at most
//! a day, 27 bits, which leaves 37 for the count. With the owner in one
//! word (`lease_owner.rs`), the row takes 128 bytes, the size class below
//! 160 (a million one-lock leases: docs/DESIGN.md §6d).

use crate::auth::Principal;
use crate::dedup::Dedup;
use crate::limits::TTL_MS_MAX;
use crate::{LeaseId, LeaseOwner, NameSet, RequestId, Revision, WaitSet};
use serde::{Deserialize, Serialize};
use std::ops::Deref;

/// Bits of [`Term`] that hold the ttl.
const TTL_BITS: u32 = 27;
const _: () = assert!(TTL_MS_MAX < 1 << TTL_BITS, "a ttl fits its bits");
/// Renewal counts wrap at this modulus (2^37: a lease renewed a million
/// times a second would take 38 hours to get there). A count is only ever
/// compared for equality (has a renewal applied since an expiry was
/// decided?), which a wrap keeps, as long as the same count does not come
/// round again between the two.
pub const RENEWALS_MODULUS: u64 = 1 << (64 - TTL_BITS);

/// A lease's ttl and renewal count in one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Term(u64);

impl Term {
    fn new(ttl_ms: u64, renewals: u64) -> Option<Term> {
        (ttl_ms < 1 << TTL_BITS && renewals < RENEWALS_MODULUS)
            .then_some(Term(renewals << TTL_BITS | ttl_ms))
    }

    fn ttl_ms(self) -> u64 {
        self.0 & ((1 << TTL_BITS) - 1)
    }

    fn renewals(self) -> u64 {
        self.0 >> TTL_BITS
    }
}

/// A live lease's row (its id is the table's key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// Time to live without a renewal (ms), and the keep-alives applied so
    /// far. The leader's expiry names the count it saw, so a renewal
    /// applied between the decision to expire and the expiry itself wins
    /// (an acknowledged renewal is never undone).
    term: Term,
    /// Who holds the lease (packed: `lease_owner.rs`).
    pub owner: LeaseOwner,
    /// Proposer's wall time of the grant (display only).
    pub granted_unix_ms: u64,
    /// Proposer's wall time of the latest renewal (display only).
    pub renewed_unix_ms: u64,
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
    /// A lease just granted with `ttl_ms` (checked at the boundary, at most
    /// [`TTL_MS_MAX`]) to `owner` at `at_unix_ms`, no renewal yet.
    pub(crate) fn granted(
        ttl_ms: u64,
        owner: LeaseOwner,
        at_unix_ms: u64,
        grant_request_id: Option<RequestId>,
        principal: Option<Principal>,
    ) -> Lease {
        Lease {
            term: Term::new(ttl_ms, 0).expect("ttl checked at the boundary"),
            owner,
            granted_unix_ms: at_unix_ms,
            renewed_unix_ms: at_unix_ms,
            holds: NameSet::default(),
            waits: WaitSet::default(),
            dedup: Dedup::default(),
            grant_request_id,
            principal,
        }
    }

    /// Time to live without a renewal, in ms.
    pub fn ttl_ms(&self) -> u64 {
        self.term.ttl_ms()
    }

    /// Keep-alives applied so far, modulo [`RENEWALS_MODULUS`].
    pub fn renewals(&self) -> u64 {
        self.term.renewals()
    }

    /// Records one more keep-alive, applied at `at_unix_ms`.
    pub(crate) fn renewed(&mut self, at_unix_ms: u64) {
        let renewals = (self.renewals() + 1) % RENEWALS_MODULUS;
        self.term = Term::new(self.ttl_ms(), renewals).expect("within the modulus");
        self.renewed_unix_ms = at_unix_ms;
    }
}

/// A live lease as readers see it: its id and its row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseView<'a> {
    /// The lease id (= the revision of its grant).
    pub id: LeaseId,
    row: &'a Lease,
}

impl<'a> LeaseView<'a> {
    /// The lease `id` whose row is `row`.
    pub fn new(id: LeaseId, row: &'a Lease) -> LeaseView<'a> {
        LeaseView { id, row }
    }

    /// Revision of the grant: the lease id.
    pub fn granted_revision(&self) -> Revision {
        Revision(self.id.0)
    }
}

impl Deref for LeaseView<'_> {
    type Target = Lease;

    fn deref(&self) -> &Lease {
        self.row
    }
}

/// A lease as stored: the row's fields, borrowed, with the id and the
/// grant's revision where rows used to keep them.
#[derive(Serialize)]
#[serde(rename = "Lease")]
pub(crate) struct LeaseOut<'a> {
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

/// A lease as read back; the stored grant revision is the id, and dropped
/// (the table checks the stored id against its key).
#[derive(Deserialize)]
#[serde(rename = "Lease")]
pub(crate) struct LeaseIn {
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

impl Lease {
    /// The row `id` as stored.
    pub(crate) fn stored(&self, id: LeaseId) -> LeaseOut<'_> {
        LeaseOut {
            id,
            ttl_ms: self.ttl_ms(),
            owner: &self.owner,
            granted_revision: Revision(id.0),
            granted_unix_ms: self.granted_unix_ms,
            renewed_unix_ms: self.renewed_unix_ms,
            renewals: self.renewals(),
            holds: &self.holds,
            waits: &self.waits,
            dedup: &self.dedup,
            grant_request_id: &self.grant_request_id,
            principal: &self.principal,
        }
    }
}

impl LeaseIn {
    /// The stored lease id.
    pub(crate) fn id(&self) -> LeaseId {
        self.id
    }
}

impl TryFrom<LeaseIn> for Lease {
    type Error = String;

    fn try_from(stored: LeaseIn) -> Result<Lease, String> {
        let term = Term::new(stored.ttl_ms, stored.renewals).ok_or_else(|| {
            format!(
                "lease {} is stored with ttl {} ms (a row holds less than {} ms) and {} \
                 renewals (fewer than {RENEWALS_MODULUS}): the snapshot is damaged",
                stored.id.0,
                stored.ttl_ms,
                1u64 << TTL_BITS,
                stored.renewals
            )
        })?;
        Ok(Lease {
            term,
            owner: stored.owner,
            granted_unix_ms: stored.granted_unix_ms,
            renewed_unix_ms: stored.renewed_unix_ms,
            holds: stored.holds,
            waits: stored.waits,
            dedup: stored.dedup,
            grant_request_id: stored.grant_request_id,
            principal: stored.principal,
        })
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

    /// The row stored as `bytes`, read back.
    fn read(bytes: &[u8]) -> Result<(LeaseId, Lease), String> {
        let stored: LeaseIn = postcard::from_bytes(bytes).unwrap();
        let id = stored.id();
        Lease::try_from(stored).map(|row| (id, row))
    }

    #[test]
    fn a_row_is_stored_as_older_builds_stored_it() {
        let bytes = postcard::to_allocvec(&older()).unwrap();
        let (id, lease) = read(&bytes).unwrap();
        assert_eq!(LeaseView::new(id, &lease).granted_revision(), Revision(41));
        assert_eq!(lease.owner.host(), "web-7");
        assert_eq!(postcard::to_allocvec(&lease.stored(id)).unwrap(), bytes);
        let back: OlderLease = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, older());
    }

    #[test]
    fn a_row_takes_128_bytes() {
        assert_eq!(std::mem::size_of::<Lease>(), 128);
    }

    #[test]
    fn the_renewal_count_wraps_at_its_modulus_and_keeps_the_ttl() {
        let (_, mut lease) = read(&postcard::to_allocvec(&older()).unwrap()).unwrap();
        assert_eq!((lease.ttl_ms(), lease.renewals()), (10_000, 3));
        lease.term = Term::new(TTL_MS_MAX, RENEWALS_MODULUS - 1).unwrap();
        lease.renewed(1_764_700_003_000);
        assert_eq!((lease.ttl_ms(), lease.renewals()), (TTL_MS_MAX, 0));
        assert_eq!(lease.renewed_unix_ms, 1_764_700_003_000);
        lease.renewed(1_764_700_004_000);
        assert_eq!((lease.ttl_ms(), lease.renewals()), (TTL_MS_MAX, 1));
    }

    #[test]
    fn a_stored_row_out_of_range_is_refused_by_name() {
        let mut long = older();
        long.ttl_ms = 1 << TTL_BITS;
        let mut renewed = older();
        renewed.renewals = RENEWALS_MODULUS;
        for row in [long, renewed] {
            let error = read(&postcard::to_allocvec(&row).unwrap()).unwrap_err();
            assert!(error.starts_with("lease 41 is stored with ttl"), "{error}");
        }
    }
}
