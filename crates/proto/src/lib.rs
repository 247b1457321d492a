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

/// Reading the Leasehold part of a gRPC status: every server error carries
/// an [`v1::ErrorDetail`] in the status details and its reason in the
/// `leasehold-reason` metadata. One decoder, shared by every client.
pub mod status {
    use super::v1::ErrorDetail;
    use prost::Message;

    /// Decodes the `ErrorDetail` carried in the status details, if any.
    pub fn error_detail(status: &tonic::Status) -> Option<ErrorDetail> {
        if status.details().is_empty() {
            return None;
        }
        ErrorDetail::decode(status.details()).ok()
    }

    /// The server's machine-readable reason (`Busy`, `NotLeader`, …), from the
    /// detail or else the `leasehold-reason` metadata; `None` for errors that
    /// did not come from a Leasehold server (transport failures, tonic's own).
    pub fn reason(status: &tonic::Status, detail: Option<&ErrorDetail>) -> Option<String> {
        detail
            .map(|d| d.reason.clone())
            .filter(|r| !r.is_empty())
            .or_else(|| {
                status
                    .metadata()
                    .get("leasehold-reason")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            })
    }
}
