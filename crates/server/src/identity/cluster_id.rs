//! The cluster id: 128 bits, written as 32 lowercase hex digits, that tell
//! one cluster from every other (like etcd's cluster ID). It is made once,
//! when the cluster forms, and never changes.
//!
//! - A one-member cluster (no `--peers`) gets a random id: nothing else has
//!   to agree with it, and two single nodes started at the same address
//!   must still differ.
//! - The members of a `--peers` cluster must all compute the same id without
//!   talking to each other, so it is [derived](ClusterId::derive) from the
//!   member list and the cluster token (`--cluster-token`, like etcd's
//!   `--initial-cluster-token`): another token, or another list, gives
//!   another id.

use rand::Rng;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;

/// The token mixed into derived ids when `--cluster-token` is not given.
pub const DEFAULT_CLUSTER_TOKEN: &str = "leasehold";

/// Hex digits in a cluster id (128 bits).
const HEX_DIGITS: usize = 32;

/// What every derivation hashes first: another use of SHA-256 over the same
/// list cannot produce a cluster id by accident, and a future scheme can
/// change the tag.
const DERIVATION_TAG: &[u8] = b"leasehold cluster id v1";

/// One cluster's id (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClusterId(String);

impl ClusterId {
    /// The id every member of a cluster formed with `members` (node id →
    /// address) and `token` computes: the first 16 bytes of a SHA-256 over
    /// the tag, the token and the members sorted by id, each string
    /// length-prefixed (so no two different inputs share an encoding).
    pub fn derive(members: &BTreeMap<u64, String>, token: &str) -> ClusterId {
        let mut hash = Sha256::new();
        let mut field = |bytes: &[u8]| {
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(bytes);
        };
        field(DERIVATION_TAG);
        field(token.as_bytes());
        field(&(members.len() as u64).to_le_bytes());
        for (id, addr) in members {
            field(&id.to_le_bytes());
            field(addr.as_bytes());
        }
        ClusterId::from_bytes(&hash.finalize()[..HEX_DIGITS / 2])
    }

    /// A random id from `rng`, for a cluster only one node forms.
    pub fn random(rng: &mut impl Rng) -> ClusterId {
        ClusterId::from_bytes(&rng.random::<u128>().to_be_bytes())
    }

    /// `text` if it is a cluster id (32 lowercase hex digits), as every node
    /// writes one; anything else is no cluster's id.
    pub fn parse(text: &str) -> Option<ClusterId> {
        let valid = text.len() == HEX_DIGITS
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        valid.then(|| ClusterId(text.to_owned()))
    }

    /// The id as written (32 hex digits).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn from_bytes(bytes: &[u8]) -> ClusterId {
        let text: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(text.len(), HEX_DIGITS, "a cluster id is 128 bits");
        ClusterId(text)
    }
}

impl fmt::Display for ClusterId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    fn list(entries: &[(u64, &str)]) -> BTreeMap<u64, String> {
        entries.iter().map(|(id, a)| (*id, a.to_string())).collect()
    }

    #[test]
    fn every_member_derives_the_same_id_from_the_same_list_and_token() {
        let members = list(&[
            (1, "10.0.0.1:7420"),
            (2, "10.0.0.2:7420"),
            (3, "10.0.0.3:7420"),
        ]);
        // Each member parses its own copy of --peers (in any order).
        let reordered = list(&[
            (3, "10.0.0.3:7420"),
            (1, "10.0.0.1:7420"),
            (2, "10.0.0.2:7420"),
        ]);
        let id = ClusterId::derive(&members, DEFAULT_CLUSTER_TOKEN);
        assert_eq!(id, ClusterId::derive(&reordered, DEFAULT_CLUSTER_TOKEN));
        assert_eq!(ClusterId::parse(id.as_str()), Some(id.clone()), "{id}");
        // Stable across versions and machines: a change here splits clusters.
        assert_eq!(id.as_str(), "4c2c138861e270630e402fee1611959c");
    }

    #[test]
    fn another_token_or_list_gives_another_id() {
        let members = list(&[(1, "10.0.0.1:7420"), (2, "10.0.0.2:7420")]);
        let id = ClusterId::derive(&members, "leasehold");
        assert_ne!(id, ClusterId::derive(&members, "leasehold-2"));
        assert_ne!(
            id,
            ClusterId::derive(&list(&[(1, "10.0.0.1:7420")]), "leasehold")
        );
        assert_ne!(
            id,
            ClusterId::derive(
                &list(&[(1, "10.0.0.1:7420"), (2, "10.0.0.2:7421")]),
                "leasehold"
            )
        );
        assert_ne!(
            id,
            ClusterId::derive(
                &list(&[(1, "10.0.0.1:7420"), (3, "10.0.0.2:7420")]),
                "leasehold"
            )
        );
        // Length prefixes: moving a byte between fields changes the id.
        assert_ne!(
            ClusterId::derive(&list(&[(1, "ab")]), "c"),
            ClusterId::derive(&list(&[(1, "a")]), "bc")
        );
    }

    #[test]
    fn random_ids_differ_and_parse() {
        let mut rng = StdRng::seed_from_u64(7);
        let (a, b) = (ClusterId::random(&mut rng), ClusterId::random(&mut rng));
        assert_ne!(a, b);
        assert_eq!(ClusterId::parse(a.as_str()), Some(a));
    }

    #[test]
    fn only_32_lowercase_hex_digits_are_an_id() {
        assert!(ClusterId::parse("0123456789abcdef0123456789abcdef").is_some());
        for bad in [
            "",
            "0123456789abcdef",
            "0123456789ABCDEF0123456789ABCDEF",
            "0123456789abcdef0123456789abcdeg",
            "0123456789abcdef0123456789abcdef0",
        ] {
            assert_eq!(ClusterId::parse(bad), None, "{bad:?}");
        }
    }
}
