//! A stale write leaves a trace at the server (seed 000, "find stale
//! writes — query records where a lower token follows a higher token"):
//! every refused fenced put is an event (`fenced-put-refused`, with the key,
//! the writer's lock, lease and token, the key's highest token and the lock
//! that wrote it) and a warn-level log line with the same fields, and the
//! stale-token message names the lock that wrote the higher token instead
//! of claiming the writer's own lock passed on.

mod common;

use common::{phase, u64_of, Server};
use serde_json::Value;

/// Acquires `lock` under a fresh 60 s lease; returns (lease, token).
fn hold(server: &Server, lock: &str) -> (u64, u64) {
    let held = server.ok_json(&["acquire", lock, "--ttl", "60s", "--json"]);
    (u64_of(&held, "lease"), u64_of(&held, "token"))
}

fn put(server: &Server, key: &str, lock: &str, token: u64) -> common::Run {
    let token = token.to_string();
    server.cli(&["fenced", "put", key, "v", "--lock", lock, "--token", &token])
}

/// The `fenced-put-refused` events the server remembers, oldest first.
fn refusals(server: &Server) -> Vec<Value> {
    let run = server.cli(&["events", "--json"]);
    run.expect_code(0);
    let events: Vec<Value> = match run.json() {
        Value::Array(events) => events,
        other => panic!("events --json is not an array: {other}"),
    };
    events
        .into_iter()
        .filter(|event| event["kind"] == "fenced-put-refused")
        .collect()
}

#[test]
fn t101_a_refused_fenced_put_is_an_event_and_a_warning() {
    let server = Server::start_with_env(&[("LEASEHOLD_LOG_FORMAT", "json")]);

    phase("a newer holder of another lock writes the key; an older one is refused");
    let (old_lease, old) = hold(&server, "svc/old");
    let (_, new) = hold(&server, "svc/new");
    put(&server, "cfg/shared", "svc/new", new).expect_code(0);
    assert!(
        refusals(&server).is_empty(),
        "an accepted put is no refusal"
    );
    let stale = put(&server, "cfg/shared", "svc/old", old);
    stale.expect_code(4);
    assert!(
        stale.stderr.contains("by the holder of lock svc/new"),
        "the message names the lock that wrote the higher token: {}",
        stale.stderr
    );
    assert!(
        !stale.stderr.contains("passed to a newer holder"),
        "svc/old did not pass to anyone: {}",
        stale.stderr
    );

    phase("the refusal is an event with every field");
    let events = refusals(&server);
    assert_eq!(events.len(), 1, "{events:?}");
    let event = &events[0];
    assert_eq!(event["key"], "cfg/shared");
    assert_eq!(event["lock"], "svc/old");
    assert_eq!(u64_of(event, "lease"), old_lease);
    assert_eq!(u64_of(event, "token"), old);
    assert_eq!(u64_of(event, "highest_token"), new);
    assert_eq!(event["highest_lock"], "svc/new");
    assert!(
        event["detail"]
            .as_str()
            .unwrap_or("")
            .contains("stale token"),
        "{event}"
    );

    phase("a put by a token that does not hold the lock is recorded too");
    put(&server, "cfg/shared", "svc/new", new + 1_000).expect_code(4);
    let events = refusals(&server);
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(u64_of(&events[1], "token"), new + 1_000);
    assert_eq!(u64_of(&events[1], "lease"), 0, "no lease holds that token");
    assert_eq!(u64_of(&events[1], "highest_token"), new);

    phase("the human line carries the key and the highest token");
    let human = server.cli(&["events", "svc/old"]);
    human.expect_code(0);
    let line = human
        .stdout
        .lines()
        .find(|line| line.contains("fenced-put-refused"))
        .unwrap_or_else(|| panic!("no refusal line in {:?}", human.stdout));
    for field in [
        "key=cfg/shared".to_owned(),
        format!("token={old}"),
        format!("highest_token={new}"),
        "highest_lock=svc/new".to_owned(),
    ] {
        assert!(line.contains(&field), "{field} missing from {line:?}");
    }

    phase("the server logged a warning with the same fields");
    let log = server.log_text();
    let warning: Value = log
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|line| line["message"] == "fenced put refused" && line["lock"] == "svc/old")
        .unwrap_or_else(|| panic!("no refusal in the log:\n{log}"));
    assert_eq!(warning["level"], "WARN", "{warning}");
    assert_eq!(warning["key"], "cfg/shared", "{warning}");
    assert_eq!(u64_of(&warning, "lease"), old_lease);
    assert_eq!(u64_of(&warning, "token"), old);
    assert_eq!(u64_of(&warning, "highest_token"), new);
    assert_eq!(warning["highest_lock"], "svc/new", "{warning}");
}
