//! The waiters workload: a mass wait timeout, and what the other clients
//! see while it happens. One lease holds `--locks N` locks; `--leases M`
//! other leases each queue an acquire on every one of them, M × N waiters
//! in all, each with the wait that ends at one deadline (`--wait` after
//! the first is sent, as this process sees it), so the waits time out
//! together and the server ends them all at once. The server dates each
//! wait from its own enqueue, so the waits really end within the time
//! queueing took of each other: the bench reads each waiter's wait end
//! from the queues (`since_unix_ms + wait_ms`) and reports that spread
//! and, per waiter, how long after its wait ended it heard. Meanwhile
//! [`PROBES`] probe clients acquire and release their own locks; the
//! report gives their latency before and through the timeouts.
//!
//! Every waiting acquire is one unary call held open until its wait ends,
//! so the connections must carry them all: at most
//! `STREAMS_PER_CONNECTION_MAX` each (checked in `plan`).

use std::collections::HashMap;
use std::time::Duration;

use leasehold_client::{Client, Consistency, Error, LeaseId, LockOptions};
use serde::Serialize;
use tokio::time::Instant;

use super::plan::{HoldShape, Plan};
use super::probe::{self, quantile, Phase, Probes, PROBES};
use super::stats::{round_to, seconds};
use super::{hold, rss, Print};

/// The longest baseline: probe cycles in the last 2 s before the deadline
/// (after every waiter is queued).
const BASELINE: Duration = Duration::from_secs(2);
/// How long the probes go on after the last waiter heard.
const AFTERMATH: Duration = Duration::from_secs(1);
/// Between two counts of the queues while the waiters are being sent.
const POLL: Duration = Duration::from_millis(100);
/// The bound this workload is judged by: every waiter hears within this
/// after the deadline.
const ENDED_WITHIN: Duration = Duration::from_secs(2);

/// How one waiting acquire ended: timed out (heard at, Unix ms), granted,
/// or failed (why).
enum Ended {
    TimedOut(u64),
    Granted,
    Failed(String),
}

/// A waiter: its lease and which of the holder's locks it queued on.
type WaiterKey = (LeaseId, u32);

/// Builds the holder and the queues, lets every wait lapse, reports.
pub(super) async fn run(
    plan: &Plan,
    clients: &[Client],
    json: bool,
    print: Print,
) -> anyhow::Result<()> {
    let shape = plan
        .hold
        .ok_or_else(|| anyhow::anyhow!("the waiters workload needs --leases and --locks"))?;
    let rss = || plan.server_pid.map(rss::resident_bytes).transpose();
    let holder = hold::grant_unrenewed(clients, 1, hold::HOLD_LEASE_TTL, "waiters-holder").await?;
    hold::acquire_all(clients, &holder, shape.locks, plan.clients).await?;
    let waiting =
        hold::grant_unrenewed(clients, shape.leases, hold::HOLD_LEASE_TTL, "waiters").await?;
    let probes = Probes::start(plan).await?;

    let sent = Instant::now();
    let deadline = sent + plan.wait;
    let calls = wait_all(clients.to_vec(), waiting.clone(), shape.locks, deadline);
    let acquires = tokio::spawn(calls);
    let queued = queues_when_full(&clients[0], shape, deadline).await?;
    let rss_queued = rss()?;
    let ended = acquires.await??;
    let heard = Heard::of(&ended, &queued.deadlines);
    let first_deadline = heard.first_deadline.map_or(deadline, instant_of_unix_ms);
    let last_heard = heard
        .last
        .map_or(deadline, instant_of_unix_ms)
        .max(first_deadline);
    tokio::time::sleep_until(last_heard + AFTERMATH).await;
    let cycles = probes.finish().await?;
    let revoke_failures =
        hold::revoke(clients, &waiting).await + hold::revoke(clients, &holder).await;

    let baseline_from = queued.after.map_or(first_deadline, |q| {
        (sent + q).max(first_deadline - BASELINE)
    });
    let count = |wanted: fn(&Ended) -> bool| ended.iter().filter(|(_, e)| wanted(e)).count();
    let report = WaitersReport {
        workload: "waiters",
        endpoint: clients[0].endpoint(),
        waiting_leases: shape.leases,
        locks: shape.locks,
        waiters: shape.total(),
        wait_ms: plan.wait.as_millis() as u64,
        queued_s: queued.after.map(seconds),
        all_queued_before_deadline: queued.after.is_some(),
        deadlines_spread_ms: heard.deadlines_spread_ms,
        timed_out: count(|e| matches!(e, Ended::TimedOut(_))),
        granted: count(|e| matches!(e, Ended::Granted)),
        failed: count(|e| matches!(e, Ended::Failed(_))),
        first_failure: ended.iter().find_map(|(_, e)| match e {
            Ended::Failed(why) => Some(why.clone()),
            _ => None,
        }),
        heard_late_p50_ms: quantile(&heard.late_ms, 0.50),
        heard_late_p99_ms: quantile(&heard.late_ms, 0.99),
        heard_late_max_ms: quantile(&heard.late_ms, 1.0),
        heard_bound_ms: ENDED_WITHIN.as_millis() as u64,
        heard_in_bound: heard.late_ms.len() as u64 == shape.total()
            && quantile(&heard.late_ms, 1.0) <= ENDED_WITHIN.as_secs_f64() * 1e3,
        revoke_failures,
        server_rss_queued_bytes: rss_queued,
        server_rss_after_bytes: rss()?,
        probes: PROBES,
        baseline: Phase::of(&cycles, baseline_from, first_deadline),
        storm: Phase::of(&cycles, first_deadline, last_heard + AFTERMATH),
    };
    super::print_report(&report, || report.human(), json, print)
}

