//! Bounded waiting: poll a condition until it holds or a deadline passes,
//! and then fail naming what did not happen. A test never sleeps "long
//! enough"; it waits for the condition, and a slow machine only makes it
//! slower, not flaky.
//!
//! The async waits sleep on tokio's clock (`tokio::time`) between polls.
//! They take any `AsyncFnMut`: an async closure
//! (`async || server.holder("a").await.is_none()`) or a closure returning
//! a future.

use std::future::Future;
use std::time::{Duration, Instant as StdInstant};
use tokio::time::Instant;

/// How often the async waits poll.
const POLL_EVERY: Duration = Duration::from_millis(10);

/// How often [`wait_for`] polls (each poll of a process-based test may run
/// a command, so less often).
const POLL_EVERY_BLOCKING: Duration = Duration::from_millis(20);

/// Polls `check` until it holds; panics naming `what` if it does not
/// within `timeout`. Returns how long it took.
pub async fn eventually(
    what: &str,
    timeout: Duration,
    mut check: impl AsyncFnMut() -> bool,
) -> Duration {
    let started = Instant::now();
    eventually_some(what, timeout, async || check().await.then_some(())).await;
    started.elapsed()
}

/// As [`eventually`], against a `deadline` that several waits can share.
pub async fn eventually_by(what: &str, deadline: Instant, mut check: impl AsyncFnMut() -> bool) {
    poll(what, deadline, async || check().await.then_some(())).await
}

/// Polls `find` until it returns `Some`, and returns that; panics naming
/// `what` if it does not within `timeout`.
pub async fn eventually_some<T>(
    what: &str,
    timeout: Duration,
    find: impl AsyncFnMut() -> Option<T>,
) -> T {
    poll(what, Instant::now() + timeout, find).await
}

async fn poll<T>(what: &str, deadline: Instant, mut find: impl AsyncFnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(found) = find().await {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {:?} waiting until {what}",
            started.elapsed()
        );
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// Awaits `future`, panicking naming `what` if it takes longer than `bound`.
pub async fn within<T>(what: &str, bound: Duration, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(bound, future).await {
        Ok(value) => value,
        Err(_) => panic!("{what} did not happen within {bound:?}"),
    }
}

/// The blocking flavour of [`eventually_some`], for tests that drive real
/// processes from plain threads: polls `check` until it returns `Some`, or
/// panics after `limit` naming `what`.
pub fn wait_for<T>(what: &str, limit: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = StdInstant::now() + limit;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            StdInstant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(POLL_EVERY_BLOCKING);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn eventually_returns_once_the_condition_holds() {
        let mut polls = 0;
        let took = eventually("three polls", Duration::from_secs(5), async || {
            polls += 1;
            polls == 3
        })
        .await;
        assert_eq!(polls, 3);
        assert!(took >= POLL_EVERY * 2, "{took:?}");
        let found = eventually_some("a value", Duration::from_secs(1), async || Some(7)).await;
        assert_eq!(found, 7);
    }

    #[tokio::test]
    #[should_panic(expected = "waiting until never")]
    async fn eventually_fails_naming_what_did_not_happen() {
        eventually("never", Duration::from_millis(50), async || false).await;
    }

    #[test]
    #[should_panic(expected = "waiting for nothing")]
    fn wait_for_fails_after_its_limit() {
        wait_for("nothing", Duration::from_millis(50), || None::<()>);
    }
}
