//! The built-in fenced store: a small key space for shared state that must
//! only be written by the current holder of a lock (a leader's address, a
//! checkpoint). Each key remembers the highest token that wrote it; a write
//! is accepted only from the lock's current holder token, and only if that
//! token is at least the key's highest. This file owns the key type, the
//! stored entry and the table with its byte accounting; the apply path is
//! `state/fenced.rs`.

use crate::limits::{self, Limit};
use crate::name::check_name_text;
use crate::{LockError, LockName, Token};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A validated fenced-store key: UTF-8, 1..=[`limits::FENCED_KEY_BYTES_MAX`]
/// bytes, no control characters (the rules of lock names). Byte-exact.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FencedKey(String);

impl FencedKey {
    /// Validates `raw` as a key. The error names the field `key` and the limit.
    pub fn parse(raw: &str) -> Result<FencedKey, LockError> {
        check_name_text("key", raw, Limit::FencedKeyBytesMax)?;
        Ok(FencedKey(raw.to_owned()))
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FencedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for FencedKey {
    type Err = LockError;

    fn from_str(raw: &str) -> Result<FencedKey, LockError> {
        FencedKey::parse(raw)
    }
}

/// Checks a value's size against [`limits::FENCED_VALUE_BYTES_MAX`].
pub fn check_fenced_value(value: &[u8]) -> Result<(), LockError> {
    if value.len() > limits::FENCED_VALUE_BYTES_MAX {
        return Err(LockError::over_limit(
            "value",
            Limit::FencedValueBytesMax,
            format!(
                "is {} bytes; the limit FENCED_VALUE_BYTES_MAX is {}",
                value.len(),
                limits::FENCED_VALUE_BYTES_MAX
            ),
        ));
    }
    Ok(())
}

/// What the store holds under one key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FencedEntry {
    /// The value of the last accepted write.
    pub value: Vec<u8>,
    /// The token of the last accepted write, which is the highest token that
    /// ever wrote the key (a write below it is refused).
    pub token: Token,
    /// The lock whose holder made the last accepted write.
    pub lock: LockName,
}

/// The key space, with the byte total kept alongside so the
/// [`limits::FENCED_STORE_BYTES_MAX`] check is O(1).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FencedStore {
    /// Every key with its entry, in key order.
    entries: BTreeMap<FencedKey, FencedEntry>,
    /// Sum of key and value bytes over `entries`.
    bytes: usize,
}

impl FencedStore {
    /// The entry under `key`.
    pub(crate) fn get(&self, key: &FencedKey) -> Option<&FencedEntry> {
        self.entries.get(key)
    }

    /// Number of keys.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Every entry, in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&FencedKey, &FencedEntry)> {
        self.entries.iter()
    }

    /// Refuses a write of `value_len` bytes under `key` that would exceed
    /// [`limits::FENCED_KEYS_MAX`] or [`limits::FENCED_STORE_BYTES_MAX`].
    pub(crate) fn check_room(&self, key: &FencedKey, value_len: usize) -> Result<(), LockError> {
        let old = self.entries.get(key);
        if old.is_none() && self.entries.len() >= limits::FENCED_KEYS_MAX {
            return Err(LockError::exhausted(
                Limit::FencedKeysMax,
                format!("the fenced store holds {} keys", self.entries.len()),
            ));
        }
        let freed = old.map_or(0, |e| key.0.len() + e.value.len());
        let after = self.bytes - freed + key.0.len() + value_len;
        if after > limits::FENCED_STORE_BYTES_MAX {
            return Err(LockError::exhausted(
                Limit::FencedStoreBytesMax,
                format!(
                    "the fenced store holds {} bytes; this write would make it {after}",
                    self.bytes
                ),
            ));
        }
        Ok(())
    }

    /// Stores `entry` under `key` (the caller checked token and room).
    pub(crate) fn insert(&mut self, key: FencedKey, entry: FencedEntry) {
        let added = key.0.len() + entry.value.len();
        let freed = match self.entries.get(&key) {
            Some(old) => {
                assert!(old.token <= entry.token, "fenced token regressed");
                key.0.len() + old.value.len()
            }
            None => 0,
        };
        self.entries.insert(key, entry);
        self.bytes = self.bytes - freed + added;
        assert!(self.entries.len() <= limits::FENCED_KEYS_MAX);
        assert!(self.bytes <= limits::FENCED_STORE_BYTES_MAX);
    }

    /// The byte total recomputed from the entries (for invariant checks).
    pub(crate) fn recount_bytes(&self) -> usize {
        self.entries
            .iter()
            .map(|(k, e)| k.0.len() + e.value.len())
            .sum()
    }

    /// The byte total as tracked.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_lock_name_rules() {
        assert!(FencedKey::parse("").is_err());
        assert!(FencedKey::parse("a\u{0}b").is_err());
        let long = "k".repeat(limits::FENCED_KEY_BYTES_MAX + 1);
        let error = FencedKey::parse(&long).unwrap_err().to_string();
        assert!(error.contains("FENCED_KEY_BYTES_MAX"), "{error}");
        assert!(error.contains("invalid key"), "{error}");
        assert!(FencedKey::parse(&long[1..]).is_ok());
        assert_eq!(
            FencedKey::parse("cfg/leader").unwrap().as_str(),
            "cfg/leader"
        );
    }

    #[test]
    fn values_are_bounded() {
        assert!(check_fenced_value(&vec![0; limits::FENCED_VALUE_BYTES_MAX]).is_ok());
        let error = check_fenced_value(&vec![0; limits::FENCED_VALUE_BYTES_MAX + 1])
            .unwrap_err()
            .to_string();
        assert!(error.contains("FENCED_VALUE_BYTES_MAX"), "{error}");
    }
}
