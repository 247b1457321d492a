//! The sending side of Raft traffic: one gRPC channel per peer (to the
//! peer's client port, where `RaftTransport` is served), connected lazily
//! and reconnected by tonic. A single node never sends anything, so it runs
//! this same code with no peers.
//!
//! Failures map onto openraft's error kinds: a connection that cannot be
//! made is `Unreachable` (openraft backs off), a call that fails or times
//! out is a `Network` error (retried at the next heartbeat), and an error
//! the peer's Raft returned is a `RemoteError`. Every reply (an error from
//! the peer's Raft too) counts as contact with the peer ([`Contacts`]),
//! dated when its request was sent.

use super::codec::{decode, encode};
use super::contacts::Contacts;
use super::transport::RAFT_MESSAGE_BYTES_MAX;
use super::types::TypeConfig;
use leasehold_proto::v1::raft_transport_client::RaftTransportClient;
use leasehold_proto::v1::RaftPayload;
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use tonic::transport::{Channel, Endpoint};

/// Bound on connecting to a peer.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);

/// Builds a client per peer.
#[derive(Clone, Debug)]
pub struct Network {
    /// The address outgoing Raft connections are made from: this node's
    /// listen IP (unless it listens on all addresses), so a peer — or a
    /// fault-injecting proxy in a test — can tell which node is calling.
    pub local_ip: Option<IpAddr>,
    /// Where each peer's replies are noted.
    pub contacts: Arc<Contacts>,
}

/// A client to one peer.
#[derive(Clone, Debug)]
pub struct PeerClient {
    target: u64,
    addr: String,
    /// `None` if the address does not parse (every call is then Unreachable).
    client: Option<RaftTransportClient<Channel>>,
    /// Where its replies are noted.
    contacts: Arc<Contacts>,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerClient;

    async fn new_client(&mut self, target: u64, node: &BasicNode) -> PeerClient {
        let url = if node.addr.contains("://") {
            node.addr.clone()
        } else {
            format!("http://{}", node.addr)
        };
        let client = Endpoint::from_shared(url).ok().map(|endpoint| {
            let channel = endpoint
                .local_address(self.local_ip)
                .connect_timeout(CONNECT_TIMEOUT)
                .tcp_nodelay(true)
                .connect_lazy();
            RaftTransportClient::new(channel)
                .max_decoding_message_size(RAFT_MESSAGE_BYTES_MAX)
                .max_encoding_message_size(RAFT_MESSAGE_BYTES_MAX)
        });
        PeerClient {
            target,
            addr: node.addr.clone(),
            client,
            contacts: self.contacts.clone(),
        }
    }
}

/// Why one call failed, before it is typed for openraft.
enum CallError<E> {
    /// No connection.
    Unreachable(std::io::Error),
    /// The call failed or timed out.
    Network(std::io::Error),
    /// The peer's Raft answered with an error.
    Remote(E),
}

impl<E: std::error::Error> CallError<E> {
    fn into_rpc(self, target: u64) -> RPCError<u64, BasicNode, E> {
        match self {
            CallError::Unreachable(e) => RPCError::Unreachable(Unreachable::new(&e)),
            CallError::Network(e) => RPCError::Network(NetworkError::new(&e)),
            CallError::Remote(e) => RPCError::RemoteError(RemoteError::new(target, e)),
        }
    }
}

impl PeerClient {
    /// Sends one request and decodes the peer's `Result`.
    async fn call<Req, Resp, E, F, Fut>(
        &self,
        request: &Req,
        option: &RPCOption,
        send: F,
    ) -> Result<Resp, CallError<E>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: DeserializeOwned,
        F: FnOnce(RaftTransportClient<Channel>, RaftPayload) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<RaftPayload>, tonic::Status>>,
    {
        let io = |kind, text: String| std::io::Error::new(kind, text);
        let Some(client) = self.client.clone() else {
            let text = format!(
                "node {} has an invalid address {:?}",
                self.target, self.addr
            );
            return Err(CallError::Unreachable(io(
                std::io::ErrorKind::InvalidInput,
                text,
            )));
        };
        let data = encode(request)
            .map_err(|e| CallError::Network(io(std::io::ErrorKind::InvalidData, e.to_string())))?;
        let asked_at = self.contacts.now();
        let sent =
            tokio::time::timeout(option.hard_ttl(), send(client, RaftPayload { data })).await;
        let reply = match sent {
            Err(_) => {
                let text = format!(
                    "node {} at {} did not answer in time",
                    self.target, self.addr
                );
                return Err(CallError::Network(io(std::io::ErrorKind::TimedOut, text)));
            }
            Ok(Err(status)) if status.code() == tonic::Code::Unavailable => {
                let text = format!(
                    "node {} at {}: {}",
                    self.target,
                    self.addr,
                    status.message()
                );
                return Err(CallError::Unreachable(io(
                    std::io::ErrorKind::ConnectionRefused,
                    text,
                )));
            }
            Ok(Err(status)) => {
                let text = format!("node {} at {}: {status}", self.target, self.addr);
                return Err(CallError::Network(io(std::io::ErrorKind::Other, text)));
            }
            Ok(Ok(reply)) => reply.into_inner(),
        };
        self.contacts.answered(self.target, asked_at);
        let decoded: Result<Resp, E> = decode(&reply.data)
            .map_err(|e| CallError::Network(io(std::io::ErrorKind::InvalidData, e.to_string())))?;
        decoded.map_err(CallError::Remote)
    }
}

impl RaftNetwork<TypeConfig> for PeerClient {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        self.call(&rpc, &option, |mut client, payload| async move {
            client.append_entries(payload).await
        })
        .await
        .map_err(|e| e.into_rpc(self.target))
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<u64>,
        RPCError<u64, BasicNode, RaftError<u64, InstallSnapshotError>>,
    > {
        self.call(&rpc, &option, |mut client, payload| async move {
            client.install_snapshot(payload).await
        })
        .await
        .map_err(|e| e.into_rpc(self.target))
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        self.call(&rpc, &option, |mut client, payload| async move {
            client.vote(payload).await
        })
        .await
        .map_err(|e| e.into_rpc(self.target))
    }
}
