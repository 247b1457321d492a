//! `leasehold diagnose` against real holders: each verdict comes from a
//! scenario built with real processes, never from a made-up lock.
//!
//! - **Live renewer vs orphan**: two `leasehold lock` holders with the same
//!   ttl; one is SIGSTOPped. Sampled a renewal interval apart, the running
//!   one is `healthy` (renewed, deadline moved outward) and the stopped one
//!   is `orphaned` (countdown static) — its process still exists, so it is
//!   not `owner-gone`.
//! - **Owner gone**: `leasehold acquire` holds a lock and exits: its pid is
//!   not running here.
//! - **Wrong-key release**: a `lock` holder's command releases a name that
//!   lost its `prod/` prefix (`reports/nightly` for `prod/reports/nightly`):
//!   the release fails, the server remembers it, and diagnose names both.
//! - **Renewing past work**: after short holds under `work/`, a holder
//!   renews far beyond their p99.
//! - **Starving waiters**: a waiter queued behind a live holder for more
//!   than 3 × ttl.
//! - **Clock skew**: a server whose wall clock reads 30 s behind ours.

mod common;

use common::{phase, u64_of, wait_for, Server, BIN};
use serde_json::Value;
use std::path::Path;
use std::process::Child;
use std::time::Duration;

/// Bound on a holder's start (process, grant, acquire).
const START: Duration = Duration::from_secs(20);

/// Background `leasehold` processes, resumed and killed when dropped.
#[derive(Default)]
struct Holders(Vec<Child>);

impl Holders {
    fn spawn(&mut self, server: &Server, args: &[&str]) -> u32 {
        let child = server.spawn(args);
        let pid = child.id();
        self.0.push(child);
        pid
    }
}

