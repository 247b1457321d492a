//! A lock's FIFO queue of waiters, stored out of line.
//!
//! Why: nearly every lock in a big table is held with nobody waiting, and
//! an empty `VecDeque` still takes 32 bytes in every row; this takes 8 and
//! allocates only when someone queues. The encoding is a sequence of
//! waiters, exactly as a `VecDeque`'s, so stored snapshots read unchanged.

use crate::Waiter;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::VecDeque;

/// Waiters in FIFO order; only the head is granted next.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaitQueue {
    /// `None` when empty (never `Some` of an empty queue).
    #[allow(
        clippy::box_collection,
        reason = "8 bytes in the row instead of 32 is the point"
    )]
    queue: Option<Box<VecDeque<Waiter>>>,
}

impl WaitQueue {
    /// Queues `waiter` at the back.
    pub fn push_back(&mut self, waiter: Waiter) {
        self.queue
            .get_or_insert_with(Default::default)
            .push_back(waiter);
    }

    /// Takes the head.
    pub fn pop_front(&mut self) -> Option<Waiter> {
        let head = self.queue.as_mut()?.pop_front();
        self.forget_if_empty();
        head
    }

    /// Keeps only the waiters `keep` says yes to, in order.
    pub fn retain(&mut self, keep: impl FnMut(&Waiter) -> bool) {
        if let Some(queue) = self.queue.as_mut() {
            queue.retain(keep);
        }
        self.forget_if_empty();
    }

    /// The head, next to be granted.
    pub fn front(&self) -> Option<&Waiter> {
        self.queue.as_ref()?.front()
    }

    /// How many wait.
    pub fn len(&self) -> usize {
        self.queue.as_ref().map_or(0, |queue| queue.len())
    }

    /// Whether nobody waits.
    pub fn is_empty(&self) -> bool {
        self.queue.is_none()
    }

    /// The waiters, head first.
    pub fn iter(&self) -> std::collections::vec_deque::Iter<'_, Waiter> {
        static EMPTY: VecDeque<Waiter> = VecDeque::new();
        self.queue.as_deref().unwrap_or(&EMPTY).iter()
    }

    fn forget_if_empty(&mut self) {
        if self.queue.as_ref().is_some_and(|queue| queue.is_empty()) {
            self.queue = None;
        }
    }
}

impl<'a> IntoIterator for &'a WaitQueue {
    type Item = &'a Waiter;
    type IntoIter = std::collections::vec_deque::Iter<'a, Waiter>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl FromIterator<Waiter> for WaitQueue {
    fn from_iter<I: IntoIterator<Item = Waiter>>(waiters: I) -> WaitQueue {
        let queue: VecDeque<Waiter> = waiters.into_iter().collect();
        WaitQueue {
            queue: (!queue.is_empty()).then(|| Box::new(queue)),
        }
    }
}

impl Serialize for WaitQueue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for WaitQueue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<WaitQueue, D::Error> {
        Ok(VecDeque::<Waiter>::deserialize(deserializer)?
            .into_iter()
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LeaseId;

    fn waiter(lease: u64) -> Waiter {
        Waiter {
            lease: LeaseId(lease),
            since_unix_ms: 1,
            wait_ms: 2,
            fenced: true,
            lock_delay_ms: 0,
            max_hold_ms: 0,
            metadata: Default::default(),
        }
    }

    #[test]
    fn is_a_fifo_that_frees_its_room_when_empty() {
        let mut queue = WaitQueue::default();
        queue.push_back(waiter(1));
        queue.push_back(waiter(2));
        queue.push_back(waiter(3));
        queue.retain(|w| w.lease != LeaseId(2));
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.front().map(|w| w.lease), Some(LeaseId(1)));
        assert_eq!(queue.pop_front().map(|w| w.lease), Some(LeaseId(1)));
        assert_eq!(queue.pop_front().map(|w| w.lease), Some(LeaseId(3)));
        assert!(queue.is_empty() && queue.queue.is_none());
        assert_eq!(queue.pop_front(), None);
    }

    #[test]
    fn encodes_exactly_as_a_vec_deque_so_old_snapshots_read() {
        let old: VecDeque<Waiter> = [waiter(4), waiter(5)].into();
        let new: WaitQueue = old.iter().cloned().collect();
        let old_bytes = postcard::to_allocvec(&old).expect("encodes");
        assert_eq!(postcard::to_allocvec(&new).expect("encodes"), old_bytes);
        let read: WaitQueue = postcard::from_bytes(&old_bytes).expect("decodes");
        assert_eq!(read, new);
        let empty: WaitQueue = postcard::from_bytes(&[0]).expect("decodes");
        assert!(empty.queue.is_none(), "an empty queue allocates nothing");
    }
}
