//! [`Plan`]: the validated parameters of a run, built from [`BenchArgs`].
//! Every check of the flags (and every default that depends on other flags)
//! lives here, before any connection is opened, so that a bad command line
//! fails at once with a message naming the flag.

use std::time::Duration;

use anyhow::bail;
use leasehold_client::TlsOptions;

use super::args::{BenchArgs, Transport, Workload};
use super::stats::RunInfo;
use super::WARMUP;

/// Default cap on gRPC connections (clients share them round-robin).
const DEFAULT_CONNECTIONS_MAX: u32 = 4;

/// Validated parameters of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Plan {
    pub(super) endpoints: Vec<String>,
    pub(super) workload: Workload,
    pub(super) clients: u32,
    pub(super) keys: u32,
    pub(super) seconds: u64,
    pub(super) connections: u32,
    pub(super) inflight: u32,
    pub(super) transport: Transport,
    /// TLS for `https://` endpoints (the CLI's `--cacert`, `--cert`,
    /// `--key`; see [`run`](crate::run)).
    pub(super) tls: TlsOptions,
    /// The bearer token sent with every call (`--auth-token`).
    pub(super) auth_token: Option<String>,
    /// The state the hold and storm workloads build (`None` for the others).
    pub(super) hold: Option<HoldShape>,
    /// The storm and sessions workloads' lease ttl (`--ttl`).
    pub(super) ttl: Duration,
    /// The waiters workload's time to the shared deadline (`--wait`).
    pub(super) wait: Duration,
    /// The server process whose memory the report gives (`--server-pid`).
    pub(super) server_pid: Option<u32>,
}

/// What the hold workload builds: `leases` leases holding `locks` locks each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct HoldShape {
    pub(super) leases: u32,
    pub(super) locks: u32,
}

impl HoldShape {
    /// The flags' shape, checked against the server's limits; `None` for
    /// the workloads that build no state (which ignore both flags).
    fn new(args: &BenchArgs) -> anyhow::Result<Option<HoldShape>> {
        if !matches!(
            args.workload,
            Workload::Hold | Workload::Storm | Workload::Waiters
        ) {
            return Ok(None);
        }
        let (Some(leases), Some(locks)) = (args.leases, args.locks) else {
            bail!(
                "the {} workload needs --leases M and --locks N (M leases holding N locks each)",
                args.workload.name()
            );
        };
        let leases_max = leasehold_core::limits::LEASES_MAX;
        if leases == 0 || leases as usize > leases_max {
            bail!("--leases must be 1..={leases_max}, the server's LEASES_MAX (got {leases})");
        }
        let locks_max = leasehold_core::limits::LOCKS_PER_LEASE_MAX;
        if locks == 0 || locks as usize > locks_max {
            bail!(
                "--locks must be 1..={locks_max}, the server's LOCKS_PER_LEASE_MAX (got {locks})"
            );
        }
        Ok(Some(HoldShape { leases, locks }))
    }

    /// Locks held once the state is built.
    pub(super) fn total(self) -> u64 {
        u64::from(self.leases) * u64::from(self.locks)
    }
}

impl Plan {
    pub(super) fn new(args: &BenchArgs) -> anyhow::Result<Plan> {
        let endpoints = endpoint_urls(&args.endpoints);
        if endpoints.is_empty() {
            bail!("--endpoints is empty: pass the server's gRPC URL, e.g. --endpoints http://127.0.0.1:7420");
        }
        if args.clients == 0 {
            bail!("--clients must be at least 1 (got 0)");
        }
        if args.seconds == 0 {
            bail!("--seconds must be at least 1 (got 0)");
        }
        if args.keys == Some(0) {
            bail!("--keys must be at least 1 (got 0)");
        }
        if args.workload == Workload::Idle && !endpoints[0].starts_with("http://") {
            bail!(
                "the idle workload needs a plaintext endpoint (http://host:port), got {}",
                endpoints[0]
            );
        }
        let hold = HoldShape::new(args)?;
        let ttl_s_range = 1..=leasehold_core::limits::TTL_MS_MAX / 1000;
        if !ttl_s_range.contains(&args.ttl) {
            bail!(
                "--ttl must be 1..={} seconds, the server's TTL_MS_MAX (got {})",
                ttl_s_range.end(),
                args.ttl
            );
        }
        let keys = keys_for(args)?;
        let connections = match args.connections {
            None => args.clients.min(DEFAULT_CONNECTIONS_MAX),
            Some(0) => bail!("--connections must be at least 1 (got 0)"),
            Some(n) if n > args.clients => bail!(
                "--connections ({n}) exceeds --clients ({}): the extra connections would be idle",
                args.clients
            ),
            Some(n) => n,
        };
        let wait = waiters_wait(args, hold, connections)?;
        if args.inflight == 0 {
            bail!("--inflight must be at least 1 (got 0)");
        }
        let inflight = match args.workload {
            Workload::Keepalive => args.inflight,
            // One call at a time per client.
            _ => 1,
        };
        Ok(Plan {
            endpoints,
            workload: args.workload,
            clients: args.clients,
            keys,
            seconds: args.seconds,
            connections,
            inflight,
            transport: args.transport,
            tls: TlsOptions::default(),
            auth_token: None,
            hold,
            ttl: Duration::from_secs(args.ttl),
            wait,
            server_pid: args.server_pid,
        })
    }
}

