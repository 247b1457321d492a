//! Unit tests of [`super::Plan`]: every flag check and default.

use super::super::args::parse;
use super::*;

fn plan(args: &[&str]) -> anyhow::Result<Plan> {
    Plan::new(&parse(args).expect("parses"))
}
#[test]
fn defaults() {
    let p = plan(&["--workload", "contended", "--clients", "16"]).unwrap();
    assert_eq!(p.keys, 1);
    assert_eq!(p.seconds, 10);
    assert_eq!(p.connections, 4);
    assert_eq!(p.inflight, 1);
    let p = plan(&["--workload", "keepalive", "--clients", "2"]).unwrap();
    assert_eq!(p.connections, 2);
    assert_eq!(p.inflight, 4);
    let p = plan(&["--workload", "uncontended", "--clients", "8", "--keys", "3"]).unwrap();
    assert_eq!(p.keys, 8, "uncontended: one key per client");
}

#[test]
fn endpoints_are_normalized() {
    let p = plan(&[
        "--workload",
        "uncontended",
        "--clients",
        "1",
        "--endpoints",
        "127.0.0.1:1, http://h:2,",
    ])
    .unwrap();
    assert_eq!(p.endpoints, vec!["http://127.0.0.1:1", "http://h:2"]);
}

#[test]
fn all_flags() {
    let a = parse(&[
        "--endpoints",
        "http://x:1",
        "--workload",
        "keepalive",
        "--clients",
        "64",
        "--keys",
        "2",
        "--seconds",
        "3",
        "--connections",
        "8",
        "--inflight",
        "16",
        "--json",
    ])
    .unwrap();
    assert!(a.json);
    let p = Plan::new(&a).unwrap();
    assert_eq!(
        (p.clients, p.seconds, p.connections, p.inflight),
        (64, 3, 8, 16)
    );
}

#[test]
fn rejects_zeros_with_clear_errors() {
    for (args, msg) in [
        (
            &["--workload", "uncontended", "--clients", "0"][..],
            "--clients must be at least 1",
        ),
        (
            &[
                "--workload",
                "uncontended",
                "--clients",
                "1",
                "--seconds",
                "0",
            ][..],
            "--seconds must be at least 1",
        ),
        (
            &["--workload", "contended", "--clients", "1", "--keys", "0"][..],
            "--keys must be at least 1",
        ),
        (
            &["--workload", "uncontended", "--clients", "1", "--keys", "0"][..],
            "--keys must be at least 1",
        ),
        (
            &[
                "--workload",
                "keepalive",
                "--clients",
                "1",
                "--inflight",
                "0",
            ][..],
            "--inflight must be at least 1",
        ),
        (
            &[
                "--workload",
                "keepalive",
                "--clients",
                "1",
                "--connections",
                "0",
            ][..],
            "--connections must be at least 1",
        ),
    ] {
        let err = plan(args).unwrap_err().to_string();
        assert!(err.contains(msg), "{args:?}: {err}");
    }
}

/// The hold workload's plan for `--leases` and `--locks` (either left
/// out when `None`).
fn hold(leases: Option<&str>, locks: Option<&str>) -> anyhow::Result<Plan> {
    let mut args = vec!["--workload", "hold", "--clients", "64"];
    args.extend(leases.map(|m| ["--leases", m]).into_iter().flatten());
    args.extend(locks.map(|n| ["--locks", n]).into_iter().flatten());
    plan(&args)
}

#[test]
fn hold_needs_a_shape_within_the_servers_limits() {
    let p = hold(Some("1000"), Some("1000")).unwrap();
    let shape = HoldShape {
        leases: 1000,
        locks: 1000,
    };
    assert_eq!(p.hold, Some(shape));
    assert_eq!(shape.total(), 1_000_000);
    for (leases, locks, message) in [
        (Some("2"), None, "needs --leases M and --locks N"),
        (Some("1"), Some("1025"), "LOCKS_PER_LEASE_MAX (got 1025)"),
        (Some("0"), Some("1"), "--leases must be 1..="),
    ] {
        let err = hold(leases, locks).unwrap_err().to_string();
        assert!(err.contains(message), "{leases:?} {locks:?}: {err}");
    }
    let p = plan(&[
        "--workload",
        "uncontended",
        "--clients",
        "1",
        "--locks",
        "9",
    ])
    .unwrap();
    assert_eq!(p.hold, None, "only the hold workload builds state");
}

#[test]
fn storm_builds_the_hold_shape_and_takes_a_ttl_within_the_limits() {
    let storm = |extra: &[&str]| {
        let mut args = vec!["--workload", "storm", "--clients", "8"];
        args.extend_from_slice(extra);
        plan(&args)
    };
    let p = storm(&["--leases", "10", "--locks", "5", "--ttl", "3"]).unwrap();
    let shape = HoldShape {
        leases: 10,
        locks: 5,
    };
    assert_eq!((p.hold, p.ttl), (Some(shape), Duration::from_secs(3)));
    let err = storm(&["--leases", "1"]).unwrap_err().to_string();
    assert!(
        err.contains("the storm workload needs --leases M and --locks N"),
        "{err}"
    );
    for ttl in ["0", "86401"] {
        let err = storm(&["--leases", "1", "--locks", "1", "--ttl", ttl]);
        let err = err.unwrap_err().to_string();
        assert!(err.contains("--ttl must be 1..=86400 seconds"), "{err}");
    }
}

#[test]
fn waiters_fit_the_queues_and_the_connections_and_take_a_wait() {
    let waiters = |extra: &[&str]| {
        let mut args = vec!["--workload", "waiters", "--clients", "100"];
        args.extend_from_slice(extra);
        plan(&args)
    };
    let p = waiters(&["--leases", "100", "--locks", "1000", "--connections", "98"]).unwrap();
    assert_eq!(p.hold.map(HoldShape::total), Some(100_000));
    assert_eq!(p.wait, Duration::from_secs(30), "the default wait");
    let p = waiters(&["--leases", "1", "--locks", "1", "--wait", "3"]).unwrap();
    assert_eq!(p.wait, Duration::from_secs(3));
    let err = waiters(&["--leases", "1025", "--locks", "1"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("WAITERS_PER_LOCK_MAX"), "{err}");
    let err = waiters(&["--leases", "100", "--locks", "1000", "--connections", "97"]);
    let err = err.unwrap_err().to_string();
    assert!(err.contains("pass --connections 98"), "{err}");
    let err = waiters(&["--leases", "1", "--locks", "1", "--wait", "0"]);
    let err = err.unwrap_err().to_string();
    assert!(err.contains("--wait must be 1..=3600 seconds"), "{err}");
    let p = plan(&[
        "--workload",
        "storm",
        "--clients",
        "1",
        "--leases",
        "1",
        "--locks",
        "1",
    ]);
    assert_eq!(
        p.unwrap().wait,
        Duration::ZERO,
        "only the waiters workload waits"
    );
}

#[test]
fn rejects_inconsistent_counts() {
    let err = plan(&["--workload", "contended", "--clients", "2", "--keys", "3"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("--keys (3) exceeds --clients (2)"), "{err}");
    let err = plan(&[
        "--workload",
        "uncontended",
        "--clients",
        "2",
        "--connections",
        "3",
    ])
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("--connections (3) exceeds --clients (2)"),
        "{err}"
    );
    let err = plan(&["--workload", "contended", "--clients", "5000"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("raise --keys"), "{err}");
    assert!(plan(&[
        "--workload",
        "contended",
        "--clients",
        "5000",
        "--keys",
        "5"
    ])
    .is_ok());
}
