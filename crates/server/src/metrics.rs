//! Prometheus metrics. The recorder is process-global (the `metrics` facade
//! allows one), so it is installed once and shared by every server started
//! in this process, e.g. by in-process tests.
//!
//! Every metric is described here (one list, so `/metrics` carries `# HELP`
//! for each and the alert rules can rely on the names), and counters start
//! at zero so that `rate()` and `increase()` see their first increment.
//! Labels are bounded (causes, error kinds, member ids), never lock names
//! or leases.
//! Durations and the keep-alive margin ratio are real histograms (buckets),
//! so quantiles can be aggregated across nodes in PromQL.
//!
//! The exporter keeps each histogram sample until it folds them into the
//! buckets, which it does on a scrape or an upkeep; the recorder installed
//! here gets no upkeep of its own, so each server runs one
//! ([`spawn_upkeep`]): a node nobody scrapes would otherwise keep every
//! sample it ever recorded, two per keep-alive (docs/DESIGN.md §6d).

use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;
use std::time::Duration;

/// How often recorded histogram samples are folded into their buckets
/// between scrapes (the exporter's own default for the recorders it runs).
pub const UPKEEP_EVERY: Duration = Duration::from_secs(5);

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Buckets of every `*_seconds` histogram: sub-millisecond log appends up to
/// hour-long holds.
const SECONDS_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 300.0, 900.0, 3600.0,
];

/// Buckets of the keep-alive margin as a fraction of the ttl. A client that
/// renews every ttl/3 renews with about 2/3 left; 1/3 is one renewal interval.
const RATIO_BUCKETS: &[f64] = &[0.05, 0.1, 0.2, 0.333, 0.5, 0.667, 0.8, 0.9, 1.0];

/// Counters: name and help. Each starts at zero.
const COUNTERS: &[(&str, &str)] = &[
    (
        "leasehold_acquires_total",
        "Acquire requests received by this node.",
    ),
    (
        "leasehold_locks_granted_total",
        "Locks granted (at once or from a queue).",
    ),
    ("leasehold_releases_total", "Releases applied successfully."),
    (
        "leasehold_proclaims_total",
        "Election values set by their leaders (Proclaim).",
    ),
    (
        "leasehold_keepalives_total",
        "Keep-alives applied successfully.",
    ),
    (
        "leasehold_leases_expired_total",
        "Leases expired by the leader's timers.",
    ),
    (
        "leasehold_force_releases_total",
        "Locks freed by an operator's force release.",
    ),
    ("leasehold_locks_freed_total", "Locks freed, by cause."),
    (
        "leasehold_command_failures_total",
        "Commands the state machine refused, by error kind.",
    ),
    (
        "leasehold_release_failures_total",
        "Releases refused (no such lock, not the holder, lease gone), by error kind.",
    ),
    ("leasehold_fenced_puts_total", "Fenced puts accepted."),
    (
        "leasehold_requests_refused_total",
        "Requests refused by auth (unauthenticated or without permission) on this node.",
    ),
    (
        "leasehold_audit_refusals_dropped_total",
        "Refused requests not sent to the audit trail: past REFUSALS_AUDITED_PER_SECOND on this node.",
    ),
    (
        "leasehold_fenced_put_refusals_total",
        "Fenced puts refused (stale token, not the holder, no such lock, a limit), by error kind.",
    ),
    (
        "leasehold_connections_refused_total",
        "Connections refused at a bound, by cause (connections_max, connections_per_address_max, connections_per_principal_max).",
    ),
    (
        "leasehold_connections_closed_total",
        "Connections closed by a deadline, by cause (handshake_deadline, idle).",
    ),
    (
        "leasehold_calls_refused_total",
        "Calls and streams refused at a bound or cut, by cause (requests_per_address_max, requests_per_principal_max, request_receive_deadline).",
    ),
];

/// Counters labelled by `cause`, and their causes (each starts at zero).
const BY_CAUSE: &[(&str, &[&str])] = &[
    (
        "leasehold_connections_refused_total",
        &[
            "connections_max",
            "connections_per_address_max",
            "connections_per_principal_max",
        ],
    ),
    (
        "leasehold_connections_closed_total",
        &["handshake_deadline", "idle"],
    ),
    (
        "leasehold_calls_refused_total",
        &[
            "requests_per_address_max",
            "requests_per_principal_max",
            "request_receive_deadline",
        ],
    ),
];

