//! Where applied effects go. The state machine calls the hub after applying
//! each log entry, in log order, on every node. The hub is only the table
//! from each kind of effect to the [sinks](crate::sinks) that act on it;
//! each effect carries what its sinks need, so nothing here reads the state
//! (except [`ApplyListener::reset`], when a snapshot replaces it).

use crate::events::{About, Stamp};
use crate::sinks::lease_end_lines::LeaseEndLines;
use crate::sinks::{telemetry, Freed, Refusal, Sinks};
use crate::storage::ApplyListener;
use crate::waiters::WaitResult;
use leasehold_core::{
    Applied, Effect, FreeCause, LeaseId, LockName, Reply, Revision, State, Token, WaitEndCause,
};
use std::sync::atomic::{AtomicU64, Ordering};

/// Routes effects to the sinks.
pub struct ApplyHub {
    sinks: Sinks,
    /// Entries up to this log index were applied before this process
    /// started (the committed index found at open): applying them again
    /// rebuilds the derived state (timers, holders, events) but is not
    /// news, so it is neither logged line by line nor counted again.
    replayed_until: AtomicU64,
    /// Which frees of a lease's end get a log line of their own.
    lease_end_lines: LeaseEndLines,
    /// The metric handles every free updates.
    free_metrics: telemetry::FreeMetrics,
}

impl ApplyHub {
    /// A hub feeding `sinks`.
    pub fn new(sinks: Sinks) -> ApplyHub {
        ApplyHub {
            sinks,
            replayed_until: AtomicU64::new(0),
            lease_end_lines: LeaseEndLines::default(),
            free_metrics: telemetry::FreeMetrics::default(),
        }
    }

    /// Entries up to `index` are a replay of what this node applied before
    /// it restarted.
    pub fn replaying_until(&self, index: u64) {
        self.replayed_until.store(index, Ordering::Relaxed);
    }

    /// The table: each kind of effect, and the sinks that act on it.
    /// Telemetry (log lines, counters) is for news only, not a replay.
    fn effect(&self, at: Stamp, effect: &Effect) {
        let sinks = &self.sinks;
        // Every deadline effect arms or disarms a timer; a keep-alive's
        // margin comes back.
        let margin = sinks.timers.effect(effect, at.at_unix_ms);
        match effect {
            Effect::LeaseRenewed {
                lease,
                ttl_ms,
                owner,
                held,
                holds,
                ..
            } => {
                if !at.replayed {
                    if let Some(margin) = margin {
                        let ratio = telemetry::margin_ratio(margin, *ttl_ms);
                        sinks.samples.renewed(ratio);
                    }
                    telemetry::lease_renewed(*lease, *ttl_ms, owner, (held, *holds), margin);
                }
            }
            Effect::LeaseEnded { lease, expired } => {
                sinks.ended.lease_ended(*lease);
                let tally = self.lease_end_lines.ended(*lease);
                if !at.replayed {
                    if *expired {
                        sinks.samples.expired();
                    }
                    telemetry::lease_ended(*lease, *expired, tally);
                }
            }
            Effect::LockGranted { .. } => self.lock_granted(at, effect),
            Effect::LockFreed { .. } => self.lock_freed(at, effect),
            Effect::WaiterRemoved {
                name,
                lease,
                cause,
                owner,
            } => {
                let removed = WaitResult::Removed(*cause);
                sinks
                    .waiters
                    .wake(name, *lease, Revision(at.revision), removed);
                if *cause == WaitEndCause::TimedOut {
                    let about = about(name, *lease, owner, Token(0));
                    sinks.events.waiter_timed_out(at, about);
                }
            }
            Effect::ReleaseFailed { .. } => self.release_failed(at, effect),
            Effect::FencedPutRefused { .. } => self.fenced_put_refused(at, effect),
            Effect::Audited(record) => self.sinks.events.audited(at, record),
            Effect::Proclaimed {
                name,
                lease,
                token,
                value,
                owner,
            } => {
                let about = about(name, *lease, owner, *token);
                self.sinks.events.proclaimed(at, about, value);
            }
            // Deadlines only: the timers took them above.
            Effect::LockDelayStarted { .. } | Effect::WaiterQueued { .. } => {}
        }
    }

