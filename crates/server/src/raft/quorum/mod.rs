//! Does this node have its quorum? openraft 0.9 has no check-quorum step
//! down: a leader cut off from the other voters keeps reporting `Leader`
//! for good while nothing it proposes can commit. The [`QuorumMonitor`]
//! says so instead: it watches openraft's metrics (the age of the last
//! quorum acknowledgement) and the [contacts](super::contacts), assesses
//! them ([`assess`]), and
//!
//! - answers on demand ([`QuorumMonitor::report`]) for `/readyz`, `Status`,
//!   the live page and the metrics;
//! - lets writes and linearizable reads fail fast on a leader without a
//!   quorum ([`QuorumMonitor::check`] before proposing) and stop waiting
//!   for what is in flight when the quorum goes ([`QuorumMonitor::lost`]);
//! - logs each turn (a warning when a leader loses its quorum).

mod assess;

pub use assess::{seconds, Contact, NoQuorum, QuorumReport, RaftView, Standing};

use super::contacts::Contacts;
use super::node::RaftTimings;
use assess::{assess, unconfirmed, AckTracker};
use openraft::{BasicNode, RaftMetrics};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// The quorum state of this node; shared by the API, HTTP and proposer.
pub struct QuorumMonitor {
    /// The leader lease and heartbeat interval it judges by.
    timings: RaftTimings,
    /// How often it re-assesses when openraft's metrics do not change
    /// (they normally change on every tick): one heartbeat interval, so
    /// the lease runs out on the monitor's clock even if Raft's core
    /// publishes nothing.
    recheck: Duration,
    /// openraft's metrics, read on demand.
    metrics: watch::Receiver<RaftMetrics<u64, BasicNode>>,
    /// When each member was last heard from (and the clock).
    contacts: Arc<Contacts>,
    /// When a quorum last acknowledged this node as leader; updated by the
    /// monitor task whenever the metrics change.
    acks: Mutex<AckTracker>,
    /// `Some` while this node leads without a quorum (the reason when it
    /// turned); changes only at turns, so waiters wake only then.
    lost: watch::Sender<Option<NoQuorum>>,
}

impl QuorumMonitor {
    /// Starts watching Raft's `metrics` (`raft.metrics()`), with `contacts`
    /// filled by its network, judging by `timings`. The task ends when Raft
    /// shuts down.
    pub fn spawn(
        metrics: watch::Receiver<RaftMetrics<u64, BasicNode>>,
        contacts: Arc<Contacts>,
        timings: &RaftTimings,
    ) -> Arc<QuorumMonitor> {
        let monitor = Arc::new(QuorumMonitor {
            timings: *timings,
            recheck: timings.heartbeat_interval,
            metrics: metrics.clone(),
            contacts,
            acks: Mutex::new(AckTracker::default()),
            lost: watch::Sender::new(None),
        });
        tokio::spawn(watch_metrics(monitor.clone(), metrics));
        monitor
    }

    /// The Raft timings it judges by.
    pub fn timings(&self) -> &RaftTimings {
        &self.timings
    }

    /// The contacts it reads (the receiving side of Raft fills them too).
    pub fn contacts(&self) -> &Arc<Contacts> {
        &self.contacts
    }

    /// The assessment now.
    pub fn report(&self) -> QuorumReport {
        let view = RaftView::of(&self.metrics.borrow());
        self.assess(&view)
    }

    /// `Err` (why) while this node leads without a quorum: nothing it
    /// proposes can commit and no read can be confirmed.
    pub fn check(&self) -> Result<(), NoQuorum> {
        match self.report().standing {
            Standing::LeaderWithoutQuorum(why) => Err(why),
            _ => Ok(()),
        }
    }

    /// Resolves once this node leads without a quorum (at once if it does
    /// now), with the reason; never while it has one or does not lead.
    pub async fn lost(&self) -> NoQuorum {
        let mut turns = self.lost.subscribe();
        // The guard `wait_for` returns must not live across an await.
        let turned = turns
            .wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|r| r.clone());
        let Some(turned) = turned else {
            // The monitor is gone only with the node.
            return std::future::pending().await;
        };
        self.check().err().unwrap_or(turned)
    }

    /// The reason for a read this leader could not confirm: only `acked`
    /// voters (itself included) answered its heartbeat.
    pub fn unconfirmed(&self, acked: usize) -> NoQuorum {
        let view = RaftView::of(&self.metrics.borrow());
        let acks = self.acks.lock().expect("acks poisoned").clone();
        unconfirmed(&view, &acks, acked, self.contacts.now())
    }

    fn assess(&self, view: &RaftView) -> QuorumReport {
        let now = self.contacts.now();
        let heard = self.contacts.last_heard();
        let acks = self.acks.lock().expect("acks poisoned");
        assess(view, &acks, &heard, now, self.timings.leader_lease)
    }

    /// Takes in metrics just published.
    fn observe(&self, view: &RaftView) {
        let now = self.contacts.now();
        self.acks.lock().expect("acks poisoned").observe(view, now);
    }

    /// Publishes a turn of the quorum, logging it.
    fn publish(&self, view: &RaftView) {
        let report = self.assess(view);
        let lost = report.no_quorum().cloned();
        self.lost.send_if_modified(|current| {
            if current.is_some() == lost.is_some() {
                return false;
            }
            match &lost {
                Some(why) => tracing::warn!(
                    %why,
                    "leader without quorum: refusing writes and linearizable reads until a majority answers"
                ),
                None => tracing::info!(standing = ?report.standing, "no longer a leader without quorum"),
            }
            *current = lost;
            true
        });
    }
}

/// The monitor task: re-assesses on every metrics change, and every
/// `recheck` without one.
async fn watch_metrics(
    monitor: Arc<QuorumMonitor>,
    mut metrics: watch::Receiver<RaftMetrics<u64, BasicNode>>,
) {
    let mut changed = true;
    loop {
        let view = RaftView::of(&metrics.borrow_and_update());
        if changed {
            monitor.observe(&view);
        }
        monitor.publish(&view);
        changed = match tokio::time::timeout(monitor.recheck, metrics.changed()).await {
            Ok(Ok(())) => true,
            Ok(Err(_)) => return,
            Err(_) => false,
        };
    }
}

#[cfg(test)]
#[path = "monitor_tests.rs"]
mod tests;
