//! The storm workload: a mass expiry, and what the other clients see while
//! it happens. `--leases M` leases each acquire `--locks N` locks (the hold
//! workload's state), then all their renewers stop at once, as when a fleet
//! of workers dies together: the leases lapse together `--ttl` later and
//! the server frees every lock. Meanwhile [`probe::PROBES`] probe clients, on
//! leases of their own, acquire and release their own locks in a loop; the
//! report gives their latency before the storm and through it (p50, p99,
//! max) and how long after the renewals stopped the last lease was gone.
//!
//! The leases are granted without a renewer of this process's (the
//! library's `grant_lease`, as the hold workload does) and renewed by
//! attached ones (`client.keep_alive(id)`), because an attached renewer
//! stops without revoking when its handle goes: the server, not the bench,
//! ends them.

use std::time::Duration;

use anyhow::Context as _;
use futures::{StreamExt as _, TryStreamExt as _};
use leasehold_client::{Client, Consistency, Error, Lease, LeaseId};
use serde::Serialize;
use tokio::time::Instant;

use super::plan::Plan;
use super::probe::{Phase, Probes, PROBES};
use super::stats::per_second;
use super::{hold, reason, rss, Print};

/// How long the probes run before the renewers stop (the baseline).
const BASELINE: Duration = Duration::from_secs(2);
/// How long the probes go on after the last lease is gone.
const AFTERMATH: Duration = Duration::from_secs(1);
/// The bound: every lock freed within ttl + this.
const FREED_WITHIN_TTL_PLUS: Duration = Duration::from_secs(2);
/// Past ttl + this, waiting for the leases to go is given up.
const GIVE_UP_AFTER_TTL_PLUS: Duration = Duration::from_secs(60);
/// Between two looks at a lease that is still there.
const POLL: Duration = Duration::from_millis(10);
/// Setup calls (grants, attaches) in flight at once.
const SETUP_CONCURRENCY: usize = 64;

/// Builds the state, stops its renewers, measures the storm, reports.
pub(super) async fn run(
    plan: &Plan,
    clients: &[Client],
    json: bool,
    print: Print,
) -> anyhow::Result<()> {
    let shape = plan
        .hold
        .context("the storm workload needs --leases and --locks")?;
    let ttl = plan.ttl;
    let rss = || plan.server_pid.map(rss::resident_bytes).transpose();
    let ids = hold::grant_unrenewed(clients, shape.leases, ttl, "storm").await?;
    let leases = attach(clients, &ids).await?;
    let load_start = Instant::now();
    hold::acquire_all(clients, &ids, shape.locks, plan.clients).await?;
    let loaded = Instant::now();
    let rss_held = rss()?;

    let probes = Probes::start(plan).await?;
    tokio::time::sleep(BASELINE).await;
    let renewals_stopped = Instant::now();
    // Dropped attached leases revoke nothing: their renewers just stop.
    drop(leases);
    let give_up = renewals_stopped + ttl + GIVE_UP_AFTER_TTL_PLUS;
    let gone = wait_gone(&clients[0], ids.len(), give_up).await?;
    let last_gone = Instant::now();
    tokio::time::sleep(AFTERMATH).await;
    let cycles = probes.finish().await?;

    let freed_after = last_gone - renewals_stopped;
    let report = StormReport {
        workload: "storm",
        endpoint: clients[0].endpoint(),
        leases: shape.leases,
        locks_per_lease: shape.locks,
        locks_held: shape.total(),
        ttl_ms: ttl.as_millis() as u64,
        acquires_per_s: per_second(shape.total(), (loaded - load_start).as_secs_f64()),
        server_rss_held_bytes: rss_held,
        server_rss_after_bytes: rss()?,
        leases_left: ids.len() - gone,
        freed_after_ms: freed_after.as_millis() as u64,
        renewers_stopped_unix_ms: super::probe::unix_ms(renewals_stopped),
        freed_bound_ms: (ttl + FREED_WITHIN_TTL_PLUS).as_millis() as u64,
        freed_in_bound: gone == ids.len() && freed_after <= ttl + FREED_WITHIN_TTL_PLUS,
        probes: PROBES,
        baseline: Phase::of(&cycles, renewals_stopped - BASELINE, renewals_stopped),
        storm: Phase::of(&cycles, renewals_stopped, last_gone + AFTERMATH),
    };
    super::print_report(&report, || report.human(), json, print)
}

