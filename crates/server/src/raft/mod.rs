//! openraft wiring: the type configuration ([`types`]), node start-up and
//! cluster formation ([`node`]), and Raft traffic between nodes over gRPC on
//! the client port: the sending side ([`network`]), the receiving side
//! ([`transport`]), and their encoding ([`codec`]).

pub mod codec;
pub mod network;
pub mod node;
pub mod transport;
pub mod types;
