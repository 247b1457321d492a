//! The backup file (`leasehold snapshot save FILE`): a consistent copy of
//! the state, as the leader's snapshot encodes it, behind a header that
//! says what it covers and how to check it.
//!
//! Layout: [`MAGIC`], the header's length (u32, little-endian), the
//! header ([`BackupHeader`], postcard), then the snapshot bytes. The header
//! carries the file's format version ([`BACKUP_FORMAT`]): a build refuses a
//! newer one with a sentence naming both, and reads every older one. The
//! snapshot bytes carry their crc32, checked before anything is decoded,
//! so a damaged backup is refused rather than restored into a wrong state.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::io::{self, Write};
use std::path::Path;

/// The first bytes of every backup file.
pub const MAGIC: &[u8; 17] = b"LEASEHOLD-BACKUP\n";
/// The format this build writes, and the newest it reads.
pub const BACKUP_FORMAT: u32 = 1;
/// The largest header accepted (a header is ~100 bytes).
const HEADER_BYTES_MAX: u32 = 64 * 1024;

/// What a backup covers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupHeader {
    /// The file format ([`BACKUP_FORMAT`] when written by this build).
    pub format: u32,
    /// The state's revision: every token handed out up to the backup is at
    /// most this.
    pub revision: u64,
    /// The Raft log index the state was applied up to.
    pub applied_index: u64,
    pub leases: u64,
    pub locks: u64,
    /// Semaphores and read-write locks.
    pub pools: u64,
    /// When the leader copied the state (its wall clock, Unix ms).
    pub created_unix_ms: u64,
    /// The node that made it (the leader).
    pub node_id: u64,
    /// The snapshot bytes that follow, and their crc32.
    pub bytes: u64,
    pub crc32: u32,
}

/// Why a file is not a usable backup.
#[derive(Debug)]
pub enum BackupError {
    Io(io::Error),
    NotABackup,
    Newer { format: u32 },
    Damaged(String),
}

impl fmt::Display for BackupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackupError::Io(error) => write!(f, "cannot read the backup: {error}"),
            BackupError::NotABackup => f.write_str(
                "not a Leasehold backup (it does not start with LEASEHOLD-BACKUP): \
                 name a file `leasehold snapshot save` wrote",
            ),
            BackupError::Newer { format } => write!(
                f,
                "the backup is format {format}, newer than this build reads (format \
                 {BACKUP_FORMAT} and older): use the release that wrote it, or a newer one"
            ),
            BackupError::Damaged(why) => write!(
                f,
                "the backup is damaged ({why}): it cannot be trusted; use another copy"
            ),
        }
    }
}

impl std::error::Error for BackupError {}

impl From<io::Error> for BackupError {
    fn from(error: io::Error) -> BackupError {
        BackupError::Io(error)
    }
}

/// A backup read back and checked.
pub struct Backup {
    pub header: BackupHeader,
    /// The snapshot bytes (their crc checked).
    pub data: Vec<u8>,
}

/// The header for `data`, the snapshot bytes of a state at `revision`.
pub fn header_for(data: &[u8], counts: Counts) -> BackupHeader {
    BackupHeader {
        format: BACKUP_FORMAT,
        revision: counts.revision,
        applied_index: counts.applied_index,
        leases: counts.leases,
        locks: counts.locks,
        pools: counts.pools,
        created_unix_ms: crate::clock::wall_unix_ms(),
        node_id: counts.node_id,
        bytes: data.len() as u64,
        crc32: crc32fast::hash(data),
    }
}

/// What a header counts, from the state it covers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    pub revision: u64,
    pub applied_index: u64,
    pub leases: u64,
    pub locks: u64,
    pub pools: u64,
    pub node_id: u64,
}

/// The magic and the header, as the file starts.
pub fn preamble(header: &BackupHeader) -> Vec<u8> {
    let encoded = postcard::to_allocvec(header).expect("a header encodes");
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&(encoded.len() as u32).to_le_bytes());
    out.extend_from_slice(&encoded);
    out
}

