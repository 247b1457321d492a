//! The client's metrics, read through a `DebuggingRecorder`: renewal round
//! trips and the margin they arrived with, a broken stream counted as a
//! failed renewal (and not as a loss), the orphan released after the
//! reconnect, and one loss counted by cause.
//!
//! The recorder is process-global, so this binary holds a single test (a
//! second one running alongside would add to the same counters), and the
//! recorder is installed before the in-process server tries to install its own.

use leasehold_client::lease::ORPHANS_RELEASED_TOTAL;
use leasehold_client::metrics::{
    LOSSES_TOTAL, RENEWALS_FAILED_TOTAL, RENEWAL_MARGIN_SECONDS, RENEWAL_SECONDS,
};
use leasehold_client::LossCause;
use leasehold_testkit::{client, eventually, within, Proxy, TestServer};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

/// The recorder's snapshotter; installs the recorder on first use.
fn snapshotter() -> &'static Snapshotter {
    static SNAPSHOTTER: OnceLock<Snapshotter> = OnceLock::new();
    SNAPSHOTTER.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::set_global_recorder(recorder).expect("no other recorder installed yet");
        snapshotter
    })
}

/// Everything recorded since the start, accumulated over snapshots (each
/// snapshot drains what it returns).
#[derive(Default)]
struct Recorded {
    /// (name, sorted labels) → total.
    counters: HashMap<(String, Vec<(String, String)>), u64>,
    /// name → samples.
    histograms: HashMap<String, Vec<f64>>,
}

impl Recorded {
    fn take(&mut self) {
        for (key, _, _, value) in snapshotter().snapshot().into_vec() {
            let key = key.key();
            let name = key.name().to_owned();
            match value {
                DebugValue::Counter(n) => {
                    let mut labels: Vec<_> = key
                        .labels()
                        .map(|l| (l.key().to_owned(), l.value().to_owned()))
                        .collect();
                    labels.sort();
                    *self.counters.entry((name, labels)).or_default() += n;
                }
                DebugValue::Histogram(samples) => self
                    .histograms
                    .entry(name)
                    .or_default()
                    .extend(samples.into_iter().map(|s| s.into_inner())),
                DebugValue::Gauge(_) => {}
            }
        }
    }

    fn counter(&self, name: &str, label: (&str, &str)) -> u64 {
        let labels = vec![(label.0.to_owned(), label.1.to_owned())];
        let key = (name.to_owned(), labels);
        self.counters.get(&key).copied().unwrap_or(0)
    }

    /// The total of counter `name` over all its labels.
    fn total(&self, name: &str) -> u64 {
        let matching = self.counters.iter().filter(|((n, _), _)| n == name);
        matching.map(|(_, total)| total).sum()
    }

    fn samples(&self, name: &str) -> &[f64] {
        self.histograms.get(name).map_or(&[], Vec::as_slice)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_reconnects_orphans_and_losses_are_recorded() {
    snapshotter();
    let server = TestServer::start().await;
    let proxy = Proxy::start(server.addr).await;
    let client = client(&[proxy.endpoint()]).await;
    let recorded = RefCell::new(Recorded::default());

    // Frequent renewals, with room to spare before the lease would lapse.
    let ttl = Duration::from_secs(3);
    let interval = Duration::from_millis(250);
    let lease = client
        .lease(ttl)
        .keep_alive_interval(interval)
        .grant()
        .await
        .unwrap();
    let timing = lease.timing();
    let guard = lease.lock("t50/metered").acquire().await.unwrap();

    tracing::info!("phase: a few renewals, timed, with the margin they left");
    eventually(
        "three renewals are recorded",
        Duration::from_secs(3),
        || async {
            let mut recorded = recorded.borrow_mut();
            recorded.take();
            recorded.samples(RENEWAL_SECONDS).len() >= 3
        },
    )
    .await;
    {
        let recorded = recorded.borrow();
        let round_trips = recorded.samples(RENEWAL_SECONDS);
        for &seconds in round_trips {
            let within_interval = seconds > 0.0 && seconds < timing.interval.as_secs_f64();
            assert!(within_interval, "{round_trips:?}");
        }
        let margins = recorded.samples(RENEWAL_MARGIN_SECONDS);
        assert_eq!(margins.len(), round_trips.len());
        let valid_for = (ttl - timing.margin).as_secs_f64();
        for &seconds in margins {
            assert!(seconds > 0.0 && seconds <= valid_for, "{margins:?}");
            assert!(seconds <= ttl.as_secs_f64());
        }
        assert_eq!(recorded.total(LOSSES_TOTAL), 0);
        assert_eq!(recorded.total(RENEWALS_FAILED_TOTAL), 0);
    }

    tracing::info!("phase: a reconnect is a failed renewal, and releases an orphan");
    let orphan = server.acquire_raw(lease.id().0, "t50/orphan").await;
    assert!(orphan > guard.token().0);
    proxy.cut();
    eventually(
        "the keeper tries to reconnect",
        timing.interval * 2,
        || async { proxy.refused() > 0 },
    )
    .await;
    proxy.restore();
    eventually(
        "the orphan release is counted",
        Duration::from_secs(3),
        || async {
            let mut recorded = recorded.borrow_mut();
            recorded.take();
            recorded.total(ORPHANS_RELEASED_TOTAL) == 1
        },
    )
    .await;
    assert_eq!(server.lock_info("t50/orphan").await, None);
    {
        let recorded = recorded.borrow();
        let unavailable = recorded.counter(RENEWALS_FAILED_TOTAL, ("reason", "unavailable"));
        assert!(unavailable >= 1, "the broken stream was not counted");
        assert_eq!(
            recorded.total(LOSSES_TOTAL),
            0,
            "the reconnect lost the lease"
        );
    }
    assert!(guard.fence().is_ok());

    tracing::info!("phase: an external revoke is counted as one loss");
    server.revoke(lease.id().0).await;
    let bound = timing.interval + Duration::from_millis(500);
    let lost = within("loss after the revoke", bound, guard.lost()).await;
    assert_eq!(lost.cause, LossCause::LeaseNotFound);
    // Asking again, from the guard and the lease, counts nothing more.
    assert!(guard.fence().is_err() && lease.check().is_err());
    let mut recorded = recorded.into_inner();
    recorded.take();
    let cause = ("cause", LossCause::LeaseNotFound.label());
    assert_eq!(recorded.counter(LOSSES_TOTAL, cause), 1);
    assert_eq!(recorded.total(LOSSES_TOTAL), 1);
    let reason = ("reason", LossCause::LeaseNotFound.label());
    assert_eq!(recorded.counter(RENEWALS_FAILED_TOTAL, reason), 1);
}
