//! The data dir's format version, a `META` record.
//!
//! Format 1 is every data dir written before the record existed (read as
//! it is). Format 2 adds what a build of format 1 cannot read: log entries
//! of semaphores, elections and sets of locks, and snapshots that carry
//! pools and lock sets. A build opens its own format and every older one
//! (and marks an older one as its own, since it may write what the older
//! build cannot read); it refuses a newer one with a sentence naming both,
//! before reading anything else, so a downgrade never misreads data.
//!
//! The parts of a data dir that outlive a build, or leave the node, carry
//! the format that wrote them too: each log record (`wal::record`), and
//! snapshot bytes ([`mark_snapshot`]), which a leader sends to followers
//! that may run another release and which backups carry off the host.

use super::{meta, DbError};
use redb::Database;
use std::path::Path;

/// The format this build writes, and the newest it reads.
pub const DATA_FORMAT: u32 = 2;
/// `META` key of the data dir's format.
const FORMAT: &str = "format";

/// The format found is newer than this build reads.
#[derive(Debug, thiserror::Error)]
#[error(
    "the data dir {path} is format {found}, newer than this build reads (format {DATA_FORMAT} and \
     older): run the release that wrote it, or a newer one; never start an older build on it"
)]
pub struct NewerFormat {
    pub path: String,
    pub found: u32,
}

/// Snapshot bytes start with this, then the format as a `u32` LE. Ten
/// `0xFF` bytes cannot start a snapshot of format 1 (which had no mark):
/// it starts with the revision as a postcard varint, and a varint of a
/// `u64` is at most ten bytes, the tenth below `0x02`.
const SNAPSHOT_MARK: [u8; 10] = [0xFF; 10];

/// Writes the mark of this build's format at the start of snapshot bytes.
pub(crate) fn mark_snapshot(out: &mut Vec<u8>) {
    out.extend_from_slice(&SNAPSHOT_MARK);
    out.extend_from_slice(&DATA_FORMAT.to_le_bytes());
}

/// The encoded state after the mark of `data`, or all of `data` if it has
/// none (format 1); a newer format than this build's is refused.
pub(crate) fn snapshot_body(data: &[u8]) -> Result<&[u8], DbError> {
    let Some(rest) = data.strip_prefix(&SNAPSHOT_MARK) else {
        return Ok(data);
    };
    let (format, body) = rest
        .split_first_chunk::<4>()
        .ok_or_else(|| DbError::CorruptSnapshot {
            why: "it ends inside its format mark".into(),
        })?;
    match u32::from_le_bytes(*format) {
        found if found > DATA_FORMAT => Err(DbError::NewerSnapshot { found }),
        _ => Ok(body),
    }
}

/// Refuses a newer format; marks an older (or unmarked) one as this build's.
pub(crate) fn check_and_mark(
    db: &Database,
    path: &Path,
) -> Result<Result<(), NewerFormat>, DbError> {
    match meta::read::<u32>(db, FORMAT)? {
        Some(found) if found > DATA_FORMAT => Ok(Err(NewerFormat {
            path: path.display().to_string(),
            found,
        })),
        Some(DATA_FORMAT) => Ok(Ok(())),
        _ => meta::write(db, FORMAT, &DATA_FORMAT).map(Ok),
    }
}

/// The format recorded in `db` (tests set and read it).
pub fn recorded(db: &Database) -> Result<Option<u32>, DbError> {
    meta::read(db, FORMAT)
}

/// Records `format` in `db` (tests make older and newer data dirs with it).
pub fn record(db: &Database, format: u32) -> Result<(), DbError> {
    meta::write(db, FORMAT, &format)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{open, NoopListener, DB_FILE_NAME};
    use std::sync::Arc;

    /// Sets the format record of the (closed) data dir `dir`.
    fn set_format(dir: &Path, format: u32) {
        let db = Database::create(dir.join(DB_FILE_NAME)).expect("the data dir's database");
        record(&db, format).expect("recorded");
    }

    fn recorded_in(dir: &Path) -> Option<u32> {
        let db = Database::create(dir.join(DB_FILE_NAME)).expect("the data dir's database");
        recorded(&db).expect("read")
    }

    #[test]
    fn snapshot_bytes_carry_their_format_and_a_newer_one_is_refused() {
        let mut marked = Vec::new();
        mark_snapshot(&mut marked);
        marked.extend_from_slice(b"state");
        assert_eq!(snapshot_body(&marked).unwrap(), b"state");
        // Format 1 had no mark: its bytes are the state.
        assert_eq!(snapshot_body(b"\x07state").unwrap(), b"\x07state");
        // A real format-1 snapshot's first byte is its revision's varint.
        let revision: u64 = u64::MAX;
        let old = postcard::to_allocvec(&revision).unwrap();
        assert!(!old.starts_with(&SNAPSHOT_MARK), "{old:?}");
        let mut newer = SNAPSHOT_MARK.to_vec();
        newer.extend_from_slice(&(DATA_FORMAT + 1).to_le_bytes());
        let said = snapshot_body(&newer).unwrap_err().to_string();
        assert!(
            said.contains(&format!("data format {}", DATA_FORMAT + 1))
                && said.contains(&format!("format {DATA_FORMAT} and older")),
            "{said}"
        );
    }

    #[test]
    fn a_data_dir_is_marked_an_older_one_is_read_and_a_newer_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        drop(open(dir.path(), Arc::new(NoopListener)).expect("a new data dir opens"));
        assert_eq!(recorded_in(dir.path()), Some(DATA_FORMAT));

        // The previous format (a data dir from before the record): read,
        // and marked as this build's.
        set_format(dir.path(), DATA_FORMAT - 1);
        drop(open(dir.path(), Arc::new(NoopListener)).expect("the previous format opens"));
        assert_eq!(recorded_in(dir.path()), Some(DATA_FORMAT));

        set_format(dir.path(), DATA_FORMAT + 1);
        let refused = open(dir.path(), Arc::new(NoopListener))
            .err()
            .expect("refused");
        let said = refused.to_string();
        assert!(
            said.contains(&format!("format {}", DATA_FORMAT + 1))
                && said.contains(&format!("format {DATA_FORMAT} and older")),
            "{said}"
        );
        assert_eq!(
            recorded_in(dir.path()),
            Some(DATA_FORMAT + 1),
            "left as it was"
        );
    }
}
