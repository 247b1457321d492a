//! The lessor's leases in deadline order: a sorted run kept as a vector,
//! plus a B-tree for the deadlines that arrive out of order.
//!
//! Why not one `BTreeSet<(deadline, lease)>`: a lease's deadline is the
//! instant its renewal applied plus its ttl, so under one ttl deadlines
//! arrive in increasing order, and a B-tree filled in order keeps its
//! leaves a little over half full: about 38 bytes a lease for a 16-byte
//! key (a million one-lock leases: docs/DESIGN.md §6d). Here an in-order
//! deadline is a push onto the run (16 bytes and the vector's growth room);
//! only one below the run's last (a shorter ttl than the last lease's, a
//! snapshot rebuilt in id order) goes to the B-tree, the `strays`.
//!
//! A removed run entry stays as a tombstone (the run stays sorted, so
//! lookups still find their way) until the tombstones outnumber the live
//! entries; then one pass merges the live run and the strays into a new
//! run. Each pass moves at most three times the live entries and follows
//! at least as many removals, so a removal costs O(1) moves amortized,
//! like the lessor's [`LeaseTable`](super::lease_table).

use crate::LeaseId;
use std::collections::BTreeSet;

/// Tombstones tolerated before a merge, whatever the live count.
const MERGE_MIN: usize = 64;

/// Bits of a deadline in a run entry: the lessor keeps none later than
/// [`super::DEADLINE_MS_MAX`].
const DEADLINE_BITS: u32 = 40;

/// Bits of a lease id in a run entry. Lease ids are revisions, which count
/// applied commands: 2^55 of them, at a million a second, take a thousand
/// years.
const LEASE_BITS: u32 = 55;

/// A lease's raw deadline and id, the index's key.
pub(super) type DeadlineKey = (u64, LeaseId);

/// One run entry in 12 bytes: a key, or a tombstone keeping a removed key's
/// place. It is one 96-bit number, the deadline's 40 bits, then the lease
/// id's 55, then the tombstone bit, so numbers order as keys do; three
/// `u32`s rather than a `u64` and a `u32`, which would be padded to 16.
#[derive(Clone, Copy, Debug)]
struct Entry([u32; 3]);

impl Entry {
    fn new((deadline_ms, lease): DeadlineKey) -> Entry {
        assert!(deadline_ms < 1 << DEADLINE_BITS, "deadline out of range");
        assert!(lease.0 < 1 << LEASE_BITS, "lease id out of range");
        let bits = (u128::from(deadline_ms) << (LEASE_BITS + 1)) | (u128::from(lease.0) << 1);
        Entry([(bits >> 64) as u32, (bits >> 32) as u32, bits as u32])
    }

    fn bits(&self) -> u128 {
        let [high, middle, low] = self.0.map(u128::from);
        (high << 64) | (middle << 32) | low
    }

    fn deadline_ms(&self) -> u64 {
        (self.bits() >> (LEASE_BITS + 1)) as u64
    }

    fn key(&self) -> DeadlineKey {
        let lease = (self.bits() >> 1) as u64 & ((1 << LEASE_BITS) - 1);
        (self.deadline_ms(), LeaseId(lease))
    }

    fn live(&self) -> Option<DeadlineKey> {
        (self.0[2] & 1 == 0).then(|| self.key())
    }

    /// Marks the entry removed, or (`false`) back.
    fn set_tombstone(&mut self, tombstone: bool) {
        self.0[2] = (self.0[2] & !1) | u32::from(tombstone);
    }
}

/// Leases by deadline: the sorted run from `head` on, and the strays.
#[derive(Debug, Default)]
pub(super) struct DeadlineIndex {
    /// Keys in increasing order (tombstones among them, keys unique).
    run: Vec<Entry>,
    /// Entries before it are gone (the run's removed front).
    head: usize,
    /// Tombstones at or after `head`.
    tombstones: usize,
    /// Keys that arrived below the run's last one.
    strays: BTreeSet<DeadlineKey>,
    /// The failover boundary (ms) while the lessor's node leads: the
    /// lessor asks for the first key from it on every due check.
    boundary_ms: Option<u64>,
    /// The first key at or after `boundary_ms`, kept as keys come and go,
    /// so asking for it never steps over the tombstones a takeover's wave
    /// of renewals leaves just past the boundary.
    from_boundary: Option<DeadlineKey>,
}

