//! Tests of the timer task on tokio's paused clock: leadership is a watch
//! channel and proposals go to a recorder, so each test states who leads
//! and when each proposal completes.

use super::*;
use crate::clock::TokioClock;
use leasehold_core::{LeaseId, LockName};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// Proposals seen, with when they were made.
type Seen = Arc<Mutex<Vec<(Duration, Command)>>>;

fn timers(failover_margin_ms: u64) -> Arc<Timers> {
    let margin = Duration::from_millis(failover_margin_ms);
    Arc::new(Timers::new(Arc::new(TokioClock), margin))
}

/// A proposer that records each command at once and reports it applied.
fn recorder(
    start: Instant,
) -> (
    Seen,
    impl Fn(Command) -> std::future::Ready<Result<(), String>>,
) {
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    let propose = move |command| {
        sink.lock().unwrap().push((start.elapsed(), command));
        std::future::ready(Ok(()))
    };
    (seen, propose)
}

/// Runs the task: this node leads while `leadership` says `true`, and every
/// item weighs one.
fn spawn_leading_when_told<F>(
    timers: Arc<Timers>,
    leadership: watch::Receiver<bool>,
    propose: impl Fn(Command) -> F + Send + 'static,
) where
    F: Future<Output = Result<(), String>> + Send + 'static,
{
    let read = applied(|_| 1, STATE_COUNT);
    tokio::spawn(run(timers, leadership, |leads| *leads, read, propose));
}

/// The renewal count the tests' applied state gives every lease.
const STATE_COUNT: u64 = 3;

/// The applied state as the task reads it: items weigh by `weigh`, and
/// every lease's renewal count is `count`.
fn applied(
    weigh: impl Fn(&Due) -> usize,
    count: u64,
) -> Applied<impl Fn(&Due) -> usize, impl Fn(LeaseId) -> Option<u64>> {
    Applied {
        weigh,
        renewals_of: move |_| Some(count),
    }
}

/// Runs the task as the leader while the returned sender lives, reading
/// the applied state through `read`.
fn spawn_leader<F>(
    timers: Arc<Timers>,
    read: Applied<
        impl Fn(&Due) -> usize + Send + 'static,
        impl Fn(LeaseId) -> Option<u64> + Send + 'static,
    >,
    propose: impl Fn(Command) -> F + Send + 'static,
) -> watch::Sender<bool>
where
    F: Future<Output = Result<(), String>> + Send + 'static,
{
    let (leader, leadership) = watch::channel(true);
    tokio::spawn(run(timers, leadership, |leads| *leads, read, propose));
    leader
}

#[tokio::test(start_paused = true)]
async fn a_renewal_the_lessor_has_not_heard_of_holds_the_expiry_back() {
    let start = Instant::now();
    let timers = timers(0);
    timers.update(|lessor, now_ms| lessor.lease_renewed(LeaseId(1), 1_000, 3, now_ms));
    // The state applied the 4th renewal; the lessor has not heard of it.
    let (seen, propose) = recorder(start);
    let _leader = spawn_leader(timers.clone(), applied(|_| 1, 4), propose);

    tracing::info!("phase: due at 1000 ms, but the state's count is not the lessor's");
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    assert!(seen.lock().unwrap().is_empty(), "no expiry proposed");

    tracing::info!("phase: the lessor hears of the renewal at 1200 ms: due at 2200 ms");
    timers.update(|lessor, now_ms| lessor.lease_renewed(LeaseId(1), 1_000, 4, now_ms));
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let expire = Command::ExpireLease {
        lease: LeaseId(1),
        renewals: 4,
    };
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, vec![(Duration::from_millis(2_200), expire)]);
}

