//! Restoring a backup (issue 19): a new node from `snapshot restore` never
//! hands out a token the old cluster could have handed out (the floor the
//! operator names; without one the restore is refused with a sentence),
//! keeps the fenced store (so a stale writer stays refused), ends the
//! backup's leases unless `--keep-leases`, and with it keeps every lock
//! held at the backup's revision, under its holder and token.

mod common;

use common::{free_port, Server};

/// A restored node's data dir and port.
fn restored(server_dir: &std::path::Path, backup: &str, extra: &[&str]) -> (Server, u16) {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let dir = server_dir.to_str().unwrap();
    let mut args = vec![
        "snapshot",
        "restore",
        backup,
        "--data-dir",
        dir,
        "--listen",
        &listen,
    ];
    args.extend_from_slice(extra);
    let out = std::process::Command::new(common::BIN)
        .args(&args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (Server::start_in(server_dir, port), port)
}

/// What the old cluster held when it was backed up.
struct Before {
    old: Server,
    backup: String,
    revision: u64,
    lease: u64,
    token: u64,
}

/// An old node holding `restore/held` (and a fenced write under it),
/// backed up into `dir`.
fn backed_up(dir: &std::path::Path) -> Before {
    let old = Server::start();
    let held = old.ok_json(&["acquire", "restore/held", "--ttl", "60s", "--json"]);
    let (lease, token) = (
        held["lease"].as_u64().unwrap(),
        held["token"].as_u64().unwrap(),
    );
    old.cli(&strs(&put(token))).expect_code(0);
    let backup = dir.join("b.lhb").to_str().unwrap().to_owned();
    let saved = old.ok_json(&["snapshot", "save", &backup, "--json"]);
    let revision = saved["revision"].as_u64().unwrap();
    Before {
        old,
        backup,
        revision,
        lease,
        token,
    }
}

/// A fenced write to `cfg/leader` as the holder of `restore/held` with `token`.
fn put(token: u64) -> Vec<String> {
    let args = [
        "fenced",
        "put",
        "cfg/leader",
        "old",
        "--lock",
        "restore/held",
        "--token",
    ];
    let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    args.push(token.to_string());
    args
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn t261_a_restore_needs_a_floor_above_the_backup_and_an_empty_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let before = backed_up(dir.path());
    let target = dir.path().join("refused");
    let base = [
        "snapshot",
        "restore",
        &before.backup,
        "--data-dir",
        target.to_str().unwrap(),
    ];
    let unnamed = before.old.cli(&base);
    unnamed.expect_code(2);
    assert!(
        unnamed.stderr.contains("name a token floor") && unnamed.stderr.contains("--revision-gap"),
        "{}",
        unnamed.stderr
    );
    let at = before.revision.to_string();
    let low = before
        .old
        .cli(&[&base[..], &["--token-floor", &at]].concat());
    low.expect_code(2);
    assert!(
        low.stderr.contains("not above the backup's revision"),
        "{}",
        low.stderr
    );
    let used = dir.path().join("used");
    std::fs::create_dir_all(used.join("x")).unwrap();
    let used = used.to_str().unwrap();
    let refused = before.old.cli(&[
        "snapshot",
        "restore",
        &before.backup,
        "--data-dir",
        used,
        "--revision-gap",
        "10",
    ]);
    refused.expect_code(2);
    assert!(refused.stderr.contains("not empty"), "{}", refused.stderr);
}

#[test]
fn t261_a_restored_cluster_hands_out_tokens_above_the_floor_and_keeps_the_fenced_store() {
    let dir = tempfile::tempdir().unwrap();
    let before = backed_up(dir.path());
    let (revision, token) = (before.revision, before.token);
    // Leases ended: the lock is free, the next token is above the floor,
    // the fenced store kept its highest token, and the old holder's write
    // is refused.
    let gap = ["--revision-gap", "1000"];
    let (fresh, _) = restored(&dir.path().join("fresh"), &before.backup, &gap);
    fresh.cli(&["get", "restore/held"]).expect_code(4);
    let again = fresh.ok_json(&["acquire", "restore/held", "--json"]);
    assert!(
        again["token"].as_u64().unwrap() > revision + 1000,
        "{again}"
    );
    assert!(
        again["lease"].as_u64().unwrap() > revision + 1000,
        "{again}"
    );
    let kept = fresh.ok_json(&["fenced", "get", "cfg/leader", "--json"]);
    assert_eq!(
        (kept["value"].as_str(), kept["token"].as_u64()),
        (Some("old"), Some(token))
    );
    fresh.cli(&strs(&put(token))).expect_code(4);

    // Leases kept: the lock is held as at the backup, same lease and token.
    let keep = ["--token-floor", "5000", "--keep-leases"];
    let (kept_node, _) = restored(&dir.path().join("kept"), &before.backup, &keep);
    let lock = kept_node.ok_json(&["get", "restore/held", "--json"]);
    let holder = (lock["lease"].as_u64(), lock["token"].as_u64());
    assert_eq!(holder, (Some(before.lease), Some(token)), "{lock}");
    let next = kept_node.ok_json(&["acquire", "restore/other", "--json"]);
    assert!(next["token"].as_u64().unwrap() > 5000, "{next}");
}

/// Serve processes stopped when the test ends, however it ends.
struct Nodes(Vec<std::process::Child>);

impl Drop for Nodes {
    fn drop(&mut self) {
        for node in &mut self.0 {
            let _ = node.kill();
            let _ = node.wait();
        }
    }
}

#[test]
fn t261_three_nodes_restored_from_one_backup_form_one_cluster_above_the_floor() {
    let dir = tempfile::tempdir().unwrap();
    let before = backed_up(dir.path());
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let peers = (1..=3)
        .map(|id| format!("{id}=127.0.0.1:{}", ports[id - 1]))
        .collect::<Vec<_>>()
        .join(",");
    let mut nodes = Nodes(Vec::new());
    for id in 1..=3usize {
        let data = dir.path().join(format!("n{id}"));
        let node_id = id.to_string();
        let restore = [
            "snapshot",
            "restore",
            &before.backup,
            "--data-dir",
            data.to_str().unwrap(),
            "--node-id",
            &node_id,
            "--peers",
            &peers,
            "--revision-gap",
            "500",
            "--keep-leases",
        ];
        before.old.cli(&restore).expect_code(0);
        let listen = format!("127.0.0.1:{}", ports[id - 1]);
        let node = std::process::Command::new(common::BIN)
            .args([
                "serve",
                "--node-id",
                &node_id,
                "--listen",
                &listen,
                "--data-dir",
            ])
            .arg(&data)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn a restored node");
        nodes.0.push(node);
    }
    let endpoints = ports
        .iter()
        .map(|port| format!("http://127.0.0.1:{port}"))
        .collect::<Vec<_>>()
        .join(",");
    let cli = |args: &[&str]| {
        let mut command = std::process::Command::new(common::BIN);
        command.args(["--endpoints", &endpoints]).args(args);
        command.output().expect("run leasehold")
    };
    let json = |out: std::process::Output| -> serde_json::Value {
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
    };
    common::wait_for(
        "the restored nodes to elect a leader",
        std::time::Duration::from_secs(30),
        || {
            let status = json(cli(&["status", "--json"]));
            (status["leader"].as_u64().unwrap_or(0) != 0).then_some(())
        },
    );
    let lock = json(cli(&["get", "restore/held", "--json"]));
    let holder = (lock["lease"].as_u64(), lock["token"].as_u64());
    assert_eq!(holder, (Some(before.lease), Some(before.token)), "{lock}");
    let next = json(cli(&["acquire", "restore/new", "--json"]));
    assert!(
        next["token"].as_u64().unwrap_or(0) > before.revision + 500,
        "{next}"
    );
}

/// One lock the load took: its lease and token, the revision of its grant,
/// and of its release (`None`: still held).
struct Taken {
    name: String,
    lease: u64,
    token: u64,
    granted: u64,
    released: Option<u64>,
}

/// Takes `load/0`, `load/1`, ... one after another, releasing the even
/// ones at once and keeping the odd ones, until `stop`; counts in `done`.
fn take_and_keep(
    server: &Server,
    done: &std::sync::atomic::AtomicUsize,
    stop: &std::sync::atomic::AtomicBool,
) -> Vec<Taken> {
    use std::sync::atomic::Ordering;
    let mut taken = Vec::new();
    for k in 0..LOAD_LOCKS_MAX {
        if stop.load(Ordering::SeqCst) && k >= LOAD_LOCKS_MIN {
            break;
        }
        let name = format!("load/{k}");
        let grant = server.ok_json(&["acquire", &name, "--ttl", "60s", "--json"]);
        let number = |value: &serde_json::Value, key: &str| value[key].as_u64().unwrap();
        let (lease, token) = (number(&grant, "lease"), number(&grant, "token"));
        let released = (k % 2 == 0).then(|| {
            let (lease, token) = (lease.to_string(), token.to_string());
            let release = ["release", &name, "--lease", &lease, "--token", &token];
            number(
                &server.ok_json(&[&release[..], &["--json"]].concat()),
                "revision",
            )
        });
        taken.push(Taken {
            name,
            lease,
            token,
            granted: number(&grant, "revision"),
            released,
        });
        done.fetch_add(1, Ordering::SeqCst);
    }
    taken
}

/// Locks the load takes at least, and at most.
const LOAD_LOCKS_MIN: usize = 20;
const LOAD_LOCKS_MAX: usize = 200;

#[test]
fn t261_a_backup_under_load_restores_every_lock_held_at_its_revision() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let old = Server::start();
    let backup = dir.path().join("under-load.lhb");
    let backup = backup.to_str().unwrap();
    let (done, stop) = (AtomicUsize::new(0), AtomicBool::new(false));
    let (taken, revision) = std::thread::scope(|scope| {
        let load = scope.spawn(|| take_and_keep(&old, &done, &stop));
        common::wait_for(
            "the load to start",
            std::time::Duration::from_secs(30),
            || (done.load(Ordering::SeqCst) >= 6).then_some(()),
        );
        let saved = old.ok_json(&["snapshot", "save", backup, "--json"]);
        stop.store(true, Ordering::SeqCst);
        (load.join().unwrap(), saved["revision"].as_u64().unwrap())
    });
    let held_at_backup: Vec<(String, u64, u64)> = taken
        .iter()
        .filter(|t| t.granted <= revision && t.released.is_none_or(|r| r > revision))
        .map(|t| (t.name.clone(), t.lease, t.token))
        .collect();
    assert!(
        !held_at_backup.is_empty() && taken.iter().any(|t| t.granted > revision),
        "the backup fell inside the load (revision {revision})"
    );

    let held = |server: &Server| -> Vec<(String, u64, u64)> {
        let listed = server.ok_json(&["ls", "load/", "--json"]);
        let mut held: Vec<_> = listed
            .as_array()
            .unwrap()
            .iter()
            .filter(|lock| lock["held"] == true)
            .map(|lock| {
                let number = |key: &str| lock[key].as_u64().unwrap();
                (
                    lock["lock"].as_str().unwrap().to_owned(),
                    number("lease"),
                    number("token"),
                )
            })
            .collect();
        held.sort_by_key(|(_, _, token)| *token);
        held
    };
    let keep = ["--revision-gap", "1000", "--keep-leases"];
    let (kept, _) = restored(&dir.path().join("kept"), backup, &keep);
    assert_eq!(held(&kept), held_at_backup, "backup revision {revision}");
    let next = kept.ok_json(&["acquire", "load/after", "--json"]);
    assert!(next["token"].as_u64().unwrap() > revision + 1000, "{next}");

    let ended = ["--revision-gap", "1000"];
    let (fresh, _) = restored(&dir.path().join("ended"), backup, &ended);
    assert_eq!(held(&fresh), [], "leases ended: nothing held");
}
