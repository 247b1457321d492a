//! Tools for a stopped node's log, for fault tests and harnesses: where
//! each record is ([`wal_records`]), and a crash mid-append re-enacted
//! ([`tear_wal_tail`]). They read the segments with recovery's own scan, so
//! they see the log exactly as a start-up would.
//!
//! **Why the torn record is a new one**: a crash cuts short the append that
//! was in flight, which was never acknowledged (its fsync had not
//! returned). Cutting the last *existing* record instead would destroy an
//! acknowledged entry, which no crash does. So [`tear_wal_tail`] writes a
//! partial record after the last one, as the interrupted append would have
//! left it, and a restart must erase it and keep everything acknowledged.

use super::record::{self, HEADER};
use super::recovery::{self, Scan};
use super::{segment, LOG_DIR};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// One record of the log, as a start-up would find it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordPlace {
    /// The segment file holding it.
    pub segment: PathBuf,
    /// The byte offset of its header in that file.
    pub offset: u64,
    /// Header plus payload, in bytes.
    pub bytes: u64,
    /// Its log index.
    pub index: u64,
}

/// What [`tear_wal_tail`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// The segment file written to (the newest).
    pub segment: PathBuf,
    /// Where the torn record starts.
    pub offset: u64,
    /// How long the record claims to be (header plus payload).
    pub claimed_bytes: u64,
    /// How many of those bytes were written before the "crash".
    pub written_bytes: u64,
}

/// The records of the log in `<data_dir>/log`, in order, up to where a
/// start-up would end the log in each segment. The node must be stopped.
pub fn wal_records(data_dir: &Path) -> io::Result<Vec<RecordPlace>> {
    let mut places = Vec::new();
    for (path, _, scan) in scan_segments(data_dir)? {
        places.extend(
            scan.records
                .iter()
                .map(|&(log_id, offset, len)| RecordPlace {
                    segment: path.clone(),
                    offset,
                    bytes: HEADER as u64 + u64::from(len),
                    index: log_id.index,
                }),
        );
    }
    Ok(places)
}

/// On a stopped node's data dir, writes after the last record of the log a
/// copy of that record cut to half its length, header intact (its crc as
/// stored, so marked or not as the original was), as a crash in
/// the middle of the next append would leave it (see the module doc), and
/// says where. The next start erases it and keeps every record before it.
/// Fails if the log holds no record.
pub fn tear_wal_tail(data_dir: &Path) -> io::Result<TornTail> {
    let segments = scan_segments(data_dir)?;
    let last = segments
        .iter()
        .rev()
        .find_map(|(_, file, scan)| Some((file, *scan.records.last()?)))
        .ok_or_else(|| io::Error::other(format!("no log record in {}", data_dir.display())))?;
    let (last_file, (_, last_offset, last_len)) = last;
    let claimed_bytes = HEADER as u64 + u64::from(last_len);
    let mut record = vec![0; claimed_bytes as usize];
    last_file.read_exact_at(&mut record, last_offset)?;
    let (path, file, scan) = segments.last().expect("a segment holds the last record");
    let room = file.metadata()?.len().saturating_sub(scan.end);
    let written_bytes = (HEADER as u64 + u64::from(last_len) / 2).min(room);
    file.write_all_at(&record[..written_bytes as usize], scan.end)?;
    file.sync_data()?;
    Ok(TornTail {
        segment: path.clone(),
        offset: scan.end,
        claimed_bytes,
        written_bytes,
    })
}

/// On a stopped node's data dir, rewrites the header of the record holding
/// log index `index` as data format `format` would have written it (its
/// append's mark kept; format 1 writes the bare length), so tests can make
/// a log of an older or a newer format than this build's.
pub fn rewrite_wal_record_format(data_dir: &Path, index: u64, format: u32) -> io::Result<()> {
    let place = wal_records(data_dir)?
        .into_iter()
        .find(|place| place.index == index)
        .ok_or_else(|| io::Error::other(format!("no log record of index {index}")))?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&place.segment)?;
    let mut bytes = vec![0; place.bytes as usize];
    file.read_exact_at(&mut bytes, place.offset)?;
    let (header, payload) = bytes.split_at(HEADER);
    let first = record::verify(header.try_into().expect("a header"), payload)
        .ok_or_else(|| io::Error::other("the record fails its checksum"))?;
    let format = if format == 1 { 0 } else { format };
    let header = record::header_of_format(payload, first, format)
        .ok_or_else(|| io::Error::other("the record is too long"))?;
    file.write_all_at(&header, place.offset)?;
    file.sync_data()
}

/// Each segment of the log, in index order, with its scan.
fn scan_segments(data_dir: &Path) -> io::Result<Vec<(PathBuf, std::fs::File, Scan)>> {
    let dir = data_dir.join(LOG_DIR);
    segment::list(&dir)?
        .into_iter()
        .map(|first| {
            let path = dir.join(segment::file_name(first));
            let file = segment::open_file(&path)?;
            let scan = recovery::scan(&file, &path, first).map_err(io::Error::other)?;
            Ok((path, file, scan))
        })
        .collect()
}
