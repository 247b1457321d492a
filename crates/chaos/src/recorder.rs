//! [`Recorder`]: the one clock and the one history every task of a run
//! writes to. Times are ms since the run started on one monotonic clock
//! (`Instant`), so invoke and complete times of different tasks compare.
//! Each operation is logged ([`OpRecord`]) and counts toward the ops of
//! the fault window it was invoked in.

use crate::history::{History, Hold, Lease, OpRecord};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// Shared by every task of a run.
#[derive(Clone)]
pub struct Recorder {
    started: Instant,
    inner: Arc<Mutex<Recorded>>,
}

/// What the recorder holds.
#[derive(Default)]
pub struct Recorded {
    /// The history the checker reads.
    pub history: History,
}

impl Recorder {
    /// A recorder whose clock starts now.
    pub fn new() -> Recorder {
        Recorder {
            started: Instant::now(),
            inner: Arc::default(),
        }
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
        self.lock().history.ops.push(record);
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

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}