/// When the timed-out waiters heard, beside when their waits ended.
struct Heard {
    /// Per timed-out waiter whose deadline is known: heard after it, ms.
    late_ms: Vec<f64>,
    /// The earliest server deadline, Unix ms.
    first_deadline: Option<u64>,
    /// The latest a waiter heard, Unix ms.
    last: Option<u64>,
    /// Latest server deadline less the earliest, ms.
    deadlines_spread_ms: u64,
}

impl Heard {
    fn of(ended: &[(WaiterKey, Ended)], deadlines: &HashMap<WaiterKey, u64>) -> Heard {
        let mut late_ms: Vec<f64> = ended
            .iter()
            .filter_map(|(key, e)| match e {
                Ended::TimedOut(at) => Some((*at, *deadlines.get(key)?)),
                _ => None,
            })
            .map(|(at, due)| at.saturating_sub(due) as f64)
            .collect();
        late_ms.sort_by(f64::total_cmp);
        let first_deadline = deadlines.values().min().copied();
        let last_deadline = deadlines.values().max().copied();
        Heard {
            late_ms,
            first_deadline,
            last: ended
                .iter()
                .filter_map(|(_, e)| match e {
                    Ended::TimedOut(at) => Some(*at),
                    _ => None,
                })
                .max(),
            deadlines_spread_ms: last_deadline
                .zip(first_deadline)
                .map_or(0, |(last, first)| last - first),
        }
    }
}

/// The instant of wall time `unix_ms`, by the wall clock's offset from
/// this process's monotonic one now.
fn instant_of_unix_ms(unix_ms: u64) -> Instant {
    let now = Instant::now();
    let wall_now = probe::unix_ms(now);
    if unix_ms >= wall_now {
        now + Duration::from_millis(unix_ms - wall_now)
    } else {
        now - Duration::from_millis(wall_now - unix_ms)
    }
}

/// Every lease in `waiting` queues on each of the holder's `locks` locks,
/// all at once, each waiting until `deadline` (as this process sees it
/// when it sends; the server dates each wait from its own enqueue); how
/// each ended.
async fn wait_all(
    clients: Vec<Client>,
    waiting: Vec<LeaseId>,
    locks: u32,
    deadline: Instant,
) -> anyhow::Result<Vec<(WaiterKey, Ended)>> {
    let keys: Vec<WaiterKey> = waiting
        .iter()
        .flat_map(|&lease| (0..locks).map(move |k| (lease, k)))
        .collect();
    // A task per call, not one stream of them all: a hundred thousand
    // futures in one task spent the bench's time re-polling them once
    // tokio's per-task budget ran out (`FuturesUnordered` wake churn), and
    // the waiters reached the server over 18-27 s instead of at once.
    let mut calls = tokio::task::JoinSet::new();
    for (i, (lease, k)) in keys.into_iter().enumerate() {
        let client = clients[i % clients.len()].clone();
        calls.spawn(async move {
            let name = match hold::lock_name(0, k) {
                Ok(name) => name,
                Err(e) => return ((lease, k), Ended::Failed(format!("{e:#}"))),
            };
            let wait = deadline.saturating_duration_since(Instant::now());
            let options = LockOptions::default().wait(wait);
            let ended = match client.acquire(lease, &name, &options).await {
                Err(Error::WaitTimeout { .. }) => Ended::TimedOut(probe::unix_ms(Instant::now())),
                Ok(_) => Ended::Granted,
                Err(e) => Ended::Failed(e.to_string()),
            };
            ((lease, k), ended)
        });
    }
    let mut ended = Vec::with_capacity(calls.len());
    while let Some(call) = calls.join_next().await {
        ended.push(call.map_err(|e| anyhow::anyhow!("a waiter's task failed: {e}"))?);
    }
    Ok(ended)
}

