//! The receiving side of Raft traffic: the internal `RaftTransport` gRPC
//! service, served on the same port as the client API. Each call decodes an
//! openraft request, notes contact with its sender (the node its vote
//! names: the leader of an AppendEntries or InstallSnapshot, the candidate
//! of a Vote; see [`Contacts`]), hands it to this node's Raft, and encodes
//! the `Result`.

use super::codec::{decode, encode};
use super::contacts::Contacts;
use super::types::{Raft, TypeConfig};
use leasehold_proto::v1::raft_transport_server::RaftTransport;
use leasehold_proto::v1::RaftPayload;
use openraft::raft::{AppendEntriesRequest, InstallSnapshotRequest, VoteRequest};
use openraft::Vote;
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// The largest Raft message accepted or sent: a snapshot chunk or a run of
/// log entries (each a batch of up to 4,096 commands).
pub const RAFT_MESSAGE_BYTES_MAX: usize = 256 * 1024 * 1024;

/// Serves Raft messages to this node's Raft.
pub struct RaftTransportApi {
    raft: Raft,
    /// Where each sender's messages are noted.
    contacts: Arc<Contacts>,
}

impl RaftTransportApi {
    /// The service over `raft`, noting senders in `contacts`.
    pub fn new(raft: Raft, contacts: Arc<Contacts>) -> RaftTransportApi {
        RaftTransportApi { raft, contacts }
    }

    /// Notes contact with the node that `vote` names.
    fn heard(&self, vote: &Vote<u64>) {
        if let Some(sender) = vote.leader_id().voted_for() {
            self.contacts.heard(sender);
        }
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
        self.heard(&rpc.vote);
        reply(&self.raft.append_entries(rpc).await)
    }

    async fn vote(&self, request: Request<RaftPayload>) -> Result<Response<RaftPayload>, Status> {
        let rpc: VoteRequest<u64> = decode(&request.into_inner().data).map_err(undecodable)?;
        self.heard(&rpc.vote);
        reply(&self.raft.vote(rpc).await)
    }

    async fn install_snapshot(
        &self,
        request: Request<RaftPayload>,
    ) -> Result<Response<RaftPayload>, Status> {
        let rpc: InstallSnapshotRequest<TypeConfig> =
            decode(&request.into_inner().data).map_err(undecodable)?;
        self.heard(&rpc.vote);
        reply(&self.raft.install_snapshot(rpc).await)
    }
}
