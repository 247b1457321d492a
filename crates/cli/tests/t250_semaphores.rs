//! Semaphores and read-write locks from the command line (issue 18):
//! `lock NAME --limit N -- CMD` runs at most N commands at once, and a
//! SIGKILLed holder's permit comes free once its lease's ttl passes (not
//! before), to the asker waiting first, with a higher token; `--shared`
//! lets readers hold together, `--exclusive` waits for them all, and a
//! reader that comes after a waiting writer waits behind it.

mod common;

use common::process::{args, read_ready, sh};
use common::{finish, wait_for, Server};
use std::path::Path;
use std::time::{Duration, Instant};

/// A `lock` tail that writes its token to `file`, then runs until killed.
fn hold_until_killed(file: &Path) -> Vec<String> {
    sh(&format!(
        "echo $LEASEHOLD_TOKEN > {}; exec sleep 60",
        file.display()
    ))
}

/// A `lock` tail that writes its token to `file`, then waits (bounded)
/// for `go` to exist.
fn hold_until(file: &Path, go: &Path) -> Vec<String> {
    sh(&format!(
        "echo $LEASEHOLD_TOKEN > {}; i=0; while [ ! -e {} ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done",
        file.display(),
        go.display()
    ))
}

fn token_in(file: &Path) -> u64 {
    let what = format!("{} to be written", file.display());
    let text = wait_for(&what, Duration::from_secs(15), || read_ready(file));
    text.parse().expect("a token")
}

#[test]
fn t250_a_semaphore_runs_at_most_n_and_a_killed_holder_frees_its_permit_after_its_ttl() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let (one, two) = (dir.path().join("one"), dir.path().join("two"));
    let (tail_one, tail_two) = (hold_until_killed(&one), hold_until_killed(&two));
    let head = ["lock", "sem/slots", "--limit", "2", "--ttl", "2s"];
    let mut first = server.spawn(&args(&head, &tail_one));
    let mut second = server.spawn(&args(&head, &tail_two));
    let tokens = [token_in(&one), token_in(&two)];
    let shown = server.ok_json(&["get", "sem/slots", "--json"]);
    assert_eq!(shown["kind"], "semaphore", "{shown}");
    assert_eq!(shown["permits"], 2);
    let mut held: Vec<u64> = shown["holders"]
        .as_array()
        .expect("holders")
        .iter()
        .map(|h| h["token"].as_u64().expect("token"))
        .collect();
    held.sort();
    let mut expected = tokens;
    expected.sort();
    assert_eq!(held, expected, "each grant with its own token");
    let listed = server.ok_json(&["ls", "sem/", "--json"]);
    assert_eq!(listed[0]["lock"], "sem/slots", "{listed}");

    // Both permits are held: a third holder without a wait is refused.
    let third = server.cli(&[
        "lock",
        "sem/slots",
        "--limit",
        "2",
        "--wait",
        "0",
        "--",
        "true",
    ]);
    third.expect_code(3);
    assert!(
        third.stderr.contains("sem/slots is busy") && third.stderr.contains("--wait"),
        "{}",
        third.stderr
    );
    // Another size for the same name is refused, naming both.
    let resized = server.cli(&["acquire", "sem/slots", "--limit", "3"]);
    resized.expect_code(2);
    assert!(
        resized.stderr.contains("has 2 permits, not 3"),
        "{}",
        resized.stderr
    );

    // More permits than the semaphore has is refused, naming its size.
    let too_many = server.cli(&["acquire", "sem/slots", "--limit", "2", "--permits", "3"]);
    too_many.expect_code(2);
    assert!(
        too_many.stderr.contains("outside 1..=2"),
        "{}",
        too_many.stderr
    );

    let waiting = [
        "acquire",
        "sem/slots",
        "--limit",
        "2",
        "--ttl",
        "6s",
        "--wait",
        "20s",
        "--json",
    ];
    let waiter = server.spawn(&waiting);
    first.kill().expect("SIGKILL the first holder");
    let killed_at = Instant::now();
    first.wait().expect("reaped");
    let granted = finish(waiter, "the waiter to be granted", Duration::from_secs(15));
    granted.expect_code(0);
    assert!(
        killed_at.elapsed() >= Duration::from_secs(1),
        "granted {:?} after the kill: before the killed holder's lease (ttl 2 s, renewed every 0.67 s) could expire",
        killed_at.elapsed()
    );
    let token = granted.json()["token"].as_u64().expect("token");
    assert!(
        tokens.iter().all(|t| token > *t),
        "{token} not above {tokens:?}"
    );
    // `acquire` exits holding its grant and nothing renews its lease: diagnose
    // judges each grant, finds that one orphaned beside the renewing second
    // holder, and says how to free it (its lease, not a force release).
    let lease = granted.json()["lease"].as_u64().expect("lease");
    let diagnosed = server.cli(&["diagnose", "sem/", "--interval", "2s", "--json"]);
    diagnosed.expect_code(8);
    let found = diagnosed.json();
    let pool = &found[0];
    assert_eq!(pool["verdict"], "orphaned", "{found}");
    let advice = pool["advice"].as_str().unwrap_or_default();
    assert!(
        advice.contains(&format!("leasehold lease revoke {lease}")),
        "{advice}"
    );
    let evidence = pool["evidence"].to_string();
    assert!(
        evidence.contains("a live renewer") && evidence.contains("a static countdown"),
        "{evidence}"
    );
    // The second holder renewed all along (every 0.67 s) and never heard a
    // loss: its grant is among what its lease holds.
    assert!(
        second.try_wait().expect("poll").is_none(),
        "the second holder's lock ended early"
    );
    second.kill().expect("stop the second holder");
    second.wait().expect("reaped");
}

