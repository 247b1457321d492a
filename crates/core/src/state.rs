//! The replicated state and `apply`.
//!
//! `State` owns every table (leases, locks, the fenced store, idempotency
//! and diagnostic memories) and the revision. `apply` is the only mutator: it
//! dispatches a command to the lease, lock or fenced-store half
//! (`state/leases.rs`, `state/locks.rs`, `state/fenced.rs`) and returns what
//! happened as data. Everything is ordered (`OrdMap`, `BTreeMap`,
//! `VecDeque`), so every replica that applies the same commands reaches the
//! same state and produces the same [`Applied`] list.
//!
//! The big tables (leases, locks, grant request ids) are `imbl`'s
//! persistent B-trees: cloning the state is O(1), nodes are shared until
//! one side changes them, so the server encodes a snapshot from a copy
//! while it goes on applying (docs/DESIGN.md §6d).
//!
//! Revision rule: a command that changes lease or lock tables, or writes the
//! fenced store, bumps the revision exactly once, before any grant, so every
//! grant of that command gets `token == revision`. Keep-alives, errors and
//! no-op timers do not bump.

mod auth_apply;
mod election;
mod fenced;
mod force;
mod grant_requests;
mod invariants;
mod lease_rows;
mod leases;
mod lock_rows;
mod lock_sets;
mod locks;
mod pool_rows;
mod pools;
mod queue_leaves;
mod restore;
mod stored;
mod table_rows;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests_auth;
#[cfg(test)]
mod tests_copies;
#[cfg(test)]
mod tests_election;
#[cfg(test)]
mod tests_fenced;
#[cfg(test)]
mod tests_force;
#[cfg(test)]
mod tests_leases;
#[cfg(test)]
mod tests_lock_sets;
#[cfg(test)]
mod tests_locks;
#[cfg(test)]
mod tests_pools;
#[cfg(test)]
mod tests_timers;

use crate::auth::{Auth, Principal};
use crate::fenced::FencedStore;
use crate::{
    limits, Applied, Command, Lease, LeaseId, LeaseView, Lock, LockError, LockName, LockView,
    Outcome, Pool, Reply, RequestId, Revision, Token,
};
use imbl::OrdMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

pub use force::{ForceRelease, ForceReleaseRecord};

/// A release that failed, remembered for diagnosis (releases sent to the
/// wrong key or with a stale token are a classic incident).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedRelease {
    /// The lock the release named.
    pub name: LockName,
    /// The lease the release named.
    pub lease: LeaseId,
    /// The token the release named.
    pub token: Token,
    /// The lease's owner name at the time (empty if the lease was gone).
    pub owner: String,
    /// For a name that does not exist: existing names that look like it
    /// (shared suffix, other prefix or hash tag, small edit distance).
    pub nearby: Vec<String>,
    /// Proposer's wall time of the release (display only).
    pub at_unix_ms: u64,
    /// The error the caller was told, as text.
    pub error: String,
}

