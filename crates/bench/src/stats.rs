//! Latency recording (one hdrhistogram per client, merged at the end) and the
//! final report, printed for people or as one JSON object.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Values are recorded in nanoseconds; below this the histogram does not
/// discriminate (1 µs).
const LOWEST_DISCERNIBLE_NS: u64 = 1_000;
/// Longest latency recorded exactly (10 minutes); longer ones saturate.
const HIGHEST_TRACKABLE_NS: u64 = 600_000_000_000;
/// Three significant digits: 0.1% relative error.
const SIGNIFICANT_DIGITS: u8 = 3;

/// A latency histogram in nanoseconds.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(
        LOWEST_DISCERNIBLE_NS,
        HIGHEST_TRACKABLE_NS,
        SIGNIFICANT_DIGITS,
    )
    .expect("constant histogram bounds are valid")
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// What one client measured. Owned by the client's task: nothing on the hot
/// path takes a lock; the recorders are merged once the run is over.
#[derive(Debug)]
pub struct Recorder {
    /// One entry per completed cycle.
    pub latency: Histogram<u64>,
    /// Lock hand-offs (contended workload only).
    pub handoff: Option<Histogram<u64>>,
    /// Failed calls by reason.
    pub errors: BTreeMap<String, u64>,
}

impl Recorder {
    pub fn new(with_handoff: bool) -> Self {
        Recorder {
            latency: new_histogram(),
            handoff: with_handoff.then(new_histogram),
            errors: BTreeMap::new(),
        }
    }

    pub fn latency(&mut self, d: Duration) {
        self.latency.saturating_record(nanos(d));
    }

    pub fn handoff(&mut self, d: Duration) {
        if let Some(h) = &mut self.handoff {
            h.saturating_record(nanos(d));
        }
    }

    pub fn error(&mut self, reason: impl Into<String>) {
        *self.errors.entry(reason.into()).or_insert(0) += 1;
    }

    pub fn merge(&mut self, other: Recorder) {
        self.latency
            .add(&other.latency)
            .expect("histograms share bounds");
        match (&mut self.handoff, other.handoff) {
            (Some(mine), Some(theirs)) => mine.add(&theirs).expect("histograms share bounds"),
            (None, Some(theirs)) => self.handoff = Some(theirs),
            _ => {}
        }
        for (reason, n) in other.errors {
            *self.errors.entry(reason).or_insert(0) += n;
        }
    }
}

/// Percentiles of one histogram, in microseconds (0 when it is empty).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Percentiles {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

/// `x` rounded to `decimals` places: every figure a report prints.
pub(crate) fn round_to(x: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (x * scale).round() / scale
}

/// A duration in seconds, to the millisecond.
pub(crate) fn seconds(d: Duration) -> f64 {
    round_to(d.as_secs_f64(), 3)
}

/// `count` per second over `elapsed_s`, to one decimal (0 over no time).
pub(crate) fn per_second(count: u64, elapsed_s: f64) -> f64 {
    if elapsed_s > 0.0 {
        round_to(count as f64 / elapsed_s, 1)
    } else {
        0.0
    }
}

fn us(ns: u64) -> f64 {
    // One decimal: the histogram is exact to 0.1% anyway.
    round_to(ns as f64 / 1000.0, 1)
}

impl Percentiles {
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Percentiles {
                count: 0,
                mean_us: 0.0,
                p50_us: 0.0,
                p90_us: 0.0,
                p99_us: 0.0,
                p999_us: 0.0,
                max_us: 0.0,
            };
        }
        Percentiles {
            count: h.len(),
            mean_us: round_to(h.mean() / 1000.0, 1),
            p50_us: us(h.value_at_quantile(0.50)),
            p90_us: us(h.value_at_quantile(0.90)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
        }
    }
}

/// The parameters a run was made with, as reported.
#[derive(Clone, Debug)]
pub struct RunInfo {
    pub workload: &'static str,
    pub endpoint: String,
    pub clients: u32,
    pub keys: u32,
    pub seconds: u64,
    pub warmup_s: u64,
    pub connections: u32,
    pub inflight: u32,
    /// `unary` or `session` (acquire/release transport).
    pub transport: &'static str,
    /// The measured window as it really elapsed, seconds.
    pub elapsed_s: f64,
}

