//! The client's clock: the one place the client library reads time for
//! lease validity (STYLE.md rule 2), behind a trait so tests drive it.
//!
//! Validity must keep counting while the process is paused (SIGSTOP, a long
//! GC or CPU-throttling stall) *and* while the machine is suspended: the
//! server's lease keeps running out during both. `std::time::Instant` is
//! CLOCK_MONOTONIC on Linux, which stops during suspend; a laptop or VM that
//! sleeps for an hour would wake up still believing it holds its locks. So
//! [`BootClock`] reads CLOCK_BOOTTIME. Wall time is never used for validity:
//! the trait offers it for display only, and a jump in it changes nothing.

use std::fmt;
use std::ops::Add;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::Notify;

/// A point on the boot clock: time since the machine booted, including time
/// spent suspended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BootInstant(Duration);

impl BootInstant {
    /// The instant `since_boot` after boot.
    pub fn from_since_boot(since_boot: Duration) -> BootInstant {
        BootInstant(since_boot)
    }

    /// Time since boot.
    pub fn since_boot(self) -> Duration {
        self.0
    }

    /// Time from `earlier` to `self`, or zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: BootInstant) -> Duration {
        self.0.saturating_sub(earlier.0)
    }

    /// `self - d`, or boot itself if `d` reaches back past it.
    pub fn saturating_sub(self, d: Duration) -> BootInstant {
        BootInstant(self.0.saturating_sub(d))
    }
}

impl Add<Duration> for BootInstant {
    type Output = BootInstant;

    fn add(self, d: Duration) -> BootInstant {
        BootInstant(self.0 + d)
    }
}

/// What the client reads time from.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// Now, on a clock that counts through pauses and suspend.
    fn now(&self) -> BootInstant;

    /// Wall time, Unix ms: for display and skew detection only.
    fn wall_unix_ms(&self) -> i64;
}

/// The real clock: CLOCK_BOOTTIME (CLOCK_MONOTONIC where there is no such
/// clock, which is only as good as `Instant`).
#[derive(Clone, Copy, Debug, Default)]
pub struct BootClock;

#[cfg(any(target_os = "linux", target_os = "android"))]
const BOOT_CLOCK_ID: libc::clockid_t = libc::CLOCK_BOOTTIME;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const BOOT_CLOCK_ID: libc::clockid_t = libc::CLOCK_MONOTONIC;

impl Clock for BootClock {
    fn now(&self) -> BootInstant {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; clock_gettime only
        // writes it. The clock id is a constant the platform supports.
        let rc = unsafe { libc::clock_gettime(BOOT_CLOCK_ID, &mut ts) };
        // A supported clock id and a valid pointer cannot fail; if the
        // kernel says otherwise nothing about time can be trusted.
        assert_eq!(rc, 0, "clock_gettime(CLOCK_BOOTTIME) failed");
        BootInstant(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }

    fn wall_unix_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }
}

/// How often the suspend watcher compares the boot clock with the
/// monotonic one. Tokio's timers run on the monotonic clock, which stops
/// during suspend; the watcher wakes every boot-clock sleeper when the two
/// drift apart, so a deadline that passed while the machine slept is
/// noticed at most this long after it wakes. (A `fence()` call reads the
/// clock itself and is never late.)
pub const BOOT_SLEEP_SLICE: Duration = Duration::from_millis(100);

/// Drift between the boot and monotonic clocks that counts as a suspend
/// (both are read a few nanoseconds apart, so they never agree exactly).
const SUSPEND_NOTICED: Duration = Duration::from_millis(1);

/// Sleepers wait on this besides their timer: [`wake_sleepers`] makes
/// them read their clock again.
static CLOCK_MOVED: Notify = Notify::const_new();

/// Makes every [`sleep_until`] read its clock again now. The suspend
/// watcher calls it after the machine slept, [`ManualClock`] when moved by
/// hand; a [`Clock`] of one's own that can move ahead of tokio's
/// (monotonic) time must call it too.
pub fn wake_sleepers() {
    CLOCK_MOVED.notify_waiters();
}

/// Sleeps until `deadline` on `clock`: on tokio's timer for the time left,
/// or until [`wake_sleepers`], then reads the clock again.
///
/// One timer per sleeper, and no periodic wake-ups: a process keeping tens
/// of thousands of leases spends nothing while their deadlines are far
/// off. (Sleeping in slices of [`BOOT_SLEEP_SLICE`] instead cost 10 wake-ups
/// a second per lease: a whole core at 40,000 leases.) The boot clock never
/// runs slower than the monotonic one, so the timer is never early.
pub async fn sleep_until(clock: &dyn Clock, deadline: BootInstant) {
    suspend_watch::start_once();
    loop {
        // Registered before the clock is read, so a wake between the read
        // and the wait is not lost.
        let moved = CLOCK_MOVED.notified();
        tokio::pin!(moved);
        moved.as_mut().enable();
        let left = deadline.saturating_duration_since(clock.now());
        if left.is_zero() {
            return;
        }
        tokio::select! {
            () = tokio::time::sleep(left) => {}
            () = moved => {}
        }
    }
}

