//! Reading a stored table whose rows carry their key (the lock table's
//! names, the lease table's ids): one entry at a time into the table, so a
//! big table is never held twice, each row checked against its key and
//! turned into what the table keeps by the caller's `row`.
//!
//! **Why every other row waits.** `imbl`'s `OrdMap` splits a full 16-entry
//! leaf at its middle, so rows inserted in key order (as a stored table is
//! read) leave every leaf half full: 41 bytes a row of 16-byte entries. The
//! rows at even places go in as they are read, each leaf then holding 8 of
//! them over a span of 16 places; the rows at odd places, kept aside (a
//! key and a pointer each), go in after, each into the gap its neighbours
//! left, and fill the leaves without a split: about 20.5 bytes a row (a
//! million rows: 41 → 20.5 MB). Rows out of key order (none of ours are
//! stored so) are read as they come, the last of a repeated key kept.

use imbl::OrdMap;
use serde::de::{DeserializeOwned, Error, MapAccess, Visitor};
use serde::Deserializer;
use std::fmt;
use std::marker::PhantomData;

/// Turns a stored row read under `key` into the table's row, or says why
/// it cannot be one.
pub(super) type Row<K, In, V> = fn(&K, In) -> Result<V, String>;

/// Reads a map of `K` to stored rows `In` into a table of `V`;
/// `expecting` names it in a type error.
pub(super) fn read<'de, D, K, In, V>(
    deserializer: D,
    expecting: &'static str,
    row: Row<K, In, V>,
) -> Result<OrdMap<K, Box<V>>, D::Error>
where
    D: Deserializer<'de>,
    K: Ord + Clone + DeserializeOwned,
    In: DeserializeOwned,
    V: Clone,
{
    deserializer.deserialize_map(TableVisitor {
        expecting,
        row,
        read: PhantomData,
    })
}

struct TableVisitor<K, In, V> {
    expecting: &'static str,
    row: Row<K, In, V>,
    read: PhantomData<(K, In, V)>,
}

impl<'de, K, In, V> Visitor<'de> for TableVisitor<K, In, V>
where
    K: Ord + Clone + DeserializeOwned,
    In: DeserializeOwned,
    V: Clone,
{
    type Value = OrdMap<K, Box<V>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut rows: A) -> Result<Self::Value, A::Error> {
        let mut table = Filling::default();
        while let Some((key, stored)) = rows.next_entry::<K, In>()? {
            let row = (self.row)(&key, stored).map_err(A::Error::custom)?;
            table.insert(key, Box::new(row));
        }
        Ok(table.finish())
    }
}

/// A table being read: the rows at even places inserted, those at odd
/// places kept aside while every key so far came in increasing order.
struct Filling<K: Ord + Clone, V: Clone> {
    table: OrdMap<K, V>,
    /// The rows at odd places, to insert at the end.
    odd: Vec<(K, V)>,
    /// The last key read, while every key so far was above the one before.
    last: Option<K>,
    /// A key came out of order: everything is inserted as it comes.
    unordered: bool,
}

impl<K: Ord + Clone, V: Clone> Default for Filling<K, V> {
    fn default() -> Self {
        Filling {
            table: OrdMap::new(),
            odd: Vec::new(),
            last: None,
            unordered: false,
        }
    }
}

impl<K: Ord + Clone, V: Clone> Filling<K, V> {
    fn insert(&mut self, key: K, row: V) {
        if !self.unordered && self.last.as_ref().is_some_and(|last| *last >= key) {
            // The rows kept aside all precede this one: in they go, first.
            self.unordered = true;
            self.last = None;
            self.table.extend(self.odd.drain(..));
        }
        if self.unordered {
            self.table.insert(key, row);
            return;
        }
        self.last = Some(key.clone());
        if self.table.len() > self.odd.len() {
            self.odd.push((key, row));
        } else {
            self.table.insert(key, row);
        }
    }

    fn finish(mut self) -> OrdMap<K, V> {
        self.table.extend(self.odd);
        self.table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(keys: &[u32]) -> Vec<(u32, u32)> {
        let mut table = Filling::default();
        for (at, key) in keys.iter().enumerate() {
            table.insert(*key, at as u32);
        }
        table.finish().into_iter().collect()
    }

    #[test]
    fn rows_in_key_order_read_back_whole() {
        for count in [0, 1, 2, 3, 16, 17, 1_000, 1_001] {
            let keys: Vec<u32> = (0..count).map(|k| 3 * k).collect();
            let expected: Vec<(u32, u32)> = (0..count).map(|at| (3 * at, at)).collect();
            assert_eq!(read(&keys), expected, "{count} rows");
        }
    }

    #[test]
    fn rows_out_of_order_read_as_they_come_the_last_repeat_kept() {
        let keys = [1, 4, 6, 9, 5, 6, 2];
        let expected = vec![(1, 0), (2, 6), (4, 1), (5, 4), (6, 5), (9, 3)];
        assert_eq!(read(&keys), expected);
        assert_eq!(read(&[7, 7]), vec![(7, 1)], "a repeat at once");
    }
}
