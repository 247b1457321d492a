//! The on-disk record: `[len u32 LE][crc32 u32 LE][postcard Entry bytes]`.
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
use openraft::Entry;

/// Bytes of the header before each payload.
pub(crate) const HEADER: usize = 8;

/// XORed into the stored crc of the first record of an append.
const FIRST_OF_APPEND: u32 = 0xA5A5_5A5A;

/// What a record's header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Header {
    /// A zero length: nothing was ever written here (or it was erased).
    End,
    /// A record of `len` payload bytes whose checksum should be `crc`.
    Record { len: u32, crc: u32 },
}

/// Parses the 8 header bytes.
pub(crate) fn parse_header(bytes: [u8; HEADER]) -> Header {
    let len = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let crc = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
    if len == 0 {
        Header::End
    } else {
        Header::Record { len, crc }
    }
}

/// The checksum stored for a payload: crc32 of the length bytes, then the
/// payload.
pub(crate) fn checksum(payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&(payload.len() as u32).to_le_bytes());
    hasher.update(payload);
    hasher.finalize()
}

/// Whether a payload matches its stored crc: `None` if not, else whether
/// the record is the first of its append.
pub(crate) fn verify(payload: &[u8], crc: u32) -> Option<bool> {
    let actual = checksum(payload);
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
    let payload_len = buf.len() - start - HEADER;
    let len = u32::try_from(payload_len).map_err(|_| postcard::Error::SerializeBufferFull)?;
    let mark = if first { FIRST_OF_APPEND } else { 0 };
    let crc = checksum(&buf[start + HEADER..]) ^ mark;
    buf[start..start + 4].copy_from_slice(&len.to_le_bytes());
    buf[start + 4..start + HEADER].copy_from_slice(&crc.to_le_bytes());
    Ok(len)
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
        let Header::Record { len: read_len, crc } = parse_header(header) else {
            panic!("zero header");
        };
        let payload = &buf[1 + HEADER..];
        assert_eq!(read_len, len);
        assert_eq!(crc, checksum(payload));
        assert_eq!(decode_log_id(payload).unwrap(), log_id(3, 2, 17));
        assert_eq!(decode_entry(payload).unwrap(), entry);
    }

    #[test]
    fn the_first_record_of_an_append_is_marked_and_still_verified() {
        let entry = blank_ent::<TypeConfig>(3, 2, 17);
        for first in [true, false] {
            let mut buf = Vec::new();
            encode_entry(&mut buf, &entry, first).unwrap();
            let crc = u32::from_le_bytes(buf[4..8].try_into().unwrap());
            assert_eq!(verify(&buf[HEADER..], crc), Some(first));
            buf[HEADER] ^= 1;
            assert_eq!(verify(&buf[HEADER..], crc), None);
        }
    }

    #[test]
    fn a_zero_header_is_the_end() {
        assert_eq!(parse_header([0; HEADER]), Header::End);
    }
}