impl DeadlineIndex {
    /// Adds `key` (not present).
    pub fn insert(&mut self, key: DeadlineKey) {
        let last = self.run[self.head..].last_mut();
        match last {
            Some(last) if last.key() > key => {
                self.strays.insert(key);
            }
            Some(last) if last.key() == key => {
                // Removed and back at once (re-armed at the same instant).
                assert!(last.live().is_none(), "{key:?} indexed twice");
                last.set_tombstone(false);
                self.tombstones -= 1;
            }
            _ => self.run.push(Entry::new(key)),
        }
        let from_boundary = self.boundary_ms.is_some_and(|b| key.0 >= b);
        if from_boundary && self.from_boundary.is_none_or(|first| key < first) {
            self.from_boundary = Some(key);
        }
    }

    /// Removes `key`; whether it was present.
    pub fn remove(&mut self, key: &DeadlineKey) -> bool {
        let removed = self.remove_key(key);
        if removed && self.from_boundary == Some(*key) {
            self.from_boundary = self.first_after(key);
        }
        removed
    }

    fn remove_key(&mut self, key: &DeadlineKey) -> bool {
        let Ok(at) = self.find(key) else {
            return self.strays.remove(key);
        };
        let entry = &mut self.run[at];
        if entry.live().is_none() {
            return self.strays.remove(key);
        }
        entry.set_tombstone(true);
        self.tombstones += 1;
        self.drop_dead_front();
        if self.tombstones > self.live_in_run() && self.tombstones >= MERGE_MIN {
            self.merge();
        }
        true
    }

    /// The earliest key.
    pub fn first(&self) -> Option<DeadlineKey> {
        let run = self.run.get(self.head).map(Entry::key);
        min(run, self.strays.first().copied())
    }

    /// The earliest key with a deadline at or after `from_ms`.
    pub fn first_from(&self, from_ms: u64) -> Option<DeadlineKey> {
        let run = &self.run[self.head..];
        let at = run.partition_point(|entry| entry.deadline_ms() < from_ms);
        let run = run[at..].iter().find_map(Entry::live);
        let stray = self.strays.range((from_ms, LeaseId(0))..).next().copied();
        min(run, stray)
    }

    /// The boundary [`DeadlineIndex::first_from_boundary`] answers for
    /// (`None`: no answer).
    pub fn set_boundary(&mut self, boundary_ms: Option<u64>) {
        self.boundary_ms = boundary_ms;
        self.from_boundary = boundary_ms.and_then(|b| self.first_from(b));
    }

    /// The earliest key with a deadline at or after the boundary.
    pub fn first_from_boundary(&self) -> Option<DeadlineKey> {
        self.from_boundary
    }

    /// Forgets every key (the boundary stays).
    pub fn clear(&mut self) {
        *self = DeadlineIndex {
            boundary_ms: self.boundary_ms,
            ..DeadlineIndex::default()
        };
    }

