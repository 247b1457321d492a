//! What an operator reads (issue 15): the server's own output, and the
//! listings that answer "who holds what".
//!
//! - `serve` prints "listening" only once the node is ready: the moment
//!   the line appears, `status` already names a leader; and its log,
//!   written to a file, carries no terminal colour codes.
//! - A restart replays the log without announcing old grants again ("lock
//!   acquired" is not logged for them), and `held for` counts from the
//!   grant, not from the restart.
//! - `lease ls` lists the live leases with their locks and tokens; `lease
//!   get` shows labels and held tokens; `get` shows metadata.
//! - A lease granted in a script's `$(...)` names the script as its owner,
//!   not the command-substitution subshell that exits at once.
//! - A name that prints as another (a right-to-left override) is refused,
//!   naming the character.
//! - `bench` keeps its locks under its own prefix and out of the event
//!   memory: the tour's history is still there after a bench run.

mod common;

use common::{command_to, free_port, phase, u64_of, Server, BIN};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long the lock is held before the restart.
const HELD_BEFORE_RESTART_MS: u64 = 3_000;

/// Bound on a fresh node printing that it listens.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

#[test]
fn t202_serve_says_listening_only_when_ready_and_logs_without_colour() {
    let data = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("serve.log");
    let listen = format!("127.0.0.1:{}", free_port());
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", &listen, "--data-dir"])
        .arg(data.path())
        .env("RUST_LOG", "info")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("spawn serve");
    let stdout = child.stdout.take().unwrap();
    let (lines, first) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let line = first
        .recv_timeout(READY_TIMEOUT)
        .expect("serve printed nothing");
    assert!(line.contains("listening on"), "{line}");
    // Ready when announced: one status call, no polling, names a leader.
    let endpoint = format!("http://{listen}");
    let status = command_to(&endpoint, &["status", "--json"])
        .output()
        .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_ne!(
        u64_of(&status, "leader"),
        0,
        "announced before ready: {status}"
    );
    let _ = child.kill();
    let _ = child.wait();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("INFO"), "{text}");
    assert!(
        !text.contains('\u{1b}'),
        "colour codes in a log file: {text}"
    );
}

#[test]
fn t202_a_restart_does_not_announce_old_grants_nor_reset_held_for() {
    let data = tempfile::tempdir().unwrap();
    let port = free_port();
    let server = Server::start_in(data.path(), port);
    let held = server.ok_json(&["acquire", "restart/held", "--ttl", "60s", "--json"]);
    wait_for_log(&server, "restart/held");
    // Held long enough that a count restarted by the restart would be short
    // of it (the server's own figure, not a sleep).
    common::wait_for("the lock to be held 3 s", Duration::from_secs(20), || {
        let get = server.ok_json(&["get", "restart/held", "--json"]);
        (u64_of(&get, "held_ms") >= HELD_BEFORE_RESTART_MS).then_some(())
    });
    drop(server);

    phase("restart on the same data");
    let restarted = Instant::now();
    let server = Server::start_in(data.path(), port);
    let get = server.ok_json(&["get", "restart/held", "--json"]);
    assert_eq!(u64_of(&get, "token"), u64_of(&held, "token"), "{get}");
    let held_ms = u64_of(&get, "held_ms");
    assert!(
        held_ms >= HELD_BEFORE_RESTART_MS,
        "held for {held_ms} ms after the restart ({} ms ago): counted from the restart",
        restarted.elapsed().as_millis()
    );
    let log = server.log_text();
    assert!(
        !log.contains("lock acquired"),
        "the replay announced an old grant:\n{log}"
    );
    server.ok_json(&["acquire", "restart/new", "--ttl", "60s", "--json"]);
    wait_for_log(&server, "restart/new");
}

fn wait_for_log(server: &Server, name: &str) {
    common::wait_for("the new grant's log line", Duration::from_secs(10), || {
        let log = server.log_text();
        log.lines()
            .any(|l| l.contains("lock acquired") && l.contains(name))
            .then_some(())
    });
}