/// Attaches a renewer to each lease: renewed while the handles live,
/// neither revoked nor released when they go.
async fn attach(clients: &[Client], ids: &[LeaseId]) -> anyhow::Result<Vec<Lease>> {
    futures::stream::iter(ids.iter().enumerate())
        .map(|(i, &id)| async move {
            let client = &clients[i % clients.len()];
            client.keep_alive(id).start().await.map_err(|e| {
                let context = format!("renewing storm lease {} failed ({})", id.0, reason(&e));
                anyhow::Error::new(e).context(context)
            })
        })
        .buffered(SETUP_CONCURRENCY)
        .try_collect()
        .await
}

/// Waits until every storm lease's locks are free, or `give_up`; returns
/// how many leases' locks went. A lease's end frees all its locks in one
/// command, so one lock (its first) stands for each; a lock is looked at
/// (a cheap `get`, not the lease with its thousand locks) one at a time,
/// in order: when the loop ends, the last of them has just gone.
async fn wait_gone(client: &Client, leases: usize, give_up: Instant) -> anyhow::Result<usize> {
    for l in 0..leases {
        let name = hold::lock_name(l, 0)?;
        loop {
            match client.get_lock(&name, Consistency::Linearizable).await {
                Err(Error::NoSuchLock { .. }) => break,
                _ if Instant::now() >= give_up => return Ok(l),
                _ => tokio::time::sleep(POLL).await,
            }
        }
    }
    Ok(leases)
}

/// What the storm workload measured. Serialized as the `--json` object.
#[derive(Clone, Debug, Serialize)]
struct StormReport {
    workload: &'static str,
    endpoint: String,
    leases: u32,
    locks_per_lease: u32,
    locks_held: u64,
    ttl_ms: u64,
    acquires_per_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_rss_held_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_rss_after_bytes: Option<u64>,
    /// Leases still there when waiting was given up (0: all went).
    leases_left: usize,
    /// From the renewers' stop to the last lease gone.
    freed_after_ms: u64,
    /// When the renewers stopped, by the wall clock: beside the server's
    /// log, its last "lease expired" line says when the server itself
    /// freed the last lease, without this side's polling in between.
    renewers_stopped_unix_ms: u64,
    /// ttl + 2 s.
    freed_bound_ms: u64,
    freed_in_bound: bool,
    probes: u32,
    /// The probes' cycles in the 2 s before the renewers stopped.
    baseline: Phase,
    /// From the renewers' stop to 1 s after the last lease went.
    storm: Phase,
}

impl StormReport {
    /// The summary for people.
    fn human(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(s, "leasehold bench: storm (a mass expiry, probed)");
        let _ = writeln!(
            s,
            "  endpoint {}, {} leases × {} locks = {} held (loaded at {:.1}/s), ttl {} ms",
            self.endpoint,
            self.leases,
            self.locks_per_lease,
            self.locks_held,
            self.acquires_per_s,
            self.ttl_ms
        );
        let _ = writeln!(
            s,
            "  freed    {} ms after the renewers stopped at Unix ms {} (bound {} ms: {}), {} leases left",
            self.freed_after_ms,
            self.renewers_stopped_unix_ms,
            self.freed_bound_ms,
            if self.freed_in_bound { "met" } else { "MISSED" },
            self.leases_left
        );
        self.baseline.write_line(&mut s, "baseline");
        self.storm.write_line(&mut s, "storm");
        if let (Some(held), Some(after)) = (self.server_rss_held_bytes, self.server_rss_after_bytes)
        {
            let _ = writeln!(
                s,
                "  server   RSS {} held, {} after",
                rss::mib(held),
                rss::mib(after)
            );
        }
        s
    }
}