    /// Keys indexed.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.live_in_run() + self.strays.len()
    }

    /// The earliest key after `key`. It steps over the run's tombstones
    /// from `key` on; as the boundary's first key only moves back when a
    /// key is inserted below it, each tombstone is stepped over about once.
    fn first_after(&self, key: &DeadlineKey) -> Option<DeadlineKey> {
        let run = &self.run[self.head..];
        let at = run.partition_point(|entry| entry.key() <= *key);
        let run = run[at..].iter().find_map(Entry::live);
        let after = (std::ops::Bound::Excluded(*key), std::ops::Bound::Unbounded);
        min(run, self.strays.range(after).next().copied())
    }

    fn live_in_run(&self) -> usize {
        self.run.len() - self.head - self.tombstones
    }

    fn find(&self, key: &DeadlineKey) -> Result<usize, usize> {
        self.run[self.head..]
            .binary_search_by(|entry| entry.key().cmp(key))
            .map(|at| self.head + at)
    }

    /// Steps `head` past the tombstones at the front, so the first entry
    /// from `head` is live (or there is none); drops the front once it is
    /// most of the run.
    fn drop_dead_front(&mut self) {
        while self.run.get(self.head).is_some_and(|e| e.live().is_none()) {
            self.head += 1;
            self.tombstones -= 1;
        }
        // The removed front goes once it outweighs the rest (a mass expiry
        // takes the oldest deadlines first), and so does the room for it.
        let rest = self.run.len() - self.head;
        if self.head > rest && self.head >= MERGE_MIN || rest == 0 {
            self.run.drain(..self.head);
            self.head = 0;
            if self.run.capacity() > 4 * self.run.len().max(MERGE_MIN) {
                self.run.shrink_to(2 * self.run.len());
            }
        }
    }

    /// One new run: the live run entries and the strays, merged in order.
    fn merge(&mut self) {
        let strays = std::mem::take(&mut self.strays);
        let live = self.run[self.head..].iter().filter_map(Entry::live);
        let mut run = Vec::with_capacity(self.live_in_run() + strays.len());
        let mut live = live.peekable();
        let mut strays = strays.into_iter().peekable();
        loop {
            let next = match (live.peek(), strays.peek()) {
                (Some(a), Some(b)) if a < b => live.next(),
                (Some(_), Some(_)) | (None, Some(_)) => strays.next(),
                (Some(_), None) => live.next(),
                (None, None) => break,
            };
            run.push(Entry::new(next.expect("peeked")));
        }
        *self = DeadlineIndex {
            run,
            boundary_ms: self.boundary_ms,
            from_boundary: self.from_boundary,
            ..DeadlineIndex::default()
        };
    }
}

