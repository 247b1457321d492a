//! Reading a stored table whose rows carry their key (the lock table's
//! names, the lease table's ids): one entry at a time into the table, so a
//! big table is never held twice, each row checked against its key and
//! turned into what the table keeps by the caller's `row`.

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
        let mut table = OrdMap::new();
        while let Some((key, stored)) = rows.next_entry::<K, In>()? {
            let row = (self.row)(&key, stored).map_err(A::Error::custom)?;
            table.insert(key, Box::new(row));
        }
        Ok(table)
    }
}
