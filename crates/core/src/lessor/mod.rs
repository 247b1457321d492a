//! The lessor: every deadline the leader enforces — lease expiry, end of a
//! lock delay, end of a max hold, end of a queued acquire's wait — as a pure
//! table on monotonic milliseconds. It reads no clock: the caller passes
//! `now_ms` (the server's monotonic clock, in milliseconds since its
//! origin), so tests state every instant.
//!
//! Every node keeps its lessor up to date from applied effects, so a new
//! leader knows, on its own clock, when it applied each lease's latest
//! renewal (docs/DESIGN.md guarantee 5); only the leader acts on it, by
//! proposing each [`Due`] item's command through the replicated log.
//!
//! Indexed both ways, by key and by deadline (`BTreeMap` + `BTreeSet`, or
//! for leases the id-sorted `LeaseTable` + the `DeadlineIndex`), so arming,
//! disarming, the earliest deadline and each due item cost O(log n)
//! (amortized): no operation scans every timer, and [`Lessor::take_due`]
//! hands out at most `max` items, so a storm of expiries is proposed in
//! bounded batches.
//!
//! Two rules carried over from the server's first timer table:
//! - **Failover margin.** While this node leads, a lease deadline that
//!   falls before `leader_since + failover_margin` (one it inherited, or
//!   nearly) gets `failover_margin` more: its holder gets time to renew
//!   through the new leader.
//! - **Re-arming.** A due item stays armed, `RETRY_AFTER_MS` later, until
//!   its command's effect removes it (or [`Lessor::done`] says its command
//!   applied), so a proposal lost to a leadership change is retried by
//!   whoever leads next.

mod deadline_index;
mod due;
mod lease_table;
#[cfg(test)]
mod tests;

pub use due::{Due, RenewalMark};

use crate::{LeaseId, LockName, Token};
use deadline_index::DeadlineIndex;
use due::TimerKey;
use lease_table::{LeaseTable, LeaseTimer};
use std::collections::{BTreeMap, BTreeSet};

/// How long a handed-out item waits before it is handed out again if its
/// proposal did not take effect (e.g. leadership was lost meanwhile), ms.
pub const RETRY_AFTER_MS: u64 = 500;

/// The latest lease deadline the lessor keeps, ms (40 bits, short of their
/// last value: 34 years after the timers' origin, the server's start). A
/// later one is kept as this: a lease's timer is one word, its deadline in
/// 40 bits beside its renewal mark's 24 (`lease_table`).
pub const DEADLINE_MS_MAX: u64 = (1 << 40) - 2;

/// One armed lock timer.
#[derive(Clone, Copy, Debug)]
struct Armed {
    deadline_ms: u64,
    /// Handed out by `take_due` since it was last armed: `done` may remove
    /// it. A timer armed again under the same key (a new wait of the same
    /// lease on the same lock) is not the one whose command applied.
    taken: bool,
}

/// Deadlines by kind, each indexed by key and by time.
#[derive(Debug, Default)]
pub struct Lessor {
    /// Each tracked lease's deadline and renewal count.
    leases: LeaseTable,
    /// The same leases ordered by raw deadline (without the failover margin).
    lease_index: DeadlineIndex,
    /// Lock delays, max holds and waits, by key.
    timers: BTreeMap<TimerKey, Armed>,
    /// The same timers ordered by deadline.
    timer_index: BTreeSet<(u64, TimerKey)>,
    /// When this node last became leader (ms), `None` while it does not
    /// lead: lease deadlines before `since + failover_margin_ms` get the
    /// margin.
    leader_since_ms: Option<u64>,
    /// Extra time for lease deadlines that fall just after a takeover.
    failover_margin_ms: u64,
}

/// The next lease in deadline order: its effective deadline and id.
type LeaseAt = (u64, LeaseId);

impl Lessor {
    /// An empty lessor; `failover_margin_ms` is added to lease deadlines
    /// that fall just after this node takes over as leader.
    pub fn new(failover_margin_ms: u64) -> Lessor {
        Lessor {
            failover_margin_ms,
            ..Lessor::default()
        }
    }

