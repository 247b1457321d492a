//! The Raft network. A single node never sends a Raft message, so this
//! network reports every peer unreachable; the cluster issue replaces it with
//! gRPC transport between nodes. Keeping the factory in place means a single
//! node runs exactly the code path a cluster runs.

use super::types::TypeConfig;
use openraft::error::{InstallSnapshotError, RPCError, RaftError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;

/// Builds a client per peer.
#[derive(Clone, Debug, Default)]
pub struct Network;

/// A client to one peer.
#[derive(Clone, Debug)]
pub struct PeerClient {
    target: u64,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerClient;

    async fn new_client(&mut self, target: u64, _node: &BasicNode) -> PeerClient {
        PeerClient { target }
    }
}

impl PeerClient {
    fn unreachable<E: std::error::Error>(&self) -> RPCError<u64, BasicNode, E> {
        let error = std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            format!(
                "node {} is not reachable: this build serves single-node clusters only",
                self.target
            ),
        );
        RPCError::Unreachable(Unreachable::new(&error))
    }
}

impl RaftNetwork<TypeConfig> for PeerClient {
    async fn append_entries(
        &mut self,
        _rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        Err(self.unreachable())
    }

    async fn install_snapshot(
        &mut self,
        _rpc: InstallSnapshotRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<u64>,
        RPCError<u64, BasicNode, RaftError<u64, InstallSnapshotError>>,
    > {
        Err(self.unreachable())
    }

    async fn vote(
        &mut self,
        _rpc: VoteRequest<u64>,
        _option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        Err(self.unreachable())
    }
}
