//! The one place that maps errors to gRPC: a status code, a message a user
//! can act on, and a machine-readable [`ErrorDetail`]. The wire form is
//! [`leasehold_proto::status::with_detail`]: a standard `google.rpc.Status`
//! in the status details (an `ErrorInfo` with the reason, and the
//! `ErrorDetail` packed as `Any`), plus the reason in the `leasehold-reason`
//! metadata. Stream answers carry the bare [`ErrorDetail`] in-band
//! (`From<ApiError> for ErrorDetail`). Every match here is exhaustive on
//! typed values: the reason of each error, the gRPC code of each reason, the
//! fields each carries (the limit is data in the error, never read back out
//! of its message).

use crate::proposer::ProposeError;
use crate::raft::quorum::NoQuorum;
use leasehold_core::{Limit, LockError, Reason};
use leasehold_proto::v1::ErrorDetail;
use tonic::{Code, Status};

/// Everything a request can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The state machine refused the command.
    #[error(transparent)]
    Core(#[from] LockError),
    /// The wait of a queued acquire ran out.
    #[error("waited {waited_ms} ms for lock {name} without getting it: retry, or wait longer")]
    WaitTimeout { name: String, waited_ms: u64 },
    /// Another node leads; send the request there.
    #[error("this node is not the leader; leader is {}", leader_text(.leader, .leader_addr))]
    NotLeader {
        leader: Option<u64>,
        leader_addr: Option<String>,
    },
    /// The service cannot answer right now.
    #[error("service unavailable: {0}; retry shortly")]
    Unavailable(String),
    /// This node leads without a quorum: it can neither commit a write nor
    /// confirm a read. Reason `Unavailable`, like any other outage.
    #[error(
        "no quorum: {0}; nothing can commit until a majority of the voting members answers this \
         leader: restart or reconnect the missing members, then retry (retrying the same \
         request is safe)"
    )]
    NoQuorum(NoQuorum),
    /// This node was removed from the cluster. Reason `Unavailable`: a
    /// client with other endpoints moves on.
    #[error("{}", crate::raft::membership::refusal(*.node_id))]
    Removed { node_id: u64 },
    /// This node's disk takes no writes (a failed fsync, a full disk).
    /// Reason `Unavailable`; the sentence names the path and what to do.
    #[error(transparent)]
    Disk(crate::storage::DiskFault),
    /// A member speaks an older Raft protocol than the command needs (a
    /// rolling upgrade is under way). Reason `Unavailable`: the same
    /// request succeeds once the upgrade is done.
    #[error(transparent)]
    OlderMember(crate::raft::protocol::OlderMember),
    /// A bound on what one client may hold at once (the calls open from its
    /// address) refused the call. Reason `Unavailable`: it is let through
    /// once the client holds less; `limit` names the bound.
    #[error("{why}")]
    AtLimit {
        limit: leasehold_core::limits::Limit,
        why: String,
    },
}

fn leader_text(leader: &Option<u64>, addr: &Option<String>) -> String {
    match (leader, addr) {
        (Some(id), Some(addr)) => format!("node {id} at {addr}"),
        (Some(id), None) => format!("node {id}"),
        _ => "unknown (an election may be in progress)".into(),
    }
}

impl From<ProposeError> for ApiError {
    fn from(error: ProposeError) -> ApiError {
        match error {
            ProposeError::NotLeader {
                leader,
                leader_addr,
            } => ApiError::NotLeader {
                leader,
                leader_addr,
            },
            ProposeError::Unavailable(why) => ApiError::Unavailable(why),
            ProposeError::NoQuorum(why) => ApiError::NoQuorum(why),
            ProposeError::Removed { node_id } => ApiError::Removed { node_id },
            ProposeError::Disk(fault) => ApiError::Disk(fault),
            ProposeError::OlderMember(older) => ApiError::OlderMember(older),
        }
    }
}

impl ApiError {
    /// Shorthand for an invalid field that no limit bounds.
    pub fn invalid(field: &str, reason: impl Into<String>) -> ApiError {
        ApiError::Core(LockError::invalid(field, reason))
    }

    /// The machine-readable reason of this error.
    fn reason(&self) -> Reason {
        match self {
            ApiError::Core(error) => error.reason(),
            ApiError::WaitTimeout { .. } => Reason::WaitTimeout,
            ApiError::NotLeader { .. } => Reason::NotLeader,
            ApiError::Unavailable(_)
            | ApiError::NoQuorum(_)
            | ApiError::Removed { .. }
            | ApiError::Disk(_)
            | ApiError::OlderMember(_)
            | ApiError::AtLimit { .. } => Reason::Unavailable,
        }
    }

