//! The scripting path, with real processes: `acquire` and `lease grant`
//! record the invoking process (here: this test) as the owner, or the one
//! `--owner-pid` names; `release` of a lock revokes the lease `acquire`
//! granted for it (unless `--keep-lease`), and never a lease granted
//! otherwise; `fenced get` of a missing key is an answer (exit 0).

mod common;

use common::{phase, u64_of, wait_for, Server};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::Command;
use std::time::Duration;

/// The held lock's owner process as `get --json` shows it.
fn owner_of(server: &Server, lock: &str) -> (u64, Value) {
    let got = server.ok_json(&["get", lock, "--json"]);
    (
        got["owner_info"]["pid"].as_u64().expect("owner pid"),
        got["owner_process"].clone(),
    )
}

/// Whether lease `id` still exists (`lease get` exits 0; 4 once gone).
fn lease_exists(server: &Server, id: u64) -> bool {
    let run = server.cli(&["lease", "get", &id.to_string()]);
    assert!(run.code == 0 || run.code == 4, "{run:?}");
    run.code == 0
}

#[test]
fn t200_owner_is_the_invoking_process() {
    let server = Server::start();
    let me = u64::from(std::process::id());

    phase("acquire and lease grant record their parent (this test) as the owner");
    server.ok_json(&["acquire", "s/own", "--ttl", "30s", "--json"]);
    let (pid, process) = owner_of(&server, "s/own");
    assert_eq!(pid, me);
    assert_eq!(process, "running");
    let lease = server.ok_json(&["lease", "grant", "--ttl", "30s", "--json"]);
    let info = server.ok_json(&[
        "lease",
        "get",
        &u64_of(&lease, "lease").to_string(),
        "--json",
    ]);
    assert!(
        info.to_string().contains(&format!("\"pid\":{me}")),
        "{info}"
    );

    phase("--owner-pid names another process; when it ends, the owner is gone");
    let mut worker = Command::new("sleep")
        .arg("60")
        .spawn()
        .expect("spawn sleep");
    let worker_pid = worker.id().to_string();
    server.ok_json(&[
        "acquire",
        "s/other",
        "--ttl",
        "30s",
        "--owner-pid",
        &worker_pid,
        "--json",
    ]);
    let (pid, process) = owner_of(&server, "s/other");
    assert_eq!(pid.to_string(), worker_pid);
    assert_eq!(process, "running");
    worker.kill().expect("kill sleep");
    worker.wait().expect("reap sleep");
    wait_for("the owner to show gone", Duration::from_secs(10), || {
        (owner_of(&server, "s/other").1 == "gone").then_some(())
    });

    phase("a pid that does not run here is a usage error");
    let run = server.cli(&["acquire", "s/none", "--owner-pid", "999999999"]);
    run.expect_code(2);
    assert!(run.stderr.contains("--owner-pid"), "{run:?}");
}

#[test]
fn t200_release_revokes_the_lease_acquire_granted() {
    let server = Server::start();
    let release = |got: &Value, extra: &[&str]| {
        let (lease, token) = (
            u64_of(got, "lease").to_string(),
            u64_of(got, "token").to_string(),
        );
        let mut args = vec![
            "release",
            got["lock"].as_str().expect("lock"),
            "--lease",
            &lease,
        ];
        args.extend_from_slice(&["--token", &token, "--json"]);
        args.extend_from_slice(extra);
        server.ok_json(&args)
    };

    phase("release of an acquired lock revokes acquire's lease");
    let got = server.ok_json(&["acquire", "r/a", "--ttl", "60s", "--json"]);
    let released = release(&got, &[]);
    assert_eq!(released["lease_revoked"], true, "{released}");
    assert!(!lease_exists(&server, u64_of(&got, "lease")));

    phase("--keep-lease keeps it");
    let got = server.ok_json(&["acquire", "r/b", "--ttl", "60s", "--json"]);
    let released = release(&got, &["--keep-lease"]);
    assert_eq!(released["lease_revoked"], false, "{released}");
    assert!(lease_exists(&server, u64_of(&got, "lease")));

    phase("a lease granted by `lease grant` is never revoked by release");
    let lease = server.ok_json(&["lease", "grant", "--ttl", "60s", "--json"]);
    let id = u64_of(&lease, "lease").to_string();
    let got = server.ok_json(&["acquire", "r/c", "--lease", &id, "--json"]);
    let released = release(&got, &[]);
    assert_eq!(released["lease_revoked"], false, "{released}");
    assert!(lease_exists(&server, u64_of(&lease, "lease")));
}

