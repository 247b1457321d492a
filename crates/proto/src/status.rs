//! The Leasehold part of a gRPC status, written and read in one place.
//!
//! Every server error carries, in the status details (the
//! `grpc-status-details-bin` trailer), a standard `google.rpc.Status`, so
//! any gRPC library's rich-error reader understands it (Python's
//! `grpc_status.rpc_status.from_call`, Go's `status.FromError`, …):
//!
//! - `code` and `message`: the same as the gRPC status;
//! - `details[0]`: a `google.rpc.ErrorInfo` with `reason` (the Leasehold
//!   reason's name, `NotHolder`, `Busy`, …, the same word as everywhere else),
//!   `domain` = [`DOMAIN`], and `metadata` holding the non-empty fields of
//!   the [`ErrorDetail`] as strings, so generic readers see them;
//! - `details[1]`: the full [`ErrorDetail`] packed as `google.protobuf.Any`
//!   ([`ERROR_DETAIL_TYPE_URL`]).
//!
//! The reason also travels in the `leasehold-reason` metadata, and typed in
//! `ErrorDetail.code` (see [`crate::reason`]). The server writes with
//! [`with_detail`]; every Rust client reads with [`error_detail`] and
//! [`typed_reason`] (or [`reason`] for the name alone). In-band stream errors
//! (`KeepAliveResponse.error`, `SessionResponse.error`) are plain
//! `ErrorDetail` messages, not statuses.

use crate::v1::ErrorDetail;
use leasehold_core::{Reason, UnknownReason};
use prost::Message;
use prost_types::Any;
use std::collections::HashMap;
use tonic_types::pb::{ErrorInfo, Status as RpcStatus};

/// The `ErrorInfo.domain` of every Leasehold error.
pub const DOMAIN: &str = "leasehold.v1";

/// The `Any` type URL of the packed [`ErrorDetail`].
pub const ERROR_DETAIL_TYPE_URL: &str = "type.googleapis.com/leasehold.v1.ErrorDetail";

/// The `Any` type URL of the packed `google.rpc.ErrorInfo`.
pub const ERROR_INFO_TYPE_URL: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// The response metadata key that carries the reason.
pub const REASON_METADATA: &str = "leasehold-reason";

/// A status with `code`, the detail's message, the details described in the
/// module doc, and the reason in the `leasehold-reason` metadata.
pub fn with_detail(code: tonic::Code, detail: &ErrorDetail) -> tonic::Status {
    let details = RpcStatus {
        code: code as i32,
        message: detail.message.clone(),
        details: vec![
            pack(ERROR_INFO_TYPE_URL, &error_info(detail)),
            pack(ERROR_DETAIL_TYPE_URL, detail),
        ],
    };
    let mut status =
        tonic::Status::with_details(code, detail.message.clone(), details.encode_to_vec().into());
    if let Ok(reason) = detail.reason.parse() {
        status.metadata_mut().insert(REASON_METADATA, reason);
    }
    status
}

/// The `ErrorInfo` of a detail: its reason, [`DOMAIN`], and its non-empty
/// fields as strings (`nearby` joined by commas; the packed `ErrorDetail`
/// keeps the exact list).
fn error_info(detail: &ErrorDetail) -> ErrorInfo {
    let numbers = [
        ("lease", detail.lease),
        ("holder_token", detail.holder_token),
        ("leader_hint", detail.leader_hint),
        ("highest_token", detail.highest_token),
    ];
    let texts = [
        ("field", &detail.field),
        ("limit", &detail.limit),
        ("leader_addr", &detail.leader_addr),
    ];
    let mut metadata = HashMap::new();
    for (key, number) in numbers.into_iter().filter(|(_, n)| *n != 0) {
        metadata.insert(key.to_owned(), number.to_string());
    }
    for (key, text) in texts.into_iter().filter(|(_, t)| !t.is_empty()) {
        metadata.insert(key.to_owned(), text.clone());
    }
    if !detail.nearby.is_empty() {
        metadata.insert("nearby".to_owned(), detail.nearby.join(","));
    }
    ErrorInfo {
        reason: detail.reason.clone(),
        domain: DOMAIN.to_owned(),
        metadata,
    }
}

fn pack(type_url: &str, message: &impl Message) -> Any {
    Any {
        type_url: type_url.to_owned(),
        value: message.encode_to_vec(),
    }
}

/// Decodes the `ErrorDetail` carried in the status details, if any: the one
/// packed in the `google.rpc.Status`, or, from a server older than that
/// format, the bare `ErrorDetail` it sent instead (the two cannot be
/// mistaken: their field 1 has different wire types). `None` for a status
/// that did not come from a Leasehold server.
pub fn error_detail(status: &tonic::Status) -> Option<ErrorDetail> {
    let bytes = status.details();
    if bytes.is_empty() {
        return None;
    }
    match RpcStatus::decode(bytes) {
        Ok(rpc) => rpc
            .details
            .iter()
            .find(|any| any.type_url == ERROR_DETAIL_TYPE_URL)
            .and_then(|any| ErrorDetail::decode(any.value.as_slice()).ok()),
        Err(_) => ErrorDetail::decode(bytes).ok(),
    }
}

