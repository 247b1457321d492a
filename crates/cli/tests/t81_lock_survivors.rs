//! Nothing outlives `lock`: when `leasehold lock` dies by any signal,
//! SIGKILL included (so no code of ours runs), every process of the
//! command's process group ends within a second — grandchildren too, which
//! the parent-death signal alone never reached (it is delivered to the
//! direct child only). A watchdog process does it (see
//! `crates/cli/src/supervise/watchdog.rs`).

mod common;

use common::process::{args, group_members, read_ready, sh};
use common::{phase, wait_for, Server};
use std::time::{Duration, Instant};

/// Starts `lock` over a script that starts two grandchildren and waits;
/// returns the `lock` process and the command's process group.
fn lock_with_grandchildren(server: &Server, dir: &tempfile::TempDir) -> (std::process::Child, i32) {
    let pid_file = dir.path().join("pgid");
    let script = format!(
        "sleep 301 & sleep 302 & echo $$ > {}; wait",
        pid_file.display()
    );
    let tail = sh(&script);
    let child = server.spawn(&args(&["lock", "sig/d", "--ttl", "5s"], &tail));
    let pgid: i32 = wait_for("the command to start", Duration::from_secs(10), || {
        read_ready(&pid_file)
    })
    .parse()
    .expect("the command's pid");
    wait_for(
        "the command and both grandchildren to run",
        Duration::from_secs(5),
        || (group_members(pgid).len() == 3).then_some(()),
    );
    (child, pgid)
}

#[test]
fn t81_grandchildren_of_a_sigkilled_lock_are_gone_within_a_second() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let (mut child, pgid) = lock_with_grandchildren(&server, &dir);

    phase("kill -9 the lock process");
    let killed = Instant::now();
    child.kill().unwrap(); // SIGKILL: no code of ours runs
    child.wait().unwrap();
    wait_for(
        "every process of the command's group to end",
        Duration::from_secs(1),
        || group_members(pgid).is_empty().then_some(()),
    );
    eprintln!(
        "measured: the whole group was gone {} ms after SIGKILL to lock",
        killed.elapsed().as_millis()
    );
}

#[test]
fn t81_grandchildren_of_a_lock_killed_by_sigterm_are_gone_too() {
    // SIGTERM is forwarded to the group (the script's `wait` ends, the
    // sleeps get it too): lock ends with its command, leaving nothing.
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let (child, pgid) = lock_with_grandchildren(&server, &dir);
    // SAFETY: plain kill(2) on the pid of a child we spawned.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    common::finish(child, "lock to end", Duration::from_secs(10));
    wait_for(
        "every process of the command's group to end",
        Duration::from_secs(1),
        || group_members(pgid).is_empty().then_some(()),
    );
}
