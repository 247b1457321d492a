//! Where applied effects go. The state machine calls the hub after applying
//! each log entry, in log order, on every node. The hub is only the table
//! from each kind of effect to the [sinks](crate::sinks) that act on it;
//! each effect carries what its sinks need, so nothing here reads the state
//! (except [`ApplyListener::reset`], when a snapshot replaces it).

use crate::events::Stamp;
use crate::sinks::{telemetry, Freed, Refusal, Sinks};
use crate::storage::ApplyListener;
use crate::waiters::WaitResult;
use leasehold_core::{Applied, Effect, FreeCause, LeaseId, State, WaitEndCause};

/// Routes effects to the sinks.
pub struct ApplyHub {
    sinks: Sinks,
}

impl ApplyHub {
    /// A hub feeding `sinks`.
    pub fn new(sinks: Sinks) -> ApplyHub {
        ApplyHub { sinks }
    }

    fn effect(&self, at: Stamp, effect: &Effect) {
        let sinks = &self.sinks;
        // Every deadline effect arms or disarms a timer.
        let margin = sinks.timers.effect(effect);
        match effect {
            Effect::LeaseRenewed {
                lease,
                ttl_ms,
                owner,
                held,
                ..
            } => telemetry::lease_renewed(*lease, *ttl_ms, owner, held, margin),
            Effect::LeaseEnded { lease, expired } => {
                sinks.ended.lease_ended(*lease);
                telemetry::lease_ended(*lease, *expired);
            }
            Effect::LockGranted {
                name,
                lease,
                token,
                from_queue,
                owner,
                ..
            } => {
                if *from_queue {
                    let granted = WaitResult::Granted(*token);
                    if let Some(waited) = sinks.waiters.wake(name, *lease, granted) {
                        telemetry::waited(waited);
                    }
                }
                sinks.holders.granted(*token);
                telemetry::lock_granted(name, *lease, owner, *token, *from_queue);
                sinks
                    .events
                    .lock_granted(at, name, *lease, owner, *token, *from_queue);
            }
            Effect::LockFreed {
                name,
                lease,
                token,
                cause,
                forced,
                owner,
            } => self.lock_freed(
                at,
                Freed {
                    name,
                    lease: *lease,
                    owner,
                    token: *token,
                    cause: *cause,
                    forced: forced.as_ref(),
                    held_for: sinks.holders.freed(*token),
                },
            ),
            Effect::WaiterRemoved {
                name,
                lease,
                cause,
                owner,
            } => {
                sinks
                    .waiters
                    .wake(name, *lease, WaitResult::Removed(*cause));
                if *cause == WaitEndCause::TimedOut {
                    sinks.events.waiter_timed_out(at, name, *lease, owner);
                }
            }
            Effect::ReleaseFailed {
                name,
                lease,
                token,
                error,
                owner,
            } => {
                // The lease is gone: its grant was logged with the owner,
                // under the same lease and token.
                let owner = owner.as_deref().unwrap_or("?");
                telemetry::release_failed(name, *lease, owner, *token, error);
                sinks
                    .events
                    .release_failed(at, name, *lease, owner, *token, error);
            }
            Effect::FencedPutRefused {
                key,
                lock,
                lease,
                owner,
                presented,
                highest,
                highest_lock,
                error,
            } => {
                let refusal = Refusal {
                    key,
                    lock,
                    lease: lease.unwrap_or(LeaseId(0)),
                    owner,
                    presented: *presented,
                    highest_token: highest.map_or(0, |t| t.0),
                    highest_lock: highest_lock.as_ref().map_or("", |l| l.as_str()),
                    error,
                };
                telemetry::fenced_put_refused(&refusal);
                sinks.events.fenced_put_refused(at, &refusal);
            }
            // Deadlines only: the timers took them above.
            Effect::LockDelayStarted { .. } | Effect::WaiterQueued { .. } => {}
        }
    }

    fn lock_freed(&self, at: Stamp, freed: Freed) {
        telemetry::lock_freed(&freed);
        // Only holds their holder ended measure the work: an expiry's
        // includes the ttl after the holder died, a force release is an
        // incident.
        let holder_ended_it = matches!(freed.cause, FreeCause::Released | FreeCause::LeaseRevoked);
        if let Some(held_for) = freed
            .held_for
            .filter(|_| holder_ended_it && freed.forced.is_none())
        {
            self.sinks.holds.record(freed.name.as_str(), held_for);
        }
        self.sinks.ended.lock_freed(&freed);
        self.sinks.events.lock_freed(at, &freed);
    }
}

impl ApplyListener for ApplyHub {
    fn applied(&self, state: &State, _index: u64, at_unix_ms: u64, applied: &[Applied]) {
        for outcome in applied {
            telemetry::outcome(outcome);
            let at = Stamp {
                revision: outcome.revision.0,
                at_unix_ms,
            };
            for effect in &outcome.effects {
                self.effect(at, effect);
            }
        }
        telemetry::revision(state.revision().0);
    }

    fn reset(&self, state: &State) {
        self.sinks.holders.reset(state);
        self.sinks.ended.clear();
        self.sinks.timers.rebuild(state);
    }
}
