//! The semaphore and read-write lock half of `apply` (see [`crate::pool`]
//! and [`crate::permits`]): asks for permits, releases, waits that end, and
//! what a lease's end frees.
//!
//! The replies and effects are the locks': an ask is answered `Acquired`
//! or `Queued`, a release `Released`; a grant is `LockGranted`, a freed
//! grant `LockFreed`, a wait `WaiterQueued` / `WaiterRemoved`, so the
//! server's sinks (waking a queued caller, wait deadlines, events, lines,
//! metrics) serve pools unchanged. A grant counts once against a lease's
//! and a principal's holds, whatever its number of permits; a wait once
//! against their waits.
//!
//! The revision rule holds: a command that grants, queues or frees bumps
//! the revision once, before any grant, and every grant it makes carries
//! that revision as its token.

use super::State;
use crate::outcome::{FreeCause, WaitEndCause};
use crate::permits::{Ask, Asked, PermitHold, PermitRefusal, Stamp};
use crate::{
    AcquirePermits, Effect, LeaseId, LockError, LockName, Outcome, PermitAsk, Reply, Token,
};
use std::sync::Arc;

impl State {
    /// Asks for `a.ask`'s permits of `a.name` for `a.lease`, or queues, or
    /// reports them busy. A refusal as an invalid argument (the name is
    /// something else, the lease asked for another count) is not
    /// remembered for the request id, as `InvalidArgument` never is: the
    /// name may be free for this use when the request is retried.
    pub(super) fn acquire_permits(
        &mut self,
        a: AcquirePermits,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Outcome {
        a.validate()?;
        let (lease, request_id) = (a.lease, a.request_id.clone());
        self.once(lease, request_id, |state| {
            state.check_kind(&a.name, Some(a.ask))?;
            state.acquire_permits_fresh(a, at_unix_ms, effects)
        })
    }

    /// Refuses to acquire `name` as `asked` (a lock: `None`) while it is
    /// something else: a lock, a pool of another kind, or a semaphore of
    /// another size. The one check both kinds of acquire make.
    pub(super) fn check_kind(
        &self,
        name: &LockName,
        asked: Option<PermitAsk>,
    ) -> Result<(), LockError> {
        let pool = self.pools.get(name);
        let is = match pool {
            Some(pool) => pool.kind.to_string(),
            None if self.locks.contains_key(name) => "a lock".to_owned(),
            None => return Ok(()),
        };
        let wanted = asked.map_or("a lock".to_owned(), |ask| ask.kind().to_string());
        if is != wanted {
            let reason = format!(
                "{name} is {is} now, not {wanted}: ask for it as what it is, or use another name"
            );
            return Err(LockError::invalid("name", reason));
        }
        match (pool, asked) {
            (Some(pool), Some(PermitAsk::Semaphore { permits, .. }))
                if permits != pool.permits.permits() =>
            {
                let has = pool.permits.permits();
                let reason = format!("semaphore {name} has {has} permits, not {permits}: ask with a limit of {has}, or use another name");
                Err(LockError::invalid("permits", reason))
            }
            _ => Ok(()),
        }
    }

    /// `acquire_permits` for a request not seen before, of a name that is
    /// free or a pool of the ask's kind and size.
    fn acquire_permits_fresh(
        &mut self,
        a: AcquirePermits,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Outcome {
        let mut pool = match self.pools.remove(&a.name) {
            Some(pool) => pool,
            None => Box::new(a.ask.new_pool()?),
        };
        let count = a.ask.count(&pool.permits);
        let member = self.is_pool_member(a.lease, &a.name);
        let would_queue = !pool.permits.fits_now(count) && a.wait_ms > 0;
        let queue = would_queue.then(|| pool.permits.waiters().len());
        let room = match member {
            true => Ok(()),
            false => self.check_room(a.lease, &a.name, queue),
        };
        if let Err(error) = room {
            self.put_back(&a.name, pool);
            return Err(error);
        }
        let stamp = Stamp {
            token: Token(self.revision.0 + 1),
            at_unix_ms,
        };
        let ask = Ask {
            lease: a.lease,
            count,
            wait_ms: a.wait_ms,
            fenced: a.fenced,
        };
        let asked = pool.permits.ask(ask, stamp);
        let busy_token = pool.permits.holds().last().map(|h| h.token);
        self.put_back(&a.name, pool);
        match asked {
            Ok(Asked::Granted {
                token,
                already_held: false,
            }) => {
                assert_eq!(self.bump(), token);
                self.joined(a.lease, &a.name, |u| u.held += 1);
                let owner = self.owner_of(a.lease);
                effects.push(granted(&a.name, a.lease, token, false, owner));
                Ok(Reply::Acquired {
                    token,
                    already_held: false,
                })
            }
            Ok(Asked::Granted { token, .. }) => Ok(Reply::Acquired {
                token,
                already_held: true,
            }),
            Ok(Asked::Queued { position }) if !member => {
                self.bump();
                self.joined(a.lease, &a.name, |u| u.waiters += 1);
                effects.push(Effect::WaiterQueued {
                    name: a.name,
                    lease: a.lease,
                    wait_ms: a.wait_ms,
                });
                Ok(Reply::Queued { position })
            }
            Ok(Asked::Queued { position }) => Ok(Reply::Queued { position }),
            Err(PermitRefusal::Busy { .. }) => Err(LockError::Busy {
                name: a.name,
                holder_token: busy_token,
            }),
            Err(refusal) => Err(LockError::invalid("count", refusal.to_string())),
        }
    }

    /// Releases the grant (`lease`, `token`) of the pool `name` (a
    /// `Release` of a name that is a pool); the waiters it lets in are
    /// granted under this command's token.
    pub(super) fn release_permits(
        &mut self,
        lease: LeaseId,
        name: &LockName,
        token: Token,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Outcome {
        let pool = self.pools.get_mut(name).expect("releasing a missing pool");
        let hold = pool.permits.release(lease, token).map_err(|_| {
            let holder_token = pool.permits.holds().iter().find(|h| h.lease == lease);
            LockError::NotHolder {
                name: name.clone(),
                lease: Some(lease),
                token,
                holder_token: holder_token.map(|h| h.token),
            }
        })?;
        self.bump();
        self.left(lease, name, |u| u.held -= 1);
        let owner = self.owner_of(lease);
        effects.push(freed_effect(name, hold, FreeCause::Released, owner));
        self.grant_waiting(name, at_unix_ms, effects);
        Ok(Reply::Released)
    }

    /// Takes `lease` out of the pool `name`'s queue, without moving the
    /// revision; whether it was queued. The caller bumps, then calls
    /// [`State::grant_waiting`]: the asks behind it may fit now.
    pub(super) fn leave_pool_queue(
        &mut self,
        lease: LeaseId,
        name: &LockName,
        timed_out: bool,
        effects: &mut Vec<Effect>,
    ) -> bool {
        let Some(pool) = self.pools.get_mut(name) else {
            return false;
        };
        if !pool.permits.cancel_wait(lease) {
            return false;
        }
        self.left(lease, name, |u| u.waiters -= 1);
        let cause = match timed_out {
            true => WaitEndCause::TimedOut,
            false => WaitEndCause::Cancelled,
        };
        let owner = self.owner_of(lease).to_string();
        effects.push(Effect::WaiterRemoved {
            name: name.clone(),
            lease,
            cause,
            owner,
        });
        true
    }

    /// Grants the pool `name`'s waiters from the head while they fit,
    /// under the current revision (the caller bumped it); drops the pool
    /// if nobody holds or waits. Nothing for a name that is not a pool.
    pub(super) fn grant_waiting(
        &mut self,
        name: &LockName,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) {
        let free_lock = self
            .locks
            .get(name)
            .map(|l| l.holder.is_none() && l.delay.is_none());
        if free_lock == Some(true) {
            // A lock a set kept that its head left: the next head's turn.
            return self.grant_next(name, at_unix_ms, effects);
        }
        let Some(mut pool) = self.pools.remove(name) else {
            return;
        };
        let stamp = Stamp {
            token: Token(self.revision.0),
            at_unix_ms,
        };
        for hold in pool.permits.grant_waiting(stamp) {
            let row = self
                .leases
                .get(&hold.lease)
                .expect("a waiter's lease is live");
            self.auth.count(row.principal.as_ref(), |u| {
                u.waiters -= 1;
                u.held += 1;
            });
            let owner = self.owner_of(hold.lease);
            effects.push(granted(name, hold.lease, hold.token, true, owner));
        }
        self.put_back(name, pool);
    }

    /// The ended `lease` (its row already gone, its usage already taken
    /// off) leaves every pool it held or waited in; the waiters that fit
    /// then are granted under this command's token. Returns the names of
    /// the pools whose grants it freed.
    pub(super) fn end_pool_memberships(
        &mut self,
        (lease, owner): (LeaseId, &Arc<str>),
        (free_cause, wait_cause): (FreeCause, WaitEndCause),
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Vec<LockName> {
        let names = self.pool_members.remove(&lease).unwrap_or_default();
        let mut freed = Vec::new();
        for name in names {
            let pool = self.pools.get_mut(&name).expect("a member's pool");
            let (held, waited) = pool.permits.leave(lease);
            assert!(held.is_some() != waited, "a lease holds or waits in a pool");
            if let Some(hold) = held {
                effects.push(freed_effect(&name, hold, free_cause, Arc::clone(owner)));
            } else {
                effects.push(Effect::WaiterRemoved {
                    name: name.clone(),
                    lease,
                    cause: wait_cause,
                    owner: owner.to_string(),
                });
            }
            self.grant_waiting(&name, at_unix_ms, effects);
            if held.is_some() {
                freed.push(name);
            }
        }
        freed
    }

    fn owner_of(&self, lease: LeaseId) -> Arc<str> {
        let row = self.leases.get(&lease).expect("a live lease");
        row.owner.owner().into()
    }
}

fn granted(
    name: &LockName,
    lease: LeaseId,
    token: Token,
    from_queue: bool,
    owner: Arc<str>,
) -> Effect {
    Effect::LockGranted {
        name: name.clone(),
        lease,
        token,
        from_queue,
        max_hold_ms: 0,
        owner: owner.to_string(),
        value: None,
    }
}

fn freed_effect(name: &LockName, hold: PermitHold, cause: FreeCause, owner: Arc<str>) -> Effect {
    Effect::LockFreed {
        name: name.clone(),
        lease: hold.lease,
        token: hold.token,
        acquired_unix_ms: hold.acquired_unix_ms,
        cause,
        forced: None,
        owner,
    }
}
