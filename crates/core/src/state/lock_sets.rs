//! The lock-set half of `apply`: several locks at once, all or nothing
//! (see [`crate::lock_set`]). A set waits as one waiter in each of its
//! locks' queues; `lock_sets` says which queued waiters belong to a set.
//! A lock row with neither holder nor delay exists only while a set heads
//! its queue and waits for its other locks (the lock is kept for it).

use super::State;
use crate::lock::term_ms;
use crate::{
    AcquireAll, Effect, Holder, LeaseId, Lock, LockError, LockName, Outcome, Reply, Token,
    WaitQueue, Waiter,
};

impl State {
    /// Acquires every lock of `a.names` for `a.lease`, or queues for all,
    /// or reports the first busy one.
    pub(super) fn acquire_all(
        &mut self,
        a: AcquireAll,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Outcome {
        a.validate()?;
        let (lease, request_id) = (a.lease, a.request_id.clone());
        self.once(lease, request_id, |state| {
            for name in &a.names {
                state.check_kind(name, None)?;
            }
            state.acquire_all_fresh(a, at_unix_ms, effects)
        })
    }

    /// `acquire_all` for a request not seen before, of names that are free
    /// or locks.
    fn acquire_all_fresh(
        &mut self,
        a: AcquireAll,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Outcome {
        if let Some(answer) = self.asked_before(&a)? {
            return Ok(answer);
        }
        let busy = a.names.iter().find(|name| self.locks.contains_key(*name));
        if let (Some(name), 0) = (busy, a.wait_ms) {
            let holder = self.locks[name].holder.as_ref();
            return Err(LockError::Busy {
                name: name.clone(),
                holder_token: holder.map(|h| h.token),
            });
        }
        self.check_set_room(&a, busy.is_some())?;
        if busy.is_none() {
            return Ok(self.grant_all_free(a, at_unix_ms, effects));
        }
        Ok(self.enqueue_set(a, at_unix_ms, effects))
    }

    /// The answer to an ask the state already reflects: the lease holds
    /// the whole set (a retry after the grant) or waits for it (a retry
    /// while queued). A lease that holds or waits for part of it, or waits
    /// for another set, is refused: a set is taken whole, one per lease.
    fn asked_before(&self, a: &AcquireAll) -> Result<Option<Reply>, LockError> {
        let row = &self.leases[&a.lease];
        let held: Vec<Token> = a
            .names
            .iter()
            .filter_map(|name| {
                let holder = self.locks.get(name)?.holder.as_ref()?;
                (holder.lease == a.lease).then_some(holder.token)
            })
            .collect();
        if held.len() == a.names.len() {
            return Ok(Some(Reply::AcquiredAll {
                tokens: held,
                already_held: true,
            }));
        }
        if let Some(waiting) = self.lock_sets.get(&a.lease) {
            let same =
                waiting.len() == a.names.len() && a.names.iter().all(|n| waiting.contains(n));
            if same {
                let position = self.set_position(a.lease, waiting);
                return Ok(Some(Reply::Queued { position }));
            }
            return Err(LockError::invalid(
                "names",
                format!(
                    "lease {} already waits for another set of locks; a lease waits for one set at a time",
                    a.lease
                ),
            ));
        }
        let taken = a
            .names
            .iter()
            .find(|name| row.holds.contains(name) || row.waits.contains(name));
        if let Some(name) = taken {
            return Err(LockError::invalid(
                "names",
                format!(
                    "lease {} already holds or waits for {name}; release it, or leave it out of the set",
                    a.lease
                ),
            ));
        }
        Ok(None)
    }

    /// The furthest from the head the set stands in any of its queues.
    fn set_position(&self, lease: LeaseId, names: &[LockName]) -> u32 {
        let position = |name: &LockName| {
            let lock = &self.locks[name];
            lock.waiters
                .iter()
                .position(|w| w.lease == lease)
                .map_or(0, |p| p + 1)
        };
        names.iter().map(position).max().unwrap_or(0) as u32
    }

    /// The room a set needs: every name counts against the lease's and its
    /// principal's limits, as that many acquires would.
    fn check_set_room(&self, a: &AcquireAll, queued: bool) -> Result<(), LockError> {
        let row = &self.leases[&a.lease];
        let in_use = row.holds.len() + row.waits.len() + self.pool_memberships(a.lease);
        let max = crate::limits::LOCKS_PER_LEASE_MAX;
        if in_use + a.names.len() > max {
            return Err(LockError::exhausted(
                crate::limits::Limit::LocksPerLeaseMax,
                format!(
                    "lease {} holds or waits for {in_use} locks and asks for {} more",
                    a.lease,
                    a.names.len()
                ),
            ));
        }
        for name in &a.names {
            let queue = queued.then(|| self.locks.get(name).map_or(0, |l| l.waiters.len()));
            self.check_room(a.lease, name, queue)?;
        }
        Ok(())
    }

    /// Grants every lock of the set (all free), under one token.
    fn grant_all_free(
        &mut self,
        a: AcquireAll,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Reply {
        let token = self.bump();
        for name in &a.names {
            let holder = Holder {
                lease: a.lease,
                token,
                acquired_unix_ms: at_unix_ms,
                fenced: a.fenced,
                lock_delay_ms: 0,
                max_hold_ms: 0,
                metadata: Default::default(),
            };
            let lock = Lock {
                holder: Some(holder),
                waiters: WaitQueue::default(),
                delay: None,
            };
            assert!(self.locks.insert(name.clone(), Box::new(lock)).is_none());
            self.took(a.lease, name, token, false, effects);
        }
        Reply::AcquiredAll {
            tokens: vec![token; a.names.len()],
            already_held: false,
        }
    }

    /// Files `name` as held by `lease` under `token` (its row already says
    /// so), counts it, and reports the grant.
    fn took(
        &mut self,
        lease: LeaseId,
        name: &LockName,
        token: Token,
        from_queue: bool,
        effects: &mut Vec<Effect>,
    ) {
        let row = self.leases.get_mut(&lease).expect("live lease");
        if from_queue {
            assert!(
                row.waits.remove(name),
                "a set member lease did not list its wait"
            );
        }
        assert!(row.holds.insert(name.clone()));
        self.auth.count(row.principal.as_ref(), |u| {
            if from_queue {
                u.waiters -= 1;
            }
            u.held += 1;
        });
        effects.push(Effect::LockGranted {
            name: name.clone(),
            lease,
            token,
            from_queue,
            max_hold_ms: 0,
            owner: row.owner.owner().to_owned(),
            value: None,
        });
    }

    /// Queues the set at the back of each of its locks; a free one gets a
    /// row with the set at its head (kept for it).
    fn enqueue_set(&mut self, a: AcquireAll, at_unix_ms: u64, effects: &mut Vec<Effect>) -> Reply {
        self.bump();
        for name in &a.names {
            let waiter = Waiter {
                lease: a.lease,
                since_unix_ms: at_unix_ms,
                wait_ms: a.wait_ms,
                fenced: a.fenced,
                lock_delay_ms: term_ms(0),
                max_hold_ms: term_ms(0),
                metadata: Default::default(),
            };
            let mut lock = self.locks.remove(name).unwrap_or_else(|| {
                Box::new(Lock {
                    holder: None,
                    waiters: WaitQueue::default(),
                    delay: None,
                })
            });
            lock.waiters.push_back(waiter);
            self.locks.insert(name.clone(), lock);
            let row = self.leases.get_mut(&a.lease).expect("live lease");
            assert!(row.waits.insert(name.clone()));
            self.auth.count(row.principal.as_ref(), |u| u.waiters += 1);
            effects.push(Effect::WaiterQueued {
                name: name.clone(),
                lease: a.lease,
                wait_ms: a.wait_ms,
            });
        }
        let position = self.set_position(a.lease, &a.names);
        self.lock_sets.insert(a.lease, a.names);
        Reply::Queued { position }
    }

    /// How many sets of locks are waited for.
    pub fn lock_set_count(&self) -> usize {
        self.lock_sets.len()
    }

    /// Whether `lease` waits for `name` as a member of a set.
    pub(super) fn in_lock_set(&self, lease: LeaseId, name: &LockName) -> bool {
        self.lock_sets
            .get(&lease)
            .is_some_and(|names| names.contains(name))
    }

    /// The set of `lease` heads every queue of its locks, all free: grants
    /// them all, under the current revision (the caller bumped it).
    /// Otherwise it keeps waiting (and the free locks it heads stay kept).
    pub(super) fn grant_set_if_ready(
        &mut self,
        lease: LeaseId,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) {
        let Some(names) = self.lock_sets.get(&lease) else {
            return;
        };
        let ready = names.iter().all(|name| {
            let lock = &self.locks[name];
            lock.holder.is_none()
                && lock.delay.is_none()
                && lock.waiters.front().is_some_and(|w| w.lease == lease)
        });
        if !ready {
            return;
        }
        let names = self.lock_sets.remove(&lease).expect("checked above");
        let token = Token(self.revision.0);
        for name in names.iter() {
            let lock = self.locks.get_mut(name).expect("a set's lock");
            let waiter = lock.waiters.pop_front().expect("the set heads it");
            lock.holder = Some(Holder {
                lease,
                token,
                acquired_unix_ms: at_unix_ms,
                fenced: waiter.fenced,
                lock_delay_ms: waiter.lock_delay_ms,
                max_hold_ms: waiter.max_hold_ms,
                metadata: waiter.metadata,
            });
            self.took(lease, name, token, true, effects);
        }
    }

    /// Forgets the set `lease` waits for, if any, and returns its names
    /// (the caller takes the lease out of each queue).
    pub(super) fn forget_lock_set(&mut self, lease: LeaseId) -> Vec<LockName> {
        self.lock_sets.remove(&lease).unwrap_or_default()
    }

    /// Every set waits, with a live lease, in each of its locks' queues; a
    /// lock with neither holder nor delay is headed by a set that waits
    /// for another of its locks.
    pub(super) fn check_lock_sets(&self) -> Result<(), String> {
        for (lease, names) in &self.lock_sets {
            let Some(row) = self.leases.get(lease) else {
                return Err(format!("the set of lease {lease} outlived it"));
            };
            for name in names.iter() {
                let queued = self
                    .locks
                    .get(name)
                    .is_some_and(|l| l.waiters.iter().any(|w| w.lease == *lease));
                if !queued || !row.waits.contains(name) {
                    return Err(format!("the set of lease {lease} is not queued on {name}"));
                }
            }
        }
        for (name, lock) in &self.locks {
            if lock.holder.is_some() || lock.delay.is_some() {
                continue;
            }
            let Some(head) = lock.waiters.front() else {
                return Err(format!("lock {name} has neither holder, delay nor waiter"));
            };
            if !self.in_lock_set(head.lease, name) {
                return Err(format!(
                    "lock {name} is free, and its head {} waits alone",
                    head.lease
                ));
            }
        }
        Ok(())
    }

    /// The sets waiting, for a snapshot (stored after the pools).
    pub fn stored_lock_sets(&self) -> Vec<(LeaseId, Vec<LockName>)> {
        self.lock_sets
            .iter()
            .map(|(lease, names)| (*lease, names.clone()))
            .collect()
    }

    /// Puts back the sets a snapshot stored ([`State::stored_lock_sets`]).
    pub fn restore_lock_sets(&mut self, sets: Vec<(LeaseId, Vec<LockName>)>) {
        self.lock_sets = sets.into_iter().collect();
    }
}
