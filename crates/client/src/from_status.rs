//! From a server's answer to an [`Error`] and whether to retry: the one
//! mapping, for a failed call's status and for an error that arrives in-band
//! on a stream. One exhaustive match on the server's typed [`Reason`] (read
//! from `ErrorDetail.code`, or from the name when an older server left the
//! code unset) picks the variant; a reason newer than this build becomes
//! [`Error::Server`]; a status without a reason is a transport failure or
//! tonic's own.

use crate::error::{Error, Retry};
use leasehold_core::{LeaseId, Reason, Token, UnknownReason};
use leasehold_proto::status::{error_detail, typed_reason};
use leasehold_proto::v1::ErrorDetail;
use std::time::Duration;

impl Error {
    /// Maps a status to an error and whether to retry.
    pub(crate) fn from_status(status: &tonic::Status) -> (Error, Retry) {
        let detail = error_detail(status);
        match typed_reason(status, detail.as_ref()) {
            Some(reason) => from_reason(reason, status.message(), &detail.unwrap_or_default()),
            None => from_code(status),
        }
    }

    /// Maps an error that arrived in-band (a stream's `ErrorDetail`).
    pub(crate) fn from_detail(detail: &ErrorDetail) -> (Error, Retry) {
        match detail.typed_reason() {
            Some(reason) => from_reason(reason, &detail.message, detail),
            None => {
                let error = Error::Server {
                    reason: String::new(),
                    message: detail.message.clone(),
                };
                (error, Retry::No)
            }
        }
    }
}

impl From<tonic::Status> for Error {
    /// The error a server's status means, for callers of the raw
    /// `leasehold-proto` stubs (the client's own calls also decide whether
    /// to retry).
    fn from(status: tonic::Status) -> Error {
        Error::from_status(&status).0
    }
}

/// The error of a server's reason, `d` its detail and `said` the status
/// message (used when the detail has none). Known reasons map one to one;
/// an unknown one (a newer server) is [`Error::Server`].
fn from_reason(
    reason: Result<Reason, UnknownReason>,
    said: &str,
    d: &ErrorDetail,
) -> (Error, Retry) {
    let message = if d.message.is_empty() {
        said.to_owned()
    } else {
        d.message.clone()
    };
    match reason {
        Ok(reason) => from_known(reason, message, d),
        Err(UnknownReason(reason)) => (Error::Server { reason, message }, Retry::No),
    }
}

fn from_known(reason: Reason, message: String, d: &ErrorDetail) -> (Error, Retry) {
    let token = (d.holder_token != 0).then_some(Token(d.holder_token));
    let leader_addr = (!d.leader_addr.is_empty()).then(|| d.leader_addr.clone());
    let error = match reason {
        Reason::InvalidArgument => Error::InvalidArgument {
            field: d.field.clone(),
            // The server words it as this variant does ("invalid FIELD:
            // REASON"): keep the reason, or the field is named twice.
            reason: match message.strip_prefix(&format!("invalid {}: ", d.field)) {
                Some(reason) => reason.to_owned(),
                None => message,
            },
        },
        Reason::Busy => Error::Busy {
            name: d.name.clone(),
            holder_token: token,
        },
        Reason::NotHolder => Error::NotHolder {
            name: String::new(),
            holder_token: token,
            lease: None,
            token: None,
        },
        Reason::NoSuchLock => Error::NoSuchLock {
            name: String::new(),
            nearby: d.nearby.clone(),
        },
        Reason::WaitTimeout => Error::WaitTimeout {
            name: String::new(),
            waited: Duration::ZERO,
        },
        Reason::LeaseNotFound => Error::LeaseNotFound {
            lease: LeaseId(d.lease),
        },
        Reason::LeaseExpired => Error::LeaseExpired {
            lease: LeaseId(d.lease),
        },
        Reason::ResourceExhausted => Error::ResourceExhausted {
            limit: d.limit.clone(),
            message,
        },
        Reason::StaleToken => Error::StaleToken {
            key: String::new(),
            lock: String::new(),
            presented: Token(d.holder_token),
            highest: Token(d.highest_token),
            message,
        },
        Reason::Unfenced => Error::Unfenced {
            name: String::new(),
            message,
        },
        Reason::Internal => Error::Internal { message },
        Reason::PermissionDenied => Error::PermissionDenied {
            principal: d.principal.clone(),
            verb: d.verb.clone(),
            prefix: d.prefix.clone(),
            message,
        },
        Reason::Unauthenticated => Error::Unauthenticated { message },
        Reason::NotLeader => {
            let leader = (d.leader_hint != 0).then_some(d.leader_hint);
            let error = Error::NotLeader {
                leader,
                leader_addr: leader_addr.clone(),
                message,
            };
            return (error, Retry::Failover { leader_addr });
        }
        Reason::Unavailable => {
            return (
                Error::Unavailable { message },
                Retry::Failover { leader_addr },
            );
        }
    };
    (error, Retry::No)
}

