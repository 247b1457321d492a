//! The leader's timer layer: the core's [`Lessor`] (lease expiry, end of
//! lock delay, end of max-hold, end of a queued acquire's wait) fed from
//! applied effects on every node, on this node's monotonic [`Clock`] in
//! milliseconds since the timers were made; and the task that, on the
//! leader only, proposes what is due through the replicated log
//! (docs/DESIGN.md guarantee 3).

mod task;

pub use leasehold_core::lessor::Due;
pub use task::{spawn, PROPOSALS_IN_FLIGHT_MAX, WAITS_PER_COMMAND_MAX, WEIGHT_IN_FLIGHT_MAX};

use crate::clock::Clock;
use crate::storage::SharedState;
use leasehold_core::lessor::Lessor;
use leasehold_core::{Effect, LeaseId, LockName, State, Token};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// What a wait's timeout weighs in the timer task's budget: a 256th of it
/// (one `TimeOutWaits` in flight), because each wakes a caller whose reply
/// the node then sends ahead of other clients' work. At one each, a group
/// commit timed out 8,192 waits and took 170 ms to apply and answer; at 4,
/// other clients' p99 was still 44-74 ms, at 32 it is 29-36 ms
/// (docs/DESIGN.md §6d).
pub const WAIT_TIMEOUT_WEIGHT: usize = WEIGHT_IN_FLIGHT_MAX / WAITS_PER_COMMAND_MAX;

/// What a due item frees, for the timer task's in-flight budget: a lease's
/// expiry weighs one plus the locks it holds and waits for (read from the
/// applied state), a wait's timeout [`WAIT_TIMEOUT_WEIGHT`], anything else
/// one.
pub fn weigher(state: SharedState) -> impl Fn(&Due) -> usize + Send + 'static {
    move |due| match due {
        Due::ExpireLease { lease, .. } => state.read(|state| {
            let ends = state.lease(*lease);
            1 + ends.map_or(0, |lease| lease.holds.len() + lease.waits.len())
        }),
        Due::CancelWait { .. } => WAIT_TIMEOUT_WEIGHT,
        _ => 1,
    }
}

/// A lease's renewal count in the applied state: an expiry proposal
/// carries it (see [`Due::command_for_all`]).
pub fn renewal_counts(state: SharedState) -> impl Fn(LeaseId) -> Option<u64> + Send + 'static {
    move |lease| state.read(|state| state.lease(lease).map(|lease| lease.renewals()))
}

/// The shared lessor, its clock, and a wake-up for the timer task.
pub struct Timers {
    lessor: Mutex<Lessor>,
    /// The only clock the deadlines are read on.
    clock: Arc<dyn Clock>,
    /// Millisecond 0 of the lessor's time line: the clock's now when the
    /// timers were made.
    origin: Instant,
    /// Wakes the task when a deadline earlier than its current sleep appears.
    wake: Notify,
    /// The batch this node's proposer formed last: its stamp, and when on
    /// the clock. A wait that batch queues is counted from then, not from
    /// its apply: under load a batch of thousands of acquires takes a second
    /// or more to commit and apply, and its callers' waits began before.
    last_formed: Mutex<Option<(u64, Instant)>>,
}

impl Timers {
    /// Empty timers on `clock`, with `failover_margin` for deadlines that
    /// fall just after this node takes over.
    pub fn new(clock: Arc<dyn Clock>, failover_margin: Duration) -> Timers {
        Timers {
            lessor: Mutex::new(Lessor::new(failover_margin.as_millis() as u64)),
            origin: clock.now(),
            clock,
            wake: Notify::new(),
            last_formed: Mutex::new(None),
        }
    }

    /// This node's proposer formed the batch stamped `at_unix_ms` (and
    /// forms the next only once it applied).
    pub fn batch_formed(&self, at_unix_ms: u64) {
        let formed = (at_unix_ms, self.clock.now());
        *self.last_formed.lock().expect("last batch poisoned") = Some(formed);
    }

