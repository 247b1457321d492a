//! The hold workload: builds held state and measures what it costs.
//! `--leases M` leases each acquire `--locks N` locks and keep them, with
//! `--clients` acquires in flight; the report gives the load rate and,
//! with `--server-pid`, the server's resident memory before, right after
//! the load, and settled 10 s later, so bytes per held lock (settled), the
//! figure a capacity plan needs. Then the leases are revoked (one command
//! frees each lease's locks) and that is timed too.
//!
//! The leases live an hour ([`HOLD_LEASE_TTL`]), renewed by the library
//! every 20 minutes: a million leases renewing at the timed workloads' ttl
//! of 60 s would be a keep-alive load of their own and blur the memory
//! figure. A bench that is killed leaves its locks for that hour; the run
//! prefix keeps them apart from anyone else's.

use std::time::Duration;

use anyhow::Context as _;
use futures::{StreamExt as _, TryStreamExt as _};
use leasehold_client::{Client, Lease, LockGuard, LockName};
use serde::Serialize;
use tokio::time::Instant;

use super::plan::Plan;
use super::{reason, rss, setup, Print};

/// Lease ttl of the hold workload.
const HOLD_LEASE_TTL: Duration = Duration::from_secs(3600);
/// How long after the load the settled RSS is read: a snapshot the load
/// triggered is built by then (its copy keeps the tables' replaced nodes,
/// and its buffer, until it is stored), and the leases renew only every
/// 20 minutes, so nothing else is going on.
const SETTLE: Duration = Duration::from_secs(10);

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
    let leases = setup::grant_leases(clients, shape.leases, HOLD_LEASE_TTL).await?;
    let granted = Instant::now();
    let guards = acquire_all(&leases, shape.locks, plan.clients).await?;
    let loaded = Instant::now();
    let rss_held = rss()?;
    if plan.server_pid.is_some() {
        tokio::time::sleep(SETTLE).await;
    }
    let rss_settled = rss()?;
    let revoke_failures = setup::revoke_leases(leases).await;
    let revoked = Instant::now();
    // Off the runtime, a dropped guard sends no release of its own: the
    // revokes above already freed every lock, in one command per lease.
    let _ = std::thread::spawn(move || drop(guards)).join();
    let report = HoldReport {
        workload: "hold",
        endpoint: clients[0].endpoint(),
        leases: shape.leases,
        locks_per_lease: shape.locks,
        locks_held: shape.total(),
        in_flight: plan.clients,
        connections: plan.connections,
        transport: plan.transport.name(),
        grant_s: seconds(granted - start),
        acquire_s: seconds(loaded - granted),
        acquires_per_s: rate(shape.total(), loaded - granted),
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

/// Every lease acquires its `locks` locks, `in_flight` acquires at a time
/// across all leases; the guards keep them.
pub(super) async fn acquire_all(
    leases: &[Lease],
    locks: u32,
    in_flight: u32,
) -> anyhow::Result<Vec<LockGuard>> {
    let pairs = (0..leases.len()).flat_map(|l| (0..locks).map(move |k| (l, k)));
    futures::stream::iter(pairs)
        .map(|(l, k)| async move {
            let name = lock_name(l, k)?;
            leases[l].lock(&name).acquire().await.map_err(|e| {
                let context = format!("acquiring {name} failed ({})", reason(&e));
                anyhow::Error::new(e).context(context)
            })
        })
        .buffer_unordered(in_flight as usize)
        .try_collect()
        .await
}

/// Lease `l`'s `k`th lock, under this run's prefix.
pub(super) fn lock_name(l: usize, k: u32) -> anyhow::Result<LockName> {
    let raw = format!("{}h/{l}/{k}", super::run_prefix());
    LockName::parse(&raw).with_context(|| format!("{raw} is not a valid lock name"))
}

fn seconds(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}

pub(super) fn rate(count: u64, d: Duration) -> f64 {
    let per_s = count as f64 / d.as_secs_f64().max(1e-9);
    (per_s * 10.0).round() / 10.0
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

    #[test]
    fn rates_and_seconds_are_rounded() {
        assert_eq!(rate(1000, Duration::from_millis(400)), 2500.0);
        assert_eq!(seconds(Duration::from_micros(1_234_567)), 1.235);
    }
}
