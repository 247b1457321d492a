//! The lock half of `apply`: acquire (grant, busy or queue), release, and
//! the two lock timers (end of lock delay, end of max hold); leaving a
//! queue is `queue_leaves.rs`. Every path that frees a lock ends in
//! `grant_next`, so the FIFO head is the only waiter ever granted (a set
//! of locks only whole, `lock_sets.rs`).

use super::{FailedRelease, State};
use crate::auth::QuotaKind;
use crate::election::VALUE_KEY;
use crate::lock::term_ms;
use crate::outcome::FreeCause;
use crate::{
    limits, nearby, Acquire, Effect, Holder, LeaseId, Lock, LockError, LockName, Outcome, Reply,
    RequestId, Token, WaitQueue, Waiter,
};

impl State {
    /// Acquires `a.name` for `a.lease`, or queues for it, or reports it busy.
    pub(super) fn acquire(
        &mut self,
        a: Acquire,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Outcome {
        a.validate()?;
        let (lease, request_id) = (a.lease, a.request_id.clone());
        self.once(lease, request_id, |state| {
            state.check_kind(&a.name, None)?;
            state.acquire_fresh(a, at_unix_ms, effects)
        })
    }

    /// `acquire` for a request not seen before.
    fn acquire_fresh(&mut self, a: Acquire, at_unix_ms: u64, effects: &mut Vec<Effect>) -> Outcome {
        let row = &self.leases[&a.lease];
        let lock = self.locks.get(&a.name);
        if let Some(holder) = lock.and_then(|l| l.holder.as_ref()) {
            if holder.lease == a.lease {
                assert!(row.holds.contains(&a.name));
                return Ok(Reply::Acquired {
                    token: holder.token,
                    already_held: true,
                });
            }
        }
        if row.waits.contains(&a.name) {
            let position = lock
                .and_then(|l| l.waiters.iter().position(|w| w.lease == a.lease))
                .expect("lease lists a wait its lock lacks");
            return Ok(Reply::Queued {
                position: position as u32 + 1,
            });
        }
        let busy = lock.is_some();
        if busy && a.wait_ms == 0 {
            return Err(LockError::Busy {
                name: a.name,
                holder_token: lock.and_then(|l| l.holder.as_ref()).map(|h| h.token),
            });
        }
        let queue = busy.then(|| lock.map_or(0, |l| l.waiters.len()));
        self.check_room(a.lease, &a.name, queue)?;
        if !busy {
            return Ok(self.grant_free(a, at_unix_ms, effects));
        }
        Ok(self.enqueue(a, at_unix_ms, effects))
    }

    /// The limits a new hold or wait of `lease` on `name` must stay within
    /// (a lock's, a semaphore's or a read-write lock's): the lease's holds
    /// and waits ([`limits::LOCKS_PER_LEASE_MAX`]) and its principal's held
    /// quota; if it would wait behind `queue` others, also the principal's
    /// waiters quota and the queue's length
    /// ([`limits::WAITERS_PER_LOCK_MAX`]).
    pub(super) fn check_room(
        &self,
        lease: LeaseId,
        name: &LockName,
        queue: Option<usize>,
    ) -> Result<(), LockError> {
        let row = &self.leases[&lease];
        let in_use = row.holds.len() + row.waits.len() + self.pool_memberships(lease);
        if in_use >= limits::LOCKS_PER_LEASE_MAX {
            return Err(LockError::exhausted(
                limits::Limit::LocksPerLeaseMax,
                format!("lease {lease} holds or waits for {in_use} locks"),
            ));
        }
        // A queued waiter becomes a holder without asking again, so both
        // count against the held quota.
        let principal = row.principal.as_ref();
        self.auth
            .check_quota(principal, QuotaKind::Held, |u| u.held + u.waiters)?;
        let Some(waiting) = queue else {
            return Ok(());
        };
        self.auth
            .check_quota(principal, QuotaKind::Waiters, |u| u.waiters)?;
        if waiting >= limits::WAITERS_PER_LOCK_MAX {
            return Err(LockError::exhausted(
                limits::Limit::WaitersPerLockMax,
                format!("{waiting} waiters are queued on {name}"),
            ));
        }
        Ok(())
    }

    /// Grants a lock that is not in the table (free) to `a.lease`.
    fn grant_free(&mut self, a: Acquire, at_unix_ms: u64, effects: &mut Vec<Effect>) -> Reply {
        let token = self.bump();
        let value = a.metadata.get(VALUE_KEY).cloned();
        let holder = Holder {
            lease: a.lease,
            token,
            acquired_unix_ms: at_unix_ms,
            fenced: a.fenced,
            lock_delay_ms: term_ms(a.lock_delay_ms),
            max_hold_ms: term_ms(a.max_hold_ms),
            metadata: a.metadata.into(),
        };
        let lock = Lock {
            holder: Some(holder),
            waiters: WaitQueue::default(),
            delay: None,
        };
        assert!(self.locks.insert(a.name.clone(), Box::new(lock)).is_none());
        let row = self.leases.get_mut(&a.lease).expect("live lease");
        assert!(row.holds.insert(a.name.clone()));
        self.auth.count(row.principal.as_ref(), |u| u.held += 1);
        effects.push(Effect::LockGranted {
            name: a.name,
            lease: a.lease,
            token,
            from_queue: false,
            max_hold_ms: a.max_hold_ms,
            owner: row.owner.owner().to_owned(),
            value,
        });
        Reply::Acquired {
            token,
            already_held: false,
        }
    }

    /// Queues `a.lease` at the back of a held or delayed lock.
    fn enqueue(&mut self, a: Acquire, at_unix_ms: u64, effects: &mut Vec<Effect>) -> Reply {
        self.bump();
        let lock = self
            .locks
            .get_mut(&a.name)
            .expect("queue on a missing lock");
        // Behind a holder, a delay, or a set that keeps the lock.
        assert!(lock.holder.is_some() || lock.delay.is_some() || !lock.waiters.is_empty());
        lock.waiters.push_back(Waiter {
            lease: a.lease,
            since_unix_ms: at_unix_ms,
            wait_ms: a.wait_ms,
            fenced: a.fenced,
            lock_delay_ms: term_ms(a.lock_delay_ms),
            max_hold_ms: term_ms(a.max_hold_ms),
            metadata: a.metadata.into(),
        });
        let position = lock.waiters.len() as u32;
        let row = self.leases.get_mut(&a.lease).expect("live lease");
        assert!(row.waits.insert(a.name.clone()));
        self.auth.count(row.principal.as_ref(), |u| u.waiters += 1);
        effects.push(Effect::WaiterQueued {
            name: a.name,
            lease: a.lease,
            wait_ms: a.wait_ms,
        });
        Reply::Queued { position }
    }

    /// Releases `name` held by (`lease`, `token`). Failures are errors that
    /// say which case applies, and are remembered for diagnosis.
    pub(super) fn release(
        &mut self,
        lease: LeaseId,
        name: LockName,
        token: Token,
        request_id: Option<RequestId>,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Outcome {
        let outcome = if !self.leases.contains_key(&lease) {
            Err(self.lease_gone(lease))
        } else if let Some(first) = self.remembered(lease, &request_id) {
            return first;
        } else {
            let outcome = self.release_fresh(lease, &name, token, at_unix_ms, effects);
            self.remember(lease, request_id, &outcome);
            outcome
        };
        if let Err(error) = &outcome {
            self.remember_failed_release(name, lease, token, error, at_unix_ms, effects);
        }
        outcome
    }

    /// Keeps a refused release for diagnosis (with the owner, and for a
    /// name that does not exist the held names that look like it: the
    /// wrong-key release) and reports it as an effect.
    fn remember_failed_release(
        &mut self,
        name: LockName,
        lease: LeaseId,
        token: Token,
        error: &LockError,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) {
        let owner = self
            .leases
            .get(&lease)
            .map(|row| row.owner.owner().to_owned());
        let nearby = match error {
            LockError::NoSuchLock { nearby, .. } => nearby.clone(),
            _ => Vec::new(),
        };
        effects.push(Effect::ReleaseFailed {
            name: name.clone(),
            lease,
            token,
            error: error.clone(),
            owner: owner.clone(),
        });
        if self.failed_releases.len() == limits::FAILED_RELEASES_REMEMBERED {
            self.failed_releases.pop_front();
        }
        self.failed_releases.push_back(FailedRelease {
            name,
            lease,
            token,
            owner: owner.unwrap_or_default(),
            nearby,
            at_unix_ms,
            error: error.to_string(),
        });
    }

    /// The error for a release of `name`, which nobody holds or waits for,
    /// with the names that look like it.
    pub(super) fn no_such_lock(&self, name: &LockName) -> LockError {
        LockError::NoSuchLock {
            name: name.clone(),
            nearby: nearby::nearby_names(&self.locks, name.as_str()),
        }
    }

    /// `release` for a live lease and a request not seen before.
    fn release_fresh(
        &mut self,
        lease: LeaseId,
        name: &LockName,
        token: Token,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Outcome {
        if self.pools.contains_key(name) {
            return self.release_permits(lease, name, token, at_unix_ms, effects);
        }
        let Some(lock) = self.locks.get(name) else {
            return Err(self.no_such_lock(name));
        };
        let holder_token = lock.holder.as_ref().map(|h| h.token);
        if lock.holder.as_ref().map(|h| (h.lease, h.token)) != Some((lease, token)) {
            return Err(LockError::NotHolder {
                name: name.clone(),
                lease: Some(lease),
                token,
                holder_token,
            });
        }
        self.bump();
        self.free_holder(name, FreeCause::Released, effects);
        self.grant_next(name, at_unix_ms, effects);
        Ok(Reply::Released)
    }

    /// Leader timer: the lock delay begun by the expiry of the holder with
    /// `token` is over; the head waiter gets the lock.
    pub(super) fn end_lock_delay(
        &mut self,
        name: &LockName,
        token: Token,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Reply {
        let Some(lock) = self.locks.get_mut(name) else {
            return Reply::TimerApplied;
        };
        if lock.delay.as_ref().map(|d| d.token) != Some(token) {
            return Reply::TimerApplied;
        }
        assert!(lock.holder.is_none(), "a delayed lock is never held");
        let revision = self.bump();
        assert!(token < revision, "delayed token not below revision");
        self.locks.get_mut(name).expect("delayed lock").delay = None;
        self.grant_next(name, at_unix_ms, effects);
        Reply::TimerApplied
    }

    /// Leader timer: the holder with `token` exceeded its `max_hold_ms`.
    pub(super) fn end_hold(
        &mut self,
        name: &LockName,
        token: Token,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Reply {
        let holder = self.locks.get(name).and_then(|l| l.holder.as_ref());
        if holder.map(|h| h.token) != Some(token) {
            return Reply::TimerApplied;
        }
        self.bump();
        self.free_holder(name, FreeCause::MaxHoldExceeded, effects);
        self.grant_next(name, at_unix_ms, effects);
        Reply::TimerApplied
    }

    /// Takes the holder off `name` (whose lease stays live).
    pub(super) fn free_holder(
        &mut self,
        name: &LockName,
        cause: FreeCause,
        effects: &mut Vec<Effect>,
    ) {
        let lock = self.locks.get_mut(name).expect("freeing a missing lock");
        let holder = lock.holder.take().expect("freeing an unheld lock");
        // The next grant's token (this command's revision) must exceed it.
        assert!(holder.token.0 < self.revision.0, "token not below revision");
        let row = self
            .leases
            .get_mut(&holder.lease)
            .expect("holder lease live");
        assert!(row.holds.remove(name), "holder lease did not list the lock");
        self.auth.count(row.principal.as_ref(), |u| u.held -= 1);
        effects.push(Effect::LockFreed {
            name: name.clone(),
            lease: holder.lease,
            token: holder.token,
            acquired_unix_ms: holder.acquired_unix_ms,
            cause,
            forced: None,
            owner: row.owner.owner().into(),
        });
    }

    /// `name` has no holder and no delay: grants it to the head waiter with
    /// the current revision as token, or removes the lock if nobody waits.
    /// The caller has already bumped the revision for this command.
    pub(super) fn grant_next(
        &mut self,
        name: &LockName,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) {
        let token = Token(self.revision.0);
        let lock = self.locks.get(name).expect("granting a missing lock");
        assert!(lock.holder.is_none() && lock.delay.is_none());
        let Some(head) = lock.waiters.front().map(|w| w.lease) else {
            self.locks.remove(name);
            return;
        };
        if self.in_lock_set(head, name) {
            // A set is granted whole, once it heads all its queues.
            self.grant_set_if_ready(head, at_unix_ms, effects);
            return;
        }
        let lock = self.locks.get_mut(name).expect("granting a missing lock");
        let waiter = lock.waiters.pop_front().expect("a head");
        let value = waiter.metadata.get(VALUE_KEY).cloned();
        lock.holder = Some(Holder {
            lease: waiter.lease,
            token,
            acquired_unix_ms: at_unix_ms,
            fenced: waiter.fenced,
            lock_delay_ms: waiter.lock_delay_ms,
            max_hold_ms: waiter.max_hold_ms,
            metadata: waiter.metadata,
        });
        let row = self
            .leases
            .get_mut(&waiter.lease)
            .expect("waiter lease live");
        assert!(row.waits.remove(name), "waiter lease did not list the wait");
        assert!(row.holds.insert(name.clone()));
        self.auth.count(row.principal.as_ref(), |u| {
            u.waiters -= 1;
            u.held += 1;
        });
        effects.push(Effect::LockGranted {
            name: name.clone(),
            lease: waiter.lease,
            token,
            from_queue: true,
            max_hold_ms: u64::from(waiter.max_hold_ms),
            owner: row.owner.owner().to_owned(),
            value,
        });
    }
}
