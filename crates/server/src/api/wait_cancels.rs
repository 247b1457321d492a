//! Cancels of queued waits whose callers went away before their deadline,
//! proposed by one task at most [`CANCELS_IN_FLIGHT_MAX`] at a time. Each
//! must reach the log (docs/DESIGN.md guarantee 9: a waiter whose caller
//! goes away leaves the queue), but not all at once: when the callers of a
//! server running late give up together, tens of thousands of cancels
//! would enter the proposer's queue within a second, each other client's
//! command behind them, and commit in group commits of thousands.

use crate::proposer::Proposer;
use futures::stream::{FuturesUnordered, StreamExt};
use leasehold_core::{Command, LeaseId, LockName};
use tokio::sync::mpsc;

/// Cancels proposed and not yet applied, at most; the rest wait their turn.
pub const CANCELS_IN_FLIGHT_MAX: usize = 64;

/// Where a wait whose caller went away sends its cancel.
#[derive(Clone)]
pub struct WaitCancels {
    queue: mpsc::UnboundedSender<(LeaseId, LockName)>,
}

impl WaitCancels {
    /// Starts the task proposing through `proposer`; it ends when every
    /// handle is dropped and the cancels queued are proposed.
    pub fn spawn(proposer: Proposer) -> WaitCancels {
        let (queue, cancels) = mpsc::unbounded_channel();
        tokio::spawn(run(cancels, move |command| {
            let proposer = proposer.clone();
            async move {
                // Fails only without a leader or a quorum: the wait then
                // ends at its deadline, by whoever leads.
                let _ = proposer.propose(command).await;
            }
        }));
        WaitCancels { queue }
    }

    /// Takes `lease` out of `name`'s queue (unless its wait ended first).
    pub fn cancel(&self, lease: LeaseId, name: LockName) {
        let _ = self.queue.send((lease, name));
    }
}

/// Proposes each queued cancel with `propose`, at most
/// [`CANCELS_IN_FLIGHT_MAX`] at a time.
async fn run<F>(
    mut cancels: mpsc::UnboundedReceiver<(LeaseId, LockName)>,
    propose: impl Fn(Command) -> F,
) where
    F: std::future::Future<Output = ()>,
{
    let mut in_flight = FuturesUnordered::new();
    let mut open = true;
    while open || !in_flight.is_empty() {
        tokio::select! {
            next = cancels.recv(), if open && in_flight.len() < CANCELS_IN_FLIGHT_MAX => match next {
                Some((lease, name)) => in_flight.push(propose(Command::CancelWait {
                    lease,
                    name,
                    timed_out: false,
                })),
                None => open = false,
            },
            Some(()) = in_flight.next(), if !in_flight.is_empty() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tokio::sync::Semaphore;

    #[tokio::test(start_paused = true)]
    async fn at_most_the_bound_is_in_flight_and_every_cancel_is_proposed() {
        let (queue, cancels) = mpsc::unbounded_channel();
        let name = LockName::parse("gone").unwrap();
        let total = 3 * CANCELS_IN_FLIGHT_MAX + 5;
        for lease in 0..total {
            queue.send((LeaseId(lease as u64), name.clone())).unwrap();
        }
        drop(queue);
        let gate = Arc::new(Semaphore::new(0));
        let (in_flight, most, proposed) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
        );
        let propose = {
            let (gate, in_flight, most, proposed) = (
                gate.clone(),
                in_flight.clone(),
                most.clone(),
                proposed.clone(),
            );
            move |command: Command| {
                assert!(matches!(
                    command,
                    Command::CancelWait {
                        timed_out: false,
                        ..
                    }
                ));
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                let (gate, in_flight, proposed) =
                    (gate.clone(), in_flight.clone(), proposed.clone());
                async move {
                    gate.acquire().await.unwrap().forget();
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    proposed.fetch_add(1, Ordering::SeqCst);
                }
            }
        };
        let task = tokio::spawn(run(cancels, propose));
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        assert_eq!(in_flight.load(Ordering::SeqCst), CANCELS_IN_FLIGHT_MAX);
        gate.add_permits(total);
        task.await.unwrap();
        assert_eq!(proposed.load(Ordering::SeqCst), total, "each cancel once");
        assert_eq!(most.load(Ordering::SeqCst), CANCELS_IN_FLIGHT_MAX);
    }
}
