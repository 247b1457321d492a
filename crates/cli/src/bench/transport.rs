//! How a benchmark client sends acquires and releases: one unary RPC each, or
//! messages on one `Lock.Session` stream per client (the client library's hot
//! path). Both present the same calls, so a workload is written once.

use leasehold_proto::v1::lock_client::LockClient;
use leasehold_proto::v1::session_request::Op;
use leasehold_proto::v1::session_response::Result as Answer;
use leasehold_proto::v1::{
    AcquireRequest, AcquireResponse, ErrorDetail, ReleaseRequest, ReleaseResponse, SessionRequest,
    SessionResponse,
};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;
use tonic::transport::Channel;
use tonic::{Code, Status, Streaming};

/// The transport a client uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Transport {
    /// One unary RPC per acquire and per release.
    Unary,
    /// One bidirectional `Lock.Session` stream per client.
    Session,
}

impl Transport {
    /// The name shown in reports.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Unary => "unary",
            Transport::Session => "session",
        }
    }
}

/// A client's connection for acquires and releases.
pub enum Locker {
    Unary(LockClient<Channel>),
    Session {
        requests: mpsc::Sender<SessionRequest>,
        responses: Streaming<SessionResponse>,
        seq: u64,
    },
}

impl Locker {
    /// Opens a locker on `channel`.
    pub async fn open(channel: Channel, transport: Transport) -> Result<Locker, Status> {
        let mut client = LockClient::new(channel);
        match transport {
            Transport::Unary => Ok(Locker::Unary(client)),
            Transport::Session => {
                let (requests, outgoing) = mpsc::channel(16);
                let responses = client
                    .session(ReceiverStream::new(outgoing))
                    .await?
                    .into_inner();
                Ok(Locker::Session {
                    requests,
                    responses,
                    seq: 0,
                })
            }
        }
    }

    /// Acquires (waiting if `request.wait_ms` > 0).
    pub async fn acquire(&mut self, request: AcquireRequest) -> Result<AcquireResponse, Status> {
        match self {
            Locker::Unary(client) => Ok(client.acquire(request).await?.into_inner()),
            Locker::Session { .. } => match self.call(Op::Acquire(request)).await? {
                Answer::Acquire(response) => Ok(response),
                other => Err(unexpected(&other)),
            },
        }
    }

    /// Releases.
    pub async fn release(&mut self, request: ReleaseRequest) -> Result<ReleaseResponse, Status> {
        match self {
            Locker::Unary(client) => Ok(client.release(request).await?.into_inner()),
            Locker::Session { .. } => match self.call(Op::Release(request)).await? {
                Answer::Release(response) => Ok(response),
                other => Err(unexpected(&other)),
            },
        }
    }

    /// Sends one operation on the session and awaits its answer (one in
    /// flight per client, so answers arrive in order).
    async fn call(&mut self, op: Op) -> Result<Answer, Status> {
        let Locker::Session {
            requests,
            responses,
            seq,
        } = self
        else {
            unreachable!("call is only used on sessions");
        };
        *seq += 1;
        let request = SessionRequest {
            seq: *seq,
            op: Some(op),
        };
        if requests.send(request).await.is_err() {
            return Err(Status::unavailable("the session stream closed"));
        }
        let response = match responses.next().await {
            Some(response) => response?,
            None => return Err(Status::unavailable("the session stream ended")),
        };
        if response.seq != *seq {
            return Err(Status::internal(format!(
                "session answered seq {} to request {}",
                response.seq, seq
            )));
        }
        match response.result {
            Some(Answer::Error(detail)) => Err(status_of(detail)),
            Some(answer) => Ok(answer),
            None => Err(Status::internal("the session sent an empty answer")),
        }
    }
}

/// An in-band error as a `Status`, so both transports report alike.
fn status_of(detail: ErrorDetail) -> Status {
    let code = match detail.reason.as_str() {
        "Unavailable" | "NotLeader" => Code::Unavailable,
        _ => Code::Aborted,
    };
    leasehold_proto::status::with_detail(code, &detail)
}

fn unexpected(answer: &Answer) -> Status {
    Status::internal(format!(
        "the session answered with the wrong kind: {answer:?}"
    ))
}
