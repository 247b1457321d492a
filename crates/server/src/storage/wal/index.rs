//! The in-memory index: log index → (segment, offset, length).
//!
//! **Why in memory**: it is rebuilt by the recovery scan at open, costs ~60
//! bytes per entry (entries are batches, and purging after each snapshot
//! bounds their number), and needs no I/O on the append path.
//!
//! **Why a `BTreeMap`**: openraft keeps the log contiguous, but its
//! conformance suite appends with gaps; a map serves both without special
//! cases, at O(log n) per lookup, which is noise next to a `pread`.

use crate::raft::types::LogId;
use std::collections::BTreeMap;

/// Where one record lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    /// The entry's log id.
    pub log_id: LogId,
    /// The `first` of the segment holding it.
    pub segment: u64,
    /// The record's byte offset (its header) in the segment.
    pub offset: u64,
    /// The record's payload length (without the header).
    pub len: u32,
}

/// The live (appended, not purged, not truncated) entries, by index.
#[derive(Debug, Default)]
pub(crate) struct Index {
    slots: BTreeMap<u64, Slot>,
}

impl Index {
    /// The log id of the last live entry.
    pub fn last(&self) -> Option<LogId> {
        self.slots.last_key_value().map(|(_, slot)| slot.log_id)
    }

    /// Adds an entry after the last one.
    pub fn push(&mut self, slot: Slot) {
        debug_assert!(self
            .last()
            .is_none_or(|last| last.index < slot.log_id.index));
        self.slots.insert(slot.log_id.index, slot);
    }

    /// The slots of the live entries in `start..end` (end exclusive), in order.
    pub fn range(&self, start: u64, end: u64) -> impl Iterator<Item = &Slot> {
        self.slots
            .range(start..end.max(start))
            .map(|(_, slot)| slot)
    }

    /// Removes entries at `index` and after; returns the first one removed.
    pub fn truncate(&mut self, index: u64) -> Option<Slot> {
        let removed = self.slots.split_off(&index);
        removed.into_values().next()
    }

    /// Removes entries up to and including `index`.
    pub fn purge(&mut self, index: u64) {
        self.slots = self.slots.split_off(&index.saturating_add(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::testing::log_id;

    fn index_of(range: std::ops::RangeInclusive<u64>) -> Index {
        let mut index = Index::default();
        for i in range {
            index.push(Slot {
                log_id: log_id(1, 1, i),
                segment: 0,
                offset: i * 10,
                len: 2,
            });
        }
        index
    }

    fn indexes<'a>(slots: impl Iterator<Item = &'a Slot>) -> Vec<u64> {
        slots.map(|slot| slot.log_id.index).collect()
    }

    #[test]
    fn range_clamps_to_the_live_entries() {
        let index = index_of(5..=9);
        assert_eq!(indexes(index.range(0, 100)), vec![5, 6, 7, 8, 9]);
        assert_eq!(indexes(index.range(6, 8)), vec![6, 7]);
        assert_eq!(indexes(index.range(10, 20)), Vec::<u64>::new());
        assert_eq!(indexes(index.range(0, 3)), Vec::<u64>::new());
        assert_eq!(indexes(index.range(8, 7)), Vec::<u64>::new());
    }

    #[test]
    fn truncate_and_purge_cut_at_the_index() {
        let mut index = index_of(5..=9);
        assert_eq!(index.truncate(8).map(|slot| slot.offset), Some(80));
        assert_eq!(index.last(), Some(log_id(1, 1, 7)));
        assert_eq!(index.truncate(20), None);
        index.purge(5);
        assert_eq!(indexes(index.range(0, 100)), vec![6, 7]);
        index.purge(100);
        assert_eq!(index.last(), None);
    }
}
