//! [`RenewalTap`]: what the client library's own lease keepers report about
//! their renewals, caught as it happens. The keepers record every
//! keep-alive round trip, failure and loss through the `metrics` facade
//! (`leasehold_client::metrics`); the sessions workload installs this tap as
//! the process's recorder, so the figures it reports are the keepers' own,
//! measured where a library user's renewals are measured, and not a second
//! renewal loop of the bench's that would double the load.
//!
//! Only the three series the report needs are kept; every other metric is
//! a no-op handle.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use hdrhistogram::Histogram;
use leasehold_client::metrics::{LOSSES_TOTAL, RENEWALS_FAILED_TOTAL, RENEWAL_SECONDS};
use metrics::{Counter, CounterFn, Gauge, HistogramFn, Key, KeyName, Metadata};
use metrics::{SharedString, Unit};

use super::stats::new_histogram;

/// The keepers' renewals since the last [`RenewalTap::take`].
#[derive(Debug)]
pub(super) struct Taken {
    /// Round trips of acknowledged keep-alives, nanoseconds.
    pub(super) latency: Histogram<u64>,
    /// Keep-alives that failed, by the library's reason.
    pub(super) failed: BTreeMap<String, u64>,
    /// Leases whose ownership was lost, by cause.
    pub(super) lost: BTreeMap<String, u64>,
}

/// The shared recording: one lock, taken once per renewal (a few thousand
/// a second at most), never on a request path of the server's.
#[derive(Debug)]
struct Recording {
    taken: Mutex<Taken>,
}

impl Recording {
    fn with<T>(&self, f: impl FnOnce(&mut Taken) -> T) -> T {
        f(&mut self.taken.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The process's metrics recorder while the sessions workload runs.
#[derive(Clone, Debug)]
pub(super) struct RenewalTap {
    recording: Arc<Recording>,
}

impl RenewalTap {
    /// Installs a tap as the process's recorder. Fails if one is already
    /// installed (the `leasehold` command installs none for `bench`).
    pub(super) fn install() -> anyhow::Result<RenewalTap> {
        let tap = RenewalTap {
            recording: Arc::new(Recording {
                taken: Mutex::new(Taken::empty()),
            }),
        };
        metrics::set_global_recorder(tap.clone()).map_err(|_| {
            anyhow::anyhow!(
                "cannot observe the keepers' renewals: this process already has a metrics recorder"
            )
        })?;
        Ok(tap)
    }

    /// What was recorded since the last call; starts afresh.
    pub(super) fn take(&self) -> Taken {
        self.recording
            .with(|taken| std::mem::replace(taken, Taken::empty()))
    }
}

impl Taken {
    fn empty() -> Taken {
        Taken {
            latency: new_histogram(),
            failed: BTreeMap::new(),
            lost: BTreeMap::new(),
        }
    }
}

/// Which of [`Taken`]'s counts a counter handle adds to.
#[derive(Clone, Copy, Debug)]
enum Count {
    Failed,
    Lost,
}

/// A counter handle for one label value (`reason` or `cause`).
#[derive(Debug)]
struct LabeledCounter {
    recording: Arc<Recording>,
    count: Count,
    label: String,
}

impl CounterFn for LabeledCounter {
    fn increment(&self, value: u64) {
        self.recording.with(|taken| {
            let counts = match self.count {
                Count::Failed => &mut taken.failed,
                Count::Lost => &mut taken.lost,
            };
            *counts.entry(self.label.clone()).or_insert(0) += value;
        });
    }

    fn absolute(&self, _value: u64) {}
}

/// The round-trip histogram handle.
#[derive(Debug)]
struct RoundTrips {
    recording: Arc<Recording>,
}

impl HistogramFn for RoundTrips {
    fn record(&self, seconds: f64) {
        let nanos = (seconds * 1e9).max(0.0) as u64;
        self.recording
            .with(|taken| taken.latency.saturating_record(nanos));
    }
}

impl metrics::Recorder for RenewalTap {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let (count, label) = match key.name() {
            RENEWALS_FAILED_TOTAL => (Count::Failed, "reason"),
            LOSSES_TOTAL => (Count::Lost, "cause"),
            _ => return Counter::noop(),
        };
        let label = key
            .labels()
            .find(|l| l.key() == label)
            .map_or_else(|| "unlabelled".to_owned(), |l| l.value().to_owned());
        Counter::from_arc(Arc::new(LabeledCounter {
            recording: self.recording.clone(),
            count,
            label,
        }))
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> metrics::Histogram {
        if key.name() != RENEWAL_SECONDS {
            return metrics::Histogram::noop();
        }
        metrics::Histogram::from_arc(Arc::new(RoundTrips {
            recording: self.recording.clone(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metrics::Recorder as _;

    fn metadata() -> Metadata<'static> {
        Metadata::new(module_path!(), metrics::Level::INFO, None)
    }

    #[test]
    fn keeps_round_trips_failures_and_losses_and_starts_afresh() {
        let tap = RenewalTap {
            recording: Arc::new(Recording {
                taken: Mutex::new(Taken::empty()),
            }),
        };
        let rtt = tap.register_histogram(&Key::from_name(RENEWAL_SECONDS), &metadata());
        rtt.record(0.002);
        rtt.record(0.004);
        let failed = Key::from_parts(
            RENEWALS_FAILED_TOTAL,
            vec![metrics::Label::new("reason", "timeout")],
        );
        tap.register_counter(&failed, &metadata()).increment(2);
        let lost = Key::from_parts(LOSSES_TOTAL, vec![metrics::Label::new("cause", "expired")]);
        tap.register_counter(&lost, &metadata()).increment(1);
        let other = tap.register_histogram(&Key::from_name("something_else"), &metadata());
        other.record(9.0);

        let taken = tap.take();
        assert_eq!(taken.latency.len(), 2, "only the round trips");
        let max_ms = taken.latency.max() as f64 / 1e6;
        assert!((3.99..4.01).contains(&max_ms), "{max_ms}");
        assert_eq!(taken.failed, BTreeMap::from([("timeout".to_owned(), 2)]));
        assert_eq!(taken.lost, BTreeMap::from([("expired".to_owned(), 1)]));
        assert!(tap.take().latency.is_empty(), "take starts afresh");
    }
}
