//! # leasehold-proto
//!
//! The `leasehold.v1` wire contract, generated from `proto/leasehold/v1/*.proto`
//! at build time. Server, CLI and client all speak through these types; other
//! languages generate their clients from the same files, or ask the server's
//! reflection, which serves [`PUBLIC_FILE_DESCRIPTOR_SET`]. [`status`] is the
//! one writer and reader of the error details a failed call carries;
//! [`reason`] converts their typed reason to and from the core's.
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

pub mod codec;
pub mod json;
pub mod permits;
pub mod reason;
pub mod refusal;
pub mod status;
pub mod tls_mismatch;

/// The encoded `FileDescriptorSet` of the public `leasehold.v1` services
/// (Lease, Lock, Cluster, Watch, FencedStore) and the messages they use, for
/// gRPC server reflection. The internal `RaftTransport` (raft.proto) is left
/// out, so reflection clients never learn of it.
pub const PUBLIC_FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/leasehold_public_fds.bin"));

/// The encoded `FileDescriptorSet` of every `leasehold.v1` service, the
/// internal ones too (tests that call every method read it; reflection
/// serves [`PUBLIC_FILE_DESCRIPTOR_SET`]).
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/leasehold_fds.bin"));

#[cfg(test)]
mod tests {
    use prost::Message;

    #[test]
    fn the_public_descriptor_set_has_the_public_services_only() {
        let set =
            prost_types::FileDescriptorSet::decode(super::PUBLIC_FILE_DESCRIPTOR_SET).unwrap();
        let mut services: Vec<String> = set
            .file
            .iter()
            .flat_map(|file| {
                file.service
                    .iter()
                    .map(move |service| format!("{}.{}", file.package(), service.name()))
            })
            .collect();
        services.sort();
        assert_eq!(
            services,
            [
                "leasehold.v1.Cluster",
                "leasehold.v1.FencedStore",
                "leasehold.v1.Lease",
                "leasehold.v1.Lock",
                "leasehold.v1.Watch",
            ]
        );
        assert!(set
            .file
            .iter()
            .all(|file| file.name() != "leasehold/v1/raft.proto"));
    }
}
