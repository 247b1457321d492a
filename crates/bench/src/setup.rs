//! The untimed setup and teardown around a Leasehold run: connecting the
//! clients (one gRPC connection each, shared round-robin by the benchmark
//! clients), granting one lease per benchmark client, revoking them at the
//! end, and the run id that keeps successive runs' names apart. The client
//! library does the rest: it follows the leader when several endpoints are
//! given, and renews the leases in the background for runs longer than a
//! third of their ttl. None of this is measured, so it lives apart from the
//! workloads and the timing in `lib.rs`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use futures::{StreamExt as _, TryStreamExt as _};
use leasehold_client::{Client, ClientOptions, Lease};

use super::plan::Plan;
use super::reason;

/// Lease ttl of every benchmark client.
pub(super) const LEASE_TTL: Duration = Duration::from_secs(60);
/// Setup calls (grants, revokes) in flight at once.
const SETUP_CONCURRENCY: usize = 64;
/// Bound on each revoke at the end, so a dead server does not hold the
/// report back.
const REVOKE_TIMEOUT: Duration = Duration::from_secs(5);

/// 8 hex digits that differ between runs.
pub(super) fn run_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mixed = (nanos ^ (u64::from(std::process::id()) << 32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    format!("{:08x}", (mixed >> 32) as u32)
}

/// Connects `plan.connections` clients, each with its own connection, all
/// sending by `plan.transport`.
pub(super) async fn connect(plan: &Plan) -> anyhow::Result<Vec<Client>> {
    let options = ClientOptions {
        transport: plan.transport.client(),
        tls: plan.tls.clone(),
        auth_token: plan.auth_token.clone(),
        ..ClientOptions::default()
    };
    let mut clients = Vec::with_capacity(plan.connections as usize);
    for _ in 0..plan.connections {
        let client = Client::connect_with(&plan.endpoints, options.clone())
            .await
            .context(
                "cannot connect to the server: is one running there? \
                 (start one with `leasehold serve`, or pass --endpoints)",
            )?;
        clients.push(client);
    }
    Ok(clients)
}

/// Grants `count` leases of `ttl`, benchmark client `i`'s on
/// `clients[i % len]`.
pub(super) async fn grant_leases(
    clients: &[Client],
    count: u32,
    ttl: Duration,
) -> anyhow::Result<Vec<Lease>> {
    futures::stream::iter(0..count)
        .map(|i| {
            let client = &clients[i as usize % clients.len()];
            let lease = client.lease(ttl).owner(format!("leasehold-bench/{i}"));
            async move {
                lease.grant().await.map_err(|e| {
                    let context =
                        format!("granting the lease of client {i} failed ({})", reason(&e));
                    anyhow::Error::new(e).context(context)
                })
            }
        })
        .buffered(SETUP_CONCURRENCY)
        .try_collect()
        .await
}

/// Revokes the leases (releasing their locks); returns how many failed.
pub(super) async fn revoke_leases(leases: Vec<Lease>) -> usize {
    futures::stream::iter(leases)
        .map(|lease| async move {
            let revoked = tokio::time::timeout(REVOKE_TIMEOUT, lease.revoke()).await;
            revoked.is_ok_and(|r| r.is_ok())
        })
        .buffer_unordered(SETUP_CONCURRENCY)
        .filter(|ok| std::future::ready(!ok))
        .count()
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_eight_hex_digits() {
        let run = run_id();
        assert_eq!(run.len(), 8);
        assert!(run.bytes().all(|c| c.is_ascii_hexdigit()), "{run}");
    }
}
