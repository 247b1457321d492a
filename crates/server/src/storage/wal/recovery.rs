//! Rebuilding the index from the segment files at open.
//!
//! Segments are scanned in index order, record by record. A segment ends at
//! its first zero header (never written) or bad record (length past the end
//! of the file, bad crc, undecodable log id, out-of-sequence index). A
//! segment must start where the previous one ended (or, when all before it
//! is purged, at or before `purged + 1`); the first one that does not, and
//! all after it, are left-overs of an interrupted truncate and are deleted.
//!
//! **Torn tail or corruption**: after a crash the last append may be torn
//! (cut short, or, after a power cut, with some of its pages on disk and
//! not others), and everything before it is kept, the torn bytes erased.
//! But a bad record *followed by the start of a later append* cannot be a
//! torn tail: appends are written in order, each fsynced before the next,
//! and a new segment is only started once the previous one is durable. So a
//! bad record followed by a valid record marked as the first of its append
//! (see `record`), or by a next segment that starts with a valid record, is
//! damage to acknowledged entries, and recovery refuses
//! ([`DbError::CorruptRecord`], naming the file and the offset) instead of
//! dropping them and everything after. A truncate zeroes the cut record's
//! header first, durably, so an interrupted truncate never looks like this.
//! (Records written before the mark existed are never taken for damage in
//! their own segment: the old behaviour.)
//!
//! **Why erase the bytes after the end of the tail**: the next append
//! overwrites from the end, and if it is shorter than what was torn there,
//! whole records of the torn append (or of an interrupted truncate) could
//! follow it with valid checksums and consecutive indexes, and a later
//! recovery would resurrect them. Zeroing what follows the last good record
//! keeps the invariant "after `end`, only zeros".

use super::index::{Index, Slot};
use super::record::{self, Header, HEADER};
use super::segment::{self, Segment};
use crate::raft::types::LogId;
use crate::storage::format::DATA_FORMAT;
use crate::storage::DbError;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

/// What was found in the log dir.
pub(crate) struct Recovered {
    /// The kept segments, in index order; the last is the tail.
    pub segments: Vec<Segment>,
    /// The live entries (those after `purged`).
    pub index: Index,
}

/// The records found at the start of one segment.
pub(crate) struct Scan {
    /// `(log id, offset, payload length)` of each good record, in order.
    pub records: Vec<(LogId, u64, u32)>,
    /// The offset after the last good record.
    pub end: u64,
    /// What the scan stopped at, if not a zero header or the file's end.
    pub bad: Option<&'static str>,
}

/// Scans `dir`, repairs its tail and returns the segments and the index.
pub(crate) fn recover(dir: &Path, purged: Option<LogId>) -> Result<Recovered, DbError> {
    let names = segment::list(dir)?;

    let mut segments: Vec<Segment> = Vec::new();
    let mut index = Index::default();
    let mut kept = 0;
    for &first in &names {
        let after_purged = purged.is_some_and(|p| first <= p.index + 1) && index.last().is_none();
        match segments.last() {
            Some(prev) if prev.next != first && !after_purged => break,
            None if purged.is_some_and(|p| first > p.index + 1) => {
                return Err(DbError::Corrupt(format!(
                    "the log starts at index {first} but only up to {purged:?} was purged"
                )));
            }
            _ => {}
        }
        let path = dir.join(segment::file_name(first));
        let file = segment::open_file(&path)?;
        let scan = scan(&file, &path, first)?;
        if let Some(why) = scan.bad {
            let next = names
                .iter()
                .find(|&&n| n > first)
                .map(|&n| dir.join(segment::file_name(n)));
            refuse_if_damaged(&file, &path, scan.end, why, next.as_deref())?;
        }
        for &(log_id, offset, len) in &scan.records {
            if purged.is_none_or(|p| log_id.index > p.index) {
                index.push(Slot {
                    log_id,
                    segment: first,
                    offset,
                    len,
                });
            }
        }
        if scan.bad.is_some() {
            tracing::warn!(segment = %path.display(), offset = scan.end, "torn or invalid log record: the log ends before it");
            erase_after(&file, scan.end)?;
        }
        segments.push(Segment {
            first,
            next: first + scan.records.len() as u64,
            end: scan.end,
            file: Arc::new(file),
        });
        kept += 1;
    }

    // Whatever a torn append left after a zero header is erased as well.
    if let Some(tail) = segments.last() {
        erase_after(&tail.file, tail.end)?;
    }
    if kept < names.len() {
        for &first in names[kept..].iter().rev() {
            tracing::warn!(first, "removing a log segment that does not follow the log");
            std::fs::remove_file(dir.join(segment::file_name(first)))?;
        }
        segment::sync_dir(dir)?;
    }
    Ok(Recovered { segments, index })
}

/// Fails with [`DbError::CorruptRecord`] if the bad record at `offset` of
/// `path` is followed by a valid record, in its file or at the start of the
/// `next` segment (see the module doc); `Ok` if it is a torn tail.
fn refuse_if_damaged(
    file: &File,
    path: &Path,
    offset: u64,
    why: &'static str,
    next: Option<&Path>,
) -> Result<(), DbError> {
    let valid_at = match append_start_after(file, offset + 1)? {
        Some(at) => Some((path.to_path_buf(), at)),
        None => match next {
            Some(next) if starts_with_valid_record(next)? => Some((next.to_path_buf(), 0)),
            _ => None,
        },
    };
    match valid_at {
        None => Ok(()),
        Some((valid_path, valid_offset)) => Err(DbError::CorruptRecord {
            path: path.to_path_buf(),
            offset,
            why,
            valid_path,
            valid_offset,
        }),
    }
}

