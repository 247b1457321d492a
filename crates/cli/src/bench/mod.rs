//! `leasehold bench`: load generator and latency report for a running server.
//!
//! Setup (not timed) opens `--connections` gRPC channels, grants one lease per
//! client (ttl 60 s) and runs a 1 s warm-up that is not recorded; then the
//! clients run for `--seconds`. Each client records into its own histogram
//! (no lock on the hot path); the histograms are merged at the end, the
//! leases revoked, and one report printed (`--json`: one JSON object).

mod contended;
mod keepalive;
mod stats;
mod transport;
mod uncontended;

pub use transport::Transport;

use std::fmt::Write as _;
use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context as _};
use futures::{StreamExt as _, TryStreamExt as _};
use leasehold_proto::v1::{
    cluster_client::ClusterClient, lease_client::LeaseClient, GrantRequest, KeepAliveRequest,
    OwnerInfo, RevokeRequest, StatusRequest,
};
use tokio::time::Instant;
use tonic::transport::{Channel, Endpoint};

use stats::{Recorder, Report, RunInfo};

/// Lease ttl of every benchmark client.
const LEASE_TTL_MS: u64 = 60_000;
/// The warm-up before the measured window.
const WARMUP: Duration = Duration::from_secs(1);
/// Default cap on gRPC connections (clients share them round-robin).
const DEFAULT_CONNECTIONS_MAX: u32 = 4;
/// Setup calls (grants, revokes) in flight at once.
const SETUP_CONCURRENCY: usize = 64;
/// Pause after a transport-level failure, so a dead server is not hammered.
const ERROR_BACKOFF: Duration = Duration::from_millis(10);

/// What the clients do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// Each client acquires (no wait) and releases its own lock; a cycle is
    /// one acquire + release.
    Uncontended,
    /// Clients queue on `--keys` shared locks (acquire with wait, then release
    /// at once); latency is the wait, plus the release → next-grant hand-off.
    Contended,
    /// Each client renews its lease over one KeepAliveStream with
    /// `--inflight` renewals in flight; a cycle is one acknowledged renewal.
    Keepalive,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Uncontended => "uncontended",
            Workload::Contended => "contended",
            Workload::Keepalive => "keepalive",
        }
    }
}

/// Benchmark a running server.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Server gRPC URL(s), comma-separated; with several, the current leader
    /// is benchmarked.
    #[arg(
        long,
        env = "LEASEHOLD_ENDPOINTS",
        default_value = "http://127.0.0.1:7420"
    )]
    pub endpoints: String,
    /// What to measure.
    #[arg(long, value_enum)]
    pub workload: Workload,
    /// Concurrent clients (one lease each).
    #[arg(long, value_name = "C")]
    pub clients: u32,
    /// Locks the contended clients spread over [default: 1]; ignored by the
    /// other workloads (uncontended: one lock per client).
    #[arg(long, value_name = "K")]
    pub keys: Option<u32>,
    /// Length of the measured window, after a 1 s warm-up.
    #[arg(long, value_name = "S", default_value_t = 10)]
    pub seconds: u64,
    /// gRPC connections, shared round-robin by the clients [default: min(C, 4)].
    #[arg(long, value_name = "N")]
    pub connections: Option<u32>,
    /// Keep-alive renewals in flight per stream (keepalive workload).
    #[arg(long, value_name = "M", default_value_t = 4)]
    pub inflight: u32,
    /// How acquires and releases travel: one unary RPC each, or one
    /// `Lock.Session` stream per client (the client library's hot path).
    #[arg(long, value_enum, default_value_t = Transport::Session)]
    pub transport: Transport,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    pub json: bool,
}

/// Validated parameters of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Plan {
    endpoints: Vec<String>,
    workload: Workload,
    clients: u32,
    keys: u32,
    seconds: u64,
    connections: u32,
    inflight: u32,
    transport: Transport,
}

