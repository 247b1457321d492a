//! The sessions workload: many clients, each keeping one lease alive, as a
//! fleet of idle workers does. `--clients N` leases of ttl `--ttl` are
//! granted through the client library over `--connections` connections;
//! each lease's keeper opens its own `Lock.Session` stream and renews on
//! it every ttl/3 (the library's default), exactly as in an application.
//! After one renewal interval of warm-up (every keeper is in its steady
//! rhythm), the run measures `--seconds`: the keepers' own renewal round
//! trips (caught by [`RenewalTap`]), failed renewals, leases lost, and,
//! with `--server-pid`, the server's resident memory and CPU time. The
//! bench's own CPU time is reported beside it, since the two share the
//! machine.

use std::collections::BTreeMap;
use std::time::Duration;

use leasehold_client::{Client, Lease};
use serde::Serialize;
use tokio::time::Instant;

use super::plan::Plan;
use super::renewal_tap::RenewalTap;
use super::stats::{per_second, round_to, Percentiles};
use super::{rss, setup, Print};

/// The library's default renewal interval, as a fraction of the ttl.
const INTERVALS_PER_TTL: u32 = 3;

/// Grants the leases, lets their keepers renew, measures, reports, revokes.
pub(super) async fn run(
    plan: &Plan,
    clients: &[Client],
    rss_unconnected: Option<u64>,
    json: bool,
    print: Print,
) -> anyhow::Result<()> {
    let tap = RenewalTap::install()?;
    let pid = plan.server_pid;
    let rss_before = on_server(pid, rss::resident_bytes)?;
    let start = Instant::now();
    let leases = setup::grant_leases(clients, plan.clients, plan.ttl).await?;
    let grant_s = start.elapsed().as_secs_f64();
    tokio::time::sleep(plan.ttl / INTERVALS_PER_TTL).await;

    let _ = tap.take();
    let cpu_before = (
        on_server(pid, rss::cpu_seconds)?,
        rss::cpu_seconds(std::process::id())?,
    );
    let window = Instant::now();
    tokio::time::sleep(Duration::from_secs(plan.seconds)).await;
    let taken = tap.take();
    let elapsed_s = window.elapsed().as_secs_f64();
    let cpu_after = (
        on_server(pid, rss::cpu_seconds)?,
        rss::cpu_seconds(std::process::id())?,
    );
    let rss_after = on_server(pid, rss::resident_bytes)?;
    let leases_lost = lost(&leases);
    let revoke_failures = setup::revoke_leases(leases).await;

    let renewals = Percentiles::of(&taken.latency);
    let cpu_share = |spent: f64| round_to(spent / elapsed_s * 100.0, 1);
    let report = SessionsReport {
        workload: "sessions",
        endpoint: clients[0].endpoint(),
        leases: plan.clients,
        connections: plan.connections,
        ttl_ms: plan.ttl.as_millis() as u64,
        interval_ms: (plan.ttl / INTERVALS_PER_TTL).as_millis() as u64,
        grant_s: round_to(grant_s, 3),
        seconds: plan.seconds,
        elapsed_s: round_to(elapsed_s, 3),
        renewals: renewals.count,
        renewals_per_s: per_second(renewals.count, elapsed_s),
        renewal_p50_us: renewals.p50_us,
        renewal_p99_us: renewals.p99_us,
        renewal_max_us: renewals.max_us,
        renewals_failed: taken.failed,
        leases_lost,
        losses_by_cause: taken.lost,
        revoke_failures,
        server_rss_unconnected_bytes: rss_unconnected,
        server_rss_before_bytes: rss_before,
        server_rss_after_bytes: rss_after,
        bytes_per_client: rss_unconnected
            .zip(rss_after)
            .map(|(before, after)| after.saturating_sub(before) / u64::from(plan.clients)),
        server_cpu_pct: cpu_before.0.zip(cpu_after.0).map(|(a, b)| cpu_share(b - a)),
        bench_cpu_pct: cpu_share(cpu_after.1 - cpu_before.1),
    };
    super::print_report(&report, || report.human(), json, print)
}

