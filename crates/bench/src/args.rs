//! The `leasehold bench` command line: [`BenchArgs`] (the flags, as clap
//! parses them) and [`Workload`] (what the clients do). Kept apart from the
//! checks in `plan` so that the flags, their help and their defaults can be
//! read in one place; nothing here judges whether values make sense.

/// What the clients do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// Each client acquires (no wait) and releases its own lock; a cycle is
    /// one acquire + release.
    Uncontended,
    /// Clients queue on `--keys` shared locks (acquire with wait, then release
    /// at once); latency is the wait, plus the release → next-grant hand-off.
    Contended,
    /// Each client renews its lease (`Lease::keep_alive_once`) with
    /// `--inflight` renewals in flight; a cycle is one acknowledged renewal.
    Keepalive,
    /// Builds held state and measures what it costs: `--leases` leases each
    /// acquire `--locks` locks (`--clients` acquires in flight) and keep
    /// them; reports the load rate and, with `--server-pid`, the server's
    /// RSS before and after and the bytes per held lock. Then revokes.
    Hold,
    /// A mass expiry: the hold workload's state, then every renewer stops
    /// at once and the leases (ttl `--ttl`) lapse together, while probe
    /// clients acquire and release; reports the probes' latency before and
    /// through the storm and when the last lease was gone.
    Storm,
    /// A mass wait timeout: one lease holds `--locks` locks, `--leases`
    /// other leases each queue on every one of them with a wait ending at
    /// one deadline (`--wait` after the first is sent), while probe clients
    /// acquire and release; reports the probes' latency before and through
    /// the timeouts and how late each waiter heard. Needs `--connections`
    /// enough to carry every waiting call (1,024 each).
    Waiters,
    /// Many idle clients: `--clients` leases of ttl `--ttl`, each kept
    /// alive by the library's keeper on its own stream (every ttl/3), over
    /// `--connections`; reports the keepers' renewal round trips, failures,
    /// leases lost and, with `--server-pid`, the server's RSS and CPU.
    Sessions,
    /// Connections that do nothing: `--clients` silent sockets, then as
    /// many idle HTTP/2 connections; reports how many the server holds
    /// and, with `--server-pid`, the bytes of server memory each costs.
    Idle,
}

impl Workload {
    pub(super) fn name(self) -> &'static str {
        match self {
            Workload::Uncontended => "uncontended",
            Workload::Contended => "contended",
            Workload::Keepalive => "keepalive",
            Workload::Hold => "hold",
            Workload::Storm => "storm",
            Workload::Sessions => "sessions",
            Workload::Waiters => "waiters",
            Workload::Idle => "idle",
        }
    }
}

/// How the clients' acquires, releases and renewals travel (the client
/// library's [`Transport`](leasehold_client::Transport)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Transport {
    /// One unary RPC each.
    Unary,
    /// Messages on one `Lock.Session` stream per lease.
    Session,
}

impl Transport {
    /// The name shown in reports.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Unary => "unary",
            Transport::Session => "session",
        }
    }

    /// The client library's setting.
    pub(super) fn client(self) -> leasehold_client::Transport {
        match self {
            Transport::Unary => leasehold_client::Transport::Unary,
            Transport::Session => leasehold_client::Transport::Session,
        }
    }
}

/// The server the clients load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    /// A Leasehold server or cluster.
    Leasehold,
    /// An etcd v3 cluster, for comparison: uncontended cycles are etcd's
    /// `concurrency.Mutex` Lock + Unlock (see `bench/etcd`).
    Etcd,
    /// A Redis server, for comparison: uncontended cycles are `SET NX PX`
    /// and a compare-and-delete script, one connection per client (see
    /// `bench/redis.rs`).
    Redis,
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
    /// The server to load; with `etcd`, --endpoints lists etcd client URLs
    /// (uncontended and keepalive only; --transport is ignored); with
    /// `redis`, --endpoints is one HOST:PORT (uncontended only).
    #[arg(long, value_enum, default_value_t = Target::Leasehold)]
    pub target: Target,
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
    /// How acquires, releases and renewals travel: one unary RPC each, or
    /// one `Lock.Session` stream per client (the client library's default).
    #[arg(long, value_enum, default_value_t = Transport::Session)]
    pub transport: Transport,
    /// Leases the hold and storm workloads grant (each holds `--locks`
    /// locks); the waiters workload's waiting leases.
    #[arg(long, value_name = "M")]
    pub leases: Option<u32>,
    /// Locks each lease of the hold and storm workloads acquires and keeps;
    /// the waiters workload's held locks, each queued on by every lease.
    #[arg(long, value_name = "N")]
    pub locks: Option<u32>,
    /// The waiters workload: seconds from the first waiter sent to the
    /// deadline every wait ends at (long enough to queue them all).
    #[arg(long, value_name = "S", default_value_t = 30)]
    pub wait: u64,
    /// Lease ttl of the storm and sessions workloads' leases, in seconds.
    #[arg(long, value_name = "S", default_value_t = 10)]
    pub ttl: u64,
    /// The server's process id, on this machine: the report gives its
    /// resident memory (from `/proc/PID/status`) before and after the run.
    #[arg(long, value_name = "PID")]
    pub server_pid: Option<u32>,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    pub json: bool,
}

/// Parses `bench` flags as the `leasehold` command would (for tests here and
/// in `plan`).
#[cfg(test)]
pub(super) fn parse(args: &[&str]) -> Result<BenchArgs, clap::Error> {
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        bench: BenchArgs,
    }

    Cli::try_parse_from(std::iter::once("bench").chain(args.iter().copied())).map(|c| c.bench)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
