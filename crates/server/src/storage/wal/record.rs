//! The on-disk record: `[format:4 bits | len:28 bits, u32 LE][crc32 u32
//! LE][postcard Entry bytes]`.
//!
//! **Why each record names its format**: a segment outlives the build that
//! wrote its first records, so after an upgrade one segment holds records
//! of two formats. The top four bits of the length word carry the data
//! format ([`DATA_FORMAT`]) that wrote the record; records written before
//! they did have zeros there (a record was never near 256 MiB), and read as
//! format 1. A record of a format newer than this build reads is refused
//! by recovery ([`super::recovery`]) with a sentence naming both, never
//! mistaken for a torn one and erased.
//!
//! **Why a checksum per record**: an append that was cut by a crash leaves a
//! torn record at the tail. The crc (over the length bytes and the payload,
//! so a garbled length is caught too) tells a complete record from a torn
//! one, and recovery stops at the first record that fails it.
//!
//! **Why the first record of each append is marked**: recovery must tell a
//! torn tail (the last append cut short: drop it) from damage (a bad record
//! with a later append after it: refuse to start). Records of the append
//! being torn may reach the disk out of order, so "a valid record after a
//! bad one" alone is not damage; a valid record that *starts an append* is.
//! The mark is the stored crc XORed with [`FIRST_OF_APPEND`]: no format
//! change (records written before it read as unmarked), and a damaged crc
//! still fails both ways.
//!
//! **Why `len == 0` means "end"**: segments are zero-filled before use, so
//! the bytes after the last record read as a zero header. No entry encodes
//! to zero bytes, so a real record never has length 0.

use crate::raft::types::{LogId, TypeConfig};
use crate::storage::format::DATA_FORMAT;
use openraft::Entry;

/// Bytes of the header before each payload.
pub(crate) const HEADER: usize = 8;

/// XORed into the stored crc of the first record of an append.
const FIRST_OF_APPEND: u32 = 0xA5A5_5A5A;

/// The length word's bits below the format: a payload is shorter than this.
pub(crate) const PAYLOAD_BYTES_LIMIT: u32 = 1 << FORMAT_SHIFT;
/// Where the format starts in the length word.
const FORMAT_SHIFT: u32 = 28;
/// The format of a record written before records carried one.
const UNMARKED_FORMAT: u32 = 1;

/// What a record's header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Header {
    /// A zero length: nothing was ever written here (or it was erased).
    End,
    /// A record of `len` payload bytes, written by data format `format`.
    Record { len: u32, format: u32 },
}

/// Parses the 8 header bytes.
pub(crate) fn parse_header(bytes: [u8; HEADER]) -> Header {
    let word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let len = word & (PAYLOAD_BYTES_LIMIT - 1);
    match word >> FORMAT_SHIFT {
        _ if word == 0 => Header::End,
        0 => Header::Record {
            len,
            format: UNMARKED_FORMAT,
        },
        format => Header::Record { len, format },
    }
}

/// The header this build writes before `payload`, marked if it is the
/// `first` of its append; `None` if the payload is too long for a record.
pub(crate) fn header_for(payload: &[u8], first: bool) -> Option<[u8; HEADER]> {
    header_of_format(payload, first, DATA_FORMAT)
}

/// The header data format `format` writes (tests make newer records).
pub(crate) fn header_of_format(payload: &[u8], first: bool, format: u32) -> Option<[u8; HEADER]> {
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|&len| len < PAYLOAD_BYTES_LIMIT)?;
    let word = format << FORMAT_SHIFT | len;
    let mark = if first { FIRST_OF_APPEND } else { 0 };
    let crc = checksum(word, payload) ^ mark;
    let mut header = [0; HEADER];
    header[..4].copy_from_slice(&word.to_le_bytes());
    header[4..].copy_from_slice(&crc.to_le_bytes());
    Some(header)
}

/// The checksum stored for a payload: crc32 of the length word it was
/// written with (`word`), then the payload.
fn checksum(word: u32, payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&word.to_le_bytes());
    hasher.update(payload);
    hasher.finalize()
}

/// Whether a payload matches the crc stored in its header: `None` if not,
/// else whether the record is the first of its append.
pub(crate) fn verify(header: [u8; HEADER], payload: &[u8]) -> Option<bool> {
    let word = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    let crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    let actual = checksum(word, payload);
    if crc == actual {
        Some(false)
    } else if crc == actual ^ FIRST_OF_APPEND {
        Some(true)
    } else {
        None
    }
}

