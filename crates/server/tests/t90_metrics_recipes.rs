//! `/metrics` counts a leader's proclaims (`leasehold_proclaims_total`; a
//! refused one is a command failure), the observers of elections, and the
//! sets of locks waited for. A file of its own: the recorder is
//! process-global, and `t90_metrics` counts every command.

#[path = "support/prometheus.rs"]
mod prometheus;

use leasehold_proto::v1::{AcquireAllRequest, ObserveRequest, ProclaimRequest};
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observers_and_waiting_sets_are_gauged() {
    let server = TestServer::start().await;
    let mut leases = server.leases().await;
    let mut locks = server.locks().await;
    let (holder, waiter) = (
        grant(&mut leases, 10_000).await,
        grant(&mut leases, 10_000).await,
    );
    locks
        .acquire(acquire(holder, "a", 0))
        .await
        .expect("a is held");
    let set = AcquireAllRequest {
        lease: waiter,
        names: vec!["a".into(), "b".into()],
        wait_ms: 30_000,
        ..AcquireAllRequest::default()
    };
    let mut waiting = server.locks().await;
    let queued = tokio::spawn(async move { waiting.acquire_all(set).await });
    let mut watch =
        leasehold_proto::v1::watch_client::WatchClient::connect(server.endpoint.clone())
            .await
            .expect("connects");
    let observed = ObserveRequest { name: "a".into() };
    let _stream = watch.observe(observed).await.expect("observes");
    let gauged = leasehold_testkit::eventually_some(
        "the set and the observer to be gauged",
        std::time::Duration::from_secs(10),
        async || {
            let scraped = Scrape::fetch(&server.endpoint).await;
            let set = scraped.value("leasehold_lock_sets_waiting", &[]);
            let observers = scraped.value("leasehold_election_observers", &[]);
            (set == 1.0 && observers == 1.0).then_some(())
        },
    );
    gauged.await;
    queued.abort();
    server.stop().await;
}