#[tokio::test(start_paused = true)]
async fn only_the_leader_proposes_and_inherited_deadlines_get_the_margin() {
    let start = Instant::now();
    let timers = timers(500);
    timers.update(|lessor, now_ms| lessor.lease_renewed(LeaseId(1), 1_000, 3, now_ms));
    let (leader, leadership) = watch::channel(false);
    let (seen, propose) = recorder(start);
    spawn_leading_when_told(timers.clone(), leadership, propose);

    tracing::info!("phase: a follower proposes nothing");
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert!(seen.lock().unwrap().is_empty());

    tracing::info!("phase: leader at 900 ms: the deadline at 1000 ms moves to 1500 ms");
    leader.send(true).unwrap();
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let seen = seen.lock().unwrap().clone();
    let expire = Command::ExpireLease {
        lease: LeaseId(1),
        renewals: 3,
    };
    assert_eq!(seen[0], (Duration::from_millis(1_500), expire.clone()));
    // Still armed (only the lease's end removes it): retried later.
    assert_eq!(seen[1], (Duration::from_millis(2_000), expire));
}

/// A proposer whose proposals complete only as the test adds permits to
/// `gate`; it counts what is in flight, the most ever in flight, and what
/// applied.
struct Gated {
    gate: Arc<Semaphore>,
    in_flight: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
    applied: Arc<AtomicUsize>,
}

/// A gated proposal.
type Proposal = std::pin::Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

impl Gated {
    fn new() -> (Gated, impl Fn(Command) -> Proposal) {
        let gated = Gated {
            gate: Arc::new(Semaphore::new(0)),
            in_flight: Arc::default(),
            most: Arc::default(),
            applied: Arc::default(),
        };
        let (gate, in_flight, most, applied) = (
            gated.gate.clone(),
            gated.in_flight.clone(),
            gated.most.clone(),
            gated.applied.clone(),
        );
        let propose = move |_command| {
            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            let (gate, in_flight, applied) = (gate.clone(), in_flight.clone(), applied.clone());
            let proposal = async move {
                gate.acquire().await.unwrap().forget();
                in_flight.fetch_sub(1, Ordering::SeqCst);
                applied.fetch_add(1, Ordering::SeqCst);
                Ok(())
            };
            Box::pin(proposal) as Proposal
        };
        (gated, propose)
    }
}

