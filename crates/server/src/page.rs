//! The live page at `/`: an operator's view without tools. In the middle of
//! an incident the question is "who holds it, since when, how long is left,
//! is it healthy, who waits, what just happened", and the person asking may
//! have a browser but no `leasehold` binary, no credentials for a CLI, no
//! Grafana. So the server serves one plain HTML page and its script
//! (compiled into the binary with `include_str!`: no build step, no
//! external resources) that polls these JSON endpoints every second:
//!
//! - `GET /api/locks?prefix=P`: the locks under `P` from this node's applied
//!   state (a stale read: any node answers, the reply names the node and its
//!   revision), each as [`lock_to_wire`] describes it with its `health` as
//!   `leasehold diagnose` judges it ([`health`]), at most
//!   [`limits::LIST_LOCKS_MAX`] with `truncated` set when more matched;
//! - `GET /api/events?limit=N&prefix=P`: the last `N` remembered events
//!   (default [`query::EVENTS_DEFAULT`], at most
//!   [`crate::events::EVENTS_REMEMBERED`]), newest last;
//! - `GET /api/cluster`: this node's view of the cluster, as `Status` gives
//!   it: its state, whether it has its quorum (and if not, why), and each
//!   member's role, reachability, last contact and (on the leader) lag;
//! - `GET /api/charts`: this node's counts of grants, releases and expiries
//!   and its keep-alive margins per interval ([`crate::samples`]).
//!
//! Query parameters are checked at the boundary ([`query`]): an unknown,
//! repeated, malformed or out-of-range parameter is a 400 whose text names
//! it and its limit. Lock names and owners are user input; the JSON carries
//! them as strings and the page only ever puts them into the DOM as text,
//! under a Content-Security-Policy that allows no inline script.

mod health;
mod query;

use crate::api::cluster::View;
use crate::api::events::event_to_wire;
use crate::api::incidents::failed_releases;
use crate::api::list::under_prefix;
use crate::api::Node;
use crate::clock::wall_unix_ms;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use leasehold_core::limits;
use leasehold_core::limits::CHART_SAMPLE_MS;
use leasehold_proto::json::{event_json, owner_json};
use leasehold_proto::v1 as pb;
use query::{pairs, EventsQuery, LocksQuery};
use serde_json::{json, Value};
use std::sync::Arc;

/// The page (HTML and CSS; the script is [`SCRIPT`]).
const INDEX_HTML: &str = include_str!("page/index.html");
/// The page's script, served from `/page.js` so the policy below can forbid
/// inline script altogether.
const SCRIPT: &str = include_str!("page/page.js");
/// Only our own script and requests; inline styles; no frames, no plugins.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     connect-src 'self'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

/// The page's routes (state: the node they describe).
pub fn router() -> Router<Arc<Node>> {
    Router::new()
        .route("/", get(index))
        .route("/page.js", get(script))
        .route("/api/locks", get(locks))
        .route("/api/events", get(events))
        .route("/api/cluster", get(cluster))
        .route("/api/charts", get(charts))
}

async fn index() -> Response {
    let mut response = with_type(INDEX_HTML.to_owned(), "text/html; charset=utf-8");
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    response
}

async fn script() -> Response {
    with_type(SCRIPT.to_owned(), "text/javascript; charset=utf-8")
}

async fn locks(State(node): State<Arc<Node>>, RawQuery(query): RawQuery) -> Response {
    let query = match LocksQuery::parse(query.as_deref()) {
        Ok(query) => query,
        Err(bad) => return bad.into_response(),
    };
    let now_unix_ms = wall_unix_ms();
    let (locks, truncated, revision) = node.state.read(|state| {
        let failed = failed_releases(state);
        let limit = limits::LIST_LOCKS_MAX;
        let (locks, truncated) = under_prefix(&node, state, &query.prefix, limit);
        let shown = locks.iter().map(|lock| {
            let mut shown = lock_json(lock);
            shown["health"] = health::health(lock, &failed, now_unix_ms as i64);
            shown
        });
        (shown.collect::<Vec<Value>>(), truncated, state.revision())
    });
    let leader = node.raft.metrics().borrow().current_leader;
    json_response(&json!({
        "server_time_unix_ms": now_unix_ms,
        "revision": revision.0,
        "node_id": node.node_id,
        "leader": leader,
        "prefix": query.prefix,
        "limit": limits::LIST_LOCKS_MAX,
        "truncated": truncated,
        "locks": locks,
    }))
}

async fn events(State(node): State<Arc<Node>>, RawQuery(query): RawQuery) -> Response {
    let query = match EventsQuery::parse(query.as_deref()) {
        Ok(query) => query,
        Err(bad) => return bad.into_response(),
    };
    let events: Vec<Value> = node
        .sinks
        .events
        .recent(&query.prefix, query.limit)
        .iter()
        .map(|event| event_json(&event_to_wire(event)))
        .collect();
    json_response(&json!({
        "server_time_unix_ms": wall_unix_ms(),
        "node_id": node.node_id,
        "events": events,
    }))
}

