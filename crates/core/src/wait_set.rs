//! The locks a lease is queued for: a [`NameSet`] kept out of line.
//!
//! Why: nearly every lease waits for nothing, yet an empty `NameSet` takes
//! 24 bytes in every row; this takes 8 and allocates only while the lease
//! waits. With a million leases that took each row from 280 to 264 bytes,
//! one allocator size class down (docs/DESIGN.md §6d). The encoding is the
//! set's (a sequence of names in order), so stored snapshots read
//! unchanged.

use crate::{LockName, NameSet};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Distinct lock names in order; nothing allocated while empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaitSet {
    /// `None` when empty (never `Some` of an empty set).
    names: Option<Box<NameSet>>,
}

impl WaitSet {
    /// Adds `name`; false if it was there already.
    pub fn insert(&mut self, name: LockName) -> bool {
        self.names.get_or_insert_with(Default::default).insert(name)
    }

    /// Removes `name`; false if it was not there.
    pub fn remove(&mut self, name: &LockName) -> bool {
        let removed = self.names.as_mut().is_some_and(|names| names.remove(name));
        if self.names.as_ref().is_some_and(|names| names.is_empty()) {
            self.names = None;
        }
        removed
    }

    /// Whether `name` is in the set.
    pub fn contains(&self, name: &LockName) -> bool {
        self.names
            .as_ref()
            .is_some_and(|names| names.contains(name))
    }

    /// How many names.
    pub fn len(&self) -> usize {
        self.names.as_ref().map_or(0, |names| names.len())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.names.is_none()
    }

    /// See [`NameSet::share_keys_of`].
    pub fn share_keys_of<V: Clone>(&mut self, table: &imbl::OrdMap<LockName, V>) {
        if let Some(names) = self.names.as_mut() {
            names.share_keys_of(table);
        }
    }

    /// The names in order.
    pub fn iter(&self) -> std::slice::Iter<'_, LockName> {
        match &self.names {
            Some(names) => names.iter(),
            None => [].iter(),
        }
    }

    /// The names in order, as a vector.
    pub fn into_vec(self) -> Vec<LockName> {
        self.names.map_or_else(Vec::new, |names| names.into_vec())
    }
}

impl<'a> IntoIterator for &'a WaitSet {
    type Item = &'a LockName;
    type IntoIter = std::slice::Iter<'a, LockName>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl FromIterator<LockName> for WaitSet {
    fn from_iter<I: IntoIterator<Item = LockName>>(names: I) -> WaitSet {
        let names: NameSet = names.into_iter().collect();
        WaitSet {
            names: (!names.is_empty()).then(|| Box::new(names)),
        }
    }
}

impl Serialize for WaitSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for WaitSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<WaitSet, D::Error> {
        Ok(NameSet::deserialize(deserializer)?.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(raw: &str) -> LockName {
        LockName::parse(raw).expect("a valid name")
    }

    #[test]
    fn an_empty_set_allocates_nothing_and_a_drained_one_lets_go() {
        let mut set = WaitSet::default();
        assert!(set.names.is_none() && set.is_empty());
        assert!(set.insert(name("b")) && set.insert(name("a")));
        assert!(!set.insert(name("a")));
        assert_eq!(
            set.iter().map(LockName::as_str).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert!(set.remove(&name("a")) && set.remove(&name("b")));
        assert!(!set.remove(&name("b")));
        assert!(set.names.is_none(), "emptied: the block is gone");
        assert_eq!(set.len(), 0);
    }

    #[test]
    fn encodes_exactly_as_a_name_set() {
        let names = ["job/2", "job/1"];
        let old: NameSet = names.iter().map(|n| name(n)).collect();
        let new: WaitSet = names.iter().map(|n| name(n)).collect();
        let old_bytes = postcard::to_allocvec(&old).expect("encodes");
        assert_eq!(postcard::to_allocvec(&new).expect("encodes"), old_bytes);
        assert_eq!(
            postcard::from_bytes::<WaitSet>(&old_bytes).expect("decodes"),
            new
        );
        let none = postcard::to_allocvec(&NameSet::default()).expect("encodes");
        assert_eq!(
            postcard::to_allocvec(&WaitSet::default()).expect("encodes"),
            none
        );
        assert!(postcard::from_bytes::<WaitSet>(&none)
            .expect("decodes")
            .names
            .is_none());
    }
}
