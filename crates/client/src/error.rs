//! `Error`: everything a client call can fail with, typed so callers branch
//! on the variant instead of parsing text, and worded so a person can act on
//! the message. The one mapping from a server `Status` to an `Error` is here.

use crate::loss::LockLost;
use leasehold_core::{LeaseId, Token};
use leasehold_proto::status::{error_detail, reason};
use leasehold_proto::v1::ErrorDetail;
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
    /// Any other error the server reported.
    #[error("the server refused the request ({reason}): {message}")]
    Server {
        /// The server's reason.
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
    /// Fills in the lock name the server's answer leaves out.
    pub(crate) fn about(mut self, lock: &str) -> Error {
        match &mut self {
            Error::Busy { name, .. }
            | Error::WaitTimeout { name, .. }
            | Error::NotHolder { name, .. }
            | Error::NoSuchLock { name, .. } => *name = lock.to_owned(),
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

    /// Maps a status to an error and whether to retry.
    pub(crate) fn from_status(status: &tonic::Status) -> (Error, Retry) {
        let detail = error_detail(status);
        let reason = reason(status, detail.as_ref());
        match reason {
            Some(reason) => from_reason(&reason, status, &detail.unwrap_or_default()),
            None => from_code(status),
        }
    }

    /// Maps an error that arrived in-band (a stream's `ErrorDetail`).
    pub(crate) fn from_detail(detail: &ErrorDetail) -> (Error, Retry) {
        let status = tonic::Status::new(tonic::Code::Unknown, detail.message.clone());
        from_reason(&detail.reason, &status, detail)
    }
}

fn from_reason(reason: &str, status: &tonic::Status, d: &ErrorDetail) -> (Error, Retry) {
    let message = if d.message.is_empty() {
        status.message().to_owned()
    } else {
        d.message.clone()
    };
    let token = (d.holder_token != 0).then_some(Token(d.holder_token));
    let error = match reason {
        "InvalidArgument" => Error::InvalidArgument {
            field: d.field.clone(),
            // The server words it as this variant does ("invalid FIELD:
            // REASON"): keep the reason, or the field is named twice.
            reason: match message.strip_prefix(&format!("invalid {}: ", d.field)) {
                Some(reason) => reason.to_owned(),
                None => message,
            },
        },
        "Busy" => Error::Busy {
            name: String::new(),
            holder_token: token,
        },
        "NotHolder" => Error::NotHolder {
            name: String::new(),
            holder_token: token,
            lease: None,
            token: None,
        },
        "NoSuchLock" => Error::NoSuchLock {
            name: String::new(),
            nearby: d.nearby.clone(),
        },
        "WaitTimeout" => Error::WaitTimeout {
            name: String::new(),
            waited: Duration::ZERO,
        },
        "LeaseNotFound" => Error::LeaseNotFound {
            lease: LeaseId(d.lease),
        },
        "LeaseExpired" => Error::LeaseExpired {
            lease: LeaseId(d.lease),
        },
        "ResourceExhausted" => Error::ResourceExhausted {
            limit: d.limit.clone(),
            message,
        },
        "NotLeader" | "Unavailable" => {
            let leader_addr = (!d.leader_addr.is_empty()).then(|| d.leader_addr.clone());
            let error = Error::Unavailable { message };
            return (error, Retry::Failover { leader_addr });
        }
        other => Error::Server {
            reason: other.to_owned(),
            message,
        },
    };
    (error, Retry::No)
}

/// A status that did not come from Leasehold: transport failures and
/// tonic's own errors.
fn from_code(status: &tonic::Status) -> (Error, Retry) {
    use tonic::Code;
    let message = format!("{:?}: {}", status.code(), status.message());
    match status.code() {
        // Transport trouble: a refused or reset connection, an HTTP/2 error
        // (tonic reports some as Internal), a request cut short. A server
        // error comes with a Leasehold reason and is not handled here.
        Code::Unavailable
        | Code::Cancelled
        | Code::Unknown
        | Code::DeadlineExceeded
        | Code::Internal
        | Code::Aborted => {
            let error = Error::Unavailable { message };
            (error, Retry::Failover { leader_addr: None })
        }
        Code::InvalidArgument | Code::OutOfRange => (
            Error::InvalidArgument {
                field: "request".into(),
                reason: message,
            },
            Retry::No,
        ),
        _ => (
            Error::Server {
                reason: format!("{:?}", status.code()),
                message: status.message().to_owned(),
            },
            Retry::No,
        ),
    }
}

impl From<leasehold_core::LockError> for Error {
    fn from(error: leasehold_core::LockError) -> Error {
        match error {
            leasehold_core::LockError::InvalidArgument { field, reason } => {
                Error::InvalidArgument { field, reason }
            }
            other => Error::Server {
                reason: "Local".into(),
                message: other.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_with(detail: ErrorDetail) -> tonic::Status {
        leasehold_proto::status::with_detail(tonic::Code::FailedPrecondition, &detail)
    }

    #[test]
    fn definite_errors_are_not_retried_and_keep_their_fields() {
        let (error, retry) = Error::from_status(&status_with(ErrorDetail {
            reason: "LeaseExpired".into(),
            lease: 9,
            ..Default::default()
        }));
        assert_eq!(error, Error::LeaseExpired { lease: LeaseId(9) });
        assert!(matches!(retry, Retry::No));
    }

    #[test]
    fn not_leader_fails_over_to_the_named_leader() {
        let (_, retry) = Error::from_status(&status_with(ErrorDetail {
            reason: "NotLeader".into(),
            leader_addr: "127.0.0.1:9".into(),
            ..Default::default()
        }));
        assert!(matches!(retry, Retry::Failover { leader_addr: Some(a) } if a == "127.0.0.1:9"));
    }

    #[test]
    fn transport_failures_are_transient() {
        let (error, retry) = Error::from_status(&tonic::Status::unavailable("connection refused"));
        assert!(matches!(error, Error::Unavailable { .. }));
        assert!(matches!(retry, Retry::Failover { leader_addr: None }));
    }
}
