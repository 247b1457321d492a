//! Probe clients: what everyone else sees while the server works through a
//! storm (a mass expiry, a mass wait timeout). [`PROBES`] clients, each on
//! a lease of its own, acquire and release their own lock in a loop; each
//! cycle is kept with when it started, so a report can cut the run into
//! phases ([`Phase::of`]: before the storm, through it) and name when the
//! slowest cycle began, to set beside the server's log.
//!
//! The probes run on a thread and runtime of their own, over a connection
//! of their own: they stand for other processes, and sharing the bench's
//! runtime with the work that starts a storm (a thousand renewers dropped
//! at once, a hundred thousand waits sent) charged that work's stalls to
//! the server.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::Context as _;
use leasehold_client::{Lease, LockName};
use serde::Serialize;
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use super::plan::Plan;
use super::setup;

/// Probe clients, each cycling acquire + release on its own lock.
pub(super) const PROBES: u32 = 4;

/// One probe cycle: when it started, and acquire + release took how long
/// (`None`: it failed).
pub(super) type Cycle = (Instant, Option<Duration>);

/// Running probe clients.
pub(super) struct Probes {
    stop: watch::Sender<bool>,
    thread: std::thread::JoinHandle<anyhow::Result<Vec<Cycle>>>,
}

impl Probes {
    /// Connects the probes (as `plan` says, over one connection of their
    /// own), grants their leases and starts them cycling on their thread;
    /// returns once they run.
    pub(super) async fn start(plan: &Plan) -> anyhow::Result<Probes> {
        let plan = Plan {
            connections: 1,
            ..plan.clone()
        };
        let (stop, stopped) = watch::channel(false);
        let (started, running) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("bench-probes".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .context("cannot start the probes' runtime")?;
                runtime.block_on(run(plan, started, stopped))
            })
            .context("cannot start the probes' thread")?;
        match running.await {
            Ok(()) => Ok(Probes { stop, thread }),
            // The thread ended before the probes ran: its error says why.
            Err(_) => Err(join(thread)
                .err()
                .unwrap_or_else(|| anyhow::anyhow!("the probes stopped before they started"))),
        }
    }

    /// Stops the probes, revokes their leases; every cycle they ran.
    pub(super) async fn finish(self) -> anyhow::Result<Vec<Cycle>> {
        let _ = self.stop.send(true);
        let thread = self.thread;
        tokio::task::spawn_blocking(move || join(thread))
            .await
            .context("the probes' thread failed")?
    }
}

/// The probes' thread's outcome.
fn join(thread: std::thread::JoinHandle<anyhow::Result<Vec<Cycle>>>) -> anyhow::Result<Vec<Cycle>> {
    thread
        .join()
        .map_err(|_| anyhow::anyhow!("a probe client panicked"))?
}

/// On the probes' runtime: connect, grant, say so on `started`, cycle until
/// `stopped`, revoke.
async fn run(
    plan: Plan,
    started: oneshot::Sender<()>,
    stopped: watch::Receiver<bool>,
) -> anyhow::Result<Vec<Cycle>> {
    let clients = setup::connect(&plan).await?;
    let leases = setup::grant_leases(&clients, PROBES, setup::LEASE_TTL).await?;
    let tasks: Vec<_> = leases
        .iter()
        .zip(0..)
        .map(|(lease, i)| tokio::spawn(probe(lease.clone(), i, stopped.clone())))
        .collect();
    let _ = started.send(());
    let mut cycles = Vec::new();
    for task in tasks {
        cycles.extend(task.await.context("a probe client failed")?);
    }
    let _ = setup::revoke_leases(leases).await;
    Ok(cycles)
}

