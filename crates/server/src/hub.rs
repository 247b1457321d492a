//! Where applied effects go. The state machine calls the hub after applying
//! each log entry, in log order, on every node: it wakes blocked acquires,
//! arms and disarms timers, counts what happened for `/metrics`, logs each
//! grant, renewal, release and expiry with its lock, lease, owner and token
//! (one place, so `grep token=…` answers "who held it when"), records the
//! same as [`LockEvent`]s for `Events` and the live page, and files each
//! finished hold under its prefix for `diagnose`.
//!
//! Metric labels are bounded: causes and error kinds only, never lock names,
//! leases or owners. Every node applies the same log, so counters agree
//! across nodes; durations are measured on this node's clock.

use crate::ended_holds::{EndedHold, EndedHolds};
use crate::events::{EventKind, EventLog, LockEvent};
use crate::hold_stats::HoldStats;
use crate::storage::ApplyListener;
use crate::timers::Timers;
use crate::waiters::{WaitResult, Waiters};
use leasehold_core::{
    Applied, Effect, FreeCause, LeaseId, LockName, Reply, State, Token, WaitEndCause,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Routes effects to the waiter registry, the timers, the metrics and the log.
pub struct ApplyHub {
    pub waiters: Arc<Waiters>,
    pub timers: Arc<Timers>,
    /// Recent events, and their followers.
    pub events: EventLog,
    /// Recent hold times by prefix.
    pub holds: HoldStats,
    /// Holds the server ended while their lease lived, for the holder's
    /// next keep-alive reply.
    pub ended: EndedHolds,
    /// Each current holder (by token, unique per grant): when it got its
    /// lock on this node's clock (hold-time histogram, `held for`) and its
    /// owner (the freed event names it after the lease is gone). Bounded by
    /// the number of held locks: entries leave when the lock is freed.
    held: Mutex<HashMap<Token, HeldBy>>,
}

struct HeldBy {
    since: Instant,
    owner: String,
}

/// The log position and proposer's time of the command being routed.
#[derive(Clone, Copy)]
struct At {
    revision: u64,
    at_unix_ms: u64,
}

impl ApplyHub {
    /// A hub feeding `waiters` and `timers`.
    pub fn new(waiters: Arc<Waiters>, timers: Arc<Timers>) -> ApplyHub {
        ApplyHub {
            waiters,
            timers,
            events: EventLog::new(),
            holds: HoldStats::default(),
            ended: EndedHolds::default(),
            held: Mutex::new(HashMap::new()),
        }
    }

    /// How long the holder with `token` has held its lock, on this node's
    /// clock (from when this node applied the grant, or loaded it).
    pub fn held_for(&self, token: Token) -> Option<Duration> {
        let held = self.held.lock().expect("held poisoned");
        let since = held.get(&token)?.since;
        Some(self.timers.now().saturating_duration_since(since))
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

    fn effect(&self, state: &State, at: At, effect: &Effect) {
        self.timers.effect(effect);
        match effect {
            Effect::LeaseRenewed { lease, ttl_ms } => self.lease_renewed(state, *lease, *ttl_ms),
            Effect::LeaseEnded { lease, expired } => {
                self.ended.lease_ended(*lease);
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
                ..
            } => self.lock_granted(state, at, name, *lease, *token, *from_queue),
            Effect::LockFreed {
                name,
                lease,
                token,
                cause,
                forced,
            } => self.lock_freed(state, at, name, *lease, *token, *cause, *forced),
            Effect::WaiterRemoved { name, lease, cause } => {
                self.waiters.wake(name, *lease, WaitResult::Removed(*cause));
                if *cause == WaitEndCause::TimedOut {
                    let owner = Self::owner(state, *lease);
                    let event = event(at, EventKind::WaiterTimedOut, name, *lease, owner);
                    self.events.record(event);
                }
            }
            Effect::ReleaseFailed {
                name,
                lease,
                token,
                error,
            } => {
                let owner = Self::owner(state, *lease);
                let reason = error.reason().label();
                metrics::counter!("leasehold_release_failures_total", "reason" => reason)
                    .increment(1);
                tracing::info!(lock = %name, lease = lease.0, owner, token = token.0, error = %error, "release failed");
                let mut event = event(at, EventKind::ReleaseFailed, name, *lease, owner);
                event.token = token.0;
                event.detail = error.to_string();
                self.events.record(event);
            }
            Effect::FencedPutRefused { .. } => self.fenced_put_refused(state, at, effect),
            // Deadlines only: the timers took them above.
            Effect::LockDelayStarted { .. } | Effect::WaiterQueued { .. } => {}
        }
    }

    /// A refused fenced put: counted by reason, logged at warn and kept as
    /// an event with the key, the writer and the key's highest token, so a
    /// stale writer leaves a trace (seed 000: "find stale writes").
    fn fenced_put_refused(&self, state: &State, at: At, effect: &Effect) {
        let Effect::FencedPutRefused {
            key,
            lock,
            lease,
            presented,
            highest,
            highest_lock,
            error,
        } = effect
        else {
            return;
        };
        let lease = lease.unwrap_or(LeaseId(0));
        let owner = if lease.0 == 0 {
            ""
        } else {
            Self::owner(state, lease)
        };
        let highest_token = highest.map_or(0, |t| t.0);
        let highest_lock = highest_lock.as_ref().map_or("", |l| l.as_str());
        let reason = error.reason().label();
        metrics::counter!("leasehold_fenced_put_refusals_total", "reason" => reason).increment(1);
        tracing::warn!(key = %key, lock = %lock, lease = lease.0, owner, token = presented.0, highest_token, highest_lock, error = %error, "fenced put refused");
        let mut event = event(at, EventKind::FencedPutRefused, lock, lease, owner);
        event.token = presented.0;
        event.key = key.to_string();
        event.highest_token = highest_token;
        event.highest_lock = highest_lock.to_owned();
        event.detail = error.to_string();
        self.events.record(event);
    }

    /// Re-arms the lease timer. A renewal of a lease the table already
    /// tracks is a keep-alive: the time it had left is its margin.
    fn lease_renewed(&self, state: &State, lease: LeaseId, ttl_ms: u64) {
        let renewals = Self::renewals(state, lease);
        let margin = self.timers.lease_renewed(lease, ttl_ms, renewals);
        if let Some(margin) = margin {
            metrics::histogram!("leasehold_keepalive_margin_seconds").record(margin.as_secs_f64());
            let ratio = margin.as_secs_f64() / (ttl_ms.max(1) as f64 / 1000.0);
            metrics::histogram!("leasehold_keepalive_margin_ratio").record(ratio);
            if tracing::enabled!(tracing::Level::DEBUG) {
                Self::log_renewal(state, lease, ttl_ms, margin);
            }
        }
    }

    /// Logs a keep-alive (at debug: one line per renewal is a lot at
    /// scale) with the locks the lease holds and their tokens. A lease
    /// holding one lock logs `lock` and `token` like a grant, so a search
    /// for a token finds its renewals too.
    fn log_renewal(state: &State, lease: LeaseId, ttl_ms: u64, margin: Duration) {
        let owner = Self::owner(state, lease);
        let margin_ms = margin.as_millis() as u64;
        let held: Vec<(&LockName, Token)> = state.held_by(lease).collect();
        if let [(lock, token)] = held[..] {
            tracing::debug!(lock = %lock, lease = lease.0, owner, token = token.0, ttl_ms, margin_ms, "lease renewed");
        } else {
            let locks: Vec<String> = held
                .iter()
                .map(|(name, token)| format!("{name}={}", token.0))
                .collect();
            let locks = locks.join(",");
            tracing::debug!(
                locks,
                lease = lease.0,
                owner,
                ttl_ms,
                margin_ms,
                "lease renewed"
            );
        }
    }

    fn lock_granted(
        &self,
        state: &State,
        at: At,
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
        let owner = Self::owner(state, lease);
        let since = self.timers.now();
        self.held.lock().expect("held poisoned").insert(
            token,
            HeldBy {
                since,
                owner: owner.to_owned(),
            },
        );
        tracing::info!(
            lock = %name,
            lease = lease.0,
            owner,
            token = token.0,
            from_queue,
            "lock acquired"
        );
        let mut event = event(at, EventKind::Acquired, name, lease, owner);
        event.token = token.0;
        if from_queue {
            event.detail = "granted from the queue".into();
        }
        self.events.record(event);
    }

    #[allow(clippy::too_many_arguments)]
    fn lock_freed(
        &self,
        state: &State,
        at: At,
        name: &LockName,
        lease: LeaseId,
        token: Token,
        free_cause: FreeCause,
        forced: bool,
    ) {
        let cause = free_cause_label(free_cause);
        metrics::counter!("leasehold_locks_freed_total", "cause" => cause.clone()).increment(1);
        let held = self.held.lock().expect("held poisoned").remove(&token);
        let owner = held.as_ref().map_or_else(
            || Self::owner(state, lease).to_owned(),
            |held| held.owner.clone(),
        );
        if let Some(held) = &held {
            let held_for = self.timers.now().saturating_duration_since(held.since);
            metrics::histogram!("leasehold_hold_seconds").record(held_for.as_secs_f64());
            let holder_ended_it =
                matches!(free_cause, FreeCause::Released | FreeCause::LeaseRevoked);
            if holder_ended_it && !forced {
                self.holds.record(name.as_str(), held_for);
            }
        }
        let kind = match free_cause {
            _ if forced => EventKind::ForceReleased,
            FreeCause::Released | FreeCause::LeaseRevoked => EventKind::Released,
            FreeCause::LeaseExpired | FreeCause::MaxHoldExceeded => EventKind::Expired,
        };
        let mut event = event(at, kind, name, lease, &owner);
        event.token = token.0;
        event.detail = match free_cause {
            _ if forced => force_detail(state, lease),
            // The kind says it all; other causes say how it ended.
            FreeCause::Released | FreeCause::LeaseExpired => String::new(),
            FreeCause::LeaseRevoked | FreeCause::MaxHoldExceeded => cause.replace('_', " "),
        };
        // The lease lives on: its holder hears of this end from its next
        // keep-alive reply.
        let lease_lives = matches!(free_cause, FreeCause::Released | FreeCause::MaxHoldExceeded);
        if lease_lives && (forced || free_cause == FreeCause::MaxHoldExceeded) {
            let how = match forced {
                true => format!("force-released {}", event.detail),
                false => "the server released it when its max hold ran out".to_owned(),
            };
            let kind = event.kind.as_str();
            let (name, token) = (name.clone(), token);
            self.ended.record(
                lease,
                EndedHold {
                    name,
                    token,
                    kind,
                    how,
                },
            );
        }
        if forced {
            metrics::counter!("leasehold_force_releases_total").increment(1);
            tracing::warn!(lock = %name, lease = lease.0, owner, token = token.0, cause = %cause, forced, detail = %event.detail, "lock freed");
        } else {
            tracing::info!(lock = %name, lease = lease.0, owner, token = token.0, cause = %cause, "lock freed");
        }
        self.events.record(event);
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
                let reason = error.reason().label();
                metrics::counter!("leasehold_command_failures_total", "reason" => reason)
                    .increment(1);
            }
        }
    }
}

