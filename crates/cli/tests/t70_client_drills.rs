//! Client drills with a real server process and real client processes:
//! what `leasehold-client` promises when its process is paused, its lease
//! is revoked behind its back, or the server dies.
//!
//! - **Pause**: a holder stopped with SIGSTOP for longer than its ttl loses
//!   the lock to a second process; when it resumes, its very next `fence()`
//!   says lost before it writes, and the fenced resource, which keeps the
//!   highest token it accepted, takes no stale write and rejects exactly
//!   the one attempt the holder makes anyway.
//! - **Revoke**: `leasehold lease revoke` makes the holder's `lost()`
//!   resolve within one renewal interval (ttl/3) plus slack.
//! - **Force release**: an operator's plain `leasehold force-release` (the
//!   lease lives on) makes the holder's `lost()` resolve within one renewal
//!   interval plus slack, as `released_by_server`.
//! - **Server down**: after SIGKILL of the server, the holder is lost no
//!   later than its local deadline, and `fence()` never says Ok past it.
//!
//! # Worker processes without a binary target
//!
//! A worker is this test binary, re-executed (`std::env::current_exe()`)
//! with `--exact drill_worker_process --nocapture --ignored
//! --test-threads=1`, so it runs only [`drill_worker_process`], an ignored
//! test that reads its role from the `LEASEHOLD_DRILL*` variables (and
//! returns at once without them, as under a plain `cargo test -- --ignored`).
//! It reports each event as one `DRILL <KIND> ...` line on stdout, which the
//! test reads line by line to synchronise: no sleep stands in for an event.
//! The worker's side is the `worker` module at the end of this file; the
//! test's side (spawning, reading lines, signals) and the fenced resource
//! are in `common/drill.rs`.
//!
//! Times are compared on CLOCK_BOOTTIME, which the test and its workers
//! share, so a worker's own timestamps (`at_us=`) are checked against the
//! moment the test acted. The drills run one at a time: they measure time,
//! and three servers with their workers on two cores would blur it.

mod common;

use common::drill::resource::{Resource, WriteAttempt};
use common::drill::{boot_us, Line, Mode, Worker, WorkerSpec};
use common::{phase, Server};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Bound on a worker's start: process, connect, grant, acquire (queued
/// acquires add their wait).
const START: Duration = Duration::from_secs(20);
/// Bound on any other step of a worker.
const STEP: Duration = Duration::from_secs(5);
/// Scheduling slack on top of a promised latency: timer wake-ups, the
/// keep-alive round trip, a loaded two-core machine.
const SLACK: Duration = Duration::from_millis(500);

/// Serialises the drills (see the module doc).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The worker side of the drills, run in a re-executed copy of this binary.
#[test]
#[ignore = "a worker process for the drills; run by them, not alone"]
fn drill_worker_process() {
    if let Some(spec) = WorkerSpec::from_env() {
        common::drill_worker::run(spec);
    }
}

fn attempt(writer: &str, token: u64, accepted: bool) -> WriteAttempt {
    WriteAttempt {
        writer: writer.to_owned(),
        token,
        accepted,
    }
}

/// The guard's cancellation token had fired by the time `fence()`
/// reported the loss: whoever learns of a loss fires the token first.
fn assert_cancelled(lost: &Line) {
    assert_eq!(
        lost.field("cancelled_at_loss"),
        "true",
        "fence() reported the loss before the cancellation fired: {}",
        lost.text
    );
}

/// The worker kept asking `fence()` after the loss and never heard Ok
/// (it would have said so before its END line); then it exited cleanly.
fn assert_no_fence_ok_after_loss(worker: &mut Worker) {
    let end = worker.next_line(STEP);
    assert_eq!(
        end.kind, "END",
        "fence() said Ok after the loss: {}",
        end.text
    );
    assert!(worker.finish(STEP).success(), "the worker failed");
}

fn ms(line: &Line, key: &str) -> Duration {
    Duration::from_millis(line.u64(key))
}

