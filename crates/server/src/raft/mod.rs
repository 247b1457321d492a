//! openraft wiring: the type configuration ([`types`]), node start-up and
//! cluster formation ([`node`]), and Raft traffic between nodes over gRPC on
//! the client port: the sending side ([`network`]), the receiving side
//! ([`transport`]), and their encoding ([`codec`]). Both sides note when
//! each member was last heard from ([`contacts`]); with openraft's metrics
//! that tells whether this node has its quorum ([`quorum`]), and whether
//! it was removed from the cluster ([`membership`]), and which protocol
//! each speaks ([`protocol`]). A node whose disk is
//! full yields leadership ([`full_disk`]). openraft's tasks run on a thread
//! of their own ([`commit_thread`]).

pub mod codec;
pub mod commit_thread;
pub mod contacts;
pub mod full_disk;
pub mod membership;
pub mod network;
pub mod node;
pub mod protocol;
pub mod quorum;
pub mod transport;
pub mod types;
