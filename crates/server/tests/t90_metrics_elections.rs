//! `/metrics` counts a leader's proclaims (`leasehold_proclaims_total`);
//! a refused one is a command failure. A file of its own: the recorder is
//! process-global, and `t90_metrics` counts every command.

#[path = "support/prometheus.rs"]
mod prometheus;

use leasehold_proto::v1::ProclaimRequest;
use leasehold_testkit::grpc::{acquire, grant};
use leasehold_testkit::TestServer;
use prometheus::Scrape;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaders_proclaims_are_counted() {
    let server = TestServer::start().await;
    let mut leases = server.leases().await;
    let mut locks = server.locks().await;
    let lease = grant(&mut leases, 10_000).await;
    let token = locks
        .acquire(acquire(lease, "svc", 0))
        .await
        .expect("leads")
        .into_inner()
        .token;
    let proclaim = |token: u64| ProclaimRequest {
        lease,
        name: "svc".into(),
        token,
        value: "10.0.0.1:80".into(),
        request_id: String::new(),
    };
    locks
        .proclaim(proclaim(token))
        .await
        .expect("the leader proclaims");
    let refused = locks.proclaim(proclaim(token - 1)).await;
    assert!(refused.is_err(), "an earlier epoch is refused");
    let scraped = Scrape::fetch(&server.endpoint).await;
    assert_eq!(scraped.value("leasehold_proclaims_total", &[]), 1.0);
    let not_holder = [("reason", "not_holder")];
    assert_eq!(
        scraped.value("leasehold_command_failures_total", &not_holder),
        1.0
    );
    server.stop().await;
}