/// A status that did not come from Leasehold: transport failures and
/// tonic's own errors. A TLS failure (a scheme that does not match the
/// server, a refused certificate: see [`crate::tls`]) is unavailable, and
/// not retried: the endpoint or the certificate is wrong.
fn from_code(status: &tonic::Status) -> (Error, Retry) {
    use tonic::Code;
    if let Some(message) = crate::tls::explain(status, None) {
        return (Error::Unavailable { message }, Retry::No);
    }
    if let Some(message) = refused_connection(status) {
        // A bound the server holds now (its connections, this host's
        // share): another endpoint, or a later try, may be admitted.
        return (
            Error::Unavailable { message },
            Retry::Failover { leader_addr: None },
        );
    }
    let message = format!("{:?}: {}", status.code(), status.message());
    if let Some(message) = not_leasehold(status) {
        return (Error::Unavailable { message }, Retry::No);
    }
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

/// The server's sentence, if it refused the connection at a limit (told in
/// an HTTP/2 GOAWAY: see `leasehold_proto::refusal`).
fn refused_connection(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cause = Some(error);
    while let Some(current) = cause {
        if let Some(sentence) = leasehold_proto::refusal::find_refusal(&current.to_string()) {
            return Some(sentence.to_owned());
        }
        cause = current.source();
    }
    None
}

/// How the sentence for an endpoint that is not a Leasehold server starts;
/// the call loop, which knows the endpoint, adds "at URL" after it.
pub(crate) const NOT_LEASEHOLD: &str = "not a Leasehold server";

/// tonic's message when the peer's bytes are not HTTP/2 frames.
const NOT_HTTP2: &str = "h2 protocol error: http2 error";

/// A status that says the endpoint is not a Leasehold server: it does not
/// know the service (another gRPC server; or a Leasehold server too old
/// for the call), or it does not speak HTTP/2 at all (an HTTP/1 server).
/// Unavailable, and not retried: the endpoint is wrong (the call loop
/// names it), and a retry on its broken connection would only report
/// "operation was canceled".
fn not_leasehold(status: &tonic::Status) -> Option<String> {
    let detail = status.message();
    let looks_foreign = match status.code() {
        tonic::Code::Unimplemented => true,
        // What hyper reports when the reply is not HTTP/2 at all. Not
        // other h2 errors: a Leasehold server killed mid-call gives
        // `Unknown: h2 protocol error: error reading a body from
        // connection`, which is transient.
        tonic::Code::Internal => detail == NOT_HTTP2,
        _ => false,
    };
    looks_foreign.then(|| {
        format!(
            "{NOT_LEASEHOLD} (it answered {:?}: {detail})",
            status.code()
        )
    })
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
    fn a_server_that_is_not_leasehold_is_named_and_unavailable() {
        for status in [
            tonic::Status::unimplemented("unknown service leasehold.v1.Lock"),
            tonic::Status::internal("h2 protocol error: http2 error"),
        ] {
            let (error, retry) = Error::from_status(&status);
            assert!(
                matches!(&error, Error::Unavailable { message } if message.starts_with("not a Leasehold server")),
                "{error:?}"
            );
            assert!(matches!(retry, Retry::No));
        }
    }

    #[test]
    fn a_server_killed_mid_call_is_transient_not_foreign() {
        let status =
            tonic::Status::unknown("h2 protocol error: error reading a body from connection");
        let (_, retry) = Error::from_status(&status);
        assert!(matches!(retry, Retry::Failover { .. }));
    }

    #[test]
    fn transport_failures_are_transient() {
        let (error, retry) = Error::from_status(&tonic::Status::unavailable("connection refused"));
        assert!(matches!(error, Error::Unavailable { .. }));
        assert!(matches!(retry, Retry::Failover { leader_addr: None }));
    }

    #[test]
    fn every_reason_has_its_variant() {
        for &reason in Reason::ALL {
            let (error, retry) = Error::from_status(&status_with(ErrorDetail::new(reason, "m")));
            assert_eq!(error.reason(), Some(reason), "{error:?}");
            let transient = matches!(reason, Reason::NotLeader | Reason::Unavailable);
            assert_eq!(
                matches!(retry, Retry::Failover { .. }),
                transient,
                "{reason}"
            );
            let (in_band, _) = Error::from_detail(&ErrorDetail::new(reason, "m"));
            assert_eq!(in_band, error, "a stream's error reads the same");
        }
    }

    #[test]
    fn stale_token_and_unfenced_keep_their_fields() {
        let mut detail = ErrorDetail::new(Reason::StaleToken, "stale token 5 for fenced key");
        detail.holder_token = 5;
        detail.highest_token = 12;
        let (error, _) = Error::from_status(&status_with(detail));
        let Error::StaleToken {
            presented, highest, ..
        } = &error
        else {
            panic!("expected StaleToken, got {error:?}");
        };
        assert_eq!((*presented, *highest), (Token(5), Token(12)));
        assert_eq!(error.to_string(), "stale token 5 for fenced key");
        let error = Error::from(status_with(ErrorDetail::new(Reason::Unfenced, "m")));
        assert_eq!(
            error.about("cron"),
            Error::Unfenced {
                name: "cron".into(),
                message: "m".into()
            }
        );
    }

    /// An older server sends only the name; a newer one may send a reason
    /// this build does not know, which is kept, as sent, in `Server`.
    #[test]
    fn the_name_is_read_when_the_enum_is_unset_and_unknown_names_are_kept() {
        let older = ErrorDetail {
            reason: "Unfenced".into(),
            message: "m".into(),
            ..Default::default()
        };
        let (error, _) = Error::from_status(&status_with(older));
        assert_eq!(error.reason(), Some(Reason::Unfenced));
        let newer = ErrorDetail {
            reason: "QuotaExceeded".into(),
            code: 99,
            message: "over quota".into(),
            ..Default::default()
        };
        let (error, retry) = Error::from_status(&status_with(newer));
        let server = Error::Server {
            reason: "QuotaExceeded".into(),
            message: "over quota".into(),
        };
        assert_eq!(error, server);
        assert_eq!(error.reason(), None);
        assert!(matches!(retry, Retry::No));
    }
}
