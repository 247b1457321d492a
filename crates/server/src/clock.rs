//! The server's only clock: monotonic, behind a trait so tests and
//! simulations can drive time. Lease arithmetic never uses wall time; wall
//! time appears only in replies (for display and skew detection) and in log
//! entries (for display).

use tokio::time::Instant;

/// A monotonic clock.
pub trait Clock: Send + Sync + 'static {
    /// Now, on a clock that never goes backwards.
    fn now(&self) -> Instant;
}

/// tokio's monotonic clock (CLOCK_MONOTONIC; paused and advanced by
/// `tokio::time::pause` in tests).
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioClock;

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// Wall time, Unix ms, for display fields only.
pub fn wall_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