/// The offset of the first valid record (non-zero length that fits, good
/// crc, decodable log id) that starts an append, at or after `from`, trying
/// every byte offset. Zero bytes are skipped cheaply; a crc is computed only
/// for a length that fits in the file.
fn append_start_after(file: &File, from: u64) -> io::Result<Option<u64>> {
    let file_len = file.metadata()?.len();
    if from >= file_len {
        return Ok(None);
    }
    let mut bytes = vec![0u8; (file_len - from) as usize];
    file.read_exact_at(&mut bytes, from)?;
    Ok(first_append_start(&bytes).map(|at| from + at as u64))
}

/// Whether the segment at `path` starts with a valid record (marked or not:
/// a segment is only started once the one before it is durable).
fn starts_with_valid_record(path: &Path) -> io::Result<bool> {
    let file = segment::open_file(path)?;
    let mut header = [0u8; HEADER];
    if file.metadata()?.len() < HEADER as u64 {
        return Ok(false);
    }
    file.read_exact_at(&mut header, 0)?;
    let Header::Record { len, .. } = record::parse_header(header) else {
        return Ok(false);
    };
    let mut bytes = vec![0u8; HEADER + len as usize];
    if file.metadata()?.len() < bytes.len() as u64 {
        return Ok(false);
    }
    file.read_exact_at(&mut bytes, 0)?;
    Ok(valid_record_at(&bytes, 0).is_some())
}

/// The offset in `bytes` of the first valid record that starts an append.
/// A record's length is not zero, so one of its first four bytes is not:
/// only the four offsets up to each non-zero byte are tried.
fn first_append_start(bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    while at < bytes.len() {
        let nonzero = at + bytes[at..].iter().position(|&b| b != 0)?;
        let start = nonzero.saturating_sub(3).max(at);
        if let Some(found) = (start..=nonzero).find(|&c| valid_record_at(bytes, c) == Some(true)) {
            return Some(found);
        }
        at = nonzero + 1;
    }
    None
}

/// Whether a whole valid record starts at `at` in `bytes`: `None` if not,
/// else whether it is the first of its append.
fn valid_record_at(bytes: &[u8], at: usize) -> Option<bool> {
    let header = bytes.get(at..at + HEADER)?.try_into().ok()?;
    let Header::Record { len, .. } = record::parse_header(header) else {
        return None;
    };
    let payload = bytes.get(at + HEADER..at + HEADER + len as usize)?;
    let first = record::verify(header, payload)?;
    record::decode_log_id(payload).ok().map(|_| first)
}

/// Reads the good records at the start of a segment. A whole record
/// written by a newer data format than this build's is refused
/// ([`DbError::NewerRecord`]): it is neither torn nor damaged, and
/// erasing it would lose acknowledged entries.
pub(crate) fn scan(file: &File, path: &Path, first: u64) -> Result<Scan, DbError> {
    let file_len = file.metadata()?.len();
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut records = Vec::new();
    let mut offset = 0u64;
    let mut payload = Vec::new();
    let bad = loop {
        if offset + HEADER as u64 > file_len {
            break None;
        }
        let mut header = [0; HEADER];
        reader.read_exact(&mut header)?;
        let (len, format) = match record::parse_header(header) {
            Header::End => break None,
            Header::Record { len, format } => (len, format),
        };
        if offset + (HEADER as u64) + u64::from(len) > file_len {
            break Some("its length runs past the end of the file");
        }
        payload.resize(len as usize, 0);
        reader.read_exact(&mut payload)?;
        if record::verify(header, &payload).is_none() {
            break Some("it fails its checksum");
        }
        if format > DATA_FORMAT {
            return Err(DbError::NewerRecord {
                path: path.to_path_buf(),
                offset,
                found: format,
            });
        }
        let expected = first + records.len() as u64;
        match record::decode_log_id(&payload) {
            Ok(log_id) if log_id.index == expected => records.push((log_id, offset, len)),
            Ok(_) => break Some("its log index is out of sequence"),
            Err(_) => break Some("its log id does not decode"),
        }
        offset += HEADER as u64 + u64::from(len);
    };
    Ok(Scan {
        records,
        end: offset,
        bad,
    })
}

/// Zeroes (and fsyncs) whatever non-zero bytes follow `end` in `file`.
fn erase_after(file: &File, end: u64) -> io::Result<()> {
    let file_len = file.metadata()?.len();
    let mut chunk = vec![0u8; 1 << 20];
    let mut at = end;
    let mut last_dirty = None;
    while at < file_len {
        let n = chunk.len().min((file_len - at) as usize);
        file.read_exact_at(&mut chunk[..n], at)?;
        if let Some(i) = chunk[..n].iter().rposition(|&b| b != 0) {
            last_dirty = Some(at + i as u64);
        }
        at += n as u64;
    }
    if let Some(last) = last_dirty {
        segment::write_zeros(file, end, last + 1)?;
        file.sync_data()?;
        crate::storage::power_cut::synced(file);
    }
    Ok(())
}
