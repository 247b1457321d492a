//! Acquire, immediate or queued: shared by the unary `Lock.Acquire` and the
//! `Lock.Session` stream, for a lock or for permits of a semaphore or a
//! read-write lock (the request's `permits`): the two differ in the command
//! proposed and in where the state keeps the lease's hold or wait, nothing
//! else (the core answers both alike, and their grants wake a queued wait
//! alike).

use super::propose::{Acquisition, Proposal};
use super::wait::QueuedWait;
use super::{check_lease_id, check_request_size, ApiError, Node};
use crate::auth::Caller;
use crate::raft::quorum::Standing;
use leasehold_core::{
    Acquire, AcquirePermits, LeaseId, LockName, PermitAsk, RequestId, Revision, State, Token,
};
use leasehold_proto::v1::{AcquireRequest, AcquireResponse};
use std::sync::Arc;

/// Validates and performs one acquire; with `wait_ms` > 0, waits in the queue.
pub async fn acquire(
    node: &Arc<Node>,
    caller: &Caller,
    request: AcquireRequest,
) -> Result<AcquireResponse, ApiError> {
    let acquire = parse_acquire(request)?;
    let proposal = caller.authorize(node, acquire.proposal())?;
    let response = if acquire.wait_ms == 0 {
        acquire_now(node, proposal).await?
    } else {
        acquire_queued(node, acquire.about(), proposal).await?
    };
    metrics::counter!("leasehold_acquires_total").increment(1);
    Ok(response)
}

/// A validated acquire: the lease, name and wait every acquire has, and
/// the command that asks for a lock or for permits.
struct Asked {
    lease: LeaseId,
    name: LockName,
    wait_ms: u64,
    command: AskedFor,
}

enum AskedFor {
    Lock(Acquire),
    Permits(AcquirePermits),
}

impl Asked {
    fn proposal(&self) -> Proposal<Acquisition> {
        match &self.command {
            AskedFor::Lock(acquire) => Proposal::acquire(acquire.clone()),
            AskedFor::Permits(acquire) => Proposal::acquire_permits(acquire.clone()),
        }
    }

    /// Who waits for what, for how long.
    fn about(self) -> (LockName, LeaseId, u64) {
        (self.name, self.lease, self.wait_ms)
    }
}

fn parse_acquire(request: AcquireRequest) -> Result<Asked, ApiError> {
    check_request_size(&request)?;
    let lease = check_lease_id(request.lease)?;
    let name = LockName::parse(&request.name)?;
    let command = match request.permits {
        Some(ask) => AskedFor::Permits(parse_permits(&request, ask)?),
        None => AskedFor::Lock(parse_lock(request)?),
    };
    Ok(Asked {
        lease,
        name,
        wait_ms: match &command {
            AskedFor::Lock(a) => a.wait_ms,
            AskedFor::Permits(a) => a.wait_ms,
        },
        command,
    })
}

/// An acquire of permits: the lock-only settings must be unset.
fn parse_permits(
    request: &AcquireRequest,
    ask: leasehold_proto::v1::PermitAsk,
) -> Result<AcquirePermits, ApiError> {
    let ask = PermitAsk::try_from(ask).map_err(|why| ApiError::invalid("permits", why))?;
    let lock_only = [
        ("lock_delay_ms", request.lock_delay_ms != 0),
        ("max_hold_ms", request.max_hold_ms != 0),
        ("metadata", !request.metadata.is_empty()),
    ];
    if let Some((field, _)) = lock_only.iter().find(|(_, set)| *set) {
        let why = format!(
            "applies to locks only, not to {}: leave it unset",
            ask.kind()
        );
        return Err(ApiError::invalid(field, &why));
    }
    let acquire = AcquirePermits {
        lease: check_lease_id(request.lease)?,
        name: LockName::parse(&request.name)?,
        ask,
        wait_ms: request.wait_ms,
        request_id: RequestId::parse(&request.request_id)?,
        fenced: request.fenced,
    };
    acquire.validate()?;
    Ok(acquire)
}

fn parse_lock(request: AcquireRequest) -> Result<Acquire, ApiError> {
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
pub(super) enum WaitStanding {
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

pub(super) fn standing_in(state: &State, name: &LockName, lease: LeaseId) -> WaitStanding {
    if let Some(pool) = state.pool(name) {
        let permits = &pool.pool.permits;
        if let Some(hold) = permits.holds().iter().find(|h| h.lease == lease) {
            return WaitStanding::Holds(hold.token);
        }
        if permits.waiters().any(|w| w.lease == lease) {
            return WaitStanding::Queued;
        }
        return WaitStanding::Gone;
    }
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

/// `lease` waits up to `wait_ms` in `name`'s queue; `proposal` is its
/// (authorized) acquire.
async fn acquire_queued(
    node: &Arc<Node>,
    (name, lease, wait_ms): (LockName, LeaseId, u64),
    proposal: Proposal<Acquisition>,
) -> Result<AcquireResponse, ApiError> {
    let wait = QueuedWait::register(node.clone(), name.clone(), lease, wait_ms);
    // Already queued (a retry whose first call the client gave up on): the
    // acquire would change nothing, so a leader with its quorum waits
    // without proposing it. The wait registered first, so every later wake
    // reaches it.
    let queued = node.state.read(|state| queued_at(state, &name, lease));
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

    #[test]
    fn a_wait_for_permits_stands_where_the_pool_keeps_it() {
        let mut state = State::default();
        let name = LockName::parse("rw").unwrap();
        let (reader, writer, other) = (
            grant(&mut state, 60_000),
            grant(&mut state, 60_000),
            grant(&mut state, 60_000),
        );
        for (lease, ask, wait_ms) in [
            (reader, PermitAsk::Shared, 0),
            (writer, PermitAsk::Exclusive, 5_000),
        ] {
            let ask = AcquirePermits {
                lease,
                name: name.clone(),
                ask,
                wait_ms,
                request_id: None,
                fenced: false,
            };
            let command = leasehold_core::Command::AcquirePermits(ask);
            assert!(state.apply(command, 0).outcome.is_ok());
        }
        assert!(matches!(
            standing_in(&state, &name, reader),
            WaitStanding::Holds(_)
        ));
        assert_eq!(queued_at(&state, &name, writer), Some(state.revision()));
        assert!(matches!(
            standing_in(&state, &name, other),
            WaitStanding::Gone
        ));
    }

    #[test]
    fn an_acquire_of_permits_refuses_the_lock_only_settings_by_name() {
        let ask = leasehold_proto::v1::PermitAsk::from(PermitAsk::Shared);
        let request = |lock_delay_ms, max_hold_ms| AcquireRequest {
            lease: 1,
            name: "rw".into(),
            permits: Some(ask),
            lock_delay_ms,
            max_hold_ms,
            ..AcquireRequest::default()
        };
        assert!(parse_acquire(request(0, 0)).is_ok());
        for (bad, field) in [
            (request(5, 0), "lock_delay_ms"),
            (request(0, 5), "max_hold_ms"),
        ] {
            let Err(refused) = parse_acquire(bad) else {
                panic!("{field} is refused");
            };
            let text = refused.to_string();
            assert!(
                text.contains(field) && text.contains("a read-write lock"),
                "{text}"
            );
        }
    }
}
