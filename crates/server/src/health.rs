//! `grpc.health.v1.Health` on the client port, for Kubernetes `grpc:` probes
//! and any gRPC health checker. It follows readiness: the overall service
//! (`""`) and each public service report `SERVING` exactly when `/readyz`
//! answers 200 (both ask [`crate::http::readiness`]) and `NOT_SERVING`
//! otherwise. Readiness changes with Raft's state and also with time alone,
//! so a task re-evaluates it on every change of the Raft metrics and every
//! [`RECHECK_INTERVAL`], and publishes only changes, so a `Watch` stream
//! sees each transition once.

use crate::api::Node;
use crate::http::readiness;
use leasehold_proto::v1::{
    cluster_server, fenced_store_server, lease_server, lock_server, watch_server,
};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::server::{health_reporter, HealthReporter};
use tonic_health::ServingStatus;

/// The longest a readiness change that no Raft metric announces (one that
/// comes with time alone) waits before the health service reports it.
pub(crate) const RECHECK_INTERVAL: Duration = Duration::from_millis(500);

/// The services whose health is reported: the server as a whole (`""`) and
/// each public service. The internal Raft transport is not reported.
pub(crate) const SERVICES: [&str; 6] = [
    "",
    lease_server::SERVICE_NAME,
    lock_server::SERVICE_NAME,
    cluster_server::SERVICE_NAME,
    watch_server::SERVICE_NAME,
    fenced_store_server::SERVICE_NAME,
];

/// The health service, its statuses set from readiness now and kept
/// following it until `stop` turns true.
pub(crate) async fn service(
    node: Arc<Node>,
    stop: watch::Receiver<bool>,
    told: Option<Arc<watch::Sender<bool>>>,
) -> HealthServer<impl Health> {
    let (reporter, server) = health_reporter();
    let ready = readiness(&node).is_ok();
    let follower = Follower { reporter, told };
    follower.publish(ready).await;
    tokio::spawn(follow(node, follower, ready, stop));
    server
}

/// Where readiness goes: the health service, and whoever asked to be told
/// (`ServeConfig::readiness`).
struct Follower {
    reporter: HealthReporter,
    told: Option<Arc<watch::Sender<bool>>>,
}

impl Follower {
    async fn publish(&self, ready: bool) {
        publish(&self.reporter, ready).await;
        if let Some(told) = &self.told {
            told.send_replace(ready);
        }
    }
}

/// Re-evaluates readiness on each Raft metrics change and every
/// [`RECHECK_INTERVAL`], publishing changes, until the server stops.
async fn follow(
    node: Arc<Node>,
    follower: Follower,
    mut ready: bool,
    mut stop: watch::Receiver<bool>,
) {
    let mut raft_metrics = node.raft.metrics();
    let mut raft_running = true;
    loop {
        tokio::select! {
            changed = raft_metrics.changed(), if raft_running => {
                // Raft has stopped: the server is stopping, or a failed
                // fsync stopped it and the server serves on (reads): keep
                // following readiness on the timer.
                raft_running = changed.is_ok();
            }
            () = tokio::time::sleep(RECHECK_INTERVAL) => {}
            _ = stop.wait_for(|stopping| *stopping) => return,
        }
        let now = readiness(&node).is_ok();
        if now != ready {
            tracing::info!(serving = now, "gRPC health changed with readiness");
            follower.publish(now).await;
            ready = now;
        }
    }
}

async fn publish(reporter: &HealthReporter, ready: bool) {
    let status = if ready {
        ServingStatus::Serving
    } else {
        ServingStatus::NotServing
    };
    for service in SERVICES {
        reporter.set_service_status(service, status).await;
    }
}
