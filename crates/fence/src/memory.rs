//! [`MemoryFence`]: the fencing rule for a resource that lives in this
//! process (a cache, an in-memory table, a test double).
//!
//! The highest accepted token per (resource, lock) sits in one map behind
//! one mutex, and the caller's write runs while that mutex is held: check,
//! record and write are one atomic step, so two writers can never both pass
//! the check and then write in the wrong order. The price is that every
//! write through one `MemoryFence` is serialised — acceptable for the
//! single-process and test uses it is for. Nothing is persisted; see
//! [`crate::file`] for a fence that survives a restart.

use crate::{check, Audit, Rejection, StaleToken};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Metric label of this adapter's refusals.
const ADAPTER: &str = "memory";

/// An in-process fence: refuses any write whose token is lower than the
/// highest already accepted for the same (resource, lock).
///
/// ```
/// use leasehold_fence::memory::MemoryFence;
///
/// let fence = MemoryFence::new();
/// let mut balance = 0;
///
/// // Holder with token 7 writes; then a newer holder (token 8) writes.
/// fence.write("accounts", "acct-1", 7, || balance += 10).unwrap();
/// fence.write("accounts", "acct-1", 8, || balance += 1).unwrap();
///
/// // The paused old holder wakes up and tries again: refused, not run.
/// let stale = fence.write("accounts", "acct-1", 7, || balance = 0).unwrap_err();
/// assert_eq!((stale.presented, stale.highest), (7, 8));
/// assert_eq!(balance, 11);
/// assert_eq!(fence.highest("accounts", "acct-1"), Some(8));
/// assert_eq!(fence.rejections().len(), 1);
/// ```
#[derive(Debug)]
pub struct MemoryFence {
    /// The highest accepted token per (resource, lock); the mutex is also
    /// what makes check, record and write one atomic step.
    highest: Mutex<Tokens>,
    /// Refusals: counted, logged and the recent ones kept for [`Self::rejections`].
    audit: Audit,
}

impl Default for MemoryFence {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryFence {
    /// An empty fence: no token accepted yet for anything.
    pub fn new() -> MemoryFence {
        MemoryFence {
            highest: Mutex::new(Tokens::default()),
            audit: Audit::new(ADAPTER),
        }
    }

    /// Runs `write` if `token` is at least the highest accepted for
    /// (`resource`, `lock`), recording `token` as the new highest; otherwise
    /// records the refusal and returns it without running `write`.
    ///
    /// Check, record and `write` happen under one acquisition of the
    /// fence's mutex, so `write` must not call back into this fence (it
    /// would deadlock). The token is recorded *before* `write` runs: if
    /// `write` panics the token stays recorded, which only makes the
    /// resource stricter, never looser.
    pub fn write<T>(
        &self,
        resource: &str,
        lock: &str,
        token: u64,
        write: impl FnOnce() -> T,
    ) -> Result<T, StaleToken> {
        let mut highest = self.lock_map();
        match check(lock, highest.get(resource, lock), token) {
            Ok(new_highest) => {
                highest.record(resource, lock, new_highest);
                Ok(write())
            }
            Err(stale) => {
                // The refusal changes no fence state; audit outside the
                // fence's mutex so logging never holds up other writers.
                drop(highest);
                self.audit.record(resource, &stale);
                Err(stale)
            }
        }
    }

    /// The highest token accepted for (`resource`, `lock`), if any.
    pub fn highest(&self, resource: &str, lock: &str) -> Option<u64> {
        self.lock_map().get(resource, lock)
    }

    /// The recent refusals, oldest first (bounded by
    /// [`crate::audit::REJECTIONS_REMEMBERED`]).
    pub fn rejections(&self) -> Vec<Rejection> {
        self.audit.recent()
    }

