//! Acquire, immediate or queued: shared by the unary `Lock.Acquire` and the
//! `Lock.Session` stream.

use super::propose::{Acquisition, Proposal};
use super::wait::QueuedWait;
use super::{check_lease_id, check_request_size, ApiError, Node};
use crate::auth::Caller;
use crate::raft::quorum::Standing;
use leasehold_core::{Acquire, LeaseId, LockName, RequestId, Revision, State, Token};
use leasehold_proto::v1::{AcquireRequest, AcquireResponse};
use std::sync::Arc;

/// Validates and performs one acquire; with `wait_ms` > 0, waits in the queue.
pub async fn acquire(
    node: &Arc<Node>,
    caller: &Caller,
    request: AcquireRequest,
) -> Result<AcquireResponse, ApiError> {
    let acquire = parse_acquire(request)?;
    let proposal = caller.authorize(node, Proposal::acquire(acquire.clone()))?;
    let response = if acquire.wait_ms == 0 {
        acquire_now(node, proposal).await?
    } else {
        acquire_queued(node, acquire, proposal).await?
    };
    metrics::counter!("leasehold_acquires_total").increment(1);
    Ok(response)
}

fn parse_acquire(request: AcquireRequest) -> Result<Acquire, ApiError> {
    check_request_size(&request)?;
    let acquire = Acquire {
        lease: check_lease_id(request.lease)?,
        name: LockName::parse(&request.name)?,
        wait_ms: request.wait_ms,
        request_id: RequestId::parse(&request.request_id)?,
        fenced: request.fenced,
        lock_delay_ms: request.lock_delay_ms,
        max_hold_ms: request.max_hold_ms,
        metadata: request.metadata.into_iter().collect(),
    };
    acquire.validate()?;
    Ok(acquire)
}

fn granted(node: &Node, token: Token, already_held: bool, waited_ms: u64) -> AcquireResponse {
    AcquireResponse {
        header: node.header(node.state.read(|state| state.revision())),
        token: token.0,
        already_held,
        waited_ms,
    }
}

/// Where a queued acquire's lease stands in the state now.
enum WaitStanding {
    /// It holds the lock.
    Holds(Token),
    /// It is in the lock's queue.
    Queued,
    /// Neither: its wait ended before this (retried) acquire looked.
    Gone,
}

fn standing(node: &Node, wait: &QueuedWait) -> WaitStanding {
    node.state
        .read(|state| standing_in(state, wait.name(), wait.lease()))
}

fn standing_in(state: &State, name: &LockName, lease: LeaseId) -> WaitStanding {
    let Some(lock) = state.lock(name) else {
        return WaitStanding::Gone;
    };
    match &lock.holder {
        Some(holder) if holder.lease == lease => WaitStanding::Holds(holder.token),
        _ if lock.waiters.iter().any(|w| w.lease == lease) => WaitStanding::Queued,
        _ => WaitStanding::Gone,
    }
}

/// The applied revision, if `lease` is in `name`'s queue at it (both read
/// at once: a wake after it is news to a wait registered before).
fn queued_at(state: &State, name: &LockName, lease: LeaseId) -> Option<Revision> {
    let queued = matches!(standing_in(state, name, lease), WaitStanding::Queued);
    queued.then(|| state.revision())
}

async fn acquire_now(
    node: &Node,
    proposal: Proposal<Acquisition>,
) -> Result<AcquireResponse, ApiError> {
    let (acquisition, _) = node.propose(proposal).await?;
    match acquisition {
        Acquisition::Held {
            token,
            already_held,
        } => Ok(granted(node, token, already_held, 0)),
        // An acquire without a wait is never queued; the retry of a queued
        // acquire with the same request id (but no wait) replays `Queued`.
        Acquisition::Queued => Err(ApiError::invalid(
            "request_id",
            "was already used by a queued acquire of this lease: retry with its wait_ms",
        )),
    }
}

/// `acquire` waits in the queue; `proposal` is its (authorized) command.
async fn acquire_queued(
    node: &Arc<Node>,
    acquire: Acquire,
    proposal: Proposal<Acquisition>,
) -> Result<AcquireResponse, ApiError> {
    let wait = QueuedWait::register(
        node.clone(),
        acquire.name.clone(),
        acquire.lease,
        acquire.wait_ms,
    );
    // Already queued (a retry whose first call the client gave up on): the
    // acquire would change nothing, so a leader with its quorum waits
    // without proposing it. The wait registered first, so every later wake
    // reaches it.
    let queued = node
        .state
        .read(|state| queued_at(state, &acquire.name, acquire.lease));
    let leads = || matches!(node.quorum.report().standing, Standing::Leader);
    if let Some(queued_at) = queued.filter(|_| leads()) {
        let (token, waited_ms) = wait.until_granted(queued_at).await?;
        return Ok(granted(node, token, false, waited_ms));
    }
    let (acquisition, acquired_at) = match node.propose(proposal).await {
        Ok(applied) => applied,
        // Refused by the core: nothing was queued.
        Err(refused @ ApiError::Core(_)) => {
            wait.finish();
            return Err(refused);
        }
        // The acquire may still commit: the dropped wait leaves the queue.
        Err(unknown) => return Err(unknown),
    };
    match acquisition {
        Acquisition::Held {
            token,
            already_held,
        } => {
            wait.finish();
            Ok(granted(node, token, already_held, 0))
        }
        Acquisition::Queued => {
            // A retried acquire replays its first outcome (`Queued`) even
            // if the wait has ended since: answer from the state then.
            let (token, waited_ms) = match standing(node, &wait) {
                WaitStanding::Holds(token) => {
                    wait.finish();
                    return Ok(granted(node, token, false, 0));
                }
                WaitStanding::Queued => wait.until_granted(acquired_at).await?,
                WaitStanding::Gone => wait.until_deadline(acquired_at).await?,
            };
            Ok(granted(node, token, false, waited_ms))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_commands::{acquire, grant};

    #[test]
    fn only_a_lease_in_the_queue_waits_without_proposing_and_from_the_revision_read() {
        let mut state = State::default();
        let name = LockName::parse("again").unwrap();
        let holder = grant(&mut state, 60_000);
        let (waiter, other) = (grant(&mut state, 60_000), grant(&mut state, 60_000));
        state.apply(acquire(holder, &name, 0, 0), 0);
        assert_eq!(queued_at(&state, &name, waiter), None, "not queued yet");
        state.apply(acquire(waiter, &name, 5_000, 0), 0);
        assert_eq!(queued_at(&state, &name, waiter), Some(state.revision()));
        assert_eq!(queued_at(&state, &name, holder), None, "holds it");
        assert_eq!(queued_at(&state, &name, other), None);
        let elsewhere = LockName::parse("elsewhere").unwrap();
        assert_eq!(queued_at(&state, &elsewhere, waiter), None);
    }
}
