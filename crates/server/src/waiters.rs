//! The waiter registry: callers blocked in a queued acquire, keyed by
//! (lock, lease). When the state machine grants a queued lease or drops it
//! from a queue, the registry tells the caller. Registration happens
//! *before* the acquire is proposed, so a grant applied right after the
//! enqueue can never be missed.
//!
//! **Why every wake carries its revision**: registering early means a wait
//! also hears effects of commands applied *before* its own acquire. A node
//! whose state machine lags the log (a new leader applying the entries it
//! inherited, a node re-applying its log after a restart) applies old
//! grants and removals of the same (lock, lease) while the caller already
//! waits. Taken at face value, an old grant would hand the caller a token
//! of an earlier hold, and its real grant would then go to nobody. So the
//! registry delivers every wake with the revision of the command that made
//! it, and a wait takes only those after its own acquire's revision
//! ([`Wait::after`]): each grant from the queue and each removal is a later
//! command, and every such command advances the revision.

use leasehold_core::{LeaseId, LockName, Revision, Token, WaitEndCause};
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::mpsc;

/// How a wait ended, as seen by the state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitResult {
    /// The lease now holds the lock.
    Granted(Token),
    /// The lease left the queue without a grant.
    Removed(WaitEndCause),
}

type Key = (LockName, LeaseId);

/// A wake: the revision of the command that made it, and what it says.
type Wake = (Revision, WaitResult);

/// Blocked acquires waiting for their grant.
#[derive(Default)]
pub struct Waiters {
    /// Where each registration's wakes go.
    slots: Mutex<HashMap<Key, Vec<mpsc::UnboundedSender<Wake>>>>,
}

/// One registration's end: the wakes of its (lock, lease), in log order.
pub struct Wait {
    wakes: mpsc::UnboundedReceiver<Wake>,
}

impl Wait {
    /// The first wake made by a command after `revision` (the revision of
    /// the caller's own acquire); earlier ones are history and skipped.
    /// `None` if the registry dropped the registration.
    pub async fn after(&mut self, revision: Revision) -> Option<WaitResult> {
        loop {
            let (made_at, result) = self.wakes.recv().await?;
            if made_at > revision {
                return Some(result);
            }
            tracing::debug!(
                made_at = made_at.0,
                acquired_at = revision.0,
                ?result,
                "a wake from before this wait's acquire was skipped"
            );
        }
    }
}

impl Waiters {
    /// An empty registry.
    pub fn new() -> Waiters {
        Waiters {
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// Registers interest in the grant of `name` to `lease`.
    pub fn register(&self, name: LockName, lease: LeaseId) -> Wait {
        let (tx, wakes) = mpsc::unbounded_channel();
        let mut slots = self.slots.lock().expect("waiters lock poisoned");
        slots.entry((name, lease)).or_default().push(tx);
        Wait { wakes }
    }

    /// Forgets registrations whose [`Wait`] is gone (the caller finished).
    pub fn forget_closed(&self, name: &LockName, lease: LeaseId) {
        let mut slots = self.slots.lock().expect("waiters lock poisoned");
        let key = (name.clone(), lease);
        if let Some(senders) = slots.get_mut(&key) {
            senders.retain(|tx| !tx.is_closed());
            if senders.is_empty() {
                slots.remove(&key);
            }
        }
    }

    /// Tells everyone waiting on (`name`, `lease`) what the command applied
    /// at `revision` did. Registrations stay until their caller finishes:
    /// a wake may be history to them (see the module doc).
    pub fn wake(&self, name: &LockName, lease: LeaseId, revision: Revision, result: WaitResult) {
        let slots = self.slots.lock().expect("waiters lock poisoned");
        for tx in slots.get(&(name.clone(), lease)).into_iter().flatten() {
            let _ = tx.send((revision, result));
        }
    }

    /// Number of (lock, lease) pairs waited on (for metrics).
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

    fn registry() -> Waiters {
        Waiters::new()
    }

    #[tokio::test]
    async fn every_registration_for_the_key_hears_the_wake() {
        let waiters = registry();
        let name = LockName::parse("a").unwrap();
        let mut first = waiters.register(name.clone(), LeaseId(1));
        let mut second = waiters.register(name.clone(), LeaseId(1));
        let other = waiters.register(name.clone(), LeaseId(2));
        waiters.wake(
            &name,
            LeaseId(1),
            Revision(8),
            WaitResult::Granted(Token(8)),
        );
        let granted = Some(WaitResult::Granted(Token(8)));
        assert_eq!(first.after(Revision(7)).await, granted);
        assert_eq!(second.after(Revision(7)).await, granted);
        assert_eq!(waiters.len(), 2, "lease 2 still waits");
        drop((first, second, other));
        waiters.forget_closed(&name, LeaseId(1));
        waiters.forget_closed(&name, LeaseId(2));
        assert!(waiters.is_empty());
    }

    /// A lagging state machine applies an earlier hold's grant and an
    /// earlier wait's removal of the same (lock, lease) after this wait
    /// registered: neither is this wait's; the grant after its acquire is.
    #[tokio::test]
    async fn wakes_from_before_the_acquire_are_history() {
        let waiters = registry();
        let name = LockName::parse("a").unwrap();
        let lease = LeaseId(3);
        let mut wait = waiters.register(name.clone(), lease);
        waiters.wake(&name, lease, Revision(40), WaitResult::Granted(Token(40)));
        let timed_out = WaitResult::Removed(WaitEndCause::TimedOut);
        waiters.wake(&name, lease, Revision(45), timed_out);
        waiters.wake(&name, lease, Revision(90), WaitResult::Granted(Token(90)));
        let acquired_at = Revision(50);
        assert_eq!(
            wait.after(acquired_at).await,
            Some(WaitResult::Granted(Token(90)))
        );
    }

    #[tokio::test]
    async fn a_wake_at_the_acquires_own_revision_is_history() {
        let waiters = registry();
        let name = LockName::parse("a").unwrap();
        let mut wait = waiters.register(name.clone(), LeaseId(1));
        waiters.wake(
            &name,
            LeaseId(1),
            Revision(5),
            WaitResult::Granted(Token(5)),
        );
        drop(waiters);
        assert_eq!(wait.after(Revision(5)).await, None, "the registry is gone");
    }
}
