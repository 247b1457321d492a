//! `leasehold force-release` with the real binary: the break-glass release.
//!
//! - **Refusals**: a wrong token (or a missing lock) exits 4 and leaves the
//!   lock held; a holder that did not declare `--fenced` is refused (exit 4,
//!   naming `--allow-unfenced`) and freed with the flag; an empty reason
//!   exits 2.
//! - **Release**: a fenced lock is freed, the evidence is printed on stderr
//!   before acting, and the next `acquire` gets a higher token.
//! - **Revoke**: with `--revoke-lease`, a holder process using the client
//!   library (a drill worker, see `common/drill.rs`) sees `lost()` within
//!   one renewal interval plus slack, and a write with its old token to the
//!   built-in fenced store is refused after the new holder wrote.

mod common;

use common::drill::{boot_us, Mode, Worker, WorkerSpec};
use common::{numbers, phase, u64_of, Server};
use std::time::Duration;

/// Bound on a worker's start: process, connect, grant, acquire.
const START: Duration = Duration::from_secs(20);
/// Bound on any other step of a worker.
const STEP: Duration = Duration::from_secs(5);
/// Scheduling slack on top of the renewal interval (as in `t70`).
const SLACK: Duration = Duration::from_millis(500);

/// The worker side of the revoke drill, run in a re-executed copy of this
/// binary (see `t70_client_drills`).
#[test]
#[ignore = "a worker process for the drill; run by it, not alone"]
fn drill_worker_process() {
    if let Some(spec) = WorkerSpec::from_env() {
        common::drill_worker::run(spec);
    }
}

/// Acquires `lock` under a fresh 60 s lease; returns (lease, token).
fn hold(server: &Server, lock: &str, fenced: bool) -> (u64, u64) {
    let mut args = vec!["acquire", lock, "--ttl", "60s", "--json"];
    if fenced {
        args.push("--fenced");
    }
    let held = server.ok_json(&args);
    (u64_of(&held, "lease"), u64_of(&held, "token"))
}

fn force(server: &Server, lock: &str, token: u64, extra: &[&str]) -> common::Run {
    let token = token.to_string();
    let mut args = vec![
        "force-release",
        lock,
        "--token",
        &token,
        "--reason",
        "holder hung, paged twice",
    ];
    args.extend_from_slice(extra);
    server.cli(&args)
}

/// The holder token `get` shows for `lock`.
fn holder_token(server: &Server, lock: &str) -> u64 {
    u64_of(&server.ok_json(&["get", lock, "--json"]), "token")
}

fn fenced_put(server: &Server, key: &str, value: &str, lock: &str, token: u64) -> common::Run {
    let token = token.to_string();
    server.cli(&[
        "fenced", "put", key, value, "--lock", lock, "--token", &token,
    ])
}

