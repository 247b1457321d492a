//! # leasehold-proto
//!
//! The `leasehold.v1` wire contract, generated from `proto/leasehold/v1/*.proto`
//! at build time. Server, CLI and client all speak through these types; other
//! languages generate their clients from the same files.

#![allow(clippy::all, missing_docs)]

/// Package `leasehold.v1`.
pub mod v1 {
    tonic::include_proto!("leasehold.v1");
}