/// All leases, locks and fenced-store keys, and the revision. Stored as
/// these fields in this order (`state/stored.rs` writes them).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct State {
    /// Strictly increasing; the source of lease ids and fencing tokens.
    revision: Revision,
    /// Live leases.
    /// Boxed, as the lock rows are (see `locks`). Stored with each row's
    /// id, as before rows dropped it (`lease_rows`).
    #[serde(with = "lease_rows")]
    leases: OrdMap<LeaseId, Box<Lease>>,
    /// Locks that are held, waited for or delayed; no other lock is stored.
    /// Boxed: a B-tree leaf keeps sixteen slots, often half full, so an
    /// inline row would pay for its empty neighbours (and be copied whole
    /// when a leaf shared with a snapshot's copy changes). Stored with each
    /// row's name, as before rows dropped it (`lock_rows`).
    #[serde(with = "lock_rows")]
    locks: OrdMap<LockName, Box<Lock>>,
    /// Request id of each live lease's grant, so a retried grant finds its
    /// lease instead of creating an orphan. Bounded by `LEASES_MAX`: an entry
    /// leaves with its lease.
    grant_requests: grant_requests::GrantRequests,
    /// The last `EXPIRED_LEASES_REMEMBERED` expired lease ids, oldest first,
    /// so a late keep-alive hears "expired" rather than "not found".
    expired_order: VecDeque<LeaseId>,
    /// The same ids as `expired_order`, for lookup.
    expired: BTreeSet<LeaseId>,
    /// The last `FAILED_RELEASES_REMEMBERED` failed releases, oldest first.
    failed_releases: VecDeque<FailedRelease>,
    /// The last `REVOCATIONS_REMEMBERED` revokes that carried a request id,
    /// with their outcome: the lease (and its dedup memory) is gone, yet a
    /// retried revoke whose first reply was lost must hear the same answer.
    revocations: VecDeque<(LeaseId, RequestId, crate::Reply)>,
    /// The fenced store: key → (value, highest token, lock). Bounded by
    /// `FENCED_KEYS_MAX` and `FENCED_STORE_BYTES_MAX`; part of every snapshot.
    fenced: FencedStore,
    /// The last `FORCE_RELEASES_REMEMBERED` force releases, oldest first:
    /// the incident record of who broke which lock from whom, and why.
    force_releases: VecDeque<ForceReleaseRecord>,
    /// Roles, users, tokens, quotas with the usage they bound, and the
    /// audit trail (see [`crate::auth`]).
    auth: Auth,
    /// Semaphores and read-write locks that are held or waited for; no
    /// other is stored. Not among the fields written above: a snapshot
    /// carries them after everything else ([`State::stored_pools`]), so
    /// snapshots written before pools existed read unchanged.
    #[serde(skip)]
    pools: OrdMap<LockName, Box<Pool>>,
    /// The pools each lease holds or waits in (derived from `pools`).
    #[serde(skip)]
    pool_members: BTreeMap<LeaseId, BTreeSet<LockName>>,
    /// The sets of locks leases wait for, all or nothing (their waiters
    /// stand in each lock's queue). Stored after the pools in a snapshot
    /// ([`State::stored_lock_sets`]), as the pools are, for the same reason.
    #[serde(skip)]
    lock_sets: OrdMap<LeaseId, Vec<LockName>>,
}

impl State {
    /// Applies one command at the proposer's wall time `at_unix_ms` (display only).
    pub fn apply(&mut self, command: Command, at_unix_ms: u64) -> Applied {
        let revision_before = self.revision;
        let mut effects = Vec::new();
        let audited_from = self.auth.audit().next_seq();
        let outcome = self.apply_authorized(command, at_unix_ms, &mut effects);
        // A force release has effects of its own (`LockFreed` with `forced`).
        let audited = self.auth.audit().since(audited_from);
        let audited = audited.filter(|r| r.entry.kind != crate::auth::AuditKind::ForceRelease);
        effects.extend(audited.cloned().map(crate::Effect::Audited));
        // Negative space: the revision moves by at most one per command, and
        // a command that produced no lease, lock or fenced-store change left
        // it alone.
        assert!(self.revision.0 - revision_before.0 <= 1);
        assert!(outcome.is_ok() || self.revision == revision_before);
        Applied {
            revision: self.revision,
            outcome,
            effects,
        }
    }

