//! The grant requests of live leases: which lease a retried grant (same
//! request id) created, so it finds that lease instead of making an orphan.
//!
//! Why a set of `(hash of the request id, lease)` and not a map from the
//! id: the lease's row keeps its grant's request id anyway, so the table
//! needs only enough to find the row. A 16-byte entry instead of the id's
//! 24 bytes and the lease's 8 took 72 → ~30 bytes a lease out of the state
//! (a million one-lock leases: docs/DESIGN.md §6d). Two live grants whose
//! ids hash alike are both kept; a lookup checks each candidate row's id,
//! so a collision costs a comparison, never a wrong answer.
//!
//! Stored as before, a map from request id to lease (`State`'s encoding
//! borrows the rows' ids: [`GrantRequests::stored`]), so snapshots read
//! unchanged both ways.

use crate::{Lease, LeaseId, RequestId};
use imbl::{OrdMap, OrdSet};
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The live leases' grant requests, by the hash of their ids.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct GrantRequests {
    /// `(request_hash(id), lease)` of each live lease granted with an id.
    entries: OrdSet<(u64, LeaseId)>,
}

/// The leases table, whose rows keep their grants' ids.
type Leases = OrdMap<LeaseId, Box<Lease>>;

impl GrantRequests {
    /// The live lease granted for request `id`, if any. An entry whose
    /// lease is gone (only a damaged or forged snapshot files one; the
    /// invariant check names it) is passed over, never trusted.
    pub fn find(&self, id: &RequestId, leases: &Leases) -> Option<LeaseId> {
        let hash = request_hash(id);
        self.entries
            .range((hash, LeaseId(0))..=(hash, LeaseId(u64::MAX)))
            .map(|&(_, lease)| lease)
            .find(|lease| {
                let row = leases.get(lease);
                row.is_some_and(|row| row.grant_request_id.as_ref() == Some(id))
            })
    }

    /// The table the lease rows make: each row granted with an id, filed
    /// under it. The rows are what a state reads from a snapshot; the
    /// stored table is read for compatibility, then rebuilt from them, so a
    /// damaged or forged one cannot leave a lease its table lacks (whose
    /// end would find nothing to remove) or an entry naming no lease.
    pub fn of_rows(leases: &Leases) -> GrantRequests {
        let mut requests = GrantRequests::default();
        for (lease, row) in leases.iter() {
            if let Some(id) = &row.grant_request_id {
                requests.insert(id, *lease);
            }
        }
        requests
    }

    /// Records that request `id` granted `lease`.
    pub fn insert(&mut self, id: &RequestId, lease: LeaseId) {
        self.entries.insert((request_hash(id), lease));
    }

    /// Forgets the grant of `lease` by request `id`; false if it was not there.
    pub fn remove(&mut self, id: &RequestId, lease: LeaseId) -> bool {
        self.entries.remove(&(request_hash(id), lease)).is_some()
    }

    /// How many grants are filed.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The stored form: each request id with its lease, the ids borrowed
    /// from the rows in `leases`.
    pub fn stored<'a>(&'a self, leases: &'a Leases) -> Stored<'a> {
        Stored {
            requests: self,
            leases,
        }
    }
}

/// FNV-1a over the id's bytes: fixed, not seeded per process, so every
/// replica files an id alike and writes its snapshot in the same order.
/// Only this build's tables use it: a table read from a snapshot is
/// rebuilt from the stored ids.
fn request_hash(id: &RequestId) -> u64 {
    id.as_str()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// The table as stored: a map from request id to lease.
pub(super) struct Stored<'a> {
    requests: &'a GrantRequests,
    leases: &'a Leases,
}

impl Serialize for Stored<'_> {
    /// Each entry whose lease row keeps its id; an entry without one (a
    /// damaged snapshot's, read back) is not written again.
    /// (Counted first: the stored map says its length before its entries.)
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let kept = || {
            self.requests.entries.iter().filter_map(|(_, lease)| {
                let id = self.leases.get(lease)?.grant_request_id.as_ref()?;
                Some((id, lease))
            })
        };
        let mut map = serializer.serialize_map(Some(kept().count()))?;
        for (id, lease) in kept() {
            map.serialize_entry(id, lease)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for GrantRequests {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(StoredVisitor)
    }
}

/// Reads the stored map entry by entry into the hashed set.
struct StoredVisitor;