async fn cluster(State(node): State<Arc<Node>>) -> Response {
    let view = View::read(&node, None);
    let leading = view.leader == Some(node.node_id);
    let members: Vec<Value> = view
        .members
        .iter()
        .map(|member| {
            json!({
                "id": member.id,
                "addr": member.addr,
                "voter": member.voter,
                "role": member.role,
                "reachable": member.reachable,
                "last_contact_ms": member.last_contact_ms,
                // Replication progress is known to the leader only.
                "lag": leading.then_some(member.lag),
                "matched_index": leading.then_some(member.matched_index),
            })
        })
        .collect();
    json_response(&json!({
        "server_time_unix_ms": wall_unix_ms(),
        "node_id": node.node_id,
        "state": view.state,
        "leader": view.leader,
        "term": view.term,
        "quorum": view.quorum.quorum(),
        "quorum_problem": view.quorum.problem(),
        "transport_security": node.transport_security.as_str(),
        "members": members,
        "last_log_index": view.last_log_index,
        "applied_index": view.applied_index,
    }))
}

async fn charts(State(node): State<Arc<Node>>, RawQuery(query): RawQuery) -> Response {
    if let Err(bad) = pairs(query.as_deref(), &[]) {
        return bad.into_response();
    }
    let (samples, into_ms) = node.sinks.samples.recent();
    let samples: Vec<Value> = samples
        .iter()
        .map(|sample| {
            json!({
                "interval": sample.interval,
                "grants": sample.grants,
                "releases": sample.releases,
                "expiries": sample.expiries,
                "renewals": sample.renewals,
                "margin_ratio_min": sample.margin_ratio_min,
            })
        })
        .collect();
    json_response(&json!({
        "server_time_unix_ms": wall_unix_ms(),
        "node_id": node.node_id,
        "sample_ms": CHART_SAMPLE_MS,
        "samples_max": limits::CHART_SAMPLES_MAX,
        "current_elapsed_ms": into_ms,
        "samples": samples,
    }))
}

/// A `200 OK` with `body` of type `content_type`, never cached (it is live).
fn with_type(body: String, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

fn json_response(value: &Value) -> Response {
    let body = serde_json::to_string(value).expect("a serde_json::Value always serializes");
    with_type(body, "application/json")
}

/// A lock as the wire shows it, in JSON (field names as in `lock.proto`;
/// `kind` as `lock`, `semaphore` or `read-write`).
fn lock_json(lock: &pb::LockInfo) -> Value {
    let waiters: Vec<Value> = lock
        .waiters
        .iter()
        .map(|waiter| {
            json!({
                "lease": waiter.lease,
                "owner": waiter.owner.as_ref().map(owner_json),
                "since_unix_ms": waiter.since_unix_ms,
                "wait_ms": waiter.wait_ms,
                "permits": waiter.permits,
            })
        })
        .collect();
    let kind = match lock.kind() {
        pb::LockKind::Lock => "lock",
        pb::LockKind::Semaphore => "semaphore",
        pb::LockKind::ReadWrite => "read-write",
    };
    json!({
        "name": lock.name,
        "kind": kind,
        "permits": lock.permits,
        "holder": lock.holder.as_ref().map(holder_json),
        "holders": lock.holders.iter().map(holder_json).collect::<Vec<_>>(),
        "waiters": waiters,
        "lock_delay_remaining_ms": lock.lock_delay_remaining_ms,
        "prefix_hold_p99_ms": lock.prefix_hold_p99_ms,
        "prefix_holds": lock.prefix_holds,
    })
}

/// A lock's holder, or one grant of a semaphore or read-write lock.
fn holder_json(holder: &pb::Holder) -> Value {
    json!({
        "lease": holder.lease,
        "token": holder.token,
        "owner": holder.owner.as_ref().map(owner_json),
        "lease_ttl_ms": holder.lease_ttl_ms,
        "lease_remaining_ms": holder.lease_remaining_ms,
        "acquired_unix_ms": holder.acquired_unix_ms,
        "fenced": holder.fenced,
        "max_hold_ms": holder.max_hold_ms,
        "metadata": holder.metadata,
        "lease_renewed_unix_ms": holder.lease_renewed_unix_ms,
        "renewals": holder.renewals,
        "held_ms": holder.held_ms,
        "lock_delay_ms": holder.lock_delay_ms,
        "permits": holder.permits,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_only_its_own_script() {
        assert!(INDEX_HTML.contains(r#"<script src="/page.js"></script>"#));
        assert_eq!(INDEX_HTML.matches("<script").count(), 1);
        for external in ["http://", "https://", "//cdn"] {
            assert!(!INDEX_HTML.contains(external), "{external}");
            assert!(!SCRIPT.contains(external), "{external}");
        }
        // Data reaches the DOM as text only.
        assert!(!SCRIPT.contains("innerHTML"));
        assert!(!SCRIPT.contains("insertAdjacentHTML"));
        assert!(!SCRIPT.contains("document.write"));
    }
}
