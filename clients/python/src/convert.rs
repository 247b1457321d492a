//! Python values in, Rust values out: seconds as `Duration`s (checked at
//! the boundary, naming the argument), outcomes as plain Python values.

use leasehold_client::ReleaseOutcome;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::time::Duration;

/// Seconds (a non-negative, finite float) as a `Duration`, or a
/// `ValueError` naming `what`.
pub fn seconds(what: &'static str) -> impl Fn(f64) -> PyResult<Duration> {
    move |seconds| {
        Duration::try_from_secs_f64(seconds).map_err(|_| {
            PyValueError::new_err(format!(
                "{what} must be a finite, non-negative number of seconds, not {seconds}"
            ))
        })
    }
}

/// An optional seconds argument.
pub fn optional_seconds(what: &'static str, value: Option<f64>) -> PyResult<Option<Duration>> {
    value.map(seconds(what)).transpose()
}

/// A release outcome as `(status, holder_token, nearby)`, which the
/// Python side wraps in `leasehold.ReleaseOutcome`.
pub fn release_outcome(outcome: ReleaseOutcome) -> (&'static str, Option<u64>, Vec<String>) {
    match outcome {
        ReleaseOutcome::Released => ("released", None, Vec::new()),
        ReleaseOutcome::AlreadyExpired => ("already_expired", None, Vec::new()),
        ReleaseOutcome::HeldByAnother { holder_token } => {
            ("held_by_another", holder_token.map(|t| t.0), Vec::new())
        }
        ReleaseOutcome::NoSuchLock { nearby } => ("no_such_lock", None, nearby),
    }
}