    /// A renewal (or the grant) of `lease` with `ttl_ms`, its `renewals`-th,
    /// applied at `now_ms`.
    pub fn lease_renewed(&mut self, lease: LeaseId, ttl_ms: u64, renewals: u64, now_ms: u64) {
        let deadline_ms = now_ms.saturating_add(ttl_ms);
        self.set_lease(lease, deadline_ms, RenewalMark::of(renewals));
    }

    fn set_lease(&mut self, lease: LeaseId, deadline_ms: u64, mark: RenewalMark) {
        let deadline_ms = deadline_ms.min(DEADLINE_MS_MAX);
        let timer = LeaseTimer { deadline_ms, mark };
        if let Some(old) = self.leases.insert(lease, timer) {
            self.lease_index.remove(&(old.deadline_ms, lease));
        }
        self.lease_index.insert((deadline_ms, lease));
    }

    /// The lease is gone (revoked or expired).
    pub fn lease_ended(&mut self, lease: LeaseId) {
        if let Some(old) = self.leases.remove(lease) {
            self.lease_index.remove(&(old.deadline_ms, lease));
        }
    }

    /// The lock delay of `name` begun by the expiry of the holder with
    /// `token` started at `now_ms` and lasts `delay_ms`.
    pub fn delay_started(&mut self, name: LockName, token: Token, delay_ms: u64, now_ms: u64) {
        self.arm(
            TimerKey::Delay(name, token),
            now_ms.saturating_add(delay_ms),
        );
    }

    /// The holder `token` of `name`, granted at `now_ms`, may hold it for
    /// `max_hold_ms`.
    pub fn hold_started(&mut self, name: LockName, token: Token, max_hold_ms: u64, now_ms: u64) {
        self.arm(
            TimerKey::Hold(name, token),
            now_ms.saturating_add(max_hold_ms),
        );
    }

    /// The holder `token` of `name` stopped holding: its hold timer is moot.
    pub fn hold_ended(&mut self, name: &LockName, token: Token) {
        self.disarm(&TimerKey::Hold(name.clone(), token));
    }

    /// `lease` queued for `name` at `now_ms`, waiting at most `wait_ms`.
    pub fn wait_started(&mut self, name: LockName, lease: LeaseId, wait_ms: u64, now_ms: u64) {
        self.arm(TimerKey::Wait(name, lease), now_ms.saturating_add(wait_ms));
    }

    /// `lease` left the queue of `name` (granted, cancelled, timed out, or
    /// its lease ended): its wait timer is moot.
    pub fn wait_ended(&mut self, name: &LockName, lease: LeaseId) {
        self.disarm(&TimerKey::Wait(name.clone(), lease));
    }

    fn arm(&mut self, key: TimerKey, deadline_ms: u64) {
        let armed = Armed {
            deadline_ms,
            taken: false,
        };
        if let Some(old) = self.timers.insert(key.clone(), armed) {
            self.timer_index.remove(&(old.deadline_ms, key.clone()));
        }
        self.timer_index.insert((deadline_ms, key));
    }

    fn disarm(&mut self, key: &TimerKey) {
        if let Some(old) = self.timers.remove(key) {
            self.timer_index.remove(&(old.deadline_ms, key.clone()));
        }
    }

    /// The command of a handed-out lock timer applied (it took effect, or
    /// proved moot): the timer goes, unless it was armed again meanwhile.
    /// Lease items stay: the lease's own effects move or remove them.
    pub fn done(&mut self, due: &Due) {
        let Some(key) = due.timer_key() else {
            return;
        };
        if self.timers.get(&key).is_some_and(|armed| armed.taken) {
            self.disarm(&key);
        }
    }

    /// Forgets every deadline (before rebuilding from a snapshot).
    pub fn clear(&mut self) {
        self.leases.clear();
        self.lease_index.clear();
        self.timers.clear();
        self.timer_index.clear();
    }

    /// This node became leader at `since_ms`, or (`None`) stopped leading.
    pub fn set_leader_since(&mut self, since_ms: Option<u64>) {
        self.leader_since_ms = since_ms;
        let boundary_ms = since_ms.map(|since| since.saturating_add(self.failover_margin_ms));
        self.lease_index.set_boundary(boundary_ms);
    }

    /// Time left before `lease`'s deadline (0 if overdue, without the
    /// failover margin), ms: for display.
    pub fn remaining_ms(&self, lease: LeaseId, now_ms: u64) -> Option<u64> {
        let timer = self.leases.get(lease)?;
        Some(timer.deadline_ms.saturating_sub(now_ms))
    }

