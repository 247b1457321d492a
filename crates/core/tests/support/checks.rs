//! The properties that compare a state before and after one command:
//! ending a lease releases exactly its locks (4), and a force release frees
//! exactly the lock it names, only from the holder it expects; and the view
//! of the state whose change must bump the revision.

use leasehold_core::{
    Applied, Command, Effect, FencedEntry, FencedKey, LeaseId, Lock, LockName, Reply, State,
};
use std::collections::BTreeSet;

/// Each lease's id with the locks it holds and waits for.
type LeaseView = (LeaseId, Vec<LockName>, Vec<LockName>);
/// Locks, what each live lease holds and waits for, and the fenced store.
type CoreView = (
    Vec<(LockName, Lock)>,
    Vec<LeaseView>,
    Vec<(FencedKey, FencedEntry)>,
);

/// The part of the state whose change must bump the revision: locks,
/// which leases exist with what they hold and wait for, and the fenced store.
pub fn core_view(state: &State) -> CoreView {
    let locks = state
        .locks()
        .map(|l| (l.name.clone(), l.to_lock()))
        .collect();
    let leases = state
        .leases()
        .map(|l| {
            (
                l.id,
                l.holds.iter().cloned().collect(),
                l.waits.iter().cloned().collect(),
            )
        })
        .collect();
    let fenced = state
        .fenced_entries()
        .map(|(k, e)| (k.clone(), e.clone()))
        .collect();
    (locks, leases, fenced)
}

/// (4) ending a live lease releases exactly its locks and leaves every queue.
pub fn check_lease_end(before: &State, after: &State, command: &Command, applied: &Applied) {
    let (lease, expired) = match command {
        Command::ExpireLease { lease, renewals } => {
            if before
                .lease(*lease)
                .is_some_and(|row| row.renewals() != *renewals)
            {
                assert_eq!(before, after, "a stale expiry changes nothing");
                return;
            }
            (*lease, true)
        }
        Command::RevokeLease { lease, .. } => (*lease, false),
        _ => return,
    };
    let Some(row) = before.lease(lease) else {
        assert!(applied.effects.is_empty());
        return;
    };
    let held: Vec<LockName> = row.holds.iter().cloned().collect();
    assert_eq!(
        applied.outcome,
        Ok(Reply::LeaseEnded {
            released: held.clone()
        })
    );
    let freed: Vec<LockName> = applied
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::LockFreed { name, lease: l, .. } if *l == lease => Some(name.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(freed, held);
    // Only an expiry starts lock delays: one per held lock that asked for one.
    let delayed: Vec<LockName> = applied
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::LockDelayStarted { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    let wants_delay = |n: &&LockName| {
        let holder = before.lock(n).and_then(|l| l.holder.as_ref());
        expired && holder.is_some_and(|h| h.lock_delay_ms > 0)
    };
    let expected: Vec<LockName> = held.iter().filter(wants_delay).cloned().collect();
    assert_eq!(delayed, expected);
    assert!(after.lease(lease).is_none());
    assert_eq!(
        after.recently_expired(lease),
        expired || before.recently_expired(lease)
    );
    for lock in after.locks() {
        assert!(lock.holder.as_ref().is_none_or(|h| h.lease != lease));
        assert!(lock.waiters.iter().all(|w| w.lease != lease));
    }
    let untouched: BTreeSet<&LockName> = before.locks().map(|l| l.name).collect();
    // A lock held by another keeps its holder. (A lock kept for a set, with
    // no holder, may be granted on or dropped: the lease's end can let a
    // set behind it in.)
    for name in untouched.iter().filter(|n| !row.holds.contains(n)) {
        let b = before.lock(name).unwrap();
        if b.holder.is_none() {
            continue;
        }
        let a = after.lock(name).expect("a held lock stays");
        assert_eq!(
            b.holder, a.holder,
            "lock {name} not held by the lease changed holder"
        );
    }
}

/// (8) a force release frees only from the holder whose token it names:
/// the named lock (or, revoking, exactly the lease's locks), each freed
/// effect marked forced, recorded; a wrong token changes nothing.
pub fn check_force_release(before: &State, after: &State, command: &Command, applied: &Applied) {
    let Command::ForceRelease {
        name,
        expected_token,
        revoke_lease,
        ..
    } = command
    else {
        return;
    };
    let holder = before.lock(name).and_then(|l| l.holder.clone());
    let Ok(reply) = &applied.outcome else {
        assert!(
            holder.is_none_or(|h| h.token != *expected_token),
            "refused the holder's token"
        );
        assert_eq!(core_view(before), core_view(after));
        return;
    };
    let Reply::ForceReleased {
        lease,
        released,
        lease_revoked,
    } = reply
    else {
        panic!("force release replied {reply:?}");
    };
    let holder = holder.expect("freed a lock nobody held");
    assert_eq!((holder.token, holder.lease), (*expected_token, *lease));
    assert_eq!(lease_revoked, revoke_lease);
    let expected: Vec<LockName> = if *revoke_lease {
        before
            .lease(*lease)
            .unwrap()
            .holds
            .iter()
            .cloned()
            .collect()
    } else {
        vec![name.clone()]
    };
    assert_eq!(released, &expected);
    assert_eq!(after.lease(*lease).is_none(), *revoke_lease);
    let freed: Vec<&LockName> = applied
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::LockFreed { name, forced, .. } => {
                assert!(
                    forced.is_some(),
                    "a force release's free is not marked forced"
                );
                Some(name)
            }
            _ => None,
        })
        .collect();
    assert_eq!(freed, expected.iter().collect::<Vec<_>>());
    let next = after.lock(name).and_then(|l| l.holder.as_ref());
    assert!(next.is_none_or(|n| n.token > holder.token && n.lease != *lease));
    let record = after.force_releases().last().expect("recorded");
    assert_eq!((&record.name, record.token), (name, holder.token));
}
