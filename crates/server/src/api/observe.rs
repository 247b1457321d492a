//! `Watch.Observe`: one election's leader now, then each change.
//!
//! The stream subscribes to the node's [`LeaderWatch`] before it reads the
//! leader (after a read barrier), and then forwards only the changes of
//! later revisions: nothing between the read and the first change is lost
//! or repeated. A follower too far behind is ended with
//! `RESOURCE_EXHAUSTED`, as an `Events` follower is.

use super::{ApiError, Node};
use crate::auth::Caller;
use crate::leaders::{Leader, LeaderChange, LEADER_CHANGES_BUFFER};
use leasehold_core::auth::Verb;
use leasehold_core::election::VALUE_KEY;
use leasehold_core::{limits, LockError, LockName, State};
use leasehold_proto::v1 as wire;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

/// Changes queued for one client's stream before the task waits for it.
const OBSERVE_STREAM_QUEUE: usize = 16;

/// The response half of an `Observe` stream.
pub type ObserveStream = ReceiverStream<Result<wire::LeaderChange, Status>>;

/// Validates an `Observe` request, reads the leader and starts the stream.
pub async fn observe(
    node: &Node,
    caller: &Caller,
    request: wire::ObserveRequest,
) -> Result<ObserveStream, ApiError> {
    let name = LockName::parse(&request.name)?;
    caller.check(node, Verb::Observe, name.as_str())?;
    let changes = node.sinks.leaders.subscribe();
    node.read_barrier().await?;
    let now = node.state.read(|state| leader_now(state, &name))?;
    let (sender, responses) = mpsc::channel(OBSERVE_STREAM_QUEUE);
    tokio::spawn(serve(now, changes, sender));
    Ok(ReceiverStream::new(responses))
}

/// The leader of `name` in `state`, as a change at the state's revision;
/// refused for a semaphore or a read-write lock (holders, no leader).
fn leader_now(state: &State, name: &LockName) -> Result<LeaderChange, ApiError> {
    if let Some(pool) = state.pool(name) {
        let reason = format!(
            "{name} is {} now: only a lock (an election) has a leader",
            pool.pool.kind
        );
        return Err(ApiError::Core(LockError::invalid("name", reason)));
    }
    let holder = state.lock(name).and_then(|lock| lock.holder.as_ref());
    let leader = holder.map(|holder| Leader {
        lease: holder.lease.0,
        token: holder.token.0,
        owner: state
            .lease(holder.lease)
            .map(|lease| lease.owner.owner().to_owned())
            .unwrap_or_default(),
        value: holder.metadata.get(VALUE_KEY).cloned().unwrap_or_default(),
    });
    Ok(LeaderChange {
        name: name.clone(),
        leader,
        revision: state.revision().0,
    })
}

/// Sends `now`, then each later change of `now.name`, until the client
/// goes away or falls too far behind.
async fn serve(
    now: LeaderChange,
    mut changes: broadcast::Receiver<Arc<LeaderChange>>,
    sender: mpsc::Sender<Result<wire::LeaderChange, Status>>,
) {
    if sender.send(Ok(change_to_wire(&now))).await.is_err() {
        return;
    }
    let ended = loop {
        let next = tokio::select! {
            next = changes.recv() => next,
            () = sender.closed() => return,
        };
        match next {
            Ok(change) if change.name == now.name && change.revision > now.revision => {
                if sender.send(Ok(change_to_wire(&change))).await.is_err() {
                    return;
                }
            }
            Ok(_) => {}
            Err(RecvError::Lagged(missed)) => break lagged(missed),
            Err(RecvError::Closed) => {
                break ApiError::Unavailable(
                    "this node is shutting down; observe on another".into(),
                )
            }
        }
    };
    let _gone_is_fine = sender.send(Err(ended.into())).await;
}

/// The error that ends the stream of an observer that missed changes.
fn lagged(missed: u64) -> ApiError {
    ApiError::Core(LockError::exhausted(
        limits::Limit::EventsFollowBuffer,
        format!(
            "this observer fell {missed} leader changes (of any election) behind, more than \
             the {LEADER_CHANGES_BUFFER} buffered, and missed them; observe again to read the \
             leader now and follow on"
        ),
    ))
}

/// A leader change on the wire.
fn change_to_wire(change: &LeaderChange) -> wire::LeaderChange {
    wire::LeaderChange {
        leader: change.leader.as_ref().map(|leader| wire::Leader {
            lease: leader.lease,
            token: leader.token,
            owner: leader.owner.clone(),
            value: leader.value.clone(),
        }),
        revision: change.revision,
    }
}
