//! The receiving side of Raft traffic: the internal `RaftTransport` gRPC
//! service, served on the same port as the client API. Each call first has
//! its caller judged: with TLS only the cluster's nodes get through (see
//! [`PeerGate`]), never a client, whatever its credentials. Then its
//! sender's cluster id is judged ([`Identity::admit`]: another cluster's
//! message is refused with FAILED_PRECONDITION before Raft sees it), then
//! decodes an openraft request, notes its sender's protocol (see
//! [`Protocols`]), notes contact with its sender (the node its
//! vote names: the leader of an AppendEntries or InstallSnapshot, the
//! candidate of a Vote; see [`Contacts`]), hands it to this node's Raft, and
//! encodes the `Result`. `Identify` tells a node about to form a cluster who
//! answers here (see [`crate::identity`]).

use super::codec::{decode, encode};
use super::contacts::Contacts;
use super::protocol::Protocols;
use super::types::{Raft, TypeConfig};
use crate::identity::{Identity, MessageKind};
use crate::tls::peers::PeerGate;
use leasehold_proto::v1::raft_transport_server::RaftTransport;
use leasehold_proto::v1::{IdentifyRequest, IdentifyResponse, RaftPayload};
use openraft::raft::{AppendEntriesRequest, InstallSnapshotRequest, VoteRequest};
use openraft::Vote;
use serde::de::DeserializeOwned;
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// The largest Raft message accepted or sent: a snapshot chunk or a run of
/// log entries (each a batch of up to 4,096 commands).
pub const RAFT_MESSAGE_BYTES_MAX: usize = 256 * 1024 * 1024;

/// Serves Raft messages to this node's Raft.
pub struct RaftTransportApi {
    raft: Raft,
    /// Judges each message's cluster id; answers `Identify`.
    identity: Arc<Identity>,
    /// Where each sender's messages are noted.
    contacts: Arc<Contacts>,
    /// Where each sender's protocol is noted; this node's is replied.
    protocols: Arc<Protocols>,
    /// Lets only peers through.
    gate: PeerGate,
}

impl RaftTransportApi {
    /// The service over `raft`, for the node `identity` describes, noting
    /// senders in `contacts` and their protocols in `protocols`, letting
    /// through the callers `gate` admits.
    pub fn new(
        raft: Raft,
        identity: Arc<Identity>,
        contacts: Arc<Contacts>,
        protocols: Arc<Protocols>,
        gate: PeerGate,
    ) -> RaftTransportApi {
        RaftTransportApi {
            raft,
            identity,
            contacts,
            protocols,
            gate,
        }
    }

    /// Lets `request` through if its caller is a peer (see [`PeerGate`]).
    fn admit_peer<T>(&self, request: &Request<T>) -> Result<(), Status> {
        let members: Vec<String> = {
            let metrics = self.raft.metrics();
            let metrics = metrics.borrow();
            let membership = metrics.membership_config.membership();
            membership
                .nodes()
                .map(|(_, node)| node.addr.clone())
                .collect()
        };
        self.gate.admit(request, &members)
    }

    /// Admits (see [`PeerGate`] and [`Identity::admit`]) and decodes one
    /// request.
    async fn receive<T: DeserializeOwned>(
        &self,
        request: Request<RaftPayload>,
        kind: MessageKind,
    ) -> Result<T, Status> {
        self.admit_peer(&request)?;
        let payload = request.into_inner();
        self.identity
            .admit(payload.node_id, &payload.cluster_id, kind)
            .await?;
        self.protocols.heard(payload.node_id, payload.protocol);
        decode(&payload.data).map_err(|e| undecodable(&e))
    }

    /// Notes contact with the node that `vote` names.
    fn heard(&self, vote: &Vote<u64>) {
        if let Some(sender) = vote.leader_id().voted_for() {
            self.contacts.heard(sender);
        }
    }
}

fn undecodable(error: &dyn std::fmt::Display) -> Status {
    Status::invalid_argument(format!(
        "undecodable Raft message ({error}); are all nodes the same leasehold version?"
    ))
}

impl RaftTransportApi {
    /// Encodes `result` as the reply, with this node's protocol.
    fn reply<T: serde::Serialize>(&self, result: &T) -> Result<Response<RaftPayload>, Status> {
        let data = encode(result).map_err(|e| {
            tracing::error!(error = %e, "cannot encode a Raft reply");
            Status::internal(format!("cannot encode a Raft reply: {e}"))
        })?;
        Ok(Response::new(RaftPayload {
            data,
            protocol: self.protocols.own(),
            ..Default::default()
        }))
    }
}

#[tonic::async_trait]
impl RaftTransport for RaftTransportApi {
    async fn append_entries(
        &self,
        request: Request<RaftPayload>,
    ) -> Result<Response<RaftPayload>, Status> {
        let rpc: AppendEntriesRequest<TypeConfig> =
            self.receive(request, MessageKind::AppendEntries).await?;
        if let Some(command) = self.protocols.undecodable(&rpc.entries) {
            let why = format!(
                "a command of protocol {} in an entry; this node speaks protocol {}",
                command.protocol(),
                self.protocols.own()
            );
            return Err(undecodable(&why));
        }
        self.heard(&rpc.vote);
        self.reply(&self.raft.append_entries(rpc).await)
    }

    async fn vote(&self, request: Request<RaftPayload>) -> Result<Response<RaftPayload>, Status> {
        let rpc: VoteRequest<u64> = self.receive(request, MessageKind::Vote).await?;
        self.heard(&rpc.vote);
        self.reply(&self.raft.vote(rpc).await)
    }

    async fn install_snapshot(
        &self,
        request: Request<RaftPayload>,
    ) -> Result<Response<RaftPayload>, Status> {
        let rpc: InstallSnapshotRequest<TypeConfig> =
            self.receive(request, MessageKind::InstallSnapshot).await?;
        self.heard(&rpc.vote);
        self.reply(&self.raft.install_snapshot(rpc).await)
    }

    async fn identify(
        &self,
        request: Request<IdentifyRequest>,
    ) -> Result<Response<IdentifyResponse>, Status> {
        self.admit_peer(&request)?;
        // From the metrics, not through Raft's core: a busy leader must
        // answer within the asker's short timeout. The same test as
        // openraft's `is_initialized`: a vote or a log.
        let initialized = {
            let metrics = self.raft.metrics();
            let metrics = metrics.borrow();
            metrics.last_log_index.is_some() || metrics.vote != Vote::default()
        };
        let asker = request.into_inner().node_id;
        Ok(Response::new(self.identity.identify(asker, initialized)))
    }
}