/// The server's machine-readable reason, typed: from the detail
/// ([`ErrorDetail::typed_reason`]: its `code`, else its name) or else the
/// `leasehold-reason` metadata; `Err` with the name for a reason this build
/// does not know (a newer server); `None` for errors that did not come from
/// a Leasehold server (transport failures, tonic's own).
pub fn typed_reason(
    status: &tonic::Status,
    detail: Option<&ErrorDetail>,
) -> Option<Result<Reason, UnknownReason>> {
    detail.and_then(ErrorDetail::typed_reason).or_else(|| {
        status
            .metadata()
            .get(REASON_METADATA)
            .and_then(|v| v.to_str().ok())
            .map(str::parse)
    })
}

/// The name of the server's reason (`Busy`, `NotLeader`, …, or an unknown
/// one as sent), as [`typed_reason`] finds it.
pub fn reason(status: &tonic::Status, detail: Option<&ErrorDetail>) -> Option<String> {
    typed_reason(status, detail).map(|reason| match reason {
        Ok(known) => known.as_str().to_owned(),
        Err(UnknownReason(name)) => name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    fn busy() -> ErrorDetail {
        ErrorDetail {
            reason: "Busy".into(),
            holder_token: 7,
            lease: 3,
            nearby: vec!["jobs/a".into(), "jobs/b".into()],
            message: "lock jobs/x is busy".into(),
            ..Default::default()
        }
    }

    #[test]
    fn details_are_a_google_rpc_status_with_error_info_and_the_detail() {
        let status = with_detail(Code::FailedPrecondition, &busy());
        let rpc = RpcStatus::decode(status.details()).unwrap();
        assert_eq!(rpc.code, Code::FailedPrecondition as i32);
        assert_eq!(rpc.message, status.message());
        assert_eq!(rpc.details.len(), 2);
        assert_eq!(rpc.details[0].type_url, ERROR_INFO_TYPE_URL);
        let info = ErrorInfo::decode(rpc.details[0].value.as_slice()).unwrap();
        assert_eq!(
            (info.reason.as_str(), info.domain.as_str()),
            ("Busy", DOMAIN)
        );
        let expected: HashMap<String, String> = [
            ("holder_token", "7"),
            ("lease", "3"),
            ("nearby", "jobs/a,jobs/b"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into();
        assert_eq!(info.metadata, expected, "only the non-empty fields");
        assert_eq!(rpc.details[1].type_url, ERROR_DETAIL_TYPE_URL);
        assert_eq!(
            ErrorDetail::decode(rpc.details[1].value.as_slice()).unwrap(),
            busy()
        );
        assert_eq!(status.metadata().get(REASON_METADATA).unwrap(), "Busy");
    }

    #[test]
    fn the_decoder_reads_the_detail_back() {
        let status = with_detail(Code::FailedPrecondition, &busy());
        assert_eq!(error_detail(&status), Some(busy()));
        assert_eq!(
            reason(&status, error_detail(&status).as_ref()).as_deref(),
            Some("Busy")
        );
    }

    #[test]
    fn the_decoder_reads_a_bare_detail_from_an_older_server() {
        let bare = busy().encode_to_vec();
        let status = tonic::Status::with_details(Code::FailedPrecondition, "busy", bare.into());
        assert_eq!(error_detail(&status), Some(busy()));
    }

    #[test]
    fn statuses_not_from_leasehold_have_no_detail() {
        assert_eq!(error_detail(&tonic::Status::unavailable("down")), None);
        let foreign = RpcStatus {
            code: Code::NotFound as i32,
            message: "no such thing".into(),
            details: vec![pack(ERROR_INFO_TYPE_URL, &ErrorInfo::default())],
        };
        let status = tonic::Status::with_details(
            Code::NotFound,
            "no such thing",
            foreign.encode_to_vec().into(),
        );
        assert_eq!(error_detail(&status), None);
        assert_eq!(reason(&status, None), None);
    }

    #[test]
    fn the_typed_reason_is_read_from_the_detail_else_the_metadata() {
        let status = with_detail(
            Code::FailedPrecondition,
            &ErrorDetail::new(Reason::Busy, "m"),
        );
        let detail = error_detail(&status);
        assert_eq!(
            typed_reason(&status, detail.as_ref()),
            Some(Ok(Reason::Busy))
        );
        let mut bare = tonic::Status::failed_precondition("held");
        bare.metadata_mut()
            .insert(REASON_METADATA, "NotHolder".parse().unwrap());
        assert_eq!(typed_reason(&bare, None), Some(Ok(Reason::NotHolder)));
        bare.metadata_mut()
            .insert(REASON_METADATA, "Newer".parse().unwrap());
        let unknown = Some(Err(UnknownReason("Newer".into())));
        assert_eq!(typed_reason(&bare, None), unknown);
        assert_eq!(reason(&bare, None).as_deref(), Some("Newer"));
    }
}
