//! Judging one renewal's answer, for the keeper's background renewals and
//! for [`Lease::keep_alive_once`](super::Lease::keep_alive_once) alike:
//!
//! - an acknowledgement moves the local deadline to its send time + ttl −
//!   margin (unless it came too late: then the lease is lost);
//! - it lists what the lease holds on the server; a lock a guard holds that
//!   is missing there was taken away while the lease lived (force release,
//!   max hold), so that guard's loss fires at once, saying how, and it stops
//!   keeping the lease renewed;
//! - a reconcile asked for meanwhile starts after it;
//! - a definite refusal (`LeaseNotFound`, `LeaseExpired`, …) ends the lease.

use super::keeper::Ownership;
use super::reconcile;
use super::state::LeaseState;
use super::LeaseInner;
use crate::clock::BootInstant;
use crate::error::Error;
use crate::loss::LossCause;
use crate::metrics;
use leasehold_proto::v1::{KeepAliveResponse, LeaseHoldings};
use std::collections::HashSet;
use std::sync::Arc;
use tokio::time::Instant;

/// A keep-alive on its way: what its answer is judged against.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sent {
    /// Send time on the boot clock: an acknowledgement moves the deadline
    /// to it + ttl − margin.
    pub at: BootInstant,
    /// Send time on tokio's clock, for the reply bound and the metrics.
    pub started: Instant,
    /// The lease's guard registrations at send time: the reply must list
    /// every lock registered by then that is still ours.
    pub registered: u64,
}

impl Sent {
    /// A keep-alive of `state` sent now (the first attempt's send time: a
    /// retry renews no earlier).
    pub fn now(state: &LeaseState) -> Sent {
        Sent {
            registered: state.registered(),
            at: state.clock.now(),
            started: Instant::now(),
        }
    }
}

/// Applies an acknowledged renewal sent at `sent`: moves the deadline,
/// ends holds the server no longer lists, starts a reconcile asked for.
/// `Err` with the loss if the acknowledgement came too late.
pub(crate) fn acknowledged(
    lease: &Arc<LeaseInner>,
    reply: &KeepAliveResponse,
    sent: Sent,
) -> Result<(), LossCause> {
    let state = &lease.state;
    let left = state.acknowledged(sent.at)?;
    metrics::renewed(sent.started.elapsed(), left);
    let revision = reply.header.as_ref().map_or(0, |h| h.revision);
    state.renewed(revision);
    if let Some(holdings) = &reply.holdings {
        end_taken_holds(state, sent.registered, holdings);
    }
    let reconcile = state.take_reconcile();
    if reconcile && lease.ownership == Ownership::Owned {
        tokio::spawn(reconcile::run(lease.clone()));
    }
    Ok(())
}

/// The server refused renewal for good: the lease is lost. Returns the
/// cause that stands.
pub(crate) fn refused(state: &LeaseState, error: &Error) -> LossCause {
    let cause = match error {
        Error::LeaseExpired { .. } => LossCause::LeaseExpired,
        Error::LeaseNotFound { .. } => LossCause::LeaseNotFound,
        other => LossCause::Refused {
            reason: other.to_string(),
        },
    };
    metrics::renewal_failed(cause.label());
    state.lose(cause)
}

/// Ends every hold of this lease that was registered before the keep-alive
/// was sent and that the server no longer lists: the server took it away
/// while the lease lived. Its loss fires now, saying how when the server
/// said, and it stops keeping the lease renewed.
fn end_taken_holds(state: &LeaseState, registered: u64, holdings: &LeaseHoldings) {
    let held: HashSet<(&str, u64)> = holdings
        .held
        .iter()
        .map(|lock| (lock.name.as_str(), lock.token))
        .collect();
    let taken = state.holds_missing_from(registered, |name, token| {
        held.contains(&(name.as_str(), token.0))
    });
    for (name, hold) in taken {
        let token = hold.token.0;
        let how = holdings
            .ended
            .iter()
            .find(|ended| ended.name == name.as_str() && ended.token == token)
            .map_or_else(
                || {
                    "it is no longer held under this lease; `leasehold events` shows who freed it"
                        .to_owned()
                },
                |ended| ended.how.clone(),
            );
        tracing::warn!(lease = %state.id, lock = %name, token, how, "the server took the lock away");
        hold.end(LossCause::ReleasedByServer { how });
        drop(hold.give_up_claim());
    }
}