impl Plan {
    fn new(args: &BenchArgs) -> anyhow::Result<Plan> {
        let endpoints: Vec<String> = args
            .endpoints
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(|e| {
                if e.contains("://") {
                    e.to_owned()
                } else {
                    format!("http://{e}")
                }
            })
            .collect();
        if endpoints.is_empty() {
            bail!("--endpoints is empty: pass the server's gRPC URL, e.g. --endpoints http://127.0.0.1:7420");
        }
        if args.clients == 0 {
            bail!("--clients must be at least 1 (got 0)");
        }
        if args.seconds == 0 {
            bail!("--seconds must be at least 1 (got 0)");
        }
        let keys = match args.workload {
            Workload::Uncontended => args.clients,
            Workload::Keepalive => 0,
            Workload::Contended => {
                let keys = args.keys.unwrap_or(1);
                if keys == 0 {
                    bail!("--keys must be at least 1 (got 0)");
                }
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
        };
        if let (Some(k), Workload::Uncontended | Workload::Keepalive) = (args.keys, args.workload) {
            if k == 0 {
                bail!("--keys must be at least 1 (got 0)");
            }
        }
        let connections = match args.connections {
            None => args.clients.min(DEFAULT_CONNECTIONS_MAX),
            Some(0) => bail!("--connections must be at least 1 (got 0)"),
            Some(n) if n > args.clients => bail!(
                "--connections ({n}) exceeds --clients ({}): the extra connections would be idle",
                args.clients
            ),
            Some(n) => n,
        };
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
        })
    }
}

/// Runs the benchmark and prints its report.
pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    let plan = Plan::new(&args)?;
    let endpoint = pick_endpoint(&plan.endpoints).await?;
    let channels = connect(&endpoint, plan.connections).await?;
    let run_id = run_id();
    let leases = grant_leases(&channels, plan.clients, &run_id).await?;
    let clients: Vec<Client> = leases
        .iter()
        .enumerate()
        .map(|(i, &lease)| Client {
            index: i as u32,
            lease,
            channel: channels[i % channels.len()].clone(),
            ids: RequestIds::new(&run_id, i as u32),
            transport: plan.transport,
        })
        .collect();

    // The keepalive workload renews its own leases; the others run far
    // shorter than the ttl by default, but long runs need renewing.
    let renewer = (plan.workload != Workload::Keepalive)
        .then(|| tokio::spawn(renew_forever(channels[0].clone(), leases.clone())));

    let start = Instant::now();
    let window = Window {
        measure_from: start + WARMUP,
        end: start + WARMUP + Duration::from_secs(plan.seconds),
    };
    let tasks: Vec<_> = match plan.workload {
        Workload::Uncontended => clients
            .into_iter()
            .map(|c| tokio::spawn(uncontended::client(c, window)))
            .collect(),
        Workload::Contended => {
            let keys = contended::Keys::new(plan.keys, start);
            clients
                .into_iter()
                .map(|c| tokio::spawn(contended::client(c, window, keys.clone())))
                .collect()
        }
        Workload::Keepalive => clients
            .into_iter()
            .map(|c| tokio::spawn(keepalive::client(c, window, plan.inflight)))
            .collect(),
    };
    let mut total = Recorder::new(plan.workload == Workload::Contended);
    let mut panicked = None;
    for task in tasks {
        match task.await {
            Ok(rec) => total.merge(rec),
            Err(e) => panicked = Some(e),
        }
    }
    if let Some(r) = renewer {
        r.abort();
    }
    let revoke_failures = revoke_leases(&channels[0], &leases, &run_id).await;
    if let Some(e) = panicked {
        return Err(anyhow::anyhow!("a benchmark client failed: {e}"));
    }

    let report = Report::new(
        RunInfo {
            workload: plan.workload.name(),
            endpoint,
            clients: plan.clients,
            keys: plan.keys,
            seconds: plan.seconds,
            warmup_s: WARMUP.as_secs(),
            connections: plan.connections,
            inflight: plan.inflight,
            transport: plan.transport.name(),
            elapsed_s: plan.seconds as f64,
        },
        &total,
    );
    if args.json {
        println!("{}", report.json());
    } else {
        print!("{}", report.human());
    }
    if revoke_failures > 0 {
        eprintln!(
            "warning: {revoke_failures} of {} benchmark leases could not be revoked; \
             they expire within {} s",
            leases.len(),
            LEASE_TTL_MS / 1000
        );
    }
    Ok(())
}

/// One benchmark client: its lease, its share of a connection, and its
/// request ids.
struct Client {
    index: u32,
    lease: u64,
    channel: Channel,
    ids: RequestIds,
    transport: Transport,
}

