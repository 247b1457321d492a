//! The monitor on a driven clock: openraft's metrics are a watch channel
//! the test publishes to, the contacts' clock a [`ManualClock`]. The
//! monitor's re-check runs on real time (every heartbeat interval), so
//! each wait is bounded by a few re-checks.

use super::*;
use crate::clock::ManualClock;
use openraft::{Membership, ServerState, StoredMembership};
use std::collections::{BTreeMap, BTreeSet};

/// Bound on the monitor noticing a change (many re-checks).
const NOTICE_MAX: Duration = Duration::from_secs(5);

fn leading(voters: &[u64], ack_ms: Option<u64>) -> RaftMetrics<u64, BasicNode> {
    let nodes: BTreeMap<u64, BasicNode> = voters
        .iter()
        .map(|&id| (id, BasicNode::new(format!("127.0.0.1:{}", 7420 + id))))
        .collect();
    let voters: BTreeSet<u64> = voters.iter().copied().collect();
    let membership = Membership::new(vec![voters], nodes);
    let mut metrics = RaftMetrics::new_initial(1);
    metrics.state = ServerState::Leader;
    metrics.current_term = 3;
    metrics.current_leader = Some(1);
    metrics.millis_since_quorum_ack = ack_ms;
    metrics.membership_config = Arc::new(StoredMembership::new(None, membership));
    metrics
}

fn start(
    metrics: RaftMetrics<u64, BasicNode>,
) -> (
    Arc<ManualClock>,
    watch::Sender<RaftMetrics<u64, BasicNode>>,
    Arc<QuorumMonitor>,
) {
    let clock = Arc::new(ManualClock::starting_now());
    let (publish, receiver) = watch::channel(metrics);
    let contacts = Arc::new(Contacts::new(clock.clone()));
    let monitor = QuorumMonitor::spawn(receiver, contacts, &RaftTimings::default());
    (clock, publish, monitor)
}

/// The testkit's bounded poll, with the monitor's notice bound.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    leasehold_testkit::eventually(what, NOTICE_MAX, async || check()).await;
}

#[tokio::test]
async fn unchanged_metrics_age_and_the_loss_wakes_waiters() {
    let (clock, publish, monitor) = start(leading(&[1, 2, 3], Some(20)));
    eventually("the first assessment", || {
        monitor.acks.lock().unwrap().in_term(3).is_some()
    })
    .await;
    assert_eq!(monitor.check(), Ok(()));
    let waiter = {
        let monitor = monitor.clone();
        tokio::spawn(async move { monitor.lost().await })
    };

    // Raft publishes nothing new (a stalled core); the monitor's clock runs on.
    clock.advance(Duration::from_millis(1_500));
    let why = tokio::time::timeout(NOTICE_MAX, waiter)
        .await
        .expect("lost() woke")
        .expect("waiter task");
    assert_eq!((why.reached, why.voters, why.needed), (1, 3, 2));
    assert_eq!(why.last_ack, Some(Duration::from_millis(1_520)));
    assert_eq!(monitor.check(), Err(why.clone()));
    assert!(!monitor.report().quorum());
    assert_eq!(monitor.unconfirmed(1).reached, 1);

    // A fresh acknowledgement brings it back.
    publish.send_replace(leading(&[1, 2, 3], Some(5)));
    eventually("the quorum to return", || monitor.check().is_ok()).await;
    assert!(monitor.report().quorum());
    assert!(
        monitor.lost.borrow().is_none(),
        "the turn back is published"
    );
}

#[tokio::test]
async fn a_single_voter_never_loses_its_quorum() {
    let (clock, _publish, monitor) = start(leading(&[1], Some(0)));
    clock.advance(Duration::from_secs(3_600));
    tokio::time::sleep(monitor.recheck * 3).await;
    assert_eq!(monitor.check(), Ok(()));
    assert!(monitor.report().quorum());
    assert!(monitor.lost.borrow().is_none());
}

#[tokio::test]
async fn the_task_ends_with_raft() {
    let (_clock, publish, monitor) = start(leading(&[1], Some(0)));
    drop(publish);
    eventually("the task to drop its handle", || {
        Arc::strong_count(&monitor) == 1
    })
    .await;
}
