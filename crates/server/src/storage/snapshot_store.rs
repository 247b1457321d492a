//! Persistence of the latest snapshot: its meta, checksums and file name in
//! the `snapshot` table, its bytes in a file of their own
//! ([`snapshot_file`]; a snapshot stored before that keeps its bytes in the
//! table, and is read from there until the next one replaces it).
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

use super::{snapshot_file, DbError, SNAPSHOT};
use crate::raft::types::LogId;
use openraft::{BasicNode, SnapshotMeta, StoredMembership};
use redb::{Database, Durability, ReadableDatabase, ReadableTable, Table};
use std::path::Path;

/// `SNAPSHOT` key of the postcard-encoded `SnapshotMeta`.
const META: &str = "meta";
/// `SNAPSHOT` key of the name of the file holding the snapshot bytes.
const FILE: &str = "file";
/// `SNAPSHOT` key of the snapshot bytes, as stored before [`FILE`].
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

/// Reads the latest snapshot, if one was ever stored, its bytes from its
/// file in `data_dir` (or from the table, stored so before files).
pub(crate) fn load(db: &Database, data_dir: &Path) -> Result<Option<StoredSnapshot>, DbError> {
    let txn = db.begin_read()?;
    let table = txn.open_table(SNAPSHOT)?;
    let Some(meta) = table.get(META)? else {
        return Ok(None);
    };
    let (data, kept_in) = match (stored_file(&table)?, table.get(DATA)?) {
        (Some(name), _) => {
            let path = snapshot_file::path(data_dir, &name);
            let data =
                snapshot_file::read(data_dir, &name).map_err(|e| DbError::CorruptSnapshot {
                    why: format!("its file {} cannot be read: {e}", path.display()),
                })?;
            (data, format!("file {}", path.display()))
        }
        (None, Some(data)) => (
            data.value().to_vec(),
            "database's snapshot table".to_owned(),
        ),
        (None, None) => return Ok(None),
    };
    check_sums(&table, &data).map_err(|error| match error {
        DbError::CorruptSnapshot { why } => DbError::CorruptSnapshot {
            why: format!("{why}; kept in the {kept_in}"),
        },
        other => other,
    })?;
    let meta = postcard::from_bytes(meta.value()).map_err(|e| DbError::CorruptSnapshot {
        why: format!("its meta does not decode: {e}"),
    })?;
    Ok(Some(StoredSnapshot { meta, data }))
}

/// Checks `data` against the crcs stored beside it (a snapshot stored
/// before crcs has none to check).
fn check_sums(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    data: &[u8],
) -> Result<(), DbError> {
    if let Some(crcs) = table.get(CHUNK_CRCS)? {
        check_chunks(data, crcs.value())?;
    }
    if let Some(stored) = table.get(CRC)? {
        let stored = <[u8; 4]>::try_from(stored.value())
            .ok()
            .map(u32::from_le_bytes);
        let actual = crc32fast::hash(data);
        if stored != Some(actual) {
            return Err(DbError::CorruptSnapshot {
                why: format!(
                    "its {} bytes have crc32 {actual:#010x}, stored with {stored:x?}",
                    data.len()
                ),
            });
        }
    }
    Ok(())
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
    data_dir: &Path,
    last_log_id: Option<LogId>,
    last_membership: StoredMembership<u64, BasicNode>,
    data: &[u8],
) -> Result<Meta, DbError> {
    let seq = next_seq(db)?;
    let (term, index) = last_log_id.map_or((0, 0), |id| (id.leader_id.term, id.index));
    let meta = Meta {
        last_log_id,
        last_membership,
        snapshot_id: format!("{term}-{index}-{seq}"),
    };
    save(db, data_dir, &meta, data)?;
    Ok(meta)
}

/// Stores a snapshot received from the leader, fsynced.
pub(crate) fn save_installed(
    db: &Database,
    data_dir: &Path,
    meta: &Meta,
    data: &[u8],
) -> Result<(), DbError> {
    save(db, data_dir, meta, data)
}

/// Takes the next snapshot sequence number, durably: an id is never given
/// out twice, even across a crash.
fn next_seq(db: &Database) -> Result<u64, DbError> {
    let txn = begin(db)?;
    let seq = {
        let mut table = txn.open_table(SNAPSHOT)?;
        let seq = match table.get(SEQ)? {
            Some(bytes) => postcard::from_bytes::<u64>(bytes.value())? + 1,
            None => 1,
        };
        table.insert(SEQ, postcard::to_allocvec(&seq)?.as_slice())?;
        seq
    };
    txn.commit()?;
    Ok(seq)
}

/// Writes `data` to its file, then names it in the table with `meta`
/// unless the stored snapshot covers more of the log; removes whichever
/// file is not named then.
fn save(db: &Database, data_dir: &Path, meta: &Meta, data: &[u8]) -> Result<(), DbError> {
    let name = snapshot_file::name_for(&meta.snapshot_id, data);
    snapshot_file::write(data_dir, &name, data).map_err(|source| DbError::SnapshotFile {
        path: snapshot_file::path(data_dir, &name),
        source,
    })?;
    let txn = begin(db)?;
    let kept = {
        let mut table = txn.open_table(SNAPSHOT)?;
        write_unless_older(&mut table, meta, &name, data)?;
        stored_file(&table)?
    };
    txn.commit()?;
    snapshot_file::remove_all_but(data_dir, kept.as_deref());
    Ok(())
}

/// Removes the snapshot files the table does not name (left by a crash
/// between a file's write and its commit).
pub(crate) fn remove_unnamed_files(db: &Database, data_dir: &Path) -> Result<(), DbError> {
    let txn = db.begin_read()?;
    let named = stored_file(&txn.open_table(SNAPSHOT)?)?;
    snapshot_file::remove_all_but(data_dir, named.as_deref());
    Ok(())
}

