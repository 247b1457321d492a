//! Several locks at once, all or none, by lease id: [`Client::acquire_all`]
//! (the guard API's [`Lease::lock_all`](crate::Lease::lock_all) uses it).

use super::{ms, revision};
use crate::error::Error;
use crate::Client;
use leasehold_core::{LeaseId, LockName, Revision, Token};
use leasehold_proto::v1::lock_client::LockClient;
use leasehold_proto::v1::AcquireAllRequest;
use std::time::Duration;
use tokio::time::Instant;

/// A set of locks granted by [`Client::acquire_all`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcquiredAll {
    /// Each lock's fencing token, in the order the names were given.
    pub tokens: Vec<Token>,
    /// The revision of the answer.
    pub revision: Revision,
    /// The lease already held them all.
    pub already_held: bool,
    /// Time spent in the queues.
    pub waited: Duration,
}

impl Client {
    /// Acquires every lock of `names` for `lease`, all or none: at once if
    /// all are free, else (with a `wait`) as one waiter in every queue,
    /// granted all together once it heads them all. No order of names can
    /// deadlock. Fails with `Busy` (no wait, naming a busy lock) or
    /// `WaitTimeout` (naming the set) if they are not had.
    pub async fn acquire_all(
        &self,
        lease: LeaseId,
        names: &[LockName],
        wait: Duration,
        fenced: bool,
    ) -> Result<AcquiredAll, Error> {
        let request = AcquireAllRequest {
            lease: lease.0,
            names: names.iter().map(LockName::to_string).collect(),
            wait_ms: 0,
            request_id: crate::request_id::new_request_id(),
            fenced,
        };
        let started = Instant::now();
        let give_up_at = started + wait;
        let reply = self
            .call("AcquireAll", wait, |channel| {
                let mut request = request.clone();
                if !wait.is_zero() {
                    // A retry waits only for what is left (at least 1 ms).
                    let left = give_up_at.saturating_duration_since(Instant::now());
                    request.wait_ms = ms(left).max(1);
                }
                async move { LockClient::new(channel).acquire_all(request).await }
            })
            .await;
        let set = || {
            names
                .iter()
                .map(LockName::as_str)
                .collect::<Vec<_>>()
                .join(" ")
        };
        match reply {
            Ok(reply) => Ok(AcquiredAll {
                tokens: reply.tokens.into_iter().map(Token).collect(),
                revision: revision(reply.header.as_ref()),
                already_held: reply.already_held,
                waited: Duration::from_millis(reply.waited_ms),
            }),
            Err(Error::WaitTimeout { .. }) => Err(Error::WaitTimeout {
                name: set(),
                waited: started.elapsed(),
            }),
            Err(other) => Err(other),
        }
    }
}