    /// Applies an authorized command on behalf of `principal` (`None`:
    /// anonymous, or the server's own timers).
    fn dispatch(
        &mut self,
        command: Command,
        principal: Option<&Principal>,
        at_unix_ms: u64,
        effects: &mut Vec<crate::Effect>,
    ) -> Outcome {
        match command {
            Command::GrantLease {
                ttl_ms,
                owner,
                request_id,
            } => {
                let grant = leases::Grant {
                    ttl_ms,
                    owner,
                    request_id,
                    principal: principal.cloned(),
                };
                self.grant_lease(grant, at_unix_ms, effects)
            }
            Command::KeepAlive { lease } => self.keep_alive(lease, at_unix_ms, effects),
            Command::RevokeLease { lease, request_id } => {
                self.revoke(lease, request_id, at_unix_ms, effects)
            }
            Command::ExpireLease { lease, renewals } => {
                match self.leases.get(&lease).map(|row| row.renewals()) {
                    Some(current) if current == renewals => {
                        Ok(self.end_lease(lease, true, at_unix_ms, effects))
                    }
                    _ => Ok(crate::Reply::TimerApplied),
                }
            }
            Command::Acquire(acquire) => self.acquire(acquire, at_unix_ms, effects),
            Command::Release {
                lease,
                name,
                token,
                request_id,
            } => self.release(lease, name, token, request_id, at_unix_ms, effects),
            Command::CancelWait {
                lease,
                name,
                timed_out,
            } => Ok(self.cancel_wait(lease, &name, timed_out, at_unix_ms, effects)),
            Command::TimeOutWaits { waits } => Ok(self.time_out_waits(&waits, at_unix_ms, effects)),
            Command::AcquirePermits(acquire) => self.acquire_permits(acquire, at_unix_ms, effects),
            Command::Proclaim(proclaim) => self.proclaim(proclaim, effects),
            Command::AcquireAll(acquire) => self.acquire_all(acquire, at_unix_ms, effects),
            Command::EndLockDelay { name, token } => {
                Ok(self.end_lock_delay(&name, token, at_unix_ms, effects))
            }
            Command::EndHold { name, token } => {
                Ok(self.end_hold(&name, token, at_unix_ms, effects))
            }
            Command::FencedPut {
                lock,
                token,
                key,
                value,
                request_id,
            } => self.fenced_put(lock, token, key, value, request_id, effects),
            Command::ForceRelease { .. } => {
                let mut force = force::ForceRelease::try_from(command).expect("a force release");
                force.caller = self.recorded_caller(principal, force.caller);
                self.force_release(force, at_unix_ms, effects)
            }
            Command::Auth(change) => self.apply_auth(change, principal, at_unix_ms),
            Command::Audit(entry) => Ok(self.audit(entry, at_unix_ms)),
            Command::As { .. } => Err(LockError::invalid(
                "command",
                "a principal's command cannot wrap another",
            )),
        }
    }

    /// Advances the revision by one and returns the token a grant made by
    /// the current command receives.
    fn bump(&mut self) -> Token {
        self.revision = Revision(
            self.revision
                .0
                .checked_add(1)
                .expect("revision overflowed u64"),
        );
        Token(self.revision.0)
    }

    /// The error for a lease id that is not live: expired (recently) or not found.
    fn lease_gone(&self, lease: LeaseId) -> LockError {
        if self.expired.contains(&lease) {
            LockError::LeaseExpired { lease }
        } else {
            LockError::LeaseNotFound { lease }
        }
    }

    /// Remembers that `lease` expired, forgetting the oldest beyond the limit.
    fn remember_expired(&mut self, lease: LeaseId) {
        if self.expired.insert(lease) {
            self.expired_order.push_back(lease);
        }
        if self.expired_order.len() > limits::EXPIRED_LEASES_REMEMBERED {
            let oldest = self.expired_order.pop_front().expect("non-empty");
            self.expired.remove(&oldest);
        }
        assert_eq!(self.expired.len(), self.expired_order.len());
    }

    /// The outcome a lease remembers for `request_id`, if any.
    fn remembered(&self, lease: LeaseId, request_id: &Option<RequestId>) -> Option<Outcome> {
        let id = request_id.as_ref()?;
        self.leases.get(&lease)?.dedup.get(id)
    }

    /// Records `outcome` under `request_id` in the lease's dedup memory (if
    /// the lease is still live and the request carried an id). `Queued` is
    /// not an outcome but a step: a retried acquire re-reads the state
    /// (already held, still queued, or queue again), so a retry after the
    /// first wait was cancelled does not replay a queue position that no
    /// longer exists.
    fn remember(&mut self, lease: LeaseId, request_id: Option<RequestId>, outcome: &Outcome) {
        if matches!(outcome, Ok(Reply::Queued { .. })) {
            return;
        }
        if let (Some(id), Some(row)) = (request_id, self.leases.get_mut(&lease)) {
            row.dedup.remember(id, outcome.clone());
        }
    }

    /// Runs `fresh` for a request of `lease` seen for the first time: a
    /// lease that is not live is refused, a request id seen before gets its
    /// first outcome back, and the new outcome is remembered under the id
    /// (see [`State::remember`]), unless it is `InvalidArgument`, which is
    /// never remembered: it says the request does not fit the state now
    /// (the name is something else), and a retry may find it does.
    fn once(
        &mut self,
        lease: LeaseId,
        request_id: Option<RequestId>,
        fresh: impl FnOnce(&mut State) -> Outcome,
    ) -> Outcome {
        if !self.leases.contains_key(&lease) {
            return Err(self.lease_gone(lease));
        }
        if let Some(first) = self.remembered(lease, &request_id) {
            return first;
        }
        let outcome = fresh(self);
        if !matches!(outcome, Err(LockError::InvalidArgument { .. })) {
            self.remember(lease, request_id, &outcome);
        }
        outcome
    }

