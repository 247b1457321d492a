//! Plain HTTP on the gRPC port: `/healthz` (the process serves), `/readyz`
//! (this node knows a leader and can answer; a leader only while it has its
//! quorum: [`readiness`], which the gRPC health service follows too),
//! `/metrics` (Prometheus text), and the live page at `/` with its JSON (see
//! [`crate::page`]).
//!
//! With auth enabled, the live page and its JSON need `observe` on every
//! name (a bearer token in `authorization`, or a client certificate);
//! `/metrics` too with `metrics_auth` (`serve --metrics-auth`), else it
//! stays open, as Prometheus scrapers expect; `/healthz` and `/readyz` are
//! always open.

use crate::api::Node;
use crate::auth::Caller;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use leasehold_core::auth::Verb;
use std::sync::Arc;

/// The HTTP routes; `metrics_auth`: `/metrics` needs `observe` too.
pub fn router(node: Arc<Node>, metrics_auth: bool) -> Router {
    let gate = from_fn_with_state(node.clone(), observe_gate);
    let mut metrics_route = Router::new().route("/metrics", get(metrics));
    if metrics_auth {
        metrics_route = metrics_route.route_layer(gate.clone());
    }
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .merge(metrics_route)
        .merge(crate::page::router().route_layer(gate))
        .with_state(node)
}

/// Lets a request through if its caller may `observe` every name (always
/// while auth is disabled); else 401 (no or a bad identity) or 403, with
/// the sentence a gRPC caller would get.
async fn observe_gate(State(node): State<Arc<Node>>, request: Request, next: Next) -> Response {
    let metadata = tonic::metadata::MetadataMap::from_headers(request.headers().clone());
    let checked = Caller::identify(&node, &metadata, request.extensions())
        .and_then(|caller| caller.check(&node, Verb::Observe, ""));
    match checked {
        Ok(()) => next.run(request).await,
        Err(error) => {
            let status = tonic::Status::from(error);
            let code = match status.code() {
                tonic::Code::Unauthenticated => StatusCode::UNAUTHORIZED,
                _ => StatusCode::FORBIDDEN,
            };
            (code, format!("{}\n", status.message())).into_response()
        }
    }
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
/// cause when it cannot. Not ready while the disk takes no writes (a failed
/// fsync, a full disk: see [`crate::storage::DiskHealth`]). Ready while a
/// leader is known, except on a leader
/// without a quorum: it can neither commit nor confirm anything, so traffic
/// belongs elsewhere. It changes with time alone (a quorum ages), so
/// callers that follow it re-evaluate it (see [`crate::health`]).
pub(crate) fn readiness(node: &Node) -> Result<String, String> {
    if let Err(fault) = node.disk.check() {
        return Err(format!("disk: {fault}"));
    }
    if let Err(why) = node.quorum.check() {
        return Err(format!("leader without quorum: {why}"));
    }
    match node.raft.metrics().borrow().current_leader {
        Some(leader) => Ok(format!("ready (leader: node {leader})")),
        None => Err("no leader known yet".into()),
    }
}

async fn metrics(State(node): State<Arc<Node>>) -> String {
    let (leases, locks, pools, sets) = node.state.read(|state| {
        let counts = (state.lease_count(), state.lock_count(), state.pool_count());
        (counts.0, counts.1, counts.2, state.lock_set_count())
    });
    metrics::gauge!("leasehold_leases").set(leases as f64);
    metrics::gauge!("leasehold_locks").set(locks as f64);
    metrics::gauge!("leasehold_pools").set(pools as f64);
    metrics::gauge!("leasehold_lock_sets_waiting").set(sets as f64);
    let observers = node.sinks.leaders.observers();
    metrics::gauge!("leasehold_election_observers").set(observers as f64);
    metrics::gauge!("leasehold_waiting_acquires").set(node.sinks.waiters.len() as f64);
    crate::metrics::record_raft(&node.raft.metrics().borrow());
    crate::metrics::record_quorum(node.node_id, &node.quorum.report());
    crate::metrics::render()
}
