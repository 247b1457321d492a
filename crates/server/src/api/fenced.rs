//! `leasehold.v1.FencedStore`: the built-in fenced store. Put validates at
//! the boundary (value, then request size, key, lock name and request id,
//! each error naming its limit) and proposes a `FencedPut`; the core decides
//! who may write. Get reads this node's applied state, after a read barrier
//! unless the request asks for a stale read.

use super::lease::unexpected;
use super::{check_request_size, ApiError, Node};
use leasehold_core::{
    check_fenced_value, Command, FencedKey, LockError, LockName, Reply, RequestId, Token,
};
use leasehold_proto::v1::fenced_store_server::FencedStore;
use leasehold_proto::v1::{
    FencedGetRequest, FencedGetResponse, FencedPutRequest, FencedPutResponse,
};
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// Validates a put and turns it into the command to propose.
fn parse_put(request: FencedPutRequest) -> Result<Command, ApiError> {
    // The value first: an oversize value is the likely cause of an
    // oversize request, and its error names the more precise limit.
    check_fenced_value(&request.value)?;
    check_request_size(&request)?;
    let command = Command::FencedPut {
        lock: LockName::parse(&request.lock).map_err(|e| as_field(e, "lock"))?,
        token: Token(request.token),
        key: FencedKey::parse(&request.key)?,
        value: request.value,
        request_id: RequestId::parse(&request.request_id)?,
    };
    command.validate()?;
    Ok(command)
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
pub async fn put(node: &Node, request: FencedPutRequest) -> Result<FencedPutResponse, ApiError> {
    let command = parse_put(request)?;
    let (outcome, revision) = node.propose(command).await?;
    match outcome? {
        Reply::FencedStored { .. } => {
            metrics::counter!("leasehold_fenced_puts_total").increment(1);
            Ok(FencedPutResponse {
                header: node.header(revision),
            })
        }
        other => Err(unexpected("FencedPut", &other)),
    }
}

/// Reads one key.
pub async fn get(node: &Node, request: FencedGetRequest) -> Result<FencedGetResponse, ApiError> {
    check_request_size(&request)?;
    let key = FencedKey::parse(&request.key)?;
    // A stale read answers from this node's applied state: may be behind.
    if !request.stale {
        node.read_barrier().await?;
    }
    Ok(node.state.read(|state| {
        let header = node.header(state.revision());
        match state.fenced_get(&key) {
            Some(entry) => FencedGetResponse {
                header,
                key: key.to_string(),
                value: entry.value.clone(),
                token: entry.token.0,
                lock: entry.lock.to_string(),
                found: true,
            },
            None => FencedGetResponse {
                header,
                key: key.to_string(),
                ..Default::default()
            },
        }
    }))
}

/// The FencedStore service.
pub struct FencedApi {
    node: Arc<Node>,
}

impl FencedApi {
    /// The service over `node`.
    pub fn new(node: Arc<Node>) -> FencedApi {
        FencedApi { node }
    }
}

#[tonic::async_trait]
impl FencedStore for FencedApi {
    async fn put(
        &self,
        request: Request<FencedPutRequest>,
    ) -> Result<Response<FencedPutResponse>, Status> {
        Ok(Response::new(put(&self.node, request.into_inner()).await?))
    }

    async fn get(
        &self,
        request: Request<FencedGetRequest>,
    ) -> Result<Response<FencedGetResponse>, Status> {
        Ok(Response::new(get(&self.node, request.into_inner()).await?))
    }
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
