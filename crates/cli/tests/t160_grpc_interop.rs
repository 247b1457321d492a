//! Leasehold through other languages' standard gRPC tooling, against real
//! `leasehold serve` processes.
//!
//! - **Python** (`tests/python/interop.py`, with PyPI's grpcio,
//!   grpcio-status, grpcio-health-checking and grpcio-reflection): real
//!   errors read with `grpc_status.rpc_status.from_call` (google.rpc.Status,
//!   ErrorInfo reason/domain/fields, the packed ErrorDetail), health
//!   `SERVING`, reflection listing the public services and not
//!   `RaftTransport`, messages built from reflection's descriptors.
//!   The interpreter is `LEASEHOLD_TEST_PYTHON` (`.ci/run` makes a
//!   virtualenv and sets it). Under `CI=true` a missing interpreter or
//!   package FAILS the test; outside CI it tries the virtualenv `.ci/run`
//!   makes, then `python3`, and without the packages prints a loud notice
//!   and returns.
//! - **Health follows readiness over time**: in a two-node cluster, the
//!   follower's `grpc.health.v1.Health` Watch stream turns `NOT_SERVING`
//!   when the leader is killed (no leader can be elected) and `SERVING`
//!   again when it returns, and `/readyz` agrees at each step.

mod common;

#[path = "../../server/tests/support/prometheus.rs"]
mod prometheus;

use common::cluster::{one_at_a_time, Cluster, LEADER_TIMEOUT};
use common::{finish, phase, Server};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

/// The script the foreign client runs.
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/interop.py");

/// Bound on the whole script (each of its calls has a 10 s deadline).
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(120);

/// The modules the script imports, to tell whether an interpreter has them.
const IMPORTS: &str = "import grpc, grpc_status, grpc_health.v1, grpc_reflection.v1alpha";

/// Where `.ci/run` makes the virtualenv, under `$HOME`.
const CI_VENV_PYTHON: &str = ".cache/leasehold/python-grpc/bin/python";

/// What the health service reports on: the server as a whole and each
/// public service.
const PUBLIC_SERVICES: [&str; 6] = [
    "",
    "leasehold.v1.Lease",
    "leasehold.v1.Lock",
    "leasehold.v1.Cluster",
    "leasehold.v1.Watch",
    "leasehold.v1.FencedStore",
];

/// Bound on a follower noticing that its leader is gone (election timeouts
/// are 0.5–1 s; readiness is re-checked every 0.5 s at the latest).
const NOT_SERVING_TIMEOUT: Duration = Duration::from_secs(10);

#[test]
fn t160_python_reads_errors_health_and_reflection() {
    let Some(python) = python() else { return };
    let server = Server::start();

    phase("the Python client reads errors, health and reflection");
    let target = format!("127.0.0.1:{}", server.port);
    let started = Instant::now();
    let child = Command::new(&python)
        .arg(SCRIPT)
        .arg(&target)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let run = finish(child, "python interop.py", SCRIPT_TIMEOUT);
    eprintln!("the script ran in {:?}", started.elapsed());
    assert_eq!(
        run.code, 0,
        "interop.py failed\n--- stdout ---\n{}\n--- stderr ---\n{}",
        run.stdout, run.stderr
    );
    for line in [
        "ok: reflection v1alpha lists the public services",
        "ok: reflection v1 lists the public services",
        "ok: reflection does not describe leasehold.v1.RaftTransport",
        "ok: release under an unknown lease: NOT_FOUND, ErrorInfo LeaseNotFound",
        "ok: acquire of a held lock without waiting: FAILED_PRECONDITION, ErrorInfo Busy",
        "ok: acquire of an over-long name: INVALID_ARGUMENT, ErrorInfo InvalidArgument",
        "ok: health of '' is SERVING",
        "interop: 8 checks passed",
    ] {
        assert!(run.stdout.contains(line), "no {line:?} in:\n{}", run.stdout);
    }
}

