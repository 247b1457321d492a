//! The data dir's format version, a `META` record.
//!
//! Format 1 is every data dir written before the record existed (read as
//! it is). Format 2 adds what a build of format 1 cannot read: log entries
//! of semaphores, elections and sets of locks, and snapshots that carry
//! pools and lock sets. A build opens its own format and every older one
//! (and marks an older one as its own, since it may write what the older
//! build cannot read); it refuses a newer one with a sentence naming both,
//! before reading anything else, so a downgrade never misreads data.

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
