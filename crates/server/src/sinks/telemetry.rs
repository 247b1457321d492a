//! Metrics and log lines for applied effects: counts for `/metrics`, and one
//! log line for each grant, renewal, release and expiry with its lock,
//! lease, owner and token (one place, so `grep token=…` answers "who held it
//! when"). The per-lock info lines are written by their own thread
//! ([`lock_lines`](super::lock_lines)), off the apply.
//!
//! Metric labels are bounded: causes and error kinds only, never lock names,
//! leases or owners. Every node applies the same log, so counters agree
//! across nodes; durations are measured on this node's clock.

use super::lease_end_lines::EndTally;
use super::lock_lines::{self, HoldEvent, LockLine};
use super::{Freed, Refusal};
use leasehold_core::{Applied, ForcedBy, FreeCause, LeaseId, LockError, LockName, Reply, Token};
use metrics::{Counter, Histogram};
use std::sync::OnceLock;
use std::time::Duration;

/// Counts the caller-visible result of one command.
pub fn outcome(applied: &Applied) {
    match &applied.outcome {
        Ok(Reply::Released) => metrics::counter!("leasehold_releases_total").increment(1),
        Ok(Reply::KeptAlive { .. }) => metrics::counter!("leasehold_keepalives_total").increment(1),
        Ok(Reply::Proclaimed { .. }) => metrics::counter!("leasehold_proclaims_total").increment(1),
        Ok(_) => {}
        Err(error) => {
            let reason = error.reason().label();
            metrics::counter!("leasehold_command_failures_total", "reason" => reason).increment(1);
        }
    }
}

/// The state's revision after an applied entry.
pub fn revision(revision: u64) {
    metrics::gauge!("leasehold_revision").set(revision as f64);
}

/// A renewal applied; `margin` is the time the lease had left if this node
/// tracked it (a keep-alive, not the grant). Logged at debug (one line per
/// renewal is a lot at scale) with the locks the lease holds: a lease
/// holding one lock logs `lock` and `token` like a grant, so a search for a
/// token finds its renewals too; a lease holding more logs the first
/// [`leasehold_core::RENEWAL_NAMES_LOGGED`] (`held`) and how many (`holds`).
pub fn lease_renewed(
    lease: LeaseId,
    ttl_ms: u64,
    owner: &str,
    (held, holds): (&[(LockName, Token)], usize),
    margin: Option<Duration>,
) {
    let Some(margin) = margin else { return };
    metrics::histogram!("leasehold_keepalive_margin_seconds").record(margin.as_secs_f64());
    metrics::histogram!("leasehold_keepalive_margin_ratio").record(margin_ratio(margin, ttl_ms));
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let margin_ms = margin.as_millis() as u64;
    if let [(lock, token)] = held {
        tracing::debug!(lock = %lock, lease = lease.0, owner, token = token.0, ttl_ms, margin_ms, "lease renewed");
    } else {
        let locks: Vec<String> = held
            .iter()
            .map(|(name, token)| format!("{name}={}", token.0))
            .collect();
        let locks = locks.join(",");
        tracing::debug!(
            locks,
            holds,
            lease = lease.0,
            owner,
            ttl_ms,
            margin_ms,
            "lease renewed"
        );
    }
}

/// A keep-alive's margin as a fraction of the lease's ttl (1: renewed at
/// once, 0: at the deadline).
pub fn margin_ratio(margin: Duration, ttl_ms: u64) -> f64 {
    margin.as_secs_f64() / (ttl_ms.max(1) as f64 / 1000.0)
}

/// A lease ended; an expiry is counted and logged, and so is a revoke
/// whose frees did not all get a line of their own (`tally`).
pub fn lease_ended(lease: LeaseId, expired: bool, tally: EndTally) {
    let (locks_freed, lock_lines_skipped) = (tally.freed, tally.unlogged);
    if expired {
        metrics::counter!("leasehold_leases_expired_total").increment(1);
    }
    if (expired || lock_lines_skipped > 0) && lock_lines::wanted() {
        lock_lines::send(LockLine::LeaseEnded {
            lease,
            expired,
            locks_freed,
            lock_lines_skipped,
        });
    }
}

/// `lease` (of `owner`) got `name` under `token`.
pub fn lock_granted(name: &LockName, lease: LeaseId, owner: &str, token: Token, from_queue: bool) {
    metrics::counter!("leasehold_locks_granted_total").increment(1);
    hold_line(
        HoldEvent::Acquired { from_queue },
        name,
        lease,
        owner,
        token,
    );
}

