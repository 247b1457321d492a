//! `Lock.AcquireAll`: several locks at once, all or none (see
//! `leasehold_core::lock_set`). A queued set is granted in one command,
//! all its locks under one token, so its wait is the wait for its first
//! lock: registered before the proposal, woken by that grant (or by the
//! set leaving its queues), cancelled (from every queue) if the caller
//! goes away.

use super::acquire::{standing_in, WaitStanding};
use super::propose::{Proposal, SetAcquisition};
use super::wait::QueuedWait;
use super::{check_lease_id, check_request_size, ApiError, Node};
use crate::auth::Caller;
use leasehold_core::{AcquireAll, LockName, RequestId, Token};
use leasehold_proto::v1::{AcquireAllRequest, AcquireAllResponse};
use std::sync::Arc;

/// Validates and performs one acquire of a set; with `wait_ms` > 0, waits.
pub async fn acquire_all(
    node: &Arc<Node>,
    caller: &Caller,
    request: AcquireAllRequest,
) -> Result<AcquireAllResponse, ApiError> {
    let asked = parse(request)?;
    let proposal = caller.authorize(node, Proposal::acquire_all(asked.clone()))?;
    let first = asked.names[0].clone();
    let wait = (asked.wait_ms > 0)
        .then(|| QueuedWait::register(node.clone(), first, asked.lease, asked.wait_ms));
    let (acquisition, acquired_at) = match node.propose(proposal).await {
        Ok(applied) => applied,
        Err(refused @ ApiError::Core(_)) => {
            wait.into_iter().for_each(QueuedWait::finish);
            return Err(refused);
        }
        // The acquire may still commit: the dropped wait leaves the queues.
        Err(unknown) => return Err(unknown),
    };
    metrics::counter!("leasehold_acquires_total").increment(1);
    let (token, waited_ms) = match (acquisition, wait) {
        (
            SetAcquisition::Held {
                tokens,
                already_held,
            },
            wait,
        ) => {
            wait.into_iter().for_each(QueuedWait::finish);
            return Ok(held(node, tokens, already_held, 0));
        }
        (SetAcquisition::Queued, None) => {
            return Err(ApiError::invalid(
                "request_id",
                "was already used by a queued acquire of this set: retry with its wait_ms",
            ))
        }
        (SetAcquisition::Queued, Some(wait)) => {
            // A retry replays `Queued` even if the wait has ended since:
            // answer from the state then.
            let standing = node
                .state
                .read(|state| standing_in(state, wait.name(), wait.lease()));
            match standing {
                WaitStanding::Holds(token) => {
                    wait.finish();
                    (token, 0)
                }
                WaitStanding::Queued => wait.until_granted(acquired_at).await?,
                WaitStanding::Gone => wait.until_deadline(acquired_at).await?,
            }
        }
    };
    // Granted in one command: every lock of the set under its token.
    Ok(held(node, vec![token; asked.names.len()], false, waited_ms))
}

fn parse(request: AcquireAllRequest) -> Result<AcquireAll, ApiError> {
    check_request_size(&request)?;
    let names = request
        .names
        .iter()
        .map(|name| LockName::parse(name))
        .collect::<Result<Vec<_>, _>>()?;
    let asked = AcquireAll {
        lease: check_lease_id(request.lease)?,
        names,
        wait_ms: request.wait_ms,
        request_id: RequestId::parse(&request.request_id)?,
        fenced: request.fenced,
    };
    asked.validate()?;
    Ok(asked)
}

fn held(node: &Node, tokens: Vec<Token>, already_held: bool, waited_ms: u64) -> AcquireAllResponse {
    AcquireAllResponse {
        header: node.header(node.state.read(|state| state.revision())),
        tokens: tokens.into_iter().map(|t| t.0).collect(),
        already_held,
        waited_ms,
    }
}
