//! Snapshots bound the log: after enough entries the node snapshots and
//! purges, and a restart recovers the state from the snapshot plus the log
//! after it — holders keep their tokens and new tokens are higher.

mod common;

use common::{acquire, grant, TestServer};
use leasehold_proto::v1::cluster_client::ClusterClient;
use leasehold_proto::v1::{GetLockRequest, ReleaseRequest, StatusRequest, StatusResponse};
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
        let token = locks
            .acquire(acquire(lease, "snap/cycle", 0))
            .await
            .unwrap()
            .into_inner()
            .token;
        locks
            .release(ReleaseRequest {
                lease,
                name: "snap/cycle".into(),
                token,
                request_id: String::new(),
            })
            .await
            .unwrap();
        last = token;
    }
    let held = locks
        .acquire(acquire(lease, "snap/held", 0))
        .await
        .unwrap()
        .into_inner()
        .token;

    // Snapshots are built in the background: await one, bounded.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while status(&server).await.purged_index == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never purged: {:?}",
            status(&server).await
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = status(&server).await;
    assert!(before.snapshot_index >= SNAPSHOT_EVERY, "{before:?}");

    let server = server.restart(tune).await;
    let after = status(&server).await;
    assert!(
        after.revision >= before.revision,
        "revision went back: {after:?} after {before:?}"
    );
    let mut locks = server.locks().await;
    let lock = locks
        .get(GetLockRequest {
            name: "snap/held".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .lock
        .unwrap();
    assert_eq!(
        lock.holder.unwrap().token,
        held,
        "the holder kept its token across the restart"
    );
    let next = locks
        .acquire(acquire(lease, "snap/cycle", 0))
        .await
        .unwrap()
        .into_inner()
        .token;
    assert!(
        next > held && next > last,
        "token {next} not above {held} and {last}"
    );
    server.stop().await;
}