/// The result of one run. Serialized as the single `--json` object.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub workload: &'static str,
    pub endpoint: String,
    pub clients: u32,
    pub keys: u32,
    pub seconds: u64,
    pub warmup_s: u64,
    pub transport: &'static str,
    pub connections: u32,
    /// Calls in flight per client (keep-alive renewals per stream; 1 otherwise).
    pub inflight: u32,
    pub elapsed_s: f64,
    pub cycles: u64,
    pub cycles_per_s: f64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub errors: u64,
    pub errors_by_reason: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoffs: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoff_p50_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoff_p90_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoff_p99_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoff_p999_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoff_max_us: Option<f64>,
    /// The server's resident memory before the leases were granted
    /// (`--server-pid`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_rss_before_bytes: Option<u64>,
    /// ... and at the end of the measured window, before the revokes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_rss_after_bytes: Option<u64>,
}

impl Report {
    pub fn new(info: RunInfo, rec: &Recorder) -> Self {
        let lat = Percentiles::of(&rec.latency);
        let hand = rec.handoff.as_ref().map(Percentiles::of);
        let cycles_per_s = per_second(lat.count, info.elapsed_s);
        Report {
            workload: info.workload,
            endpoint: info.endpoint,
            clients: info.clients,
            keys: info.keys,
            seconds: info.seconds,
            warmup_s: info.warmup_s,
            connections: info.connections,
            transport: info.transport,
            inflight: info.inflight,
            elapsed_s: round_to(info.elapsed_s, 3),
            cycles: lat.count,
            cycles_per_s,
            mean_us: lat.mean_us,
            p50_us: lat.p50_us,
            p90_us: lat.p90_us,
            p99_us: lat.p99_us,
            p999_us: lat.p999_us,
            max_us: lat.max_us,
            errors: rec.errors.values().sum(),
            errors_by_reason: rec.errors.clone(),
            handoffs: hand.map(|h| h.count),
            handoff_p50_us: hand.map(|h| h.p50_us),
            handoff_p90_us: hand.map(|h| h.p90_us),
            handoff_p99_us: hand.map(|h| h.p99_us),
            handoff_p999_us: hand.map(|h| h.p999_us),
            handoff_max_us: hand.map(|h| h.max_us),
            server_rss_before_bytes: None,
            server_rss_after_bytes: None,
        }
    }

    pub fn json(&self) -> String {
        serde_json::to_string(self).expect("a report always serializes")
    }

