//! The lease half of `apply`: grant, keep-alive, and the end of a lease
//! (revoke or expiry), which releases everything the lease held or waited for.

use super::State;
use crate::auth::{Principal, QuotaKind};
use crate::outcome::{FreeCause, WaitEndCause};
use crate::{
    command, limits, Effect, Lease, LeaseId, LockDelay, LockError, LockName, Outcome, OwnerInfo,
    Reply, RequestId,
};
use std::sync::Arc;

/// The arguments of a lease grant, gathered.
pub(super) struct Grant {
    pub ttl_ms: u64,
    pub owner: OwnerInfo,
    pub request_id: Option<RequestId>,
    /// Who asked (recorded on the lease; its quota bounds the grant).
    pub principal: Option<Principal>,
}

impl State {
    /// Grants a lease whose id is the new revision, or finds the lease a
    /// retried grant (same request id) created.
    pub(super) fn grant_lease(
        &mut self,
        grant: Grant,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Outcome {
        let Grant {
            ttl_ms,
            owner,
            request_id,
            principal,
        } = grant;
        // The server validates before proposing; checking again keeps a
        // malformed log entry from ever reaching the tables.
        command::check_ttl(ttl_ms)?;
        owner.validate()?;
        if let Some(lease) = request_id
            .as_ref()
            .and_then(|id| self.grant_requests.find(id, &self.leases))
        {
            return Ok(Reply::LeaseGranted {
                lease,
                ttl_ms: self.leases[&lease].ttl_ms(),
            });
        }
        if self.leases.len() >= limits::LEASES_MAX {
            return Err(LockError::exhausted(
                limits::Limit::LeasesMax,
                format!("{} leases are live", self.leases.len()),
            ));
        }
        self.auth
            .check_quota(principal.as_ref(), QuotaKind::Leases, |u| u.leases)?;
        let revision = self.bump();
        let id = LeaseId(revision.0);
        assert!(!self.leases.contains_key(&id), "lease id reused");
        if let Some(request_id) = &request_id {
            self.grant_requests.insert(request_id, id);
        }
        let lease = Lease::granted(ttl_ms, owner.into(), at_unix_ms, request_id, principal);
        self.auth.count(lease.principal.as_ref(), |u| u.leases += 1);
        let owner = lease.owner.owner().to_owned();
        self.leases.insert(id, Box::new(lease));
        effects.push(Effect::LeaseRenewed {
            lease: id,
            ttl_ms,
            renewals: 0,
            owner,
            held: Vec::new(),
            holds: 0,
        });
        Ok(Reply::LeaseGranted { lease: id, ttl_ms })
    }

    /// Records a renewal of a live lease. Does not bump the revision: a
    /// renewal changes no lock and no token.
    pub(super) fn keep_alive(
        &mut self,
        lease: LeaseId,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Outcome {
        let Some(row) = self.leases.get_mut(&lease) else {
            return Err(self.lease_gone(lease));
        };
        row.renewed(at_unix_ms);
        let (ttl_ms, renewals) = (row.ttl_ms(), row.renewals());
        let owner = row.owner.owner().to_owned();
        let held = self.held_by(lease);
        let held = held
            .take(crate::outcome::RENEWAL_NAMES_LOGGED)
            .map(|(n, t)| (n.clone(), t));
        let held = held.collect();
        let holds = self.leases.get(&lease).map_or(0, |row| row.holds.len());
        let holds = holds + self.pool_grants(lease).count();
        effects.push(Effect::LeaseRenewed {
            lease,
            ttl_ms,
            renewals,
            owner,
            held,
            holds,
        });
        Ok(Reply::KeptAlive { lease, ttl_ms })
    }

    /// Revokes a live lease; a retried revoke (same request id) of a lease
    /// already revoked gets the first outcome again.
    pub(super) fn revoke(
        &mut self,
        lease: LeaseId,
        request_id: Option<RequestId>,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Outcome {
        if !self.leases.contains_key(&lease) {
            let first = request_id.as_ref().and_then(|id| {
                self.revocations
                    .iter()
                    .find(|(l, r, _)| *l == lease && r == id)
                    .map(|(_, _, reply)| reply.clone())
            });
            return first.ok_or_else(|| self.lease_gone(lease));
        }
        let reply = self.end_lease(lease, false, at_unix_ms, effects);
        if let Some(id) = request_id {
            if self.revocations.len() == limits::REVOCATIONS_REMEMBERED {
                self.revocations.pop_front();
            }
            self.revocations.push_back((lease, id, reply.clone()));
        }
        Ok(reply)
    }

    /// Ends a live lease (revoked, or `expired` by the leader's timer):
    /// frees its locks (starting lock delays on expiry), leaves its queues,
    /// and forgets its request ids.
    pub(super) fn end_lease(
        &mut self,
        lease: LeaseId,
        expired: bool,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Reply {
        self.bump();
        let row = self
            .leases
            .remove(&lease)
            .expect("end_lease of a dead lease");
        if let Some(request_id) = &row.grant_request_id {
            let removed = self.grant_requests.remove(request_id, lease);
            assert!(removed, "a live lease's grant request is recorded");
        }
        let (pool_held, pool_waiting) = self.pool_usage(lease);
        let held = row.holds.len() as u64 + pool_held;
        let waiting = row.waits.len() as u64 + pool_waiting;
        self.auth.count(row.principal.as_ref(), |u| {
            u.leases -= 1;
            u.held -= held;
            u.waiters -= waiting;
        });
        let (free_cause, wait_cause) = match expired {
            true => (FreeCause::LeaseExpired, WaitEndCause::LeaseExpired),
            false => (FreeCause::LeaseRevoked, WaitEndCause::LeaseRevoked),
        };
        let owner: Arc<str> = row.owner.owner().into();
        // One effect per wait and per held lock, at least: grown once, not
        // doubled ten times for a thousand locks.
        effects.reserve(row.waits.len() + row.holds.len() + 1);
        self.forget_lock_set(lease);
        for name in &row.waits {
            self.drop_waiter(name, lease, &owner, wait_cause, effects);
        }
        for name in &row.holds {
            let ended = (lease, &owner, free_cause);
            self.free_by_lease_end(name, ended, at_unix_ms, effects);
        }
        // A lock a set of this lease kept (its head, with neither holder
        // nor delay) goes to the next head.
        for name in &row.waits {
            let free = self
                .locks
                .get(name)
                .map(|l| l.holder.is_none() && l.delay.is_none());
            if free == Some(true) {
                self.grant_next(name, at_unix_ms, effects);
            }
        }
        let causes = (free_cause, wait_cause);
        let pools = self.end_pool_memberships((lease, &owner), causes, at_unix_ms, effects);
        if expired {
            self.remember_expired(lease);
        }
        effects.push(Effect::LeaseEnded { lease, expired });
        let mut released = row.holds.into_vec();
        released.extend(pools);
        Reply::LeaseEnded { released }
    }

    /// Frees `name`, held by the ending `lease`: on expiry with a lock
    /// delay the lock stays unavailable; otherwise the head waiter gets it.
    /// `ended` is the lease, its owner name and why it ended.
    fn free_by_lease_end(
        &mut self,
        name: &LockName,
        ended: (LeaseId, &Arc<str>, FreeCause),
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) {
        let (lease, owner, cause) = ended;
        // Taken out rather than looked up: most freed rows go for good, and
        // one walk of the table is half the work of two. A row that stays
        // (delayed, or queued for) goes back.
        let mut lock = self.locks.remove(name).expect("held lock missing");
        let holder = lock.holder.take().expect("held lock has no holder");
        assert_eq!(holder.lease, lease, "lease listed a lock it does not hold");
        assert!(lock.delay.is_none(), "a held lock is never delayed");
        assert!(holder.token.0 < self.revision.0, "token not below revision");
        effects.push(Effect::LockFreed {
            name: name.clone(),
            lease,
            token: holder.token,
            acquired_unix_ms: holder.acquired_unix_ms,
            cause,
            forced: None,
            owner: Arc::clone(owner),
        });
        if cause == FreeCause::LeaseExpired && holder.lock_delay_ms > 0 {
            lock.delay = Some(Box::new(LockDelay {
                token: holder.token,
                delay_ms: u64::from(holder.lock_delay_ms),
                since_unix_ms: at_unix_ms,
            }));
            effects.push(Effect::LockDelayStarted {
                name: name.clone(),
                token: holder.token,
                delay_ms: u64::from(holder.lock_delay_ms),
            });
            self.locks.insert(name.clone(), lock);
        } else if !lock.waiters.is_empty() {
            self.locks.insert(name.clone(), lock);
            self.grant_next(name, at_unix_ms, effects);
        }
    }

    /// Removes the ended `lease` from `name`'s queue (the lease row is
    /// already gone). A lock left with neither holder nor delay (a set of
    /// this lease kept it) is granted on by the caller.
    fn drop_waiter(
        &mut self,
        name: &LockName,
        lease: LeaseId,
        owner: &str,
        cause: WaitEndCause,
        effects: &mut Vec<Effect>,
    ) {
        let lock = self.locks.get_mut(name).expect("waited-for lock missing");
        let before = lock.waiters.len();
        lock.waiters.retain(|waiter| waiter.lease != lease);
        assert_eq!(
            lock.waiters.len() + 1,
            before,
            "lease listed a wait it lacks"
        );
        effects.push(Effect::WaiterRemoved {
            name: name.clone(),
            lease,
            cause,
            owner: owner.to_owned(),
        });
    }
}
