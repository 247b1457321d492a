//! The deadlines the leader enforces: lease expiry, end of lock delay, end of
//! max-hold. Every node keeps this table up to date from applied effects (so
//! a new leader knows, on its own monotonic clock, when it applied each
//! lease's latest renewal: docs/DESIGN.md guarantee 5); only the leader acts on it.
//!
//! Pure bookkeeping: every method takes `now` as an argument.

use leasehold_core::{LeaseId, LockName, Token};
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;
use tokio::time::Instant;

/// Something that is due: the command the leader should propose.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Due {
    /// Propose `ExpireLease { lease, renewals }`.
    ExpireLease { lease: LeaseId, renewals: u64 },
    /// Propose `EndLockDelay { name, token }`.
    EndLockDelay { name: LockName, token: Token },
    /// Propose `EndHold { name, token }`.
    EndHold { name: LockName, token: Token },
}

/// What the table knows of one lease.
#[derive(Clone, Copy, Debug)]
struct LeaseTimer {
    /// When this node applied the latest renewal, + ttl.
    deadline: Instant,
    /// The lease's renewal count at that renewal: an expiry proposal carries
    /// it so a renewal applied in between makes the expiry a no-op.
    renewals: u64,
}

/// Deadlines by kind, each indexed by time.
#[derive(Default)]
pub struct TimerTable {
    leases: HashMap<LeaseId, LeaseTimer>,
    lease_index: BTreeSet<(Instant, LeaseId)>,
    lock_timers: BTreeSet<(Instant, LockTimer)>,
    /// When this node last became leader: deadlines of renewals applied
    /// before then get the failover margin.
    leader_since: Option<Instant>,
    failover_margin: Duration,
    /// How long a due item waits before it is proposed again if its
    /// proposal did not take effect (e.g. leadership was lost meanwhile).
    retry_after: Duration,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum LockTimer {
    Delay(LockName, Token),
    Hold(LockName, Token),
}

impl TimerTable {
    /// An empty table; `failover_margin` is added to deadlines inherited from
    /// a previous leader.
    pub fn new(failover_margin: Duration) -> TimerTable {
        TimerTable {
            failover_margin,
            retry_after: Duration::from_millis(500),
            ..TimerTable::default()
        }
    }

    /// A renewal of `lease` applied at `now`.
    pub fn lease_renewed(&mut self, lease: LeaseId, ttl: Duration, renewals: u64, now: Instant) {
        self.set_lease(lease, now + ttl, renewals);
    }

    fn set_lease(&mut self, lease: LeaseId, deadline: Instant, renewals: u64) {
        if let Some(old) = self.leases.insert(lease, LeaseTimer { deadline, renewals }) {
            self.lease_index.remove(&(old.deadline, lease));
        }
        self.lease_index.insert((deadline, lease));
    }

    /// The lease is gone.
    pub fn lease_ended(&mut self, lease: LeaseId) {
        if let Some(old) = self.leases.remove(&lease) {
            self.lease_index.remove(&(old.deadline, lease));
        }
    }

    /// Lock delay for `name` began at `now`.
    pub fn delay_started(&mut self, name: LockName, token: Token, delay: Duration, now: Instant) {
        self.lock_timers
            .insert((now + delay, LockTimer::Delay(name, token)));
    }

    /// A holder with a max-hold was granted at `now`.
    pub fn hold_started(&mut self, name: LockName, token: Token, max_hold: Duration, now: Instant) {
        self.lock_timers
            .insert((now + max_hold, LockTimer::Hold(name, token)));
    }

    /// The holder `token` of `name` stopped holding: its hold timer is moot.
    pub fn hold_ended(&mut self, name: &LockName, token: Token) {
        let key = LockTimer::Hold(name.clone(), token);
        self.lock_timers.retain(|(_, timer)| timer != &key);
    }

    /// Forgets everything (before rebuilding from a snapshot).
    pub fn clear(&mut self) {
        self.leases.clear();
        self.lease_index.clear();
        self.lock_timers.clear();
    }

    /// This node became leader at `now` (or stopped being leader: `None`).
    pub fn set_leader_since(&mut self, since: Option<Instant>) {
        self.leader_since = since;
    }

    /// Time left before `lease` expires (0 if overdue), for display.
    pub fn remaining(&self, lease: LeaseId, now: Instant) -> Option<Duration> {
        self.leases
            .get(&lease)
            .map(|t| t.deadline.saturating_duration_since(now))
    }