/// What the queues showed once full.
struct Queued {
    /// From the first waiter sent to every lock's queue full (`None`: the
    /// deadline came first).
    after: Option<Duration>,
    /// Each queued waiter's wait end on the server: its enqueue's
    /// proposal time plus its wait, Unix ms.
    deadlines: HashMap<WaiterKey, u64>,
}

/// Looks at the holder's locks' queues until each has a waiter from every
/// waiting lease, or the deadline. One `get` a lock (a listing of them all
/// would be megabytes); a lock seen full is not looked at again, and its
/// waiters' wait ends are noted then.
async fn queues_when_full(
    client: &Client,
    shape: HoldShape,
    deadline: Instant,
) -> anyhow::Result<Queued> {
    let started = Instant::now();
    let mut deadlines = HashMap::new();
    let mut not_full: Vec<u32> = (0..shape.locks).collect();
    while !not_full.is_empty() && Instant::now() < deadline {
        let mut still = Vec::new();
        for k in not_full {
            let name = hold::lock_name(0, k)?;
            let got = client.get_lock(&name, Consistency::Linearizable).await?;
            let waiters = got.lock.map(|lock| lock.waiters).unwrap_or_default();
            if waiters.len() < shape.leases as usize {
                still.push(k);
                continue;
            }
            for w in waiters {
                let due = u64::try_from(w.since_unix_ms).unwrap_or(0) + w.wait_ms;
                deadlines.insert((LeaseId(w.lease), k), due);
            }
        }
        not_full = still;
        if !not_full.is_empty() {
            tokio::time::sleep(POLL).await;
        }
    }
    let after = not_full.is_empty().then(|| started.elapsed());
    Ok(Queued { after, deadlines })
}

/// What the waiters workload measured. Serialized as the `--json` object.
#[derive(Clone, Debug, Serialize)]
struct WaitersReport {
    workload: &'static str,
    endpoint: String,
    waiting_leases: u32,
    locks: u32,
    waiters: u64,
    wait_ms: u64,
    /// From the first waiter sent to every waiter in a queue.
    queued_s: Option<f64>,
    all_queued_before_deadline: bool,
    timed_out: usize,
    /// Waiters granted the lock (none should be: the holder keeps them).
    granted: usize,
    failed: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_failure: Option<String>,
    /// Latest wait end on the server less the earliest (the waits were
    /// dated from their enqueues, which took `queued_s`).
    deadlines_spread_ms: u64,
    /// Per waiter: when it heard its timeout less when its wait ended on
    /// the server.
    heard_late_p50_ms: f64,
    heard_late_p99_ms: f64,
    heard_late_max_ms: f64,
    heard_bound_ms: u64,
    heard_in_bound: bool,
    revoke_failures: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_rss_queued_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_rss_after_bytes: Option<u64>,
    probes: u32,
    /// The probes' cycles in the last 2 s before the deadline, once every
    /// waiter was queued.
    baseline: Phase,
    /// From the deadline to 1 s after the last waiter heard.
    storm: Phase,
}

impl WaitersReport {
    /// The summary for people.
    fn human(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(s, "leasehold bench: waiters (a mass wait timeout, probed)");
        let _ = writeln!(
            s,
            "  endpoint {}, {} leases × {} locks = {} waiters, all ending {} ms after the first was sent",
            self.endpoint, self.waiting_leases, self.locks, self.waiters, self.wait_ms
        );
        let queued = self.queued_s.map_or(
            "NOT all before the deadline: raise --wait".to_owned(),
            |q| format!("all in {} s", round_to(q, 3)),
        );
        let _ = writeln!(
            s,
            "  queued   {queued}; the waits end on the server within {} ms of each other",
            self.deadlines_spread_ms
        );
        let _ = writeln!(
            s,
            "  heard    {} timed out, {} granted, {} failed; after its wait ended p50 {} ms, p99 {} ms, max {} ms (bound {} ms: {})",
            self.timed_out,
            self.granted,
            self.failed,
            self.heard_late_p50_ms,
            self.heard_late_p99_ms,
            self.heard_late_max_ms,
            self.heard_bound_ms,
            if self.heard_in_bound { "met" } else { "MISSED" }
        );
        if let Some(why) = &self.first_failure {
            let _ = writeln!(s, "  first failure: {why}");
        }
        self.baseline.write_line(&mut s, "baseline");
        self.storm.write_line(&mut s, "storm");
        if let (Some(queued), Some(after)) =
            (self.server_rss_queued_bytes, self.server_rss_after_bytes)
        {
            let _ = writeln!(
                s,
                "  server   RSS {} queued, {} after",
                rss::mib(queued),
                rss::mib(after)
            );
        }
        s
    }
}
