//! The untimed setup and teardown of an etcd run, which for Leasehold the
//! client library mostly does (see `setup`): pick the leader among the
//! endpoints, open the channels, grant one lease per client, renew the
//! leases during runs longer than a third of their ttl, and revoke them at
//! the end.

use std::time::Duration;

use anyhow::Context as _;
use futures::{StreamExt as _, TryStreamExt as _};
use tonic::transport::{Channel, Endpoint};

use super::proto::{LeaseGrantRequest, LeaseKeepAliveRequest, LeaseRevokeRequest};
use super::rpc::Etcd;

/// Lease ttl of every benchmark client, seconds: Leasehold's benchmark ttl,
/// and the default ttl of etcd's `concurrency.Session`.
pub(super) const LEASE_TTL_S: i64 = 60;
/// Setup calls (grants, revokes) in flight at once.
const SETUP_CONCURRENCY: usize = 64;
/// Bound on each setup or teardown call, so a dead cluster fails the run.
const SETUP_CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// The member the clients load, as found by [`pick_leader`].
pub(super) struct Member {
    pub(super) url: String,
    /// The member's etcd version, for the report.
    pub(super) version: String,
}

fn endpoint(url: &str) -> anyhow::Result<Endpoint> {
    Ok(Endpoint::from_shared(url.to_owned())
        .with_context(|| format!("invalid etcd endpoint URL {url:?}"))?
        .tcp_nodelay(true)
        .connect_timeout(SETUP_CALL_TIMEOUT))
}

/// The endpoint whose member is the leader (writes there skip the forward
/// from a follower), else the first that answers.
pub(super) async fn pick_leader(endpoints: &[String]) -> anyhow::Result<Member> {
    let mut first = None;
    for url in endpoints {
        let Ok(channel) = endpoint(url)?.connect().await else {
            continue;
        };
        let mut etcd = Etcd::new(channel);
        let Ok(Ok(status)) = tokio::time::timeout(SETUP_CALL_TIMEOUT, etcd.status()).await else {
            continue;
        };
        let member = Member {
            url: url.clone(),
            version: status.version,
        };
        let me = status.header.map_or(0, |h| h.member_id);
        if me != 0 && me == status.leader {
            return Ok(member);
        }
        first.get_or_insert(member);
    }
    first.with_context(|| {
        format!(
            "no etcd member answered Maintenance.Status at {}: is etcd running there? \
             (scripts/etcd-cluster.sh start prints the endpoints to pass)",
            endpoints.join(",")
        )
    })
}

/// Opens `n` channels (HTTP/2 connections) to `url`.
pub(super) async fn connect(url: &str, n: u32) -> anyhow::Result<Vec<Channel>> {
    let ep = endpoint(url)?;
    let mut channels = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let channel = ep
            .connect()
            .await
            .with_context(|| format!("cannot connect to etcd at {url}"))?;
        channels.push(channel);
    }
    Ok(channels)
}

/// Grants one lease per client, spreading the calls over the channels.
pub(super) async fn grant_leases(channels: &[Channel], clients: u32) -> anyhow::Result<Vec<i64>> {
    futures::stream::iter(0..clients)
        .map(|i| {
            let mut etcd = Etcd::new(channels[i as usize % channels.len()].clone());
            async move {
                let request = LeaseGrantRequest {
                    ttl: LEASE_TTL_S,
                    id: 0,
                };
                let granted = tokio::time::timeout(SETUP_CALL_TIMEOUT, etcd.lease_grant(request))
                    .await
                    .with_context(|| format!("granting the lease of client {i} timed out"))?
                    .map_err(|s| {
                        anyhow::anyhow!("granting the lease of client {i} failed: {}", s.message())
                    })?;
                if !granted.error.is_empty() || granted.id == 0 {
                    anyhow::bail!(
                        "granting the lease of client {i} failed: {:?}",
                        granted.error
                    );
                }
                Ok(granted.id)
            }
        })
        .buffered(SETUP_CONCURRENCY)
        .try_collect()
        .await
}

/// Renews every lease every third of the ttl (unmeasured) over one
/// LeaseKeepAlive stream, as `concurrency.Session` does. Aborted when the
/// run ends; a failed stream is reopened at the next period.
pub(super) async fn renew_forever(channel: Channel, leases: Vec<i64>) {
    let mut etcd = Etcd::new(channel);
    let period = Duration::from_secs(LEASE_TTL_S as u64 / 3);
    loop {
        tokio::time::sleep(period).await;
        let renewals: Vec<_> = leases
            .iter()
            .map(|&id| LeaseKeepAliveRequest { id })
            .collect();
        let Ok(mut acks) = etcd.lease_keep_alive(futures::stream::iter(renewals)).await else {
            continue;
        };
        // Drain the acks: the server ends the stream after the last one.
        while let Ok(Some(_)) = acks.message().await {}
    }
}

/// Revokes the leases (deleting their keys); returns how many failed.
pub(super) async fn revoke_leases(channel: &Channel, leases: &[i64]) -> usize {
    futures::stream::iter(leases.iter().copied())
        .map(|id| {
            let mut etcd = Etcd::new(channel.clone());
            async move {
                tokio::time::timeout(
                    SETUP_CALL_TIMEOUT,
                    etcd.lease_revoke(LeaseRevokeRequest { id }),
                )
                .await
                .is_ok_and(|r| r.is_ok())
            }
        })
        .buffer_unordered(SETUP_CONCURRENCY)
        .filter(|ok| std::future::ready(!ok))
        .count()
        .await
}
