//! Where applied effects go. The state machine calls the hub after applying
//! each log entry, in log order, on every node: it wakes blocked acquires,
//! arms and disarms timers, counts what happened for `/metrics`, and logs
//! each grant, renewal, release and expiry with its lock, lease, owner and
//! token (one place, so `grep token=…` answers "who held it when").
//!
//! Metric labels are bounded: causes and error kinds only, never lock names,
//! leases or owners. Every node applies the same log, so counters agree
//! across nodes; durations are measured on this node's clock.

use crate::storage::ApplyListener;
use crate::timers::Timers;
use crate::waiters::{WaitResult, Waiters};
use leasehold_core::{Applied, Effect, FreeCause, LeaseId, LockName, Reply, State, Token};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Routes effects to the waiter registry, the timers, the metrics and the log.
pub struct ApplyHub {
    pub waiters: Arc<Waiters>,
    pub timers: Arc<Timers>,
    /// When each current holder (by token, unique per grant) got its lock on
    /// this node's clock, for the hold-time histogram. Bounded by the number
    /// of held locks: entries leave when the lock is freed.
    held_since: Mutex<HashMap<Token, Instant>>,
}

impl ApplyHub {
    /// A hub feeding `waiters` and `timers`.
    pub fn new(waiters: Arc<Waiters>, timers: Arc<Timers>) -> ApplyHub {
        ApplyHub {
            waiters,
            timers,
            held_since: Mutex::new(HashMap::new()),
        }
    }

    fn renewals(state: &State, lease: LeaseId) -> u64 {
        state.lease(lease).map_or(0, |lease| lease.renewals)
    }

    /// The lease's owner name for logs; `?` once the lease is gone (its
    /// grant was logged with the owner, under the same lease and token).
    fn owner(state: &State, lease: LeaseId) -> &str {
        state
            .lease(lease)
            .map_or("?", |lease| lease.owner.owner.as_str())
    }