    /// How long ago this node formed the batch stamped `at_unix_ms`, if that
    /// is the last it formed; zero for a batch another node proposed, or
    /// one replayed after a restart (counted from its apply, as before).
    fn batch_age_ms(&self, at_unix_ms: u64) -> u64 {
        let last = *self.last_formed.lock().expect("last batch poisoned");
        match last {
            Some((stamp, formed)) if stamp == at_unix_ms => {
                self.now().saturating_duration_since(formed).as_millis() as u64
            }
            _ => 0,
        }
    }

    /// Now on the timers' clock.
    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// Now on the lessor's time line, in ms since the origin, rounded up:
    /// a deadline armed from it never falls before the true one.
    pub fn now_ms(&self) -> u64 {
        let elapsed = self.clock.now().saturating_duration_since(self.origin);
        let ms = elapsed.as_millis() as u64;
        ms + u64::from(elapsed > Duration::from_millis(ms))
    }

    /// Up to `max` items due now. Now is rounded down here, so that no item
    /// is handed out before its deadline.
    pub fn take_due(&self, max: usize) -> Vec<Due> {
        let now_ms = self.now_ms_rounded_down();
        self.update(|lessor, _| lessor.take_due(now_ms, max))
    }

    /// Up to `max` wait timeouts due now that come next (see
    /// [`Lessor::take_due_waits`]); now rounded down, as for `take_due`.
    pub fn take_due_waits(&self, max: usize) -> Vec<Due> {
        let now_ms = self.now_ms_rounded_down();
        self.update(|lessor, _| lessor.take_due_waits(now_ms, max))
    }

    fn now_ms_rounded_down(&self) -> u64 {
        let elapsed = self.clock.now().saturating_duration_since(self.origin);
        elapsed.as_millis() as u64
    }

    /// The instant of millisecond `at_ms` of the lessor's time line.
    pub fn instant_of(&self, at_ms: u64) -> Instant {
        self.origin + Duration::from_millis(at_ms)
    }

    /// Runs `f` on the lessor at now (ms, see [`Timers::now_ms`]); wakes
    /// the task if the earliest deadline moved earlier.
    pub fn update<R>(&self, f: impl FnOnce(&mut Lessor, u64) -> R) -> R {
        let now_ms = self.now_ms();
        let mut lessor = self.lessor.lock().expect("lessor poisoned");
        let before = lessor.next_deadline_ms();
        let result = f(&mut lessor, now_ms);
        let after = lessor.next_deadline_ms();
        drop(lessor);
        if matches!((before, after), (_, Some(a)) if before.is_none_or(|b| a < b)) {
            self.wake.notify_one();
        }
        result
    }

    /// Time left on `lease` (display only).
    pub fn remaining(&self, lease: LeaseId) -> Option<Duration> {
        let left_ms = self.update(|lessor, now_ms| lessor.remaining_ms(lease, now_ms))?;
        Some(Duration::from_millis(left_ms))
    }

    /// Time left in a lock delay (display only).
    pub fn delay_remaining(&self, name: &LockName, token: Token) -> Option<Duration> {
        let left_ms =
            self.update(|lessor, now_ms| lessor.delay_remaining_ms(name, token, now_ms))?;
        Some(Duration::from_millis(left_ms))
    }