#[test]
fn t200_fenced_get_of_a_missing_key_is_an_answer() {
    let server = Server::start();
    let run = server.cli(&["fenced", "get", "cfg/missing"]);
    run.expect_code(0);
    assert!(run.stdout.is_empty(), "{run:?}");
    assert!(run.stderr.contains("no such key"), "{run:?}");
    let got = server.ok_json(&["fenced", "get", "cfg/missing", "--json"]);
    assert_eq!(
        got,
        serde_json::json!({"key": "cfg/missing", "found": false})
    );
}

/// Waits until `name` is held; its `get --json`.
fn await_held(server: &Server, name: &str) -> Value {
    wait_for(
        &format!("{name} to be held"),
        Duration::from_secs(20),
        || {
            let run = server.cli(&["get", name, "--json"]);
            (run.code == 0 && run.json()["held"] == true).then(|| run.json())
        },
    )
}

/// Whether `name` is held now (`get` answers, or the lock is gone: exit 4).
fn is_held(server: &Server, name: &str) -> bool {
    let run = server.cli(&["get", name, "--json"]);
    run.code == 0 && run.json()["held"] == true
}

#[test]
fn t200_lock_without_a_command_holds_until_sigterm() {
    let server = Server::start();

    phase("lock NAME with hold flags prints its variables and holds the lock");
    let mut holder = server.spawn(&[
        "lock",
        "l/hold",
        "--metadata",
        "team=ops",
        "--max-hold",
        "1m",
        "--lock-delay",
        "1s",
    ]);
    // Read stdout as it comes: the last variable printed means `lock`
    // listens for SIGTERM.
    let (lines_tx, lines) = std::sync::mpsc::channel();
    let stdout = holder.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let mut printed = Vec::new();
    while !printed
        .iter()
        .any(|l: &String| l.starts_with("LEASEHOLD_LEASE="))
    {
        let line = lines.recv_timeout(Duration::from_secs(20));
        printed.push(line.expect("lock prints its variables"));
    }
    let held = await_held(&server, "l/hold");
    assert_eq!(held["metadata"]["team"], "ops", "{held}");
    assert_eq!(held["max_hold_ms"], 60_000, "{held}");
    assert_eq!(held["lock_delay_ms"], 1_000, "{held}");

    phase("SIGTERM: exit 0, the lock released, the token was printed");
    assert_eq!(unsafe { libc::kill(holder.id() as i32, libc::SIGTERM) }, 0);
    let run = common::finish(holder, "lock without a command", Duration::from_secs(20));
    run.expect_code(0);
    let token = held["token"].as_u64().expect("token");
    assert!(
        printed.contains(&format!("LEASEHOLD_TOKEN={token}")),
        "{printed:?}"
    );
    assert!(
        printed.contains(&"LEASEHOLD_LOCK=l/hold".to_owned()),
        "{printed:?}"
    );
    assert!(!is_held(&server, "l/hold"));
}

#[test]
fn t200_lock_checks_its_command_and_takes_a_lease() {
    let server = Server::start();

    phase("a command that cannot be run: 127, and the lock was never taken");
    let run = server.cli(&["lock", "l/typo", "--", "no-such-command-leasehold-t200"]);
    run.expect_code(127);
    assert!(run.stderr.contains("not acquired"), "{run:?}");
    let events = server.ok_json(&["events", "l/typo", "--json"]);
    assert_eq!(events.as_array().map(Vec::len), Some(0), "{events}");

    phase("--lease holds the lock under an existing lease, left alive after");
    let lease = server.ok_json(&["lease", "grant", "--ttl", "30s", "--json"]);
    let id = u64_of(&lease, "lease").to_string();
    let script = "test \"$LEASEHOLD_LEASE\" = \"$1\"";
    server
        .cli(&[
            "lock", "l/lease", "--lease", &id, "--", "sh", "-c", script, "sh", &id,
        ])
        .expect_code(0);
    assert!(!is_held(&server, "l/lease"));
    assert!(lease_exists(&server, u64_of(&lease, "lease")));
}
