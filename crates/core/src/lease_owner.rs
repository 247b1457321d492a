//! A lease's owner as the lease row keeps it: the owner's name, host and
//! pid packed into one heap block.
//!
//! Why: every lease row keeps its owner, and [`OwnerInfo`] takes 72 bytes
//! in the row (two `String`s, a pid, a start time, the labels) plus a heap
//! block for each non-empty text. Packed, the row keeps 24 bytes (the
//! block's one-word handle, [`ThinBytes`], the start time, the labels), and
//! the two texts share one block with an 8-byte header (pid, owner length).
//! A lease whose owner names its host has one block fewer. With the grant
//! revision gone from the row too (`lease.rs`), a row takes 160 bytes
//! instead of 264 (docs/DESIGN.md §6d). The encoding is [`OwnerInfo`]'s,
//! field for field, so stored snapshots read unchanged; readers take the
//! fields through accessors.

use crate::thin_text::ThinBytes;
use crate::{Metadata, OwnerInfo};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Bytes before the texts: pid (u32), owner length (u32).
const HEADER: usize = 4 + 4;

/// An [`OwnerInfo`] packed as `[pid][owner length][owner][host]` (numbers
/// little-endian), with its process start and labels beside.
#[derive(Clone, PartialEq, Eq)]
pub struct LeaseOwner {
    packed: ThinBytes,
    process_start_unix_ms: u64,
    labels: Metadata,
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
        // than lose the row, as the length field could not hold it.
        let owner = prefix_within(&owner, u32::MAX as usize);
        let mut packed = Vec::with_capacity(HEADER + owner.len() + host.len());
        packed.extend_from_slice(&pid.to_le_bytes());
        packed.extend_from_slice(&(owner.len() as u32).to_le_bytes());
        packed.extend_from_slice(owner.as_bytes());
        packed.extend_from_slice(host.as_bytes());
        LeaseOwner {
            packed: ThinBytes::new(&packed),
            process_start_unix_ms,
            labels,
        }
    }

    /// A human name for the owner (service or job name).
    pub fn owner(&self) -> &str {
        text(&self.packed.as_bytes()[HEADER..HEADER + self.owner_len()])
    }

    /// Host the owner runs on.
    pub fn host(&self) -> &str {
        text(&self.packed.as_bytes()[HEADER + self.owner_len()..])
    }

    /// Process id on that host (0 if unknown).
    pub fn pid(&self) -> u32 {
        u32::from_le_bytes(self.array(0))
    }

    /// Process start time, Unix ms (0 if unknown).
    pub fn process_start_unix_ms(&self) -> u64 {
        self.process_start_unix_ms
    }

    /// Free-form labels.
    pub fn labels(&self) -> &Metadata {
        &self.labels
    }

    fn owner_len(&self) -> usize {
        u32::from_le_bytes(self.array(4)) as usize
    }

    /// The `N` bytes at `at` in the header.
    fn array<const N: usize>(&self, at: usize) -> [u8; N] {
        let mut bytes = [0; N];
        bytes.copy_from_slice(&self.packed.as_bytes()[at..at + N]);
        bytes
    }
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
            .field("labels", &self.labels)
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
    labels: &'a Metadata,
}

impl Serialize for LeaseOwner {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        OwnerOut {
            owner: self.owner(),
            host: self.host(),
            pid: self.pid(),
            process_start_unix_ms: self.process_start_unix_ms(),
            labels: &self.labels,
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
    fn the_row_keeps_24_bytes_and_the_texts_share_one_block() {
        assert_eq!(std::mem::size_of::<LeaseOwner>(), 24);
        let packed = LeaseOwner::new(info("billing", "web-7"));
        assert_eq!(
            packed.packed.as_bytes().len(),
            HEADER + "billing".len() + "web-7".len()
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
    fn a_prefix_never_splits_a_char() {
        assert_eq!(prefix_within("żółw", 3), "ż");
        assert_eq!(prefix_within("żółw", 100), "żółw");
        assert_eq!(prefix_within("abc", 0), "");
    }
}
