//! Plain HTTP on the gRPC port: `/healthz` (the process serves), `/readyz`
//! (this node knows a leader and can answer; a leader only while it has its
//! quorum: [`readiness`], which the gRPC health service follows too),
//! `/metrics` (Prometheus text), and the live page at `/` with its JSON (see
//! [`crate::page`]).

use crate::api::Node;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use std::sync::Arc;

/// The HTTP routes.
pub fn router(node: Arc<Node>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .route("/metrics", get(metrics))
        .merge(crate::page::router())
        .with_state(node)
}

/// Anything else: gRPC clients hear `Unimplemented` (as from tonic's own
/// fallback), everyone else a plain 404 that lists the pages.
pub async fn not_found(request: axum::extract::Request) -> axum::response::Response {
    use axum::response::IntoResponse;
    let grpc = request
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|kind| kind.as_bytes().starts_with(b"application/grpc"));
    if grpc {
        let status =
            tonic::Status::unimplemented(format!("no such method: {}", request.uri().path()));
        return status.into_http::<axum::body::Body>().into_response();
    }
    (
        StatusCode::NOT_FOUND,
        format!(
            "no page {}: try / (the live page), /healthz, /readyz or /metrics\n",
            request.uri().path()
        ),
    )
        .into_response()
}

async fn ready(State(node): State<Arc<Node>>) -> (StatusCode, String) {
    match readiness(&node) {
        Ok(ready) => (StatusCode::OK, format!("{ready}\n")),
        Err(cause) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {cause}\n"),
        ),
    }
}

/// The one definition of ready, for `/readyz` and the gRPC health service:
/// `Ok` with the text to show when this node can answer, `Err` with the
/// cause when it cannot. Ready while a leader is known, except on a leader
/// without a quorum: it can neither commit nor confirm anything, so traffic
/// belongs elsewhere. It changes with time alone (a quorum ages), so
/// callers that follow it re-evaluate it (see [`crate::health`]).
pub(crate) fn readiness(node: &Node) -> Result<String, String> {
    if let Err(why) = node.quorum.check() {
        return Err(format!("leader without quorum: {why}"));
    }
    match node.raft.metrics().borrow().current_leader {
        Some(leader) => Ok(format!("ready (leader: node {leader})")),
        None => Err("no leader known yet".into()),
    }
}

async fn metrics(State(node): State<Arc<Node>>) -> String {
    let (leases, locks) = node
        .state
        .read(|state| (state.lease_count(), state.lock_count()));
    metrics::gauge!("leasehold_leases").set(leases as f64);
    metrics::gauge!("leasehold_locks").set(locks as f64);
    metrics::gauge!("leasehold_waiting_acquires").set(node.sinks.waiters.len() as f64);
    crate::metrics::record_raft(&node.raft.metrics().borrow());
    crate::metrics::record_quorum(node.node_id, &node.quorum.report());
    crate::metrics::render()
}
