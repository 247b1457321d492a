//! `leasehold events` with the real binary: the `Watch.Events` stream.
//!
//! - **Follow**: `events t120/ --follow --json` runs in the background
//!   while the test acquires, releases under a wrong name, releases,
//!   lets a 1 s lease expire, force-releases a fenced holder and lets a
//!   queued waiter time out. The follower prints each event as one JSON
//!   line, at once, in log order: the right kind, lock, lease and token,
//!   the detail where it matters (the error of a refused release, the
//!   reason of a force release), revisions increasing, and nothing of a
//!   lock outside the prefix. SIGTERM ends it with exit 0.
//! - **Recent**: `events t120/ --json` (no follow) prints the same events
//!   as one JSON array and exits; another prefix gets only its own; the
//!   human form has one line per event.
//! - **Bad prefix**: longer than NAME_BYTES_MAX exits 2 naming the limit.
//! - **Frozen server**: a follower of a server that stops answering with
//!   its connection open (SIGSTOP) notices through HTTP/2 keep-alive pings
//!   and exits 5 (unavailable) saying the connection was lost.

mod common;

use common::{finish, phase, u64_of, wait_for, Server};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::Child;
use std::sync::mpsc;
use std::time::Duration;

/// Bound on an event reaching the follower after the command that caused
/// it returned (it was applied before the command's reply).
const DELIVERY: Duration = Duration::from_secs(5);
/// Bound on a 1 s lease being expired by the server (ttl plus timer and
/// scheduling slack).
const EXPIRY: Duration = Duration::from_secs(10);
/// Bound on the follower exiting after SIGTERM.
const EXIT: Duration = Duration::from_secs(5);

const PREFIX: &str = "t120/";
const REASON: &str = "t120 drill: holder hung";

/// A background `leasehold events --follow --json` and the JSON lines it
/// printed so far (read by a thread, in order).
struct Follower {
    child: Child,
    lines: mpsc::Receiver<String>,
    /// Every event received, in order.
    seen: Vec<Value>,
    /// How many of `seen` the test has checked.
    checked: usize,
}

impl Follower {
    fn start(server: &Server, prefix: &str) -> Follower {
        let mut child = server.spawn(&["events", prefix, "--follow", "--json"]);
        let stdout = child.stdout.take().expect("piped stdout");
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        Follower {
            child,
            lines,
            seen: Vec::new(),
            checked: 0,
        }
    }

    /// Waits for the next event and checks its kind and lock; returns it.
    fn next(&mut self, kind: &str, lock: &str, limit: Duration) -> Value {
        let what = format!("a {kind} event of {lock} on the follower");
        wait_for(&what, limit, || {
            while let Ok(line) = self.lines.try_recv() {
                let event: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not one JSON object per line ({e}): {line:?}"));
                eprintln!("  follower: {event}");
                self.seen.push(event);
            }
            assert!(
                self.child.try_wait().expect("poll follower").is_none(),
                "the follower exited while waiting for {what}"
            );
            self.seen.get(self.checked).cloned()
        });
        let event = self.seen[self.checked].clone();
        self.checked += 1;
        assert_eq!(
            (event["kind"].as_str(), event["lock"].as_str()),
            (Some(kind), Some(lock)),
            "expected {what}, got {event}"
        );
        event
    }
}

/// Checks an event's lease and token.
fn assert_holder(event: &Value, lease: u64, token: u64) {
    assert_eq!(u64_of(event, "lease"), lease, "{event}");
    assert_eq!(u64_of(event, "token"), token, "{event}");
}

/// Acquires `lock` under a fresh lease; returns (lease, token).
fn acquire(server: &Server, lock: &str, ttl: &str, extra: &[&str]) -> (u64, u64) {
    let args = [&["acquire", lock, "--ttl", ttl, "--json"], extra].concat();
    let held = server.ok_json(&args);
    (u64_of(&held, "lease"), u64_of(&held, "token"))
}

