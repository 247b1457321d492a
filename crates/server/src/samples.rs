//! The live page's chart data: this node's own counts of grants, releases
//! and lease expiries, and the keep-alive margin (the fraction of the ttl a
//! lease had left when renewed), per interval of [`CHART_SAMPLE_MS`], in a
//! ring of [`CHART_SAMPLES_MAX`] (both in `leasehold_core::limits`).
//!
//! A sink beside [`crate::sinks::telemetry`], fed at the same points as the
//! Prometheus counters of the same names. Prometheus keeps history for
//! those who run it; this ring is for the operator who has only a browser
//! ("did expiries just spike?"), so it is small, bounded and in memory.
//! Intervals advance on the server's monotonic [`Clock`] as samples are
//! recorded or read: no task, and an idle interval is a sample of zeros,
//! not a gap. Only what happened since this node started counts: the hub
//! does not feed it the entries it replays at a restart, which would
//! otherwise show the whole history as one spike.

use crate::clock::Clock;
use leasehold_core::limits::{CHART_SAMPLES_MAX, CHART_SAMPLE_MS};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::time::Instant;

/// One interval's counts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sample {
    /// Which interval, counted from the ring's start.
    pub interval: u64,
    /// Locks granted (at once or from a queue).
    pub grants: u64,
    /// Locks released by their holder.
    pub releases: u64,
    /// Leases expired by the leader's timers.
    pub expiries: u64,
    /// Keep-alives whose margin this node measured (the leader's).
    pub renewals: u64,
    /// The smallest margin among them, as a fraction of the ttl (0..1):
    /// the renewal that came closest to losing its lease.
    pub margin_ratio_min: Option<f64>,
}

/// The ring, and the interval still running.
#[derive(Debug, Default)]
struct Ring {
    /// Finished intervals, oldest first, at most `CHART_SAMPLES_MAX - 1`.
    closed: VecDeque<Sample>,
    /// The interval now running.
    current: Sample,
}

/// The chart samples of one node.
pub struct Samples {
    /// The monotonic clock intervals are measured on.
    clock: Arc<dyn Clock>,
    /// The start of interval 0.
    started: Instant,
    ring: Mutex<Ring>,
}

impl Samples {
    /// An empty ring whose first interval starts now.
    pub fn new(clock: Arc<dyn Clock>) -> Samples {
        let started = clock.now();
        Samples {
            clock,
            started,
            ring: Mutex::new(Ring::default()),
        }
    }

    /// A lock was granted.
    pub fn granted(&self) {
        self.update(|sample| sample.grants += 1);
    }

    /// A holder released its lock.
    pub fn released(&self) {
        self.update(|sample| sample.releases += 1);
    }

    /// A lease expired.
    pub fn expired(&self) {
        self.update(|sample| sample.expiries += 1);
    }

    /// A keep-alive arrived with `margin_ratio` of its ttl left.
    pub fn renewed(&self, margin_ratio: f64) {
        self.update(|sample| {
            sample.renewals += 1;
            let lowest = sample
                .margin_ratio_min
                .map_or(margin_ratio, |m| m.min(margin_ratio));
            sample.margin_ratio_min = Some(lowest);
        });
    }

    /// Every sample kept, oldest first, the running interval last; and how
    /// far into it we are, in ms.
    pub fn recent(&self) -> (Vec<Sample>, u64) {
        let now = self.interval_now();
        let mut ring = self.lock();
        ring.advance_to(now.0);
        let mut all: Vec<Sample> = ring.closed.iter().copied().collect();
        all.push(ring.current);
        (all, now.1)
    }

    /// The running interval's number and the ms elapsed in it.
    fn interval_now(&self) -> (u64, u64) {
        let elapsed_ms = (self.clock.now() - self.started).as_millis() as u64;
        (elapsed_ms / CHART_SAMPLE_MS, elapsed_ms % CHART_SAMPLE_MS)
    }

    fn update(&self, change: impl FnOnce(&mut Sample)) {
        let (now, _) = self.interval_now();
        let mut ring = self.lock();
        ring.advance_to(now);
        change(&mut ring.current);
    }

    /// The ring, even if a panic poisoned it (counts stay consistent: each
    /// update is one field).
    fn lock(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Ring {
    /// Closes intervals up to `interval`, each idle one a sample of zeros,
    /// keeping at most `CHART_SAMPLES_MAX` in all.
    fn advance_to(&mut self, interval: u64) {
        let keep = CHART_SAMPLES_MAX as u64;
        if interval >= self.current.interval + keep {
            // Idle for longer than the ring: only zeros remain.
            self.closed.clear();
            let first = interval + 1 - keep;
            self.closed.extend((first..interval).map(|i| Sample {
                interval: i,
                ..Sample::default()
            }));
            self.current = Sample {
                interval,
                ..Sample::default()
            };
            return;
        }
        while self.current.interval < interval {
            let next = self.current.interval + 1;
            self.closed.push_back(self.current);
            self.current = Sample {
                interval: next,
                ..Sample::default()
            };
        }
        while self.closed.len() >= CHART_SAMPLES_MAX {
            self.closed.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use std::time::Duration;

    fn ring() -> (Arc<ManualClock>, Samples) {
        let clock = Arc::new(ManualClock::starting_now());
        let samples = Samples::new(clock.clone());
        (clock, samples)
    }

    #[test]
    fn counts_land_in_the_running_interval_and_idle_intervals_are_zeros() {
        let (clock, samples) = ring();
        samples.granted();
        samples.granted();
        samples.renewed(0.6);
        samples.renewed(0.2);
        clock.advance(Duration::from_millis(2 * CHART_SAMPLE_MS + 10));
        samples.expired();
        let (all, into_ms) = samples.recent();
        assert_eq!(into_ms, 10);
        assert_eq!(all.len(), 3);
        assert_eq!((all[0].grants, all[0].renewals), (2, 2));
        assert_eq!(all[0].margin_ratio_min, Some(0.2));
        assert_eq!(
            all[1],
            Sample {
                interval: 1,
                ..Sample::default()
            }
        );
        assert_eq!((all[2].interval, all[2].expiries), (2, 1));
    }

    #[test]
    fn the_ring_is_bounded_even_after_a_long_idle_time() {
        let (clock, samples) = ring();
        for _ in 0..CHART_SAMPLES_MAX * 2 {
            samples.released();
            clock.advance(Duration::from_millis(CHART_SAMPLE_MS));
        }
        let (all, _) = samples.recent();
        assert_eq!(all.len(), CHART_SAMPLES_MAX);
        assert!(all[..CHART_SAMPLES_MAX - 1].iter().all(|s| s.releases == 1));
        clock.advance(Duration::from_millis(CHART_SAMPLE_MS * 1_000));
        let (all, _) = samples.recent();
        assert_eq!(all.len(), CHART_SAMPLES_MAX);
        assert!(all.iter().all(|s| s.releases == 0));
        assert!(all.windows(2).all(|w| w[1].interval == w[0].interval + 1));
    }
}
