//! How the state keeps its semaphores and read-write locks: the accessors
//! readers use, the snapshot's trailing table and its restore, the index
//! of each lease's pools (`pool_members`, derived, never stored) with the
//! usage counts it feeds, and the invariants of both.
//!
//! **Why the table is stored after everything else**: a snapshot is the
//! state's fields in a fixed order, with no room for a field added later;
//! the pools go at the very end of the snapshot (`storage::state_machine`
//! in the server), so a snapshot written before they existed simply ends
//! without them and reads as having none.

use super::State;
use crate::{LeaseId, LockName, Pool, PoolView, Token};
use imbl::OrdMap;
use serde::Serialize;

impl State {
    /// A semaphore or read-write lock that is held or waited for.
    pub fn pool(&self, name: &LockName) -> Option<PoolView<'_>> {
        let (name, pool) = self.pools.get_key_value(name)?;
        Some(PoolView { name, pool })
    }

    /// All semaphores and read-write locks held or waited for, in name
    /// order.
    pub fn pools(&self) -> impl Iterator<Item = PoolView<'_>> {
        self.pools
            .iter()
            .map(|(name, pool)| PoolView { name, pool })
    }

    /// Number of semaphores and read-write locks held or waited for.
    pub fn pool_count(&self) -> usize {
        self.pools.len()
    }

    /// Pools whose name starts with `prefix` (byte-wise), in name order.
    pub fn pools_with_prefix<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = PoolView<'a>> + 'a {
        let from = (
            std::ops::Bound::Included(prefix),
            std::ops::Bound::Unbounded,
        );
        self.pools
            .range::<_, str>(from)
            .take_while(move |(name, _)| name.as_str().starts_with(prefix))
            .map(|(name, pool)| PoolView { name, pool })
    }

    /// The pools as a snapshot stores them, after the rest of the state:
    /// a sequence of (name, pool).
    pub fn stored_pools(&self) -> impl Serialize + '_ {
        StoredPools(&self.pools)
    }

    /// Puts back the pools a snapshot stored ([`State::stored_pools`]) and
    /// files their members. Call after decoding a state.
    pub fn restore_pools(&mut self, pools: Vec<(LockName, Pool)>) {
        self.pool_members.clear();
        self.pools = pools
            .into_iter()
            .map(|(name, pool)| (name, Box::new(pool)))
            .collect();
        for (name, pool) in &self.pools {
            let holds = pool.permits.holds().iter().map(|h| h.lease);
            for lease in holds.chain(pool.permits.waiters().map(|w| w.lease)) {
                let names = self.pool_members.entry(lease).or_default();
                names.insert(name.clone());
            }
        }
    }

    /// Every pool is held or waited for, by live leases filed as its
    /// members, under no lock's name; every filed member is in its pool.
    pub(super) fn check_pools(&self) -> Result<(), String> {
        for (name, pool) in &self.pools {
            if pool.permits.is_idle() || self.locks.contains_key(name) {
                return Err(format!("pool {name} is idle or also a lock"));
            }
            if pool.permits.overdrawn() {
                return Err(format!(
                    "pool {name}'s grants hold more permits than it has"
                ));
            }
            let holds = pool.permits.holds().iter().map(|h| h.lease);
            for lease in holds.chain(pool.permits.waiters().map(|w| w.lease)) {
                if !self.leases.contains_key(&lease) || !self.is_pool_member(lease, name) {
                    return Err(format!(
                        "member {lease} of pool {name} is not live or not filed"
                    ));
                }
            }
            if pool
                .permits
                .waiters()
                .next()
                .is_some_and(|head| pool.permits.has_free(head.count))
            {
                return Err(format!(
                    "the head of pool {name}'s queue waits for permits that are free"
                ));
            }
            let tokens = pool.permits.holds().iter().map(|h| h.token.0);
            if tokens.max() > Some(self.revision.0) {
                return Err(format!("a token of pool {name} is above the revision"));
            }
        }
        for (lease, names) in &self.pool_members {
            for name in names {
                let pool = self.pools.get(name).map(|p| &p.permits);
                let held = pool.is_some_and(|p| p.holds().iter().any(|h| h.lease == *lease));
                let waits = pool.is_some_and(|p| p.waiters().any(|w| w.lease == *lease));
                if held == waits {
                    return Err(format!(
                        "lease {lease} is filed in pool {name} but not in it once"
                    ));
                }
            }
        }
        Ok(())
    }

    /// `lease`'s grants of pools, in name order.
    pub(super) fn pool_grants(
        &self,
        lease: LeaseId,
    ) -> impl Iterator<Item = (&LockName, Token)> + '_ {
        let names = self.pool_members.get(&lease).into_iter().flatten();
        names.filter_map(move |name| {
            let holds = self.pools[name].permits.holds();
            let hold = holds.iter().find(|h| h.lease == lease)?;
            Some((name, hold.token))
        })
    }

    /// How many grants and waits `lease` has in pools.
    pub(super) fn pool_memberships(&self, lease: LeaseId) -> usize {
        self.pool_members.get(&lease).map_or(0, |names| names.len())
    }

    /// `lease`'s grants and waits in pools, as (grants, waits).
    pub(super) fn pool_usage(&self, lease: LeaseId) -> (u64, u64) {
        let names = self.pool_members.get(&lease).into_iter().flatten();
        names.fold((0, 0), |(held, waiting), name| {
            let pool = &self.pools[name].permits;
            match pool.holds().iter().any(|h| h.lease == lease) {
                true => (held + 1, waiting),
                false => (held, waiting + 1),
            }
        })
    }

    pub(super) fn is_pool_member(&self, lease: LeaseId, name: &LockName) -> bool {
        self.pool_members
            .get(&lease)
            .is_some_and(|names| names.contains(name))
    }

    /// Files `lease` as holding or waiting in `name`, and counts it.
    pub(super) fn joined(
        &mut self,
        lease: LeaseId,
        name: &LockName,
        count: impl FnOnce(&mut crate::auth::Usage),
    ) {
        let names = self.pool_members.entry(lease).or_default();
        assert!(names.insert(name.clone()), "joined a pool twice");
        let row = self.leases.get(&lease).expect("a live lease");
        self.auth.count(row.principal.as_ref(), count);
    }

    /// Unfiles `lease` from `name`, and counts it.
    pub(super) fn left(
        &mut self,
        lease: LeaseId,
        name: &LockName,
        count: impl FnOnce(&mut crate::auth::Usage),
    ) {
        let names = self.pool_members.get_mut(&lease).expect("a member");
        assert!(names.remove(name), "left a pool it was not in");
        if names.is_empty() {
            self.pool_members.remove(&lease);
        }
        let row = self.leases.get(&lease).expect("a live lease");
        self.auth.count(row.principal.as_ref(), count);
    }

    /// Keeps `pool` under `name` unless nobody holds or waits.
    pub(super) fn put_back(&mut self, name: &LockName, pool: Box<Pool>) {
        if !pool.permits.is_idle() {
            self.pools.insert(name.clone(), pool);
        }
    }
}

/// The pool table as stored: a sequence of (name, pool).
struct StoredPools<'a>(&'a OrdMap<LockName, Box<Pool>>);

impl Serialize for StoredPools<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|(name, pool)| (name, &**pool)))
    }
}
