//! The operations a session stream carries — acquire, release, keep-alive —
//! each sendable either as a session message or as its unary RPC, so one
//! retry loop (`call.rs`) serves both routes and the caller never cares
//! which one an attempt took.

use super::Via;
use crate::endpoints::Channel;
use crate::error::{Error, Retry};
use leasehold_proto::v1::lease_client::LeaseClient;
use leasehold_proto::v1::lock_client::LockClient;
use leasehold_proto::v1::session_request::Op;
use leasehold_proto::v1::session_response::Result as Answer;
use leasehold_proto::v1::{
    AcquireRequest, AcquireResponse, KeepAliveRequest, KeepAliveResponse, ReleaseRequest,
    ReleaseResponse,
};
use std::future::Future;

/// A request that can travel on a session stream or as a unary RPC.
pub(crate) trait SessionOp: Sized + Send + 'static {
    /// What a success answers.
    type Reply: Send + 'static;
    /// The call's name, for errors.
    const WHAT: &'static str;

    /// As a session message.
    fn into_op(self) -> Op;

    /// The reply in a session answer, if the answer is of this kind.
    fn reply(answer: Answer) -> Option<Self::Reply>;

    /// As its unary RPC.
    fn unary(
        self,
        channel: Channel,
    ) -> impl Future<Output = Result<tonic::Response<Self::Reply>, tonic::Status>> + Send;

    /// Sends one attempt by `via`.
    fn send(self, via: Via) -> impl Future<Output = Result<Self::Reply, (Error, Retry)>> + Send {
        async move {
            match via {
                Via::Unary(in_use) => match self.unary(in_use.channel).await {
                    Ok(reply) => Ok(reply.into_inner()),
                    Err(status) => Err(Error::from_status(&status)),
                },
                Via::Session(stream) => stream.send(self).await,
            }
        }
    }
}

impl SessionOp for AcquireRequest {
    type Reply = AcquireResponse;
    const WHAT: &'static str = "Acquire";

    fn into_op(self) -> Op {
        Op::Acquire(self)
    }

    fn reply(answer: Answer) -> Option<AcquireResponse> {
        match answer {
            Answer::Acquire(reply) => Some(reply),
            _ => None,
        }
    }

    async fn unary(
        self,
        channel: Channel,
    ) -> Result<tonic::Response<AcquireResponse>, tonic::Status> {
        LockClient::new(channel).acquire(self).await
    }
}

impl SessionOp for ReleaseRequest {
    type Reply = ReleaseResponse;
    const WHAT: &'static str = "Release";

    fn into_op(self) -> Op {
        Op::Release(self)
    }

    fn reply(answer: Answer) -> Option<ReleaseResponse> {
        match answer {
            Answer::Release(reply) => Some(reply),
            _ => None,
        }
    }

    async fn unary(
        self,
        channel: Channel,
    ) -> Result<tonic::Response<ReleaseResponse>, tonic::Status> {
        LockClient::new(channel).release(self).await
    }
}

impl SessionOp for KeepAliveRequest {
    type Reply = KeepAliveResponse;
    const WHAT: &'static str = "KeepAlive";

    fn into_op(self) -> Op {
        Op::KeepAlive(self)
    }

    fn reply(answer: Answer) -> Option<KeepAliveResponse> {
        match answer {
            Answer::KeepAlive(reply) => Some(reply),
            _ => None,
        }
    }

    async fn unary(
        self,
        channel: Channel,
    ) -> Result<tonic::Response<KeepAliveResponse>, tonic::Status> {
        LeaseClient::new(channel).keep_alive(self).await
    }
}
