//! Leader election against a real server: a campaign leads or queues, the
//! epoch is the token, only the leader of the current epoch proclaims, and
//! an observer sees the leader now, then every change: a new value, a
//! hand-over (one change, no gap), and "no leader" when the last leader
//! goes with nobody behind it.

use leasehold_client::wire::LeaderChange;
use leasehold_client::{Client, Error, LeaderStream, LockName};
use leasehold_testkit::{within, TestServer};
use std::time::Duration;

const TTL: Duration = Duration::from_secs(10);
/// Bound on anything that should be prompt on an idle loopback server.
const PROMPT: Duration = Duration::from_secs(5);

fn name(raw: &str) -> LockName {
    LockName::parse(raw).expect("a valid name")
}

/// The next change on `stream`, as (epoch, value); (0, "") for no leader.
async fn next(stream: &mut LeaderStream) -> (u64, String) {
    let change: LeaderChange = within("the next leader change", PROMPT, stream.next())
        .await
        .expect("the stream stays open")
        .expect("a change, not the end");
    change
        .leader
        .map_or((0, String::new()), |leader| (leader.token, leader.value))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn campaigns_lead_in_turn_and_observers_see_every_change() {
    let server = TestServer::start().await;
    let client: Client = server.client().await;
    let election = name("t74/svc");

    let mut observer = client.observe(&election).await.unwrap();
    assert_eq!(
        next(&mut observer).await,
        (0, String::new()),
        "nobody leads yet"
    );
    assert_eq!(client.leader(&election).await.unwrap(), None);

    tracing::info!("phase: a leads, b queues behind it");
    let a = client.lease(TTL).owner("a").grant().await.unwrap();
    let b = client.lease(TTL).owner("b").grant().await.unwrap();
    let a_leads = a
        .campaign(&election, "10.0.0.1:80")
        .acquire()
        .await
        .unwrap();
    let epoch_a = a_leads.token().0;
    assert_eq!(next(&mut observer).await, (epoch_a, "10.0.0.1:80".into()));
    let b_campaign = tokio::spawn({
        let (b, election) = (b.clone(), election.clone());
        async move {
            let campaign = b.campaign(&election, "10.0.0.2:80");
            campaign.wait(Duration::from_secs(30)).acquire().await
        }
    });
    let leader = client.leader(&election).await.unwrap().expect("a leads");
    assert_eq!((leader.token, leader.owner.as_str()), (epoch_a, "a"));

    tracing::info!("phase: the leader proclaims; another lease cannot");
    a_leads.proclaim("10.0.0.1:81").await.unwrap();
    assert_eq!(next(&mut observer).await, (epoch_a, "10.0.0.1:81".into()));
    let refused = client
        .proclaim(b.id(), &election, a_leads.token(), "hijack")
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::NotHolder { .. }), "{refused:?}");

    tracing::info!("phase: a resigns; b leads in the same command, no gap");
    a_leads.release().await.unwrap();
    let b_leads = within("b's campaign", PROMPT, b_campaign)
        .await
        .unwrap()
        .unwrap();
    let epoch_b = b_leads.token().0;
    assert!(epoch_b > epoch_a, "epochs increase");
    assert_eq!(next(&mut observer).await, (epoch_b, "10.0.0.2:80".into()));

    tracing::info!("phase: b's lease ends with nobody behind: no leader");
    b.revoke().await.unwrap();
    assert_eq!(next(&mut observer).await, (0, String::new()));
    drop(b_leads);
    assert_eq!(client.leader(&election).await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_semaphore_has_no_leader_and_an_oversize_value_is_refused_naming_its_limit() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let lease = client.lease(TTL).grant().await.unwrap();
    let pool = name("t74/pool");
    let _permit = lease.lock(&pool).semaphore(2, 1).acquire().await.unwrap();
    let refused = client.observe(&pool).await.unwrap_err();
    assert!(
        matches!(&refused, Error::InvalidArgument { reason, .. } if reason.contains("semaphore")),
        "{refused:?}"
    );

    let election = name("t74/big");
    let leads = lease.campaign(&election, "v").acquire().await.unwrap();
    let huge = "x".repeat(600);
    let refused = leads.proclaim(&huge).await.unwrap_err();
    assert!(refused.to_string().contains("LABEL_BYTES_MAX"), "{refused}");
    assert_eq!(client.leader(&election).await.unwrap().unwrap().value, "v");
}
