//! Persistence of the latest snapshot in the `snapshot` table.
//!
//! Each snapshot is stored with the crc32 of its bytes and of each
//! [`CRC_CHUNK_BYTES`] chunk of them, checked on every load, so a damaged
//! snapshot is refused (with the byte offset of its first damaged chunk and
//! what to do) rather than decoded into a wrong state. (A snapshot stored
//! before the chunk crcs has only the whole crc, and one stored before any
//! crc is loaded unchecked.)
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
/// `SNAPSHOT` key of the crc32 of each `CRC_CHUNK_BYTES` chunk of the
/// snapshot bytes, in order (u32 each, little-endian).
const CHUNK_CRCS: &str = "chunk_crcs";
/// The chunk a damage is located to: a 1 M-lock snapshot of ~60 MB keeps
/// ~60 KB of chunk crcs.
pub(crate) const CRC_CHUNK_BYTES: usize = 4096;
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
    if let Some(crcs) = table.get(CHUNK_CRCS)? {
        check_chunks(&data, crcs.value())?;
    }
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

/// The crc32 of each chunk of `data`, concatenated.
fn chunk_crcs(data: &[u8]) -> Vec<u8> {
    data.chunks(CRC_CHUNK_BYTES)
        .flat_map(|chunk| crc32fast::hash(chunk).to_le_bytes())
        .collect()
}

/// Refuses `data` at its first chunk whose crc32 is not the stored one.
fn check_chunks(data: &[u8], stored: &[u8]) -> Result<(), DbError> {
    let len = data.len();
    let expected = len.div_ceil(CRC_CHUNK_BYTES);
    if stored.len() != expected * 4 {
        return Err(DbError::CorruptSnapshot {
            why: format!(
                "its {len} bytes need {expected} chunk crcs, {} bytes of crcs are stored: \
                 the snapshot or its crcs were cut short",
                stored.len()
            ),
        });
    }
    let chunks = data.chunks(CRC_CHUNK_BYTES).zip(stored.chunks_exact(4));
    for (at, (chunk, crc)) in chunks.enumerate() {
        let crc = u32::from_le_bytes(crc.try_into().expect("4 bytes"));
        if crc32fast::hash(chunk) != crc {
            let start = at * CRC_CHUNK_BYTES;
            return Err(DbError::CorruptSnapshot {
                why: format!(
                    "the {}-byte chunk at byte {start} of its {len} bytes fails its crc32",
                    chunk.len()
                ),
            });
        }
    }
    Ok(())
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
    table.insert(CHUNK_CRCS, chunk_crcs(data).as_slice())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stores `data` as a snapshot, then flips the stored byte `at`.
    fn stored_then_damaged(data: &[u8], at: usize) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = Database::create(dir.path().join("db")).expect("db");
        let txn = db.begin_write().expect("txn");
        {
            let mut table = txn.open_table(SNAPSHOT).expect("table");
            let meta = Meta::default();
            write_unless_older(&mut table, &meta, data).expect("stored");
            let mut bytes = table.get(DATA).unwrap().unwrap().value().to_vec();
            bytes[at] ^= 0x10;
            table.insert(DATA, bytes.as_slice()).expect("damaged");
        }
        txn.commit().expect("commit");
        dir
    }

    fn refusal(dir: &tempfile::TempDir) -> String {
        let db = Database::open(dir.path().join("db")).expect("db");
        match load(&db) {
            Err(error) => error.to_string(),
            Ok(_) => panic!("a damaged snapshot loaded"),
        }
    }

    #[test]
    fn a_damaged_snapshot_is_refused_at_the_offset_of_its_damaged_chunk() {
        let data: Vec<u8> = (0..3 * CRC_CHUNK_BYTES + 100).map(|i| i as u8).collect();
        let dir = stored_then_damaged(&data, 2 * CRC_CHUNK_BYTES + 17);
        let message = refusal(&dir);
        let start = 2 * CRC_CHUNK_BYTES;
        let expected = format!("chunk at byte {start} of its {} bytes", data.len());
        assert!(message.contains(&expected), "{message}");
        assert!(message.contains("from a backup"), "{message}");
    }

    #[test]
    fn damage_in_the_short_last_chunk_names_that_chunk() {
        let data = vec![7u8; CRC_CHUNK_BYTES + 10];
        let dir = stored_then_damaged(&data, CRC_CHUNK_BYTES + 9);
        let expected = format!("10-byte chunk at byte {CRC_CHUNK_BYTES}");
        assert!(refusal(&dir).contains(&expected));
    }
}
