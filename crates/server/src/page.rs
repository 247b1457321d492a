//! The live page at `/`: an operator's view without tools. In the middle of
//! an incident the question is "who holds it, since when, how long is left,
//! who waits, what just happened", and the person asking may have a browser
//! but no `leasehold` binary, no credentials for a CLI, no Grafana. So the
//! server serves one plain HTML page and its script (compiled into the
//! binary with `include_str!`: no build step, no external resources) that
//! polls two JSON endpoints every second:
//!
//! - `GET /api/locks?prefix=P`: the locks under `P` from this node's applied
//!   state (a stale read: any node answers, the reply names the node and its
//!   revision), each as [`lock_to_wire`] describes it, at most
//!   [`limits::LIST_LOCKS_MAX`] with `truncated` set when more matched;
//! - `GET /api/events?limit=N&prefix=P`: the last `N` remembered events
//!   (default [`EVENTS_DEFAULT`], at most [`EVENTS_REMEMBERED`]), newest last;
//! - `GET /api/cluster`: this node's view of the cluster, as `Status` gives
//!   it: its state, whether it has its quorum (and if not, why), and each
//!   member's role, reachability and last contact.
//!
//! Query parameters are checked here, at the boundary: an unknown, repeated,
//! malformed or out-of-range parameter is a 400 whose text names it and its
//! limit. Lock names and owners are user input; the JSON carries them as
//! strings and the page only ever puts them into the DOM as text, under a
//! Content-Security-Policy that allows no inline script.

use crate::api::cluster::View;
use crate::api::convert::lock_to_wire;
use crate::api::events::event_to_wire;
use crate::api::Node;
use crate::clock::wall_unix_ms;
use crate::events::EVENTS_REMEMBERED;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use leasehold_core::limits;
use leasehold_proto::json::{event_json, owner_json};
use leasehold_proto::v1 as pb;
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
/// Events returned when `limit` is not given (what the page shows).
pub const EVENTS_DEFAULT: usize = 50;

