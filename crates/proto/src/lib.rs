//! # leasehold-proto
//!
//! The `leasehold.v1` wire contract, generated from `proto/leasehold/v1/*.proto`
//! at build time. Server, CLI and client all speak through these types; other
//! languages generate their clients from the same files.
//!
//! ```no_run
//! use leasehold_proto::v1::lock_client::LockClient;
//! use leasehold_proto::v1::AcquireRequest;
//!
//! # async fn example(lease: u64) -> Result<(), Box<dyn std::error::Error>> {
//! let mut locks = LockClient::connect("http://127.0.0.1:7420").await?;
//! let request = AcquireRequest { lease, name: "jobs/nightly".into(), ..Default::default() };
//! let token = locks.acquire(request).await?.into_inner().token;
//! // Pass `token` with every write to the protected resource.
//! # let _ = token;
//! # Ok(())
//! # }
//! ```

#![allow(clippy::all, missing_docs)]

/// Package `leasehold.v1`.
pub mod v1 {
    tonic::include_proto!("leasehold.v1");
}
