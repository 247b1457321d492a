//! `leasehold lease keepalive ID` renews with the client library's keeper,
//! so it rides through what `lock` rides through: a server killed with -9
//! and restarted, and the leader of a 3-node cluster killed. It ends only on
//! a definite loss (the lease revoked: exit 4) or at the lease's local
//! deadline (no renewal acknowledged in time: exit 4, saying so). Before, it
//! exited 5 "the server closed the keep-alive stream" at the first restart
//! and the lease then expired.

mod common;

use common::cluster::{one_at_a_time, Cluster};
use common::{phase, u64_of, wait_for, Server};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A `lease keepalive --json` running in the background, its renewal lines
/// collected as they are printed.
struct Keepalive {
    child: Option<Child>,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Keepalive {
    fn spawn(mut command: Command) -> Keepalive {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn keepalive");
        let stdout = child.stdout.take().expect("stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Keepalive {
            child: Some(child),
            lines,
        }
    }

    /// Renewals printed so far.
    fn renewals(&self) -> usize {
        self.lines.lock().unwrap().len()
    }

    /// Waits until `more` renewals beyond `after` were printed, while the
    /// process keeps running.
    fn await_renewals(&mut self, after: usize, more: usize, limit: Duration) -> Duration {
        let started = Instant::now();
        wait_for(&format!("{more} more renewals"), limit, || {
            let child = self.child.as_mut().expect("running");
            if let Ok(Some(exit)) = child.try_wait() {
                panic!("keepalive exited ({exit}) while it should renew");
            }
            (self.renewals() >= after + more).then_some(())
        });
        started.elapsed()
    }

    /// Waits for the process to exit; returns its exit code and stderr.
    fn finish(mut self, limit: Duration) -> (i32, String) {
        let child = self.child.take().expect("running");
        let run = common::finish(child, "keepalive to exit", limit);
        (run.code, run.stderr)
    }
}

impl Drop for Keepalive {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn grant(run: common::Run) -> u64 {
    u64_of(&run.expect_code(0).json(), "lease")
}

#[test]
fn t94_keepalive_rides_through_a_server_restart() {
    let data = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let mut server = Server::start_in(data.path(), port);
    // ttl 10 s: renewed every 3.3 s; the local deadline leaves the server
    // about 5.7 s to come back.
    let lease = grant(server.cli(&["lease", "grant", "--ttl", "10s", "--json"]));
    let id = lease.to_string();
    let mut keepalive = Keepalive::spawn(server.command(&["lease", "keepalive", &id, "--json"]));
    keepalive.await_renewals(0, 2, Duration::from_secs(10));

    phase("kill -9 the server and start it again on the same data");
    server.kill9();
    let before = keepalive.renewals();
    let server = Server::start_in(data.path(), port);
    let took = keepalive.await_renewals(before, 2, Duration::from_secs(20));
    eprintln!(
        "measured: two renewals {} ms after the restart",
        took.as_millis()
    );
    let got = server.ok_json(&["lease", "get", &id, "--json"]);
    assert!(u64_of(&got, "remaining_ms") > 0, "{got}");

    phase("a definite loss ends it with exit 4");
    server.cli(&["lease", "revoke", &id]).expect_code(0);
    let (code, stderr) = keepalive.finish(Duration::from_secs(10));
    assert_eq!(code, 4, "{stderr}");
    assert!(stderr.contains(&format!("lease {lease}")), "{stderr}");
}

#[test]
fn t94_keepalive_ends_at_the_local_deadline_saying_so() {
    let server = Server::start();
    let lease = grant(server.cli(&["lease", "grant", "--ttl", "3s", "--json"]));
    let id = lease.to_string();
    let mut keepalive = Keepalive::spawn(server.command(&["lease", "keepalive", &id]));
    keepalive.await_renewals(0, 1, Duration::from_secs(10));

    phase("freeze the server: no renewal is acknowledged any more");
    server.signal(libc::SIGSTOP);
    let frozen = Instant::now();
    let (code, stderr) = keepalive.finish(Duration::from_secs(10));
    server.signal(libc::SIGCONT);
    eprintln!(
        "measured: keepalive gave up {} ms after the server froze (ttl 3 s)",
        frozen.elapsed().as_millis()
    );
    assert_eq!(code, 4, "{stderr}");
    assert!(stderr.contains("local deadline"), "{stderr}");
    assert!(
        frozen.elapsed() < Duration::from_secs(3),
        "{:?}",
        frozen.elapsed()
    );
}

#[test]
fn t94_keepalive_rides_through_a_leader_change() {
    let _serial = one_at_a_time();
    let mut cluster = Cluster::start(3);
    let lease = grant(cluster.cli(&["lease", "grant", "--ttl", "6s", "--json"]));
    let id = lease.to_string();
    let mut keepalive = Keepalive::spawn(cluster.command(&["lease", "keepalive", &id, "--json"]));
    keepalive.await_renewals(0, 2, Duration::from_secs(10));

    phase("kill -9 the leader");
    let (leader, term) = cluster.leader();
    cluster.kill9(leader);
    let before = keepalive.renewals();
    let (new_leader, _) = cluster.leader_after(term);
    let took = keepalive.await_renewals(before, 2, Duration::from_secs(15));
    eprintln!(
        "measured: two renewals {} ms after node {leader} was killed (new leader {new_leader})",
        took.as_millis()
    );
    let got = cluster.ok_json(&["lease", "get", &id, "--json"]);
    assert!(u64_of(&got, "remaining_ms") > 0, "{got}");
}
