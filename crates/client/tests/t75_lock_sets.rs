//! Several locks at once against a real server: all or none, a set that
//! waits is granted whole, each lock with its token, and two clients that
//! name the same locks in opposite orders, over and over, never deadlock.

use leasehold_client::{Client, Error, LockGuard};
use leasehold_testkit::{within, TestServer};
use std::time::Duration;

const TTL: Duration = Duration::from_secs(10);
/// Bound on anything that should be prompt on an idle loopback server.
const PROMPT: Duration = Duration::from_secs(5);

async fn release_all(guards: Vec<LockGuard>) {
    for guard in guards {
        guard.release().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_set_is_granted_whole_and_busy_names_a_lock() {
    let server = TestServer::start().await;
    let client: Client = server.client().await;
    let (x, y) = (
        client.lease(TTL).grant().await.unwrap(),
        client.lease(TTL).grant().await.unwrap(),
    );
    let held = x.lock("t75/a").acquire().await.unwrap();
    let busy = y.lock_all(["t75/a", "t75/b"]).acquire().await.unwrap_err();
    assert!(matches!(&busy, Error::Busy { .. }), "{busy:?}");
    assert!(busy.to_string().contains("t75/a"), "{busy}");
    // Refused whole: b was not taken either.
    assert!(x
        .lock("t75/b")
        .acquire()
        .await
        .unwrap()
        .release()
        .await
        .is_ok());

    let waiting = tokio::spawn({
        let y = y.clone();
        async move {
            let set = y.lock_all(["t75/b", "t75/a"]).wait(Duration::from_secs(30));
            set.fenced(true).acquire().await
        }
    });
    // The set keeps b, which is free, while it waits for a.
    let kept = async {
        loop {
            match x.lock("t75/b").acquire().await {
                Err(Error::Busy { .. }) => return,
                Ok(guard) => drop(guard.release().await),
                Err(other) => panic!("{other:?}"),
            }
            tokio::task::yield_now().await;
        }
    };
    within("b to be kept for the set", PROMPT, kept).await;
    let first = held.token();
    held.release().await.unwrap();
    let guards = within("the set's grant", PROMPT, waiting)
        .await
        .unwrap()
        .unwrap();
    let names: Vec<String> = guards.iter().map(|g| g.name().to_string()).collect();
    assert_eq!(names, ["t75/b", "t75/a"]);
    assert!(guards.iter().all(|g| g.token() > first));
    release_all(guards).await;

    let one = y.lock_all(["t75/a"]).acquire().await.unwrap_err();
    assert!(matches!(&one, Error::InvalidArgument { .. }), "{one:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opposite_orders_in_a_loop_never_deadlock() {
    const ROUNDS: usize = 40;
    let server = TestServer::start().await;
    let mut workers = Vec::new();
    for order in [["t75/x", "t75/y"], ["t75/y", "t75/x"]] {
        let client = server.client().await;
        workers.push(tokio::spawn(async move {
            let lease = client.lease(TTL).grant().await.unwrap();
            for _ in 0..ROUNDS {
                let set = lease.lock_all(order).wait(Duration::from_secs(10));
                release_all(set.acquire().await.unwrap()).await;
            }
        }));
    }
    for worker in workers {
        within("both workers' rounds", Duration::from_secs(60), worker)
            .await
            .unwrap();
    }
}