/// Writes `preamble` and `data` to `path` durably: to a temporary file
/// beside it, fsynced, then renamed over it (a crash leaves the old file
/// or the new, never half of one).
pub fn write_file(path: &Path, preamble: &[u8], data: &[u8]) -> io::Result<()> {
    let partial = path.with_extension("partial");
    let mut file = std::fs::File::create(&partial)?;
    file.write_all(preamble)?;
    file.write_all(data)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&partial, path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Reads and checks the backup at `path`.
pub fn read_file(path: &Path) -> Result<Backup, BackupError> {
    parse(&std::fs::read(path)?)
}

/// Checks and splits a backup's bytes.
pub fn parse(bytes: &[u8]) -> Result<Backup, BackupError> {
    let rest = bytes
        .strip_prefix(MAGIC.as_slice())
        .ok_or(BackupError::NotABackup)?;
    let (length, rest) = rest
        .split_first_chunk::<4>()
        .ok_or_else(|| BackupError::Damaged("it ends inside its header".into()))?;
    let length = u32::from_le_bytes(*length);
    if length > HEADER_BYTES_MAX || length as usize > rest.len() {
        return Err(BackupError::Damaged(format!(
            "its header claims {length} bytes"
        )));
    }
    let (header, data) = rest.split_at(length as usize);
    // The format comes first in every version's header: read it alone, so
    // a newer header is refused for its version, not for its shape.
    let format = postcard::take_from_bytes::<u32>(header)
        .map_err(|e| BackupError::Damaged(format!("its header does not decode: {e}")))?
        .0;
    if format > BACKUP_FORMAT {
        return Err(BackupError::Newer { format });
    }
    let header: BackupHeader = postcard::from_bytes(header)
        .map_err(|e| BackupError::Damaged(format!("its header does not decode: {e}")))?;
    if data.len() as u64 != header.bytes {
        return Err(BackupError::Damaged(format!(
            "{} bytes of state where its header says {} (truncated?)",
            data.len(),
            header.bytes
        )));
    }
    let crc = crc32fast::hash(data);
    if crc != header.crc32 {
        return Err(BackupError::Damaged(format!(
            "crc32 {crc:08x} where its header says {:08x}",
            header.crc32
        )));
    }
    Ok(Backup {
        header,
        data: data.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backup(data: &[u8]) -> Vec<u8> {
        let counts = Counts {
            revision: 41,
            locks: 2,
            ..Counts::default()
        };
        let mut bytes = preamble(&header_for(data, counts));
        bytes.extend_from_slice(data);
        bytes
    }

    #[test]
    fn a_backup_reads_back_and_any_damage_is_refused() {
        let bytes = backup(b"the state");
        let read = parse(&bytes).unwrap();
        assert_eq!((read.header.revision, read.header.locks), (41, 2));
        assert_eq!(read.data, b"the state");

        let mut flipped = bytes.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let damaged = parse(&flipped).err().unwrap().to_string();
        assert!(
            damaged.contains("damaged") && damaged.contains("crc32"),
            "{damaged}"
        );
        let truncated = parse(&bytes[..bytes.len() - 1]).err().unwrap().to_string();
        assert!(truncated.contains("truncated"), "{truncated}");
        let other = parse(b"PGDMP something else").err().unwrap().to_string();
        assert!(other.contains("not a Leasehold backup"), "{other}");
    }

    #[test]
    fn a_newer_format_is_refused_naming_both_versions() {
        let mut header = header_for(b"x", Counts::default());
        header.format = BACKUP_FORMAT + 1;
        let mut bytes = preamble(&header);
        bytes.push(b'x');
        let refused = parse(&bytes).err().unwrap().to_string();
        assert!(
            refused.contains(&format!("format {}", BACKUP_FORMAT + 1))
                && refused.contains(&format!("format {BACKUP_FORMAT} and older")),
            "{refused}"
        );
    }
}
