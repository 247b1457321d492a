//! `leasehold serve --log-format json` (here through LEASEHOLD_LOG_FORMAT):
//! one JSON object per line, and every grant, renewal, release, expiry and
//! force release carries `lock`, `lease`, `owner` and `token`, so searching
//! the log for a token answers "who held it when". Renewals log at debug.

mod common;

use common::{phase, u64_of, wait_for, Server};
use serde_json::Value;
use std::time::Duration;

/// The server's log lines, each parsed (a line that is not JSON fails).
fn log_lines(server: &Server) -> Vec<Value> {
    server
        .log_text()
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
        })
        .collect()
}

fn with_message<'a>(lines: &'a [Value], message: &str, lock: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["message"] == message && l["lock"] == lock)
        .collect()
}

#[test]
fn t150_json_logs_name_lock_lease_owner_and_token() {
    let server = Server::start_with_env(&[
        ("LEASEHOLD_LOG_FORMAT", "json"),
        ("RUST_LOG", "info,openraft=warn,leasehold_server=debug"),
    ]);

    phase("a holder renews for a while, then releases");
    let run = server.cli(&[
        "lock",
        "logs/renewed",
        "--ttl",
        "3s",
        "--owner",
        "log-drill",
        "--",
        "sh",
        "-c",
        "echo $LEASEHOLD_TOKEN; sleep 2.5",
    ]);
    run.expect_code(0);
    let token: u64 = run.stdout.trim().parse().expect("the token");

    phase("a lease expires; a fenced holder is force-released");
    let expired = server.ok_json(&["acquire", "logs/expired", "--ttl", "1s", "--json"]);
    let forced = server.ok_json(&[
        "acquire",
        "logs/forced",
        "--ttl",
        "30s",
        "--fenced",
        "--json",
    ]);
    let forced_token = u64_of(&forced, "token").to_string();
    server
        .cli(&[
            "force-release",
            "logs/forced",
            "--token",
            &forced_token,
            "--reason",
            "log drill",
        ])
        .expect_code(0);
    wait_for("the expiry to be logged", Duration::from_secs(10), || {
        let lines = log_lines(&server);
        (!with_message(&lines, "lock freed", "logs/expired").is_empty()).then_some(())
    });

    let lines = log_lines(&server);
    let token_lines: Vec<&Value> = lines.iter().filter(|l| l["token"] == token).collect();
    eprintln!("lines with token {token}: {token_lines:#?}");
    let acquired = with_message(&lines, "lock acquired", "logs/renewed");
    assert_eq!(acquired.len(), 1, "{acquired:#?}");
    let lease = u64_of(acquired[0], "lease");
    assert_eq!(acquired[0]["owner"], "log-drill");
    assert_eq!(acquired[0]["token"], token);
    let renewed = with_message(&lines, "lease renewed", "logs/renewed");
    assert!(!renewed.is_empty(), "renewals were not logged");
    for line in &renewed {
        assert_eq!(
            (u64_of(line, "lease"), &line["token"]),
            (lease, &token.into())
        );
        assert_eq!(line["owner"], "log-drill");
        assert_eq!(line["level"], "DEBUG");
    }
    let freed = with_message(&lines, "lock freed", "logs/renewed");
    assert_eq!(freed.len(), 1, "{freed:#?}");
    assert_eq!(
        (&freed[0]["cause"], &freed[0]["token"]),
        (&"released".into(), &token.into())
    );
    // Every line naming the token is about this lock and lease.
    assert!(token_lines.len() >= 3, "{token_lines:#?}");
    assert!(token_lines
        .iter()
        .all(|l| l["lock"] == "logs/renewed" && l["lease"] == lease));

    let expiry = with_message(&lines, "lock freed", "logs/expired");
    assert_eq!(expiry[0]["cause"], "lease_expired");
    assert_eq!(expiry[0]["token"], expired["token"]);
    assert!(lines
        .iter()
        .any(|l| l["message"] == "lease expired" && l["lease"] == expired["lease"]));

    let broken = with_message(&lines, "lock freed", "logs/forced");
    assert_eq!(broken[0]["forced"], true);
    assert_eq!(broken[0]["level"], "WARN");
    assert!(
        broken[0]["detail"].as_str().unwrap().contains("log drill"),
        "{:#}",
        broken[0]
    );
}
