//! A queued acquire's wait. It registers with the waiter registry before the
//! acquire is proposed, then waits to be woken: by its grant, or by its
//! removal from the queue, made by a command after its acquire (earlier
//! wakes of the same lock and lease are history: see `crate::waiters`).
//! The wait's deadline is the lessor's (armed on every node from the
//! applied enqueue; on the node that proposed it, counted from when its
//! batch was formed): when it passes, the leader proposes its timeout
//! (`TimeOutWaits`, with the other waits due then), whose outcome, ordered
//! in the log, says whether the grant won the race, and its effect wakes
//! this wait with `WaitTimeout`. Only if that wake does not come within
//! [`wake_grace`] after the deadline (no leader, or this node cut off) does
//! the wait propose `CancelWait` itself; on a leader with its quorum the
//! wait is its own timer's, late only behind a backlog, and it waits up to
//! [`LEADER_GRACES_MAX`] graces more. If the caller goes away (the RPC
//! is dropped) before the deadline, the guard has the wait cancelled
//! (through [`super::wait_cancels`], a bounded number in flight) so the
//! queue never keeps a waiter nobody listens to (docs/DESIGN.md guarantee
//! 9); after it, the lessor's timeout is on its way.

use super::propose::Proposal;
use super::{ApiError, Node};
use crate::raft::node::RaftTimings;
use crate::raft::quorum::Standing;
use crate::sinks::telemetry;
use crate::waiters::{Wait, WaitResult};
use leasehold_core::{LeaseId, LockError, LockName, Revision, Token, WaitEndCause};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How long past its deadline a wait still expects the leader's
/// `CancelWait` to wake it before proposing one itself: as long as a
/// leader change may take (the followers notice a lost leader after its
/// lease plus an election timeout; a split vote costs one more), so in a
/// working cluster the leader's timer gets there first. 3 s with the
/// default timings.
pub fn wake_grace(timings: &RaftTimings) -> Duration {
    timings.leader_lease + 2 * timings.election_timeout_max
}

/// Whether a wait past its bound waits another grace: only on a leader with
/// its quorum (its own timer has the wait) with `leader_graces` left.
fn waits_more(standing: &Standing, leader_graces: u32) -> bool {
    leader_graces > 0 && matches!(standing, Standing::Leader)
}

/// Graces more a wait past its grace waits out on a leader with its
/// quorum, whose own timer has the wait, before proposing its cancel anyway
/// (bounded, should the lessor somehow not have it).
pub const LEADER_GRACES_MAX: u32 = 3;

/// A registered wait; cancels itself in the queue when dropped unfinished.
pub struct QueuedWait {
    node: Arc<Node>,
    name: LockName,
    lease: LeaseId,
    started: Instant,
    deadline: Instant,
    receiver: Option<Wait>,
    finished: bool,
}

impl QueuedWait {
    /// Registers interest in the grant of `name` to `lease` for `wait_ms`.
    pub fn register(node: Arc<Node>, name: LockName, lease: LeaseId, wait_ms: u64) -> QueuedWait {
        let receiver = node.sinks.waiters.register(name.clone(), lease);
        let started = node.sinks.timers.now();
        QueuedWait {
            node,
            name,
            lease,
            started,
            deadline: started + Duration::from_millis(wait_ms),
            receiver: Some(receiver),
            finished: false,
        }
    }

    /// The lock waited for.
    pub fn name(&self) -> &LockName {
        &self.name
    }

    /// The lease waiting.
    pub fn lease(&self) -> LeaseId {
        self.lease
    }

    /// The acquire completed without queueing.
    pub fn finish(mut self) {
        self.finished = true;
    }

    /// Waits for the grant, or for the lessor's timeout to remove the wait;
    /// returns the token and the time waited. `acquired_at` is the revision
    /// of the acquire that queued (or, retried, found queued) the lease.
    pub async fn until_granted(self, acquired_at: Revision) -> Result<(Token, u64), ApiError> {
        let bound = self.deadline + wake_grace(self.node.quorum.timings());
        self.until(bound, LEADER_GRACES_MAX, acquired_at).await
    }

