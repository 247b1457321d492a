//! The live page at `/` with a real `leasehold serve`.
//!
//! - **In a browser**: a lock acquired through the CLI shows up in the page
//!   as rendered by Debian's headless Chromium (the DOM after the page's
//!   script has polled the server), with its token and owner, and its
//!   `acquired` event with the token; the cluster section shows the node
//!   leading with its quorum, and itself reachable. (A leader *without* a
//!   quorum is rendered by `t93_quorum_loss`.) A lock named and owned like HTML is
//!   shown as text: no element is made from it. Without Chromium the test
//!   is skipped, except under `CI=true` (where `.ci/run` installs it), where
//!   it fails.
//! - **Over HTTP**: `/api/locks` carries the lock, holder, owner and token
//!   as JSON, names with `<script>` come back as JSON strings, filtering by
//!   prefix works, `/api/events` returns the newest events last,
//!   `/api/cluster` says the node leads with its quorum, and a bad query
//!   parameter is a 400 that names it and its limit.

mod common;

#[path = "../../server/tests/support/prometheus.rs"]
mod prometheus;

use common::browser::{chromium_or_skip, dump_dom, element_with};
use common::{phase, u64_of, Server};
use serde_json::Value;
use std::time::Instant;

/// A name and an owner an attacker would choose: if the page put either
/// into the DOM as HTML, the dump would hold an `<img>` element.
const HOSTILE_NAME: &str = "page/<img src=x onerror=\"document.title='pwned'\">";
const HOSTILE_OWNER: &str = "<b>mallory</b>";

