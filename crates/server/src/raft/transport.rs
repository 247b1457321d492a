//! The receiving side of Raft traffic: the internal `RaftTransport` gRPC
//! service, served on the same port as the client API. Each call decodes an
//! openraft request, hands it to this node's Raft, and encodes the `Result`.

use super::codec::{decode, encode};
use super::types::{Raft, TypeConfig};
use leasehold_proto::v1::raft_transport_server::RaftTransport;
use leasehold_proto::v1::RaftPayload;
use openraft::raft::{AppendEntriesRequest, InstallSnapshotRequest, VoteRequest};
use tonic::{Request, Response, Status};

/// The largest Raft message accepted or sent: a snapshot chunk or a run of
/// log entries (each a batch of up to 4,096 commands).
pub const RAFT_MESSAGE_BYTES_MAX: usize = 256 * 1024 * 1024;

/// Serves Raft messages to this node's Raft.
pub struct RaftTransportApi {
    raft: Raft,
}

impl RaftTransportApi {
    /// The service over `raft`.
    pub fn new(raft: Raft) -> RaftTransportApi {
        RaftTransportApi { raft }
    }
}

fn undecodable(error: postcard::Error) -> Status {
    Status::invalid_argument(format!(
        "undecodable Raft message ({error}); are all nodes the same leasehold version?"
    ))
}

fn reply<T: serde::Serialize>(result: &T) -> Result<Response<RaftPayload>, Status> {
    let data =
        encode(result).map_err(|e| Status::internal(format!("cannot encode a Raft reply: {e}")))?;
    Ok(Response::new(RaftPayload { data }))
}

#[tonic::async_trait]
impl RaftTransport for RaftTransportApi {
    async fn append_entries(
        &self,
        request: Request<RaftPayload>,
    ) -> Result<Response<RaftPayload>, Status> {
        let rpc: AppendEntriesRequest<TypeConfig> =
            decode(&request.into_inner().data).map_err(undecodable)?;
        reply(&self.raft.append_entries(rpc).await)
    }

    async fn vote(&self, request: Request<RaftPayload>) -> Result<Response<RaftPayload>, Status> {
        let rpc: VoteRequest<u64> = decode(&request.into_inner().data).map_err(undecodable)?;
        reply(&self.raft.vote(rpc).await)
    }

    async fn install_snapshot(
        &self,
        request: Request<RaftPayload>,
    ) -> Result<Response<RaftPayload>, Status> {
        let rpc: InstallSnapshotRequest<TypeConfig> =
            decode(&request.into_inner().data).map_err(undecodable)?;
        reply(&self.raft.install_snapshot(rpc).await)
    }
}
