//! Group commit routes each command's outcome back to its own caller: many
//! concurrent acquires, batched into shared log entries, each get their own
//! answer, and exactly one of the contenders for each lock wins.

use leasehold_testkit::grpc::{acquire, acquire_now, grant, reason, release};
use leasehold_testkit::TestServer;
use std::collections::BTreeSet;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_acquires_each_get_their_own_outcome() {
    let (server, mut leases, locks) = TestServer::start_with_clients().await;
    const CALLERS: usize = 200;
    const NAMES: usize = 20;
    let mut lease_ids = Vec::new();
    for _ in 0..CALLERS {
        lease_ids.push(grant(&mut leases, 30_000).await);
    }
    let calls = lease_ids.iter().enumerate().map(|(i, lease)| {
        let mut locks = locks.clone();
        let request = acquire(*lease, &format!("gc/{}", i % NAMES), 0);
        async move { (i % NAMES, *lease, locks.acquire(request).await) }
    });
    let results = futures::future::join_all(calls).await;
    let mut winners = BTreeSet::new();
    let mut tokens = BTreeSet::new();
    for (name, lease, result) in results {
        match result {
            Ok(reply) => {
                assert!(winners.insert(name), "two winners for gc/{name}");
                assert!(
                    tokens.insert(reply.into_inner().token),
                    "a token handed out twice"
                );
                let _ = lease;
            }
            Err(status) => assert_eq!(reason(&status), "Busy", "{status:?}"),
        }
    }
    assert_eq!(winners.len(), NAMES, "every lock has exactly one winner");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_lock_goes_to_the_next_acquire_with_a_higher_token() {
    let (server, mut leases, mut locks) = TestServer::start_with_clients().await;
    let lease = grant(&mut leases, 30_000).await;
    let mut last = 0;
    for _ in 0..20 {
        let token = acquire_now(&mut locks, lease, "cycle").await;
        assert!(token > last, "token {token} after {last}");
        last = token;
        locks.release(release(lease, "cycle", token)).await.unwrap();
    }
    server.stop().await;
}
