//! The committed log id, in `<log dir>/committed`, never fsynced.
//!
//! **Why not fsynced**: openraft saves it after every commit, and losing it
//! in a power cut only means re-applying less at start-up (openraft then
//! learns the commit index from the leader again); it never makes anything
//! uncommitted look committed, because the entries it points to were fsynced
//! before they could be committed. A clean restart (or a process crash) still
//! finds it, since the write is in the page cache. One `pwrite` of a few
//! bytes at offset 0: `[len u32][crc32 u32][postcard Option<LogId>]`, so a
//! write torn by a power cut reads back as "none".

use super::record::{self, Header, HEADER};
use crate::raft::types::LogId;
use crate::storage::DbError;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The file's name in the log dir.
const NAME: &str = "committed";

/// The open `committed` file.
#[derive(Debug)]
pub(crate) struct CommittedFile {
    file: File,
}

impl CommittedFile {
    /// Opens (creating) the file.
    pub fn open(dir: &Path) -> Result<Self, DbError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(NAME))?;
        Ok(Self { file })
    }

    /// The stored value, if any and valid.
    pub fn load(&self) -> Result<Option<LogId>, DbError> {
        let mut bytes = vec![0; self.file.metadata()?.len() as usize];
        self.file.read_exact_at(&mut bytes, 0)?;
        Ok(decode(&bytes))
    }

    /// Overwrites the stored value (not fsynced).
    pub fn save(&self, committed: Option<LogId>) -> Result<(), DbError> {
        let payload = postcard::to_allocvec(&committed)?;
        let header =
            record::header_for(&payload, false).ok_or(postcard::Error::SerializeBufferFull)?;
        let mut bytes = Vec::with_capacity(HEADER + payload.len());
        bytes.extend_from_slice(&header);
        bytes.extend_from_slice(&payload);
        crate::storage::power_cut::write_at(&self.file, &bytes, 0)?;
        Ok(())
    }
}

/// The value in `bytes`, or `None` if missing or torn.
fn decode(bytes: &[u8]) -> Option<LogId> {
    let header: [u8; HEADER] = bytes.get(..HEADER)?.try_into().ok()?;
    let Header::Record { len, .. } = record::parse_header(header) else {
        return None;
    };
    let payload = bytes.get(HEADER..HEADER + len as usize)?;
    record::verify(header, payload)?;
    postcard::from_bytes::<Option<LogId>>(payload).ok()?
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::testing::log_id;

    #[test]
    fn the_last_saved_value_reads_back_and_a_torn_one_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let load = || CommittedFile::open(dir.path()).unwrap().load().unwrap();
        let file = CommittedFile::open(dir.path()).unwrap();
        assert_eq!(file.load().unwrap(), None);
        file.save(Some(log_id(300, 1, 100_000))).unwrap();
        file.save(Some(log_id(2, 1, 7))).unwrap();
        drop(file);
        assert_eq!(load(), Some(log_id(2, 1, 7)));
        CommittedFile::open(dir.path()).unwrap().save(None).unwrap();
        assert_eq!(load(), None);

        std::fs::write(dir.path().join(NAME), [5, 0, 0, 0, 1, 2, 3, 4, 9]).unwrap();
        assert_eq!(load(), None);
    }
}