    fn code_and_detail(&self) -> (Code, ErrorDetail) {
        let reason = self.reason();
        let mut detail = ErrorDetail::new(reason, self.to_string());
        match self {
            ApiError::Core(error) => fill_core(error, &mut detail),
            ApiError::NotLeader {
                leader,
                leader_addr,
            } => {
                detail.leader_hint = leader.unwrap_or(0);
                detail.leader_addr = leader_addr.clone().unwrap_or_default();
            }
            ApiError::WaitTimeout { .. }
            | ApiError::Unavailable(_)
            | ApiError::NoQuorum(_)
            | ApiError::Removed { .. }
            | ApiError::Disk(_) => {}
            ApiError::OlderMember(older) => {
                (detail.leader_hint, detail.leader_addr) = older.leader.clone();
            }
            ApiError::AtLimit { limit, .. } => detail.limit = limit.as_str().to_owned(),
        }
        (grpc_code(reason), detail)
    }
}

/// Copies the fields a core error carries into its detail.
fn fill_core(error: &LockError, detail: &mut ErrorDetail) {
    match error {
        LockError::LeaseNotFound { lease } | LockError::LeaseExpired { lease } => {
            detail.lease = lease.0;
        }
        LockError::NotHolder {
            lease,
            holder_token,
            ..
        } => {
            detail.lease = lease.map_or(0, |l| l.0);
            detail.holder_token = holder_token.map_or(0, |t| t.0);
        }
        LockError::NoSuchLock { nearby, .. } => detail.nearby = nearby.clone(),
        LockError::Busy { name, holder_token } => {
            detail.name = name.to_string();
            detail.holder_token = holder_token.map_or(0, |t| t.0);
        }
        LockError::InvalidArgument { field, limit, .. } => {
            detail.field = field.clone();
            detail.limit = limit.map_or("", Limit::as_str).to_owned();
        }
        LockError::ResourceExhausted { limit, .. } => detail.limit = limit.as_str().to_owned(),
        LockError::StaleToken {
            presented, highest, ..
        } => {
            // The writer passed the holder check: it is the holder.
            detail.holder_token = presented.0;
            detail.highest_token = highest.0;
        }
        LockError::Unfenced { .. } | LockError::Unauthenticated { .. } => {}
        LockError::PermissionDenied {
            principal,
            verb,
            name,
            denied_by,
        } => {
            detail.principal = principal.clone();
            detail.verb = verb.as_str().to_owned();
            detail.prefix = match denied_by {
                Some(prefix) => prefix.clone(),
                None => leasehold_core::auth::suggested_prefix(name).to_owned(),
            };
        }
        LockError::NotLeaseOwner {
            lease, principal, ..
        } => {
            detail.lease = lease.0;
            detail.principal = principal.clone();
        }
        LockError::QuotaExceeded { principal, .. } => detail.principal = principal.clone(),
    }
}

/// The gRPC code of each reason: the one table.
fn grpc_code(reason: Reason) -> Code {
    match reason {
        Reason::LeaseNotFound | Reason::LeaseExpired | Reason::NoSuchLock => Code::NotFound,
        Reason::NotHolder | Reason::Busy | Reason::StaleToken | Reason::Unfenced => {
            Code::FailedPrecondition
        }
        Reason::WaitTimeout => Code::DeadlineExceeded,
        Reason::NotLeader | Reason::Unavailable => Code::Unavailable,
        Reason::InvalidArgument => Code::InvalidArgument,
        Reason::ResourceExhausted => Code::ResourceExhausted,
        Reason::Internal => Code::Internal,
        Reason::PermissionDenied => Code::PermissionDenied,
        Reason::Unauthenticated => Code::Unauthenticated,
    }
}

impl From<ApiError> for Status {
    fn from(error: ApiError) -> Status {
        let (code, detail) = error.code_and_detail();
        if code == Code::Internal {
            // Reserved for faults of the server's own: each is logged.
            tracing::error!(error = %error, "answering INTERNAL");
        }
        leasehold_proto::status::with_detail(code, &detail)
    }
}

