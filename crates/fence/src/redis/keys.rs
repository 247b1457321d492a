//! Where the fence and the rejection log of a data key live.
//!
//! Both must sit in the data key's hash slot, or a Redis Cluster refuses
//! the script (all its keys must be in one slot). Redis hashes only the
//! *hash tag* of a key — the text between the first `{` and the first `}`
//! after it, if non-empty — and otherwise the whole key. So the derived
//! keys start with `{tag}` where `tag` is the data key's own effective tag:
//!
//! - fence: `{tag}:fence:<key length>:<data key>:<lock>`
//! - rejection log: `{tag}:fence-rejections:<key length>:<data key>`
//!
//! The length prefix makes the derived key unique per (data key, lock)
//! even when the data key or lock contains `:`. A data key with no hash
//! tag that contains `}` cannot be co-located (its whole-key slot cannot be
//! reproduced by a tag, which ends at the first `}`), so it is refused.

use super::{FenceError, KEY_BYTES_MAX};
use leasehold_core::limits::NAME_BYTES_MAX;

/// The text Redis hashes to pick `key`'s slot.
fn hash_tag(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&b| b == b'}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

/// Checks that `key` is usable as a fenced data key.
pub(super) fn validate(key: &str, lock: &str) -> Result<(), FenceError> {
    let invalid = |reason: &'static str| FenceError::InvalidKey {
        key: key.to_owned(),
        reason,
    };
    if key.is_empty() {
        return Err(invalid("empty key"));
    }
    if key.len() > KEY_BYTES_MAX {
        return Err(invalid("longer than KEY_BYTES_MAX"));
    }
    if hash_tag(key.as_bytes()).contains(&b'}') {
        return Err(invalid(
            "contains '}' but no hash tag, so its fence cannot share its slot",
        ));
    }
    if lock.is_empty() || lock.len() > NAME_BYTES_MAX {
        return Err(FenceError::InvalidLock {
            lock: lock.to_owned(),
        });
    }
    Ok(())
}

/// The key holding the highest accepted token for (`key`, `lock`).
pub(super) fn fence(key: &str, lock: &str) -> Vec<u8> {
    let mut out = tagged(key, "fence");
    out.push(b':');
    out.extend_from_slice(lock.as_bytes());
    out
}

/// The list of refused writes to `key`, newest first.
pub(super) fn rejections(key: &str) -> Vec<u8> {
    tagged(key, "fence-rejections")
}

fn tagged(key: &str, kind: &str) -> Vec<u8> {
    let mut out = b"{".to_vec();
    out.extend_from_slice(hash_tag(key.as_bytes()));
    out.extend_from_slice(format!("}}:{kind}:{}:", key.len()).as_bytes());
    out.extend_from_slice(key.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_keys_share_the_data_keys_hash_tag() {
        for key in ["plain", "user:{42}:name", "a{", "x{a{b}y", "a{b}c{d}"] {
            let tag = hash_tag(key.as_bytes());
            assert_eq!(hash_tag(&fence(key, "l")), tag, "{key}");
            assert_eq!(hash_tag(&rejections(key)), tag, "{key}");
        }
        assert_eq!(
            fence("user:{42}:name", "l"),
            b"{42}:fence:14:user:{42}:name:l"
        );
        assert_eq!(fence("k", "l"), b"{k}:fence:1:k:l");
    }

    #[test]
    fn keys_that_cannot_be_co_located_are_refused() {
        assert!(validate("a}b", "l").is_err());
        assert!(validate("a{}b", "l").is_err());
        assert!(validate("", "l").is_err());
        assert!(validate("k", "").is_err());
        assert!(validate("a{b}c", "l").is_ok());
    }

    #[test]
    fn every_valid_lock_name_is_accepted() {
        let longest = "n".repeat(NAME_BYTES_MAX);
        assert!(validate("k", &longest).is_ok());
        let error = validate("k", &format!("{longest}n")).unwrap_err();
        assert!(error.to_string().contains("NAME_BYTES_MAX"), "{error}");
    }

    #[test]
    fn colons_do_not_make_fences_collide() {
        assert_ne!(fence("k:fence:x", "y"), fence("k", "fence:x:y"));
    }
}
