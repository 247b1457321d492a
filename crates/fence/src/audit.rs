//! Refusals, remembered and counted. Each adapter keeps the recent ones
//! (bounded) and reports every one through [`Audit::record`], which also
//! bumps `leasehold_fence_rejections_total{adapter}` and logs it.

use crate::StaleToken;
use std::collections::VecDeque;
use std::sync::Mutex;

/// Recent refusals kept per adapter instance.
pub const REJECTIONS_REMEMBERED: usize = 1_024;

/// Counter: writes refused for a stale token, by adapter.
pub const REJECTIONS_TOTAL: &str = "leasehold_fence_rejections_total";

/// One refused write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// The protected resource (table, key space, file).
    pub resource: String,
    /// The lock whose token was checked.
    pub lock: String,
    /// The token presented.
    pub presented: u64,
    /// The highest token accepted at that moment.
    pub highest: u64,
    /// Wall time of the refusal, Unix ms (display only).
    pub at_unix_ms: i64,
}

/// The recent refusals of one adapter instance.
#[derive(Debug)]
pub struct Audit {
    adapter: &'static str,
    recent: Mutex<VecDeque<Rejection>>,
}

impl Audit {
    /// An empty audit for `adapter` (the metric label: "memory", "postgres", "redis").
    pub fn new(adapter: &'static str) -> Audit {
        Audit {
            adapter,
            recent: Mutex::new(VecDeque::new()),
        }
    }

    /// Records a refusal of a write to `resource`: counts, logs, remembers.
    pub fn record(&self, resource: &str, stale: &StaleToken) -> Rejection {
        metrics::counter!(REJECTIONS_TOTAL, "adapter" => self.adapter).increment(1);
        tracing::warn!(
            adapter = self.adapter,
            resource,
            lock = %stale.lock,
            presented = stale.presented,
            highest = stale.highest,
            "refused a stale write"
        );
        let rejection = Rejection {
            resource: resource.to_owned(),
            lock: stale.lock.clone(),
            presented: stale.presented,
            highest: stale.highest,
            at_unix_ms: now_unix_ms(),
        };
        let mut recent = self.recent.lock().expect("audit lock");
        if recent.len() == REJECTIONS_REMEMBERED {
            recent.pop_front();
        }
        recent.push_back(rejection.clone());
        rejection
    }

    /// The remembered refusals, oldest first.
    pub fn recent(&self) -> Vec<Rejection> {
        self.recent
            .lock()
            .expect("audit lock")
            .iter()
            .cloned()
            .collect()
    }
}

/// Wall time now, Unix ms.
pub fn now_unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