#[test]
fn t202_leases_labels_metadata_and_names_that_lie() {
    let server = Server::start();
    let lease = server.ok_json(&[
        "lease",
        "grant",
        "--ttl",
        "60s",
        "--label",
        "team=billing",
        "--json",
    ]);
    let lease = u64_of(&lease, "lease").to_string();
    let held = server.ok_json(&[
        "acquire",
        "ops/with-meta",
        "--ttl",
        "60s",
        "--metadata",
        "ticket=INC-7",
        "--json",
    ]);
    let token = u64_of(&held, "token");

    phase("lease ls lists every live lease with its locks and tokens");
    let listed = server.ok_json(&["lease", "ls", "--json"]);
    let leases = listed.as_array().expect("an array");
    assert_eq!(leases.len(), 2, "{listed}");
    let holder = leases
        .iter()
        .find(|l| l["lease"] == held["lease"])
        .expect("the holder's lease");
    assert_eq!(holder["held"][0]["lock"], "ops/with-meta", "{listed}");
    assert_eq!(holder["held"][0]["token"], token, "{listed}");
    let table = server.cli(&["lease", "ls"]);
    let table = &table.expect_code(0).stdout;
    assert!(table.contains(&format!("ops/with-meta={token}")), "{table}");

    phase("lease get shows labels and held tokens; get shows metadata");
    let described = server.cli(&["lease", "get", &lease]);
    assert!(
        described
            .expect_code(0)
            .stdout
            .contains("labels: team=billing"),
        "{described:?}"
    );
    let holder_lease = u64_of(&held, "lease").to_string();
    let described = server.cli(&["lease", "get", &holder_lease]);
    let expected = format!("ops/with-meta (token {token})");
    assert!(
        described.expect_code(0).stdout.contains(&expected),
        "{described:?}"
    );
    let get = server.cli(&["get", "ops/with-meta"]);
    assert!(
        get.expect_code(0).stdout.contains("metadata: ticket=INC-7"),
        "{get:?}"
    );
    assert!(get.stdout.contains("renewed 0 times"), "{get:?}");

    phase("a name with a right-to-left override is refused, naming it");
    let lying = server.cli(&["acquire", "files/rtl\u{202E}gnp.exe", "--ttl", "10s"]);
    lying.expect_code(2);
    assert!(
        lying.stderr.contains("U+202E RIGHT-TO-LEFT OVERRIDE"),
        "{lying:?}"
    );
}

#[test]
fn t202_bench_does_not_flush_the_event_memory() {
    let server = Server::start();
    server.ok_json(&["acquire", "tour/nightly", "--ttl", "60s", "--json"]);
    let run = server.cli(&[
        "bench",
        "--workload",
        "uncontended",
        "--clients",
        "2",
        "--seconds",
        "2",
    ]);
    run.expect_code(0);
    let events = server.ok_json(&["events", "--json"]);
    let events = events.as_array().expect("an array");
    assert!(
        events.iter().any(|e| e["lock"] == "tour/nightly"),
        "the tour's event is gone after a bench run: {events:?}"
    );
    assert!(
        events.iter().all(|e| !e["lock"]
            .as_str()
            .unwrap_or("")
            .starts_with("leasehold-bench/")),
        "bench events in the operators' memory"
    );
    let locks = server.ok_json(&["ls", "--json"]);
    assert!(
        locks
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["lock"] != "bench/u/0"),
        "bench used a shared prefix: {locks}"
    );
}

/// `$(leasehold ... | cat)`: bash forks a subshell for the pipeline, which
/// is the CLI's parent and exits with it.
#[test]
fn t202_a_lease_granted_in_command_substitution_names_the_script() {
    let server = Server::start();
    let script = format!(
        "echo $$; L=$({BIN} --endpoints {} lease grant --ttl 60s --json | cat); echo \"$L\"; sleep 60",
        server.endpoint()
    );
    let mut child = Command::new("bash")
        .args(["-c", &script])
        .stdout(Stdio::piped())
        .spawn()
        .expect("bash");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let script_pid: u64 = lines.next().unwrap().unwrap().trim().parse().unwrap();
    let granted: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    let lease = u64_of(&granted, "lease").to_string();
    let info = server.ok_json(&["lease", "get", &lease, "--json"]);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        info["owner"]["pid"].as_u64(),
        Some(script_pid),
        "the owner is not the script: {info}"
    );
}