    /// Arms or disarms the deadlines an applied effect names (on every
    /// node, in log order; `at_unix_ms` is its batch's stamp). For a
    /// renewal of a lease it already tracks (a keep-alive), returns the time
    /// the lease had left: its margin.
    pub fn effect(&self, effect: &Effect, at_unix_ms: u64) -> Option<Duration> {
        let queued_ms_ago = match effect {
            Effect::WaiterQueued { .. } => self.batch_age_ms(at_unix_ms),
            _ => 0,
        };
        let left_ms = self.update(|lessor, now_ms| {
            match effect {
                Effect::LeaseRenewed {
                    lease,
                    ttl_ms,
                    renewals,
                    ..
                } => {
                    let left_ms = lessor.remaining_ms(*lease, now_ms);
                    lessor.lease_renewed(*lease, *ttl_ms, *renewals, now_ms);
                    return left_ms;
                }
                Effect::LeaseEnded { lease, .. } => lessor.lease_ended(*lease),
                Effect::LockGranted {
                    name,
                    lease,
                    token,
                    from_queue,
                    max_hold_ms,
                    ..
                } => {
                    if *from_queue {
                        lessor.wait_ended(name, *lease);
                    }
                    if *max_hold_ms > 0 {
                        lessor.hold_started(name.clone(), *token, *max_hold_ms, now_ms);
                    }
                }
                Effect::LockFreed { name, token, .. } => lessor.hold_ended(name, *token),
                Effect::WaiterRemoved { name, lease, .. } => lessor.wait_ended(name, *lease),
                Effect::LockDelayStarted {
                    name,
                    token,
                    delay_ms,
                } => lessor.delay_started(name.clone(), *token, *delay_ms, now_ms),
                Effect::WaiterQueued {
                    name,
                    lease,
                    wait_ms,
                } => {
                    let left_ms = wait_ms.saturating_sub(queued_ms_ago);
                    lessor.wait_started(name.clone(), *lease, left_ms, now_ms);
                }
                Effect::ReleaseFailed { .. }
                | Effect::FencedPutRefused { .. }
                | Effect::Proclaimed { .. }
                | Effect::Audited(_) => {}
            }
            None
        })?;
        Some(Duration::from_millis(left_ms))
    }

    /// The command of handed-out items applied.
    pub fn done(&self, items: &[Due]) {
        self.update(|lessor, _| items.iter().for_each(|due| lessor.done(due)));
    }