/// The timing of a run: everything before `measure_from` is warm-up; clients
/// stop at `end`.
#[derive(Clone, Copy, Debug)]
struct Window {
    measure_from: Instant,
    end: Instant,
}

impl Window {
    /// Whether an operation that ran from `start` to `finish` is measured.
    fn measures(&self, start: Instant, finish: Instant) -> bool {
        start >= self.measure_from && finish <= self.end
    }

    /// Records a failed call (if it falls in the measured window) and waits
    /// a little after transport-level failures.
    async fn failed(&self, rec: &mut Recorder, at: Instant, status: &tonic::Status) {
        if at >= self.measure_from && at < self.end {
            rec.error(reason(status));
        }
        use tonic::Code;
        if matches!(
            status.code(),
            Code::Unavailable | Code::Unknown | Code::Internal | Code::Cancelled
        ) {
            tokio::time::sleep(ERROR_BACKOFF).await;
        }
    }
}

/// Runs `f` unless `end` comes first (then `None`: the call is abandoned).
async fn until<F: Future>(end: Instant, f: F) -> Option<F::Output> {
    tokio::select! {
        out = f => Some(out),
        _ = tokio::time::sleep_until(end) => None,
    }
}

/// The reason of a failed call: the server's `leasehold-reason` (metadata,
/// else the ErrorDetail in the status details), else the gRPC code.
fn reason(status: &tonic::Status) -> String {
    if let Some(r) = status
        .metadata()
        .get("leasehold-reason")
        .and_then(|v| v.to_str().ok())
        .filter(|r| !r.is_empty())
    {
        return r.to_owned();
    }
    if !status.details().is_empty() {
        if let Ok(d) =
            <leasehold_proto::v1::ErrorDetail as prost::Message>::decode(status.details())
        {
            if !d.reason.is_empty() {
                return d.reason;
            }
        }
    }
    format!("grpc-{:?}", status.code())
}

/// Unique request ids: `b{run}-{client}-{n}`, printable ASCII, at most 40
/// bytes. The run id keeps ids of successive runs apart (the server remembers
/// ids for idempotent retries).
struct RequestIds {
    prefix: String,
    next: u64,
}

impl RequestIds {
    fn new(run_id: &str, client: u32) -> Self {
        RequestIds {
            prefix: format!("b{run_id}-{client}-"),
            next: 0,
        }
    }

    fn next(&mut self) -> String {
        let mut id = String::with_capacity(self.prefix.len() + 20);
        id.push_str(&self.prefix);
        let _ = write!(id, "{}", self.next);
        self.next += 1;
        id
    }
}