/// The interpreter to run the script with (see the module doc), or `None`
/// after a loud notice.
fn python() -> Option<PathBuf> {
    let wanted = leasehold_testkit::python::Wanted {
        variable: "LEASEHOLD_TEST_PYTHON",
        venv_python: CI_VENV_PYTHON,
        imports: IMPORTS,
        install: "crates/cli/tests/python/requirements.txt",
    };
    leasehold_testkit::python::interpreter(wanted, "t160_python_reads_errors_health_and_reflection")
}

#[test]
fn t160_health_follows_readiness() {
    let _serial = one_at_a_time();
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let mut cluster = Cluster::start(2);
    let (leader, _) = cluster.leader();
    let follower = if leader == 1 { 2 } else { 1 };
    let endpoint = cluster.endpoint(follower);

    phase("the follower is ready: /readyz 200, health SERVING, and a Watch starts SERVING");
    let channel = tonic::transport::Endpoint::from_shared(endpoint.clone()).expect("endpoint");
    let mut health = HealthClient::new(
        runtime
            .block_on(channel.connect())
            .expect("connect to the follower"),
    );
    assert_health(&runtime, &mut health, ServingStatus::Serving);
    assert_ready(&runtime, &endpoint, true);
    let mut watch = runtime
        .block_on(health.watch(HealthCheckRequest { service: "".into() }))
        .expect("watch")
        .into_inner();
    let next = |watch: &mut tonic::Streaming<_>, limit: Duration| {
        let answer = runtime.block_on(async { tokio::time::timeout(limit, watch.message()).await });
        let answer: tonic_health::pb::HealthCheckResponse = answer
            .unwrap_or_else(|_| panic!("no health change within {limit:?}"))
            .expect("the Watch stream failed")
            .expect("the Watch stream ended");
        ServingStatus::try_from(answer.status).expect("a known serving status")
    };
    assert_eq!(next(&mut watch, LEADER_TIMEOUT), ServingStatus::Serving);

    phase("kill -9 the leader: the follower has no leader, so it is not ready");
    let killed = Instant::now();
    cluster.kill9(leader);
    assert_eq!(
        next(&mut watch, NOT_SERVING_TIMEOUT),
        ServingStatus::NotServing
    );
    eprintln!(
        "measured: the follower's health turned NOT_SERVING {:?} after the leader was killed",
        killed.elapsed()
    );
    assert_ready(&runtime, &endpoint, false);
    assert_health(&runtime, &mut health, ServingStatus::NotServing);

    phase("restart the old leader: a leader is elected and the follower SERVES again");
    let restarted = Instant::now();
    cluster.restart(leader);
    assert_eq!(next(&mut watch, LEADER_TIMEOUT), ServingStatus::Serving);
    eprintln!(
        "measured: SERVING again {:?} after the restart began",
        restarted.elapsed()
    );
    assert_ready(&runtime, &endpoint, true);
}

/// Asserts what `Check` answers now for the server and each public service.
fn assert_health(
    runtime: &tokio::runtime::Runtime,
    health: &mut HealthClient<tonic::transport::Channel>,
    expected: ServingStatus,
) {
    for service in PUBLIC_SERVICES {
        let status = runtime.block_on(check(health, service));
        assert_eq!(status, expected, "health of {service:?}");
    }
}

async fn check(
    health: &mut HealthClient<tonic::transport::Channel>,
    service: &str,
) -> ServingStatus {
    let request = HealthCheckRequest {
        service: service.into(),
    };
    let answer = health.check(request).await.expect("health check");
    ServingStatus::try_from(answer.into_inner().status).expect("a known serving status")
}

/// Asserts what `/readyz` answers now.
fn assert_ready(runtime: &tokio::runtime::Runtime, endpoint: &str, ready: bool) {
    let (status, body) = runtime.block_on(prometheus::http_get(endpoint, "/readyz"));
    if ready {
        assert_eq!(status, 200, "/readyz: {body}");
    } else {
        assert_eq!(status, 503, "/readyz: {body}");
        assert!(body.starts_with("not ready: "), "/readyz: {body}");
    }
}