/// Histograms: name and help.
const HISTOGRAMS: &[(&str, &str)] = &[
    (
        "leasehold_wait_seconds",
        "Time a blocked acquire waited on this node until its grant.",
    ),
    (
        "leasehold_hold_seconds",
        "Time from a lock's grant to its release, expiry or revocation.",
    ),
    (
        "leasehold_keepalive_margin_seconds",
        "Lease time left when a keep-alive applied.",
    ),
    (
        "leasehold_keepalive_margin_ratio",
        "Lease time left when a keep-alive applied, over the ttl.",
    ),
    (
        "leasehold_batch_commands",
        "Commands per proposed log entry.",
    ),
    (
        "leasehold_batch_commit_seconds",
        "Time from proposing a batch to its commit.",
    ),
    (
        "leasehold_log_append_seconds",
        "Time to append entries to the durable log.",
    ),
];

/// Gauges: name and help.
const GAUGES: &[(&str, &str)] = &[
    (
        "leasehold_connections_open",
        "Client connections open on this node's port (admitted, not yet closed).",
    ),
    ("leasehold_leases", "Live leases."),
    ("leasehold_locks", "Locks held or waited for."),
    (
        "leasehold_pools",
        "Semaphores and read-write locks held or waited for.",
    ),
    (
        "leasehold_lock_sets_waiting",
        "Sets of locks waited for as one (all or none).",
    ),
    (
        "leasehold_election_observers",
        "Observe streams following an election on this node.",
    ),
    (
        "leasehold_waiting_acquires",
        "Acquires blocked in a queue on this node.",
    ),
    (
        "leasehold_revision",
        "The state's revision (applied commands).",
    ),
    ("leasehold_raft_term", "This node's Raft term."),
    (
        "leasehold_raft_is_leader",
        "1 if this node is the Raft leader.",
    ),
    (
        "leasehold_raft_leader_known",
        "1 if this node knows a leader.",
    ),
    (
        "leasehold_raft_quorum",
        "1 if this node has its quorum: on the leader, a majority of the voters acknowledged it \
         within the leader lease (1 s; always on a one-voter cluster); on any other node, it knows \
         a leader and heard from it within the lease. 0 otherwise (a leader with 0 refuses writes \
         and linearizable reads).",
    ),
    (
        "leasehold_raft_member_last_contact_seconds",
        "Seconds since this node last heard from the member (a reply to its Raft message, dated \
         when the message was sent, or a Raft message from it), by member id. NaN where this node has no view of the member (a \
         follower only hears from its leader) or never heard from it since it started.",
    ),
    (
        "leasehold_raft_last_log_index",
        "Index of this node's last log entry.",
    ),
    (
        "leasehold_raft_commit_index",
        "Highest committed index known to this node.",
    ),
    (
        "leasehold_raft_applied_index",
        "Highest index applied to the state machine.",
    ),
];

/// The process's Prometheus handle; `None` if another recorder was installed first.
pub fn handle() -> Option<&'static PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let installed = builder().and_then(PrometheusBuilder::install_recorder);
            match installed {
                Ok(handle) => {
                    describe();
                    Some(handle)
                }
                Err(error) => {
                    tracing::warn!(%error, "metrics recorder not installed; /metrics will be empty");
                    None
                }
            }
        })
        .as_ref()
}

/// Folds the recorded samples into their histograms every `every` until
/// `stop` turns true (see the module doc).
pub fn spawn_upkeep(every: Duration, stop: tokio::sync::watch::Receiver<bool>) {
    if let Some(handle) = handle() {
        spawn_every(every, stop, || handle.run_upkeep());
    }
}

/// Runs `work` at once and then every `every` until `stop` turns true.
fn spawn_every(
    every: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
    work: impl Fn() + Send + 'static,
) {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.wait_for(|stopping| *stopping) => return,
                _ = ticks.tick() => work(),
            }
        }
    });
}

fn builder() -> Result<PrometheusBuilder, BuildError> {
    PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)?
        .set_buckets_for_metric(
            Matcher::Full("leasehold_keepalive_margin_ratio".into()),
            RATIO_BUCKETS,
        )
}