fn min(a: Option<DeadlineKey>, b: Option<DeadlineKey>) -> Option<DeadlineKey> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_run_entry_takes_12_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 12);
    }

    #[test]
    fn the_widest_keys_read_back_in_order() {
        let widest = (
            super::super::DEADLINE_MS_MAX + 1,
            LeaseId((1 << LEASE_BITS) - 1),
        );
        let mut entry = Entry::new(widest);
        assert_eq!(entry.live(), Some(widest));
        entry.set_tombstone(true);
        assert_eq!((entry.live(), entry.key()), (None, widest));
        let keys = [
            (0, LeaseId(1 << 40)),
            (1, LeaseId(0)),
            (1 << 33, LeaseId(5)),
            widest,
        ];
        let bits: Vec<u128> = keys.iter().map(|key| Entry::new(*key).bits()).collect();
        assert!(
            bits.windows(2).all(|pair| pair[0] < pair[1]),
            "ordered as keys"
        );
    }

    #[test]
    fn in_order_deadlines_stay_in_the_run() {
        let mut index = DeadlineIndex::default();
        for id in 0..1_000 {
            index.insert((10 * id, LeaseId(id)));
        }
        assert!(index.strays.is_empty());
        assert_eq!(index.first(), Some((0, LeaseId(0))));
        assert_eq!(index.first_from(4_995), Some((5_000, LeaseId(500))));
        index.insert((5, LeaseId(7_000)));
        assert_eq!(index.strays.len(), 1, "below the run's last: a stray");
        assert_eq!(index.first_from(1), Some((5, LeaseId(7_000))));
    }

    #[test]
    fn tombstones_are_merged_away_once_they_outnumber_the_live() {
        let mut index = DeadlineIndex::default();
        for id in 0..1_000 {
            index.insert((id, LeaseId(id)));
        }
        index.insert((5, LeaseId(5_000)));
        for id in (0..1_000).filter(|id| id % 3 != 0) {
            assert!(index.remove(&(id, LeaseId(id))));
            let kept = index.run.len() - index.head;
            assert!(kept <= 2 * index.len() + MERGE_MIN, "{kept} kept");
        }
        assert_eq!(index.len(), 335);
        assert!(index.strays.is_empty(), "the stray merged into the run");
        assert!(index.tombstones < 335, "{} tombstones", index.tombstones);
        assert_eq!(index.first_from(6), Some((6, LeaseId(6))));
    }

    #[test]
    fn a_removed_front_is_given_back() {
        let mut index = DeadlineIndex::default();
        for id in 0..10_000 {
            index.insert((id, LeaseId(id)));
        }
        for id in 0..9_000 {
            index.remove(&(id, LeaseId(id)));
            assert!(index.head <= (index.run.len() - index.head).max(MERGE_MIN));
        }
        assert_eq!(index.first(), Some((9_000, LeaseId(9_000))));
        assert!(index.run.capacity() <= 4 * 1_000, "room given back");
        for id in 9_000..10_000 {
            index.remove(&(id, LeaseId(id)));
        }
        assert_eq!((index.first(), index.len()), (None, 0));
        assert!(index.run.capacity() <= 4 * MERGE_MIN);
    }

    #[test]
    fn the_first_key_from_the_boundary_follows_inserts_and_removes() {
        let mut index = DeadlineIndex::default();
        for id in 0..100 {
            index.insert((id, LeaseId(id)));
        }
        index.set_boundary(Some(50));
        assert_eq!(index.first_from_boundary(), Some((50, LeaseId(50))));
        for id in 50..60 {
            index.remove(&(id, LeaseId(id)));
        }
        assert_eq!(index.first_from_boundary(), Some((60, LeaseId(60))));
        index.insert((55, LeaseId(555)));
        assert_eq!(index.first_from_boundary(), Some((55, LeaseId(555))));
        index.remove(&(55, LeaseId(555)));
        index.insert((49, LeaseId(449)));
        assert_eq!(index.first_from_boundary(), Some((60, LeaseId(60))));
        index.set_boundary(None);
        assert_eq!(index.first_from_boundary(), None);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u64, u64),
        Remove(u64, u64),
        FirstFrom(u64),
        Boundary(Option<u64>),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0..60u64, 0..40u64).prop_map(|(d, l)| Op::Insert(d, l)),
            2 => (0..60u64, 0..40u64).prop_map(|(d, l)| Op::Remove(d, l)),
            1 => (0..70u64).prop_map(Op::FirstFrom),
            1 => proptest::option::of(0..70u64).prop_map(Op::Boundary),
        ]
    }

    proptest! {
        /// Whatever the order of inserts and removes, the index answers
        /// as a `BTreeSet` of the same keys does.
        #[test]
        fn answers_as_a_btree_set(ops in proptest::collection::vec(op(), 0..400)) {
            let mut index = DeadlineIndex::default();
            let mut model = BTreeSet::new();
            let mut boundary = None;
            for op in ops {
                match op {
                    Op::Insert(d, l) if model.insert((d, LeaseId(l))) => {
                        index.insert((d, LeaseId(l)));
                    }
                    Op::Insert(..) => {}
                    Op::Remove(d, l) => {
                        let key = (d, LeaseId(l));
                        prop_assert_eq!(index.remove(&key), model.remove(&key));
                    }
                    Op::FirstFrom(from) => {
                        let expected = model.range((from, LeaseId(0))..).next().copied();
                        prop_assert_eq!(index.first_from(from), expected);
                    }
                    Op::Boundary(from) => {
                        boundary = from;
                        index.set_boundary(from);
                    }
                }
                let expected = boundary.and_then(|b| model.range((b, LeaseId(0))..).next().copied());
                prop_assert_eq!(index.first_from_boundary(), expected);
                prop_assert_eq!(index.first(), model.first().copied());
                prop_assert_eq!(index.len(), model.len());
            }
        }
    }
}
