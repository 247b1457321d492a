//! Reading and writing one named record of the `META` table (postcard):
//! the log store's vote and purged id, and this node's cluster identity
//! ([`super::IdentityStore`]). One place, so every record is written the same
//! durable way.

use super::{DbError, META};
use redb::{Database, Durability, ReadableDatabase};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Reads and decodes one `META` record.
pub(crate) fn read<T: DeserializeOwned>(db: &Database, key: &str) -> Result<Option<T>, DbError> {
    let txn = db.begin_read()?;
    let table = txn.open_table(META)?;
    let Some(bytes) = table.get(key)? else {
        return Ok(None);
    };
    Ok(Some(postcard::from_bytes(bytes.value())?))
}

/// Encodes and writes one `META` record in its own fsynced transaction.
/// Blocking: call it on the blocking pool ([`super::blocking`]) from async code.
pub(crate) fn write<T: Serialize + ?Sized>(
    db: &Database,
    key: &str,
    value: &T,
) -> Result<(), DbError> {
    write_bytes(db, key, &postcard::to_allocvec(value)?)
}

/// Writes one already encoded `META` record in its own fsynced transaction.
pub(crate) fn write_bytes(db: &Database, key: &str, bytes: &[u8]) -> Result<(), DbError> {
    let mut txn = db.begin_write()?;
    txn.set_durability(Durability::Immediate)?;
    txn.open_table(META)?.insert(key, bytes)?;
    txn.commit()?;
    Ok(())
}