/// Queues a hold's line for the line thread, if info lines are wanted.
fn hold_line(event: HoldEvent, name: &LockName, lease: LeaseId, owner: &str, token: Token) {
    if lock_lines::wanted() {
        lock_lines::send(LockLine::Hold {
            event,
            lock: name.clone(),
            lease,
            owner: owner.into(),
            token,
        });
    }
}

/// A waiter on this node got its grant after waiting `waited`.
pub fn waited(waited: Duration) {
    metrics::histogram!("leasehold_wait_seconds").record(waited.as_secs_f64());
}

/// The handles a lock free updates, each looked up in the recorder once,
/// on first use: a lease's end frees up to a thousand locks in one apply,
/// and a registry lookup per free and metric was a tenth of the apply's
/// time in an expiry storm (docs/DESIGN.md §6d).
#[derive(Default)]
pub struct FreeMetrics {
    /// `leasehold_locks_freed_total` by cause, in [`FreeCause`] order.
    freed: [OnceLock<Counter>; 4],
    /// `leasehold_hold_seconds`.
    hold_seconds: OnceLock<Histogram>,
}

impl FreeMetrics {
    fn freed(&self, cause: FreeCause) -> &Counter {
        let at = match cause {
            FreeCause::Released => 0,
            FreeCause::LeaseRevoked => 1,
            FreeCause::LeaseExpired => 2,
            FreeCause::MaxHoldExceeded => 3,
        };
        self.freed[at].get_or_init(
            || metrics::counter!("leasehold_locks_freed_total", "cause" => cause.label()),
        )
    }

    fn hold_seconds(&self) -> &Histogram {
        self.hold_seconds
            .get_or_init(|| metrics::histogram!("leasehold_hold_seconds"))
    }
}

/// A lock was freed: counted by cause, its hold time measured, logged (a
/// force release at warn, with who and why) unless `line` says no (one of
/// many frees of a lease's end, see [`lease_end_lines`](super::lease_end_lines)).
pub fn lock_freed(metrics: &FreeMetrics, freed: &Freed, line: bool) {
    metrics.freed(freed.cause).increment(1);
    if let Some(held_for) = freed.held_for {
        metrics.hold_seconds().record(held_for.as_secs_f64());
    }
    let cause = freed.cause.label();
    let (name, lease, owner, token) = (freed.name, freed.lease, freed.owner, freed.token);
    if let Some(by) = freed.forced {
        metrics::counter!("leasehold_force_releases_total").increment(1);
        let detail = force_detail(by);
        let (lease, token) = (lease.0, token.0);
        tracing::warn!(lock = %name, lease, owner, token, cause = %cause, forced = true, detail = %detail, "lock freed");
    } else if line {
        hold_line(HoldEvent::Freed { cause }, name, lease, owner, token);
    }
}

/// A release was refused.
pub fn release_failed(
    name: &LockName,
    lease: LeaseId,
    owner: &str,
    token: Token,
    error: &LockError,
) {
    let reason = error.reason().label();
    metrics::counter!("leasehold_release_failures_total", "reason" => reason).increment(1);
    tracing::info!(lock = %name, lease = lease.0, owner, token = token.0, error = %error, "release failed");
}

/// A refused fenced put: counted by reason and logged at warn, so a stale
/// writer leaves a trace (seed 000: "find stale writes").
pub fn fenced_put_refused(refusal: &Refusal) {
    let Refusal {
        key,
        lock,
        lease,
        owner,
        presented,
        highest_token,
        highest_lock,
        error,
    } = refusal;
    let reason = error.reason().label();
    metrics::counter!("leasehold_fenced_put_refusals_total", "reason" => reason).increment(1);
    tracing::warn!(key = %key, lock = %lock, lease = lease.0, owner, token = presented.0, highest_token, highest_lock, error = %error, "fenced put refused");
}

/// A force release's caller and reason, as events and logs say it.
pub fn force_detail(by: &ForcedBy) -> String {
    format!("by {}: {}", by.caller, by.reason)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn labels_are_snake_cased_variant_names() {
        use FreeCause::*;
        for cause in [Released, LeaseRevoked, LeaseExpired, MaxHoldExceeded] {
            assert_eq!(cause.label(), snake_case(&format!("{cause:?}")));
        }
        let error = LockError::LeaseNotFound { lease: LeaseId(9) };
        assert_eq!(error.reason().label(), "lease_not_found");
    }
}