#[test]
fn t70_paused_holder_is_fenced_off() {
    let _serial = one_at_a_time();
    let server = Server::start();
    let resource = Resource::start();
    let lock = "drills/pause";

    phase("worker 1 holds the lock and makes one protected write");
    let mut spec = WorkerSpec::new(Mode::Stubborn, &server.endpoint(), lock, "w1");
    spec.resource = Some(resource.addr);
    spec.gate_after_writes = Some(1);
    let mut w1 = Worker::spawn("worker 1", &spec);
    let holding1 = w1.expect("HOLDING", START);
    let (t1, ttl) = (holding1.u64("token"), ms(&holding1, "ttl_ms"));
    assert_eq!(w1.expect("WROTE", STEP).args, ["ACCEPTED"]);
    // Between two protected writes: after one, before the next fence().
    w1.expect("AT_GATE", STEP);

    phase("SIGSTOP worker 1; worker 2 queues and gets the lock at the server's expiry");
    let stopped_at = w1.pause(STEP);
    let mut spec = WorkerSpec::new(Mode::Once, &server.endpoint(), lock, "w2");
    spec.resource = Some(resource.addr);
    spec.wait = Duration::from_secs(10);
    let mut w2 = Worker::spawn("worker 2", &spec);
    let holding2 = w2.expect("HOLDING", START);
    let t2 = holding2.u64("token");
    assert!(
        t2 > t1,
        "worker 2's token {t2} is not above worker 1's {t1}"
    );
    assert_eq!(w2.expect("WROTE", STEP).args, ["ACCEPTED"]);
    w2.expect("DONE", STEP);
    assert!(w2.finish(STEP).success(), "worker 2 failed");
    let granted_after = holding2.at - stopped_at;
    assert!(w1.is_stopped(), "worker 1 ran during its pause");
    assert_eq!(
        resource.attempts(),
        [attempt("w1", t1, true), attempt("w2", t2, true)]
    );
    // The pause outlasts the ttl (worker 2 may get the lock up to one
    // renewal interval sooner, counted from worker 1's last renewal).
    std::thread::sleep((stopped_at + ttl + SLACK).saturating_duration_since(Instant::now()));

    phase("SIGCONT worker 1: its next fence() says lost, before any write");
    w1.signal(libc::SIGCONT);
    let paused = stopped_at.elapsed();
    w1.open_gate();
    let lost = w1.expect("LOST", STEP);
    assert_eq!(lost.args, ["deadline_reached"], "{}", lost.text);
    assert_cancelled(&lost);
    let stubborn = w1.expect("STUBBORN", STEP);
    assert_eq!(stubborn.u64("token"), t1);
    assert_eq!(stubborn.args, ["REJECTED"], "{}", stubborn.text);
    assert_eq!(stubborn.u64("highest"), t2);
    assert!(w1.finish(STEP).success(), "worker 1 failed");

    phase("the resource took no stale write and rejected exactly one");
    let attempts = resource.attempts();
    let taken_over = attempts
        .iter()
        .position(|a| a.writer == "w2" && a.accepted)
        .expect("worker 2 wrote");
    let stale = attempts[taken_over..]
        .iter()
        .filter(|a| a.writer == "w1" && a.accepted)
        .count();
    assert_eq!(stale, 0, "stale writes accepted: {attempts:?}");
    let rejected: Vec<_> = attempts.iter().filter(|a| !a.accepted).collect();
    assert_eq!(rejected, [&attempt("w1", t1, false)], "{attempts:?}");
    assert_eq!(attempts.len(), 3, "{attempts:?}");
    eprintln!(
        "measured: worker 2 granted {} ms after SIGSTOP (ttl {} ms); paused {} ms; \
         worker 1 lost {} ms after its last acknowledged keep-alive was sent",
        granted_after.as_millis(),
        ttl.as_millis(),
        paused.as_millis(),
        lost.field("since_last_ack_ms"),
    );
    eprintln!("measured: {}", lost.text);
}

/// A worker holds `lock` (ttl 3 s) and watches it; `take` takes the lock
/// away from the CLI. The worker must report the loss as `cause` within one
/// renewal interval (plus [`SLACK`]) of the moment `take` started, with its
/// cancellation fired, and never fence Ok after.
fn lost_within_one_interval(
    lock: &str,
    what: &str,
    cause: &str,
    take: impl FnOnce(&Server, &Line),
) {
    let _serial = one_at_a_time();
    let server = Server::start();

    phase("a worker holds the lock and watches it");
    let mut spec = WorkerSpec::new(Mode::Watch, &server.endpoint(), lock, "w1");
    spec.ttl = Duration::from_secs(3);
    let mut worker = Worker::spawn("watcher", &spec);
    let holding = worker.expect("HOLDING", START);
    let interval = ms(&holding, "interval_ms");
    worker.expect("FENCE_OK", STEP);

    phase(&format!("from the CLI: {what}"));
    let started_us = boot_us();
    take(&server, &holding);
    let returned_us = boot_us();
    let lost = worker.await_lost(interval + STEP);
    assert_eq!(lost.args, [cause], "{}", lost.text);
    assert_cancelled(&lost);
    let latency = Duration::from_micros(lost.u64("at_us").saturating_sub(started_us));
    assert!(
        latency <= interval + SLACK,
        "lost {latency:?} after {what} started; the bound is {interval:?} + {SLACK:?}"
    );
    assert_no_fence_ok_after_loss(&mut worker);
    eprintln!(
        "measured: lost {} ms after {what} started ({} ms after the CLI returned); \
         renewal interval {} ms",
        latency.as_millis(),
        lost.u64("at_us").saturating_sub(returned_us) / 1_000,
        interval.as_millis(),
    );
    eprintln!("measured: {}", lost.text);
}

