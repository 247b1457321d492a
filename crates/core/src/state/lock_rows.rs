//! The lock table's stored form. In memory a row does not keep its name
//! (the key is the name); stored, each row still carries it first, as
//! rows did when they kept it (name, holder, waiters, delay), so snapshots
//! written before read unchanged and snapshots written now read in older
//! builds. A stored row whose name differs from its key is refused.

use super::table_rows;
use crate::{Holder, Lock, LockDelay, LockName, WaitQueue};
use imbl::OrdMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The table, by name.
type Table = OrdMap<LockName, Box<Lock>>;

/// A row as stored, borrowed for encoding.
#[derive(Serialize)]
struct RowOut<'a> {
    name: &'a LockName,
    holder: &'a Option<Holder>,
    waiters: &'a WaitQueue,
    delay: &'a Option<Box<LockDelay>>,
}

/// A row as stored, read back.
#[derive(Deserialize)]
struct RowIn {
    name: LockName,
    holder: Option<Holder>,
    waiters: WaitQueue,
    delay: Option<Box<LockDelay>>,
}

pub(super) fn serialize<S: Serializer>(table: &Table, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_map(table.iter().map(|(name, lock)| {
        let row = RowOut {
            name,
            holder: &lock.holder,
            waiters: &lock.waiters,
            delay: &lock.delay,
        };
        (name, row)
    }))
}

pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Table, D::Error> {
    table_rows::read(deserializer, "a map of lock names to lock rows", row)
}

/// The row read under `key`, if it carries that name.
fn row(key: &LockName, stored: RowIn) -> Result<Lock, String> {
    if stored.name != *key {
        return Err(format!("lock row {key} is named {}", stored.name));
    }
    Ok(Lock {
        holder: stored.holder,
        waiters: stored.waiters,
        delay: stored.delay,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LeaseId, Token};
    use std::collections::BTreeMap;

    /// The row as it was when it kept its name.
    #[derive(Serialize)]
    struct OldLock {
        name: LockName,
        holder: Option<Holder>,
        waiters: std::collections::VecDeque<crate::Waiter>,
        delay: Option<LockDelay>,
    }

    #[derive(Serialize, Deserialize)]
    struct Wrapped(#[serde(with = "super")] Table);

    fn name(raw: &str) -> LockName {
        LockName::parse(raw).expect("a valid name")
    }

    fn holder() -> Holder {
        Holder {
            lease: LeaseId(3),
            token: Token(9),
            acquired_unix_ms: 5,
            fenced: true,
            lock_delay_ms: 0,
            max_hold_ms: 0,
            metadata: Default::default(),
        }
    }

    #[test]
    fn a_table_stored_with_named_rows_reads_and_encodes_the_same() {
        let old: BTreeMap<LockName, OldLock> = ["jobs/a", "jobs/b"]
            .iter()
            .map(|n| {
                let row = OldLock {
                    name: name(n),
                    holder: Some(holder()),
                    waiters: Default::default(),
                    delay: None,
                };
                (name(n), row)
            })
            .collect();
        let old_bytes = postcard::to_allocvec(&old).expect("encodes");
        let read: Wrapped = postcard::from_bytes(&old_bytes).expect("decodes");
        assert_eq!(read.0.len(), 2);
        assert_eq!(read.0[&name("jobs/b")].holder, Some(holder()));
        assert_eq!(postcard::to_allocvec(&read).expect("encodes"), old_bytes);
    }

    #[test]
    fn a_row_named_other_than_its_key_is_refused() {
        let row = OldLock {
            name: name("jobs/other"),
            holder: Some(holder()),
            waiters: Default::default(),
            delay: None,
        };
        let old = BTreeMap::from([(name("jobs/a"), row)]);
        let bytes = postcard::to_allocvec(&old).expect("encodes");
        // postcard keeps no custom message; that it refuses is the point.
        assert!(postcard::from_bytes::<Wrapped>(&bytes).is_err());
    }
}