    /// Existing lock names that look like `wanted` (for NoSuchLock errors).
    pub fn nearby_names(&self, wanted: &LockName) -> Vec<String> {
        crate::nearby::nearby_names(&self.locks, wanted.as_str())
    }

    /// The current revision.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// A live lease.
    pub fn lease(&self, id: LeaseId) -> Option<LeaseView<'_>> {
        self.leases.get(&id).map(|lease| LeaseView::new(id, lease))
    }

    /// All live leases, by id.
    pub fn leases(&self) -> impl Iterator<Item = LeaseView<'_>> {
        self.leases
            .iter()
            .map(|(id, lease)| LeaseView::new(*id, lease))
    }

    /// What `lease` holds, with the tokens: its locks in name order, then
    /// its grants of semaphores and read-write locks in name order (nothing
    /// for a lease that is not live).
    pub fn held_by(&self, lease: LeaseId) -> impl Iterator<Item = (&LockName, Token)> + '_ {
        let names = self.leases.get(&lease).map(|row| row.holds.iter());
        let locks = names.into_iter().flatten().map(move |name| {
            let holder = self.locks.get(name).and_then(|l| l.holder.as_ref());
            let holder = holder.expect("a lease lists a lock it holds");
            assert_eq!(holder.lease, lease, "a lease lists a lock another holds");
            (name, holder.token)
        });
        locks.chain(self.pool_grants(lease))
    }

    /// Number of live leases.
    pub fn lease_count(&self) -> usize {
        self.leases.len()
    }

    /// A lock that is held, waited for or delayed.
    pub fn lock(&self, name: &LockName) -> Option<LockView<'_>> {
        let (name, lock) = self.locks.get_key_value(name)?;
        Some(LockView::new(name, lock))
    }

    /// All locks that are held, waited for or delayed, in name order.
    pub fn locks(&self) -> impl Iterator<Item = LockView<'_>> {
        self.locks
            .iter()
            .map(|(name, lock)| LockView::new(name, lock))
    }

    /// Number of locks that are held, waited for or delayed.
    pub fn lock_count(&self) -> usize {
        self.locks.len()
    }

    /// Locks in their lock delay, in name order (a new leader re-arms their
    /// `EndLockDelay` timers from this).
    pub fn delayed_locks(&self) -> impl Iterator<Item = LockView<'_>> {
        self.locks().filter(|lock| lock.delay.is_some())
    }

    /// Locks whose name starts with `prefix` (byte-wise), in name order.
    pub fn locks_with_prefix<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = LockView<'a>> + 'a {
        self.locks
            .range::<_, str>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .take_while(move |(name, _)| name.as_str().starts_with(prefix))
            .map(|(name, lock)| LockView::new(name, lock))
    }

    /// Recent failed releases, oldest first (at most
    /// [`limits::FAILED_RELEASES_REMEMBERED`]).
    pub fn failed_releases(&self) -> impl DoubleEndedIterator<Item = &FailedRelease> {
        self.failed_releases.iter()
    }

    /// Whether `lease` is among the recently expired leases.
    pub fn recently_expired(&self, lease: LeaseId) -> bool {
        self.expired.contains(&lease)
    }

    /// Settles a state just decoded: the grant requests are filed again
    /// from the lease rows (a stored table may disagree with them, see
    /// `GrantRequests::of_rows`), and every lease's lock names share their
    /// text with the lock table's keys (decoding gives each name its own
    /// copy; a snapshot of a million held locks would otherwise load with
    /// their names twice). Call after decoding a state.
    pub fn settle_decoded(&mut self) {
        self.grant_requests = grant_requests::GrantRequests::of_rows(&self.leases);
        let ids: Vec<LeaseId> = self.leases.keys().copied().collect();
        for id in ids {
            let lease = self.leases.get_mut(&id).expect("a listed lease");
            lease.holds.share_keys_of(&self.locks);
            lease.waits.share_keys_of(&self.locks);
        }
    }
}