    fn effect(&self, state: &State, effect: &Effect) {
        match effect {
            Effect::LeaseRenewed { lease, ttl_ms } => self.lease_renewed(state, *lease, *ttl_ms),
            Effect::LeaseEnded { lease, expired } => {
                self.timers.update(|table, _| table.lease_ended(*lease));
                if *expired {
                    metrics::counter!("leasehold_leases_expired_total").increment(1);
                    tracing::info!(lease = lease.0, "lease expired");
                }
            }
            Effect::LockGranted {
                name,
                lease,
                token,
                from_queue,
                max_hold_ms,
            } => {
                self.lock_granted(state, name, *lease, *token, *from_queue);
                if *max_hold_ms > 0 {
                    let hold = Duration::from_millis(*max_hold_ms);
                    self.timers
                        .update(|table, now| table.hold_started(name.clone(), *token, hold, now));
                }
            }
            Effect::LockFreed {
                name,
                lease,
                token,
                cause,
                forced,
            } => {
                self.timers.hold_ended(name, *token);
                self.lock_freed(state, name, *lease, *token, *cause, *forced);
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

    /// Re-arms the lease timer. A renewal of a lease the table already
    /// tracks is a keep-alive: the time it had left is its margin.
    fn lease_renewed(&self, state: &State, lease: LeaseId, ttl_ms: u64) {
        let renewals = Self::renewals(state, lease);
        let margin = self.timers.update(|table, now| {
            let margin = table.remaining(lease, now);
            table.lease_renewed(lease, Duration::from_millis(ttl_ms), renewals, now);
            margin
        });
        if let Some(margin) = margin {
            metrics::histogram!("leasehold_keepalive_margin_seconds").record(margin.as_secs_f64());
            let ratio = margin.as_secs_f64() / (ttl_ms.max(1) as f64 / 1000.0);
            metrics::histogram!("leasehold_keepalive_margin_ratio").record(ratio);
            tracing::debug!(
                lease = lease.0,
                owner = Self::owner(state, lease),
                ttl_ms,
                margin_ms = margin.as_millis() as u64,
                "lease renewed"
            );
        }
    }

    fn lock_granted(
        &self,
        state: &State,
        name: &LockName,
        lease: LeaseId,
        token: Token,
        from_queue: bool,
    ) {
        metrics::counter!("leasehold_locks_granted_total").increment(1);
        if from_queue {
            let waited = self.waiters.wake(name, lease, WaitResult::Granted(token));
            if let Some(waited) = waited {
                metrics::histogram!("leasehold_wait_seconds").record(waited.as_secs_f64());
            }
        }
        let now = self.timers.now();
        self.held_since
            .lock()
            .expect("held_since poisoned")
            .insert(token, now);
        tracing::info!(
            lock = %name,
            lease = lease.0,
            owner = Self::owner(state, lease),
            token = token.0,
            from_queue,
            "lock acquired"
        );
    }

    fn lock_freed(
        &self,
        state: &State,
        name: &LockName,
        lease: LeaseId,
        token: Token,
        cause: FreeCause,
        forced: bool,
    ) {
        let cause = free_cause_label(cause);
        metrics::counter!("leasehold_locks_freed_total", "cause" => cause.clone()).increment(1);
        let since = self
            .held_since
            .lock()
            .expect("held_since poisoned")
            .remove(&token);
        if let Some(since) = since {
            let held = self.timers.now().saturating_duration_since(since);
            metrics::histogram!("leasehold_hold_seconds").record(held.as_secs_f64());
        }
        let owner = Self::owner(state, lease);
        if forced {
            metrics::counter!("leasehold_force_releases_total").increment(1);
            tracing::warn!(lock = %name, lease = lease.0, owner, token = token.0, cause = %cause, forced, "lock freed");
        } else {
            tracing::info!(lock = %name, lease = lease.0, owner, token = token.0, cause = %cause, "lock freed");
        }
    }

    /// Counts the caller-visible result of one command.
    fn outcome(applied: &Applied) {
        match &applied.outcome {
            Ok(Reply::Released) => metrics::counter!("leasehold_releases_total").increment(1),
            Ok(Reply::KeptAlive { .. }) => {
                metrics::counter!("leasehold_keepalives_total").increment(1)
            }
            Ok(_) => {}
            Err(error) => {
                let reason = variant_label(error);
                metrics::counter!("leasehold_command_failures_total", "reason" => reason)
                    .increment(1);
            }
        }
    }
}

/// `FreeCause::MaxHoldExceeded` → `max_hold_exceeded`. Derived from the
/// variant name so that a cause added to the core is counted without a
/// change here; the label set stays the enum's.
fn free_cause_label(cause: FreeCause) -> String {
    snake_case(&format!("{cause:?}"))
}

/// The variant name of an error enum value, snake-cased: bounded by the
/// number of variants, unlike the message (which names locks and leases).
fn variant_label(value: &impl std::fmt::Debug) -> String {
    let debug = format!("{value:?}");
    let end = debug
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .unwrap_or(debug.len());
    snake_case(&debug[..end])
}

fn snake_case(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 4);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

impl ApplyListener for ApplyHub {
    fn applied(&self, state: &State, _index: u64, applied: &[Applied]) {
        for outcome in applied {
            Self::outcome(outcome);
            for effect in &outcome.effects {
                self.effect(state, effect);
            }
        }
        metrics::gauge!("leasehold_revision").set(state.revision().0 as f64);
    }

    fn reset(&self, state: &State) {
        let mut held_since = self.held_since.lock().expect("held_since poisoned");
        held_since.clear();
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
                if let Some(holder) = &lock.holder {
                    // Hold times of locks taken before the snapshot count from now.
                    held_since.insert(holder.token, now);
                }
                if let Some(holder) = lock.holder.as_ref().filter(|h| h.max_hold_ms > 0) {
                    let hold = Duration::from_millis(holder.max_hold_ms);
                    table.hold_started(lock.name.clone(), holder.token, hold, now);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_core::LockError;

    #[test]
    fn labels_are_snake_cased_variant_names() {
        assert_eq!(
            free_cause_label(FreeCause::MaxHoldExceeded),
            "max_hold_exceeded"
        );
        assert_eq!(free_cause_label(FreeCause::Released), "released");
        let error = LockError::LeaseNotFound { lease: LeaseId(9) };
        assert_eq!(variant_label(&error), "lease_not_found");
    }
}