/// 8 hex digits that differ between runs.
fn run_id() -> String {
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
async fn pick_endpoint(endpoints: &[String]) -> anyhow::Result<String> {
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

async fn connect(url: &str, n: u32) -> anyhow::Result<Vec<Channel>> {
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

async fn grant_leases(
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
async fn renew_forever(channel: Channel, leases: Vec<u64>) {
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
async fn revoke_leases(channel: &Channel, leases: &[u64], run_id: &str) -> usize {
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
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        bench: BenchArgs,
    }

    fn parse(args: &[&str]) -> Result<BenchArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("bench").chain(args.iter().copied())).map(|c| c.bench)
    }

    fn plan(args: &[&str]) -> anyhow::Result<Plan> {
        Plan::new(&parse(args).expect("parses"))
    }

    #[test]
    fn defaults() {
        let p = plan(&["--workload", "contended", "--clients", "16"]).unwrap();
        assert_eq!(p.keys, 1);
        assert_eq!(p.seconds, 10);
        assert_eq!(p.connections, 4);
        assert_eq!(p.inflight, 1);
        let p = plan(&["--workload", "keepalive", "--clients", "2"]).unwrap();
        assert_eq!(p.connections, 2);
        assert_eq!(p.inflight, 4);
        let p = plan(&["--workload", "uncontended", "--clients", "8", "--keys", "3"]).unwrap();
        assert_eq!(p.keys, 8, "uncontended: one key per client");
    }

    #[test]
    fn endpoints_are_normalized() {
        let p = plan(&[
            "--workload",
            "uncontended",
            "--clients",
            "1",
            "--endpoints",
            "127.0.0.1:1, http://h:2,",
        ])
        .unwrap();
        assert_eq!(p.endpoints, vec!["http://127.0.0.1:1", "http://h:2"]);
    }

    #[test]
    fn all_flags() {
        let a = parse(&[
            "--endpoints",
            "http://x:1",
            "--workload",
            "keepalive",
            "--clients",
            "64",
            "--keys",
            "2",
            "--seconds",
            "3",
            "--connections",
            "8",
            "--inflight",
            "16",
            "--json",
        ])
        .unwrap();
        assert!(a.json);
        let p = Plan::new(&a).unwrap();
        assert_eq!(
            (p.clients, p.seconds, p.connections, p.inflight),
            (64, 3, 8, 16)
        );
    }

    #[test]
    fn rejects_zeros_with_clear_errors() {
        for (args, msg) in [
            (
                &["--workload", "uncontended", "--clients", "0"][..],
                "--clients must be at least 1",
            ),
            (
                &[
                    "--workload",
                    "uncontended",
                    "--clients",
                    "1",
                    "--seconds",
                    "0",
                ][..],
                "--seconds must be at least 1",
            ),
            (
                &["--workload", "contended", "--clients", "1", "--keys", "0"][..],
                "--keys must be at least 1",
            ),
            (
                &["--workload", "uncontended", "--clients", "1", "--keys", "0"][..],
                "--keys must be at least 1",
            ),
            (
                &[
                    "--workload",
                    "keepalive",
                    "--clients",
                    "1",
                    "--inflight",
                    "0",
                ][..],
                "--inflight must be at least 1",
            ),
            (
                &[
                    "--workload",
                    "keepalive",
                    "--clients",
                    "1",
                    "--connections",
                    "0",
                ][..],
                "--connections must be at least 1",
            ),
        ] {
            let err = plan(args).unwrap_err().to_string();
            assert!(err.contains(msg), "{args:?}: {err}");
        }
    }

    #[test]
    fn rejects_inconsistent_counts() {
        let err = plan(&["--workload", "contended", "--clients", "2", "--keys", "3"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("--keys (3) exceeds --clients (2)"), "{err}");
        let err = plan(&[
            "--workload",
            "uncontended",
            "--clients",
            "2",
            "--connections",
            "3",
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("--connections (3) exceeds --clients (2)"),
            "{err}"
        );
        let err = plan(&["--workload", "contended", "--clients", "5000"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("raise --keys"), "{err}");
        assert!(plan(&[
            "--workload",
            "contended",
            "--clients",
            "5000",
            "--keys",
            "5"
        ])
        .is_ok());
    }

    #[test]
    fn clap_rejects_missing_and_malformed_flags() {
        assert!(
            parse(&["--clients", "1"]).is_err(),
            "--workload is required"
        );
        assert!(
            parse(&["--workload", "uncontended"]).is_err(),
            "--clients is required"
        );
        assert!(parse(&["--workload", "nope", "--clients", "1"]).is_err());
        assert!(parse(&["--workload", "uncontended", "--clients", "-1"]).is_err());
    }

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

    #[test]
    fn reason_prefers_server_reason() {
        let mut s = tonic::Status::failed_precondition("held");
        s.metadata_mut()
            .insert("leasehold-reason", "Busy".parse().unwrap());
        assert_eq!(reason(&s), "Busy");
        let detail = leasehold_proto::v1::ErrorDetail {
            reason: "WaitTimeout".into(),
            ..Default::default()
        };
        let s = tonic::Status::with_details(
            tonic::Code::DeadlineExceeded,
            "timed out",
            prost::Message::encode_to_vec(&detail).into(),
        );
        assert_eq!(reason(&s), "WaitTimeout");
        assert_eq!(
            reason(&tonic::Status::unavailable("down")),
            "grpc-Unavailable"
        );
    }

    #[test]
    fn window_measures_only_inside() {
        let t = Instant::now();
        let w = Window {
            measure_from: t + Duration::from_secs(1),
            end: t + Duration::from_secs(2),
        };
        assert!(!w.measures(t, t + Duration::from_millis(1500)));
        assert!(w.measures(t + Duration::from_secs(1), t + Duration::from_secs(2)));
        assert!(!w.measures(
            t + Duration::from_millis(1500),
            t + Duration::from_millis(2001)
        ));
    }
}