impl Drop for Holders {
    fn drop(&mut self) {
        for child in &mut self.0 {
            unsafe { libc::kill(child.id() as i32, libc::SIGCONT) };
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `leasehold diagnose PREFIX --interval I --json`, as an array.
fn diagnose(server: &Server, prefix: &str, interval: &str) -> Vec<Value> {
    let run = server.cli(&["diagnose", prefix, "--interval", interval, "--json"]);
    let found = run.json().as_array().expect("an array").clone();
    // Issue 15: diagnose exits 8 when any verdict is not healthy, else 0.
    let unhealthy = found.iter().any(|d| d["verdict"] != "healthy");
    run.expect_code(if unhealthy { 8 } else { 0 });
    found
}

/// The entry for `lock`.
fn entry<'a>(found: &'a [Value], lock: &str) -> &'a Value {
    found
        .iter()
        .find(|d| d["lock"] == lock)
        .unwrap_or_else(|| panic!("no verdict for {lock} in {found:#?}"))
}

fn findings(entry: &Value) -> Vec<&str> {
    entry["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect()
}

fn evidence(entry: &Value) -> String {
    let lines: Vec<&str> = entry["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    lines.join("\n")
}

/// Waits until `name` is held and returns its token.
fn await_held(server: &Server, name: &str) -> u64 {
    wait_for(&format!("{name} to be held"), START, || {
        let run = server.cli(&["get", name, "--json"]);
        (run.code == 0 && run.json()["held"] == true).then(|| u64_of(&run.json(), "token"))
    })
}

#[test]
fn t140_live_renewer_orphan_gone_owner_and_wrong_key_release() {
    let server = Server::start();
    let mut holders = Holders::default();
    let marker = tempfile::tempdir().unwrap();
    let released = marker.path().join("released");

    phase("two renewing holders (ttl 9s: a renewal every 3s), one acquire-and-exit holder");
    holders.spawn(
        &server,
        &["lock", "diag/live", "--ttl", "9s", "--", "sleep", "120"],
    );
    let stopped = holders.spawn(
        &server,
        &["lock", "diag/stopped", "--ttl", "9s", "--", "sleep", "120"],
    );
    // The owner `acquire` records is its invoking process (issue 15): name
    // one that then ends, as a script that acquired and exited would.
    let mut owner = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .expect("spawn sleep");
    let owner_pid = owner.id().to_string();
    let gone = server.ok_json(&[
        "acquire",
        "diag/gone",
        "--ttl",
        "60s",
        "--owner-pid",
        &owner_pid,
        "--json",
    ]);
    owner.kill().expect("kill the owner");
    owner.wait().expect("reap the owner");

    phase("a holder's command releases the wrong key: reports/nightly for prod/reports/nightly");
    let script = format!(
        "{BIN} --endpoints {} release diag/reports/nightly --lease \"$LEASEHOLD_LEASE\" --token \"$LEASEHOLD_TOKEN\"; touch {}; exec sleep 120",
        server.endpoint(),
        released.display()
    );
    let args = [
        "lock",
        "diag/prod/reports/nightly",
        "--ttl",
        "9s",
        "--",
        "sh",
        "-c",
        &script,
    ];
    holders.spawn(&server, &args);
    for name in ["diag/live", "diag/stopped", "diag/prod/reports/nightly"] {
        await_held(&server, name);
    }
    wait_for("the wrong-key release to be sent", START, || {
        Path::new(&released).exists().then_some(())
    });

    phase(
        "SIGSTOP the renewer of diag/stopped; sample 3.5s apart (more than one renewal interval)",
    );
    assert_eq!(unsafe { libc::kill(stopped as i32, libc::SIGSTOP) }, 0);
    let found = diagnose(&server, "diag/", "3500ms");
    eprintln!("{found:#?}");

    let live = entry(&found, "diag/live");
    assert_eq!(live["verdict"], "healthy", "{live:#}");
    assert!(evidence(live).contains("deadline moved"), "{live:#}");

    let orphan = entry(&found, "diag/stopped");
    assert_eq!(orphan["verdict"], "orphaned", "{orphan:#}");
    assert!(
        !findings(orphan).contains(&"owner-gone"),
        "a stopped process still exists: {orphan:#}"
    );
    let facts = evidence(orphan);
    assert!(
        facts.contains("static") && facts.contains("will expire in"),
        "{facts}"
    );
    assert!(
        orphan["advice"]
            .as_str()
            .unwrap()
            .contains("force-release diag/stopped"),
        "{orphan:#}"
    );

    let gone_entry = entry(&found, "diag/gone");
    assert_eq!(gone_entry["verdict"], "owner-gone", "{gone_entry:#}");
    assert_eq!(gone_entry["token"], gone["token"]);
    assert!(
        evidence(gone_entry).contains("no such process on this host"),
        "{gone_entry:#}"
    );

    let wrong = entry(&found, "diag/prod/reports/nightly");
    assert_eq!(wrong["verdict"], "wrong-key-release", "{wrong:#}");
    let facts = evidence(wrong);
    assert!(
        facts.contains("\"diag/reports/nightly\"")
            && facts.contains("\"diag/prod/reports/nightly\""),
        "both names are printed: {facts}"
    );
    assert!(facts.contains("running on this host"), "{facts}");

    assert!(
        found.iter().all(|d| d["verdict"] != "clock-skew"),
        "same host, same clock: {found:#?}"
    );

    phase("the human form says the same");
    let run = server.cli(&["diagnose", "diag/", "--interval", "1s"]);
    // Issue 15: unhealthy locks (these) make diagnose exit 8, not 0.
    run.expect_code(8);
    for shown in [
        "diag/gone  OWNER-GONE",
        "diag/prod/reports/nightly  WRONG-KEY-RELEASE",
        "what to do:",
    ] {
        assert!(run.stdout.contains(shown), "{shown:?} missing: {run:?}");
    }
}

#[test]
fn t140_renewing_past_work_and_starving_waiters() {
    let server = Server::start();
    let mut holders = Holders::default();

    phase("eight short holds under work/ set its usual hold time");
    for i in 0..8 {
        let name = format!("work/job-{i}");
        server
            .cli(&["lock", &name, "--ttl", "5s", "--", "true"])
            .expect_code(0);
    }

    phase("a holder under work/ renews far past that; a waiter starves behind starve/held");
    holders.spawn(
        &server,
        &["lock", "work/stuck", "--ttl", "3s", "--", "sleep", "120"],
    );
    holders.spawn(
        &server,
        &["lock", "starve/held", "--ttl", "2s", "--", "sleep", "120"],
    );
    await_held(&server, "starve/held");
    holders.spawn(
        &server,
        &["acquire", "starve/held", "--ttl", "30s", "--wait", "60s"],
    );

    let stuck = wait_for("work/stuck to be renewing past its work", START, || {
        let found = diagnose(&server, "work/stuck", "1s");
        let stuck = found.into_iter().find(|d| d["lock"] == "work/stuck")?;
        (stuck["verdict"] == "renewing-past-work").then_some(stuck)
    });
    eprintln!("{stuck:#}");
    let facts = evidence(&stuck);
    assert!(
        facts.contains("holds under \"work/\" usually end within"),
        "{facts}"
    );
    assert!(facts.contains("p99 of the last 8"), "{facts}");

    let starving = wait_for("the waiter on starve/held to starve", START, || {
        let found = diagnose(&server, "starve/", "1s");
        let held = found.into_iter().find(|d| d["lock"] == "starve/held")?;
        (held["verdict"] == "starving-waiters").then_some(held)
    });
    eprintln!("{starving:#}");
    assert!(
        evidence(&starving).contains("more than 3 × the holder's ttl 2s"),
        "{starving:#}"
    );
}

#[test]
fn t140_clock_skew_is_reported_and_never_used_for_expiry() {
    let server = Server::start_with_env(&[("LEASEHOLD_WALL_CLOCK_OFFSET_MS", "-30000")]);
    let held = server.ok_json(&["acquire", "skew/a", "--ttl", "60s", "--json"]);
    let found = diagnose(&server, "skew/", "1s");
    let skew = found
        .iter()
        .find(|d| d["verdict"] == "clock-skew")
        .unwrap_or_else(|| panic!("no clock-skew in {found:#?}"));
    assert!(skew["lock"].is_null());
    let facts = evidence(skew);
    assert!(facts.contains("behind this host's"), "{facts}");
    phase("the 60s lease is still held: wall time is display-only");
    let lock = server.ok_json(&["get", "skew/a", "--json"]);
    assert_eq!(lock["token"], held["token"]);
    assert!(u64_of(&lock, "lease_remaining_ms") > 50_000, "{lock}");
}
