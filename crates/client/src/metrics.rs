//! Client-side metrics, through the `metrics` facade: the application
//! installs whatever recorder it exports with (Prometheus, StatsD, …); with
//! none installed these cost next to nothing.
//!
//! | name | kind | meaning |
//! |---|---|---|
//! | `leasehold_client_renewal_seconds` | histogram | keep-alive round trip |
//! | `leasehold_client_renewal_margin_seconds` | histogram | time that was left until the local deadline when a renewal was acknowledged; near zero means the lease almost lapsed |
//! | `leasehold_client_renewals_failed_total{reason}` | counter | keep-alives that failed (`unavailable`, `timeout`, `not_leader`, definite reasons) |
//! | `leasehold_client_losses_total{cause}` | counter | ownership lost, by [`LossCause::label`] |
//! | `leasehold_client_call_attempts_total{call, route}` | counter | attempts of acquires, releases and one-off renewals by route: `session` (the lease's stream) or `unary` (configured, or while the stream is down) |

use crate::loss::LossCause;
use std::time::Duration;

/// Histogram: keep-alive round trip, seconds.
pub const RENEWAL_SECONDS: &str = "leasehold_client_renewal_seconds";
/// Histogram: time left until the local deadline at each renewal, seconds.
pub const RENEWAL_MARGIN_SECONDS: &str = "leasehold_client_renewal_margin_seconds";
/// Counter: failed keep-alives, by reason.
pub const RENEWALS_FAILED_TOTAL: &str = "leasehold_client_renewals_failed_total";
/// Counter: losses of ownership, by cause.
pub const LOSSES_TOTAL: &str = "leasehold_client_losses_total";
/// Counter: attempts of the calls a session stream can carry, by call and route.
pub const CALL_ATTEMPTS_TOTAL: &str = "leasehold_client_call_attempts_total";

/// A renewal was acknowledged after `latency`, with `margin_left` to spare.
pub(crate) fn renewed(latency: Duration, margin_left: Duration) {
    metrics::histogram!(RENEWAL_SECONDS).record(latency.as_secs_f64());
    metrics::histogram!(RENEWAL_MARGIN_SECONDS).record(margin_left.as_secs_f64());
}

/// A renewal failed for `reason`.
pub(crate) fn renewal_failed(reason: &'static str) {
    metrics::counter!(RENEWALS_FAILED_TOTAL, "reason" => reason).increment(1);
}

/// An attempt of `call` went by `route` (`session` or `unary`).
pub(crate) fn attempt(call: &'static str, route: &'static str) {
    metrics::counter!(CALL_ATTEMPTS_TOTAL, "call" => call, "route" => route).increment(1);
}

/// Ownership was lost.
pub(crate) fn lost(cause: &LossCause) {
    metrics::counter!(LOSSES_TOTAL, "cause" => cause.label()).increment(1);
}
