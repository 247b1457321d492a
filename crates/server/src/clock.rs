//! The server's only clock: monotonic, behind a trait so tests and
//! simulations can drive time. Lease arithmetic never uses wall time; wall
//! time appears only in replies (for display and skew detection) and in log
//! entries (for display).

use std::sync::atomic::{AtomicI64, Ordering};
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

/// A shift added to every wall time this process reports, in ms (0 unless a
/// drill sets it): lets a test run a server whose wall clock disagrees with
/// its clients', to show that only display and skew detection see it.
static WALL_CLOCK_OFFSET_MS: AtomicI64 = AtomicI64::new(0);

/// Makes this process report wall times shifted by `offset_ms` (drills only).
pub fn set_wall_clock_offset_ms(offset_ms: i64) {
    WALL_CLOCK_OFFSET_MS.store(offset_ms, Ordering::Relaxed);
}

/// Wall time, Unix ms, for display fields only.
pub fn wall_unix_ms() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    now.saturating_add_signed(WALL_CLOCK_OFFSET_MS.load(Ordering::Relaxed))
}

/// A clock moved by hand, for unit tests of what reads [`Clock`].
#[cfg(test)]
#[derive(Debug)]
pub struct ManualClock {
    /// Where the clock started.
    start: Instant,
    /// How far it has been moved since.
    moved: std::sync::Mutex<std::time::Duration>,
}

#[cfg(test)]
impl ManualClock {
    /// A clock at the real now, standing still until [`advance`](Self::advance)d.
    pub fn starting_now() -> ManualClock {
        ManualClock {
            start: Instant::now(),
            moved: std::sync::Mutex::new(std::time::Duration::ZERO),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: std::time::Duration) {
        *self.moved.lock().expect("clock lock") += by;
    }
}

#[cfg(test)]
impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.start + *self.moved.lock().expect("clock lock")
    }
}