/// An event of `kind` about `name` and `lease` at `at` (token and detail
/// left for the caller to fill in where they apply).
fn event(at: At, kind: EventKind, name: &LockName, lease: LeaseId, owner: &str) -> LockEvent {
    LockEvent {
        kind,
        lock: name.to_string(),
        lease: lease.0,
        owner: owner.to_owned(),
        token: 0,
        revision: at.revision,
        at_unix_ms: at.at_unix_ms,
        detail: String::new(),
        key: String::new(),
        highest_token: 0,
        highest_lock: String::new(),
    }
}

/// A force release's reason and caller, from the incident record (the
/// newest record for the lease: a revoke frees all its locks at once).
fn force_detail(state: &State, lease: LeaseId) -> String {
    state
        .force_releases()
        .rev()
        .find(|record| record.lease == lease)
        .map_or_else(String::new, |record| {
            format!("by {}: {}", record.caller, record.reason)
        })
}

/// `FreeCause::MaxHoldExceeded` → `max_hold_exceeded`. Derived from the
/// variant name so that a cause added to the core is counted without a
/// change here; the label set stays the enum's.
fn free_cause_label(cause: FreeCause) -> String {
    snake_case(&format!("{cause:?}"))
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
    fn applied(&self, state: &State, _index: u64, at_unix_ms: u64, applied: &[Applied]) {
        for outcome in applied {
            Self::outcome(outcome);
            let at = At {
                revision: outcome.revision.0,
                at_unix_ms,
            };
            for effect in &outcome.effects {
                self.effect(state, at, effect);
            }
        }
        metrics::gauge!("leasehold_revision").set(state.revision().0 as f64);
    }

    fn reset(&self, state: &State) {
        let mut held = self.held.lock().expect("held poisoned");
        held.clear();
        self.ended.clear();
        self.timers.rebuild(state);
        let now = self.timers.now();
        for lock in state.locks_with_prefix("") {
            if let Some(holder) = &lock.holder {
                // Hold times of locks taken before the snapshot count from now.
                let owner = Self::owner(state, holder.lease).to_owned();
                held.insert(holder.token, HeldBy { since: now, owner });
            }
        }
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
        assert_eq!(error.reason().label(), "lease_not_found");
    }
}