    /// The summary for people.
    pub fn human(&self) -> String {
        let mut s = String::new();
        let what = match self.workload {
            "uncontended" => "acquire+release cycle, each client on its own lock",
            "contended" => "acquire wait, clients queued on shared locks",
            _ => "keep-alive renewal, send to ack over one stream per client",
        };
        let _ = writeln!(s, "leasehold bench: {} ({what})", self.workload);
        let keys = if self.workload == "keepalive" {
            String::new()
        } else {
            format!(", {} keys", self.keys)
        };
        let _ = writeln!(
            s,
            "  endpoint {}, {} clients{keys}, {} connections ({}), {} in flight per client",
            self.endpoint, self.clients, self.connections, self.transport, self.inflight
        );
        let _ = writeln!(
            s,
            "  measured {:.2} s after a {} s warm-up",
            self.elapsed_s, self.warmup_s
        );
        let _ = writeln!(s, "  cycles   {} ({:.1}/s)", self.cycles, self.cycles_per_s);
        let _ = writeln!(
            s,
            "  latency  p50 {} µs  p90 {} µs  p99 {} µs  p99.9 {} µs  max {} µs  (mean {} µs)",
            self.p50_us, self.p90_us, self.p99_us, self.p999_us, self.max_us, self.mean_us
        );
        if let (Some(n), Some(p50), Some(p99), Some(max)) = (
            self.handoffs,
            self.handoff_p50_us,
            self.handoff_p99_us,
            self.handoff_max_us,
        ) {
            let _ = writeln!(
                s,
                "  handoff  p50 {p50} µs  p99 {p99} µs  max {max} µs  ({n} hand-offs; release sent → next grant received)"
            );
        }
        if self.errors == 0 {
            let _ = writeln!(s, "  errors   0");
        } else {
            let by: Vec<String> = self
                .errors_by_reason
                .iter()
                .map(|(r, n)| format!("{r} {n}"))
                .collect();
            let _ = writeln!(s, "  errors   {} ({})", self.errors, by.join(", "));
        }
        if let (Some(before), Some(after)) =
            (self.server_rss_before_bytes, self.server_rss_after_bytes)
        {
            let _ = writeln!(
                s,
                "  server   RSS {} before, {} at the end",
                crate::rss::mib(before),
                crate::rss::mib(after)
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_rounded_to_their_places() {
        assert_eq!(round_to(12.3456, 1), 12.3);
        assert_eq!(round_to(0.12349, 3), 0.123);
        assert_eq!(seconds(Duration::from_micros(1_234_567)), 1.235);
        assert_eq!(per_second(1000, 0.4), 2500.0);
        assert_eq!(per_second(1000, 0.0), 0.0);
        assert_eq!(us(1_234_567), 1234.6);
    }

    fn info(workload: &'static str) -> RunInfo {
        RunInfo {
            workload,
            endpoint: "http://127.0.0.1:7420".into(),
            clients: 2,
            keys: 1,
            seconds: 10,
            warmup_s: 1,
            connections: 2,
            transport: "unary",
            inflight: 1,
            elapsed_s: 10.0,
        }
    }

    #[test]
    fn percentiles_of_uniform_values() {
        let mut rec = Recorder::new(false);
        for i in 1..=1000u64 {
            rec.latency(Duration::from_micros(i));
        }
        let p = Percentiles::of(&rec.latency);
        assert_eq!(p.count, 1000);
        // Within the histogram's 0.1% precision.
        assert!((p.p50_us - 500.0).abs() <= 1.0, "{p:?}");
        assert!((p.p99_us - 990.0).abs() <= 1.0, "{p:?}");
        assert!((p.p999_us - 999.0).abs() <= 1.0, "{p:?}");
        assert!((p.max_us - 1000.0).abs() <= 1.0, "{p:?}");
        assert!((p.mean_us - 500.5).abs() <= 1.0, "{p:?}");
    }

    #[test]
    fn empty_histogram_reports_zeros() {
        let p = Percentiles::of(&new_histogram());
        assert_eq!(p.count, 0);
        assert_eq!(p.p50_us, 0.0);
        assert_eq!(p.max_us, 0.0);
    }

    #[test]
    fn huge_values_saturate_instead_of_failing() {
        let mut rec = Recorder::new(false);
        rec.latency(Duration::from_secs(100_000));
        rec.latency(Duration::from_nanos(1));
        assert_eq!(rec.latency.len(), 2);
    }

    #[test]
    fn merge_adds_counts_handoffs_and_errors() {
        let mut a = Recorder::new(true);
        let mut b = Recorder::new(true);
        a.latency(Duration::from_micros(100));
        b.latency(Duration::from_micros(300));
        b.latency(Duration::from_micros(300));
        b.handoff(Duration::from_micros(1500));
        a.error("Busy");
        b.error("Busy");
        b.error("WaitTimeout");
        a.merge(b);
        assert_eq!(a.latency.len(), 3);
        assert_eq!(a.handoff.as_ref().unwrap().len(), 1);
        assert_eq!(a.errors["Busy"], 2);
        assert_eq!(a.errors["WaitTimeout"], 1);
        assert!((Percentiles::of(&a.latency).max_us - 300.0).abs() <= 0.5);
    }

    #[test]
    fn report_counts_rate_and_errors() {
        let mut rec = Recorder::new(false);
        for _ in 0..500 {
            rec.latency(Duration::from_micros(200));
        }
        rec.error("Unavailable");
        let mut i = info("uncontended");
        i.elapsed_s = 2.0;
        let r = Report::new(i, &rec);
        assert_eq!(r.cycles, 500);
        assert_eq!(r.cycles_per_s, 250.0);
        assert_eq!(r.errors, 1);
        assert!(r.handoffs.is_none());
        assert!(r.human().contains("Unavailable 1"));
    }

    #[test]
    fn json_is_one_object_with_the_documented_fields() {
        let mut rec = Recorder::new(true);
        rec.latency(Duration::from_micros(50));
        rec.handoff(Duration::from_micros(1200));
        let json = Report::new(info("contended"), &rec).json();
        assert!(!json.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        for field in [
            "workload",
            "clients",
            "keys",
            "seconds",
            "cycles",
            "cycles_per_s",
            "p50_us",
            "p99_us",
            "p999_us",
            "max_us",
            "errors",
            "connections",
            "inflight",
            "handoff_p50_us",
            "handoff_p99_us",
        ] {
            assert!(v.get(field).is_some(), "missing {field} in {json}");
        }
        assert_eq!(v["workload"], "contended");
        assert_eq!(v["cycles"], 1);
        assert!((v["handoff_p50_us"].as_f64().unwrap() - 1200.0).abs() <= 1.5);
    }

    #[test]
    fn json_has_no_handoff_fields_without_contention() {
        let rec = Recorder::new(false);
        let json = Report::new(info("keepalive"), &rec).json();
        assert!(!json.contains("handoff"), "{json}");
    }
}
