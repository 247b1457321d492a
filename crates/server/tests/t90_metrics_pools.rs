//! `/metrics` counts semaphores and read-write locks (`leasehold_pools`)
//! apart from locks (`leasehold_locks`). A file of its own: the recorder is
//! process-global, and `t90_metrics` counts every acquire.

#[path = "support/prometheus.rs"]
mod prometheus;

use leasehold_testkit::grpc::{acquire, grant, release};
use leasehold_testkit::TestServer;
use prometheus::Scrape;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphores_and_read_write_locks_are_counted_apart_from_locks() {
    let server = TestServer::start().await;
    let endpoint = server.endpoint.clone();
    let mut leases = server.leases().await;
    let mut locks = server.locks().await;
    let lease = grant(&mut leases, 10_000).await;
    let ask = leasehold_core::PermitAsk::Semaphore {
        permits: 2,
        count: 1,
    };
    let mut request = acquire(lease, "slots", 0);
    request.permits = Some(ask.into());
    let token = locks
        .acquire(request)
        .await
        .expect("a permit")
        .into_inner()
        .token;
    let held = Scrape::fetch(&endpoint).await;
    assert_eq!(held.value("leasehold_pools", &[]), 1.0);
    assert_eq!(held.value("leasehold_locks", &[]), 0.0);
    locks
        .release(release(lease, "slots", token))
        .await
        .expect("released as a lock is");
    let freed = Scrape::fetch(&endpoint).await;
    assert_eq!(freed.value("leasehold_pools", &[]), 0.0);
    server.stop().await;
}