impl From<ApiError> for ErrorDetail {
    /// The in-band form of an error, for answers carried on a stream.
    fn from(error: ApiError) -> ErrorDetail {
        error.code_and_detail().1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_core::{LeaseId, LockName, Token};

    use leasehold_proto::status::{
        error_detail, DOMAIN, ERROR_DETAIL_TYPE_URL, ERROR_INFO_TYPE_URL,
    };
    use prost::Message;
    use std::collections::HashMap;
    use tonic_types::pb::{ErrorInfo, Status as RpcStatus};

    fn detail(status: &Status) -> ErrorDetail {
        error_detail(status).expect("a Leasehold error detail")
    }

    /// Decodes the details as a generic reader does: a `google.rpc.Status`
    /// whose code and message are the status's, an `ErrorInfo` and the
    /// packed `ErrorDetail`.
    fn rich(status: &Status) -> (ErrorInfo, ErrorDetail) {
        let rpc = RpcStatus::decode(status.details()).expect("a google.rpc.Status");
        assert_eq!(rpc.code, status.code() as i32);
        assert_eq!(rpc.message, status.message());
        let packed = |url: &str| {
            let any = rpc.details.iter().find(|any| any.type_url == url);
            any.unwrap_or_else(|| panic!("no {url} in {rpc:?}"))
                .value
                .clone()
        };
        let info = ErrorInfo::decode(packed(ERROR_INFO_TYPE_URL).as_slice()).unwrap();
        let detail = ErrorDetail::decode(packed(ERROR_DETAIL_TYPE_URL).as_slice()).unwrap();
        assert_eq!(info.domain, DOMAIN);
        assert_eq!(info.reason, detail.reason);
        assert_eq!(
            status.metadata().get("leasehold-reason").unwrap(),
            info.reason.as_str()
        );
        (info, detail)
    }

    fn metadata(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn details_are_a_google_rpc_status_with_error_info_and_the_detail() {
        type Case = (
            fn() -> ApiError,
            &'static str,
            &'static [(&'static str, &'static str)],
        );
        let cases: [Case; 5] = [
            (
                || {
                    ApiError::Core(LockError::NotHolder {
                        name: LockName::parse("a").unwrap(),
                        lease: Some(LeaseId(3)),
                        token: Token(4),
                        holder_token: Some(Token(9)),
                    })
                },
                "NotHolder",
                &[("lease", "3"), ("holder_token", "9")],
            ),
            (
                || ApiError::Core(LockName::parse(&"a".repeat(600)).unwrap_err()),
                "InvalidArgument",
                &[("field", "name"), ("limit", "NAME_BYTES_MAX")],
            ),
            (
                || ApiError::NotLeader {
                    leader: Some(2),
                    leader_addr: Some("10.0.0.2:7420".into()),
                },
                "NotLeader",
                &[("leader_hint", "2"), ("leader_addr", "10.0.0.2:7420")],
            ),
            (
                || {
                    ApiError::Core(LockError::NoSuchLock {
                        name: LockName::parse("jobs/nightly").unwrap(),
                        nearby: vec!["jobs/nightly-1".into(), "jobs/nightly-2".into()],
                    })
                },
                "NoSuchLock",
                &[("nearby", "jobs/nightly-1,jobs/nightly-2")],
            ),
            (
                || ApiError::Unavailable("the log is full".into()),
                "Unavailable",
                &[],
            ),
        ];
        for (error, reason, expected) in cases {
            let status = Status::from(error());
            let (info, packed) = rich(&status);
            assert_eq!(info.reason, reason);
            assert_eq!(info.metadata, metadata(expected), "{reason}");
            assert_eq!(packed.message, status.message());
            assert_eq!(
                detail(&status),
                packed,
                "the decoder reads the packed detail"
            );
            assert_eq!(
                ErrorDetail::from(error()),
                packed,
                "the in-band detail is the same"
            );
        }
    }

    #[test]
    fn not_holder_carries_the_holder_token() {
        let status = Status::from(ApiError::Core(LockError::NotHolder {
            name: LockName::parse("a").unwrap(),
            lease: Some(LeaseId(3)),
            token: Token(4),
            holder_token: Some(Token(9)),
        }));
        assert_eq!(status.code(), Code::FailedPrecondition);
        assert_eq!(detail(&status).reason, "NotHolder");
        assert_eq!(detail(&status).holder_token, 9);
        assert_eq!(
            status.metadata().get("leasehold-reason").unwrap(),
            "NotHolder"
        );
    }

    #[test]
    fn stale_token_carries_the_highest_token_and_names_both() {
        let status = Status::from(ApiError::Core(LockError::StaleToken {
            key: leasehold_core::FencedKey::parse("cfg/leader").unwrap(),
            lock: LockName::parse("jobs/a").unwrap(),
            presented: Token(5),
            highest: Token(12),
            highest_lock: LockName::parse("jobs/b").unwrap(),
        }));
        assert_eq!(status.code(), Code::FailedPrecondition);
        assert_eq!(detail(&status).reason, "StaleToken");
        assert_eq!(detail(&status).highest_token, 12);
        assert!(status.message().contains("stale token 5"));
        assert!(status.message().contains("token 12"));
        assert_eq!(
            status.metadata().get("leasehold-reason").unwrap(),
            "StaleToken"
        );
    }

    #[test]
    fn unfenced_is_a_failed_precondition_naming_the_override() {
        let status = Status::from(ApiError::Core(LockError::Unfenced {
            name: LockName::parse("cron").unwrap(),
        }));
        assert_eq!(status.code(), Code::FailedPrecondition);
        assert_eq!(detail(&status).reason, "Unfenced");
        assert!(status.message().contains("allow_unfenced"));
        assert_eq!(
            status.metadata().get("leasehold-reason").unwrap(),
            "Unfenced"
        );
    }

    #[test]
    fn no_quorum_is_unavailable_with_the_sentence() {
        let status = Status::from(ApiError::NoQuorum(NoQuorum {
            reached: 1,
            voters: 3,
            needed: 2,
            last_ack: Some(std::time::Duration::from_millis(2_300)),
            leading_for: std::time::Duration::from_secs(60),
        }));
        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(detail(&status).reason, "Unavailable");
        assert!(
            status
                .message()
                .starts_with("no quorum: this node reaches 1 of 3 voting members (2 needed); "),
            "{}",
            status.message()
        );
        assert!(status.message().contains("retry"), "{}", status.message());
    }

    #[test]
    fn invalid_argument_names_field_and_limit() {
        let status = Status::from(ApiError::Core(
            LockName::parse(&"a".repeat(600)).unwrap_err(),
        ));
        assert_eq!(status.code(), Code::InvalidArgument);
        assert_eq!(detail(&status).field, "name");
        assert_eq!(detail(&status).limit, "NAME_BYTES_MAX");
        assert!(status.message().contains("invalid name"));
    }

    /// The limit comes from the error's data, whatever its message says: a
    /// ttl over the maximum names TTL_MS_MAX although its message names
    /// TTL_MS_MIN first, and a message that names no limit leaves it empty.
    #[test]
    fn the_limit_is_copied_from_the_error_not_read_from_its_message() {
        let too_long = leasehold_core::command::check_ttl(leasehold_core::limits::TTL_MS_MAX + 1);
        let status = Status::from(ApiError::Core(too_long.unwrap_err()));
        assert!(
            status.message().contains("TTL_MS_MIN"),
            "{}",
            status.message()
        );
        assert_eq!(detail(&status).limit, "TTL_MS_MAX");
        assert_eq!(detail(&status).field, "ttl_ms");
        let status = Status::from(ApiError::invalid("lease", "NOT_A_LIMIT was named"));
        assert_eq!(detail(&status).limit, "");
        let full = LockError::exhausted(Limit::WaitersPerLockMax, "1024 waiters are queued");
        let status = Status::from(ApiError::Core(full));
        assert_eq!(status.code(), Code::ResourceExhausted);
        assert_eq!(detail(&status).limit, "WAITERS_PER_LOCK_MAX");
        assert!(status.message().contains("(1024)"), "{}", status.message());
    }

    /// Every detail carries its reason twice, as the enum and by name, and
    /// both say the same.
    #[test]
    fn the_detail_carries_the_reason_as_enum_and_name() {
        let errors = [
            ApiError::Core(LockError::LeaseExpired { lease: LeaseId(4) }),
            ApiError::WaitTimeout {
                name: "a".into(),
                waited_ms: 5,
            },
            ApiError::NotLeader {
                leader: None,
                leader_addr: None,
            },
            ApiError::Unavailable("restarting".into()),
        ];
        for error in errors {
            let reason = error.reason();
            let packed = detail(&Status::from(error));
            assert_eq!(packed.code(), reason.into());
            assert_eq!(packed.reason, reason.as_str());
            assert_eq!(packed.typed_reason(), Some(Ok(reason)));
        }
    }
}
