//! The timer task: one task that feeds the lessor the clock and, while this
//! node leads, proposes what is due. At most [`PROPOSALS_IN_FLIGHT_MAX`]
//! proposals are in flight at once, polled inside this task (no task per
//! item); they travel through the proposer's group commit, so a storm of
//! expiries is committed in batches between client commands rather than
//! ahead of them. They are also bounded by what they free: each item
//! weighs one plus the locks its lease holds or waits for, and at most
//! [`WEIGHT_IN_FLIGHT_MAX`] is in flight, so one group commit never frees a
//! million locks under the state's write lock while clients wait (a lease
//! holds at most `LOCKS_PER_LEASE_MAX`, so one item alone is always
//! bounded). Wait timeouts due together go as one `TimeOutWaits` of at most
//! [`WAITS_PER_COMMAND_MAX`] (each weighs one): a hundred thousand waits
//! ending within seconds cost a few hundred log entries, not a hundred
//! thousand proposals. A due item stays armed (re-armed a little later) until
//! its command's effect removes it, so a proposal lost to a leadership
//! change is retried by whoever leads next.

use super::{Due, Timers};
use crate::proposer::Proposer;
use crate::raft::types::Raft;
use futures::stream::{FuturesUnordered, StreamExt};
use leasehold_core::{Command, LeaseId};
use openraft::metrics::RaftServerMetrics;
use openraft::BasicNode;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::sleep_until;

/// Proposals of due items in flight at once, at most: bounds the memory and
/// the share of each group commit an expiry storm takes; the rest stay due
/// and follow as these complete.
pub const PROPOSALS_IN_FLIGHT_MAX: usize = 256;

/// Weight of the proposals in flight at once, at most (an item weighs one
/// plus the locks and waits its lease ends): what one group commit may
/// free, and so how long its apply holds the state's write lock. An item
/// heavier than this alone is proposed when nothing else is in flight.
pub const WEIGHT_IN_FLIGHT_MAX: usize = 8_192;

/// Wait timeouts proposed as one command, at most.
pub const WAITS_PER_COMMAND_MAX: usize = 256;

/// Longest sleep while leading (deadlines and leadership changes wake the
/// task sooner; this bounds the cost of a missed wake-up).
const POLL_MAX: Duration = Duration::from_millis(100);

/// A proposal in flight: its items, their weight, and whether their
/// command applied.
type InFlight = Pin<Box<dyn Future<Output = (Vec<Due>, usize, Result<(), String>)> + Send>>;

/// Starts the timer task; it ends when `raft` shuts down. `weigh` says
/// what an item frees (see [`WEIGHT_IN_FLIGHT_MAX`]), `renewals_of` a
/// lease's renewal count in the applied state (see [`Due::command_for_all`]).
pub fn spawn(
    timers: Arc<Timers>,
    proposer: Proposer,
    raft: Raft,
    node_id: u64,
    weigh: impl Fn(&Due) -> usize + Send + 'static,
    renewals_of: impl Fn(LeaseId) -> Option<u64> + Send + 'static,
) {
    // Server metrics change only with votes, roles and membership, not
    // with every applied entry: waking on them costs nothing per write.
    let leadership = raft.server_metrics();
    let propose = move |command: Command| {
        let proposer = proposer.clone();
        async move {
            let applied = proposer.propose(command).await;
            applied.map(|_| ()).map_err(|error| error.to_string())
        }
    };
    let leads =
        move |metrics: &RaftServerMetrics<u64, BasicNode>| metrics.current_leader == Some(node_id);
    let read = Applied { weigh, renewals_of };
    tokio::spawn(run(timers, leadership, leads, read, propose));
}

/// What the task reads of the applied state: what an item frees, and a
/// lease's renewal count.
pub(super) struct Applied<W, R> {
    pub weigh: W,
    pub renewals_of: R,
}

