//! `leasehold lock NAME -- CMD`: the command sees the lock in its
//! environment, its exit code becomes ours, the lock is released when it
//! exits; on loss of the lock its whole process group is stopped (SIGTERM,
//! then SIGKILL after --grace) and `lock` exits 6; signals we receive reach
//! the command; if `lock` is killed, the command dies with it.

mod common;

use common::process::{args, process_gone, read_ready, sh};
use common::{finish, wait_for, Server};
use std::time::{Duration, Instant};

fn no_locks_under(server: &Server, prefix: &str) -> bool {
    let listed = server.ok_json(&["ls", prefix, "--json"]);
    listed.as_array().is_some_and(|locks| locks.is_empty())
}

#[test]
fn t80_the_command_sees_the_lock_and_its_exit_code_is_ours() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("env");
    let script = format!(
        "echo \"$LEASEHOLD_LOCK $LEASEHOLD_TOKEN $LEASEHOLD_LEASE\" > {}; exit 7",
        seen.display()
    );
    let tail = sh(&script);
    server
        .cli(&args(&["lock", "exec/env", "--fenced"], &tail))
        .expect_code(7);
    let text = std::fs::read_to_string(&seen).unwrap();
    let fields: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(fields.len(), 3, "{text:?}");
    assert_eq!(fields[0], "exec/env");
    let token: u64 = fields[1].parse().expect("token is a number");
    let lease: u64 = fields[2].parse().expect("lease is a number");
    assert!(token > lease, "the grant came after the lease: {text}");
    // Released when the command exited.
    assert!(no_locks_under(&server, "exec/"));
    // The next holder gets a higher token.
    let next = server.ok_json(&["acquire", "exec/env", "--json"]);
    assert!(next["token"].as_u64().unwrap() > token);
    server
        .cli(&[
            "release",
            "exec/env",
            "--lease",
            &next["lease"].to_string(),
            "--token",
            &next["token"].to_string(),
        ])
        .expect_code(0);

    // Killed by a signal: 128 + its number, the shell's convention.
    server
        .cli(&args(&["lock", "exec/env"], &sh("kill -9 $$")))
        .expect_code(137);
    // A command that cannot be run: 127, and the lock is released.
    let run = server.cli(&["lock", "exec/env", "--", "/nonexistent/command"]);
    run.expect_code(127);
    assert!(
        run.stderr.contains("/nonexistent/command"),
        "{}",
        run.stderr
    );
    assert!(no_locks_under(&server, "exec/"));
}

#[test]
fn t80_a_lock_not_had_within_the_wait_exits_3() {
    let server = Server::start();
    server.ok_json(&["acquire", "exec/busy", "--ttl", "30s", "--json"]);
    let started = Instant::now();
    let run = server.cli(&["lock", "exec/busy", "--wait", "300ms", "--", "true"]);
    run.expect_code(3);
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(run.stderr.contains("exec/busy"), "{}", run.stderr);
}

#[test]
fn t80_on_loss_the_whole_group_is_stopped_and_lock_exits_6() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    // The command ignores SIGTERM (and so does its grandchild, which
    // inherits the disposition): only SIGKILL after the grace stops them.
    let script = format!(
        "trap '' TERM; sleep 1000 & echo \"$$ $!\" > {}; while :; do sleep 0.05; done",
        pids.display()
    );
    let tail = sh(&script);
    let child = server.spawn(&args(
        &["lock", "exec/loss", "--ttl", "3s", "--grace", "500ms"],
        &tail,
    ));
    let pids: Vec<i32> = wait_for("the command to start", Duration::from_secs(10), || {
        read_ready(&pids)
    })
    .split_whitespace()
    .map(|p| p.parse().unwrap())
    .collect();
    let holder = server.ok_json(&["get", "exec/loss", "--json"]);
    let lease = holder["lease"].as_u64().expect("held");

    let revoked = Instant::now();
    server
        .cli(&["lease", "revoke", &lease.to_string()])
        .expect_code(0);
    let run = finish(child, "lock to stop the command", Duration::from_secs(10));
    let took = revoked.elapsed();
    eprintln!(
        "measured: lock exited {} ms after the revoke",
        took.as_millis()
    );
    run.expect_code(6);
    assert!(
        run.stderr.contains("no longer knows the lease"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("SIGKILL"), "{}", run.stderr);
    // SIGKILL came only after the grace; and within one renewal interval
    // (1 s) + the grace + slack.
    assert!(took >= Duration::from_millis(500), "{took:?}");
    assert!(
        took < Duration::from_millis(1_000 + 500 + 1_500),
        "{took:?}"
    );
    for pid in pids {
        wait_for(
            &format!("process {pid} to be gone"),
            Duration::from_secs(5),
            || process_gone(pid).then_some(()),
        );
    }
}

#[test]
fn t80_signals_we_receive_reach_the_command() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let (ready, got) = (dir.path().join("ready"), dir.path().join("got"));
    let script = format!(
        "trap 'echo TERM > {}; exit 0' TERM; echo up > {}; while :; do sleep 0.05; done",
        got.display(),
        ready.display()
    );
    let tail = sh(&script);
    let child = server.spawn(&args(&["lock", "exec/signal"], &tail));
    wait_for("the command to start", Duration::from_secs(10), || {
        read_ready(&ready)
    });
    // SAFETY: plain kill(2) on the pid of a child we spawned.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let run = finish(
        child,
        "lock to end with the command",
        Duration::from_secs(10),
    );
    run.expect_code(0);
    assert_eq!(std::fs::read_to_string(&got).unwrap().trim(), "TERM");
    assert!(no_locks_under(&server, "exec/"));
}

#[test]
fn t80_killing_lock_kills_the_command() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let script = format!(
        "echo $$ > {}; while :; do sleep 0.05; done",
        pid_file.display()
    );
    let tail = sh(&script);
    let mut child = server.spawn(&args(&["lock", "exec/orphan"], &tail));
    let pid: i32 = wait_for("the command to start", Duration::from_secs(10), || {
        read_ready(&pid_file)
    })
    .parse()
    .unwrap();
    child.kill().unwrap(); // SIGKILL: no handler of ours runs
    child.wait().unwrap();
    wait_for(
        "the command to die with lock",
        Duration::from_secs(5),
        || process_gone(pid).then_some(()),
    );
}
