//! # leasehold-bench
//!
//! `leasehold bench`: load generator and latency report for a running
//! service. Against Leasehold it drives the client library itself
//! (`leasehold-client`: leases, `lease.lock(..).acquire()`,
//! `guard.release()`, `lease.keep_alive_once()`), so what it measures is
//! what a library user gets, over the transport `--transport` picks (the
//! library's default: the lease's `Lock.Session` stream).
//!
//! Setup (not timed) connects `--connections` clients (one gRPC connection
//! each), grants one lease per benchmark client (ttl 60 s, renewed by the
//! library in the background) and runs a 1 s warm-up that is not recorded;
//! then the clients run for `--seconds`. Each client records into its own
//! histogram (no lock on the hot path); the histograms are merged at the
//! end, the leases revoked, and one report printed (`--json`: one JSON
//! object).
//!
//! This file owns the run itself ([`run`]) and what every workload shares:
//! [`Worker`], the timing [`Window`], [`until`] and [`collect`]. The rest,
//! one responsibility a file: `args` (the flags), `plan` (their
//! validation), `setup` (untimed connect, grant, revoke), `uncontended`
//! / `contended` / `keepalive` / `hold` / `storm` / `sessions` (the
//! workloads; `renewal_tap` catches the library keepers' renewals for the
//! last), `rss` (the server's memory and CPU) and `stats` (histograms and
//! the report). `etcd` runs the same workloads against etcd
//! (`--target etcd`, with an etcd client of its own) and `redis` the
//! uncontended one against Redis (`--target redis`), for comparison;
//! `compared` names the other service in their reports.

mod args;
mod compared;
mod contended;
mod etcd;
mod hold;
mod idle;
mod keepalive;
mod plan;
mod probe;
mod redis;
mod renewal_tap;
mod rss;
mod sessions;
mod setup;
mod stats;
mod storm;
mod uncontended;
mod waiters;

pub use args::{BenchArgs, Target, Transport, Workload};

use std::future::Future;
use std::time::Duration;

use leasehold_client::{Error, Lease, ReleaseOutcome, TlsOptions};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use plan::Plan;

/// This run's own throwaway prefix under [`leasehold_core::BENCH_PREFIX`]
/// (`leasehold-bench/<pid>-<unix ms>/`): a run never meets another's locks,
/// and the server keeps its events apart from operators'.
fn run_prefix() -> &'static str {
    static PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PREFIX.get_or_init(|| {
        let unix_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        format!(
            "{}{}-{unix_ms}/",
            leasehold_core::BENCH_PREFIX,
            std::process::id()
        )
    })
}
use stats::{Recorder, Report};

/// The warm-up before the measured window.
const WARMUP: Duration = Duration::from_secs(1);
/// Pause after a transport-level failure, so a dead server is not hammered.
const ERROR_BACKOFF: Duration = Duration::from_millis(10);

/// Flags that make no benchmark (`--clients 0`, ...): the caller's usage
/// error (the `leasehold` command exits 2). The service's own errors stay
/// [`leasehold_client::Error`]s in the returned chain, for its exit table.
#[derive(Debug)]
pub struct BadFlags(pub String);

impl std::fmt::Display for BadFlags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadFlags {}

