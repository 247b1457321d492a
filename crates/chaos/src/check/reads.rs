//! Durability and linearizable reads, for the fenced store and for lock
//! views: what was acknowledged stays visible (no lost put, no lost grant,
//! across crashes too), a put is accepted only from the holder of its
//! token, and a `get`/`ls` shows a holder that held at some instant of
//! the call. Each rule indexes the history once ([`RunningMax`]), so a
//! long run's millions of operations check in O(n log n).

use super::{by_lock, RunningMax, Violation};
use crate::history::{History, Hold, LockRead};
use std::collections::HashMap;

/// An accepted put of token `t` (the workload writes the key named as the
/// lock) must not come after `t`'s hold had ended: its release was
/// acknowledged, or a newer token of the lock was granted, before the put
/// was sent.
pub fn puts_by_holders(history: &History) -> Vec<Violation> {
    let locks: HashMap<String, LockIndex> = by_lock(history)
        .into_iter()
        .map(|(lock, holds)| (lock, LockIndex::new(history, holds, 1.0)))
        .collect();
    let mut found = Vec::new();
    for put in history.puts.iter().filter(|p| p.accepted) {
        let Some(index) = locks.get(&put.key) else {
            continue;
        };
        let Some(hold) = index.by_token.get(&put.token) else {
            continue;
        };
        let released = hold
            .release_completed_ms
            .is_some_and(|r| r < put.invoked_ms);
        let replaced = index
            .granted
            .before(put.invoked_ms)
            .is_some_and(|newest| newest > put.token);
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
    let mut by_key: HashMap<&str, Vec<(u64, u64)>> = HashMap::new();
    for put in history.puts.iter().filter(|p| p.accepted) {
        let entry = by_key.entry(put.key.as_str()).or_default();
        entry.push((put.completed_ms, put.token));
    }
    let acknowledged: HashMap<&str, RunningMax<u64>> = by_key
        .into_iter()
        .map(|(key, puts)| (key, RunningMax::new(puts)))
        .collect();
    let mut found = Vec::new();
    for read in &history.reads {
        let seen = read.observed.as_ref().map_or(0, |(token, _)| *token);
        let newest = acknowledged
            .get(read.key.as_str())
            .and_then(|index| index.before(read.invoked_ms));
        if let Some(acknowledged) = newest.filter(|a| seen < *a) {
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
    let locks: HashMap<String, LockIndex> = by_lock(history)
        .into_iter()
        .map(|(lock, holds)| (lock, LockIndex::new(history, holds, rate_max)))
        .collect();
    let mut first_pending: HashMap<&str, u64> = HashMap::new();
    for pending in &history.pending_acquires {
        let first = first_pending
            .entry(pending.lock.as_str())
            .or_insert(u64::MAX);
        *first = (*first).min(pending.invoked_ms);
    }
    let empty = LockIndex::new(history, Vec::new(), rate_max);
    let mut found = Vec::new();
    for read in &history.lock_reads {
        let index = locks.get(&read.lock).unwrap_or(&empty);
        let maybe_granted = first_pending
            .get(read.lock.as_str())
            .is_some_and(|first| *first < read.completed_ms);
        if let Some(why) = index.wrong_holder(read, maybe_granted) {
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

/// One lock's holds, indexed for the questions the rules ask.
struct LockIndex<'a> {
    by_token: HashMap<u64, &'a Hold>,
    /// Newest token granted before a time.
    granted: RunningMax<u64>,
    /// Among holds granted before a time, the one that could end last:
    /// (earliest end, token).
    alive: RunningMax<(u64, u64)>,
}

impl<'a> LockIndex<'a> {
    fn new(history: &History, holds: Vec<&'a Hold>, rate_max: f64) -> LockIndex<'a> {
        let lease_ends: HashMap<u64, u64> = history
            .leases
            .iter()
            .map(|l| (l.id, l.earliest_end_ms(rate_max)))
            .collect();
        let end = |h: &Hold| {
            let lease_end = lease_ends.get(&h.lease).copied().unwrap_or(0);
            h.release_invoked_ms.unwrap_or(u64::MAX).min(lease_end)
        };
        LockIndex {
            by_token: holds.iter().map(|h| (h.token, *h)).collect(),
            granted: RunningMax::new(holds.iter().map(|h| (h.acquire_completed_ms, h.token))),
            alive: RunningMax::new(
                holds
                    .iter()
                    .map(|h| (h.acquire_completed_ms, (end(h), h.token))),
            ),
        }
    }

    /// Why `read` could not have been true at any instant of its call.
    fn wrong_holder(&self, read: &LockRead, maybe_granted: bool) -> Option<String> {
        if let Some(seen) = read.holder {
            match self.by_token.get(&seen) {
                Some(hold) if hold.acquire_invoked_ms > read.completed_ms && !maybe_granted => {
                    return Some("seen before its acquire was sent".into());
                }
                Some(hold) => {
                    if hold
                        .release_completed_ms
                        .is_some_and(|r| r < read.invoked_ms)
                    {
                        return Some("its release had been acknowledged before the view".into());
                    }
                    let newer = self.granted.before(read.invoked_ms).filter(|t| *t > seen);
                    if let Some(newer) = newer {
                        return Some(format!("token {newer} had been granted before the view"));
                    }
                }
                None if !maybe_granted => {
                    return Some("no acquire that could have granted it was sent".into());
                }
                None => {}
            }
        }
        let (end, alive) = self.alive.before(read.invoked_ms)?;
        (end > read.completed_ms && read.holder != Some(alive)).then(|| {
            format!("token {alive} was granted before the view and could not have ended before it")
        })
    }
}
