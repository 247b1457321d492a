//! The sending side of Raft traffic: one gRPC channel per peer (to the
//! peer's client port, where `RaftTransport` is served), connected lazily
//! and reconnected by tonic. A single node never sends anything, so it runs
//! this same code with no peers.
//!
//! With TLS (see [`PeerDialer`]) every connection is `https://`: it trusts
//! the peer CA and presents this node's certificate.
//!
//! Every request carries this node's id and cluster id. A peer that answers
//! is noted as having taken part ([`Identity::saw`]); a peer of another
//! cluster refuses with FAILED_PRECONDITION, which is logged (rate-limited)
//! and treated like an unreachable peer.
//!
//! Failures map onto openraft's error kinds: a connection that cannot be
//! made, or a refusal by the peer's cluster id, is `Unreachable` (openraft
//! backs off), a call that fails or times out is a `Network` error (retried
//! at the next heartbeat), and an error the peer's Raft returned is a
//! `RemoteError`. Every reply (an error from the peer's Raft too) counts as
//! contact with the peer ([`Contacts`]), dated when its request was sent.

use super::codec::{decode, encode};
use super::contacts::Contacts;
use super::protocol::Protocols;
use super::transport::RAFT_MESSAGE_BYTES_MAX;
use super::types::TypeConfig;
use crate::identity::Identity;
use crate::tls::PeerDialer;
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
use tonic::transport::Channel;

/// Bound on connecting to a peer.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);

/// Builds a client per peer.
#[derive(Clone, Debug)]
pub struct Network {
    /// The address outgoing Raft connections are made from: this node's
    /// listen IP (unless it listens on all addresses), so a peer — or a
    /// fault-injecting proxy in a test — can tell which node is calling.
    pub local_ip: Option<IpAddr>,
    /// This node's cluster identity: sent with every request, told of every
    /// peer that answers, and of every refusal.
    pub identity: Arc<Identity>,
    /// Where each peer's replies are noted.
    pub contacts: Arc<Contacts>,
    /// The protocol sent with every request; each reply's is noted there.
    pub protocols: Arc<Protocols>,
    /// How a connection to a peer is made (plaintext or TLS).
    pub dialer: PeerDialer,
}

/// A client to one peer.
#[derive(Clone, Debug)]
pub struct PeerClient {
    target: u64,
    addr: String,
    /// `None` if the address does not parse (every call is then Unreachable).
    client: Option<RaftTransportClient<Channel>>,
    identity: Arc<Identity>,
    /// Where its replies are noted.
    contacts: Arc<Contacts>,
    /// The protocol sent; the peer's is noted there.
    protocols: Arc<Protocols>,
}

/// Asks the node at `addr` one question (`ask` on a fresh connection), all
/// within `limit`: the identity check before forming a cluster, the probe
/// before adding a member. The error says why there was no answer.
pub async fn ask_once<T, F, Fut>(
    dialer: &PeerDialer,
    addr: &str,
    limit: Duration,
    ask: F,
) -> Result<T, String>
where
    F: FnOnce(Channel) -> Fut,
    Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
{
    let asked = async {
        let channel = dialer
            .endpoint(addr)?
            .connect_timeout(limit)
            .connect()
            .await
            .map_err(|error| innermost_cause(&error))?;
        ask(channel)
            .await
            .map(tonic::Response::into_inner)
            .map_err(|status| status.message().to_owned())
    };
    tokio::time::timeout(limit, asked)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {} ms", limit.as_millis())))
}

/// The innermost cause's text ("Connection refused (os error 111)"), not
/// tonic's bare "transport error".
fn innermost_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerClient;

    async fn new_client(&mut self, target: u64, node: &BasicNode) -> PeerClient {
        let endpoint = self.dialer.endpoint(&node.addr);
        if let Err(error) = &endpoint {
            tracing::warn!(peer = target, addr = %node.addr, "cannot call this peer: {error}");
        }
        let client = endpoint.ok().map(|endpoint| {
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
            identity: self.identity.clone(),
            contacts: self.contacts.clone(),
            protocols: self.protocols.clone(),
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
        let payload = RaftPayload {
            data,
            cluster_id: self.identity.cluster_id_text(),
            node_id: self.identity.node_id(),
            protocol: self.protocols.own(),
        };
        let asked_at = self.contacts.now();
        let sent = tokio::time::timeout(option.hard_ttl(), send(client, payload)).await;
        let reply = match sent {
            Err(_) => {
                let text = format!(
                    "node {} at {} did not answer in time",
                    self.target, self.addr
                );
                return Err(CallError::Network(io(std::io::ErrorKind::TimedOut, text)));
            }
            Ok(Err(status)) => return Err(self.refused(&status)),
            Ok(Ok(reply)) => reply.into_inner(),
        };
        // Its Raft handled the message: it holds a vote or a log now.
        self.identity.saw(self.target);
        self.contacts.answered(self.target, asked_at);
        self.protocols.heard(self.target, reply.protocol);
        let decoded: Result<Resp, E> = decode(&reply.data)
            .map_err(|e| CallError::Network(io(std::io::ErrorKind::InvalidData, e.to_string())))?;
        decoded.map_err(CallError::Remote)
    }

    /// What an error status from the peer means for openraft: unreachable
    /// if it is down or belongs to another cluster (openraft backs off; a
    /// refusal by cluster id is logged, rate-limited), a network error
    /// otherwise.
    fn refused<E>(&self, status: &tonic::Status) -> CallError<E> {
        let text = format!(
            "node {} at {}: {}",
            self.target,
            self.addr,
            status.message()
        );
        let unreachable = |kind| CallError::Unreachable(std::io::Error::new(kind, text.clone()));
        match status.code() {
            tonic::Code::Unavailable => unreachable(std::io::ErrorKind::ConnectionRefused),
            tonic::Code::FailedPrecondition => {
                self.identity.refused_by(self.target, &self.addr, status);
                unreachable(std::io::ErrorKind::PermissionDenied)
            }
            _ => {
                let text = format!("node {} at {}: {status}", self.target, self.addr);
                CallError::Network(std::io::Error::other(text))
            }
        }
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
