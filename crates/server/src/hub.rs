//! Where applied effects go. The state machine calls the hub after applying
//! each log entry, in log order, on every node: it wakes blocked acquires,
//! arms and disarms timers, and counts what happened for `/metrics`.

use crate::storage::ApplyListener;
use crate::timers::Timers;
use crate::waiters::{WaitResult, Waiters};
use leasehold_core::{Applied, Effect, FreeCause, LeaseId, State};
use std::sync::Arc;
use std::time::Duration;

/// Routes effects to the waiter registry, the timers and the metrics.
pub struct ApplyHub {
    pub waiters: Arc<Waiters>,
    pub timers: Arc<Timers>,
}

impl ApplyHub {
    fn renewals(state: &State, lease: LeaseId) -> u64 {
        state.lease(lease).map_or(0, |lease| lease.renewals)
    }

    fn effect(&self, state: &State, effect: &Effect) {
        match effect {
            Effect::LeaseRenewed { lease, ttl_ms } => {
                let renewals = Self::renewals(state, *lease);
                self.timers.update(|table, now| {
                    table.lease_renewed(*lease, Duration::from_millis(*ttl_ms), renewals, now)
                });
            }
            Effect::LeaseEnded { lease, expired } => {
                self.timers.update(|table, _| table.lease_ended(*lease));
                if *expired {
                    metrics::counter!("leasehold_leases_expired_total").increment(1);
                }
            }
            Effect::LockGranted {
                name,
                lease,
                token,
                from_queue,
                max_hold_ms,
            } => {
                metrics::counter!("leasehold_locks_granted_total").increment(1);
                if *from_queue {
                    self.waiters.wake(name, *lease, WaitResult::Granted(*token));
                }
                if *max_hold_ms > 0 {
                    let hold = Duration::from_millis(*max_hold_ms);
                    self.timers
                        .update(|table, now| table.hold_started(name.clone(), *token, hold, now));
                }
            }
            Effect::LockFreed {
                name, token, cause, ..
            } => {
                self.timers.hold_ended(name, *token);
                let cause = match cause {
                    FreeCause::Released => "released",
                    FreeCause::LeaseRevoked => "lease_revoked",
                    FreeCause::LeaseExpired => "lease_expired",
                    FreeCause::MaxHoldExceeded => "max_hold_exceeded",
                };
                metrics::counter!("leasehold_locks_freed_total", "cause" => cause).increment(1);
            }
            Effect::WaiterRemoved { name, lease, cause } => {
                self.waiters.wake(name, *lease, WaitResult::Removed(*cause));
            }
            Effect::LockDelayStarted {
                name,
                token,
                delay_ms,
            } => {
                let delay = Duration::from_millis(*delay_ms);
                self.timers
                    .update(|table, now| table.delay_started(name.clone(), *token, delay, now));
            }
        }
    }
}

impl ApplyListener for ApplyHub {
    fn applied(&self, state: &State, _index: u64, applied: &[Applied]) {
        for outcome in applied {
            for effect in &outcome.effects {
                self.effect(state, effect);
            }
        }
        metrics::gauge!("leasehold_revision").set(state.revision().0 as f64);
    }

    fn reset(&self, state: &State) {
        self.timers.update(|table, now| {
            table.clear();
            for lease in state.leases() {
                let ttl = Duration::from_millis(lease.ttl_ms);
                table.lease_renewed(lease.id, ttl, lease.renewals, now);
            }
            for lock in state.locks_with_prefix("") {
                if let Some(delay) = &lock.delay {
                    let span = Duration::from_millis(delay.delay_ms);
                    table.delay_started(lock.name.clone(), delay.token, span, now);
                }
                if let Some(holder) = lock.holder.as_ref().filter(|h| h.max_hold_ms > 0) {
                    let hold = Duration::from_millis(holder.max_hold_ms);
                    table.hold_started(lock.name.clone(), holder.token, hold, now);
                }
            }
        });
    }
}
