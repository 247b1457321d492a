//! The lessor's lease timers by lease id: one vector sorted by id.
//!
//! Why not a `BTreeMap`: lease ids arrive in increasing order (an id is the
//! revision of its grant), and a B-tree filled in order splits each full
//! leaf into a kept half and a new one, so its leaves stay a little over
//! half full: about 47 bytes a lease for a 24-byte entry. Here a lease
//! takes 16 bytes (its id, and its deadline and renewal mark in one word)
//! and the vector's growth room; a new lease is a push, a lookup a binary
//! search.
//!
//! A removed lease leaves its slot behind, marked dead (the ids stay
//! sorted, so lookups still find their way), and the dead slots are swept
//! out in one pass once they outnumber the live ones: each sweep moves at
//! most twice the live slots, and follows at least as many removals, so a
//! removal costs O(1) moves amortized (a million leases ending together
//! sweep about two million slots in all).

use super::{RenewalMark, DEADLINE_MS_MAX};
use crate::LeaseId;

/// Dead slots tolerated before a sweep, whatever the live count: a small
/// table is not swept on every other removal.
const SWEEP_MIN: usize = 64;

/// The word of a dead slot. A live one never is: its deadline is at most
/// [`DEADLINE_MS_MAX`], below the 40 bits' last value.
const DEAD: u64 = u64::MAX;

/// What the lessor knows of one lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LeaseTimer {
    /// When this node applied the latest renewal, + ttl (ms; at most
    /// [`DEADLINE_MS_MAX`]).
    pub deadline_ms: u64,
    /// The lease's renewal count at that renewal, its low bits: an expiry
    /// proposal carries the count, so a renewal applied in between makes
    /// the expiry a no-op.
    pub mark: RenewalMark,
}

impl LeaseTimer {
    /// The deadline in the high 40 bits, the mark in the low 24.
    fn word(self) -> u64 {
        debug_assert!(self.deadline_ms <= DEADLINE_MS_MAX, "deadline out of range");
        (self.deadline_ms << RenewalMark::BITS) | u64::from(self.mark.get())
    }

    fn from_word(word: u64) -> LeaseTimer {
        LeaseTimer {
            deadline_ms: word >> RenewalMark::BITS,
            mark: RenewalMark::of(word),
        }
    }
}

/// One lease's timer as one word, or a dead slot (`DEAD`) kept for order.
#[derive(Clone, Copy, Debug)]
struct Slot {
    lease: LeaseId,
    timer: u64,
}

impl Slot {
    fn live(&self) -> Option<LeaseTimer> {
        (self.timer != DEAD).then(|| LeaseTimer::from_word(self.timer))
    }
}

/// Lease timers sorted by lease id, with dead slots among them.
#[derive(Debug, Default)]
pub(super) struct LeaseTable {
    slots: Vec<Slot>,
    /// Slots not dead.
    live: usize,
}

impl LeaseTable {
    /// The timer of `lease`, if tracked.
    pub fn get(&self, lease: LeaseId) -> Option<LeaseTimer> {
        let at = self.find(lease).ok()?;
        self.slots[at].live()
    }

    /// Tracks `lease` with `timer`; returns the timer it replaces.
    pub fn insert(&mut self, lease: LeaseId, timer: LeaseTimer) -> Option<LeaseTimer> {
        let slot = Slot {
            lease,
            timer: timer.word(),
        };
        match self.find(lease) {
            Ok(at) => {
                let old = self.slots[at].live();
                self.live += usize::from(old.is_none());
                self.slots[at] = slot;
                old
            }
            Err(at) => {
                // A new lease has the highest id: `at` is the end, a push.
                self.slots.insert(at, slot);
                self.live += 1;
                None
            }
        }
    }

    /// Stops tracking `lease`; returns its timer.
    pub fn remove(&mut self, lease: LeaseId) -> Option<LeaseTimer> {
        let at = self.find(lease).ok()?;
        let old = self.slots[at].live()?;
        self.slots[at].timer = DEAD;
        self.live -= 1;
        let dead = self.slots.len() - self.live;
        if dead > self.live && dead >= SWEEP_MIN {
            self.sweep();
        }
        Some(old)
    }