/// The page's routes (state: the node they describe).
pub fn router() -> Router<Arc<Node>> {
    Router::new()
        .route("/", get(index))
        .route("/page.js", get(script))
        .route("/api/locks", get(locks))
        .route("/api/events", get(events))
        .route("/api/cluster", get(cluster))
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
    let (locks, truncated, revision) = node.state.read(|state| {
        let mut matching = state.locks_with_prefix(&query.prefix);
        let locks: Vec<Value> = matching
            .by_ref()
            .take(limits::LIST_LOCKS_MAX)
            .map(|lock| lock_json(&lock_to_wire(&node, state, lock)))
            .collect();
        (locks, matching.next().is_some(), state.revision())
    });
    let leader = node.raft.metrics().borrow().current_leader;
    json_response(&json!({
        "server_time_unix_ms": wall_unix_ms(),
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

/// A lock as the wire shows it, in JSON (field names as in `lock.proto`).
fn lock_json(lock: &pb::LockInfo) -> Value {
    let holder = lock.holder.as_ref().map(|holder| {
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
        })
    });
    let waiters: Vec<Value> = lock
        .waiters
        .iter()
        .map(|waiter| {
            json!({
                "lease": waiter.lease,
                "owner": waiter.owner.as_ref().map(owner_json),
                "since_unix_ms": waiter.since_unix_ms,
                "wait_ms": waiter.wait_ms,
            })
        })
        .collect();
    json!({
        "name": lock.name,
        "holder": holder,
        "waiters": waiters,
        "lock_delay_remaining_ms": lock.lock_delay_remaining_ms,
        "prefix_hold_p99_ms": lock.prefix_hold_p99_ms,
        "prefix_holds": lock.prefix_holds,
    })
}

/// A query parameter that is not acceptable: a 400 with this sentence.
#[derive(Debug, PartialEq, Eq)]
struct BadQuery(String);

impl IntoResponse for BadQuery {
    fn into_response(self) -> Response {
        (StatusCode::BAD_REQUEST, format!("{}\n", self.0)).into_response()
    }
}

/// `/api/locks`'s parameters.
#[derive(Debug, PartialEq, Eq)]
struct LocksQuery {
    /// Only locks whose name starts with this ("" for all).
    prefix: String,
}

impl LocksQuery {
    fn parse(raw: Option<&str>) -> Result<LocksQuery, BadQuery> {
        let mut query = LocksQuery {
            prefix: String::new(),
        };
        for (_prefix, value) in pairs(raw, &["prefix"])? {
            query.prefix = check_prefix(value)?;
        }
        Ok(query)
    }
}

/// `/api/events`'s parameters.
#[derive(Debug, PartialEq, Eq)]
struct EventsQuery {
    /// How many of the newest events.
    limit: usize,
    /// Only events of locks whose name starts with this.
    prefix: String,
}

impl EventsQuery {
    fn parse(raw: Option<&str>) -> Result<EventsQuery, BadQuery> {
        let mut query = EventsQuery {
            limit: EVENTS_DEFAULT,
            prefix: String::new(),
        };
        for (key, value) in pairs(raw, &["limit", "prefix"])? {
            match key.as_str() {
                "limit" => query.limit = check_limit(&value)?,
                _ => query.prefix = check_prefix(value)?,
            }
        }
        Ok(query)
    }
}

/// A name prefix is held to the rules of a name (it may be empty).
fn check_prefix(prefix: String) -> Result<String, BadQuery> {
    if prefix.len() > limits::NAME_BYTES_MAX {
        return Err(BadQuery(format!(
            "query parameter prefix is {} bytes; the limit NAME_BYTES_MAX is {}",
            prefix.len(),
            limits::NAME_BYTES_MAX
        )));
    }
    if let Some(c) = prefix.chars().find(|c| c.is_control()) {
        return Err(BadQuery(format!(
            "query parameter prefix contains the control character U+{:04X}",
            c as u32
        )));
    }
    Ok(prefix)
}

fn check_limit(raw: &str) -> Result<usize, BadQuery> {
    match raw.parse::<usize>() {
        Ok(limit) if (1..=EVENTS_REMEMBERED).contains(&limit) => Ok(limit),
        _ => Err(BadQuery(format!(
            "query parameter limit must be a whole number from 1 to {EVENTS_REMEMBERED} \
             (EVENTS_REMEMBERED, the events the server keeps), not {raw:?}"
        ))),
    }
}

/// The decoded `key=value` pairs of a query string, each key one of
/// `known` and given at most once.
fn pairs(raw: Option<&str>, known: &[&str]) -> Result<Vec<(String, String)>, BadQuery> {
    let mut seen: Vec<(String, String)> = Vec::new();
    for pair in raw.unwrap_or_default().split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(key)?;
        if !known.contains(&key.as_str()) {
            return Err(BadQuery(format!(
                "unknown query parameter {key:?}; this endpoint takes {}",
                known.join(", ")
            )));
        }
        if seen.iter().any(|(k, _)| *k == key) {
            return Err(BadQuery(format!("query parameter {key} is given twice")));
        }
        let value = decode(value)?;
        seen.push((key, value));
    }
    Ok(seen)
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a
/// byte; the result must be UTF-8.
fn decode(raw: &str) -> Result<String, BadQuery> {
    let bad = || {
        BadQuery(format!(
            "query text {raw:?} is not valid percent-encoded UTF-8"
        ))
    };
    let mut bytes = Vec::with_capacity(raw.len());
    let mut rest = raw.bytes();
    while let Some(byte) = rest.next() {
        match byte {
            b'+' => bytes.push(b' '),
            b'%' => {
                let high = rest.next().and_then(|b| (b as char).to_digit(16));
                let low = rest.next().and_then(|b| (b as char).to_digit(16));
                match (high, low) {
                    (Some(high), Some(low)) => bytes.push((high * 16 + low) as u8),
                    _ => return Err(bad()),
                }
            }
            other => bytes.push(other),
        }
    }
    String::from_utf8(bytes).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_query_decodes_the_prefix_and_defaults_to_everything() {
        assert_eq!(LocksQuery::parse(None).unwrap().prefix, "");
        let query = LocksQuery::parse(Some("prefix=jobs%2F%3Cx%3E+y")).unwrap();
        assert_eq!(query.prefix, "jobs/<x> y");
        let long = format!("prefix={}", "a".repeat(limits::NAME_BYTES_MAX + 1));
        let BadQuery(why) = LocksQuery::parse(Some(&long)).unwrap_err();
        assert!(
            why.contains("prefix") && why.contains("NAME_BYTES_MAX"),
            "{why}"
        );
        let BadQuery(why) = LocksQuery::parse(Some("prefix=a%0Ab")).unwrap_err();
        assert!(why.contains("U+000A"), "{why}");
    }

    #[test]
    fn events_limit_is_bounded_and_named_when_wrong() {
        let default = EventsQuery::parse(Some("")).unwrap();
        assert_eq!(default.limit, EVENTS_DEFAULT);
        assert_eq!(EventsQuery::parse(Some("limit=1")).unwrap().limit, 1);
        let max = format!("limit={EVENTS_REMEMBERED}");
        assert_eq!(
            EventsQuery::parse(Some(&max)).unwrap().limit,
            EVENTS_REMEMBERED
        );
        let over = format!("limit={}", EVENTS_REMEMBERED + 1);
        for bad in ["limit=0", "limit=-1", "limit=ten", "limit=", over.as_str()] {
            let BadQuery(why) = EventsQuery::parse(Some(bad)).unwrap_err();
            assert!(
                why.contains("limit") && why.contains(&EVENTS_REMEMBERED.to_string()),
                "{bad}: {why}"
            );
        }
    }

    #[test]
    fn unknown_repeated_and_malformed_parameters_are_refused() {
        let unknown = EventsQuery::parse(Some("limt=5")).unwrap_err();
        assert!(unknown.0.contains("\"limt\""), "{unknown:?}");
        let twice = EventsQuery::parse(Some("limit=5&limit=6")).unwrap_err();
        assert!(twice.0.contains("limit is given twice"), "{twice:?}");
        assert!(LocksQuery::parse(Some("prefix=%zz")).is_err());
        assert!(LocksQuery::parse(Some("prefix=%FF")).is_err());
        assert!(LocksQuery::parse(Some("prefix=%4")).is_err());
    }

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
