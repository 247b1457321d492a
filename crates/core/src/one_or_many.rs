//! A short sequence kept in a lease row: none, one item inline, or two and
//! more in a boxed vector.
//!
//! Why: nearly every lease holds one lock and remembers one request, and a
//! million of them each keep a lock name set and a request memory in their
//! row. A `Vec` takes 24 bytes there and a heap block for its one item, and
//! a `SmallVec` of one takes 8 bytes beside the item for its capacity; this
//! takes the item's own size where the item has a spare value for the tag
//! (40 bytes for a remembered request, docs/DESIGN.md §6d), or 16 bytes
//! for an 8-byte item (a lock name). The heap vector is boxed so it does
//! not widen the inline case.

/// Items in order: inline while there is at most one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum OneOrMany<T> {
    #[default]
    None,
    One(T),
    #[allow(
        clippy::box_collection,
        reason = "the box keeps the inline case as small as its item"
    )]
    Many(Box<Vec<T>>),
}

impl<T> OneOrMany<T> {
    /// `items`, kept as they come (one inline, more as they are).
    pub fn from_vec(mut items: Vec<T>) -> OneOrMany<T> {
        match items.len() {
            0 => OneOrMany::None,
            1 => OneOrMany::One(items.remove(0)),
            _ => OneOrMany::Many(Box::new(items)),
        }
    }

    pub fn as_slice(&self) -> &[T] {
        match self {
            OneOrMany::None => &[],
            OneOrMany::One(item) => std::slice::from_ref(item),
            OneOrMany::Many(items) => items,
        }
    }

    pub fn as_mut_slice(&mut self) -> &mut [T] {
        match self {
            OneOrMany::None => &mut [],
            OneOrMany::One(item) => std::slice::from_mut(item),
            OneOrMany::Many(items) => items,
        }
    }

    /// The items as one vector (two or more hand over their own).
    pub fn into_vec(self) -> Vec<T> {
        match self {
            OneOrMany::None => Vec::new(),
            OneOrMany::One(item) => vec![item],
            OneOrMany::Many(items) => *items,
        }
    }

    /// The heap vector, if there are two items or more: for the caller's
    /// growth and shrink rules.
    pub fn heap_mut(&mut self) -> Option<&mut Vec<T>> {
        match self {
            OneOrMany::Many(items) => Some(items),
            _ => None,
        }
    }

    /// Inserts `item` at `at` (at most the length). A second item moves
    /// both to a vector of capacity two.
    pub fn insert(&mut self, at: usize, item: T) {
        match self {
            OneOrMany::None => *self = OneOrMany::One(item),
            OneOrMany::One(_) => {
                let mut items = Vec::with_capacity(2);
                items.extend(std::mem::take(self).into_vec());
                items.insert(at, item);
                *self = OneOrMany::Many(Box::new(items));
            }
            OneOrMany::Many(items) => items.insert(at, item),
        }
    }

    /// Removes and returns the item at `at`. One item left goes back
    /// inline.
    ///
    /// # Panics
    /// If `at` is out of bounds, as `Vec::remove`.
    pub fn remove(&mut self, at: usize) -> T {
        match self {
            OneOrMany::Many(items) if items.len() > 2 => items.remove(at),
            _ => {
                let mut items = std::mem::take(self).into_vec();
                let item = items.remove(at);
                *self = OneOrMany::from_vec(items);
                item
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_item_is_inline_and_an_eight_byte_item_takes_sixteen() {
        assert_eq!(size_of::<OneOrMany<crate::LockName>>(), 16);
        let mut items = OneOrMany::default();
        items.insert(0, 'b');
        assert!(matches!(items, OneOrMany::One('b')));
        items.insert(0, 'a');
        items.insert(2, 'c');
        assert_eq!(items.as_slice(), ['a', 'b', 'c']);
        assert_eq!(items.remove(1), 'b');
        assert_eq!(items.remove(0), 'a');
        assert!(matches!(items, OneOrMany::One('c')), "back inline");
        assert_eq!(items.remove(0), 'c');
        assert_eq!(items, OneOrMany::None);
    }

    #[test]
    fn matches_a_vector_under_any_inserts_and_removes() {
        let mut items = OneOrMany::default();
        let mut model = Vec::new();
        for step in 0u32..500 {
            let pick = step.wrapping_mul(2_654_435_761) as usize;
            if step % 3 == 2 && !model.is_empty() {
                let at = pick % model.len();
                assert_eq!(items.remove(at), model.remove(at), "step {step}");
            } else {
                let at = pick % (model.len() + 1);
                items.insert(at, step);
                model.insert(at, step);
            }
            assert_eq!(items.as_slice(), model, "step {step}");
            assert_eq!(items.clone().into_vec(), model);
        }
    }
}