    /// Leases tracked.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Forgets every lease.
    pub fn clear(&mut self) {
        *self = LeaseTable::default();
    }

    /// Drops the dead slots, and the room a shrunken table no longer needs.
    fn sweep(&mut self) {
        self.slots.retain(|slot| slot.live().is_some());
        if self.slots.capacity() > 4 * self.slots.len().max(SWEEP_MIN) {
            self.slots.shrink_to(2 * self.slots.len());
        }
    }

    fn find(&self, lease: LeaseId) -> Result<usize, usize> {
        match self.slots.last() {
            // Fast path for the usual insert: a new, highest id.
            Some(last) if last.lease < lease => Err(self.slots.len()),
            _ => self.slots.binary_search_by_key(&lease, |slot| slot.lease),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timer(deadline_ms: u64) -> LeaseTimer {
        LeaseTimer {
            deadline_ms,
            mark: RenewalMark::of(deadline_ms * 7),
        }
    }

    #[test]
    fn a_slot_takes_16_bytes() {
        assert_eq!(std::mem::size_of::<Slot>(), 16);
    }

    #[test]
    fn the_latest_deadline_and_any_mark_read_back() {
        let mut table = LeaseTable::default();
        let latest = LeaseTimer {
            deadline_ms: DEADLINE_MS_MAX,
            mark: RenewalMark::of(u64::MAX),
        };
        table.insert(LeaseId(1), latest);
        assert_eq!(table.get(LeaseId(1)), Some(latest));
        assert_eq!(table.len(), 1, "not taken for a dead slot");
    }

    #[test]
    fn leases_read_back_in_any_insert_order_and_a_renewal_replaces() {
        let mut table = LeaseTable::default();
        for id in [5, 1, 9, 3] {
            assert_eq!(table.insert(LeaseId(id), timer(id * 10)), None);
        }
        assert_eq!(table.insert(LeaseId(3), timer(99)), Some(timer(30)));
        assert_eq!(table.get(LeaseId(3)), Some(timer(99)));
        assert_eq!(table.get(LeaseId(9)), Some(timer(90)));
        assert_eq!(table.get(LeaseId(4)), None);
        assert_eq!(table.len(), 4);
    }

    #[test]
    fn a_removed_lease_is_gone_and_may_come_back() {
        let mut table = LeaseTable::default();
        table.insert(LeaseId(1), timer(10));
        table.insert(LeaseId(2), timer(20));
        assert_eq!(table.remove(LeaseId(1)), Some(timer(10)));
        assert_eq!(table.remove(LeaseId(1)), None, "removed once");
        assert_eq!(table.get(LeaseId(1)), None);
        assert_eq!(table.len(), 1);
        assert_eq!(
            table.insert(LeaseId(1), timer(11)),
            None,
            "a dead slot revived"
        );
        assert_eq!(table.get(LeaseId(1)), Some(timer(11)));
        assert_eq!(table.len(), 2);
    }

    #[test]
    fn dead_slots_are_swept_once_they_outnumber_the_live() {
        let mut table = LeaseTable::default();
        for id in 0..1_000 {
            table.insert(LeaseId(id), timer(id));
        }
        for id in 0..900 {
            table.remove(LeaseId(id));
            let dead = table.slots.len() - table.len();
            assert!(dead <= table.len().max(SWEEP_MIN), "{dead} dead slots kept");
        }
        assert_eq!(table.len(), 100);
        for id in 900..1_000 {
            assert_eq!(table.get(LeaseId(id)), Some(timer(id)));
        }
        for id in 900..1_000 {
            table.remove(LeaseId(id));
        }
        assert_eq!(table.len(), 0);
        assert!(table.slots.capacity() <= 4 * SWEEP_MIN, "room given back");
    }
}
