//! A holder's or waiter's metadata (free-form key/value pairs given at
//! acquire), and an owner's labels, stored out of line.
//!
//! Why: most acquires carry none, and an empty `BTreeMap` still takes 24
//! bytes in every row of the lock table; this takes 8 and allocates only
//! when there are pairs. It reads as the map (`Deref`), and its encoding is
//! the map's, so stored snapshots read unchanged.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::ops::Deref;

/// Key/value pairs, `None` when there are none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[allow(
    clippy::box_collection,
    reason = "8 bytes in the row instead of 24 is the point"
)]
pub struct Metadata(Option<Box<BTreeMap<String, String>>>);

impl From<BTreeMap<String, String>> for Metadata {
    fn from(pairs: BTreeMap<String, String>) -> Metadata {
        Metadata((!pairs.is_empty()).then(|| Box::new(pairs)))
    }
}

impl FromIterator<(String, String)> for Metadata {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(pairs: I) -> Metadata {
        Metadata::from(pairs.into_iter().collect::<BTreeMap<_, _>>())
    }
}

impl Deref for Metadata {
    type Target = BTreeMap<String, String>;

    fn deref(&self) -> &BTreeMap<String, String> {
        static NONE: BTreeMap<String, String> = BTreeMap::new();
        self.0.as_deref().unwrap_or(&NONE)
    }
}

impl<'a> IntoIterator for &'a Metadata {
    type Item = (&'a String, &'a String);
    type IntoIter = std::collections::btree_map::Iter<'a, String, String>;

    fn into_iter(self) -> Self::IntoIter {
        self.deref().iter()
    }
}

impl Serialize for Metadata {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.deref().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Metadata, D::Error> {
        BTreeMap::deserialize(deserializer).map(Metadata::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_as_its_map_and_keeps_nothing_when_empty() {
        let none = Metadata::from(BTreeMap::new());
        assert!(none.0.is_none() && none.is_empty());
        let pairs = BTreeMap::from([("job".to_owned(), "nightly".to_owned())]);
        let some = Metadata::from(pairs.clone());
        assert_eq!(*some, pairs);
        assert_eq!(some.get("job").map(String::as_str), Some("nightly"));
    }

    #[test]
    fn encodes_exactly_as_a_map_so_old_snapshots_read() {
        for pairs in [
            BTreeMap::new(),
            BTreeMap::from([("a".to_owned(), "1".to_owned())]),
        ] {
            let old_bytes = postcard::to_allocvec(&pairs).expect("encodes");
            let new = Metadata::from(pairs);
            assert_eq!(postcard::to_allocvec(&new).expect("encodes"), old_bytes);
            let read: Metadata = postcard::from_bytes(&old_bytes).expect("decodes");
            assert_eq!(read, new);
        }
    }
}
