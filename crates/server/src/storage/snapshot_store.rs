//! Persistence of the latest snapshot in the `snapshot` table.
//!
//! Each snapshot is stored with the crc32 of its bytes, checked on every
//! load, so a damaged snapshot is refused (with what to do) rather than
//! decoded into a wrong state. (A snapshot stored before the crc existed has
//! none and is loaded unchecked.)
//!
//! Only one snapshot is kept. A snapshot older than the stored one is never
//! written over it: a snapshot build racing an install could otherwise put
//! back a snapshot from before log entries that the install let openraft
//! purge, leaving a hole after restart.

use super::{DbError, SNAPSHOT};
use crate::raft::types::LogId;
use openraft::{BasicNode, SnapshotMeta, StoredMembership};
use redb::{Database, Durability, ReadableDatabase, ReadableTable, Table};

/// `SNAPSHOT` key of the postcard-encoded `SnapshotMeta`.
const META: &str = "meta";
/// `SNAPSHOT` key of the snapshot bytes.
const DATA: &str = "data";
/// `SNAPSHOT` key of the crc32 of the snapshot bytes (u32, little-endian).
const CRC: &str = "crc";
/// `SNAPSHOT` key of the counter that makes snapshot ids unique.
const SEQ: &str = "seq";

/// Snapshot metadata for this type configuration.
pub(crate) type Meta = SnapshotMeta<u64, BasicNode>;

/// A snapshot read back from the database.
pub(crate) struct StoredSnapshot {
    /// What the snapshot covers.
    pub meta: Meta,
    /// The encoded state machine.
    pub data: Vec<u8>,
}

/// Reads the latest snapshot, if one was ever stored.
pub(crate) fn load(db: &Database) -> Result<Option<StoredSnapshot>, DbError> {
    let txn = db.begin_read()?;
    let table = txn.open_table(SNAPSHOT)?;
    let (Some(meta), Some(data)) = (table.get(META)?, table.get(DATA)?) else {
        return Ok(None);
    };
    let data = data.value().to_vec();
    if let Some(stored) = table.get(CRC)? {
        let stored = <[u8; 4]>::try_from(stored.value())
            .ok()
            .map(u32::from_le_bytes);
        let actual = crc32fast::hash(&data);
        if stored != Some(actual) {
            return Err(DbError::CorruptSnapshot {
                why: format!(
                    "its {} bytes have crc32 {actual:#010x}, stored with {stored:x?}",
                    data.len()
                ),
            });
        }
    }
    let meta = postcard::from_bytes(meta.value()).map_err(|e| DbError::CorruptSnapshot {
        why: format!("its meta does not decode: {e}"),
    })?;
    Ok(Some(StoredSnapshot { meta, data }))
}

/// Stores a freshly built snapshot under a new id `"{term}-{index}-{seq}"`,
/// fsynced. Returns its meta; it is not stored if a newer snapshot is.
pub(crate) fn save_built(
    db: &Database,
    last_log_id: Option<LogId>,
    last_membership: StoredMembership<u64, BasicNode>,
    data: &[u8],
) -> Result<Meta, DbError> {
    let txn = begin(db)?;
    let meta = {
        let mut table = txn.open_table(SNAPSHOT)?;
        let seq = match table.get(SEQ)? {
            Some(bytes) => postcard::from_bytes::<u64>(bytes.value())? + 1,
            None => 1,
        };
        table.insert(SEQ, postcard::to_allocvec(&seq)?.as_slice())?;
        let (term, index) = last_log_id.map_or((0, 0), |id| (id.leader_id.term, id.index));
        let meta = Meta {
            last_log_id,
            last_membership,
            snapshot_id: format!("{term}-{index}-{seq}"),
        };
        write_unless_older(&mut table, &meta, data)?;
        meta
    };
    txn.commit()?;
    Ok(meta)
}

/// Stores a snapshot received from the leader, fsynced.
pub(crate) fn save_installed(db: &Database, meta: &Meta, data: &[u8]) -> Result<(), DbError> {
    let txn = begin(db)?;
    write_unless_older(&mut txn.open_table(SNAPSHOT)?, meta, data)?;
    txn.commit()?;
    Ok(())
}

fn begin(db: &Database) -> Result<redb::WriteTransaction, DbError> {
    let mut txn = db.begin_write()?;
    txn.set_durability(Durability::Immediate)?;
    Ok(txn)
}

/// Writes `meta` and `data` unless the stored snapshot covers more of the log.
fn write_unless_older(
    table: &mut Table<&str, &[u8]>,
    meta: &Meta,
    data: &[u8],
) -> Result<(), DbError> {
    if let Some(stored) = table.get(META)? {
        let stored: Meta = postcard::from_bytes(stored.value())?;
        if stored.last_log_id > meta.last_log_id {
            return Ok(());
        }
    }
    table.insert(META, postcard::to_allocvec(meta)?.as_slice())?;
    table.insert(DATA, data)?;
    table.insert(CRC, crc32fast::hash(data).to_le_bytes().as_slice())?;
    Ok(())
}