    /// A grant: wake the waiter, date the hold, log it,
    /// record it.
    fn lock_granted(&self, at: Stamp, effect: &Effect) {
        let Effect::LockGranted {
            name,
            lease,
            token,
            from_queue,
            owner,
            value,
            ..
        } = effect
        else {
            return;
        };
        if *from_queue {
            let granted = WaitResult::Granted(*token);
            let waiters = &self.sinks.waiters;
            waiters.wake(name, *lease, Revision(at.revision), granted);
        }
        self.sinks.holders.granted(*token, at.at_unix_ms);
        if !at.replayed {
            self.sinks.samples.granted();
            telemetry::lock_granted(name, *lease, owner, *token, *from_queue);
        }
        let about = about(name, *lease, owner, *token);
        let value = value.as_deref();
        self.sinks
            .events
            .lock_granted(at, about, *from_queue, value);
    }

    /// A free: end the hold's time, count and log it, file it by prefix
    /// if its holder ended it, tell the holder if the server did, record it.
    fn lock_freed(&self, at: Stamp, effect: &Effect) {
        let Effect::LockFreed {
            name,
            lease,
            token,
            acquired_unix_ms,
            cause,
            forced,
            owner,
        } = effect
        else {
            return;
        };
        let freed = Freed {
            name,
            lease: *lease,
            owner,
            token: *token,
            cause: *cause,
            forced: forced.as_ref(),
            held_for: self.sinks.holders.held_for(*token, *acquired_unix_ms),
        };
        let by_lease_end = matches!(cause, FreeCause::LeaseExpired | FreeCause::LeaseRevoked);
        let line = !by_lease_end || self.lease_end_lines.freed(*lease);
        if !at.replayed {
            telemetry::lock_freed(&self.free_metrics, &freed, line);
        }
        // Only holds their holder ended measure the work: an expiry's
        // includes the ttl after the holder died, a force release is an
        // incident.
        let holder_ended_it = matches!(freed.cause, FreeCause::Released | FreeCause::LeaseRevoked);
        if let Some(held_for) = freed
            .held_for
            .filter(|_| holder_ended_it && forced.is_none())
        {
            self.sinks.holds.record(name.as_str(), held_for);
        }
        self.sinks.ended.lock_freed(&freed);
        self.sinks.events.lock_freed(at, &freed);
    }

    fn release_failed(&self, at: Stamp, effect: &Effect) {
        let Effect::ReleaseFailed {
            name,
            lease,
            token,
            error,
            owner,
        } = effect
        else {
            return;
        };
        // The lease is gone: its grant was logged with the owner, under
        // the same lease and token.
        let owner = owner.as_deref().unwrap_or("?");
        if !at.replayed {
            telemetry::release_failed(name, *lease, owner, *token, error);
        }
        let about = about(name, *lease, owner, *token);
        self.sinks.events.release_failed(at, about, error);
    }

    fn fenced_put_refused(&self, at: Stamp, effect: &Effect) {
        let Effect::FencedPutRefused {
            key,
            lock,
            lease,
            owner,
            presented,
            highest,
            highest_lock,
            error,
        } = effect
        else {
            return;
        };
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
        if !at.replayed {
            telemetry::fenced_put_refused(&refusal);
        }
        self.sinks.events.fenced_put_refused(at, &refusal);
    }
}

/// What an event is about.
fn about<'a>(name: &'a LockName, lease: LeaseId, owner: &'a str, token: Token) -> About<'a> {
    About {
        name,
        lease,
        owner,
        token: token.0,
    }
}