/// Describes every metric and starts the unlabelled counters, and those
/// by cause with each cause, at zero.
fn describe() {
    for (name, help) in COUNTERS {
        metrics::describe_counter!(*name, *help);
        let by_cause = BY_CAUSE.iter().find(|(counted, _)| counted == name);
        if let Some((_, causes)) = by_cause {
            for &cause in *causes {
                metrics::counter!(*name, "cause" => cause).increment(0);
            }
        } else if !name.ends_with("freed_total") && !name.ends_with("failures_total") {
            metrics::counter!(*name).increment(0);
        }
    }
    for (name, help) in HISTOGRAMS {
        metrics::describe_histogram!(*name, *help);
    }
    for (name, help) in GAUGES {
        metrics::describe_gauge!(*name, *help);
    }
}

/// Renders all metrics in the Prometheus text format.
pub fn render() -> String {
    handle().map(|h| h.render()).unwrap_or_default()
}

/// Raft's view of this node as gauges, read from `raft.metrics()` at scrape
/// time (the values change on every entry; sampling when scraped is enough):
/// term, leadership, last log, commit and applied index.
pub fn record_raft(raft: &openraft::RaftMetrics<u64, openraft::BasicNode>) {
    let is_leader = raft.state == openraft::ServerState::Leader;
    metrics::gauge!("leasehold_raft_term").set(raft.current_term as f64);
    metrics::gauge!("leasehold_raft_is_leader").set(if is_leader { 1.0 } else { 0.0 });
    let known = raft.current_leader.is_some();
    metrics::gauge!("leasehold_raft_leader_known").set(if known { 1.0 } else { 0.0 });
    let last_log = raft.last_log_index.unwrap_or(0);
    metrics::gauge!("leasehold_raft_last_log_index").set(last_log as f64);
    let applied = raft.last_applied.map_or(0, |id| id.index);
    metrics::gauge!("leasehold_raft_applied_index").set(applied as f64);
    metrics::gauge!("leasehold_raft_commit_index").set(commit_index(raft, applied) as f64);
}

/// The quorum assessment as gauges, at scrape time: whether this node has
/// its quorum, and how long ago it heard from each other member.
pub fn record_quorum(self_id: u64, report: &crate::raft::quorum::QuorumReport) {
    metrics::gauge!("leasehold_raft_quorum").set(if report.quorum() { 1.0 } else { 0.0 });
    for (id, contact) in report.contacts.iter().filter(|(id, _)| **id != self_id) {
        let seconds = match (contact.reachable, contact.last_contact) {
            (Some(_), Some(age)) => age.as_secs_f64(),
            _ => f64::NAN,
        };
        metrics::gauge!("leasehold_raft_member_last_contact_seconds", "member" => id.to_string())
            .set(seconds);
    }
}

/// openraft 0.9 does not publish the commit index. A leader derives it from
/// its replication progress: the highest index a majority of voters have.
/// Elsewhere the applied index stands in (applied entries are committed).
fn commit_index(raft: &openraft::RaftMetrics<u64, openraft::BasicNode>, applied: u64) -> u64 {
    let Some(replication) = &raft.replication else {
        return applied;
    };
    let mut matched: Vec<u64> = raft
        .membership_config
        .voter_ids()
        .map(|voter| match replication.get(&voter) {
            Some(matched) => matched.map_or(0, |id| id.index),
            // The leader may not list itself: it has its whole log.
            None if voter == raft.id => raft.last_log_index.unwrap_or(0),
            None => 0,
        })
        .collect();
    if matched.is_empty() {
        return applied;
    }
    matched.sort_unstable_by(|a, b| b.cmp(a));
    matched[matched.len() / 2].max(applied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[tokio::test(start_paused = true)]
    async fn upkeep_runs_every_interval_until_the_server_stops() {
        let (stopping, stop) = tokio::sync::watch::channel(false);
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = runs.clone();
        spawn_every(UPKEEP_EVERY, stop, move || {
            counted.fetch_add(1, Ordering::SeqCst);
        });
        let settle = || tokio::time::sleep(Duration::from_millis(1));
        settle().await;
        assert_eq!(runs.load(Ordering::SeqCst), 1, "once at the start");
        tokio::time::sleep(UPKEEP_EVERY * 3).await;
        assert_eq!(runs.load(Ordering::SeqCst), 4, "then once an interval");
        stopping.send(true).expect("the task listens");
        settle().await;
        tokio::time::sleep(UPKEEP_EVERY * 3).await;
        assert_eq!(runs.load(Ordering::SeqCst), 4, "and never after the stop");
    }
}
