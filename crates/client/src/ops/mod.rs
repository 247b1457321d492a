//! The one-shot API: every Leasehold call as one method on
//! [`Client`](crate::Client), for callers that do not hold a lock through
//! a kept [`Lease`](crate::Lease) — scripts, operators' tools, the
//! `leasehold` command line, dashboards. Each call goes through the
//! client's one call path (`call.rs`: per-attempt bound, failover to the
//! leader a follower names or to the next endpoint, jittered retries of
//! transient failures with the same request id, all as set in
//! [`ClientOptions`](crate::ClientOptions)), takes typed arguments (a
//! [`LockName`](crate::LockName) is valid before anything is sent) and
//! fails with a typed [`Error`](crate::Error).
//!
//! One purpose a file: [`lease`] (grant without a keeper, renew once,
//! revoke, describe), [`locks`] (acquire and release by lease id, get,
//! list), [`force`] (break-glass release and the incident record),
//! [`fenced`] (the built-in fenced store), [`cluster`] (status and
//! membership), [`election`] (who leads, following it, proclaiming), [`events`] (what happened to locks, as a stream), [`auth`]
//! (roles, users, tokens, the audit trail).
//!
//! Mutations return what the caller needs to act on, typed (a [`Token`],
//! a [`Revision`]); rich read views return the server's own description
//! ([`wire`](crate::wire)), so nothing is lost in translation.
//!
//! [`Token`]: crate::Token
//! [`Revision`]: crate::Revision

pub mod auth;
pub mod backup;
pub mod cluster;
pub mod election;
pub mod events;
pub mod fenced;
pub mod force;
pub mod lease;
pub mod lock_set;
pub mod locks;

use leasehold_core::Revision;
use leasehold_proto::v1::ResponseHeader;
use std::time::Duration;

/// How fresh a read must be.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Consistency {
    /// Everything committed before the read began is seen: the leader
    /// answers after a read barrier (a follower's `NotLeader` is followed).
    #[default]
    Linearizable,
    /// The answering node's applied state, without a barrier: any node
    /// answers (no leader needed), but the answer may be behind the leader's.
    Stale,
}

impl Consistency {
    /// The wire's `stale` flag.
    pub(crate) fn stale(self) -> bool {
        self == Consistency::Stale
    }
}

/// The revision in a reply header (0 if the header is missing).
pub(crate) fn revision(header: Option<&ResponseHeader>) -> Revision {
    Revision(header.map_or(0, |h| h.revision))
}

/// Whole milliseconds of `d`, saturating (the wire carries u64 ms).
pub(crate) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
