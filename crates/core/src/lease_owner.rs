//! A lease's owner as the lease row keeps it: every field of an
//! [`OwnerInfo`] packed into one heap block behind a one-word handle.
//!
//! Why: every lease row keeps its owner, and [`OwnerInfo`] takes 72 bytes
//! in the row (two `String`s, a pid, a start time, the labels) plus a heap
//! block for each non-empty text. Packed, the row keeps 8 bytes (the
//! block's handle, [`ThinBytes`]); the block holds a 16-byte header (pid,
//! the two texts' lengths, the process start), the texts, and the labels
//! in their encoding (nothing when there are none, as for most owners).
//! The owner is fixed for the lease's life, so nothing is ever rewritten in
//! place. With the grant revision gone from the row too (`lease.rs`), a row
//! takes 128 bytes instead of 264 (docs/DESIGN.md §6d). The encoding is
//! [`OwnerInfo`]'s, field for field, so stored snapshots read unchanged;
//! readers take the fields through accessors.

use crate::thin_text::ThinBytes;
use crate::{Metadata, OwnerInfo};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;

/// Bytes before the texts: pid (u32), owner and host lengths (u16 each),
/// process start (u64).
const HEADER: usize = 4 + 2 + 2 + 8;

/// An [`OwnerInfo`] packed as `[pid][owner length][host length][process
/// start][owner][host][labels]` (numbers little-endian, labels as their
/// postcard encoding, or nothing when there are none).
#[derive(Clone, PartialEq, Eq)]
pub struct LeaseOwner {
    packed: ThinBytes,
}

impl LeaseOwner {
    /// Packs `info`.
    pub fn new(info: OwnerInfo) -> LeaseOwner {
        let OwnerInfo {
            owner,
            host,
            pid,
            process_start_unix_ms,
            labels,
        } = info;
        // Owner fields are bounded by `OWNER_FIELD_BYTES_MAX` (256) when a
        // grant is validated; a longer one is cut at a char boundary rather
        // than lose the row, as the length fields could not hold it.
        let owner = prefix_within(&owner, u16::MAX as usize);
        let host = prefix_within(&host, u16::MAX as usize);
        let labels = encode_labels(&labels);
        let mut packed = Vec::with_capacity(HEADER + owner.len() + host.len() + labels.len());
        packed.extend_from_slice(&pid.to_le_bytes());
        packed.extend_from_slice(&(owner.len() as u16).to_le_bytes());
        packed.extend_from_slice(&(host.len() as u16).to_le_bytes());
        packed.extend_from_slice(&process_start_unix_ms.to_le_bytes());
        packed.extend_from_slice(owner.as_bytes());
        packed.extend_from_slice(host.as_bytes());
        packed.extend_from_slice(&labels);
        LeaseOwner {
            packed: ThinBytes::new(&packed),
        }
    }

    /// A human name for the owner (service or job name).
    pub fn owner(&self) -> &str {
        text(&self.packed.as_bytes()[HEADER..HEADER + self.owner_len()])
    }

    /// Host the owner runs on.
    pub fn host(&self) -> &str {
        let at = HEADER + self.owner_len();
        text(&self.packed.as_bytes()[at..at + self.host_len()])
    }

    /// Process id on that host (0 if unknown).
    pub fn pid(&self) -> u32 {
        u32::from_le_bytes(self.array(0))
    }

    /// Process start time, Unix ms (0 if unknown).
    pub fn process_start_unix_ms(&self) -> u64 {
        u64::from_le_bytes(self.array(8))
    }

    /// Free-form labels, decoded from the block (most owners have none,
    /// and then nothing is decoded or allocated).
    pub fn labels(&self) -> Metadata {
        let at = HEADER + self.owner_len() + self.host_len();
        decode_labels(&self.packed.as_bytes()[at..])
    }

    fn owner_len(&self) -> usize {
        u16::from_le_bytes(self.array(4)) as usize
    }

    fn host_len(&self) -> usize {
        u16::from_le_bytes(self.array(6)) as usize
    }

    /// The `N` bytes at `at` in the header.
    fn array<const N: usize>(&self, at: usize) -> [u8; N] {
        let mut bytes = [0; N];
        bytes.copy_from_slice(&self.packed.as_bytes()[at..at + N]);
        bytes
    }
}

/// Labels as `[key length][key][value length][value]`... (u16 lengths,
/// little-endian); no labels, no bytes. Keys and values are bounded by
/// `LABEL_BYTES_MAX` (512) when a grant is validated.
fn encode_labels(labels: &Metadata) -> Vec<u8> {
    let mut encoded = Vec::new();
    for (key, value) in labels {
        for text in [key, value] {
            let text = prefix_within(text, u16::MAX as usize);
            encoded.extend_from_slice(&(text.len() as u16).to_le_bytes());
            encoded.extend_from_slice(text.as_bytes());
        }
    }
    encoded
}

