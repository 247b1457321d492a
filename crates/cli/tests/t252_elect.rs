//! Leader election from the command line (issue 18): `elect NAME --value V
//! -- CMD` runs CMD while leading; a leader SIGSTOPped past its ttl loses
//! the lead to the next campaign, whose epoch is higher; the old leader's
//! fenced writes are refused; `elect --observe` shows the change and the
//! gap with no leader between; the paused leader, resumed, stops its
//! command and exits 6.

mod common;

use common::process::{args, is_stopped, read_ready, sh};
use common::{finish, wait_for, Run, Server};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Child;
use std::sync::mpsc;
use std::time::Duration;

/// Bound on anything the test waits for (a ttl of 2 s and a delay of 1 s
/// are the longest steps).
const LIMIT: Duration = Duration::from_secs(20);

/// A campaign's command: writes its epoch to `file`, then runs until stopped.
fn lead_until_stopped(file: &Path) -> Vec<String> {
    sh(&format!(
        "echo $LEASEHOLD_TOKEN > {}; exec sleep 60",
        file.display()
    ))
}

fn epoch_in(file: &Path) -> u64 {
    let what = format!("{} to be written", file.display());
    let text = wait_for(&what, LIMIT, || read_ready(file));
    text.parse().expect("an epoch")
}

/// The observer's JSON lines, as they come.
fn lines_of(observer: &mut Child) -> mpsc::Receiver<Value> {
    let stdout = observer.stdout.take().expect("piped stdout");
    let (sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            let value = serde_json::from_str(&line).expect("a JSON line");
            if sender.send(value).is_err() {
                return;
            }
        }
    });
    lines
}

/// The next change: (epoch, value), or None for no leader.
fn next_change(lines: &mpsc::Receiver<Value>) -> Option<(u64, String)> {
    let change = lines
        .recv_timeout(LIMIT)
        .expect("the observer printed the next change");
    let leader = &change["leader"];
    (!leader.is_null()).then(|| {
        let epoch = leader["token"].as_u64().expect("token");
        (epoch, leader["value"].as_str().expect("value").to_owned())
    })
}

#[test]
fn t252_a_paused_leader_loses_to_the_next_campaign_with_a_gap_and_a_higher_epoch() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let (a_file, b_file) = (dir.path().join("a"), dir.path().join("b"));
    let mut observer = server.spawn(&["elect", "svc/main", "--observe", "--json"]);
    let changes = lines_of(&mut observer);
    assert_eq!(next_change(&changes), None, "nobody leads at first");

    let (a_tail, b_tail) = (lead_until_stopped(&a_file), lead_until_stopped(&b_file));
    let head_a = [
        "elect",
        "svc/main",
        "--value",
        "a:80",
        "--ttl",
        "2s",
        "--lock-delay",
        "1s",
        "--fenced",
    ];
    let mut a = server.spawn(&args(&head_a, &a_tail));
    let epoch_a = epoch_in(&a_file);
    assert_eq!(next_change(&changes), Some((epoch_a, "a:80".into())));
    let shown = server.ok_json(&["elect", "svc/main", "--leader", "--json"]);
    assert_eq!(shown["leader"]["token"].as_u64(), Some(epoch_a), "{shown}");
    put(&server, "from-a", epoch_a).expect_code(0);

    let head_b = [
        "elect", "svc/main", "--value", "b:80", "--ttl", "2s", "--fenced",
    ];
    let mut b = server.spawn(&args(&head_b, &b_tail));
    wait_for("b's campaign to queue", LIMIT, || {
        let lock = server.ok_json(&["get", "svc/main", "--json"]);
        (lock["waiters"].as_u64() == Some(1)).then_some(())
    });

    // Paused past its ttl: its lease expires, nobody leads for the lock
    // delay, then b does, with a higher epoch.
    let a_pid = a.id() as i32;
    unsafe { libc::kill(a_pid, libc::SIGSTOP) };
    wait_for("a to stop", LIMIT, || is_stopped(a_pid).then_some(()));
    assert_eq!(next_change(&changes), None, "the gap with no leader");
    let epoch_b = epoch_in(&b_file);
    assert!(epoch_b > epoch_a, "epoch {epoch_b} not above {epoch_a}");
    assert_eq!(next_change(&changes), Some((epoch_b, "b:80".into())));

    // The old leader's fenced writes are refused; the new one's land.
    put(&server, "late-a", epoch_a).expect_code(4);
    put(&server, "from-b", epoch_b).expect_code(0);

    // Resumed, the old leader learns it lost, stops its command, exits 6.
    unsafe { libc::kill(a_pid, libc::SIGCONT) };
    let ended = finish_child(&mut a);
    assert_eq!(ended, Some(6), "the paused leader's exit");
    b.kill().expect("stop b");
    b.wait().expect("reaped");
    assert_eq!(next_change(&changes), None, "b's end leaves nobody leading");
    observer.kill().expect("stop the observer");
    let observed = finish(observer, "the observer to stop", LIMIT);
    assert!(observed.stderr.is_empty(), "{}", observed.stderr);
}

/// A fenced put of `value` to `svc/config` as the leader of epoch `token`.
fn put(server: &Server, value: &str, token: u64) -> Run {
    let token = token.to_string();
    server.cli(&[
        "fenced",
        "put",
        "svc/config",
        value,
        "--lock",
        "svc/main",
        "--token",
        &token,
    ])
}

/// Waits (bounded) for `child` to exit; its exit code.
fn finish_child(child: &mut Child) -> Option<i32> {
    let status = wait_for("the process to exit", LIMIT, || {
        child.try_wait().ok().flatten()
    });
    status.code()
}