    /// Time left in the lock delay of `name` begun by `token`, ms: for display.
    pub fn delay_remaining_ms(&self, name: &LockName, token: Token, now_ms: u64) -> Option<u64> {
        let armed = self.timers.get(&TimerKey::Delay(name.clone(), token))?;
        Some(armed.deadline_ms.saturating_sub(now_ms))
    }

    /// Live leases tracked (for metrics).
    pub fn lease_count(&self) -> usize {
        self.leases.len()
    }

    /// Lock timers armed: delays, holds and waits (for metrics).
    pub fn timer_count(&self) -> usize {
        self.timers.len()
    }

    /// The earliest millisecond at which something may be due.
    pub fn next_deadline_ms(&self) -> Option<u64> {
        let lease = self.next_lease().map(|(at, _)| at);
        let timer = self.timer_index.first().map(|(at, _)| *at);
        match (lease, timer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Up to `max` items due at `now_ms`, earliest first (on a tie, leases
    /// before lock timers). Each is re-armed `RETRY_AFTER_MS` later, so it
    /// is handed out again if its proposal does not take effect; the items
    /// not handed out stay due for the next call.
    pub fn take_due(&mut self, now_ms: u64, max: usize) -> Vec<Due> {
        let mut due = Vec::new();
        let retry_at_ms = now_ms.saturating_add(RETRY_AFTER_MS);
        while due.len() < max {
            let lease = self.next_lease().filter(|(at, _)| *at <= now_ms);
            let timer = self.timer_index.first().filter(|(at, _)| *at <= now_ms);
            let item = match (lease, timer) {
                (Some((at, lease)), Some((timer_at, _))) if at <= *timer_at => {
                    self.take_lease(lease, retry_at_ms)
                }
                (Some((_, lease)), None) => self.take_lease(lease, retry_at_ms),
                (_, Some(_)) => self.take_timer(retry_at_ms),
                (None, None) => break,
            };
            due.push(item);
        }
        due
    }

    /// Up to `max` wait timeouts due at `now_ms` that come next among the
    /// lock timers, earliest first, re-armed as [`Lessor::take_due`] does:
    /// what follows a wait timeout just taken, to be proposed with it as
    /// one command. Stops at the first lock timer that is not a wait.
    pub fn take_due_waits(&mut self, now_ms: u64, max: usize) -> Vec<Due> {
        let mut due = Vec::new();
        let retry_at_ms = now_ms.saturating_add(RETRY_AFTER_MS);
        while due.len() < max {
            let next = self.timer_index.first();
            if !next.is_some_and(|(at, key)| *at <= now_ms && matches!(key, TimerKey::Wait(..))) {
                break;
            }
            due.push(self.take_timer(retry_at_ms));
        }
        due
    }

    fn take_lease(&mut self, lease: LeaseId, retry_at_ms: u64) -> Due {
        let mark = self
            .leases
            .get(lease)
            .expect("indexed lease is tracked")
            .mark;
        self.set_lease(lease, retry_at_ms, mark);
        Due::ExpireLease { lease, mark }
    }

    fn take_timer(&mut self, retry_at_ms: u64) -> Due {
        let (_, key) = self.timer_index.pop_first().expect("a due timer");
        let armed = self.timers.get_mut(&key).expect("indexed timer is armed");
        armed.deadline_ms = retry_at_ms;
        armed.taken = true;
        let due = key.due();
        self.timer_index.insert((retry_at_ms, key));
        due
    }

    /// The lease with the earliest effective deadline. Deadlines before
    /// `leader_since + margin` are due `margin` later, which reorders the
    /// two ranges: the earliest is the first of the inherited range (+
    /// margin) or the first of the rest, whichever is sooner.
    fn next_lease(&self) -> Option<LeaseAt> {
        let first = self.lease_index.first();
        let Some(since_ms) = self.leader_since_ms else {
            return first;
        };
        let boundary_ms = since_ms.saturating_add(self.failover_margin_ms);
        let inherited = first
            .filter(|(at, _)| *at < boundary_ms)
            .map(|(at, lease)| (at.saturating_add(self.failover_margin_ms), lease));
        let rest = self.lease_index.first_from_boundary();
        match (inherited, rest) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