#[test]
fn t110_refusals_and_release() {
    let server = Server::start();

    phase("a wrong token is refused with exit 4 and the lock stays held");
    let (_, token) = hold(&server, "jobs/fenced", true);
    let wrong = token + 1_000;
    let run = force(&server, "jobs/fenced", wrong, &[]);
    run.expect_code(4);
    assert!(numbers(&run.stderr).contains(&token), "{run:?}");
    assert_eq!(holder_token(&server, "jobs/fenced"), token);

    phase("a missing lock is refused with exit 4");
    force(&server, "jobs/nobody", token, &[]).expect_code(4);

    phase("an empty reason is a usage error");
    let token_text = token.to_string();
    let args = ["force-release", "jobs/fenced", "--token", &token_text];
    server
        .cli(&[&args[..], &["--reason", ""]].concat())
        .expect_code(2);
    assert_eq!(holder_token(&server, "jobs/fenced"), token);

    phase("an unfenced holder is refused without --allow-unfenced");
    let (_, unfenced) = hold(&server, "jobs/unfenced", false);
    let run = force(&server, "jobs/unfenced", unfenced, &[]);
    run.expect_code(4);
    assert!(run.stderr.contains("--allow-unfenced"), "{run:?}");
    assert!(run.stderr.contains("could still write"), "{run:?}");
    assert_eq!(holder_token(&server, "jobs/unfenced"), unfenced);

    phase("and freed with it");
    force(&server, "jobs/unfenced", unfenced, &["--allow-unfenced"]).expect_code(0);
    server.cli(&["get", "jobs/unfenced"]).expect_code(4);

    phase("a fenced lock is freed; the evidence came first; the next holder's token is higher");
    let run = force(&server, "jobs/fenced", token, &["--json"]);
    run.expect_code(0);
    let out = run.json();
    assert_eq!(u64_of(&out, "token"), token);
    assert_eq!(out["revoked_lease"], false);
    assert_eq!(out["released"], serde_json::json!(["jobs/fenced"]));
    assert!(out["caller"].as_str().unwrap().contains('@'), "{out}");
    assert_eq!(u64_of(&out["evidence"], "token"), token);
    for shown in [
        format!("token {token}"),
        "fenced".into(),
        "last renewal".into(),
        "waiters: 0".into(),
    ] {
        assert!(
            run.stderr.contains(&shown),
            "evidence lacks {shown:?}: {run:?}"
        );
    }
    let (_, next) = hold(&server, "jobs/fenced", true);
    assert!(next > token, "next token {next} is not above {token}");

    phase("a second force release with the old token is refused");
    force(&server, "jobs/fenced", token, &[]).expect_code(4);
    assert_eq!(holder_token(&server, "jobs/fenced"), next);
}

#[test]
fn t110_revoke_lease_makes_the_holder_lose_and_its_writes_fail() {
    let server = Server::start();
    let lock = "drills/force";

    phase("a library holder holds the fenced lock and watches it");
    let mut spec = WorkerSpec::new(Mode::Watch, &server.endpoint(), lock, "w1");
    spec.ttl = Duration::from_secs(3);
    let mut worker = Worker::spawn("watcher", &spec);
    let holding = worker.expect("HOLDING", START);
    let interval = Duration::from_millis(holding.u64("interval_ms"));
    let (old, lease) = (holding.u64("token"), holding.u64("lease"));
    worker.expect("FENCE_OK", STEP);
    fenced_put(&server, "cfg/primary", "w1", lock, old).expect_code(0);

    phase("force-release with --revoke-lease");
    let started_us = boot_us();
    let run = force(&server, lock, old, &["--revoke-lease", "--json"]);
    run.expect_code(0);
    let out = run.json();
    assert_eq!(u64_of(&out, "lease"), lease);
    assert_eq!(out["revoked_lease"], true);
    assert_eq!(out["released"], serde_json::json!([lock]));
    assert!(
        run.stderr.contains("w1"),
        "the evidence lacks the owner: {run:?}"
    );

    phase("the holder's lost() fires within one renewal interval");
    let lost = worker.await_lost(interval + STEP);
    assert_eq!(lost.args, ["lease_not_found"], "{}", lost.text);
    let latency = Duration::from_micros(lost.u64("at_us").saturating_sub(started_us));
    assert!(
        latency <= interval + SLACK,
        "lost {latency:?} after the force release started; the bound is {interval:?} + {SLACK:?}"
    );
    let end = worker.next_line(STEP);
    assert_eq!(
        end.kind, "END",
        "fence() said Ok after the loss: {}",
        end.text
    );
    eprintln!(
        "measured: lost {} ms after the force release",
        latency.as_millis()
    );

    phase("a new holder writes with a higher token; the old token is refused");
    let (_, new) = hold(&server, lock, true);
    assert!(new > old);
    fenced_put(&server, "cfg/primary", "w2", lock, new).expect_code(0);
    let late = fenced_put(&server, "cfg/primary", "w1-late", lock, old);
    late.expect_code(4);
    let got = server.ok_json(&["fenced", "get", "cfg/primary", "--json"]);
    assert_eq!(
        (got["value"].as_str(), u64_of(&got, "token")),
        (Some("w2"), new)
    );
}
