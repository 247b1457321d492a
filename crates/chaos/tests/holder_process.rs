//! `pause-holder-process` in a run as CI makes it (in-process `run`, as
//! `crates/cli/tests/t230_chaos.rs` does, one 6 s window, ttl 2 s): the
//! holder processes are found, one is SIGSTOPped while it holds, its late
//! puts are refused, the merged history keeps every rule, and no holder
//! process is left once the run is over.

use leasehold_chaos::run::{run, RunSpec};
use std::path::PathBuf;
use std::time::Duration;

/// The `leasehold` binary the workspace build put beside this test's
/// directory (`target/<profile>/deps/..`).
fn leasehold_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("this test's path");
    let binary = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps")
        .join("leasehold");
    assert!(
        binary.is_file(),
        "no {}: build the workspace first (cargo build --workspace --all-targets)",
        binary.display()
    );
    binary
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_holder_process_is_refused_and_reaped() {
    let spec = RunSpec {
        nodes: 3,
        seconds: 6,
        seed: 16,
        faults: vec!["pause-holder-process".into()],
        workers: 8,
        locks: 4,
        ttl: Duration::from_millis(2_000),
        rate_max: 1.1,
        binary: leasehold_binary(),
        keep_dir: None,
    };
    let outcome = tokio::time::timeout(Duration::from_secs(120), run(&spec))
        .await
        .expect("the run ends within 2 minutes")
        .expect("the harness ran");
    let report = &outcome.report;
    assert_eq!(report.violations(), 0, "{}", report.text());
    let detail = &report.windows[0].detail;
    assert!(detail.starts_with("SIGSTOP of holder process"), "{detail}");
    assert!(detail.contains("after SIGCONT"), "{detail}");
    assert!(detail.contains("refused"), "{detail}");
    // Its puts and grants are in the merged history.
    let history = &outcome.history;
    assert!(history
        .ops
        .iter()
        .any(|op| op.args.contains("owner=holder-")));
    let pid: i32 = detail
        .split("(pid ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|pid| pid.parse().ok())
        .expect("the detail names the pid");
    // SAFETY: signal 0 only asks whether the process exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    assert!(!alive, "holder process {pid} outlived the run");
}