    /// The wait is over already (a retried acquire replayed `Queued`, but
    /// the lease is no longer in the queue): nothing will wake it, so it
    /// waits out its own deadline and then leaves, as a timed-out wait.
    pub async fn until_deadline(self, acquired_at: Revision) -> Result<(Token, u64), ApiError> {
        let bound = self.deadline;
        self.until(bound, 0, acquired_at).await
    }

    /// Waits until `bound` to be woken by a command after `acquired_at`;
    /// past the bound, proposes `CancelWait`, unless this node leads with
    /// its quorum: its own timer task has the wait then (late only with a
    /// backlog, which a cancel per wait would grow), so it waits up to
    /// `leader_graces` graces more.
    async fn until(
        mut self,
        mut bound: Instant,
        mut leader_graces: u32,
        acquired_at: Revision,
    ) -> Result<(Token, u64), ApiError> {
        let mut receiver = self.receiver.take().expect("waited once");
        let result = loop {
            let result = tokio::time::timeout_at(bound, receiver.after(acquired_at)).await;
            if result.is_ok() || !waits_more(&self.node.quorum.report().standing, leader_graces) {
                break result;
            }
            leader_graces -= 1;
            bound += wake_grace(self.node.quorum.timings());
        };
        let waited_ms = self
            .node
            .sinks
            .timers
            .now()
            .saturating_duration_since(self.started)
            .as_millis() as u64;
        let outcome = match result {
            Ok(Some(WaitResult::Granted(token))) => {
                telemetry::waited(Duration::from_millis(waited_ms));
                Ok(token)
            }
            Ok(Some(WaitResult::Removed(cause))) => Err(self.removed(cause, waited_ms)),
            Ok(None) => Err(ApiError::Unavailable(
                "the waiter registry was reset".into(),
            )),
            Err(_) => self.cancel(waited_ms).await,
        };
        self.finished = true;
        outcome.map(|token| (token, waited_ms))
    }

    fn removed(&self, cause: WaitEndCause, waited_ms: u64) -> ApiError {
        match cause {
            WaitEndCause::LeaseExpired => LockError::LeaseExpired { lease: self.lease }.into(),
            WaitEndCause::LeaseRevoked => LockError::LeaseNotFound { lease: self.lease }.into(),
            WaitEndCause::Cancelled | WaitEndCause::TimedOut => ApiError::WaitTimeout {
                name: self.name.to_string(),
                waited_ms,
            },
        }
    }

    /// No wake by the bound: leave the queue, unless the grant got there first.
    async fn cancel(&self, waited_ms: u64) -> Result<Token, ApiError> {
        let cancel = Proposal::cancel_wait(self.lease, self.name.clone(), true);
        let (ended, _) = self.node.propose(cancel).await?;
        ended.holder_token.ok_or_else(|| ApiError::WaitTimeout {
            name: self.name.to_string(),
            waited_ms,
        })
    }
}

impl Drop for QueuedWait {
    fn drop(&mut self) {
        drop(self.receiver.take());
        self.node
            .sinks
            .waiters
            .forget_closed(&self.name, self.lease);
        // Past its deadline the wait is the lessor's to time out (armed on
        // every node, so whoever leads proposes it): a cancel of our own
        // would only add a command, tens of thousands of them when callers
        // give up on a server late with a mass timeout.
        if self.finished || self.node.sinks.timers.now() >= self.deadline {
            return;
        }
        self.node.wait_cancels.cancel(self.lease, self.name.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_leader_with_its_quorum_waits_more_and_only_so_often() {
        assert!(waits_more(&Standing::Leader, 1));
        assert!(!waits_more(&Standing::Leader, 0));
        let without = crate::raft::quorum::NoQuorum {
            reached: 1,
            voters: 3,
            needed: 2,
            last_ack: None,
            leading_for: Duration::from_secs(9),
        };
        assert!(!waits_more(&Standing::LeaderWithoutQuorum(without), 1));
        assert!(!waits_more(&Standing::Following { leader: 2 }, 1));
    }

    #[test]
    fn the_grace_is_one_leader_change() {
        let defaults = RaftTimings::default();
        assert_eq!(wake_grace(&defaults), Duration::from_secs(3));
        let faster = RaftTimings {
            leader_lease: Duration::from_millis(300),
            election_timeout_max: Duration::from_millis(400),
            ..defaults
        };
        assert_eq!(wake_grace(&faster), Duration::from_millis(1_100));
    }
}
