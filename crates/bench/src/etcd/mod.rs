//! `leasehold bench --target etcd`: the same workloads, measured by the same
//! harness, against an etcd v3 cluster, so that Leasehold can be compared
//! with etcd on one machine (`scripts/etcd-cluster.sh` starts a local one).
//!
//! Each client holds one etcd lease (ttl 60 s, renewed in runs longer than
//! 20 s, as a `concurrency.Session`) and talks to the leader over the shared
//! `--connections`. `uncontended` locks and unlocks a per-client
//! `concurrency.Mutex` exactly as etcd's Go client does it (`mutex`);
//! `keepalive` renews over one LeaseKeepAlive stream per client. The
//! warm-up, the measured window and the report are the Leasehold run's.
//! `contended` is not offered: a waiting Mutex needs a watch, a different
//! protocol from Leasehold's server-side queue.
//!
//! One responsibility a file: `proto` (the hand-written etcd messages),
//! `rpc` (the gRPC calls), `setup` (leader, channels, leases), `mutex`
//! (the lock as etcd's client takes it) and the two workloads.

mod keepalive;
mod mutex;
mod proto;
mod rpc;
mod setup;
mod uncontended;

use tokio::time::Instant;
use tonic::transport::Channel;
use tonic::{Code, Status};

use super::args::{BenchArgs, Workload};
use super::compared::{self, Compared};
use super::plan::Plan;
use super::setup::run_id;
use super::stats::{Recorder, Report};
use super::{collect, BadFlags, Window};
use setup::{connect, grant_leases, pick_leader, renew_forever, revoke_leases, LEASE_TTL_S};

/// One benchmark client: its lease, its share of a connection, and the
/// prefix of its Mutex.
struct Client {
    /// The client's session lease: its Mutex key is put on it, and the
    /// keepalive workload renews it.
    lease: i64,
    /// The client's share of `--connections`.
    channel: Channel,
    /// The Mutex prefix, unique to the client and the run, so that keys
    /// left by an earlier run cannot own the lock.
    prefix: String,
}

/// Runs the benchmark against etcd and prints its report.
pub(super) async fn run(args: &BenchArgs, print: crate::Print) -> anyhow::Result<()> {
    if !matches!(args.workload, Workload::Uncontended | Workload::Keepalive) {
        return Err(BadFlags(format!(
            "--target etcd runs the uncontended and keepalive workloads; \
             {} is measured against Leasehold only",
            args.workload.name()
        ))
        .into());
    }
    let plan = Plan::new(args).map_err(|e| BadFlags(format!("{e:#}")))?;
    let member = pick_leader(&plan.endpoints).await?;
    let channels = connect(&member.url, plan.connections).await?;
    let leases = grant_leases(&channels, plan.clients).await?;
    let run_id = run_id();
    let clients = leases
        .iter()
        .enumerate()
        .map(|(i, &lease)| Client {
            lease,
            channel: channels[i % channels.len()].clone(),
            prefix: format!("leasehold-bench/{run_id}/u/{i}"),
        })
        .collect();

    // The keepalive workload renews its own leases.
    let renewer = (plan.workload != Workload::Keepalive)
        .then(|| tokio::spawn(renew_forever(channels[0].clone(), leases.clone())));
    let measured = measure(&plan, clients).await;
    if let Some(r) = renewer {
        r.abort();
    }
    let revoke_failures = revoke_leases(&channels[0], &leases).await;
    let total = measured?;

    let transport = match plan.workload {
        Workload::Keepalive => "stream",
        _ => "unary",
    };
    let report = Report::new(plan.run_info(member.url, transport), &total);
    let cycle = match report.workload {
        "uncontended" => "a cycle is concurrency.Mutex Lock (one Txn) + Unlock (one DeleteRange)",
        _ => "a cycle is one LeaseKeepAlive renewal",
    };
    let target = Compared {
        target: "etcd",
        version: &member.version,
        setup: String::new(),
        cycle,
    };
    compared::print(&report, &target, args.json, print);
    if revoke_failures > 0 {
        eprintln!(
            "warning: {revoke_failures} of {} benchmark leases could not be revoked; \
             they expire within {LEASE_TTL_S} s",
            leases.len(),
        );
    }
    Ok(())
}

/// Runs the clients through the warm-up and the measured window; merges
/// what they recorded.
async fn measure(plan: &Plan, clients: Vec<Client>) -> anyhow::Result<Recorder> {
    let window = Window::starting(Instant::now(), plan.seconds);
    let inflight = plan.inflight;
    let tasks = clients
        .into_iter()
        .map(|c| match plan.workload {
            Workload::Keepalive => tokio::spawn(keepalive::client(c, window, inflight)),
            _ => tokio::spawn(uncontended::client(c, window)),
        })
        .collect();
    collect(tasks, false).await
}

/// Records a failed call (if it falls in the measured window) and waits a
/// little after transport-level failures, as `Window::failed` does for
/// Leasehold, with etcd's message as the reason.
async fn failed(w: &Window, rec: &mut Recorder, at: Instant, status: &Status) {
    let transient = matches!(
        status.code(),
        Code::Unavailable | Code::Unknown | Code::Internal | Code::Cancelled
    );
    w.failure(rec, at, reason(status), transient).await;
}

/// etcd puts its error in the status message (`etcdserver: request timed
/// out`); the code alone would merge unlike failures.
fn reason(status: &Status) -> String {
    match status.message() {
        "" => format!("grpc-{:?}", status.code()),
        message => format!("grpc-{:?}: {message}", status.code()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_keeps_etcds_message() {
        assert_eq!(
            reason(&Status::unavailable("etcdserver: leader changed")),
            "grpc-Unavailable: etcdserver: leader changed"
        );
        assert_eq!(reason(&Status::cancelled("")), "grpc-Cancelled");
    }

    #[test]
    fn contended_is_refused_before_connecting() {
        let args = super::super::args::parse(&[
            "--target",
            "etcd",
            "--workload",
            "contended",
            "--clients",
            "2",
        ])
        .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let err = rt.block_on(run(&args, |_| {})).unwrap_err().to_string();
        assert!(err.contains("--target etcd runs the uncontended"), "{err}");
    }
}