    /// The map, even if a caller's `write` panicked while holding it: the
    /// token is recorded before `write` runs, so the map is consistent at
    /// every point a panic can come from.
    fn lock_map(&self) -> MutexGuard<'_, Tokens> {
        self.highest.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The highest accepted token per (resource, lock), shared by the
/// in-process adapters. Nested maps (rather than one keyed by a pair) so a
/// lookup borrows the caller's `&str`s without allocating. Entries are
/// never removed: forgetting a lock's highest token would let a stale
/// writer through again.
#[derive(Debug, Default)]
pub(crate) struct Tokens(HashMap<String, HashMap<String, u64>>);

impl Tokens {
    /// The highest token recorded for (`resource`, `lock`).
    pub(crate) fn get(&self, resource: &str, lock: &str) -> Option<u64> {
        self.0.get(resource)?.get(lock).copied()
    }

    /// Records `token` as the highest for (`resource`, `lock`), allocating
    /// the keys only the first time the pair is seen. A token lower than
    /// the recorded one is a bug in the caller's check: crash.
    pub(crate) fn record(&mut self, resource: &str, lock: &str, token: u64) {
        let locks = match self.0.get_mut(resource) {
            Some(locks) => locks,
            None => self.0.entry(resource.to_owned()).or_default(),
        };
        match locks.get_mut(lock) {
            Some(highest) => {
                assert!(token >= *highest, "fence: highest token would go down");
                *highest = token;
            }
            None => {
                locks.insert(lock.to_owned(), token);
            }
        }
    }

    /// Every (resource, lock, highest), sorted so output built from it is
    /// deterministic.
    pub(crate) fn sorted(&self) -> Vec<(&str, &str, u64)> {
        let mut all: Vec<_> = self
            .0
            .iter()
            .flat_map(|(resource, locks)| {
                locks
                    .iter()
                    .map(move |(lock, token)| (resource.as_str(), lock.as_str(), *token))
            })
            .collect();
        all.sort_unstable();
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_refused_and_not_run_equal_and_higher_run() {
        let fence = MemoryFence::new();
        let mut ran = Vec::new();
        assert_eq!(fence.write("r", "l", 5, || ran.push(5)), Ok(()));
        assert_eq!(fence.write("r", "l", 5, || ran.push(55)), Ok(()));
        let stale = fence.write("r", "l", 4, || ran.push(4)).unwrap_err();
        assert_eq!(
            (stale.lock.as_str(), stale.presented, stale.highest),
            ("l", 4, 5)
        );
        assert_eq!(fence.write("r", "l", 9, || ran.push(9)), Ok(()));
        assert_eq!(ran, vec![5, 55, 9]);
        assert_eq!(fence.highest("r", "l"), Some(9));
    }

    #[test]
    fn resources_and_locks_are_fenced_independently() {
        let fence = MemoryFence::new();
        fence.write("r1", "l", 10, || ()).unwrap();
        // Same lock name, other resource; other lock, same resource.
        assert!(fence.write("r2", "l", 1, || ()).is_ok());
        assert!(fence.write("r1", "m", 1, || ()).is_ok());
        assert!(fence.write("r1", "l", 9, || ()).is_err());
        assert_eq!(fence.highest("r1", "l"), Some(10));
        assert_eq!(fence.highest("r2", "l"), Some(1));
        assert_eq!(fence.highest("r2", "m"), None);
    }

    #[test]
    fn refusals_are_audited_with_resource_and_tokens() {
        let fence = MemoryFence::new();
        fence.write("r", "l", 3, || ()).unwrap();
        fence.write("r", "l", 2, || ()).unwrap_err();
        let rejections = fence.rejections();
        assert_eq!(rejections.len(), 1);
        let r = &rejections[0];
        assert_eq!((r.resource.as_str(), r.lock.as_str()), ("r", "l"));
        assert_eq!((r.presented, r.highest), (2, 3));
    }

    #[test]
    fn a_panicking_write_keeps_its_token_and_the_fence_usable() {
        let fence = MemoryFence::new();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            fence.write("r", "l", 6, || panic!("write failed")).ok();
        }));
        assert!(panicked.is_err());
        assert_eq!(fence.highest("r", "l"), Some(6));
        assert!(fence.write("r", "l", 5, || ()).is_err());
        assert!(fence.write("r", "l", 6, || ()).is_ok());
    }
}