/// `read` of the server process, when `--server-pid` names one.
fn on_server<T>(pid: Option<u32>, read: fn(u32) -> anyhow::Result<T>) -> anyhow::Result<Option<T>> {
    pid.map(read).transpose()
}

/// Leases whose ownership is gone by now.
fn lost(leases: &[Lease]) -> usize {
    leases.iter().filter(|l| l.check().is_err()).count()
}

/// What the sessions workload measured. Serialized as the `--json` object.
#[derive(Clone, Debug, Serialize)]
struct SessionsReport {
    workload: &'static str,
    endpoint: String,
    /// Leases kept alive, one stream each (`--clients`).
    leases: u32,
    connections: u32,
    ttl_ms: u64,
    /// Between two renewals of one lease.
    interval_ms: u64,
    /// Granting every lease (untimed setup, reported for scale).
    grant_s: f64,
    seconds: u64,
    elapsed_s: f64,
    /// Renewals acknowledged in the window.
    renewals: u64,
    renewals_per_s: f64,
    renewal_p50_us: f64,
    renewal_p99_us: f64,
    renewal_max_us: f64,
    /// Renewals that failed in the window, by the library's reason.
    renewals_failed: BTreeMap<String, u64>,
    /// Leases whose ownership was lost by the end of the window.
    leases_lost: usize,
    /// Losses in the window, by cause.
    losses_by_cause: BTreeMap<String, u64>,
    revoke_failures: usize,
    /// Before any client connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    server_rss_unconnected_bytes: Option<u64>,
    /// With the connections open, before the leases.
    #[serde(skip_serializing_if = "Option::is_none")]
    server_rss_before_bytes: Option<u64>,
    /// At the end of the window, every lease alive.
    #[serde(skip_serializing_if = "Option::is_none")]
    server_rss_after_bytes: Option<u64>,
    /// (after − unconnected) / leases: a lease with its stream and its
    /// share of a connection.
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes_per_client: Option<u64>,
    /// The server's CPU time over the window, in % of one core.
    #[serde(skip_serializing_if = "Option::is_none")]
    server_cpu_pct: Option<f64>,
    /// This process's (the keepers'), in % of one core.
    bench_cpu_pct: f64,
}

impl SessionsReport {
    /// The summary for people.
    fn human(&self) -> String {
        use std::fmt::Write as _;
        let ms = |us: f64| us / 1000.0;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "leasehold bench: sessions (leases kept alive by their keepers)"
        );
        let _ = writeln!(
            s,
            "  endpoint {}, {} leases (one stream each) over {} connections, ttl {} ms, renewed every {} ms; granted in {:.3} s",
            self.endpoint, self.leases, self.connections, self.ttl_ms, self.interval_ms, self.grant_s
        );
        let _ = writeln!(
            s,
            "  renewals {} in {:.1} s ({:.1}/s): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; failed {:?}",
            self.renewals,
            self.elapsed_s,
            self.renewals_per_s,
            ms(self.renewal_p50_us),
            ms(self.renewal_p99_us),
            ms(self.renewal_max_us),
            self.renewals_failed
        );
        let _ = writeln!(
            s,
            "  leases lost {} {:?}, revoke failures {}",
            self.leases_lost, self.losses_by_cause, self.revoke_failures
        );
        if let (Some(idle), Some(before), Some(after), Some(per_client), Some(cpu)) = (
            self.server_rss_unconnected_bytes,
            self.server_rss_before_bytes,
            self.server_rss_after_bytes,
            self.bytes_per_client,
            self.server_cpu_pct,
        ) {
            let _ = writeln!(
                s,
                "  server   RSS {} unconnected, {} connected, {} with every lease kept ({per_client} bytes per client); CPU {cpu}% of one core",
                rss::mib(idle),
                rss::mib(before),
                rss::mib(after),
            );
        }
        let _ = writeln!(s, "  bench    CPU {}% of one core", self.bench_cpu_pct);
        s
    }
}
