//! Rebuilding the index from the segment files at open.
//!
//! Segments are scanned in index order, record by record. A segment ends at
//! its first zero header (never written), torn record (length past the end
//! of the file, bad crc, undecodable log id) or out-of-sequence index: after
//! a crash the tail of the last append may be torn, and everything before it
//! is kept. A segment must start where the previous one ended (or, when all
//! before it is purged, at or before `purged + 1`); the first one that does
//! not, and all after it, are left-overs of an interrupted truncate and are
//! deleted.
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
struct Scan {
    /// `(log id, offset, payload length)` of each good record, in order.
    records: Vec<(LogId, u64, u32)>,
    /// The offset after the last good record.
    end: u64,
    /// Whether the scan stopped at something other than a zero header.
    dirty: bool,
}

/// Scans `dir`, repairs its tail and returns the segments and the index.
pub(crate) fn recover(dir: &Path, purged: Option<LogId>) -> Result<Recovered, DbError> {
    let mut names: Vec<u64> = Vec::new();
    for item in std::fs::read_dir(dir)? {
        if let Some(first) = item?.file_name().to_str().and_then(segment::parse_name) {
            names.push(first);
        }
    }
    names.sort_unstable();

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
        let scan = scan(&file, first)?;
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
        if scan.dirty {
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

/// Reads the good records at the start of a segment.
fn scan(file: &File, first: u64) -> io::Result<Scan> {
    let file_len = file.metadata()?.len();
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut records = Vec::new();
    let mut offset = 0u64;
    let mut payload = Vec::new();
    let dirty = loop {
        if offset + HEADER as u64 > file_len {
            break false;
        }
        let mut header = [0; HEADER];
        reader.read_exact(&mut header)?;
        let (len, crc) = match record::parse_header(header) {
            Header::End => break false,
            Header::Record { len, crc } => (len, crc),
        };
        if offset + (HEADER as u64) + u64::from(len) > file_len {
            break true;
        }
        payload.resize(len as usize, 0);
        reader.read_exact(&mut payload)?;
        if record::checksum(&payload) != crc {
            break true;
        }
        let expected = first + records.len() as u64;
        match record::decode_log_id(&payload) {
            Ok(log_id) if log_id.index == expected => records.push((log_id, offset, len)),
            _ => break true,
        }
        offset += HEADER as u64 + u64::from(len);
    };
    Ok(Scan {
        records,
        end: offset,
        dirty,
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
    }
    Ok(())
}
