//! Where a lease's keeper publishes its open session stream, and the route
//! one attempt of a call takes: the open stream, or — while there is none
//! (being opened, reconnecting after a failure, the lease ended) — a unary
//! RPC to the endpoint in use.
//!
//! Why fall back to unary rather than wait for the stream: a call then never
//! depends on the keeper's reconnect schedule (its backoff, its open bound);
//! the unary attempt follows the same retry rules, on the endpoint the
//! failure already moved the client to, and carries the same request id, so
//! switching routes between attempts cannot act twice.

use super::SessionStream;
use crate::endpoints::InUse;
use crate::Client;
use std::sync::{Arc, Mutex};

/// The lease's session stream while it is open.
#[derive(Debug, Default)]
pub(crate) struct SessionSlot {
    open: Mutex<Option<Arc<SessionStream>>>,
}

impl SessionSlot {
    /// Publishes a newly opened stream.
    pub fn publish(&self, stream: Arc<SessionStream>) {
        let replaced = self.slot().replace(stream);
        if let Some(old) = replaced {
            old.close();
        }
    }

    /// Takes the stream down (closing it, if it is still open).
    pub fn take_down(&self) {
        let taken = self.slot().take();
        if let Some(stream) = taken {
            stream.close();
        }
    }

    /// The open stream, if there is one that has not ended.
    pub fn stream(&self) -> Option<Arc<SessionStream>> {
        let slot = self.slot();
        slot.as_ref().filter(|stream| !stream.is_ended()).cloned()
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Arc<SessionStream>>> {
        self.open.lock().expect("session slot lock")
    }
}

impl Drop for SessionSlot {
    /// The keeper takes its stream down when it ends; this only makes sure
    /// no stream outlives the lease (its reader would keep it open).
    fn drop(&mut self) {
        self.take_down();
    }
}

/// The route of one attempt.
#[derive(Clone, Debug)]
pub(crate) enum Via {
    /// A unary RPC on the endpoint in use.
    Unary(InUse),
    /// A message on the lease's session stream.
    Session(Arc<SessionStream>),
}

impl Via {
    /// The open stream of `session`, if any, else unary on `client`'s
    /// endpoint in use.
    pub fn pick(client: &Client, session: Option<&SessionSlot>) -> Via {
        match session.and_then(SessionSlot::stream) {
            Some(stream) => Via::Session(stream),
            None => Via::Unary(client.endpoints().in_use()),
        }
    }

    /// The route's name, for the metrics.
    pub fn name(&self) -> &'static str {
        match self {
            Via::Unary(_) => "unary",
            Via::Session(_) => "session",
        }
    }
}
