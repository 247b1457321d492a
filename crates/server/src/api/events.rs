//! `Watch.Events`: the stream over this node's [`EventLog`].
//!
//! Without `follow` the stream carries the remembered events matching the
//! prefix and ends. With `follow` it carries them, then each new matching
//! event, on a task of its own that ends when the client hangs up. The
//! broadcast channel behind it is bounded ([`limits::EVENTS_FOLLOW_BUFFER`]): a
//! follower that falls further behind has missed events, so its stream is
//! ended with `RESOURCE_EXHAUSTED` rather than continued with a silent gap;
//! reconnecting replays the recent events.

use super::{check_request_size, ApiError, Node};
use crate::auth::Caller;
use crate::events::{EventLog, LockEvent, EVENTS_REMEMBERED};
use leasehold_core::auth::Verb;
use leasehold_core::{limits, LockError};
use leasehold_proto::v1::{Event, EventsRequest};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

/// Events queued for one client's stream before the task waits for it to
/// read (the broadcast buffer then absorbs the rest, up to its bound).
pub const EVENTS_STREAM_QUEUE: usize = 64;

/// The response half of an `Events` stream.
pub type EventStream = ReceiverStream<Result<Event, Status>>;

/// Validates an `Events` request and starts its stream.
pub fn events(
    node: &Node,
    caller: &Caller,
    request: EventsRequest,
) -> Result<EventStream, ApiError> {
    check_events_request(&request)?;
    caller.check(node, Verb::Observe, &request.prefix)?;
    Ok(spawn(&node.sinks.events, request))
}

/// Rejects an oversize request or prefix, naming the limit.
fn check_events_request(request: &EventsRequest) -> Result<(), ApiError> {
    check_request_size(request)?;
    let prefix_bytes = request.prefix.len();
    if prefix_bytes > limits::NAME_BYTES_MAX {
        return Err(ApiError::Core(LockError::over_limit(
            "prefix",
            limits::Limit::NameBytesMax,
            format!(
                "is {prefix_bytes} bytes; the limit NAME_BYTES_MAX is {} (a prefix of a lock name)",
                limits::NAME_BYTES_MAX
            ),
        )));
    }
    Ok(())
}

/// Starts serving one validated `Events` request from `log`.
fn spawn(log: &EventLog, request: EventsRequest) -> EventStream {
    let replay = match request.replay as usize {
        0 => EVENTS_REMEMBERED,
        n => n.min(EVENTS_REMEMBERED),
    };
    let (replayed, live) = if request.follow {
        let (replayed, live) = log.follow(&request.prefix, replay);
        (replayed, Some(live))
    } else {
        (log.recent(&request.prefix, replay), None)
    };
    let (sender, responses) = mpsc::channel(EVENTS_STREAM_QUEUE);
    tokio::spawn(serve(request.prefix, replayed, live, sender));
    ReceiverStream::new(responses)
}

/// Sends `replayed`, then (when following) each new event whose lock starts
/// with `prefix`, until the client goes away or falls too far behind.
async fn serve(
    prefix: String,
    replayed: Vec<LockEvent>,
    live: Option<broadcast::Receiver<LockEvent>>,
    sender: mpsc::Sender<Result<Event, Status>>,
) {
    for event in &replayed {
        if sender.send(Ok(event_to_wire(event))).await.is_err() {
            return;
        }
    }
    let Some(mut live) = live else { return };
    let ended = loop {
        let next = tokio::select! {
            next = live.recv() => next,
            // The client hung up while no event came: stop following.
            () = sender.closed() => return,
        };
        match next {
            Ok(event) if event.lock.starts_with(&prefix) => {
                if sender.send(Ok(event_to_wire(&event))).await.is_err() {
                    return;
                }
            }
            Ok(_) => {}
            Err(RecvError::Lagged(missed)) => break lagged(missed),
            // The node's event log is gone: it is shutting down.
            Err(RecvError::Closed) => break ApiError::Unavailable(SHUTTING_DOWN.into()),
        }
    };
    let _gone_is_fine = sender.send(Err(ended.into())).await;
}

/// Why a follow stream ended when this node's event log closed.
const SHUTTING_DOWN: &str =
    "this node stopped recording events (it is shutting down); reconnect to another node";

/// The error that ends the stream of a follower that missed `missed` events.
fn lagged(missed: u64) -> ApiError {
    ApiError::Core(LockError::exhausted(
        limits::Limit::EventsFollowBuffer,
        format!(
            "this follower fell {missed} events behind and missed them; \
             reconnect to replay the recent events and follow again"
        ),
    ))
}