/// Appends one record holding the postcard encoding of `entry` to `buf`,
/// marked if it is the `first` of its append, and returns the payload's
/// length.
pub(crate) fn encode_entry(
    buf: &mut Vec<u8>,
    entry: &Entry<TypeConfig>,
    first: bool,
) -> Result<u32, postcard::Error> {
    let start = buf.len();
    buf.extend_from_slice(&[0; HEADER]);
    *buf = postcard::to_extend(entry, std::mem::take(buf))?;
    let header =
        header_for(&buf[start + HEADER..], first).ok_or(postcard::Error::SerializeBufferFull)?;
    buf[start..start + HEADER].copy_from_slice(&header);
    Ok((buf.len() - start - HEADER) as u32)
}

/// The log id at the front of a payload, without decoding the rest: postcard
/// writes a struct's fields in order and `Entry` starts with its `log_id`.
pub(crate) fn decode_log_id(payload: &[u8]) -> Result<LogId, postcard::Error> {
    Ok(postcard::take_from_bytes::<LogId>(payload)?.0)
}

/// Decodes a whole payload.
pub(crate) fn decode_entry(payload: &[u8]) -> Result<Entry<TypeConfig>, postcard::Error> {
    postcard::from_bytes(payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::testing::{blank_ent, log_id};

    #[test]
    fn a_record_round_trips_and_its_log_id_reads_alone() {
        let entry = blank_ent::<TypeConfig>(3, 2, 17);
        let mut buf = vec![0xAA];
        let len = encode_entry(&mut buf, &entry, false).unwrap();
        assert_eq!(buf.len(), 1 + HEADER + len as usize);
        let header: [u8; HEADER] = buf[1..1 + HEADER].try_into().unwrap();
        let Header::Record {
            len: read_len,
            format,
            ..
        } = parse_header(header)
        else {
            panic!("zero header");
        };
        let payload = &buf[1 + HEADER..];
        assert_eq!((read_len, format), (len, DATA_FORMAT));
        assert_eq!(verify(header, payload), Some(false));
        assert_eq!(decode_log_id(payload).unwrap(), log_id(3, 2, 17));
        assert_eq!(decode_entry(payload).unwrap(), entry);
    }

    #[test]
    fn a_record_written_before_formats_were_recorded_reads_as_format_1() {
        let entry = blank_ent::<TypeConfig>(3, 2, 17);
        let payload = postcard::to_allocvec(&entry).unwrap();
        // How format 1 wrote it: the bare length, and the crc over it.
        let len = payload.len() as u32;
        let mut header = [0; HEADER];
        header[..4].copy_from_slice(&len.to_le_bytes());
        header[4..].copy_from_slice(&checksum(len, &payload).to_le_bytes());
        assert_eq!(parse_header(header), Header::Record { len, format: 1 });
        assert_eq!(verify(header, &payload), Some(false));
        assert_eq!(decode_entry(&payload).unwrap(), entry);
    }

    #[test]
    fn the_format_is_covered_by_the_checksum() {
        let mut buf = Vec::new();
        encode_entry(&mut buf, &blank_ent::<TypeConfig>(1, 1, 1), false).unwrap();
        let mut header: [u8; HEADER] = buf[..HEADER].try_into().unwrap();
        header[3] ^= 0x10; // format 2 becomes format 3
        assert!(matches!(
            parse_header(header),
            Header::Record { format: 3, .. }
        ));
        assert_eq!(verify(header, &buf[HEADER..]), None);
    }

    #[test]
    fn the_first_record_of_an_append_is_marked_and_still_verified() {
        let entry = blank_ent::<TypeConfig>(3, 2, 17);
        for first in [true, false] {
            let mut buf = Vec::new();
            encode_entry(&mut buf, &entry, first).unwrap();
            let header: [u8; HEADER] = buf[..HEADER].try_into().unwrap();
            assert_eq!(verify(header, &buf[HEADER..]), Some(first));
            buf[HEADER] ^= 1;
            assert_eq!(verify(header, &buf[HEADER..]), None);
        }
    }

    #[test]
    fn a_zero_header_is_the_end() {
        assert_eq!(parse_header([0; HEADER]), Header::End);
    }
}