#[test]
fn t120_events_follow_and_recent() {
    let server = Server::start();
    let mut follower = Follower::start(&server, PREFIX);

    phase("a lock outside the prefix is not followed");
    let (other_lease, other_token) = acquire(&server, "other/x", "30s", &[]);

    phase("acquired, then a release under a wrong name fails, then released");
    let job = "t120/job";
    let (lease, token) = acquire(&server, job, "30s", &[]);
    let acquired = follower.next("acquired", job, DELIVERY);
    assert_holder(&acquired, lease, token);
    assert!(
        acquired["owner"].as_str().is_some_and(|o| !o.is_empty()),
        "{acquired}"
    );
    let (lease_text, token_text) = (lease.to_string(), token.to_string());
    let wrong = "t120/jbo";
    let credentials = ["--lease", &lease_text, "--token", &token_text];
    server
        .cli(&[&["release", wrong][..], &credentials].concat())
        .expect_code(4);
    let failed = follower.next("release-failed", wrong, DELIVERY);
    assert_holder(&failed, lease, token);
    let detail = failed["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("no lock named"), "{failed}");
    assert!(detail.contains(job), "the nearby name is missing: {failed}");
    server
        .cli(&[&["release", job][..], &credentials].concat())
        .expect_code(0);
    assert_holder(&follower.next("released", job, DELIVERY), lease, token);

    phase("a 1 s lease expires and its lock is freed");
    let short = "t120/short";
    let (lease, token) = acquire(&server, short, "1s", &[]);
    assert_holder(&follower.next("acquired", short, DELIVERY), lease, token);
    assert_holder(&follower.next("expired", short, EXPIRY), lease, token);

    phase("a fenced holder is force-released; the reason is in the detail");
    let fenced = "t120/fenced";
    let (lease, token) = acquire(&server, fenced, "30s", &["--fenced"]);
    assert_holder(&follower.next("acquired", fenced, DELIVERY), lease, token);
    let token_text = token.to_string();
    server
        .cli(&[
            "force-release",
            fenced,
            "--token",
            &token_text,
            "--reason",
            REASON,
        ])
        .expect_code(0);
    let forced = follower.next("force-released", fenced, DELIVERY);
    assert_holder(&forced, lease, token);
    assert!(
        forced["detail"].as_str().unwrap().contains(REASON),
        "{forced}"
    );

    phase("a waiter queued behind a holder times out after 1 s");
    let busy = "t120/busy";
    let (lease, token) = acquire(&server, busy, "30s", &[]);
    assert_holder(&follower.next("acquired", busy, DELIVERY), lease, token);
    let waiter = server.ok_json(&["lease", "grant", "--ttl", "30s", "--json"]);
    let waiter_text = u64_of(&waiter, "lease").to_string();
    server
        .cli(&["acquire", busy, "--lease", &waiter_text, "--wait", "1s"])
        .expect_code(3);
    let timed_out = follower.next("waiter-timed-out", busy, DELIVERY);
    assert_holder(&timed_out, u64_of(&waiter, "lease"), 0);

    phase("revisions increase along the stream");
    // A refused release changes nothing: it carries the revision it saw.
    // Every other event here comes from a command of its own.
    let revisions: Vec<(u64, bool)> = follower
        .seen
        .iter()
        .map(|e| (u64_of(e, "revision"), e["kind"] == "release-failed"))
        .collect();
    for pair in revisions.windows(2) {
        let ((before, _), (after, refused)) = (pair[0], pair[1]);
        let increased = if refused {
            after >= before
        } else {
            after > before
        };
        assert!(increased, "revisions out of order: {revisions:?}");
    }
    assert_eq!(follower.seen.len(), 9, "extra events: {:?}", follower.seen);

    phase("without --follow: the remembered events of the prefix, as one array");
    let recent = server.ok_json(&["events", PREFIX, "--json"]);
    assert_eq!(recent, Value::Array(follower.seen.clone()));
    let others = server.ok_json(&["events", "other/", "--json"]);
    let others = others.as_array().expect("a JSON array");
    assert_eq!(others.len(), 1, "{others:?}");
    assert_eq!(others[0]["kind"], "acquired");
    assert_holder(&others[0], other_lease, other_token);
    let human = server.cli(&["events", PREFIX]);
    human.expect_code(0);
    assert_eq!(human.stdout.lines().count(), 9, "{}", human.stdout);
    assert!(
        human.stdout.contains(&format!("token={token}")),
        "{human:?}"
    );

    phase("a prefix longer than NAME_BYTES_MAX is a usage error naming it");
    let long = "p".repeat(leasehold_core::limits::NAME_BYTES_MAX + 1);
    let run = server.cli(&["events", &long, "--json"]);
    run.expect_code(2);
    assert!(run.stderr.contains("NAME_BYTES_MAX"), "{run:?}");
    // Issue 15: a --json failure prints its error as JSON on stdout too.
    assert_eq!(run.json()["error"]["exit"], 2, "{run:?}");

    phase("SIGTERM ends the follower with exit 0");
    let pid = follower.child.id() as libc::pid_t;
    // SAFETY: sends a signal to our own child, which has not been reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    finish(follower.child, "events --follow after SIGTERM", EXIT).expect_code(0);
}

/// Bound on a follower noticing a frozen server: ping interval 5 s +
/// ping timeout 5 s, plus slack.
const FROZEN_NOTICED: Duration = Duration::from_secs(30);

#[test]
fn t120_follower_of_a_frozen_server_exits_unavailable() {
    let server = Server::start();
    let mut follower = Follower::start(&server, "frozen/");
    let (lease, token) = acquire(&server, "frozen/a", "30s", &[]);
    // The follower's stream is up: it printed the grant.
    assert_holder(
        &follower.next("acquired", "frozen/a", DELIVERY),
        lease,
        token,
    );

    phase("SIGSTOP the server: the connection stays open, nothing answers");
    server.signal(libc::SIGSTOP);
    let started = std::time::Instant::now();
    let code = wait_for("the follower to give up", FROZEN_NOTICED, || {
        follower.child.try_wait().expect("poll follower")
    });
    eprintln!(
        "measured: follower exited {:?} after SIGSTOP",
        started.elapsed()
    );
    server.signal(libc::SIGCONT);
    let out = follower.child.wait_with_output().expect("collect output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code.code(), Some(5), "{stderr}");
    assert!(
        stderr.contains("lost the connection") && stderr.contains("reconnect"),
        "{stderr}"
    );
}