#[test]
fn t70_revoked_lease_is_lost_within_one_renewal_interval() {
    let lock = "drills/revoke";
    let revoke = |server: &Server, holding: &Line| {
        let lease = holding.u64("lease").to_string();
        let revoked = server.ok_json(&["lease", "revoke", &lease, "--json"]);
        assert_eq!(revoked["released"], serde_json::json!([lock]), "{revoked}");
    };
    lost_within_one_interval(lock, "the revoke of its lease", "lease_not_found", revoke);
}

#[test]
fn t70_force_released_lock_is_lost_within_one_renewal_interval() {
    let lock = "drills/forced";
    let force_release = |server: &Server, holding: &Line| {
        let token = holding.u64("token").to_string();
        let args = [
            "force-release",
            lock,
            "--token",
            &token,
            "--reason",
            "drill",
        ];
        server.cli(&args).expect_code(0);
    };
    let what = "the force release (the lease lives on)";
    lost_within_one_interval(lock, what, "released_by_server", force_release);
}

#[test]
fn t70_server_down_is_lost_by_the_local_deadline() {
    let _serial = one_at_a_time();
    let mut server = Server::start();

    phase("a worker holds the lock and watches it");
    let spec = WorkerSpec::new(Mode::Watch, &server.endpoint(), "drills/down", "w1");
    let mut worker = Worker::spawn("watcher", &spec);
    let holding = worker.expect("HOLDING", START);
    let (ttl, margin) = (ms(&holding, "ttl_ms"), ms(&holding, "margin_ms"));
    let interval = ms(&holding, "interval_ms");
    // Kill in the steady state: once a keep-alive (not the grant) has set
    // the deadline, which shows as the time left going up.
    let mut left_ms = worker.expect("FENCE_OK", STEP).u64("left_ms");
    loop {
        let line = worker.expect("FENCE_OK", interval + STEP);
        if line.u64("left_ms") > left_ms {
            break;
        }
        left_ms = line.u64("left_ms");
    }

    phase("SIGKILL the server");
    let killed_at = Instant::now();
    server.kill9();
    let killed_us = boot_us();
    // Every keep-alive was acknowledged before the server died, so its
    // send time, plus ttl − margin, bounds the local deadline from above.
    let deadline_bound_us = killed_us + (ttl - margin).as_micros() as u64;

    let mut last_ok_us = 0;
    let lost = loop {
        let line = worker.next_line(ttl + STEP);
        match line.kind.as_str() {
            "FENCE_OK" => {
                let asked_us = line.u64("at_us");
                assert!(
                    asked_us < deadline_bound_us,
                    "fence() said Ok {} µs past the deadline bound",
                    asked_us - deadline_bound_us
                );
                last_ok_us = last_ok_us.max(asked_us);
            }
            "LOST" => break line,
            _ => panic!("unexpected line {:?}", line.text),
        }
    };
    assert_eq!(lost.args, ["deadline_reached"], "{}", lost.text);
    assert_cancelled(&lost);
    let lost_us = lost.u64("at_us");
    let late_us = lost_us.saturating_sub(deadline_bound_us);
    assert!(
        Duration::from_micros(late_us) <= SLACK,
        "lost {late_us} µs after the deadline bound"
    );
    let seen_after = lost.at - killed_at;
    assert!(
        seen_after <= ttl + SLACK,
        "the loss was reported {seen_after:?} after SIGKILL"
    );
    assert_no_fence_ok_after_loss(&mut worker);
    eprintln!(
        "measured: lost {} ms after SIGKILL (line read {} ms after); last fence() Ok \
         {} ms after SIGKILL; {} ms after the last acknowledged keep-alive was sent; \
         ttl {} ms, margin {} ms",
        lost_us.saturating_sub(killed_us) / 1_000,
        seen_after.as_millis(),
        last_ok_us.saturating_sub(killed_us) / 1_000,
        lost.field("since_last_ack_ms"),
        ttl.as_millis(),
        margin.as_millis(),
    );
    eprintln!("measured: {}", lost.text);
}
