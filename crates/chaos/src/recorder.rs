//! [`Recorder`]: the one clock and the one history every task of a run
//! writes to. Times are ms since the run started on one monotonic clock
//! (`Instant`), so invoke and complete times of different tasks compare.
//! Each operation is logged ([`OpRecord`]) and counts toward the ops of
//! the fault window it was invoked in.
//!
//! Other processes of a run (the holder processes of `holder/`) record on
//! the same clock: the run's start is also taken as a `CLOCK_MONOTONIC`
//! reading ([`Recorder::monotonic_epoch_ns`]), which is system-wide on
//! Linux, and a child builds its recorder on that epoch
//! ([`Recorder::on_monotonic_epoch`]); the parent then [`merge`]s the
//! child's history as it is, no time to convert.
//!
//! [`merge`]: Recorder::merge

use crate::history::{History, Hold, Lease, OpRecord};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Shared by every task of a run.
#[derive(Clone)]
pub struct Recorder {
    started: Instant,
    /// `started` as a `CLOCK_MONOTONIC` reading, ns: the epoch another
    /// process's recorder starts from to share this clock.
    started_monotonic_ns: u64,
    inner: Arc<Mutex<Recorded>>,
    /// Called with every logged operation (a holder process streams them
    /// to its parent).
    tap: Option<Tap>,
}

/// What a recorder calls with each operation it logs.
type Tap = Arc<dyn Fn(&OpRecord) + Send + Sync>;

/// What the recorder holds.
#[derive(Default)]
pub struct Recorded {
    /// The history the checker reads.
    pub history: History,
}

impl Recorder {
    /// A recorder whose clock starts now.
    pub fn new() -> Recorder {
        let (started, started_monotonic_ns) = now_both();
        Recorder {
            started,
            started_monotonic_ns,
            inner: Arc::default(),
            tap: None,
        }
    }

    /// A recorder whose clock started at `epoch_ns` (a `CLOCK_MONOTONIC`
    /// reading, maybe another process's [`Recorder::monotonic_epoch_ns`]):
    /// its times are that recorder's.
    pub fn on_monotonic_epoch(epoch_ns: u64) -> Result<Recorder, String> {
        let (now, now_ns) = now_both();
        let since = Duration::from_nanos(now_ns.checked_sub(epoch_ns).ok_or_else(|| {
            format!(
                "the run's clock epoch {epoch_ns} ns is after this process's clock ({now_ns} \
                 ns): pass the parent's Recorder::monotonic_epoch_ns"
            )
        })?);
        let started = now.checked_sub(since).ok_or_else(|| {
            format!("the run's clock epoch is {since:?} back, before this clock can go")
        })?;
        Ok(Recorder {
            started,
            started_monotonic_ns: epoch_ns,
            inner: Arc::default(),
            tap: None,
        })
    }

    /// The same recorder, calling `tap` with every operation it logs.
    pub fn with_tap(self, tap: impl Fn(&OpRecord) + Send + Sync + 'static) -> Recorder {
        Recorder {
            tap: Some(Arc::new(tap)),
            ..self
        }
    }

    /// The instant the clock started, as a `CLOCK_MONOTONIC` reading (ns).
    pub fn monotonic_epoch_ns(&self) -> u64 {
        self.started_monotonic_ns
    }

    /// ms since the run started.
    pub fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// The recorded state, to read or add to.
    pub fn lock(&self) -> MutexGuard<'_, Recorded> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Logs one operation.
    pub fn op(&self, record: OpRecord) {
        if let Some(tap) = &self.tap {
            tap(&record);
        }
        self.lock().history.ops.push(record);
    }

    /// Adds what another recorder on this clock recorded (a holder
    /// process's history): every record, the operations kept in order of
    /// completion.
    pub fn merge(&self, other: History) {
        // Every field named: a record added to `History` must be merged too.
        let History {
            ops,
            leases,
            holds,
            puts,
            reads,
            pending_acquires,
            pending_grants_ms,
            unknown_puts,
            lock_reads,
            probes,
            lease_listings,
        } = other;
        let mut recorded = self.lock();
        let history = &mut recorded.history;
        history.ops.extend(ops);
        history.ops.sort_by_key(|op| op.completed_ms);
        history.leases.extend(leases);
        history.holds.extend(holds);
        history.puts.extend(puts);
        history.reads.extend(reads);
        history.pending_acquires.extend(pending_acquires);
        history.pending_grants_ms.extend(pending_grants_ms);
        history.unknown_puts.extend(unknown_puts);
        history.lock_reads.extend(lock_reads);
        history.probes.extend(probes);
        history.lease_listings.extend(lease_listings);
    }

    /// Runs `change` on lease `id`'s record, if there is one.
    pub fn lease(&self, id: u64, change: impl FnOnce(&mut Lease)) {
        let mut recorded = self.lock();
        if let Some(lease) = recorded
            .history
            .leases
            .iter_mut()
            .rev()
            .find(|l| l.id == id)
        {
            change(lease);
        }
    }

    /// Runs `change` on the hold of `lock` under `token`, if there is one.
    pub fn hold(&self, lock: &str, token: u64, change: impl FnOnce(&mut Hold)) {
        let mut recorded = self.lock();
        let holds = recorded.history.holds.iter_mut().rev();
        if let Some(hold) = holds
            .into_iter()
            .find(|h| h.token == token && h.lock == lock)
        {
            change(hold);
        }
    }

    /// A copy of the history so far.
    pub fn history(&self) -> History {
        self.lock().history.clone()
    }

    /// Operations invoked in `[from_ms, to_ms)`.
    pub fn ops_between(&self, from_ms: u64, to_ms: u64) -> u64 {
        let recorded = self.lock();
        let within = recorded
            .history
            .ops
            .iter()
            .filter(|op| (from_ms..to_ms).contains(&op.invoked_ms));
        within.count() as u64
    }
}

/// `Instant::now()` and a `CLOCK_MONOTONIC` reading (ns), taken together.
fn now_both() -> (Instant, u64) {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own; CLOCK_MONOTONIC
    // exists on every Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut time) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC) failed");
    let ns = time.tv_sec as u64 * 1_000_000_000 + time.tv_nsec as u64;
    (Instant::now(), ns)
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}
