//! The fault-injection harness (`crates/chaos`) in CI: a short schedule of
//! every fault against a real 3-node cluster of this build's `leasehold`,
//! the recorded history checked against every property. It must find no
//! violation and every window must have done work. And the harness must be
//! able to fail: with every node's clock 1.5 times as fast (beyond the
//! documented bound), the locks of holders that stalled past their ttl are
//! granted while those holders may still be writing, and the checker says so
//! (and only through the two rules that rely on the clock bound).

use leasehold_chaos::check::{self, Violation};
use leasehold_chaos::fault;
use leasehold_chaos::run::{run, RunSpec};
use std::time::Duration;

/// Seconds per fault window (60 % with the fault in force, then recovery).
const SECONDS_PER_FAULT: u64 = 6;

/// A 3-node run of `faults` with 8 workers on 4 locks, ttl 2 s, and the
/// documented clock bound.
fn spec(faults: Vec<String>, seconds: u64, seed: u64) -> RunSpec {
    RunSpec {
        nodes: 3,
        seconds,
        seed,
        faults,
        workers: 8,
        locks: 4,
        ttl: Duration::from_millis(2_000),
        rate_max: 1.1,
        binary: env!("CARGO_BIN_EXE_leasehold").into(),
        keep_dir: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t230_every_fault_keeps_every_property() {
    let faults = fault::parse("all").expect("all faults");
    let seconds = SECONDS_PER_FAULT * faults.len() as u64;
    let outcome = run(&spec(faults.clone(), seconds, 230))
        .await
        .expect("the harness ran");
    let report = &outcome.report;
    eprintln!("{}", report.text());
    assert_eq!(report.violations(), 0, "{}", report.text());
    let reported: Vec<&str> = report.windows.iter().map(|w| w.fault.as_str()).collect();
    assert_eq!(reported, faults, "one window per fault, in order");
    for window in &report.windows {
        assert!(window.ops > 0, "no operation in window {}", window.fault);
    }
    let json = report.json();
    assert_eq!(json["ops"].as_u64(), Some(report.ops()));
    assert_eq!(json["violations"].as_u64(), Some(0));
    let windows = json["faults"].as_array().expect("faults is an array");
    assert_eq!(windows.len(), faults.len());
    for (window, name) in windows.iter().zip(&faults) {
        assert_eq!(window["fault"].as_str(), Some(name.as_str()));
        assert!(window["ops"].as_u64().is_some_and(|ops| ops > 0));
        for property in check::PROPERTIES {
            assert_eq!(window["violations"][property].as_u64(), Some(0), "{window}");
        }
    }

    let history = &outcome.history;
    assert!(
        !history.holds.is_empty() && !history.puts.is_empty() && !history.lock_reads.is_empty()
    );
    assert!(!history.probes.is_empty(), "the partitions were probed");

    let passed_on: usize = report.windows.iter().map(|w| w.liveness.passed_on).sum();
    assert!(
        passed_on > 0,
        "stalled holders' locks passed on: {}",
        report.text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t230_clocks_beyond_the_bound_are_caught_as_early_grants() {
    let faults = vec!["clock-fast-beyond".to_owned()];
    let outcome = run(&spec(faults, 16, 231)).await.expect("the harness ran");
    let report = &outcome.report;
    eprintln!("{}", report.text());
    let found: Vec<&Violation> = report.windows.iter().flat_map(|w| &w.violations).collect();
    assert!(
        found
            .iter()
            .any(|v| matches!(v, Violation::EarlyGrant { .. })),
        "a server clock 1.5x fast grants stalled holders' locks early: {}",
        report.text()
    );
    // The only rules that lean on the clock bound: when a lease may end
    // (early grants), and so when a holder must still show (views).
    let clock_bound = ["no-early-grant", "linearizable-reads"];
    assert!(
        found.iter().all(|v| clock_bound.contains(&v.property())),
        "only the rules that rely on the clock bound break under a fast clock: {}",
        report.text()
    );
}
