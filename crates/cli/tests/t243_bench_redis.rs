//! `leasehold bench --target redis`: the uncontended workload against a
//! real Redis (the one `.ci/run` starts), so the comparison the scale
//! issue asks for runs in one command. The report names Redis, its version
//! and fsync policy; every cycle (SET NX PX + compare-and-delete) succeeds
//! on an uncontended key. The rates are the benchmark's, never asserted.

mod common;

use common::{command_to, u64_of, Run};

fn redis_addr() -> Option<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(leasehold_testkit::redis::addr())
}

#[test]
fn t243_redis_target_runs_the_uncontended_cycle_and_names_the_server() {
    let Some(addr) = redis_addr() else { return };
    let args = [
        "bench",
        "--target",
        "redis",
        "--workload",
        "uncontended",
        "--clients",
        "4",
        "--seconds",
        "1",
        "--json",
    ];
    let report = Run::of(command_to(&addr, &args), &args)
        .expect_code(0)
        .json();
    assert_eq!(report["target"], "redis", "{report}");
    let version = report["target_version"].as_str().unwrap_or_default();
    assert!(
        version.starts_with(|c: char| c.is_ascii_digit()),
        "{report}"
    );
    let setup = report["target_setup"].as_str().unwrap_or_default();
    assert!(setup.contains("appendfsync "), "{report}");
    assert_eq!(
        u64_of(&report, "connections"),
        4,
        "one per client: {report}"
    );
    assert!(u64_of(&report, "cycles") > 0, "{report}");
    assert_eq!(u64_of(&report, "errors"), 0, "{report}");
}

#[test]
fn t243_redis_target_refuses_what_it_cannot_compare() {
    for (endpoint, workload, says) in [
        (
            "127.0.0.1:1",
            "keepalive",
            "--target redis runs the uncontended workload",
        ),
        (
            "http://127.0.0.1:7420",
            "uncontended",
            "HOST:PORT of a Redis server",
        ),
    ] {
        let args = [
            "bench",
            "--target",
            "redis",
            "--workload",
            workload,
            "--clients",
            "1",
        ];
        let run = Run::of(command_to(endpoint, &args), &args);
        run.expect_code(2);
        assert!(run.stderr.contains(says), "{}", run.stderr);
    }
}
