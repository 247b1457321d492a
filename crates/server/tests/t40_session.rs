//! The session stream runs acquire, release and keep-alive with the same
//! semantics as the unary calls: answers matched by seq, errors in-band, the
//! stream open after an error, answers in the order their work completes,
//! work in flight answered after the client closes its half, and a queued
//! acquire on a closed stream leaving its queue.

use leasehold_proto::v1::session_request::Op;
use leasehold_proto::v1::session_response::Result as Answer;
use leasehold_proto::v1::{KeepAliveRequest, SessionRequest, SessionResponse};
use leasehold_testkit::grpc::{acquire, grant, release};
use leasehold_testkit::{eventually_by, TestServer};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;
use tonic::Streaming;

struct Session {
    requests: mpsc::Sender<SessionRequest>,
    responses: Streaming<SessionResponse>,
}

impl Session {
    async fn open(server: &TestServer) -> Session {
        let (requests, outgoing) = mpsc::channel(16);
        let responses = server
            .locks()
            .await
            .session(ReceiverStream::new(outgoing))
            .await
            .expect("open session")
            .into_inner();
        Session {
            requests,
            responses,
        }
    }

    async fn send(&self, seq: u64, op: Op) {
        self.requests
            .send(SessionRequest { seq, op: Some(op) })
            .await
            .unwrap();
    }

    /// Closes the request half (the only sender of its channel is dropped);
    /// the response half stays open.
    fn close_requests(&mut self) {
        self.requests = mpsc::channel(1).0;
    }

    /// The next answer, as (seq, result).
    async fn answer(&mut self) -> (u64, Answer) {
        let response = tokio::time::timeout(Duration::from_secs(10), self.responses.next())
            .await
            .expect("an answer within 10 s")
            .expect("an answer")
            .expect("ok");
        (response.seq, response.result.expect("a result"))
    }

    async fn call(&mut self, seq: u64, op: Op) -> Answer {
        self.send(seq, op).await;
        let (answered, result) = self.answer().await;
        assert_eq!(answered, seq);
        result
    }
}

fn keep_alive(lease: u64) -> Op {
    Op::KeepAlive(KeepAliveRequest {
        lease,
        seq: 0,
        holdings_digest: 0,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_release_and_keepalive_over_one_stream() {
    let server = TestServer::start().await;
    let mut leases = server.leases().await;
    let lease = grant(&mut leases, 10_000).await;
    let other = grant(&mut leases, 10_000).await;
    let mut session = Session::open(&server).await;

    let Answer::Acquire(first) = session.call(1, Op::Acquire(acquire(lease, "s", 0))).await else {
        panic!("acquire failed")
    };
    let Answer::Error(busy) = session.call(2, Op::Acquire(acquire(other, "s", 0))).await else {
        panic!("a second holder was granted")
    };
    assert_eq!(busy.reason, "Busy");
    assert_eq!(busy.holder_token, first.token);
    let Answer::Error(wrong) = session
        .call(3, Op::Release(release(lease, "s", first.token - 1)))
        .await
    else {
        panic!("a release with a wrong token succeeded")
    };
    assert_eq!(wrong.reason, "NotHolder");
    let Answer::KeepAlive(renewed) = session.call(4, keep_alive(lease)).await else {
        panic!("keep-alive failed")
    };
    assert_eq!(renewed.ttl_ms, 10_000);
    let Answer::Release(_) = session
        .call(5, Op::Release(release(lease, "s", first.token)))
        .await
    else {
        panic!("release failed")
    };
    let Answer::Acquire(second) = session.call(6, Op::Acquire(acquire(other, "s", 0))).await else {
        panic!("re-acquire failed")
    };
    assert!(second.token > first.token);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_acquire_leaves_the_queue_when_its_session_closes() {
    let (server, mut leases, mut locks) = TestServer::start_with_clients().await;
    let holder = grant(&mut leases, 30_000).await;
    let waiter = grant(&mut leases, 30_000).await;
    locks.acquire(acquire(holder, "q", 0)).await.unwrap();

    let session = Session::open(&server).await;
    session
        .requests
        .send(SessionRequest {
            seq: 1,
            op: Some(Op::Acquire(acquire(waiter, "q", 20_000))),
        })
        .await
        .unwrap();
    let queued = |n: usize| {
        let server = &server;
        move || async move { server.lock("q").await.waiters.len() == n }
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    eventually_by("the waiter is queued", deadline, queued(1)).await;
    drop(session);
    eventually_by(
        "the closed session's waiter leaves the queue",
        deadline,
        queued(0),
    )
    .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_come_as_their_work_completes_and_after_the_client_closes_its_half() {
    let (server, mut leases, mut locks) = TestServer::start_with_clients().await;
    let holder = grant(&mut leases, 30_000).await;
    let waiter = grant(&mut leases, 30_000).await;
    let held = locks.acquire(acquire(holder, "q", 0)).await.unwrap();
    let mut session = Session::open(&server).await;

    // A queued acquire does not hold back a later keep-alive on the stream.
    session
        .send(1, Op::Acquire(acquire(waiter, "q", 20_000)))
        .await;
    session.send(2, keep_alive(waiter)).await;
    let (first, renewed) = session.answer().await;
    assert_eq!(
        first, 2,
        "the keep-alive is answered while the acquire waits"
    );
    assert!(matches!(renewed, Answer::KeepAlive(_)));

    // The client closes its half: the acquire still in flight is answered
    // once it is granted, and then the stream ends.
    session.close_requests();
    let token = held.into_inner().token;
    locks.release(release(holder, "q", token)).await.unwrap();
    let (seq, granted) = session.answer().await;
    assert_eq!(seq, 1);
    let Answer::Acquire(granted) = granted else {
        panic!("the queued acquire was not granted: {granted:?}")
    };
    assert!(granted.token > token);
    let end = tokio::time::timeout(Duration::from_secs(10), session.responses.next()).await;
    assert!(
        matches!(end, Ok(None)),
        "the stream ends after its last answer"
    );
    server.stop().await;
}
