//! The untimed setup and teardown around a run: picking the endpoint (the
//! leader, when several are given), opening the gRPC channels, granting one
//! lease per client, keeping those leases alive during long runs, revoking
//! them at the end, and the request ids every call carries. None of this is
//! measured, so it lives apart from the workloads and the timing in `mod.rs`.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use futures::{StreamExt as _, TryStreamExt as _};
use leasehold_proto::v1::{
    cluster_client::ClusterClient, lease_client::LeaseClient, GrantRequest, KeepAliveRequest,
    OwnerInfo, RevokeRequest, StatusRequest,
};
use tonic::transport::{Channel, Endpoint};

use super::reason;

/// Lease ttl of every benchmark client.
pub(super) const LEASE_TTL_MS: u64 = 60_000;
/// Setup calls (grants, revokes) in flight at once.
const SETUP_CONCURRENCY: usize = 64;

/// Unique request ids: `b{run}-{client}-{n}`, printable ASCII, at most 40
/// bytes. The run id keeps ids of successive runs apart (the server remembers
/// ids for idempotent retries).
pub(super) struct RequestIds {
    prefix: String,
    next: u64,
}

impl RequestIds {
    pub(super) fn new(run_id: &str, client: u32) -> Self {
        RequestIds {
            prefix: format!("b{run_id}-{client}-"),
            next: 0,
        }
    }

    pub(super) fn next(&mut self) -> String {
        let mut id = String::with_capacity(self.prefix.len() + 20);
        id.push_str(&self.prefix);
        let _ = write!(id, "{}", self.next);
        self.next += 1;
        id
    }
}

/// 8 hex digits that differ between runs.
pub(super) fn run_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mixed = (nanos ^ (u64::from(std::process::id()) << 32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    format!("{:08x}", (mixed >> 32) as u32)
}

fn endpoint(url: &str) -> anyhow::Result<Endpoint> {
    Ok(Endpoint::from_shared(url.to_owned())
        .with_context(|| format!("invalid endpoint URL {url:?}"))?
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(5)))
}

/// With several endpoints, the one that reports itself leader (else the first).
pub(super) async fn pick_endpoint(endpoints: &[String]) -> anyhow::Result<String> {
    if endpoints.len() > 1 {
        for url in endpoints {
            let Ok(ep) = endpoint(url) else { continue };
            let Ok(channel) = ep.connect().await else {
                continue;
            };
            if let Ok(status) = ClusterClient::new(channel).status(StatusRequest {}).await {
                if status.get_ref().state == "Leader" {
                    return Ok(url.clone());
                }
            }
        }
    }
    Ok(endpoints[0].clone())
}

pub(super) async fn connect(url: &str, n: u32) -> anyhow::Result<Vec<Channel>> {
    let ep = endpoint(url)?;
    let mut channels = Vec::with_capacity(n as usize);
    for _ in 0..n {
        // Each connect() opens its own HTTP/2 connection.
        let channel = ep.connect().await.with_context(|| {
            format!(
                "cannot connect to {url}: is a server running there? \
                 (start one with `leasehold serve`, or pass --endpoints)"
            )
        })?;
        channels.push(channel);
    }
    Ok(channels)
}

pub(super) async fn grant_leases(
    channels: &[Channel],
    clients: u32,
    run_id: &str,
) -> anyhow::Result<Vec<u64>> {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .unwrap_or_default();
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    futures::stream::iter(0..clients)
        .map(|i| {
            let mut lease = LeaseClient::new(channels[i as usize % channels.len()].clone());
            let request = GrantRequest {
                ttl_ms: LEASE_TTL_MS,
                owner: Some(OwnerInfo {
                    owner: format!("leasehold-bench/{i}"),
                    host: host.clone(),
                    pid: std::process::id(),
                    process_start_unix_ms: started,
                    labels: Default::default(),
                }),
                request_id: format!("b{run_id}-{i}-grant"),
            };
            async move {
                let response = lease.grant(request).await.map_err(|s| {
                    anyhow::anyhow!(
                        "granting the lease of client {i} failed: {} ({})",
                        s.message(),
                        reason(&s)
                    )
                })?;
                Ok::<u64, anyhow::Error>(response.into_inner().lease)
            }
        })
        .buffered(SETUP_CONCURRENCY)
        .try_collect()
        .await
}

/// Renews every lease every third of the ttl (unmeasured), for runs longer
/// than the ttl. Aborted when the run ends.
pub(super) async fn renew_forever(channel: Channel, leases: Vec<u64>) {
    let mut client = LeaseClient::new(channel);
    let period = Duration::from_millis(LEASE_TTL_MS / 3);
    loop {
        tokio::time::sleep(period).await;
        for &lease in &leases {
            let _ = client.keep_alive(KeepAliveRequest { lease, seq: 0 }).await;
        }
    }
}

/// Revokes the leases (releasing their locks); returns how many failed.
pub(super) async fn revoke_leases(channel: &Channel, leases: &[u64], run_id: &str) -> usize {
    futures::stream::iter(leases.iter().copied())
        .map(|lease| {
            let mut client = LeaseClient::new(channel.clone());
            let request = RevokeRequest {
                lease,
                request_id: format!("b{run_id}-revoke-{lease}"),
            };
            async move {
                tokio::time::timeout(Duration::from_secs(5), client.revoke(request))
                    .await
                    .is_ok_and(|r| r.is_ok())
            }
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
    fn request_ids_are_unique_printable_and_short() {
        let run = run_id();
        assert_eq!(run.len(), 8);
        let mut ids = RequestIds::new(&run, u32::MAX);
        ids.next = u64::MAX - 2;
        let a = ids.next();
        let b = ids.next();
        assert_ne!(a, b);
        for id in [a, b, format!("b{run}-{}-grant", u32::MAX)] {
            assert!(id.len() <= 64, "{id}");
            assert!(id.bytes().all(|c| c.is_ascii_graphic()), "{id}");
        }
        let mut ids = RequestIds::new(&run, 3);
        assert_eq!(ids.next(), format!("b{run}-3-0"));
        assert_eq!(ids.next(), format!("b{run}-3-1"));
    }
}
