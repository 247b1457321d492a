//! A queued acquire's wait. It registers with the waiter registry before the
//! acquire is proposed, waits for the grant until its deadline, and on the
//! deadline proposes `CancelWait` — whose outcome, ordered in the log, says
//! whether the grant won the race. If the caller goes away (the RPC is
//! dropped), the guard proposes `CancelWait` so the queue never keeps a
//! waiter nobody listens to (docs/DESIGN.md guarantee 9).

use super::{ApiError, Node};
use crate::waiters::WaitResult;
use leasehold_core::{Command, LeaseId, LockError, LockName, Reply, Token, WaitEndCause};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// A registered wait; cancels itself in the queue when dropped unfinished.
pub struct QueuedWait {
    node: Arc<Node>,
    name: LockName,
    lease: LeaseId,
    started: Instant,
    deadline: Instant,
    receiver: Option<oneshot::Receiver<WaitResult>>,
    finished: bool,
}

impl QueuedWait {
    /// Registers interest in the grant of `name` to `lease` for `wait_ms`.
    pub fn register(node: Arc<Node>, name: LockName, lease: LeaseId, wait_ms: u64) -> QueuedWait {
        let receiver = node.waiters.register(name.clone(), lease);
        let started = node.timers.now();
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

    /// Waits for the grant; returns the token and the time waited.
    pub async fn until_granted(mut self) -> Result<(Token, u64), ApiError> {
        let receiver = self.receiver.take().expect("waited once");
        let result = tokio::time::timeout_at(self.deadline, receiver).await;
        let waited_ms = self.started.elapsed().as_millis() as u64;
        let outcome = match result {
            Ok(Ok(WaitResult::Granted(token))) => Ok(token),
            Ok(Ok(WaitResult::Removed(cause))) => Err(self.removed(cause, waited_ms)),
            Ok(Err(_)) => Err(ApiError::Unavailable(
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

    /// The deadline passed: leave the queue, unless the grant got there first.
    async fn cancel(&self, waited_ms: u64) -> Result<Token, ApiError> {
        let command = Command::CancelWait {
            lease: self.lease,
            name: self.name.clone(),
            timed_out: true,
        };
        let (outcome, _) = self.node.propose(command).await?;
        match outcome? {
            Reply::WaitEnded {
                holder_token: Some(token),
            } => Ok(token),
            Reply::WaitEnded { holder_token: None } => Err(ApiError::WaitTimeout {
                name: self.name.to_string(),
                waited_ms,
            }),
            other => Err(super::lease::unexpected("CancelWait", &other)),
        }
    }
}

impl Drop for QueuedWait {
    fn drop(&mut self) {
        drop(self.receiver.take());
        self.node.waiters.forget_closed(&self.name, self.lease);
        if self.finished {
            return;
        }
        let node = self.node.clone();
        let command = Command::CancelWait {
            lease: self.lease,
            name: self.name.clone(),
            timed_out: false,
        };
        tokio::spawn(async move {
            let _ = node.proposer.propose(command).await;
        });
    }
}