impl ApplyListener for ApplyHub {
    fn applied(&self, state: &State, index: u64, at_unix_ms: u64, applied: &[Applied]) {
        let replayed_until = self.replayed_until.load(Ordering::Relaxed);
        let replayed = index <= replayed_until;
        for outcome in applied {
            if !replayed {
                telemetry::outcome(outcome);
                if matches!(outcome.outcome, Ok(Reply::Released)) {
                    self.sinks.samples.released();
                }
            }
            let at = Stamp {
                revision: outcome.revision.0,
                at_unix_ms,
                replayed,
            };
            for effect in &outcome.effects {
                self.effect(at, effect);
            }
            self.sinks
                .leaders
                .command_applied(at.revision, &outcome.effects);
        }
        telemetry::revision(state.revision().0);
        if index == replayed_until {
            tracing::debug!(
                index,
                locks = state.lock_count(),
                leases = state.lease_count(),
                "restored the state from the log"
            );
        }
    }

    fn reset(&self, state: &State) {
        self.sinks.holders.reset();
        self.sinks.ended.clear();
        self.sinks.timers.rebuild(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::events::EventKind;
    use leasehold_core::{ForcedBy, Reply};
    use std::sync::Arc;
    use std::time::Duration;

    fn applied(revision: u64, effects: Vec<Effect>) -> Applied {
        Applied {
            revision: Revision(revision),
            outcome: Ok(Reply::TimerApplied),
            effects,
        }
    }

    /// The sinks act on the effects alone: the state handed over is empty,
    /// yet the events name the owner, the forced free says who and why,
    /// the holder hears of it, and only the holder's own release is filed
    /// as a hold time.
    #[test]
    fn sinks_act_on_what_the_effects_carry() {
        let clock = Arc::new(ManualClock::starting_now());
        let sinks = Sinks::new(clock.clone(), Duration::ZERO);
        let hub = ApplyHub::new(sinks.clone());
        let (name, lease, owner) = (LockName::parse("jobs/a").unwrap(), LeaseId(1), "alice");
        // Grants are dated from their proposal's wall time: now.
        let now_unix_ms = crate::clock::wall_unix_ms();
        let granted = |token| Effect::LockGranted {
            name: name.clone(),
            lease,
            token: Token(token),
            from_queue: false,
            max_hold_ms: 0,
            owner: owner.into(),
            value: None,
        };
        let freed = |token, forced| Effect::LockFreed {
            name: name.clone(),
            lease,
            token: Token(token),
            acquired_unix_ms: now_unix_ms,
            cause: FreeCause::Released,
            forced,
            owner: owner.into(),
        };
        let empty = State::default();
        hub.applied(&empty, 1, now_unix_ms, &[applied(2, vec![granted(2)])]);
        clock.advance(Duration::from_millis(300));
        let held = sinks.holders.held_for(Token(2), now_unix_ms);
        let held = held.expect("the grant was dated");
        assert!(held >= Duration::from_millis(300), "{held:?}");
        assert!(held < Duration::from_millis(400), "{held:?}");
        hub.applied(&empty, 2, 8, &[applied(3, vec![freed(2, None)])]);
        hub.applied(&empty, 3, now_unix_ms, &[applied(4, vec![granted(4)])]);
        let by = ForcedBy {
            caller: "ops".into(),
            reason: "hung".into(),
        };
        hub.applied(&empty, 4, 10, &[applied(5, vec![freed(4, Some(by))])]);

        let events = sinks.events.recent("", 10);
        let kinds: Vec<_> = events.iter().map(|e| (e.kind, e.token)).collect();
        assert_eq!(
            kinds,
            [
                (EventKind::Acquired, 2),
                (EventKind::Released, 2),
                (EventKind::Acquired, 4),
                (EventKind::ForceReleased, 4)
            ]
        );
        assert!(events.iter().all(|e| e.owner == owner));
        assert_eq!(events[3].detail, "by ops: hung");
        let ended = sinks.ended.of(lease);
        assert_eq!(ended.len(), 1);
        assert_eq!(ended[0].how, "force-released by ops: hung");
        let filed = sinks
            .holds
            .summary("jobs/a")
            .expect("the release was filed");
        assert_eq!(filed.holds, 1, "the forced free is not a hold time");
    }
}
