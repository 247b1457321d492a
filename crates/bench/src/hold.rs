//! The hold workload: builds held state and measures what it costs.
//! `--leases M` leases each acquire `--locks N` locks and keep them, with
//! `--clients` acquires in flight; the report gives the load rate and,
//! with `--server-pid`, the server's resident memory before, right after
//! the load, and settled 10 s later, so bytes per held lock (settled), the
//! figure a capacity plan needs. Then the leases are revoked (one command
//! frees each lease's locks) and that is timed too.
//!
//! The leases are granted with the library's `grant_lease` and live an
//! hour ([`HOLD_LEASE_TTL`]) unrenewed, and the locks are acquired by lease
//! id (`client.acquire`, unary): no keeper and no session stream per
//! lease, so a million leases of one lock each cost the server their state
//! and nothing else (what a kept lease's stream costs is the sessions
//! workload's figure), and no renewal load blurs the memory figure. A bench
//! that is killed leaves its locks for that hour; the run prefix keeps them
//! apart from anyone else's.

use std::time::Duration;

use anyhow::Context as _;
use futures::{StreamExt as _, TryStreamExt as _};
use leasehold_client::{Client, LeaseId, LockName, LockOptions};
use serde::Serialize;
use tokio::time::Instant;

use super::plan::Plan;
use super::stats::{per_second, seconds};
use super::{reason, rss, Print};

/// Lease ttl of the hold workload.
pub(super) const HOLD_LEASE_TTL: Duration = Duration::from_secs(3600);
/// How long after the load the settled RSS is read: a snapshot the load
/// triggered is built by then (its copy keeps the tables' replaced nodes,
/// and its buffer, until it is stored), and the leases renew only every
/// 20 minutes, so nothing else is going on.
const SETTLE: Duration = Duration::from_secs(10);
/// Grants and revokes in flight at once.
const SETUP_CONCURRENCY: usize = 64;

/// Builds the state, reports, and revokes.
pub(super) async fn run(
    plan: &Plan,
    clients: &[Client],
    json: bool,
    print: Print,
) -> anyhow::Result<()> {
    let shape = plan
        .hold
        .context("the hold workload needs --leases and --locks")?;
    let rss = || plan.server_pid.map(rss::resident_bytes).transpose();
    let rss_before = rss()?;
    let start = Instant::now();
    let ids = grant_unrenewed(clients, shape.leases, HOLD_LEASE_TTL, "hold").await?;
    let granted = Instant::now();
    acquire_all(clients, &ids, shape.locks, plan.clients).await?;
    let loaded = Instant::now();
    let rss_held = rss()?;
    if plan.server_pid.is_some() {
        tokio::time::sleep(SETTLE).await;
    }
    let rss_settled = rss()?;
    let revoke_failures = revoke(clients, &ids).await;
    let revoked = Instant::now();
    let report = HoldReport {
        workload: "hold",
        endpoint: clients[0].endpoint(),
        leases: shape.leases,
        locks_per_lease: shape.locks,
        locks_held: shape.total(),
        in_flight: plan.clients,
        connections: plan.connections,
        transport: "unary",
        grant_s: seconds(granted - start),
        acquire_s: seconds(loaded - granted),
        acquires_per_s: per_second(shape.total(), (loaded - granted).as_secs_f64()),
        revoke_s: seconds(revoked - loaded),
        revoke_failures,
        server_rss_before_bytes: rss_before,
        server_rss_held_bytes: rss_held,
        server_rss_settled_bytes: rss_settled,
        server_rss_after_revoke_bytes: rss()?,
        bytes_per_lock: rss_before
            .zip(rss_settled)
            .map(|(before, held)| held.saturating_sub(before) as f64 / shape.total() as f64)
            .map(|b| b.round()),
    };
    super::print_report(&report, || report.human(), json, print)
}

/// Grants `count` leases of `ttl` that no renewer of this process owns
/// (owners `leasehold-bench/<workload>/<i>`).
pub(super) async fn grant_unrenewed(
    clients: &[Client],
    count: u32,
    ttl: Duration,
    workload: &str,
) -> anyhow::Result<Vec<LeaseId>> {
    futures::stream::iter(0..count)
        .map(|i| async move {
            let client = &clients[i as usize % clients.len()];
            let owner = format!("leasehold-bench/{workload}/{i}");
            let owner = leasehold_client::owner_info(Some(owner), vec![]);
            let granted = client.grant_lease(ttl, owner).await;
            granted.map(|g| g.lease).map_err(|e| {
                let context = format!("granting {workload} lease {i} failed ({})", reason(&e));
                anyhow::Error::new(e).context(context)
            })
        })
        .buffered(SETUP_CONCURRENCY)
        .try_collect()
        .await
}