/// The locks the clients use: one each (uncontended), `--keys` shared
/// ones (contended, at most one holder and `WAITERS_PER_LOCK_MAX` waiters
/// each), none for the workloads that name their own.
fn keys_for(args: &BenchArgs) -> anyhow::Result<u32> {
    Ok(match args.workload {
        Workload::Uncontended => args.clients,
        Workload::Keepalive
        | Workload::Hold
        | Workload::Storm
        | Workload::Sessions
        | Workload::Waiters
        | Workload::Idle => 0,
        Workload::Contended => {
            let keys = args.keys.unwrap_or(1);
            if keys > args.clients {
                bail!(
                    "--keys ({keys}) exceeds --clients ({}): every lock needs a client; \
                     use at most as many keys as clients",
                    args.clients
                );
            }
            let per_key = u64::from(args.clients).div_ceil(u64::from(keys));
            let max = leasehold_core::limits::WAITERS_PER_LOCK_MAX as u64 + 1;
            if per_key > max {
                bail!(
                    "{} clients on {keys} key(s) queue {per_key} per lock; the server allows \
                     {max} (one holder + WAITERS_PER_LOCK_MAX waiters): raise --keys",
                    args.clients
                );
            }
            keys
        }
    })
}

/// The waiters workload's `--wait`, checked with its shape: every lease
/// queues once on each lock (at most `WAITERS_PER_LOCK_MAX` a lock), and
/// every waiting call holds a stream open (at most
/// `STREAMS_PER_CONNECTION_MAX` a connection). Other workloads: zero.
fn waiters_wait(
    args: &BenchArgs,
    shape: Option<HoldShape>,
    connections: u32,
) -> anyhow::Result<Duration> {
    use leasehold_core::limits::{STREAMS_PER_CONNECTION_MAX, WAITERS_PER_LOCK_MAX, WAIT_MS_MAX};
    let Some(shape) = shape.filter(|_| args.workload == Workload::Waiters) else {
        return Ok(Duration::ZERO);
    };
    if shape.leases as usize > WAITERS_PER_LOCK_MAX {
        bail!(
            "--leases {} would queue {} waiters on each lock; the server allows \
             {WAITERS_PER_LOCK_MAX} (WAITERS_PER_LOCK_MAX): use fewer leases and more --locks",
            shape.leases,
            shape.leases
        );
    }
    let streams = u64::from(connections) * u64::from(STREAMS_PER_CONNECTION_MAX);
    if shape.total() > streams {
        let needed = shape
            .total()
            .div_ceil(u64::from(STREAMS_PER_CONNECTION_MAX));
        bail!(
            "{} waiters need {needed} connections (each carries at most \
             {STREAMS_PER_CONNECTION_MAX} waiting calls, STREAMS_PER_CONNECTION_MAX): \
             pass --connections {needed} (and --clients at least that)",
            shape.total()
        );
    }
    let wait_s_range = 1..=WAIT_MS_MAX / 1000;
    if !wait_s_range.contains(&args.wait) {
        bail!(
            "--wait must be 1..={} seconds, the server's WAIT_MS_MAX (got {})",
            wait_s_range.end(),
            args.wait
        );
    }
    Ok(Duration::from_secs(args.wait))
}

/// `--endpoints` as URLs: comma-separated, blanks dropped, `http://`
/// added where no scheme is given.
fn endpoint_urls(raw: &str) -> Vec<String> {
    raw.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| {
            if e.contains("://") {
                e.to_owned()
            } else {
                format!("http://{e}")
            }
        })
        .collect()
}

impl Plan {
    /// The run's parameters as reported, for a run against `endpoint`
    /// whose calls travel by `transport`.
    pub(super) fn run_info(&self, endpoint: String, transport: &'static str) -> RunInfo {
        RunInfo {
            workload: self.workload.name(),
            endpoint,
            clients: self.clients,
            keys: self.keys,
            seconds: self.seconds,
            warmup_s: WARMUP.as_secs(),
            connections: self.connections,
            inflight: self.inflight,
            transport,
            elapsed_s: self.seconds as f64,
        }
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
