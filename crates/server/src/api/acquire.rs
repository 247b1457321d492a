//! Acquire, immediate or queued: shared by the unary `Lock.Acquire` and the
//! `Lock.Session` stream.

use super::propose::{Acquisition, Proposal};
use super::wait::QueuedWait;
use super::{check_lease_id, check_request_size, ApiError, Node};
use crate::auth::Caller;
use leasehold_core::{Acquire, LockName, RequestId, Token};
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
enum Standing {
    /// It holds the lock.
    Holds(Token),
    /// It is in the lock's queue.
    Queued,
    /// Neither: its wait ended before this (retried) acquire looked.
    Gone,
}

fn standing(node: &Node, wait: &QueuedWait) -> Standing {
    node.state.read(|state| {
        let Some(lock) = state.lock(wait.name()) else {
            return Standing::Gone;
        };
        match &lock.holder {
            Some(holder) if holder.lease == wait.lease() => Standing::Holds(holder.token),
            _ if lock.waiters.iter().any(|w| w.lease == wait.lease()) => Standing::Queued,
            _ => Standing::Gone,
        }
    })
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
                Standing::Holds(token) => {
                    wait.finish();
                    return Ok(granted(node, token, false, 0));
                }
                Standing::Queued => wait.until_granted(acquired_at).await?,
                Standing::Gone => wait.until_deadline(acquired_at).await?,
            };
            Ok(granted(node, token, false, waited_ms))
        }
    }
}