/// A probe client: acquire and release its own lock until `stop`.
async fn probe(lease: Lease, index: u32, mut stop: watch::Receiver<bool>) -> Vec<Cycle> {
    let raw = format!("{}s/probe/{index}", super::run_prefix());
    let name = LockName::parse(&raw).expect("the probe's lock name is valid");
    let mut cycles = Vec::new();
    while !*stop.borrow_and_update() {
        let start = Instant::now();
        let cycle = async {
            let guard = lease.lock(&name).acquire().await?;
            guard.release().await
        };
        let ok = tokio::select! {
            outcome = cycle => outcome.is_ok(),
            _ = stop.changed() => break,
        };
        cycles.push((start, ok.then(|| start.elapsed())));
    }
    cycles
}

/// The probes' cycles that started in one stretch of the run.
#[derive(Clone, Debug, Serialize)]
pub(super) struct Phase {
    pub(super) cycles: usize,
    pub(super) failed: usize,
    pub(super) p50_ms: f64,
    pub(super) p99_ms: f64,
    pub(super) max_ms: f64,
    /// When the slowest cycle started, in Unix ms (to set beside the
    /// server's log: a snapshot, a batch of expiries).
    pub(super) max_started_unix_ms: u64,
}

impl Phase {
    /// The cycles of `all` that started in `from..to`.
    pub(super) fn of(all: &[Cycle], from: Instant, to: Instant) -> Phase {
        let within = all.iter().filter(|(at, _)| (from..to).contains(at));
        let mut ms: Vec<f64> = within
            .clone()
            .filter_map(|(_, took)| took.map(|d| d.as_secs_f64() * 1000.0))
            .collect();
        ms.sort_by(f64::total_cmp);
        let slowest = within.clone().max_by_key(|(_, took)| *took);
        Phase {
            max_started_unix_ms: slowest.map_or(0, |(at, _)| unix_ms(*at)),
            cycles: within.clone().count(),
            failed: within.filter(|(_, took)| took.is_none()).count(),
            p50_ms: quantile(&ms, 0.50),
            p99_ms: quantile(&ms, 0.99),
            max_ms: quantile(&ms, 1.0),
        }
    }

    /// The phase's summary line for people, labelled `label`.
    pub(super) fn write_line(&self, s: &mut String, label: &str) {
        let _ = writeln!(
            s,
            "  {label:<8} {} probe cycles ({} failed): p50 {} ms, p99 {} ms, max {} ms (started at Unix ms {})",
            self.cycles, self.failed, self.p50_ms, self.p99_ms, self.max_ms, self.max_started_unix_ms
        );
    }
}

/// The `q` quantile of `sorted` (0 for none), to 0.01.
pub(super) fn quantile(sorted: &[f64], q: f64) -> f64 {
    let i = ((sorted.len() as f64 * q).ceil() as usize).saturating_sub(1);
    sorted.get(i).map_or(0.0, |v| super::stats::round_to(*v, 2))
}

/// `at` in Unix milliseconds, by the wall clock's offset from this
/// process's monotonic one now.
pub(super) fn unix_ms(at: Instant) -> u64 {
    let wall_now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let ago = Instant::now().saturating_duration_since(at);
    wall_now.saturating_sub(ago).as_millis() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_takes_the_cycles_that_started_in_it() {
        let t = Instant::now();
        let ms = Duration::from_millis;
        let cycles = vec![
            (t, Some(ms(100))),
            (t + ms(10), Some(ms(1))),
            (t + ms(20), None),
            (t + ms(30), Some(ms(3))),
            (t + ms(40), Some(ms(2))),
        ];
        let p = Phase::of(&cycles, t + ms(5), t + ms(40));
        assert_eq!((p.cycles, p.failed), (3, 1));
        assert_eq!((p.p50_ms, p.max_ms), (1.0, 3.0));
        let empty = Phase::of(&cycles, t + ms(50), t + ms(60));
        assert_eq!((empty.cycles, empty.max_ms), (0, 0.0));
    }

    #[test]
    fn quantiles_pick_the_rank_at_or_above() {
        let sorted = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&sorted, 0.5), 2.0);
        assert_eq!(quantile(&sorted, 0.99), 4.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }
}