#[test]
fn t250_readers_share_a_read_write_lock_and_the_writer_waits_for_all_of_them() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let (r1, r2, w) = (
        dir.path().join("r1"),
        dir.path().join("r2"),
        dir.path().join("w"),
    );
    let (tail1, tail2) = (hold_until(&r1, &go), hold_until(&r2, &go));
    let reader = ["lock", "cfg/rw", "--shared", "--wait", "20s"];
    let readers = [
        server.spawn(&args(&reader, &tail1)),
        server.spawn(&args(&reader, &tail2)),
    ];
    // Both readers hold at once.
    let reader_tokens = [token_in(&r1), token_in(&r2)];

    let writer_tail = sh(&format!("echo $LEASEHOLD_TOKEN > {}", w.display()));
    let writer_head = ["lock", "cfg/rw", "--exclusive", "--wait", "20s"];
    let writer = server.spawn(&args(&writer_head, &writer_tail));
    // Once the writer waits, a new reader is not let in ahead of it.
    wait_for(
        "a new reader to be refused behind the waiting writer",
        Duration::from_secs(10),
        || {
            let late = server.cli(&["acquire", "cfg/rw", "--shared", "--json"]);
            if late.code == 0 {
                let held = late.json();
                let (lease, token) = (held["lease"].to_string(), held["token"].to_string());
                server
                    .cli(&["release", "cfg/rw", "--lease", &lease, "--token", &token])
                    .expect_code(0);
                return None;
            }
            late.expect_code(3);
            Some(())
        },
    );
    assert!(
        read_ready(&w).is_none(),
        "the writer ran beside the readers"
    );
    let shown = server.ok_json(&["get", "cfg/rw", "--json"]);
    assert_eq!(shown["kind"], "read-write", "{shown}");
    assert_eq!(shown["holders"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        shown["waiter_permits"][0], shown["permits"],
        "the writer asks for all"
    );

    std::fs::write(&go, "").unwrap();
    for (n, reader) in readers.into_iter().enumerate() {
        finish(
            reader,
            &format!("reader {n} to end"),
            Duration::from_secs(15),
        )
        .expect_code(0);
    }
    finish(writer, "the writer to run", Duration::from_secs(15)).expect_code(0);
    let writer_token = token_in(&w);
    assert!(
        reader_tokens.iter().all(|t| writer_token > *t),
        "the writer's token {writer_token} is not above the readers' {reader_tokens:?}"
    );
    // A name held as a read-write lock is not a lock meanwhile, and after
    // everyone left it is free for any use.
    server
        .cli(&["acquire", "cfg/rw", "--limit", "1", "--json"])
        .expect_code(0);
}

#[test]
fn t250_a_force_released_grant_is_heard_by_its_holder_and_the_command_stopped() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    let tail = hold_until_killed(&file);
    let head = [
        "lock",
        "sem/forced",
        "--limit",
        "2",
        "--fenced",
        "--ttl",
        "3s",
    ];
    let holder = server.spawn(&args(&head, &tail));
    let token = token_in(&file).to_string();
    server
        .cli(&[
            "force-release",
            "sem/forced",
            "--token",
            &token,
            "--reason",
            "INC-7 test",
        ])
        .expect_code(0);
    let stopped = finish(holder, "the holder to hear it", Duration::from_secs(15));
    stopped.expect_code(6);
    assert!(
        stopped.stderr.contains("force-released"),
        "{}",
        stopped.stderr
    );
    let incidents = server.ok_json(&["events", "--json"]);
    assert!(incidents.to_string().contains("INC-7 test"), "{incidents}");
}
