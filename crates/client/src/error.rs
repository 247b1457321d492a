//! `Error`: everything a client call can fail with, typed so callers branch
//! on the variant instead of parsing text, and worded so a person can act on
//! the message. Every reason a server sends has its variant
//! ([`Error::reason`] gives it back); the mapping from a server's status to
//! an `Error` is in [`crate::from_status`].

use crate::loss::LockLost;
use leasehold_core::{LeaseId, Reason, Token};
use std::time::Duration;

/// A failed client call.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A field is out of bounds (checked locally or by the server); the
    /// reason names the limit.
    #[error("invalid {field}: {reason}")]
    InvalidArgument {
        /// The offending field.
        field: String,
        /// What is wrong, naming the limit.
        reason: String,
    },
    /// The lock is held by another lease and the acquire did not wait.
    #[error("lock {name} is busy (held under token {}); pass .wait(..) to queue for it", fmt_token(*.holder_token))]
    Busy {
        /// The lock.
        name: String,
        /// The holder's token, if the server said.
        holder_token: Option<Token>,
    },
    /// The lock did not become free within the wait.
    #[error("lock {name} was not free within {} ms of waiting; its holder still renews it", .waited.as_millis())]
    WaitTimeout {
        /// The lock.
        name: String,
        /// How long the acquire waited.
        waited: Duration,
    },
    /// The server does not know the lease (revoked, or never granted).
    #[error(
        "lease {lease} is not known to the server (revoked or never granted); grant a new lease"
    )]
    LeaseNotFound {
        /// The lease.
        lease: LeaseId,
    },
    /// The lease expired on the server.
    #[error("lease {lease} expired on the server; grant a new lease")]
    LeaseExpired {
        /// The lease.
        lease: LeaseId,
    },
    /// The lock is held under another token than the one given.
    #[error("{}", not_holder(.name, *.holder_token, *.lease, *.token))]
    NotHolder {
        /// The lock.
        name: String,
        /// The current holder's token, if any.
        holder_token: Option<Token>,
        /// The lease the caller named (a release by lease id; a fenced
        /// write or force release names none).
        lease: Option<LeaseId>,
        /// The token the caller presented (a one-shot call by token);
        /// `None` for a guard's own: this lease's token.
        token: Option<Token>,
    },
    /// No lock of that name exists.
    #[error("no lock named {name:?}{}", fmt_nearby(.nearby))]
    NoSuchLock {
        /// The name asked for.
        name: String,
        /// Existing names that look like it.
        nearby: Vec<String>,
    },
    /// This lease already holds, or is acquiring, the lock through another
    /// guard. One guard per lock per lease: two would release each other's lock.
    #[error(
        "this lease already holds or is acquiring {name} through another guard; use that guard"
    )]
    AlreadyHeld {
        /// The lock.
        name: String,
    },
    /// A server limit was reached.
    #[error("{message} (limit {limit})")]
    ResourceExhausted {
        /// The limit, by its name in the server's `limits`.
        limit: String,
        /// The server's message.
        message: String,
    },
    /// No endpoint answered, within the retry budget.
    #[error("leasehold is unavailable: {message}")]
    Unavailable {
        /// What was tried and what failed.
        message: String,
    },
    /// A call got no answer in time (after retries).
    #[error("{what} got no answer within {} ms; the server may be overloaded or without a leader", .after.as_millis())]
    Timeout {
        /// The call.
        what: &'static str,
        /// The bound that passed.
        after: Duration,
    },
    /// Ownership was lost before the call could complete.
    #[error(transparent)]
    Lost(#[from] LockLost),
    /// A fenced-store write whose token is below the highest token that has
    /// written the key: a newer holder has written it since. Stop writing
    /// the key under this lock.
    #[error("{message}")]
    StaleToken {
        /// The key, when the call that failed knows it (the server's detail
        /// carries no names; empty for an error read from a bare status).
        key: String,
        /// The lock the writer holds, likewise filled in by the call.
        lock: String,
        /// The token the writer presented.
        presented: Token,
        /// The highest token that has written the key.
        highest: Token,
        /// The server's sentence, which names the key and both locks.
        message: String,
    },
    /// A force release refused because the holder did not declare fencing:
    /// the old holder could still write after it. Stop the holder first,
    /// then pass the override.
    #[error("{message}")]
    Unfenced {
        /// The lock, when the call that failed knows it.
        name: String,
        /// The server's sentence.
        message: String,
    },
    /// The node that answered does not lead. Transient: calls move to the
    /// leader and retry, and report [`Error::Unavailable`] if the retry
    /// budget runs out first.
    #[error("{message}")]
    NotLeader {
        /// The leader's node id, if the node knew it.
        leader: Option<u64>,
        /// The leader's address, if the node knew it.
        leader_addr: Option<String>,
        /// The server's sentence.
        message: String,
    },
    /// Auth is enabled and the principal may not do this: no role grants
    /// the verb on a prefix of the name, a rule denies it, or the lease
    /// belongs to another principal. Ask an admin (`leasehold role grant`).
    #[error("{message}")]
    PermissionDenied {
        /// The refused principal.
        principal: String,
        /// The verb it lacked (`observe`, `lock`, `force`, `admin`; empty
        /// when the lease belongs to another principal).
        verb: String,
        /// The name or prefix concerned.
        prefix: String,
        /// The server's sentence, which names all three.
        message: String,
    },
    /// Auth is enabled and the call carried no identity, or a token that is
    /// malformed, unknown, revoked or expired. Pass `auth_token` (CLI:
    /// `--auth-token` or `LEASEHOLD_AUTH_TOKEN`).
    #[error("{message}")]
    Unauthenticated {
        /// The server's sentence.
        message: String,
    },
    /// The server failed on its own account (a bug to report).
    #[error("the server failed internally: {message}")]
    Internal {
        /// The server's message.
        message: String,
    },
    /// An error whose reason this client does not know: sent by a newer
    /// server (every reason this build knows has its own variant), or a
    /// status that did not come from a Leasehold server.
    #[error("the server refused the request ({reason}): {message}")]
    Server {
        /// The server's reason, as sent.
        reason: String,
        /// The server's message.
        message: String,
    },
}