/// The labels [`encode_labels`] wrote.
fn decode_labels(mut encoded: &[u8]) -> Metadata {
    let mut next_text = || {
        let (len, rest) = encoded.split_first_chunk::<2>()?;
        let (text_bytes, rest) = rest.split_at_checked(u16::from_le_bytes(*len) as usize)?;
        encoded = rest;
        Some(text(text_bytes).to_owned())
    };
    let mut pairs = BTreeMap::new();
    while let (Some(key), Some(value)) = (next_text(), next_text()) {
        pairs.insert(key, value);
    }
    Metadata::from(pairs)
}

/// The packed texts were `String`s: they are UTF-8, so this never falls
/// back to the empty text.
fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap_or_default()
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
fn prefix_within(s: &str, max: usize) -> &str {
    let end = (0..=max.min(s.len()))
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0);
    &s[..end]
}

impl Default for LeaseOwner {
    fn default() -> LeaseOwner {
        LeaseOwner::new(OwnerInfo::default())
    }
}

impl From<OwnerInfo> for LeaseOwner {
    fn from(info: OwnerInfo) -> LeaseOwner {
        LeaseOwner::new(info)
    }
}

impl std::fmt::Debug for LeaseOwner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseOwner")
            .field("owner", &self.owner())
            .field("host", &self.host())
            .field("pid", &self.pid())
            .field("process_start_unix_ms", &self.process_start_unix_ms())
            .field("labels", &self.labels())
            .finish()
    }
}

/// [`OwnerInfo`]'s encoding, from borrowed fields.
#[derive(Serialize)]
#[serde(rename = "OwnerInfo")]
struct OwnerOut<'a> {
    owner: &'a str,
    host: &'a str,
    pid: u32,
    process_start_unix_ms: u64,
    labels: Metadata,
}

impl Serialize for LeaseOwner {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        OwnerOut {
            owner: self.owner(),
            host: self.host(),
            pid: self.pid(),
            process_start_unix_ms: self.process_start_unix_ms(),
            labels: self.labels(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for LeaseOwner {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<LeaseOwner, D::Error> {
        OwnerInfo::deserialize(deserializer).map(LeaseOwner::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(owner: &str, host: &str) -> OwnerInfo {
        OwnerInfo {
            owner: owner.into(),
            host: host.into(),
            pid: 4_000_000_001,
            process_start_unix_ms: 1_764_700_000_123,
            labels: [("team".to_string(), "infra".to_string())]
                .into_iter()
                .collect(),
        }
    }

    #[test]
    fn every_field_reads_back_as_given() {
        for (owner, host) in [
            ("billing", "web-7"),
            ("", ""),
            ("", "h"),
            ("o", ""),
            ("żółw", "ホスト"),
        ] {
            let packed = LeaseOwner::new(info(owner, host));
            assert_eq!(packed.owner(), owner);
            assert_eq!(packed.host(), host);
            assert_eq!(packed.pid(), 4_000_000_001);
            assert_eq!(packed.process_start_unix_ms(), 1_764_700_000_123);
            assert_eq!(
                packed.labels().get("team").map(String::as_str),
                Some("infra")
            );
        }
    }

    #[test]
    fn the_row_keeps_8_bytes_and_an_owner_without_labels_one_block_of_its_texts() {
        assert_eq!(std::mem::size_of::<LeaseOwner>(), 8);
        let mut plain = info("billing", "web-7");
        plain.labels = Metadata::default();
        let packed = LeaseOwner::new(plain.clone());
        assert_eq!(
            packed.packed.as_bytes().len(),
            HEADER + "billing".len() + "web-7".len()
        );
        assert!(packed.labels().is_empty());
        assert_eq!(
            postcard::to_allocvec(&packed).unwrap(),
            postcard::to_allocvec(&plain).unwrap()
        );
    }

    #[test]
    fn encoded_exactly_as_the_owner_info_it_packs() {
        let original = info("billing", "web-7");
        let packed = LeaseOwner::new(original.clone());
        let bytes = postcard::to_allocvec(&packed).unwrap();
        assert_eq!(bytes, postcard::to_allocvec(&original).unwrap());
        let read: LeaseOwner = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(read, packed);
    }

    #[test]
    fn labels_read_back_from_the_block_and_encode_as_the_map() {
        let mut original = info("billing", "web-7");
        original.labels = [("", "empty key"), ("team", ""), ("zone", "ä-1")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let packed = LeaseOwner::new(original.clone());
        assert_eq!(packed.labels(), original.labels);
        assert_eq!((packed.owner(), packed.host()), ("billing", "web-7"));
        assert_eq!(
            postcard::to_allocvec(&packed).unwrap(),
            postcard::to_allocvec(&original).unwrap()
        );
    }

    #[test]
    fn a_prefix_never_splits_a_char() {
        assert_eq!(prefix_within("żółw", 3), "ż");
        assert_eq!(prefix_within("żółw", 100), "żółw");
        assert_eq!(prefix_within("abc", 0), "");
    }
}
