//! `Lock.Session`: acquires, releases and keep-alives over one stream, so a
//! busy client pays per message instead of per RPC. Each operation runs the
//! same code as its unary form.

use super::acquire::acquire;
use super::keep_alive::keep_alive;
use super::release::release;
use super::stream::{answering, AnswerStream};
use super::{ApiError, Node};
use crate::auth::Caller;
use leasehold_proto::v1::session_request::Op;
use leasehold_proto::v1::session_response::Result as Answer;
use leasehold_proto::v1::{ErrorDetail, SessionRequest, SessionResponse};
use std::sync::Arc;
use tonic::Streaming;

/// Serves a session stream for `caller` (authenticated at open; each
/// message re-checks its bearer token, so a revoked one stops here too,
/// and its operation checks its own verb).
pub fn serve(
    node: Arc<Node>,
    caller: Caller,
    requests: Streaming<SessionRequest>,
) -> AnswerStream<SessionResponse> {
    let caller = Arc::new(caller);
    answering(requests, move |request| {
        let (node, caller) = (node.clone(), caller.clone());
        async move { answer(&node, &caller, request).await }
    })
}

async fn answer(node: &Arc<Node>, caller: &Caller, request: SessionRequest) -> SessionResponse {
    let result = match caller.still_authenticated(node).map(|()| request.op) {
        Err(error) => Err(error),
        Ok(op) => run(node, caller, op).await,
    };
    SessionResponse {
        seq: request.seq,
        result: Some(result.unwrap_or_else(|error| Answer::Error(ErrorDetail::from(error)))),
    }
}

async fn run(node: &Arc<Node>, caller: &Caller, op: Option<Op>) -> Result<Answer, ApiError> {
    match op {
        Some(Op::Acquire(op)) => acquire(node, caller, op).await.map(Answer::Acquire),
        Some(Op::Release(op)) => release(node, caller, op).await.map(Answer::Release),
        Some(Op::KeepAlive(op)) => keep_alive(node, caller, &op).await.map(Answer::KeepAlive),
        None => Err(ApiError::invalid(
            "op",
            "a session request needs an operation",
        )),
    }
}
