//! Durability and linearizable reads, for the fenced store and for lock
//! views: what was acknowledged stays visible (no lost put, no lost grant,
//! across crashes too), a put is accepted only from the holder of its
//! token, and a `get`/`ls` shows a holder that held at some instant of
//! the call.

use super::{by_lock, Violation};
use crate::history::{History, Hold, LockRead};

/// An accepted put of token `t` (the workload writes the key named as the
/// lock) must not come after `t`'s hold had ended: its release was
/// acknowledged, or a newer token of the lock was granted, before the put
/// was sent.
pub fn puts_by_holders(history: &History) -> Vec<Violation> {
    let locks = by_lock(history);
    let mut found = Vec::new();
    for put in history.puts.iter().filter(|p| p.accepted) {
        let Some(holds) = locks.get(&put.key) else {
            continue;
        };
        let Some(hold) = holds.iter().find(|h| h.token == put.token) else {
            continue;
        };
        let released = hold
            .release_completed_ms
            .is_some_and(|r| r < put.invoked_ms);
        let replaced = holds
            .iter()
            .any(|h| h.token > put.token && h.acquire_completed_ms < put.invoked_ms);
        if released || replaced {
            found.push(Violation::PutByNonHolder {
                key: put.key.clone(),
                token: put.token,
                at_ms: put.invoked_ms,
            });
        }
    }
    found
}

/// A fenced read sees at least the newest put acknowledged before it
/// began (also after a crash: an acknowledged put is durable).
pub fn lost_puts(history: &History) -> Vec<Violation> {
    let mut found = Vec::new();
    for read in &history.reads {
        let acknowledged = history
            .puts
            .iter()
            .filter(|p| p.accepted && p.key == read.key && p.completed_ms < read.invoked_ms)
            .map(|p| p.token)
            .max();
        let seen = read.observed.as_ref().map_or(0, |(token, _)| *token);
        if let Some(acknowledged) = acknowledged.filter(|a| seen < *a) {
            found.push(Violation::LostPut {
                key: read.key.clone(),
                acknowledged,
                seen,
                read_ms: read.invoked_ms,
            });
        }
    }
    found
}

/// Every lock view shows a holder that held at some instant of the call:
/// not a token never sent or already replaced, and never "free" (or an
/// older token) while a hold acknowledged before the call could not yet
/// have ended.
pub fn holder_reads(history: &History, rate_max: f64) -> Vec<Violation> {
    let locks = by_lock(history);
    let no_holds = Vec::new();
    let mut found = Vec::new();
    for read in &history.lock_reads {
        let holds = locks.get(&read.lock).unwrap_or(&no_holds);
        if let Some(why) = wrong_holder(history, holds, read, rate_max) {
            found.push(Violation::HolderRead {
                lock: read.lock.clone(),
                seen: read.holder.unwrap_or(0),
                read_ms: read.invoked_ms,
                why,
            });
        }
    }
    found
}

/// Why `read` could not have been true at any instant of its call.
fn wrong_holder(
    history: &History,
    holds: &[&Hold],
    read: &LockRead,
    rate_max: f64,
) -> Option<String> {
    let maybe_granted = history
        .pending_acquires
        .iter()
        .any(|p| p.lock == read.lock && p.invoked_ms < read.completed_ms);
    if let Some(seen) = read.holder {
        match holds.iter().find(|h| h.token == seen) {
            Some(hold) if hold.acquire_invoked_ms > read.completed_ms && !maybe_granted => {
                return Some("seen before its acquire was sent".into())
            }
            Some(hold) => {
                if hold
                    .release_completed_ms
                    .is_some_and(|r| r < read.invoked_ms)
                {
                    return Some("its release had been acknowledged before the view".into());
                }
                let newer = holds
                    .iter()
                    .find(|h| h.token > seen && h.acquire_completed_ms < read.invoked_ms);
                if let Some(newer) = newer {
                    return Some(format!(
                        "token {} had been granted before the view",
                        newer.token
                    ));
                }
            }
            None => {
                if !maybe_granted {
                    return Some("no acquire that could have granted it was sent".into());
                }
            }
        }
    }
    let alive = holds.iter().find(|h| {
        let lease_end = history
            .leases
            .iter()
            .find(|l| l.id == h.lease)
            .map_or(0, |l| l.earliest_end_ms(rate_max));
        h.acquire_completed_ms < read.invoked_ms
            && h.release_invoked_ms.is_none_or(|r| r > read.completed_ms)
            && lease_end > read.completed_ms
    })?;
    (read.holder != Some(alive.token)).then(|| {
        format!(
            "token {} was granted before the view and could not have ended before it",
            alive.token
        )
    })
}
