//! Several locks at once from the command line (issue 18): `lock A B --
//! CMD` holds both or neither; two clients naming them in opposite orders,
//! over and over, never deadlock and never run their commands together; a
//! taken lock makes the set busy (exit 3) without holding the other.

mod common;

use common::process::{args, sh};
use common::Server;
use std::path::Path;
use std::time::{Duration, Instant};

/// Runs per client; each command holds both locks about 10 ms.
const ROUNDS: usize = 12;

/// A command that fails (exit 9) if another holder's command runs now:
/// it claims a marker file that only one may hold.
fn exclusive_step(dir: &Path) -> Vec<String> {
    let marker = dir.join("held");
    sh(&format!(
        "set -C; : > {m} || exit 9; sleep 0.01; rm {m}; echo \"$LEASEHOLD_TOKENS\" >> {log}",
        m = marker.display(),
        log = dir.join("log").display()
    ))
}

#[test]
fn t253_opposite_orders_in_a_loop_never_deadlock_nor_overlap() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let step = exclusive_step(dir.path());
    let started = Instant::now();
    std::thread::scope(|scope| {
        for order in [["set/a", "set/b"], ["set/b", "set/a"]] {
            let (server, step) = (&server, &step);
            scope.spawn(move || {
                let head = ["lock", order[0], order[1], "--wait", "30s", "--ttl", "5s"];
                for _ in 0..ROUNDS {
                    server.cli(&args(&head, step)).expect_code(0);
                }
            });
        }
    });
    let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2 * ROUNDS, "{log}");
    assert!(
        lines
            .iter()
            .all(|l| l.contains("set/a=") && l.contains("set/b=")),
        "{log}"
    );
    eprintln!("measured: {} sets in {:?}", 2 * ROUNDS, started.elapsed());

    // A taken lock makes the set busy, naming it, and the other stays free.
    let mut holder = server.spawn(&["lock", "set/a", "--", "sleep", "30"]);
    common::wait_for("set/a to be held", Duration::from_secs(10), || {
        let lock = server.cli(&["get", "set/a", "--json"]);
        (lock.code == 0).then_some(())
    });
    let busy = server.cli(&["lock", "set/b", "set/a", "--wait", "0", "--", "true"]);
    busy.expect_code(3);
    assert!(busy.stderr.contains("set/a"), "{}", busy.stderr);
    server.cli(&["get", "set/b", "--json"]).expect_code(4);
    holder.kill().expect("stop the holder");
    holder.wait().expect("reaped");
}