fn fmt_nearby(nearby: &[String]) -> String {
    if nearby.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", nearby.join(", "))
    }
}

/// A `NotHolder` in words: what the caller presented, and who holds the
/// lock instead.
fn not_holder(
    name: &str,
    holder_token: Option<Token>,
    lease: Option<LeaseId>,
    token: Option<Token>,
) -> String {
    let Some(token) = token else {
        return format!(
            "lock {name} is held under token {}, not by this lease's token",
            fmt_token(holder_token)
        );
    };
    let by_lease = lease.map_or_else(String::new, |lease| format!("by lease {lease} "));
    let holder = holder_token.map_or_else(
        || "nobody holds it now".to_owned(),
        |holder| format!("the current holder's token is {holder}"),
    );
    format!("lock {name} is not held {by_lease}with token {token}; {holder}")
}

fn fmt_token(token: Option<Token>) -> String {
    token.map_or_else(|| "unknown".to_owned(), |t| t.to_string())
}

/// What to do about a failed attempt.
#[derive(Debug)]
pub(crate) enum Retry {
    /// Definite: give up with this error.
    No,
    /// Transient: retry, on the leader if its address is known, else on
    /// the next endpoint.
    Failover {
        /// The leader's address, when a follower named it.
        leader_addr: Option<String>,
    },
}

impl Error {
    /// The server's reason for this error; `None` for the errors the client
    /// finds itself ([`Error::AlreadyHeld`], [`Error::Timeout`],
    /// [`Error::Lost`]) and for unknown reasons ([`Error::Server`]).
    pub fn reason(&self) -> Option<Reason> {
        Some(match self {
            Error::InvalidArgument { .. } => Reason::InvalidArgument,
            Error::Busy { .. } => Reason::Busy,
            Error::WaitTimeout { .. } => Reason::WaitTimeout,
            Error::LeaseNotFound { .. } => Reason::LeaseNotFound,
            Error::LeaseExpired { .. } => Reason::LeaseExpired,
            Error::NotHolder { .. } => Reason::NotHolder,
            Error::NoSuchLock { .. } => Reason::NoSuchLock,
            Error::ResourceExhausted { .. } => Reason::ResourceExhausted,
            Error::Unavailable { .. } => Reason::Unavailable,
            Error::StaleToken { .. } => Reason::StaleToken,
            Error::Unfenced { .. } => Reason::Unfenced,
            Error::NotLeader { .. } => Reason::NotLeader,
            Error::Internal { .. } => Reason::Internal,
            Error::PermissionDenied { .. } => Reason::PermissionDenied,
            Error::Unauthenticated { .. } => Reason::Unauthenticated,
            Error::AlreadyHeld { .. }
            | Error::Timeout { .. }
            | Error::Lost(_)
            | Error::Server { .. } => return None,
        })
    }

    /// Fills in the lock name the server's answer leaves out.
    pub(crate) fn about(mut self, lock: &str) -> Error {
        match &mut self {
            Error::Busy { name, .. }
            | Error::WaitTimeout { name, .. }
            | Error::NotHolder { name, .. }
            | Error::NoSuchLock { name, .. }
            | Error::Unfenced { name, .. }
            | Error::StaleToken { lock: name, .. } => *name = lock.to_owned(),
            _ => {}
        }
        self
    }

    /// Fills in what the caller presented (its lease, if it named one, and
    /// token), which a `NotHolder` answer leaves out.
    pub(crate) fn presented(mut self, by: Option<LeaseId>, with: Token) -> Error {
        if let Error::NotHolder { lease, token, .. } = &mut self {
            *lease = by;
            *token = Some(with);
        }
        self
    }
}

impl From<leasehold_core::LockError> for Error {
    fn from(error: leasehold_core::LockError) -> Error {
        match error {
            leasehold_core::LockError::InvalidArgument { field, reason, .. } => {
                Error::InvalidArgument { field, reason }
            }
            other => Error::Server {
                reason: "Local".into(),
                message: other.to_string(),
            },
        }
    }
}
