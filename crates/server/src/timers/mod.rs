//! The leader's timer layer: lease expiry, end of lock delay, end of
//! max-hold. Deadlines are kept on every node from applied effects, on the
//! node's monotonic [`Clock`]; only the leader proposes the resulting
//! commands, and only through the replicated log (docs/DESIGN.md guarantee 3).

mod table;
mod task;

pub use table::{Due, TimerTable};
pub use task::spawn;

use crate::clock::Clock;
use leasehold_core::{LeaseId, LockName, Token};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The shared timer table plus a wake-up for the timer task.
pub struct Timers {
    table: Mutex<TimerTable>,
    clock: Arc<dyn Clock>,
    /// Wakes the task when a deadline earlier than its current sleep appears.
    wake: Notify,
}

impl Timers {
    /// Empty timers on `clock`.
    pub fn new(clock: Arc<dyn Clock>, failover_margin: Duration) -> Timers {
        Timers {
            table: Mutex::new(TimerTable::new(failover_margin)),
            clock,
            wake: Notify::new(),
        }
    }

    /// Now on the timers' clock.
    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// Runs `f` on the table; wakes the task if the earliest deadline moved earlier.
    pub fn update<R>(&self, f: impl FnOnce(&mut TimerTable, Instant) -> R) -> R {
        let now = self.clock.now();
        let mut table = self.table.lock().expect("timer table poisoned");
        let before = table.next_deadline();
        let result = f(&mut table, now);
        let after = table.next_deadline();
        drop(table);
        if matches!((before, after), (_, Some(a)) if before.is_none_or(|b| a < b)) {
            self.wake.notify_one();
        }
        result
    }

    /// Time left on `lease` (display only).
    pub fn remaining(&self, lease: LeaseId) -> Option<Duration> {
        let now = self.clock.now();
        self.table
            .lock()
            .expect("timer table poisoned")
            .remaining(lease, now)
    }

    /// Time left in a lock delay (display only).
    pub fn delay_remaining(&self, name: &LockName, token: Token) -> Option<Duration> {
        let now = self.clock.now();
        self.table
            .lock()
            .expect("timer table poisoned")
            .delay_remaining(name, token, now)
    }

    /// Marks a lock timer's command as applied.
    pub fn lock_timer_done(&self, due: &Due) {
        self.table
            .lock()
            .expect("timer table poisoned")
            .lock_timer_done(due);
    }

    /// A holder's hold ended (release, expiry, max-hold).
    pub fn hold_ended(&self, name: &LockName, token: Token) {
        self.table
            .lock()
            .expect("timer table poisoned")
            .hold_ended(name, token);
    }
}