/// The one thread per process that notices a suspend: every
/// [`BOOT_SLEEP_SLICE`] it compares CLOCK_BOOTTIME − CLOCK_MONOTONIC (time
/// spent suspended) with its last reading and, if it grew, wakes the
/// sleepers. A thread, not a task: it must outlive any one runtime.
mod suspend_watch {
    use super::{wake_sleepers, BOOT_SLEEP_SLICE, SUSPEND_NOTICED};
    use std::sync::Once;
    use std::time::Duration;

    pub(super) fn start_once() {
        static STARTED: Once = Once::new();
        STARTED.call_once(|| {
            let spawned = std::thread::Builder::new()
                .name("leasehold-suspend-watch".into())
                .spawn(watch);
            if let Err(error) = spawned {
                tracing::warn!(%error, "cannot start the suspend watcher: a deadline passed during suspend is noticed only at its timer");
            }
        });
    }

    fn watch() {
        let mut slept = time_suspended();
        loop {
            std::thread::sleep(BOOT_SLEEP_SLICE);
            let now = time_suspended();
            if suspended_since(slept, now) {
                wake_sleepers();
            }
            slept = now;
        }
    }

    /// Whether the machine slept between two readings of [`time_suspended`].
    pub(super) fn suspended_since(before: Duration, now: Duration) -> bool {
        now.saturating_sub(before) >= SUSPEND_NOTICED
    }

    /// CLOCK_BOOTTIME − CLOCK_MONOTONIC: time spent suspended since boot.
    fn time_suspended() -> Duration {
        read(libc::CLOCK_BOOTTIME).saturating_sub(read(libc::CLOCK_MONOTONIC))
    }

    fn read(clock: libc::clockid_t) -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a supported clock id and a valid pointer to a timespec we own.
        unsafe { libc::clock_gettime(clock, &mut ts) };
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }
}

/// A clock moved by hand, for tests and simulations of pauses, suspend and
/// wall-clock jumps.
#[derive(Debug)]
pub struct ManualClock {
    /// (boot time, wall time in Unix ms)
    now: Mutex<(Duration, i64)>,
}

impl ManualClock {
    /// A clock at `since_boot`, with wall time `wall_unix_ms`.
    pub fn new(since_boot: Duration, wall_unix_ms: i64) -> ManualClock {
        ManualClock {
            now: Mutex::new((since_boot, wall_unix_ms)),
        }
    }

    /// Time passes (on both clocks): a pause, or a suspend.
    pub fn advance(&self, d: Duration) {
        let mut now = self.now.lock().expect("clock lock");
        now.0 += d;
        now.1 += d.as_millis() as i64;
        drop(now);
        wake_sleepers();
    }

    /// The wall clock jumps (NTP step, operator, VM restore); boot time does not.
    pub fn jump_wall_ms(&self, delta_ms: i64) {
        self.now.lock().expect("clock lock").1 += delta_ms;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> BootInstant {
        BootInstant(self.now.lock().expect("clock lock").0)
    }

    fn wall_unix_ms(&self) -> i64 {
        self.now.lock().expect("clock lock").1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot_clock_moves_forward_and_is_at_least_the_monotonic_clock() {
        let a = BootClock.now();
        std::thread::sleep(Duration::from_millis(2));
        let b = BootClock.now();
        assert!(b > a);
        let mut mono = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: as in BootClock::now.
        assert_eq!(
            unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut mono) },
            0
        );
        // Boot time includes suspended time, so it never trails monotonic.
        let mono = Duration::new(mono.tv_sec as u64, mono.tv_nsec as u32);
        assert!(BootClock.now().since_boot() >= mono);
    }

    #[tokio::test]
    async fn a_sleeper_wakes_when_its_clock_moves_not_only_at_its_timer() {
        let clock = std::sync::Arc::new(ManualClock::new(Duration::from_secs(100), 0));
        let deadline = clock.now() + Duration::from_secs(3600);
        let sleeper = {
            let clock = clock.clone();
            tokio::spawn(async move { sleep_until(clock.as_ref(), deadline).await })
        };
        // An hour passes on the clock (a suspend, as the watcher reports
        // it) while only moments pass on tokio's timer.
        tokio::time::sleep(Duration::from_millis(20)).await;
        clock.advance(Duration::from_secs(3600));
        tokio::time::timeout(Duration::from_secs(5), sleeper)
            .await
            .expect("woken by the clock's move, not its hour-long timer")
            .expect("sleeper ran");
    }

    #[test]
    fn a_suspend_is_growth_of_the_boot_monotonic_gap() {
        let gap = Duration::from_secs(7);
        assert!(!suspend_watch::suspended_since(
            gap,
            gap + Duration::from_micros(20)
        ));
        assert!(suspend_watch::suspended_since(
            gap,
            gap + Duration::from_secs(60)
        ));
        assert!(!suspend_watch::suspended_since(gap, gap));
    }

    #[test]
    fn manual_clock_keeps_boot_time_still_through_a_wall_jump() {
        let clock = ManualClock::new(Duration::from_secs(100), 1_000);
        clock.jump_wall_ms(-3_600_000);
        assert_eq!(clock.now().since_boot(), Duration::from_secs(100));
        clock.advance(Duration::from_secs(2));
        assert_eq!(clock.now().since_boot(), Duration::from_secs(102));
        assert_eq!(clock.wall_unix_ms(), 1_000 - 3_600_000 + 2_000);
    }
}
