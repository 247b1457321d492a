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
//! A single name is kept inline, and the set takes 16 bytes of its row
//! (a `Vec` would take 24): a lease holding one lock allocates nothing for
//! its set, which with a million such leases is 32 MB. Two names or more
//! are a boxed vector.

use crate::one_or_many::OneOrMany;
use crate::LockName;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Distinct lock names in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NameSet {
    /// One inline, two or more on the heap.
    sorted: OneOrMany<LockName>,
}

impl NameSet {
    /// Adds `name`; false if it was there already.
    pub fn insert(&mut self, name: LockName) -> bool {
        let Err(at) = self.sorted.as_slice().binary_search(&name) else {
            return false;
        };
        // Most leases hold one lock or a few: grow those one slot at a
        // time, bigger sets by doubling.
        if let Some(heap) = self.sorted.heap_mut().filter(|h| h.len() < 4) {
            heap.reserve_exact(1);
        }
        self.sorted.insert(at, name);
        true
    }

    /// Removes `name`; false if it was not there.
    pub fn remove(&mut self, name: &LockName) -> bool {
        let Ok(at) = self.sorted.as_slice().binary_search(name) else {
            return false;
        };
        self.sorted.remove(at);
        // Give back the slack of a set that shrank a lot.
        if let Some(heap) = self.sorted.heap_mut() {
            if heap.capacity() > 4 * heap.len() {
                heap.shrink_to_fit();
            }
        }
        true
    }

    /// Whether `name` is in the set.
    pub fn contains(&self, name: &LockName) -> bool {
        self.sorted.as_slice().binary_search(name).is_ok()
    }

    /// How many names.
    pub fn len(&self) -> usize {
        self.sorted.as_slice().len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.sorted.as_slice().is_empty()
    }

    /// Makes each name that is a key of `table` the key's copy of the
    /// text, so the two share it (decoded names each have their own).
    pub fn share_keys_of<V: Clone>(&mut self, table: &imbl::OrdMap<LockName, V>) {
        for name in self.sorted.as_mut_slice() {
            if let Some((key, _)) = table.get_key_value(name) {
                *name = key.clone();
            }
        }
    }

    /// The names in order.
    pub fn iter(&self) -> std::slice::Iter<'_, LockName> {
        self.sorted.as_slice().iter()
    }
}

impl<'a> IntoIterator for &'a NameSet {
    type Item = &'a LockName;
    type IntoIter = std::slice::Iter<'a, LockName>;

    fn into_iter(self) -> Self::IntoIter {
        self.sorted.as_slice().iter()
    }
}

impl NameSet {
    /// The names in order, as a vector (a set of two or more hands over
    /// its block instead of copying it).
    pub fn into_vec(self) -> Vec<LockName> {
        self.sorted.into_vec()
    }
}

impl IntoIterator for NameSet {
    type Item = LockName;
    type IntoIter = std::vec::IntoIter<LockName>;

    fn into_iter(self) -> Self::IntoIter {
        self.into_vec().into_iter()
    }
}

impl FromIterator<LockName> for NameSet {
    fn from_iter<I: IntoIterator<Item = LockName>>(names: I) -> NameSet {
        let mut sorted: Vec<LockName> = names.into_iter().collect();
        sorted.sort_unstable();
        sorted.dedup();
        sorted.shrink_to_fit();
        NameSet {
            sorted: OneOrMany::from_vec(sorted),
        }
    }
}

impl Serialize for NameSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.sorted.as_slice())
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
        assert!(matches!(set.sorted, OneOrMany::One(_)), "{:?}", set.sorted);
        let mut set: NameSet = (0..1000).map(|i| name(&format!("n/{i}"))).collect();
        for i in 0..990 {
            assert!(set.remove(&name(&format!("n/{i}"))));
        }
        let OneOrMany::Many(names) = &set.sorted else {
            panic!("ten names are on the heap")
        };
        assert!(names.capacity() <= 40, "{}", names.capacity());
    }

    #[test]
    fn a_set_of_one_name_keeps_it_inline_in_16_bytes() {
        assert_eq!(std::mem::size_of::<NameSet>(), 16);
        let mut set = NameSet::default();
        set.insert(name("only"));
        assert!(
            matches!(set.sorted, OneOrMany::One(_)),
            "one name allocates nothing"
        );
        set.insert(name("second"));
        assert!(matches!(set.sorted, OneOrMany::Many(_)));
        assert!(set.remove(&name("second")));
        assert!(
            matches!(set.sorted, OneOrMany::One(_)),
            "back inline once it shrank to one"
        );
        assert_eq!(set.iter().collect::<Vec<_>>(), [&name("only")]);
        assert!(set.remove(&name("only")));
        assert!(set.is_empty() && set.iter().next().is_none());
    }

    #[test]
    fn inserts_and_removes_in_any_order_match_a_btree_set() {
        let mut set = NameSet::default();
        let mut model = BTreeSet::new();
        for step in 0u32..400 {
            let n = name(&format!("k/{}", step.wrapping_mul(7919) % 23));
            if step % 3 == 2 {
                assert_eq!(set.remove(&n), model.remove(&n), "remove {n} at {step}");
            } else {
                assert_eq!(set.insert(n.clone()), model.insert(n), "insert at {step}");
            }
            assert!(set.iter().eq(model.iter()), "at step {step}");
            assert_eq!(set.len(), model.len());
        }
    }
}