/// Every lease acquires its `locks` locks by id, `in_flight` acquires at a
/// time across all leases; the locks stay held until the leases end.
pub(super) async fn acquire_all(
    clients: &[Client],
    ids: &[LeaseId],
    locks: u32,
    in_flight: u32,
) -> anyhow::Result<()> {
    let options = LockOptions::default();
    let pairs = (0..ids.len()).flat_map(|l| (0..locks).map(move |k| (l, k)));
    futures::stream::iter(pairs)
        .map(|(l, k)| {
            let options = &options;
            async move {
                let name = lock_name(l, k)?;
                let client = &clients[l % clients.len()];
                match client.acquire(ids[l], &name, options).await {
                    Ok(_) => Ok(()),
                    Err(e) => {
                        let context = format!("acquiring {name} failed ({})", reason(&e));
                        Err(anyhow::Error::new(e).context(context))
                    }
                }
            }
        })
        .buffer_unordered(in_flight as usize)
        .try_collect()
        .await
}

/// Revokes the leases (one command frees each one's locks); returns how
/// many failed.
pub(super) async fn revoke(clients: &[Client], ids: &[LeaseId]) -> usize {
    futures::stream::iter(ids.iter().enumerate())
        .map(|(i, &id)| async move {
            let client = &clients[i % clients.len()];
            client.revoke_lease(id).await.is_ok()
        })
        .buffer_unordered(SETUP_CONCURRENCY)
        .filter(|ok| std::future::ready(!ok))
        .count()
        .await
}

/// Lease `l`'s `k`th lock, under this run's prefix.
pub(super) fn lock_name(l: usize, k: u32) -> anyhow::Result<LockName> {
    let raw = format!("{}h/{l}/{k}", super::run_prefix());
    LockName::parse(&raw).with_context(|| format!("{raw} is not a valid lock name"))
}

/// What the hold workload measured. Serialized as the `--json` object.
#[derive(Clone, Debug, Serialize)]
struct HoldReport {
    workload: &'static str,
    endpoint: String,
    leases: u32,
    locks_per_lease: u32,
    locks_held: u64,
    /// Acquires in flight (`--clients`).
    in_flight: u32,
    connections: u32,
    transport: &'static str,
    grant_s: f64,
    acquire_s: f64,
    acquires_per_s: f64,
    /// Revoking every lease, which frees all the locks.
    revoke_s: f64,
    revoke_failures: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_rss_before_bytes: Option<u64>,
    /// With every lock held, right after the load.
    #[serde(skip_serializing_if = "Option::is_none")]
    server_rss_held_bytes: Option<u64>,
    /// With every lock held, 10 s later (any snapshot the load triggered
    /// is built).
    #[serde(skip_serializing_if = "Option::is_none")]
    server_rss_settled_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_rss_after_revoke_bytes: Option<u64>,
    /// (settled − before) / locks held.
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes_per_lock: Option<f64>,
}

impl HoldReport {
    /// The summary for people.
    fn human(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(s, "leasehold bench: hold (leases holding locks, kept)");
        let _ = writeln!(
            s,
            "  endpoint {}, {} leases × {} locks = {} held, {} acquires in flight, {} connections ({})",
            self.endpoint,
            self.leases,
            self.locks_per_lease,
            self.locks_held,
            self.in_flight,
            self.connections,
            self.transport
        );
        let _ = writeln!(
            s,
            "  granted in {:.3} s, acquired in {:.3} s ({:.1}/s), revoked in {:.3} s ({} failed)",
            self.grant_s, self.acquire_s, self.acquires_per_s, self.revoke_s, self.revoke_failures
        );
        if let (Some(before), Some(held), Some(settled), Some(after), Some(per_lock)) = (
            self.server_rss_before_bytes,
            self.server_rss_held_bytes,
            self.server_rss_settled_bytes,
            self.server_rss_after_revoke_bytes,
            self.bytes_per_lock,
        ) {
            let _ = writeln!(
                s,
                "  server   RSS {} before, {} held, {} settled ({per_lock} bytes per lock), {} after the revokes",
                rss::mib(before),
                rss::mib(held),
                rss::mib(settled),
                rss::mib(after)
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_per_lease_and_valid() {
        let a = lock_name(3, 7).unwrap();
        assert!(a.as_str().ends_with("h/3/7"), "{a}");
        assert_ne!(lock_name(3, 7).unwrap(), lock_name(37, 0).unwrap());
    }
}
