//! `leasehold bench`: load generator and latency report for a running server.
//!
//! Setup (not timed) opens `--connections` gRPC channels, grants one lease per
//! client (ttl 60 s) and runs a 1 s warm-up that is not recorded; then the
//! clients run for `--seconds`. Each client records into its own histogram
//! (no lock on the hot path); the histograms are merged at the end, the
//! leases revoked, and one report printed (`--json`: one JSON object).
//!
//! This file owns the run itself ([`run`]) and what every workload shares:
//! [`Client`], the timing [`Window`], [`until`] and [`reason`]. The rest, one
//! responsibility a file: `args` (the flags), `plan` (their validation),
//! `setup` (untimed connect, grant, renew, revoke, request ids), `transport`
//! (unary or session calls), `uncontended` / `contended` / `keepalive` (the
//! workloads) and `stats` (histograms and the report). `etcd` runs the same
//! workloads against etcd, for comparison (`--target etcd`).

mod args;
mod contended;
mod etcd;
mod keepalive;
mod plan;
mod setup;
mod stats;
mod transport;
mod uncontended;

pub use args::{BenchArgs, Workload};
pub use transport::Transport;

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;
use tonic::transport::Channel;

use plan::Plan;
use setup::{
    connect, grant_leases, pick_endpoint, renew_forever, revoke_leases, run_id, RequestIds,
    LEASE_TTL_MS,
};
use stats::{Recorder, Report, RunInfo};

/// The warm-up before the measured window.
const WARMUP: Duration = Duration::from_secs(1);
/// Pause after a transport-level failure, so a dead server is not hammered.
const ERROR_BACKOFF: Duration = Duration::from_millis(10);

/// Runs the benchmark and prints its report.
pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    if args.target == args::Target::Etcd {
        return etcd::run(&args).await;
    }
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

/// The reason of a failed call: the server's reason (from the status
/// details, else the `leasehold-reason` metadata), else the gRPC code.
fn reason(status: &tonic::Status) -> String {
    use leasehold_proto::status::{error_detail, reason};
    reason(status, error_detail(status).as_ref())
        .unwrap_or_else(|| format!("grpc-{:?}", status.code()))
}

#[cfg(test)]
mod tests {
    use super::*;

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
