//! Conversions between wire messages and core types, in one place.

use super::Node;
use leasehold_core::{
    LeaseId, LeaseOwner, LeaseView, LockView, OwnerInfo, PoolKind, PoolView, State, Token,
};
use leasehold_proto::v1 as pb;

/// Wire owner → core owner (validated later by the command).
pub fn owner_from_wire(owner: Option<pb::OwnerInfo>) -> OwnerInfo {
    let owner = owner.unwrap_or_default();
    OwnerInfo {
        owner: owner.owner,
        host: owner.host,
        pid: owner.pid,
        process_start_unix_ms: owner.process_start_unix_ms,
        labels: owner.labels.into_iter().collect(),
    }
}

/// A lease row's owner → wire owner.
pub fn owner_to_wire(owner: &LeaseOwner) -> pb::OwnerInfo {
    pb::OwnerInfo {
        owner: owner.owner().to_owned(),
        host: owner.host().to_owned(),
        pid: owner.pid(),
        process_start_unix_ms: owner.process_start_unix_ms(),
        labels: owner
            .labels()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    }
}

/// Milliseconds left on a lease, on this node's monotonic clock.
fn remaining_ms(node: &Node, lease: LeaseId) -> u64 {
    node.sinks
        .timers
        .remaining(lease)
        .map_or(0, |left| left.as_millis() as u64)
}

/// The locks `lease` holds, with their tokens.
fn held_to_wire(state: &State, lease: LeaseId) -> Vec<pb::HeldLock> {
    state
        .held_by(lease)
        .map(|(name, token)| pb::HeldLock {
            name: name.to_string(),
            token: token.0,
        })
        .collect()
}

/// A lease as the wire shows it, with the tokens of the locks it holds.
pub fn lease_to_wire(node: &Node, state: &State, lease: LeaseView<'_>) -> pb::LeaseInfo {
    pb::LeaseInfo {
        id: lease.id.0,
        ttl_ms: lease.ttl_ms(),
        remaining_ms: remaining_ms(node, lease.id),
        owner: Some(owner_to_wire(&lease.owner)),
        holds: lease.holds.iter().map(|n| n.to_string()).collect(),
        waits: lease.waits.iter().map(|n| n.to_string()).collect(),
        granted_revision: lease.granted_revision().0,
        granted_unix_ms: lease.granted_unix_ms as i64,
        renewed_unix_ms: lease.renewed_unix_ms as i64,
        held: held_to_wire(state, lease.id),
    }
}

/// What `lease` holds now, and how the server ended its other holds, for
/// a keep-alive reply.
/// The lease's holdings, or `None` when `known_digest` (the client's
/// digest of the holds it knows; 0: none sent) is the digest of the
/// lease's holds: nothing was taken, and a lease with a thousand locks is
/// not listed again at every renewal.
pub fn holdings_if_changed(
    node: &Node,
    lease: LeaseId,
    known_digest: u64,
) -> Option<pb::LeaseHoldings> {
    if known_digest == leasehold_core::NO_HOLDS_DIGEST {
        // It knows of no hold, so none can be taken from it: no list, and
        // no walk of a lease's thousand holds under the read lock.
        return None;
    }
    let unchanged = known_digest != 0
        && node.state.read(|state| {
            let held = state
                .held_by(lease)
                .map(|(name, token)| (name.as_str(), token.0));
            leasehold_core::holdings_digest(held) == known_digest
        });
    (!unchanged).then(|| holdings_to_wire(node, lease))
}

pub fn holdings_to_wire(node: &Node, lease: LeaseId) -> pb::LeaseHoldings {
    let held = node.state.read(|state| held_to_wire(state, lease));
    let ended = node.sinks.ended.of(lease);
    pb::LeaseHoldings {
        held,
        ended: ended
            .into_iter()
            .map(|ended| pb::EndedHold {
                name: ended.name.to_string(),
                token: ended.token.0,
                kind: ended.kind.to_owned(),
                how: ended.how,
            })
            .collect(),
    }
}