#[tokio::test(start_paused = true)]
async fn heavy_expiries_are_bounded_by_weight_and_an_overweight_one_is_not_stuck() {
    let timers = timers(0);
    // Leases 1..=9 weigh 3,000 each (a third of the budget, about); lease
    // 10 alone outweighs the whole budget.
    let heavy = WEIGHT_IN_FLIGHT_MAX * 3 / 8;
    timers.update(|lessor, now_ms| {
        for id in 1..=10 {
            lessor.lease_renewed(LeaseId(id), 100 + id, STATE_COUNT, now_ms);
        }
    });
    let weigh = move |due: &Due| match due {
        Due::ExpireLease { lease, .. } if lease.0 == 10 => WEIGHT_IN_FLIGHT_MAX * 2,
        _ => heavy,
    };
    let (gated, propose) = Gated::new();
    let _leader = spawn_leader(timers.clone(), applied(weigh, STATE_COUNT), propose);

    tracing::info!("phase: all due; only as many as the weight allows are in flight");
    tokio::time::sleep(Duration::from_millis(200)).await;
    // 3 × 3/8 of the budget: the third goes while the weight is under it.
    assert_eq!(gated.in_flight.load(Ordering::SeqCst), 3);

    tracing::info!("phase: one at a time, each completes, the overweight one too");
    for applied in 1..=10 {
        gated.gate.add_permits(1);
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(gated.applied.load(Ordering::SeqCst), applied);
    }
    assert_eq!(gated.most.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn at_most_the_bound_is_in_flight_and_the_rest_follow() {
    let timers = timers(0);
    let items = 3 * PROPOSALS_IN_FLIGHT_MAX + 7;
    timers.update(|lessor, now_ms| {
        for i in 0..items {
            let name = LockName::parse(&format!("storm/{i}")).unwrap();
            lessor.hold_started(name, leasehold_core::Token(i as u64 + 1), 100, now_ms);
        }
    });
    let (_leader, leadership) = watch::channel(true);
    let (gated, propose) = Gated::new();
    let Gated {
        gate,
        in_flight,
        most,
        applied,
    } = gated;
    spawn_leading_when_told(timers.clone(), leadership, propose);

    tracing::info!("phase: everything is due; only the bound is proposed");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(in_flight.load(Ordering::SeqCst), PROPOSALS_IN_FLIGHT_MAX);
    let tasks = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    assert_eq!(tasks, 1, "one timer task, no task per item");

    tracing::info!("phase: as proposals complete, the rest follow, each once");
    gate.add_permits(items);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(applied.load(Ordering::SeqCst), items);
    assert_eq!(most.load(Ordering::SeqCst), PROPOSALS_IN_FLIGHT_MAX);
    assert_eq!(timers.update(|lessor, _| lessor.timer_count()), 0);
}

#[tokio::test(start_paused = true)]
async fn a_follower_with_overdue_deadlines_does_not_spin() {
    let timers = timers(0);
    let name = LockName::parse("overdue").unwrap();
    timers.update(|lessor, now_ms| lessor.delay_started(name, leasehold_core::Token(1), 0, now_ms));
    let (_leader, leadership) = watch::channel(false);
    let looks = Arc::new(AtomicUsize::new(0));
    let counter = looks.clone();
    let leads = move |_: &bool| {
        counter.fetch_add(1, Ordering::SeqCst);
        false
    };
    let (_seen, propose) = recorder(Instant::now());
    tokio::spawn(run(timers, leadership, leads, applied(|_| 1, 0), propose));
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert_eq!(looks.load(Ordering::SeqCst), 1, "it waits for leadership");
}

#[tokio::test(start_paused = true)]
async fn waits_due_together_go_as_bounded_batches_each_wait_once() {
    let timers = timers(0);
    let waits = 2 * WAITS_PER_COMMAND_MAX + 3;
    timers.update(|lessor, now_ms| {
        for i in 0..waits {
            let name = LockName::parse(&format!("queue/{i:04}")).unwrap();
            lessor.wait_started(name, LeaseId(1 + i as u64 % 7), 100, now_ms);
        }
        // Due at the same millisecond, ordered before the waits.
        let held = LockName::parse("held").unwrap();
        lessor.hold_started(held, leasehold_core::Token(1), 100, now_ms);
    });
    let (_leader, leadership) = watch::channel(true);
    let (seen, propose) = recorder(Instant::now());
    spawn_leading_when_told(timers.clone(), leadership, propose);
    tokio::time::sleep(Duration::from_millis(150)).await;

    let seen = seen.lock().unwrap().clone();
    let mut sizes = Vec::new();
    let mut timed_out = std::collections::BTreeSet::new();
    for (_, command) in seen {
        match command {
            Command::EndHold { .. } => sizes.push(1),
            Command::TimeOutWaits { waits } => {
                sizes.push(waits.len());
                timed_out.extend(waits);
            }
            other => panic!("unexpected proposal {other:?}"),
        }
    }
    let batch = WAITS_PER_COMMAND_MAX;
    assert_eq!(sizes, vec![1, batch, batch, 3]);
    assert_eq!(timed_out.len(), waits, "each wait once");
    let armed = timers.update(|lessor, _| lessor.timer_count());
    assert_eq!(armed, 0, "every applied item disarmed");
}

#[tokio::test(start_paused = true)]
async fn wait_timeouts_in_flight_are_bounded_by_their_weight() {
    let timers = timers(0);
    timers.update(|lessor, now_ms| {
        for i in 0..3_000 {
            let name = LockName::parse(&format!("queue/{i:04}")).unwrap();
            lessor.wait_started(name, LeaseId(1), 100, now_ms);
        }
    });
    let waits_in_flight = Arc::new(AtomicUsize::new(0));
    let counter = waits_in_flight.clone();
    let propose = move |command: Command| {
        if let Command::TimeOutWaits { waits } = command {
            counter.fetch_add(waits.len(), Ordering::SeqCst);
        }
        std::future::pending::<Result<(), String>>()
    };
    let weigh = |due: &Due| match due {
        Due::CancelWait { .. } => crate::timers::WAIT_TIMEOUT_WEIGHT,
        _ => 1,
    };
    let _leader = spawn_leader(timers, applied(weigh, 0), propose);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let in_flight = waits_in_flight.load(Ordering::SeqCst);
    assert_eq!(in_flight, WAITS_PER_COMMAND_MAX, "one command's worth");
}