    /// Forgets every deadline and arms those of `state` from now (after a
    /// snapshot is installed, or at start): each lease gets its full ttl,
    /// each delay, max hold and wait its full length, counted from now.
    pub fn rebuild(&self, state: &State) {
        self.update(|lessor, now_ms| {
            lessor.clear();
            for lease in state.leases() {
                lessor.lease_renewed(lease.id, lease.ttl_ms(), lease.renewals(), now_ms);
            }
            for lock in state.locks_with_prefix("") {
                if let Some(delay) = &lock.delay {
                    let name = lock.name.clone();
                    lessor.delay_started(name, delay.token, delay.delay_ms, now_ms);
                }
                if let Some(holder) = lock.holder.as_ref().filter(|h| h.max_hold_ms > 0) {
                    let name = lock.name.clone();
                    lessor.hold_started(name, holder.token, holder.max_hold_ms.into(), now_ms);
                }
                for waiter in lock.waiters {
                    let name = lock.name.clone();
                    lessor.wait_started(name, waiter.lease, waiter.wait_ms, now_ms);
                }
            }
            for pool in state.pools() {
                for waiter in pool.pool.permits.waiters() {
                    let name = pool.name.clone();
                    lessor.wait_started(name, waiter.lease, waiter.wait_ms, now_ms);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::test_commands::{acquire, grant};
    use leasehold_core::{AcquirePermits, Command, PermitAsk};

    #[test]
    fn a_rebuild_arms_leases_holds_and_waits_from_now() {
        let mut state = State::default();
        let (holder, waiter) = (grant(&mut state, 5_000), grant(&mut state, 5_000));
        let name = LockName::parse("rebuilt").unwrap();
        state.apply(acquire(holder, &name, 0, 900), 0);
        state.apply(acquire(waiter, &name, 700, 0), 0);
        let clock = Arc::new(ManualClock::starting_now());
        let timers = Timers::new(clock.clone(), Duration::ZERO);
        timers.update(|lessor, now_ms| lessor.lease_renewed(LeaseId(99), 1, 0, now_ms));
        clock.advance(Duration::from_secs(10));
        timers.rebuild(&state);
        assert_eq!(timers.remaining(LeaseId(99)), None, "forgotten");
        assert_eq!(timers.remaining(holder), Some(Duration::from_secs(5)));
        clock.advance(Duration::from_millis(700));
        let cancel = Due::CancelWait {
            name: name.clone(),
            lease: waiter,
        };
        assert_eq!(timers.take_due(10), vec![cancel]);
        clock.advance(Duration::from_millis(200));
        assert!(matches!(&timers.take_due(10)[..], [Due::EndHold { .. }]));
    }

    #[test]
    fn a_rebuild_arms_the_waits_of_semaphores_and_read_write_locks() {
        let mut state = State::default();
        let (holder, waiter) = (grant(&mut state, 5_000), grant(&mut state, 5_000));
        let name = LockName::parse("rw").unwrap();
        for (lease, ask, wait_ms) in [
            (holder, PermitAsk::Shared, 0),
            (waiter, PermitAsk::Exclusive, 700),
        ] {
            let name = name.clone();
            let ask = AcquirePermits {
                lease,
                name,
                ask,
                wait_ms,
                request_id: None,
                fenced: false,
            };
            assert!(state.apply(Command::AcquirePermits(ask), 0).outcome.is_ok());
        }
        let clock = Arc::new(ManualClock::starting_now());
        let timers = Timers::new(clock.clone(), Duration::ZERO);
        timers.rebuild(&state);
        clock.advance(Duration::from_millis(699));
        assert!(timers.take_due(10).is_empty());
        clock.advance(Duration::from_millis(1));
        let lease = waiter;
        assert_eq!(timers.take_due(10), vec![Due::CancelWait { name, lease }]);
    }

    #[test]
    fn a_wait_counts_from_when_this_node_formed_its_batch() {
        let clock = Arc::new(ManualClock::starting_now());
        let timers = Timers::new(clock.clone(), Duration::ZERO);
        let name = LockName::parse("q").unwrap();
        let queued = |lease| Effect::WaiterQueued {
            name: name.clone(),
            lease: LeaseId(lease),
            wait_ms: 1_000,
        };
        let cancel = |lease| Due::CancelWait {
            name: name.clone(),
            lease: LeaseId(lease),
        };
        timers.batch_formed(42);
        clock.advance(Duration::from_millis(300));
        timers.effect(&queued(1), 42); // formed here 300 ms ago
        timers.effect(&queued(2), 41); // another node's batch: from now
        clock.advance(Duration::from_millis(699));
        assert!(timers.take_due(9).is_empty());
        clock.advance(Duration::from_millis(1));
        assert_eq!(timers.take_due(9), vec![cancel(1)]);
        clock.advance(Duration::from_millis(299));
        assert!(timers.take_due(9).is_empty());
        clock.advance(Duration::from_millis(1));
        assert_eq!(timers.take_due(9), vec![cancel(2)]);
        // Applied longer after its forming than its whole wait: due now.
        timers.effect(&queued(3), 42);
        assert_eq!(timers.take_due(9), vec![cancel(3)]);
    }

    #[test]
    fn the_lessor_runs_on_the_clock_in_ms_since_the_origin() {
        let clock = Arc::new(ManualClock::starting_now());
        let timers = Timers::new(clock.clone(), Duration::from_millis(500));
        clock.advance(Duration::from_millis(1_500));
        assert_eq!(timers.now_ms(), 1_500);
        timers.update(|lessor, now_ms| lessor.lease_renewed(LeaseId(1), 1_000, 0, now_ms));
        clock.advance(Duration::from_millis(400));
        assert_eq!(
            timers.remaining(LeaseId(1)),
            Some(Duration::from_millis(600))
        );
        assert_eq!(
            timers.instant_of(2_500),
            timers.now() + Duration::from_millis(600)
        );
        clock.advance(Duration::from_micros(599_500));
        assert_eq!(timers.now_ms(), 2_500, "rounded up to arm");
        assert!(timers.take_due(10).is_empty(), "rounded down to take");
        clock.advance(Duration::from_micros(500));
        let due = timers.take_due(10);
        assert_eq!(
            due,
            vec![Due::ExpireLease {
                lease: LeaseId(1),
                mark: leasehold_core::lessor::RenewalMark::of(0)
            }]
        );
    }
}
