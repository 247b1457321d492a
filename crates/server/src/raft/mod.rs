//! openraft wiring: the type configuration, the network, node start-up.

pub mod network;
pub mod node;
pub mod types;