/// The file name the table holds, if any.
fn stored_file(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
) -> Result<Option<String>, DbError> {
    Ok(table
        .get(FILE)?
        .map(|name| String::from_utf8_lossy(name.value()).into_owned()))
}

fn begin(db: &Database) -> Result<redb::WriteTransaction, DbError> {
    let mut txn = db.begin_write()?;
    txn.set_durability(Durability::Immediate)?;
    Ok(txn)
}

/// Names the file `name` holding `data` with `meta` unless the stored
/// snapshot covers more of the log; drops bytes stored in the table.
fn write_unless_older(
    table: &mut Table<&str, &[u8]>,
    meta: &Meta,
    name: &str,
    data: &[u8],
) -> Result<(), DbError> {
    if let Some(stored) = table.get(META)? {
        let stored: Meta = postcard::from_bytes(stored.value())?;
        if stored.last_log_id > meta.last_log_id {
            return Ok(());
        }
    }
    table.insert(META, postcard::to_allocvec(meta)?.as_slice())?;
    table.insert(FILE, name.as_bytes())?;
    table.remove(DATA)?;
    table.insert(CRC, crc32fast::hash(data).to_le_bytes().as_slice())?;
    table.insert(CHUNK_CRCS, chunk_crcs(data).as_slice())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn database(dir: &tempfile::TempDir) -> Database {
        let db = Database::create(dir.path().join("db")).expect("db");
        let txn = db.begin_write().expect("txn");
        txn.open_table(SNAPSHOT).expect("table");
        txn.commit().expect("commit");
        db
    }

    fn meta(index: u64) -> Meta {
        Meta {
            last_log_id: Some(LogId::new(openraft::CommittedLeaderId::new(1, 1), index)),
            snapshot_id: format!("1-{index}-1"),
            ..Meta::default()
        }
    }

    fn files(dir: &tempfile::TempDir) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir.path().join(snapshot_file::DIR))
            .expect("snapshot dir")
            .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
            .collect();
        names.sort();
        names
    }

    /// Stores `data` as a snapshot, then flips byte `at` of its file.
    fn stored_then_damaged(data: &[u8], at: usize) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = database(&dir);
        save_installed(&db, dir.path(), &meta(5), data).expect("stored");
        let path = snapshot_file::path(dir.path(), &files(&dir)[0]);
        let mut bytes = std::fs::read(&path).expect("read");
        bytes[at] ^= 0x10;
        std::fs::write(&path, bytes).expect("damaged");
        dir
    }

    fn refusal(dir: &tempfile::TempDir) -> String {
        let db = Database::open(dir.path().join("db")).expect("db");
        match load(&db, dir.path()) {
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

    #[test]
    fn a_missing_file_is_refused_naming_it() {
        let dir = stored_then_damaged(b"snapshot bytes", 0);
        let name = files(&dir).remove(0);
        std::fs::remove_file(snapshot_file::path(dir.path(), &name)).expect("removed");
        let message = refusal(&dir);
        assert!(message.contains(&name), "{message}");
        assert!(message.contains("cannot be read"), "{message}");
    }

    /// A snapshot stored with its bytes in the table (before files) loads,
    /// and the next save moves the bytes out of the table.
    #[test]
    fn bytes_stored_in_the_table_load_until_the_next_save() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = database(&dir);
        let txn = db.begin_write().expect("txn");
        {
            let mut table = txn.open_table(SNAPSHOT).expect("table");
            let old = postcard::to_allocvec(&meta(3)).expect("meta");
            table.insert(META, old.as_slice()).expect("meta");
            table.insert(DATA, b"old bytes".as_slice()).expect("data");
            let crc = crc32fast::hash(b"old bytes").to_le_bytes();
            table.insert(CRC, crc.as_slice()).expect("crc");
        }
        txn.commit().expect("commit");
        let loaded = load(&db, dir.path()).expect("loads").expect("stored");
        assert_eq!(loaded.data, b"old bytes");

        save_installed(&db, dir.path(), &meta(4), b"new bytes").expect("saved");
        let loaded = load(&db, dir.path()).expect("loads").expect("stored");
        assert_eq!(loaded.data, b"new bytes");
        assert_eq!(
            files(&dir),
            vec![snapshot_file::name_for("1-4-1", b"new bytes")]
        );
        let txn = db.begin_read().expect("txn");
        let table = txn.open_table(SNAPSHOT).expect("table");
        assert!(
            table.get(DATA).expect("get").is_none(),
            "the old bytes stay in the table"
        );
    }

    /// A snapshot older than the stored one is not stored, and its file
    /// goes; a newer one replaces the stored one and its file.
    #[test]
    fn only_the_newest_snapshot_and_its_file_are_kept() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = database(&dir);
        save_installed(&db, dir.path(), &meta(10), b"ten").expect("saved");
        let ten = files(&dir);
        save_installed(&db, dir.path(), &meta(7), b"seven").expect("refused quietly");
        assert_eq!(files(&dir), ten);
        assert_eq!(load(&db, dir.path()).unwrap().unwrap().data, b"ten");
        let built = save_built(
            &db,
            dir.path(),
            meta(12).last_log_id,
            Default::default(),
            b"12",
        )
        .expect("built");
        assert_eq!(built.snapshot_id, "1-12-1");
        assert_eq!(files(&dir), vec![snapshot_file::name_for("1-12-1", b"12")]);
        std::fs::write(
            dir.path().join(snapshot_file::DIR).join("x.partial"),
            b"cut",
        )
        .unwrap();
        remove_unnamed_files(&db, dir.path()).expect("cleaned");
        assert_eq!(files(&dir).len(), 1);
    }
}