/// The loop: tracks leadership from `leadership` (this node leads when
/// `leads` says so), and while leading proposes due items with `propose`,
/// at most [`PROPOSALS_IN_FLIGHT_MAX`] and [`WEIGHT_IN_FLIGHT_MAX`] (by
/// `applied.weigh`) at a time. Ends when `leadership`'s sender is gone.
pub(super) async fn run<T, F>(
    timers: Arc<Timers>,
    mut leadership: watch::Receiver<T>,
    leads: impl Fn(&T) -> bool,
    applied: Applied<impl Fn(&Due) -> usize, impl Fn(LeaseId) -> Option<u64>>,
    propose: impl Fn(Command) -> F,
) where
    F: Future<Output = Result<(), String>> + Send + 'static,
{
    let Applied { weigh, renewals_of } = applied;
    let mut in_flight: FuturesUnordered<InFlight> = FuturesUnordered::new();
    let mut weight_in_flight = 0;
    let mut leading = false;
    loop {
        let is_leader = leads(&leadership.borrow_and_update());
        if is_leader != leading {
            leading = is_leader;
            timers.update(|lessor, now_ms| lessor.set_leader_since(leading.then_some(now_ms)));
            tracing::info!(leading, "leadership changed");
        }
        while leading && has_room(in_flight.len(), weight_in_flight) {
            let items = take_next(&timers, weight_in_flight, &weigh);
            if items.is_empty() {
                break;
            }
            let Some(command) = Due::command_for_all(&items, &renewals_of) else {
                // Moot: the lease ended, or was renewed, since the lessor
                // handed the item out (the lessor has re-armed or dropped
                // it already; a re-armed retry covers any other case).
                continue;
            };
            let weight = items.iter().map(&weigh).sum::<usize>();
            weight_in_flight += weight;
            let proposal = propose(command);
            in_flight.push(Box::pin(async move { (items, weight, proposal.await) }));
        }
        // Not leading: nothing to propose, whatever is overdue. Full: what
        // is due waits for a proposal to complete.
        let sleeps = leading && has_room(in_flight.len(), weight_in_flight);
        let wake_at = next_wake(&timers);
        tokio::select! {
            () = sleep_until(wake_at), if sleeps => {}
            () = timers.wake.notified(), if sleeps => {}
            Some((items, weight, applied)) = in_flight.next(), if !in_flight.is_empty() => {
                weight_in_flight -= weight;
                match applied {
                    Ok(()) => timers.done(&items),
                    Err(error) => tracing::debug!(first = ?items[0], count = items.len(), %error,
                        "timer proposal failed; will retry"),
                }
            }
            changed = leadership.changed() => if changed.is_err() { return },
        }
    }
}

/// The items of the next proposal: the next due item, and if it is a wait
/// timeout the wait timeouts due after it, up to [`WAITS_PER_COMMAND_MAX`]
/// and the weight left (each weighs as the first; empty: nothing is due).
fn take_next(timers: &Timers, weight_in_flight: usize, weigh: impl Fn(&Due) -> usize) -> Vec<Due> {
    let mut items = timers.take_due(1);
    if let [first @ Due::CancelWait { .. }] = &items[..] {
        let each = weigh(first).max(1);
        let room = WEIGHT_IN_FLIGHT_MAX.saturating_sub(weight_in_flight + each) / each;
        items.extend(timers.take_due_waits(room.min(WAITS_PER_COMMAND_MAX - 1)));
    }
    items
}

/// Whether another item may be proposed with `count` proposals of total
/// `weight` in flight (with none in flight, any item may: even one
/// heavier than the budget).
fn has_room(count: usize, weight: usize) -> bool {
    count == 0 || (count < PROPOSALS_IN_FLIGHT_MAX && weight < WEIGHT_IN_FLIGHT_MAX)
}

/// When to look again: the earliest deadline, at most [`POLL_MAX`] away.
fn next_wake(timers: &Timers) -> tokio::time::Instant {
    let now = timers.now();
    let next = timers.update(|lessor, _| lessor.next_deadline_ms());
    next.map_or(now + POLL_MAX, |at_ms| {
        timers.instant_of(at_ms).clamp(now, now + POLL_MAX)
    })
}

#[cfg(test)]
#[path = "task_tests.rs"]
mod tests;