/// Where the report is printed: the caller's stdout writer (the CLI's
/// ends quietly when the reader has gone, `leasehold bench | head -1`).
pub type Print = fn(std::fmt::Arguments<'_>);

/// Runs the benchmark and prints its report with `print`; the clients use
/// `tls` for `https://` endpoints and send `auth_token` (the CLI's global
/// flags).
pub async fn run(
    args: BenchArgs,
    tls: TlsOptions,
    auth_token: Option<String>,
    print: Print,
) -> anyhow::Result<()> {
    match args.target {
        Target::Etcd => return etcd::run(&args, print).await,
        Target::Redis => return redis::run(&args, print).await,
        Target::Leasehold => {}
    }
    let plan = Plan::new(&args).map_err(|e| BadFlags(format!("{e:#}")))?;
    let plan = Plan {
        tls,
        auth_token,
        ..plan
    };
    if plan.workload == Workload::Idle {
        return idle::run(&plan, args.json, print).await;
    }
    // A pid that names no process is the caller's mistake: say so now. The
    // reading is the server's memory before any client connected.
    let rss_unconnected = plan
        .server_pid
        .map(|pid| rss::resident_bytes(pid).map_err(|e| BadFlags(format!("{e:#}"))))
        .transpose()?;
    let clients = setup::connect(&plan).await?;
    match plan.workload {
        Workload::Hold => return hold::run(&plan, &clients, args.json, print).await,
        Workload::Storm => return storm::run(&plan, &clients, args.json, print).await,
        Workload::Waiters => return waiters::run(&plan, &clients, args.json, print).await,
        Workload::Sessions => {
            let rss = rss_unconnected;
            return sessions::run(&plan, &clients, rss, args.json, print).await;
        }
        Workload::Uncontended | Workload::Contended | Workload::Keepalive | Workload::Idle => {}
    }
    let rss_before = plan.server_pid.map(rss::resident_bytes).transpose()?;
    let leases = setup::grant_leases(&clients, plan.clients, setup::LEASE_TTL).await?;
    // Where the grants went: the leader, when several endpoints are given.
    let endpoint = clients[0].endpoint();
    let workers = leases
        .iter()
        .enumerate()
        .map(|(i, lease)| Worker {
            index: i as u32,
            lease: lease.clone(),
        })
        .collect();
    let measured = measure(&plan, workers).await;
    let rss_after = plan.server_pid.map(rss::resident_bytes).transpose()?;
    let revoke_failures = setup::revoke_leases(leases).await;
    let total = measured?;

    let info = plan.run_info(endpoint, plan.transport.name());
    let report = Report {
        server_rss_before_bytes: rss_before,
        server_rss_after_bytes: rss_after,
        ..Report::new(info, &total)
    };
    if args.json {
        print(format_args!("{}\n", report.json()));
    } else {
        print(format_args!("{}", report.human()));
    }
    if revoke_failures > 0 {
        eprintln!(
            "warning: {revoke_failures} of {} benchmark leases could not be revoked; \
             they expire within {} s",
            plan.clients,
            setup::LEASE_TTL.as_secs()
        );
    }
    Ok(())
}

/// Prints a report: one JSON object with `json`, else `human()` for people.
fn print_report(
    report: &impl serde::Serialize,
    human: impl FnOnce() -> String,
    json: bool,
    print: Print,
) -> anyhow::Result<()> {
    if json {
        let text = serde_json::to_string(report)
            .map_err(|e| anyhow::anyhow!("the report does not serialize: {e}"))?;
        print(format_args!("{text}\n"));
    } else {
        print(format_args!("{}", human()));
    }
    Ok(())
}

/// Runs the workers through the warm-up and the measured window; merges
/// what they recorded.
async fn measure(plan: &Plan, workers: Vec<Worker>) -> anyhow::Result<Recorder> {
    let start = Instant::now();
    let window = Window::starting(start, plan.seconds);
    let tasks = match plan.workload {
        Workload::Uncontended => workers
            .into_iter()
            .map(|w| tokio::spawn(uncontended::client(w, window)))
            .collect(),
        Workload::Contended => {
            let keys = contended::Keys::new(plan.keys, start);
            workers
                .into_iter()
                .map(|w| tokio::spawn(contended::client(w, window, keys.clone())))
                .collect()
        }
        Workload::Keepalive => workers
            .into_iter()
            .map(|w| tokio::spawn(keepalive::client(w, window, plan.inflight)))
            .collect(),
        // Not timed loops: `run` hands them to their own modules before this.
        Workload::Hold
        | Workload::Storm
        | Workload::Sessions
        | Workload::Waiters
        | Workload::Idle => Vec::new(),
    };
    collect(tasks, plan.workload == Workload::Contended).await
}

/// Awaits every client's task and merges what they recorded.
async fn collect(tasks: Vec<JoinHandle<Recorder>>, with_handoff: bool) -> anyhow::Result<Recorder> {
    let mut total = Recorder::new(with_handoff);
    let mut panicked = None;
    for task in tasks {
        match task.await {
            Ok(rec) => total.merge(rec),
            Err(e) => panicked = Some(e),
        }
    }
    match panicked {
        Some(e) => Err(anyhow::anyhow!("a benchmark client failed: {e}")),
        None => Ok(total),
    }
}

/// One benchmark client: its index (which names its lock) and its lease.
struct Worker {
    index: u32,
    lease: Lease,
}

/// The timing of a run: everything before `measure_from` is warm-up; clients
/// stop at `end`.
#[derive(Clone, Copy, Debug)]
struct Window {
    measure_from: Instant,
    end: Instant,
}

impl Window {
    /// The window of a run that starts at `start` and measures `seconds`
    /// after the warm-up.
    fn starting(start: Instant, seconds: u64) -> Window {
        Window {
            measure_from: start + WARMUP,
            end: start + WARMUP + Duration::from_secs(seconds),
        }
    }

    /// Whether an operation that ran from `start` to `finish` is measured.
    fn measures(&self, start: Instant, finish: Instant) -> bool {
        start >= self.measure_from && finish <= self.end
    }

    /// Records a failure for `reason` (if it falls in the measured window);
    /// after a `transient` one (the service unreachable), waits a little.
    async fn failure(&self, rec: &mut Recorder, at: Instant, reason: String, transient: bool) {
        if at >= self.measure_from && at < self.end {
            rec.error(reason);
        }
        if transient {
            tokio::time::sleep(ERROR_BACKOFF).await;
        }
    }

    /// Records a failed library call (see [`Window::failure`]).
    async fn failed(&self, rec: &mut Recorder, at: Instant, error: &Error) {
        self.failure(rec, at, reason(error), transient(error)).await;
    }
}

/// `Ok` if a release found the lock ours and freed it; else the reason to
/// count it under and whether it was transient.
fn released(outcome: Result<ReleaseOutcome, Error>) -> Result<(), (String, bool)> {
    let refused = match outcome {
        Ok(ReleaseOutcome::Released) => return Ok(()),
        Ok(ReleaseOutcome::AlreadyExpired) => "AlreadyExpired",
        Ok(ReleaseOutcome::HeldByAnother { .. }) => "HeldByAnother",
        Ok(ReleaseOutcome::NoSuchLock { .. }) => "NoSuchLock",
        Err(error) => return Err((reason(&error), transient(&error))),
    };
    Err((refused.to_owned(), false))
}

/// Whether `error` says the service could not be reached (or the lease is
/// gone): worth a pause before the next call.
fn transient(error: &Error) -> bool {
    matches!(
        error,
        Error::Unavailable { .. } | Error::Timeout { .. } | Error::Lost(_)
    )
}

/// Runs `f` unless `end` comes first (then `None`: the call is abandoned).
async fn until<F: Future>(end: Instant, f: F) -> Option<F::Output> {
    tokio::select! {
        out = f => Some(out),
        _ = tokio::time::sleep_until(end) => None,
    }
}

/// The reason a failed call is counted under: the server's reason for
/// errors the library does not type, else the error's kind (`Busy`,
/// `WaitTimeout`, `Unavailable`, …).
fn reason(error: &Error) -> String {
    if let Error::Server { reason, .. } = error {
        return reason.clone();
    }
    let debug = format!("{error:?}");
    let kind = debug.split(|c: char| !c.is_ascii_alphanumeric()).next();
    kind.unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_is_the_kind_or_the_servers_reason() {
        let busy = Error::Busy {
            name: "a".into(),
            holder_token: None,
        };
        assert_eq!(reason(&busy), "Busy");
        let timeout = Error::WaitTimeout {
            name: "a".into(),
            waited: Duration::from_millis(5),
        };
        assert_eq!(reason(&timeout), "WaitTimeout");
        let down = Error::Unavailable {
            message: "down".into(),
        };
        assert_eq!(reason(&down), "Unavailable");
        let other = Error::Server {
            reason: "Unfenced".into(),
            message: "m".into(),
        };
        assert_eq!(reason(&other), "Unfenced");
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