#[test]
fn t130_live_page_in_chromium() {
    let Some(chromium) = chromium_or_skip("t130_live_page_in_chromium") else {
        return;
    };
    let server = Server::start();

    phase("acquire a lock and a hostile-looking one through the CLI");
    let (token, _) = acquire(&server, "page/demo", "page-test-owner");
    let (hostile_token, _) = acquire(&server, HOSTILE_NAME, HOSTILE_OWNER);
    let permits = [
        acquire_permit(&server, "page/slots", "slot-a"),
        acquire_permit(&server, "page/slots", "slot-b"),
    ];

    phase("render the page in headless Chromium and dump its DOM");
    let started = Instant::now();
    let dom = dump_dom(&chromium, &format!("{}/", server.endpoint()));
    eprintln!("chromium rendered the page in {:?}", started.elapsed());

    phase("the lock's row shows its token, owner and a lease countdown");
    let row = element_with(&dom, "tr", r#"data-lock="page/demo""#);
    assert!(
        row.contains(&format!(r#"<td class="token">{token}</td>"#)),
        "no token {token} in the lock's row: {row}"
    );
    assert!(
        row.contains(r#"<td class="owner">page-test-owner</td>"#),
        "no owner in the lock's row: {row}"
    );
    assert!(
        row.contains(r#"<td class="remaining"#) && row.contains(" s</td>"),
        "no lease countdown in the lock's row: {row}"
    );

    phase("a semaphore's row names its kind, and every grant's owner and token");
    let row = element_with(&dom, "tr", r#"data-lock="page/slots""#);
    for shown in [
        "page/slots (semaphore, 2 of 3 permits)".to_owned(),
        format!("{}, {}", permits[0], permits[1]),
        "slot-a, slot-b".to_owned(),
    ] {
        assert!(
            row.contains(&shown),
            "{shown:?} missing from the semaphore's row: {row}"
        );
    }

    phase("the events table has the acquisition with its token");
    let events = element_with(&dom, "tbody", r#"id="event-rows""#);
    let acquired = element_with(
        events,
        "tr",
        r#"data-kind="acquired" data-event-lock="page/demo""#,
    );
    assert!(
        acquired.contains(&format!(r#"<td class="token">{token}</td>"#)),
        "no token {token} in the acquired event: {acquired}"
    );

    phase("the hostile name and owner are text, not markup");
    assert!(
        !dom.contains("<img") && !dom.contains("<b>mallory"),
        "user input became markup: {dom}"
    );
    assert!(
        dom.contains(
            r#"<td class="name">page/&lt;img src=x onerror="document.title='pwned'"&gt;</td>"#
        ),
        "the hostile lock is not shown as text: {dom}"
    );
    assert!(
        dom.contains(&format!(r#"<td class="token">{hostile_token}</td>"#))
            && dom.contains(r#"<td class="owner">&lt;b&gt;mallory&lt;/b&gt;</td>"#),
        "the hostile lock's holder is not shown: {dom}"
    );
    phase("the cluster section: leading with its quorum, itself reachable");
    let quorum = element_with(&dom, "p", r#"id="quorum""#);
    assert!(
        quorum.contains(r#"data-quorum="true""#)
            && quorum.contains("node 1: Leader, term ")
            && quorum.contains("quorum ok"),
        "the quorum is not shown: {quorum}"
    );
    let itself = element_with(&dom, "tr", r#"data-member="1""#);
    assert!(
        itself.contains(r#"<td class="reachable">yes</td>"#),
        "node 1 is not shown reachable: {itself}"
    );
    assert!(dom.contains("<title>Leasehold: locks</title>"), "{dom}");
    assert!(
        dom.contains(r#"<p id="unreachable" hidden="""#),
        "the page says the server is unreachable: {dom}"
    );
}

#[test]
fn t130_live_page_http() {
    let server = Server::start();
    let (token, lease) = acquire(&server, "page/http", "http-test-owner");
    let script_name = "page/<script>alert(1)</script>";
    let (script_token, _) = acquire(&server, script_name, "owner</td>");

    phase("/ serves the page and /page.js its script");
    let (status, page) = get(&server, "/");
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains(r#"<script src="/page.js"></script>"#),
        "{page}"
    );
    let (status, script) = get(&server, "/page.js");
    assert_eq!(status, 200, "{script}");
    assert!(script.contains("/api/locks"), "{script}");

    phase("/api/locks has the lock with its holder, owner and token");
    let locks = get_json(&server, "/api/locks?prefix=page%2F");
    assert_eq!(locks["truncated"], false, "{locks}");
    assert_eq!(locks["node_id"], 1, "{locks}");
    assert!(u64_of(&locks, "revision") >= script_token, "{locks}");
    assert!(u64_of(&locks, "server_time_unix_ms") > 0, "{locks}");
    let lock = find_lock(&locks, "page/http");
    let holder = &lock["holder"];
    assert_eq!(u64_of(holder, "token"), token, "{lock}");
    assert_eq!(u64_of(holder, "lease"), lease, "{lock}");
    assert_eq!(holder["owner"]["owner"], "http-test-owner", "{lock}");
    assert_eq!(u64_of(holder, "lease_ttl_ms"), 60_000, "{lock}");
    let remaining = u64_of(holder, "lease_remaining_ms");
    assert!(remaining > 0 && remaining <= 60_000, "{lock}");
    assert_eq!(lock["waiters"], Value::Array(vec![]), "{lock}");

    phase("a name with <script> is a JSON string, byte for byte");
    let scripted = find_lock(&locks, script_name);
    assert_eq!(u64_of(&scripted["holder"], "token"), script_token);
    assert_eq!(scripted["holder"]["owner"]["owner"], "owner</td>");

    phase("the prefix filters; percent-encoding is decoded");
    let only = get_json(&server, "/api/locks?prefix=page%2F%3Cscript");
    let names: Vec<&str> = only["locks"]
        .as_array()
        .expect("locks")
        .iter()
        .map(|lock| lock["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, [script_name], "{only}");
    let none = get_json(&server, "/api/locks?prefix=elsewhere%2F");
    assert_eq!(none["locks"], Value::Array(vec![]), "{none}");

    phase("/api/events: the last N, newest last");
    let events = get_json(&server, "/api/events?limit=1");
    let events = events["events"].as_array().expect("events");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["kind"], "acquired");
    assert_eq!(events[0]["lock"], script_name);
    assert_eq!(u64_of(&events[0], "token"), script_token);
    let all = get_json(&server, "/api/events");
    let all = all["events"].as_array().expect("events");
    let tokens: Vec<u64> = all.iter().map(|e| u64_of(e, "token")).collect();
    assert_eq!(tokens, [token, script_token], "{all:?}");

    phase("/api/locks has a semaphore with its kind, size and every grant");
    let first = acquire_permit(&server, "page/pool", "pool-a");
    let second = acquire_permit(&server, "page/pool", "pool-b");
    let locks = get_json(&server, "/api/locks?prefix=page%2F");
    let pool = find_lock(&locks, "page/pool");
    assert_eq!(
        (pool["kind"].as_str(), pool["permits"].as_u64()),
        (Some("semaphore"), Some(3)),
        "{pool}"
    );
    assert!(pool["holder"].is_null(), "{pool}");
    let tokens: Vec<u64> = pool["holders"]
        .as_array()
        .expect("holders")
        .iter()
        .map(|h| u64_of(h, "token"))
        .collect();
    assert_eq!(tokens, [first, second], "{pool}");
    assert_eq!(pool["health"]["verdict"], "healthy", "{pool}");

    phase("/api/cluster: this node leads with its quorum and reaches itself");
    let cluster = get_json(&server, "/api/cluster");
    assert_eq!(cluster["state"], "Leader", "{cluster}");
    assert_eq!(cluster["quorum"], true, "{cluster}");
    assert_eq!(cluster["quorum_problem"], "", "{cluster}");
    assert_eq!(cluster["members"][0]["id"], 1, "{cluster}");
    assert_eq!(cluster["members"][0]["reachable"], true, "{cluster}");
    assert_eq!(cluster["members"][0]["last_contact_ms"], 0, "{cluster}");

    phase("bad parameters are refused, naming the parameter and its limit");
    for bad in ["limit=0", "limit=ten", "limit=1025", "limit=-1"] {
        let (status, body) = get(&server, &format!("/api/events?{bad}"));
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(
            body.contains("limit") && body.contains("1024"),
            "{bad}: {body}"
        );
    }
    let (status, body) = get(&server, "/api/events?limt=5");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("\"limt\""), "{body}");
    let long = format!("/api/locks?prefix={}", "a".repeat(513));
    let (status, body) = get(&server, &long);
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("prefix") && body.contains("NAME_BYTES_MAX"),
        "{body}"
    );

    phase("the 404 points at the page");
    let (status, body) = get(&server, "/nope");
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("/ (the live page)"), "{body}");
}

/// Acquires `name` for `owner` under a fresh 60 s lease; returns (token, lease).
/// One of 3 permits of the semaphore `name`, for `owner`; its token.
fn acquire_permit(server: &Server, name: &str, owner: &str) -> u64 {
    let args = [
        "acquire", name, "--limit", "3", "--ttl", "60s", "--owner", owner, "--json",
    ];
    u64_of(&server.ok_json(&args), "token")
}

fn acquire(server: &Server, name: &str, owner: &str) -> (u64, u64) {
    let acquired = server.ok_json(&["acquire", name, "--ttl", "60s", "--owner", owner, "--json"]);
    assert_eq!(acquired["lock"], name, "{acquired}");
    (u64_of(&acquired, "token"), u64_of(&acquired, "lease"))
}

/// `GET path` on the server's HTTP port: (status, body).
fn get(server: &Server, path: &str) -> (u16, String) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(prometheus::http_get(&server.endpoint(), path))
}

/// `GET path` answered 200 with JSON.
fn get_json(server: &Server, path: &str) -> Value {
    let (status, body) = get(server, path);
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: not JSON ({e}): {body}"))
}

/// The lock named `name` in an `/api/locks` reply.
fn find_lock<'a>(locks: &'a Value, name: &str) -> &'a Value {
    locks["locks"]
        .as_array()
        .expect("locks")
        .iter()
        .find(|lock| lock["name"] == name)
        .unwrap_or_else(|| panic!("no lock {name:?} in {locks}"))
}
