//! `FencedStore.Put`: a write to the built-in fenced store. Validates at
//! the boundary (value, then request size, key, lock name and request id,
//! each error naming its limit) and proposes a `FencedPut`; the core decides
//! who may write.

use super::propose::Proposal;
use super::{check_request_size, ApiError, Node};
use crate::auth::Caller;
use leasehold_core::{check_fenced_value, FencedKey, LockError, LockName, RequestId, Token};
use leasehold_proto::v1::{FencedPutRequest, FencedPutResponse};

/// Validates a put and turns it into the proposal.
fn parse_put(request: FencedPutRequest) -> Result<Proposal<Token>, ApiError> {
    // The value first: an oversize value is the likely cause of an
    // oversize request, and its error names the more precise limit.
    check_fenced_value(&request.value)?;
    check_request_size(&request)?;
    Ok(Proposal::fenced_put(
        LockName::parse(&request.lock).map_err(|e| as_field(e, "lock"))?,
        Token(request.token),
        FencedKey::parse(&request.key)?,
        request.value,
        RequestId::parse(&request.request_id)?,
    )?)
}

/// Renames the field of an InvalidArgument (a lock name parsed for the
/// `lock` field reports `name`).
fn as_field(error: LockError, field: &str) -> LockError {
    match error {
        LockError::InvalidArgument { limit, reason, .. } => LockError::InvalidArgument {
            field: field.to_owned(),
            limit,
            reason,
        },
        other => other,
    }
}

/// Validates and performs one put.
pub async fn fenced_put(
    node: &Node,
    caller: &Caller,
    request: FencedPutRequest,
) -> Result<FencedPutResponse, ApiError> {
    let proposal = parse_put(request)?;
    let proposal = caller.authorize(node, proposal)?;
    let (_stored, revision) = node.propose(proposal).await?;
    metrics::counter!("leasehold_fenced_puts_total").increment(1);
    Ok(FencedPutResponse {
        header: node.header(revision),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_core::limits;

    fn request(key: &str, value: Vec<u8>) -> FencedPutRequest {
        FencedPutRequest {
            lock: "leader".into(),
            token: 3,
            key: key.into(),
            value,
            request_id: String::new(),
        }
    }

    fn refusal(request: FencedPutRequest) -> String {
        parse_put(request).unwrap_err().to_string()
    }

    #[test]
    fn put_is_validated_at_the_boundary_naming_the_limit() {
        assert!(parse_put(request("cfg/leader", b"10.0.0.1".to_vec())).is_ok());
        let oversize = vec![0; limits::FENCED_VALUE_BYTES_MAX + 1];
        assert!(refusal(request("k", oversize)).contains("FENCED_VALUE_BYTES_MAX"));
        let long = "k".repeat(limits::FENCED_KEY_BYTES_MAX + 1);
        assert!(refusal(request(&long, vec![])).contains("FENCED_KEY_BYTES_MAX"));
        assert!(refusal(request("", vec![])).contains("invalid key"));
        let mut bad_lock = request("k", vec![]);
        bad_lock.lock = String::new();
        assert!(refusal(bad_lock).contains("invalid lock"));
    }
}
