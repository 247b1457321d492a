//! Leaving a queue without a grant: a waiter's cancel, the leader's
//! timeouts of waits that ran out, and what both share (`leave_queue`: a
//! lock's or a pool's queue, or every queue of a set of locks, whose kept
//! locks then go to the next in line).

use super::State;
use crate::outcome::WaitEndCause;
use crate::{Effect, LeaseId, LockName, Reply};

impl State {
    /// Takes `lease` out of `name`'s queue, if it is there (a lock's, or a
    /// semaphore's or read-write lock's, whose asks behind it may then be
    /// granted).
    pub(super) fn cancel_wait(
        &mut self,
        lease: LeaseId,
        name: &LockName,
        timed_out: bool,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Reply {
        let left = self.leave_queue(lease, name, timed_out, effects);
        if !left.is_empty() {
            self.bump();
            for name in &left {
                self.grant_waiting(name, at_unix_ms, effects);
            }
            return Reply::WaitEnded { holder_token: None };
        }
        if let Some(pool) = self.pools.get(name) {
            let held = pool.permits.holds().iter().find(|h| h.lease == lease);
            return Reply::WaitEnded {
                holder_token: held.map(|h| h.token),
            };
        }
        // Not queued: gone with its lease, or granted before this applied.
        let lock = self.locks.get(name);
        let holder = lock.and_then(|l| l.holder.as_ref());
        Reply::WaitEnded {
            holder_token: holder.filter(|h| h.lease == lease).map(|h| h.token),
        }
    }

    /// Leader timer: each of `waits` ran out; those still queued leave
    /// their queues, under one revision (none if none was queued: each
    /// was granted, or ended with its lease, first).
    pub(super) fn time_out_waits(
        &mut self,
        waits: &[(LeaseId, LockName)],
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Reply {
        let mut removed = Vec::new();
        for (lease, name) in waits {
            removed.extend(self.leave_queue(*lease, name, true, effects));
        }
        if !removed.is_empty() {
            self.bump();
        }
        for name in &removed {
            self.grant_waiting(name, at_unix_ms, effects);
        }
        Reply::TimerApplied
    }

    /// Takes `lease` out of `name`'s queue without moving the revision
    /// (out of every queue of its set, if it waits for `name` as part of
    /// one: a set is waited for whole); the names whose queues it left.
    fn leave_queue(
        &mut self,
        lease: LeaseId,
        name: &LockName,
        timed_out: bool,
        effects: &mut Vec<Effect>,
    ) -> Vec<LockName> {
        if self.in_lock_set(lease, name) {
            let names = self.forget_lock_set(lease);
            for name in &names {
                self.leave_lock_queue(lease, name, timed_out, effects);
            }
            return names;
        }
        match self.leave_lock_queue(lease, name, timed_out, effects) {
            true => vec![name.clone()],
            false => Vec::new(),
        }
    }

    /// Takes `lease` out of the queue of the lock or pool `name`; whether
    /// it was queued.
    fn leave_lock_queue(
        &mut self,
        lease: LeaseId,
        name: &LockName,
        timed_out: bool,
        effects: &mut Vec<Effect>,
    ) -> bool {
        let Some(row) = self.leases.get_mut(&lease) else {
            // A lease that ended left every queue when it ended.
            return false;
        };
        if !row.waits.remove(name) {
            return self.leave_pool_queue(lease, name, timed_out, effects);
        }
        let owner = row.owner.owner().to_owned();
        let principal = row.principal.clone();
        self.auth.count(principal.as_ref(), |u| u.waiters -= 1);
        let lock = self.locks.get_mut(name).expect("waited-for lock missing");
        let before = lock.waiters.len();
        lock.waiters.retain(|waiter| waiter.lease != lease);
        assert_eq!(lock.waiters.len() + 1, before);
        effects.push(Effect::WaiterRemoved {
            name: name.clone(),
            lease,
            cause: if timed_out {
                WaitEndCause::TimedOut
            } else {
                WaitEndCause::Cancelled
            },
            owner,
        });
        true
    }
}
