//! Snapshots bound the log: after enough entries the node snapshots and
//! purges, and a restart recovers the state from the snapshot plus the log
//! after it — holders keep their tokens and new tokens are higher.

use leasehold_proto::v1::cluster_client::ClusterClient;
use leasehold_proto::v1::{StatusRequest, StatusResponse};
use leasehold_testkit::grpc::{acquire_now, grant, release};
use leasehold_testkit::{eventually, TestServer};
use std::time::Duration;

const SNAPSHOT_EVERY: u64 = 50;

async fn status(server: &TestServer) -> StatusResponse {
    ClusterClient::new(server.channel().await)
        .status(StatusRequest {})
        .await
        .unwrap()
        .into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_recovers_from_snapshot_and_log() {
    let tune =
        |config: &mut leasehold_server::ServeConfig| config.snapshot_every_entries = SNAPSHOT_EVERY;
    let server = TestServer::start_with(tempfile::tempdir().unwrap(), tune).await;
    let mut leases = server.leases().await;
    let mut locks = server.locks().await;
    let lease = grant(&mut leases, 60_000).await;
    let mut last = 0;
    for _ in 0..(4 * SNAPSHOT_EVERY) {
        let token = acquire_now(&mut locks, lease, "snap/cycle").await;
        locks
            .release(release(lease, "snap/cycle", token))
            .await
            .unwrap();
        last = token;
    }
    let held = acquire_now(&mut locks, lease, "snap/held").await;

    // Snapshots are built in the background: await one, bounded.
    eventually("the log is purged", Duration::from_secs(10), || async {
        status(&server).await.purged_index != 0
    })
    .await;
    let before = status(&server).await;
    assert!(before.snapshot_index >= SNAPSHOT_EVERY, "{before:?}");

    let server = server.restart(tune).await;
    let after = status(&server).await;
    assert!(
        after.revision >= before.revision,
        "revision went back: {after:?} after {before:?}"
    );
    let lock = server.lock("snap/held").await;
    assert_eq!(
        lock.holder.unwrap().token,
        held,
        "the holder kept its token across the restart"
    );
    let mut locks = server.locks().await;
    let next = acquire_now(&mut locks, lease, "snap/cycle").await;
    assert!(
        next > held && next > last,
        "token {next} not above {held} and {last}"
    );
    server.stop().await;
}
