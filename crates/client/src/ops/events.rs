//! What happened to locks (acquired, released, expired, force-released,
//! waiter-timed-out, release-failed, fenced writes refused), from the
//! answering node's bounded memory of recent events, and with `follow`
//! each new event as it happens. Opening the stream goes through the
//! client's call path (failover and retries until a node accepts it);
//! once open, the stream is bound to that node, and an error ends it: the
//! caller reconnects (recent events are replayed first).

use crate::error::Error;
use crate::wire::Event;
use crate::Client;
use leasehold_proto::v1::watch_client::WatchClient;
use leasehold_proto::v1::EventsRequest;
use std::time::Duration;
use tonic::Streaming;

/// What [`Client::events`] asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventsQuery {
    /// Only events of locks whose name starts with this ("" for all).
    pub prefix: String,
    /// After the remembered events, keep the stream open for new ones.
    pub follow: bool,
    /// How many of the most recent remembered events to send first; 0:
    /// every one the node remembers (up to its bound).
    pub replay: u32,
}

/// An open stream of events.
#[derive(Debug)]
pub struct EventStream {
    inner: Streaming<Event>,
}

impl EventStream {
    /// The next event; `Ok(None)` when the server ended the stream (without
    /// `follow`, after the remembered events; with it, when the node shuts
    /// down). An error ends the stream: a connection that broke or stopped
    /// answering pings is `Unavailable`, a follower that fell too far
    /// behind is `ResourceExhausted` (it missed events).
    pub async fn next(&mut self) -> Result<Option<Event>, Error> {
        self.inner
            .message()
            .await
            .map_err(|status| Error::from_status(&status).0)
    }
}

impl Client {
    /// Opens a stream of events matching `query`.
    pub async fn events(&self, query: &EventsQuery) -> Result<EventStream, Error> {
        let request = EventsRequest {
            prefix: query.prefix.clone(),
            follow: query.follow,
            replay: query.replay,
        };
        let inner = self
            .call("Events", Duration::ZERO, |channel| {
                let request = request.clone();
                async move { WatchClient::new(channel).events(request).await }
            })
            .await?;
        Ok(EventStream { inner })
    }
}
