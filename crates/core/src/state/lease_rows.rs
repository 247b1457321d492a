//! The lease table's stored form. In memory a row does not keep its id
//! (the key is the id); stored, each row still carries it first, as rows
//! did when they kept it, so snapshots written before read unchanged and
//! snapshots written now read in older builds. A stored row whose id
//! differs from its key is refused, and so is one out of range (`Lease`'s
//! `TryFrom<LeaseIn>`).

use super::table_rows;
use crate::lease::LeaseIn;
use crate::{Lease, LeaseId};
use imbl::OrdMap;
use serde::{Deserializer, Serializer};

/// The table, by id.
type Table = OrdMap<LeaseId, Box<Lease>>;

pub(super) fn serialize<S: Serializer>(table: &Table, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_map(table.iter().map(|(id, lease)| (id, lease.stored(*id))))
}

pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Table, D::Error> {
    table_rows::read(deserializer, "a map of lease ids to lease rows", row)
}

/// The row read under `key`, if it carries that id and its fields are in range.
fn row(key: &LeaseId, stored: LeaseIn) -> Result<Lease, String> {
    if stored.id() != *key {
        return Err(format!(
            "lease row {} is stored under id {}",
            stored.id().0,
            key.0
        ));
    }
    Lease::try_from(stored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OwnerInfo;
    use serde::{Deserialize, Serialize};
    use std::collections::BTreeMap;

    #[derive(Serialize, Deserialize)]
    struct Wrapped(#[serde(with = "super")] Table);

    /// A stored row as builds whose rows kept their id read it.
    #[derive(Deserialize)]
    #[allow(dead_code, reason = "every field is read; the test looks at the id")]
    struct OlderRow {
        id: u64,
        ttl_ms: u64,
        owner: OwnerInfo,
        granted_revision: u64,
        granted_unix_ms: u64,
        renewed_unix_ms: u64,
        renewals: u64,
        holds: Vec<String>,
        waits: Vec<String>,
        dedup: Vec<()>,
        grant_request_id: Option<String>,
        principal: Option<String>,
    }

    fn table(ids: &[u64]) -> Table {
        ids.iter()
            .map(|&id| {
                let owner = OwnerInfo {
                    owner: format!("worker-{id}"),
                    ..OwnerInfo::default()
                };
                let row = Lease::granted(10_000, owner.into(), 1_764_700_000_000, None, None);
                (LeaseId(id), Box::new(row))
            })
            .collect()
    }

    #[test]
    fn each_row_is_stored_with_its_id_and_reads_back() {
        let bytes = postcard::to_allocvec(&Wrapped(table(&[3, 8]))).expect("encodes");
        let read: Wrapped = postcard::from_bytes(&bytes).expect("decodes");
        assert_eq!(read.0, table(&[3, 8]));
        // Each row carries its id, as rows that kept it were stored.
        let rows: BTreeMap<u64, OlderRow> = postcard::from_bytes(&bytes).expect("a map");
        let ids: Vec<_> = rows.iter().map(|(key, row)| (*key, row.id)).collect();
        assert_eq!(ids, [(3, 3), (8, 8)]);
    }

    #[test]
    fn a_row_stored_under_another_id_is_refused() {
        let mut bytes = postcard::to_allocvec(&Wrapped(table(&[5]))).expect("encodes");
        // [map length 1][key 5][row: id 5, ...]: the key becomes 6.
        assert_eq!(bytes[..3], [1, 5, 5]);
        bytes[1] = 6;
        let error = postcard::from_bytes::<Wrapped>(&bytes)
            .err()
            .expect("refused");
        assert!(matches!(error, postcard::Error::SerdeDeCustom), "{error:?}");
    }
}