    /// Time left in the lock delay of `name` begun by `token` (display only).
    pub fn delay_remaining(&self, name: &LockName, token: Token, now: Instant) -> Option<Duration> {
        let key = LockTimer::Delay(name.clone(), token);
        self.lock_timers
            .iter()
            .find(|(_, timer)| timer == &key)
            .map(|(deadline, _)| deadline.saturating_duration_since(now))
    }

    /// The earliest instant at which something may become due.
    pub fn next_deadline(&self) -> Option<Instant> {
        let lease = self
            .lease_index
            .first()
            .map(|(deadline, _)| *deadline + self.margin_for(*deadline));
        let lock = self.lock_timers.first().map(|(deadline, _)| *deadline);
        match (lease, lock) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Items due at `now`. Each is re-armed `retry_after` later, so it is
    /// proposed again if its proposal does not take effect; a successful
    /// proposal removes it through the applied effects.
    pub fn take_due(&mut self, now: Instant) -> Vec<Due> {
        let mut due = Vec::new();
        while let Some(&(deadline, lease)) = self.lease_index.first() {
            if deadline + self.margin_for(deadline) > now {
                break;
            }
            let renewals = self.leases[&lease].renewals;
            due.push(Due::ExpireLease { lease, renewals });
            self.set_lease(lease, now + self.retry_after, renewals);
        }
        while let Some((deadline, _)) = self.lock_timers.first() {
            if *deadline > now {
                break;
            }
            let (_, timer) = self.lock_timers.pop_first().expect("first exists");
            due.push(match &timer {
                LockTimer::Delay(name, token) => Due::EndLockDelay {
                    name: name.clone(),
                    token: *token,
                },
                LockTimer::Hold(name, token) => Due::EndHold {
                    name: name.clone(),
                    token: *token,
                },
            });
            self.lock_timers.insert((now + self.retry_after, timer));
        }
        due
    }

    /// Removes a lock timer whose command took effect (or proved stale).
    pub fn lock_timer_done(&mut self, due: &Due) {
        let key = match due {
            Due::EndLockDelay { name, token } => LockTimer::Delay(name.clone(), *token),
            Due::EndHold { name, token } => LockTimer::Hold(name.clone(), *token),
            Due::ExpireLease { .. } => return,
        };
        self.lock_timers.retain(|(_, timer)| timer != &key);
    }

    /// Extra time for a deadline inherited from before this node led.
    fn margin_for(&self, deadline: Instant) -> Duration {
        match self.leader_since {
            Some(since) if deadline < since + self.failover_margin => self.failover_margin,
            _ => Duration::ZERO,
        }
    }

    /// Live leases tracked (for metrics).
    pub fn lease_count(&self) -> usize {
        self.leases.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_lease_is_due_at_its_last_renewal_plus_ttl() {
        let start = Instant::now();
        let mut table = TimerTable::new(ms(0));
        table.lease_renewed(LeaseId(1), ms(1000), 0, start);
        table.lease_renewed(LeaseId(1), ms(1000), 1, start + ms(600));
        assert!(table.take_due(start + ms(1500)).is_empty());
        assert_eq!(
            table.take_due(start + ms(1600)),
            vec![Due::ExpireLease {
                lease: LeaseId(1),
                renewals: 1
            }]
        );
        assert!(
            table.take_due(start + ms(1700)).is_empty(),
            "re-armed for a retry later"
        );
        table.lease_ended(LeaseId(1));
        assert!(table.next_deadline().is_none());
    }

    #[test]
    fn a_new_leader_adds_the_failover_margin_to_inherited_deadlines() {
        let start = Instant::now();
        let mut table = TimerTable::new(ms(300));
        table.lease_renewed(LeaseId(1), ms(1000), 0, start);
        table.set_leader_since(Some(start + ms(900)));
        assert!(table.take_due(start + ms(1200)).is_empty());
        assert_eq!(table.take_due(start + ms(1300)).len(), 1);
    }

    #[test]
    fn lock_timers_fire_in_deadline_order() {
        let start = Instant::now();
        let mut table = TimerTable::new(ms(0));
        let name = LockName::parse("a").unwrap();
        table.hold_started(name.clone(), Token(5), ms(200), start);
        table.delay_started(name.clone(), Token(3), ms(100), start);
        let due = table.take_due(start + ms(250));
        assert_eq!(
            due,
            vec![
                Due::EndLockDelay {
                    name: name.clone(),
                    token: Token(3)
                },
                Due::EndHold {
                    name: name.clone(),
                    token: Token(5)
                },
            ]
        );
        for item in &due {
            table.lock_timer_done(item);
        }
        assert!(table.next_deadline().is_none());
    }
}
