//! The waiter registry: callers blocked in a queued acquire, keyed by
//! (lock, lease). When the state machine grants a queued lease or drops it
//! from a queue, the registry wakes the caller. Registration happens *before*
//! the acquire is proposed, so a grant applied right after the enqueue can
//! never be missed.

use crate::clock::Clock;
use leasehold_core::{LeaseId, LockName, Token, WaitEndCause};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// How a wait ended, as seen by the state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitResult {
    /// The lease now holds the lock.
    Granted(Token),
    /// The lease left the queue without a grant.
    Removed(WaitEndCause),
}

type Key = (LockName, LeaseId);

/// When a caller registered, and where its wake goes.
type Registration = (Instant, oneshot::Sender<WaitResult>);

/// Blocked acquires waiting for their grant.
pub struct Waiters {
    /// Each registration keeps when it was made, so the wake can report how
    /// long the caller waited (the `leasehold_wait_seconds` histogram).
    slots: Mutex<HashMap<Key, Vec<Registration>>>,
    /// The clock registrations and wakes are dated on.
    clock: Arc<dyn Clock>,
}

impl Waiters {
    /// An empty registry dated on `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Waiters {
        Waiters {
            slots: Mutex::new(HashMap::new()),
            clock,
        }
    }

    /// Registers interest in the grant of `name` to `lease`.
    pub fn register(&self, name: LockName, lease: LeaseId) -> oneshot::Receiver<WaitResult> {
        let (tx, rx) = oneshot::channel();
        let mut slots = self.slots.lock().expect("waiters lock poisoned");
        slots
            .entry((name, lease))
            .or_default()
            .push((self.clock.now(), tx));
        rx
    }

    /// Forgets registrations whose receivers are gone (the caller finished).
    pub fn forget_closed(&self, name: &LockName, lease: LeaseId) {
        let mut slots = self.slots.lock().expect("waiters lock poisoned");
        let key = (name.clone(), lease);
        if let Some(senders) = slots.get_mut(&key) {
            senders.retain(|(_, tx)| !tx.is_closed());
            if senders.is_empty() {
                slots.remove(&key);
            }
        }
    }

    /// Wakes everyone waiting on (`name`, `lease`); returns the longest of
    /// their waits (`None` if nobody waited on this node).
    pub fn wake(&self, name: &LockName, lease: LeaseId, result: WaitResult) -> Option<Duration> {
        let senders = {
            let mut slots = self.slots.lock().expect("waiters lock poisoned");
            slots.remove(&(name.clone(), lease))
        };
        let now = self.clock.now();
        let mut longest = None;
        for (since, tx) in senders.into_iter().flatten() {
            let _ = tx.send(result);
            longest = longest.max(Some(now.saturating_duration_since(since)));
        }
        longest
    }

    /// Number of registered waits (for metrics).
    pub fn len(&self) -> usize {
        self.slots.lock().expect("waiters lock poisoned").len()
    }

    /// True when nobody waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[tokio::test]
    async fn wakes_every_registration_for_the_key() {
        let clock = Arc::new(ManualClock::starting_now());
        let waiters = Waiters::new(clock.clone());
        let name = LockName::parse("a").unwrap();
        let first = waiters.register(name.clone(), LeaseId(1));
        clock.advance(Duration::from_millis(100));
        let second = waiters.register(name.clone(), LeaseId(1));
        let other = waiters.register(name.clone(), LeaseId(2));
        clock.advance(Duration::from_millis(150));
        let longest = waiters.wake(&name, LeaseId(1), WaitResult::Granted(Token(7)));
        assert_eq!(
            longest,
            Some(Duration::from_millis(250)),
            "the first waited longest"
        );
        assert_eq!(first.await.unwrap(), WaitResult::Granted(Token(7)));
        assert_eq!(second.await.unwrap(), WaitResult::Granted(Token(7)));
        assert_eq!(waiters.len(), 1);
        drop(other);
        waiters.forget_closed(&name, LeaseId(2));
        assert!(waiters.is_empty());
    }
}
