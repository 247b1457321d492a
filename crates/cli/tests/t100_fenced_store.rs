//! The built-in fenced store with the real binary (docs/DESIGN.md §3): the holder
//! of a lock writes with its token; a newer holder's higher token wins; an
//! old token, a token that does not hold the lock and a token below the
//! key's highest are refused with exit 4 naming the tokens; bad keys and
//! oversize values exit 2 naming the limit; the store survives kill -9.

mod common;

use common::{free_port, numbers, phase, u64_of, Server};

/// Acquires `lock` under a fresh 60 s lease; returns (lease, token).
fn hold(server: &Server, lock: &str) -> (u64, u64) {
    let held = server.ok_json(&["acquire", lock, "--ttl", "60s", "--json"]);
    (u64_of(&held, "lease"), u64_of(&held, "token"))
}

fn put(server: &Server, key: &str, value: &str, lock: &str, token: u64) -> common::Run {
    server.cli(&[
        "fenced",
        "put",
        key,
        value,
        "--lock",
        lock,
        "--token",
        &token.to_string(),
    ])
}

/// Asserts a refused put: exit 4, and stderr names every token in `tokens`.
fn assert_refused(run: &common::Run, tokens: &[u64]) {
    run.expect_code(4);
    let named = numbers(&run.stderr);
    for token in tokens {
        assert!(
            named.contains(token),
            "stderr does not name token {token}: {:?}",
            run.stderr
        );
    }
}

#[test]
fn t100_fenced_store() {
    let data = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let mut server = Server::start_in(data.path(), port);

    phase("the holder writes with its token");
    let (lease1, token1) = hold(&server, "svc/leader");
    put(&server, "cfg/leader", "10.0.0.1:80", "svc/leader", token1).expect_code(0);
    let got = server.ok_json(&["fenced", "get", "cfg/leader", "--json"]);
    assert_eq!(got["key"], "cfg/leader");
    assert_eq!(got["value"], "10.0.0.1:80");
    assert_eq!(got["encoding"], "utf8");
    assert_eq!(u64_of(&got, "token"), token1);
    assert_eq!(got["lock"], "svc/leader");
    let human = server.cli(&["fenced", "get", "cfg/leader"]);
    human.expect_code(0);
    assert_eq!(
        human.stdout.trim(),
        format!("cfg/leader = 10.0.0.1:80 (token {token1}, lock svc/leader)")
    );

    phase("after release, a second holder writes with a higher token");
    server
        .cli(&[
            "release",
            "svc/leader",
            "--lease",
            &lease1.to_string(),
            "--token",
            &token1.to_string(),
        ])
        .expect_code(0);
    let (_, token2) = hold(&server, "svc/leader");
    assert!(token2 > token1);
    put(&server, "cfg/leader", "10.0.0.2:80", "svc/leader", token2).expect_code(0);
    let got = server.ok_json(&["fenced", "get", "cfg/leader", "--json"]);
    assert_eq!(
        (got["value"].as_str(), u64_of(&got, "token")),
        (Some("10.0.0.2:80"), token2)
    );

    phase("the old holder's token is refused, naming presented and current");
    let late = put(&server, "cfg/leader", "10.0.0.1:80", "svc/leader", token1);
    assert_refused(&late, &[token1, token2]);

    phase("a token that does not hold the lock is refused, naming the holder");
    let wrong = token2 + 1_000;
    let run = put(&server, "cfg/leader", "x", "svc/leader", wrong);
    assert_refused(&run, &[wrong, token2]);

    phase("a holder below the key's highest token gets StaleToken");
    // Tokens are global: the older holder of another lock may not overwrite
    // a key that a newer token wrote.
    let (_, old) = hold(&server, "svc/old");
    let (_, new) = hold(&server, "svc/new");
    put(&server, "cfg/shared", "new", "svc/new", new).expect_code(0);
    let stale = put(&server, "cfg/shared", "old", "svc/old", old);
    assert_refused(&stale, &[old, new]);
    assert!(stale.stderr.contains("stale token"), "{:?}", stale.stderr);

    // Issue 15 changed a missing key from exit 4 to exit 0 (an answer).
    phase("a lock nobody holds is NoSuchLock; a missing key is exit 0, said so");
    put(&server, "cfg/leader", "x", "svc/nobody", token2).expect_code(4);
    let missing = server.cli(&["fenced", "get", "cfg/never"]);
    missing.expect_code(0);
    assert!(missing.stderr.contains("no such key"), "{missing:?}");
    let missing = server.ok_json(&["fenced", "get", "cfg/never", "--json"]);
    assert_eq!(missing["found"], false, "{missing}");
    assert_eq!(missing["key"], "cfg/never", "{missing}");

    phase("bad keys and oversize values exit 2 naming the limit");
    let long_key = "k".repeat(513);
    let run = put(&server, &long_key, "x", "svc/leader", token2);
    run.expect_code(2);
    assert!(run.stderr.contains("FENCED_KEY_BYTES_MAX"), "{run:?}");
    let run = put(&server, "bad\u{1}key", "x", "svc/leader", token2);
    run.expect_code(2);
    assert!(run.stderr.contains("key"), "{run:?}");
    let big = "v".repeat(70_000);
    let run = put(&server, "cfg/big", &big, "svc/leader", token2);
    run.expect_code(2);
    assert!(run.stderr.contains("FENCED_VALUE_BYTES_MAX"), "{run:?}");

    phase("binary values round-trip as hex");
    server
        .cli(&[
            "fenced",
            "put",
            "cfg/bin",
            "ff0010",
            "--hex",
            "--lock",
            "svc/leader",
            "--token",
            &token2.to_string(),
        ])
        .expect_code(0);
    let got = server.ok_json(&["fenced", "get", "cfg/bin", "--json"]);
    assert_eq!(got["value"], "ff0010");
    assert_eq!(got["encoding"], "hex");

    phase("the store survives kill -9 and a restart on the same data dir");
    server.kill9();
    let server = Server::start_in(data.path(), port);
    let got = server.ok_json(&["fenced", "get", "cfg/leader", "--json"]);
    assert_eq!(
        (got["value"].as_str(), u64_of(&got, "token")),
        (Some("10.0.0.2:80"), token2)
    );
    let got = server.ok_json(&["fenced", "get", "cfg/shared", "--json", "--stale"]);
    assert_eq!(u64_of(&got, "token"), new);
    let late = put(&server, "cfg/shared", "old", "svc/old", old);
    assert_refused(&late, &[old, new]);
}
