//! Raw gRPC requests, for tests that talk to the server below the client
//! library (the server's own tests, and the client's tests when they act
//! as "someone else" on the server).

use leasehold_proto::v1::lease_client::LeaseClient;
use leasehold_proto::v1::lock_client::LockClient;
use leasehold_proto::v1::{
    AcquireRequest, GrantRequest, KeepAliveRequest, KeepAliveResponse, ReleaseRequest,
    RevokeRequest,
};
use tonic::transport::Channel;

/// Grants a lease with `ttl_ms`; returns its id.
pub async fn grant(leases: &mut LeaseClient<Channel>, ttl_ms: u64) -> u64 {
    leases
        .grant(GrantRequest {
            ttl_ms,
            ..Default::default()
        })
        .await
        .expect("grant")
        .into_inner()
        .lease
}

/// Renews `lease` once (`seq` numbers its renewals); it must succeed.
pub async fn keep_alive(
    leases: &mut LeaseClient<Channel>,
    lease: u64,
    seq: u64,
) -> KeepAliveResponse {
    let request = KeepAliveRequest {
        lease,
        seq,
        ..Default::default()
    };
    let renewed = leases.keep_alive(request).await;
    renewed.expect("keep-alive").into_inner()
}

/// An acquire of `name` for `lease`, waiting up to `wait_ms` in the queue.
pub fn acquire(lease: u64, name: &str, wait_ms: u64) -> AcquireRequest {
    AcquireRequest {
        lease,
        name: name.into(),
        wait_ms,
        ..Default::default()
    }
}

/// A release of `name` by `lease` holding it with `token`.
pub fn release(lease: u64, name: &str, token: u64) -> ReleaseRequest {
    ReleaseRequest {
        lease,
        name: name.into(),
        token,
        request_id: String::new(),
    }
}

/// A revoke of `lease` without a request id.
pub fn revoke(lease: u64) -> RevokeRequest {
    RevokeRequest {
        lease,
        request_id: String::new(),
    }
}

/// Acquires `name` for `lease` without waiting; returns its fencing token.
pub async fn acquire_now(locks: &mut LockClient<Channel>, lease: u64, name: &str) -> u64 {
    locks
        .acquire(acquire(lease, name, 0))
        .await
        .expect("acquire")
        .into_inner()
        .token
}

/// The `leasehold-reason` of a failed call (empty if it has none).
pub fn reason(status: &tonic::Status) -> String {
    status
        .metadata()
        .get("leasehold-reason")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}
