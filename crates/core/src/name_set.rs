//! A lease's set of lock names (the locks it holds, or waits for), kept as
//! one sorted vector.
//!
//! Why not a `BTreeSet`: most leases hold one lock or a few, and a B-tree
//! allocates a whole leaf (eleven slots, about 190 bytes) for the first
//! name; a lease with a thousand names pays for half-empty leaves. A sorted
//! vector costs one pointer-sized slot per name plus its growth slack, and a
//! set is bounded by `LOCKS_PER_LEASE_MAX`, so inserting into the middle
//! moves at most a few kilobytes. The encoding is a sequence of names in
//! order, exactly as a `BTreeSet`'s, so stored snapshots read unchanged.
//!
//! The first name is kept inline (a `SmallVec` of one, 24 bytes as a
//! `Vec`): a lease holding one lock allocates nothing for its set, which
//! with a million such leases is 32 MB.

use crate::LockName;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use smallvec::SmallVec;

/// The names: one inline, more on the heap.
type Names = SmallVec<[LockName; 1]>;

/// Distinct lock names in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NameSet {
    sorted: Names,
}

impl NameSet {
    /// Adds `name`; false if it was there already.
    pub fn insert(&mut self, name: LockName) -> bool {
        match self.sorted.binary_search(&name) {
            Ok(_) => false,
            Err(at) => {
                // Most leases hold one lock or a few: grow those one slot at
                // a time, bigger sets by doubling.
                if self.sorted.len() < 4 {
                    self.sorted.reserve_exact(1);
                }
                self.sorted.insert(at, name);
                true
            }
        }
    }

    /// Removes `name`; false if it was not there.
    pub fn remove(&mut self, name: &LockName) -> bool {
        match self.sorted.binary_search(name) {
            Ok(at) => {
                self.sorted.remove(at);
                // Give back the slack of a set that shrank a lot, and the
                // heap block of one that is down to its inline name.
                let len = self.sorted.len();
                if self.sorted.capacity() > 4 * len.max(1) || (len <= 1 && self.sorted.spilled()) {
                    self.sorted.shrink_to_fit();
                }
                true
            }
            Err(_) => false,
        }
    }

    /// Whether `name` is in the set.
    pub fn contains(&self, name: &LockName) -> bool {
        self.sorted.binary_search(name).is_ok()
    }

    /// How many names.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// Makes each name that is a key of `table` the key's copy of the
    /// text, so the two share it (decoded names each have their own).
    pub fn share_keys_of<V: Clone>(&mut self, table: &imbl::OrdMap<LockName, V>) {
        for name in &mut self.sorted {
            if let Some((key, _)) = table.get_key_value(name) {
                *name = key.clone();
            }
        }
    }

    /// The names in order.
    pub fn iter(&self) -> std::slice::Iter<'_, LockName> {
        self.sorted.iter()
    }
}

impl<'a> IntoIterator for &'a NameSet {
    type Item = &'a LockName;
    type IntoIter = std::slice::Iter<'a, LockName>;

    fn into_iter(self) -> Self::IntoIter {
        self.sorted.iter()
    }
}

impl NameSet {
    /// The names in order, as a vector (a set that had spilled to the heap
    /// hands over its block instead of copying it).
    pub fn into_vec(self) -> Vec<LockName> {
        self.sorted.into_vec()
    }
}

impl IntoIterator for NameSet {
    type Item = LockName;
    type IntoIter = smallvec::IntoIter<[LockName; 1]>;

    fn into_iter(self) -> Self::IntoIter {
        self.sorted.into_iter()
    }
}

impl FromIterator<LockName> for NameSet {
    fn from_iter<I: IntoIterator<Item = LockName>>(names: I) -> NameSet {
        let mut sorted: Names = names.into_iter().collect();
        sorted.sort_unstable();
        sorted.dedup();
        sorted.shrink_to_fit();
        NameSet { sorted }
    }
}

impl Serialize for NameSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(&self.sorted)
    }
}

impl<'de> Deserialize<'de> for NameSet {
    /// Any sequence of names: sorted and deduplicated on the way in.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<NameSet, D::Error> {
        Ok(Vec::<LockName>::deserialize(deserializer)?
            .into_iter()
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn name(raw: &str) -> LockName {
        LockName::parse(raw).expect("a valid name")
    }

    #[test]
    fn behaves_as_an_ordered_set() {
        let mut set = NameSet::default();
        assert!(set.insert(name("b")));
        assert!(set.insert(name("a")));
        assert!(!set.insert(name("b")), "a second insert of b adds nothing");
        assert!(set.contains(&name("a")) && !set.contains(&name("c")));
        let names: Vec<&str> = set.iter().map(LockName::as_str).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(set.remove(&name("a")));
        assert!(!set.remove(&name("a")), "a second remove finds nothing");
        assert_eq!(set.len(), 1);
    }

    #[test]
    fn encodes_exactly_as_a_btree_set_so_old_snapshots_read() {
        let names = ["job/2", "job/1", "a/z"];
        let old: BTreeSet<LockName> = names.iter().map(|n| name(n)).collect();
        let new: NameSet = names.iter().map(|n| name(n)).collect();
        let old_bytes = postcard::to_allocvec(&old).expect("encodes");
        assert_eq!(postcard::to_allocvec(&new).expect("encodes"), old_bytes);
        let read: NameSet = postcard::from_bytes(&old_bytes).expect("decodes");
        assert_eq!(read, new);
    }

    #[test]
    fn a_set_that_shrank_gives_its_memory_back() {
        let mut set: NameSet = (0..1000).map(|i| name(&format!("n/{i}"))).collect();
        for i in 0..999 {
            assert!(set.remove(&name(&format!("n/{i}"))));
        }
        assert!(set.sorted.capacity() <= 4, "{}", set.sorted.capacity());
    }

    #[test]
    fn a_set_of_one_name_keeps_it_inline() {
        let mut set = NameSet::default();
        set.insert(name("only"));
        assert_eq!(set.sorted.capacity(), 1);
        assert!(!set.sorted.spilled(), "one name allocates nothing");
        set.insert(name("second"));
        assert!(set.sorted.spilled());
        assert!(set.remove(&name("second")));
        assert!(!set.sorted.spilled(), "back inline once it shrank to one");
        assert_eq!(set.iter().collect::<Vec<_>>(), [&name("only")]);
    }
}
