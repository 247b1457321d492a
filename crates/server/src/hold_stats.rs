//! How long locks under each prefix are usually held, so `diagnose` can
//! tell a holder that is still renewing long after its kind of work is
//! normally done ("renewing-past-work": the renewer outlived the work).
//!
//! A lock's prefix is [`LockName::prefix`]: its name up to and including
//! the last `/` (`jobs/nightly` → `jobs/`; a name without `/` is its own
//! prefix), the one rule `diagnose` also uses. Only
//! holds that ended with their holder's own release (or lease revoke) count:
//! an expiry's hold time includes the ttl after the holder died, and a force
//! release is an incident, not a measure of the work. Memory is bounded:
//! the last [`HOLDS_PER_PREFIX`] holds of at most [`PREFIXES_MAX`]
//! prefixes (the prefix updated longest ago is forgotten first). Kept per
//! node and not replicated: a new leader starts with what it saw applied.

use leasehold_core::LockName;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

/// Recent holds remembered per prefix.
pub const HOLDS_PER_PREFIX: usize = 256;
/// Prefixes remembered.
pub const PREFIXES_MAX: usize = 1_024;

/// A prefix's usual hold time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HoldSummary {
    /// Holds remembered (at most [`HOLDS_PER_PREFIX`]).
    pub holds: usize,
    /// The 99th percentile of those holds (nearest rank).
    pub p99: Duration,
}

#[derive(Default)]
struct PrefixHolds {
    holds: VecDeque<Duration>,
    /// Bumped on every record; the smallest is forgotten first.
    updated: u64,
    /// The summary of `holds`, computed on the first ask after a record: a
    /// `List` of many locks under one prefix sorts the holds once, and a
    /// release (the hot path) never sorts.
    summary: Option<HoldSummary>,
}

impl PrefixHolds {
    fn summary(&mut self) -> HoldSummary {
        *self.summary.get_or_insert_with(|| {
            let mut sorted: Vec<Duration> = self.holds.iter().copied().collect();
            sorted.sort_unstable();
            // Nearest rank: the smallest hold at or above 99 % of all holds.
            let rank = (sorted.len() * 99).div_ceil(100).max(1);
            HoldSummary {
                holds: sorted.len(),
                p99: sorted[rank - 1],
            }
        })
    }
}

/// Recent hold times by prefix.
#[derive(Default)]
pub struct HoldStats {
    inner: Mutex<(HashMap<String, PrefixHolds>, u64)>,
}

impl HoldStats {
    /// Records that a lock named `name` was held for `held`.
    pub fn record(&self, name: &str, held: Duration) {
        let mut guard = self.inner.lock().expect("hold stats poisoned");
        let (prefixes, clock) = &mut *guard;
        *clock += 1;
        let prefix = LockName::prefix_of(name);
        if !prefixes.contains_key(prefix) {
            if prefixes.len() == PREFIXES_MAX {
                let oldest = prefixes
                    .iter()
                    .min_by_key(|(_, holds)| holds.updated)
                    .map(|(prefix, _)| prefix.clone())
                    .expect("full map is not empty");
                prefixes.remove(&oldest);
            }
            prefixes.insert(prefix.to_owned(), PrefixHolds::default());
        }
        let entry = prefixes.get_mut(prefix).expect("inserted above");
        if entry.holds.len() == HOLDS_PER_PREFIX {
            entry.holds.pop_front();
        }
        entry.holds.push_back(held);
        entry.updated = *clock;
        entry.summary = None;
    }

    /// The usual hold time under the prefix of `name`, if any hold there
    /// was recorded.
    pub fn summary(&self, name: &str) -> Option<HoldSummary> {
        let mut guard = self.inner.lock().expect("hold stats poisoned");
        Some(guard.0.get_mut(LockName::prefix_of(name))?.summary())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_end_at_the_last_slash() {
        assert_eq!(LockName::prefix_of("jobs/nightly"), "jobs/");
        assert_eq!(LockName::prefix_of("a/b/c"), "a/b/");
        assert_eq!(LockName::prefix_of("solo"), "solo");
    }

    #[test]
    fn p99_is_the_nearest_rank_of_recent_holds() {
        let stats = HoldStats::default();
        assert_eq!(stats.summary("jobs/a"), None);
        for ms in 1..=100 {
            stats.record("jobs/a", Duration::from_millis(ms));
        }
        let summary = stats.summary("jobs/other").unwrap();
        assert_eq!(summary.holds, 100);
        assert_eq!(summary.p99, Duration::from_millis(99));
        // A new hold is counted at the next ask (the cached summary is dropped).
        stats.record("jobs/a", Duration::from_secs(10));
        let summary = stats.summary("jobs/a").unwrap();
        assert_eq!(
            (summary.holds, summary.p99),
            (101, Duration::from_millis(100))
        );
        stats.record("solo", Duration::from_secs(3));
        let solo = stats.summary("solo").unwrap();
        assert_eq!((solo.holds, solo.p99), (1, Duration::from_secs(3)));
    }

    #[test]
    fn memory_is_bounded() {
        let stats = HoldStats::default();
        for i in 0..(HOLDS_PER_PREFIX + 10) {
            stats.record("p/x", Duration::from_millis(i as u64));
        }
        assert_eq!(stats.summary("p/x").unwrap().holds, HOLDS_PER_PREFIX);
        for i in 0..(PREFIXES_MAX + 1) {
            stats.record(&format!("{i}/x"), Duration::from_millis(1));
        }
        // "p/" was updated longest ago and was forgotten first.
        assert_eq!(stats.summary("p/x"), None);
        assert!(stats.summary(&format!("{PREFIXES_MAX}/x")).is_some());
    }
}