impl<'de> Visitor<'de> for StoredVisitor {
    type Value = GrantRequests;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of grant request ids to lease ids")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut stored: A) -> Result<GrantRequests, A::Error> {
        let mut requests = GrantRequests::default();
        while let Some((id, lease)) = stored.next_entry::<RequestId, LeaseId>()? {
            requests.insert(&id, lease);
        }
        Ok(requests)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(raw: &str) -> RequestId {
        RequestId::parse(raw).unwrap().expect("not empty")
    }

    /// A row granted by request `raw`.
    fn row(raw: &str) -> Box<Lease> {
        Box::new(Lease::granted(
            10_000,
            Default::default(),
            0,
            Some(id(raw)),
            None,
        ))
    }

    /// A lease table of `(lease, grant request id)` rows.
    fn granted(rows: &[(u64, &str)]) -> Leases {
        rows.iter()
            .map(|&(lease, raw)| (LeaseId(lease), row(raw)))
            .collect()
    }

    #[test]
    fn ids_that_hash_alike_are_told_apart_by_their_rows() {
        let leases = granted(&[(3, "a.1"), (5, "b.2")]);
        // Both filed under a.1's hash, as a collision would file them.
        let hash = request_hash(&id("a.1"));
        let mut requests = GrantRequests::default();
        requests.entries.insert((hash, LeaseId(3)));
        requests.entries.insert((hash, LeaseId(5)));
        assert_eq!(requests.find(&id("a.1"), &leases), Some(LeaseId(3)));
        requests.entries.remove(&(hash, LeaseId(3)));
        assert_eq!(
            requests.find(&id("a.1"), &leases),
            None,
            "b.2's row is not a.1's"
        );
    }

    #[test]
    fn an_entry_whose_lease_is_gone_is_passed_over_not_a_panic() {
        // As a damaged or forged snapshot can file it (found by libFuzzer:
        // corpus/snapshots/found-dead-lease-grant-request).
        let leases = granted(&[(3, "a.1")]);
        let mut requests = GrantRequests::default();
        requests.insert(&id("a.1"), LeaseId(9));
        requests.insert(&id("b.2"), LeaseId(3));
        assert_eq!(requests.find(&id("a.1"), &leases), None);
        let bytes = postcard::to_allocvec(&requests.stored(&leases)).expect("encodes");
        let stored: std::collections::BTreeMap<String, LeaseId> =
            postcard::from_bytes(&bytes).expect("reads");
        // Lease 9's entry is dropped; lease 3's is stored under the id its
        // row keeps, so the table read back files it where it belongs.
        let expected = [("a.1".to_owned(), LeaseId(3))].into_iter().collect();
        assert_eq!(stored, expected);
    }

    #[test]
    fn the_rows_make_the_table() {
        let leases = granted(&[(3, "a.1"), (5, "b.2")]);
        let requests = GrantRequests::of_rows(&leases);
        assert_eq!(requests.len(), 2);
        assert_eq!(requests.find(&id("b.2"), &leases), Some(LeaseId(5)));
    }

    #[test]
    fn a_request_is_found_until_its_lease_is_forgotten() {
        let leases = granted(&[(3, "a.1")]);
        let mut requests = GrantRequests::default();
        requests.insert(&id("a.1"), LeaseId(3));
        assert_eq!(requests.find(&id("a.1"), &leases), Some(LeaseId(3)));
        assert_eq!(requests.find(&id("a.2"), &leases), None);
        assert!(requests.remove(&id("a.1"), LeaseId(3)));
        assert!(!requests.remove(&id("a.1"), LeaseId(3)));
        assert_eq!(requests.find(&id("a.1"), &leases), None);
    }

    #[test]
    fn the_table_is_stored_as_a_map_from_request_id_to_lease() {
        let leases = granted(&[(3, "a.1"), (5, "b.2")]);
        let mut requests = GrantRequests::default();
        requests.insert(&id("a.1"), LeaseId(3));
        requests.insert(&id("b.2"), LeaseId(5));
        let bytes = postcard::to_allocvec(&requests.stored(&leases)).expect("encodes");
        // As the map an older build kept, and reads.
        let old: std::collections::BTreeMap<String, LeaseId> =
            postcard::from_bytes(&bytes).expect("an older build reads it");
        let expected = [
            ("a.1".to_owned(), LeaseId(3)),
            ("b.2".to_owned(), LeaseId(5)),
        ];
        assert_eq!(old, expected.into_iter().collect());
        let old_bytes = postcard::to_allocvec(&old).expect("encodes");
        let read: GrantRequests = postcard::from_bytes(&old_bytes).expect("reads an older build's");
        assert_eq!(read, requests);
    }
}