/// A recorded event on the wire.
pub(crate) fn event_to_wire(event: &LockEvent) -> Event {
    Event {
        kind: event.kind.as_str().to_owned(),
        lock: event.lock.clone(),
        lease: event.lease,
        owner: event.owner.clone(),
        token: event.token,
        revision: event.revision,
        at_unix_ms: i64::try_from(event.at_unix_ms).unwrap_or(i64::MAX),
        detail: event.detail.clone(),
        key: event.key.clone(),
        highest_token: event.highest_token,
        highest_lock: event.highest_lock.clone(),
        value: event.value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventKind;
    use futures::StreamExt;
    use std::time::Duration;

    /// Bound on any one step of these tests (they never get near it).
    const STEP: Duration = Duration::from_secs(5);

    fn event(lock: &str, revision: u64) -> LockEvent {
        LockEvent {
            kind: EventKind::Released,
            lock: lock.into(),
            lease: 7,
            owner: "me@host".into(),
            token: 3,
            revision,
            at_unix_ms: 1_000,
            detail: "released".into(),
            key: String::new(),
            highest_token: 0,
            highest_lock: String::new(),
            value: String::new(),
        }
    }

    fn request(prefix: &str, follow: bool, replay: u32) -> EventsRequest {
        EventsRequest {
            prefix: prefix.into(),
            follow,
            replay,
        }
    }

    async fn next(stream: &mut EventStream) -> Option<Result<Event, Status>> {
        tokio::time::timeout(STEP, stream.next())
            .await
            .expect("the stream answered within STEP")
    }

    #[tokio::test]
    async fn without_follow_sends_the_matching_recent_events_then_ends() {
        let log = EventLog::new();
        for (revision, lock) in ["a/1", "b/1", "a/2", "a/3"].into_iter().enumerate() {
            log.record(event(lock, revision as u64 + 1));
        }
        let mut all = spawn(&log, request("a/", false, 0));
        let mut revisions = Vec::new();
        while let Some(sent) = next(&mut all).await {
            revisions.push(sent.expect("no error").revision);
        }
        assert_eq!(revisions, [1, 3, 4]);

        let mut last = spawn(&log, request("a/", false, 1));
        let only = next(&mut last).await.unwrap().unwrap();
        assert_eq!(
            (only.lock.as_str(), only.kind.as_str()),
            ("a/3", "released")
        );
        assert!(next(&mut last).await.is_none());
    }

    #[tokio::test]
    async fn follow_replays_then_sends_new_matching_events_only() {
        let log = EventLog::new();
        log.record(event("a/1", 1));
        let mut stream = spawn(&log, request("a/", true, 0));
        log.record(event("b/1", 2));
        log.record(event("a/2", 3));
        assert_eq!(next(&mut stream).await.unwrap().unwrap().revision, 1);
        let live = next(&mut stream).await.unwrap().unwrap();
        assert_eq!((live.lock.as_str(), live.revision), ("a/2", 3));
        assert_eq!(live.owner, "me@host");
        assert_eq!((live.lease, live.token, live.at_unix_ms), (7, 3, 1_000));
    }

    #[tokio::test]
    async fn a_follower_that_falls_behind_is_ended_with_resource_exhausted() {
        let log = EventLog::new();
        let mut stream = spawn(&log, request("", true, 0));
        // More events than the broadcast buffer holds arrive before the
        // stream's task gets to them (as for a client that reads nothing,
        // once its queue is full).
        let overflow = EVENTS_STREAM_QUEUE + limits::EVENTS_FOLLOW_BUFFER + 10;
        for revision in 1..=overflow as u64 {
            log.record(event("a", revision));
        }
        let mut sent = 0;
        let status = loop {
            match next(&mut stream).await.expect("ended with an error") {
                Ok(_) => sent += 1,
                Err(status) => break status,
            }
        };
        assert!(sent < overflow, "the follower was sent all {sent} events");
        assert_eq!(status.code(), tonic::Code::ResourceExhausted);
        assert!(status.message().contains("events behind"), "{status:?}");
        assert!(status.message().contains("reconnect"), "{status:?}");
        assert!(
            status.message().contains("EVENTS_FOLLOW_BUFFER"),
            "{status:?}"
        );
        assert!(next(&mut stream).await.is_none());
    }

    #[tokio::test]
    async fn the_task_ends_when_the_client_hangs_up() {
        let log = EventLog::new();
        let (replayed, live) = log.follow("", 0);
        let (sender, responses) = mpsc::channel(EVENTS_STREAM_QUEUE);
        let task = tokio::spawn(serve(String::new(), replayed, Some(live), sender));
        drop(responses);
        tokio::time::timeout(STEP, task)
            .await
            .expect("the follower's task ended without a new event")
            .expect("the task did not panic");
    }

    #[test]
    fn an_overlong_prefix_names_the_limit() {
        let long = "p".repeat(limits::NAME_BYTES_MAX + 1);
        let status = Status::from(check_events_request(&request(&long, false, 0)).unwrap_err());
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert!(status.message().contains("NAME_BYTES_MAX"), "{status:?}");
        assert!(status.message().contains("prefix"), "{status:?}");
        let fits = "p".repeat(limits::NAME_BYTES_MAX);
        assert!(check_events_request(&request(&fits, true, 0)).is_ok());
    }
}