/// A lock as the wire shows it, with its holder's and waiters' owners.
pub fn lock_to_wire(node: &Node, state: &State, lock: LockView<'_>) -> pb::LockInfo {
    let holder = lock.holder.as_ref().map(|holder| {
        let mut wire = holder_to_wire(node, state, holder.lease, holder.token);
        wire.acquired_unix_ms = holder.acquired_unix_ms as i64;
        wire.fenced = holder.fenced;
        wire.max_hold_ms = holder.max_hold_ms.into();
        wire.lock_delay_ms = holder.lock_delay_ms.into();
        wire.held_ms = held_ms(node, holder.token, holder.acquired_unix_ms);
        let metadata = holder.metadata.iter();
        wire.metadata = metadata.map(|(k, v)| (k.clone(), v.clone())).collect();
        wire
    });
    let waiters = lock.waiters.iter().map(|waiter| pb::Waiter {
        lease: waiter.lease.0,
        owner: owner_of(state, waiter.lease),
        since_unix_ms: waiter.since_unix_ms as i64,
        wait_ms: waiter.wait_ms,
        permits: 0,
    });
    let usual = node.sinks.holds.summary(lock.name.as_str());
    pb::LockInfo {
        name: lock.name.to_string(),
        holder,
        waiters: waiters.collect(),
        prefix_hold_p99_ms: usual.map_or(0, |usual| usual.p99.as_millis() as u64),
        prefix_holds: usual.map_or(0, |usual| usual.holds as u32),
        lock_delay_remaining_ms: lock.delay.as_ref().map_or(0, |delay| {
            node.sinks
                .timers
                .delay_remaining(lock.name, delay.token)
                .map_or(delay.delay_ms, |left| left.as_millis() as u64)
        }),
        kind: pb::LockKind::Lock.into(),
        permits: 0,
        holders: Vec::new(),
    }
}

/// A semaphore or read-write lock as the wire shows it: every grant (with
/// its permits and its lease's owner and times) and the queue.
pub fn pool_to_wire(node: &Node, state: &State, pool: PoolView<'_>) -> pb::LockInfo {
    let permits = &pool.pool.permits;
    let holders = permits.holds().iter().map(|hold| {
        let mut wire = holder_to_wire(node, state, hold.lease, hold.token);
        wire.acquired_unix_ms = hold.acquired_unix_ms as i64;
        wire.held_ms = held_ms(node, hold.token, hold.acquired_unix_ms);
        wire.permits = hold.count;
        wire
    });
    let waiters = permits.waiters().map(|waiter| pb::Waiter {
        lease: waiter.lease.0,
        owner: owner_of(state, waiter.lease),
        since_unix_ms: waiter.since_unix_ms as i64,
        wait_ms: waiter.wait_ms,
        permits: waiter.count,
    });
    let usual = node.sinks.holds.summary(pool.name.as_str());
    let kind = match pool.pool.kind {
        PoolKind::Semaphore => pb::LockKind::Semaphore,
        PoolKind::ReadWrite => pb::LockKind::ReadWrite,
    };
    pb::LockInfo {
        name: pool.name.to_string(),
        holder: None,
        waiters: waiters.collect(),
        lock_delay_remaining_ms: 0,
        prefix_hold_p99_ms: usual.map_or(0, |usual| usual.p99.as_millis() as u64),
        prefix_holds: usual.map_or(0, |usual| usual.holds as u32),
        kind: kind.into(),
        permits: permits.permits(),
        holders: holders.collect(),
    }
}

/// What every holder shows of its lease: owner, ttl, time left, renewals.
fn holder_to_wire(node: &Node, state: &State, lease: LeaseId, token: Token) -> pb::Holder {
    let row = state.lease(lease);
    pb::Holder {
        lease: lease.0,
        token: token.0,
        owner: owner_of(state, lease),
        lease_ttl_ms: row.as_ref().map_or(0, |l| l.ttl_ms()),
        lease_remaining_ms: remaining_ms(node, lease),
        lease_renewed_unix_ms: row.as_ref().map_or(0, |l| l.renewed_unix_ms as i64),
        renewals: row.as_ref().map_or(0, |l| l.renewals()),
        ..pb::Holder::default()
    }
}

fn owner_of(state: &State, lease: LeaseId) -> Option<pb::OwnerInfo> {
    state.lease(lease).map(|l| owner_to_wire(&l.owner))
}

/// How long the holder of `token` has held, on this node's clock.
fn held_ms(node: &Node, token: Token, acquired_unix_ms: u64) -> u64 {
    let held = node.sinks.holders.held_for(token, acquired_unix_ms);
    held.map_or(0, |held| held.as_millis() as u64)
}
