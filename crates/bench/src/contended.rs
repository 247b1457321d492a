//! Contended: clients spread over K shared locks `bench/c/{k}`; each acquires
//! with a wait through its lease, then releases at once. Latency is the wait (ask → granted).
//! The hand-off is the time from the previous holder sending its release to
//! the next holder receiving its grant, measured through a per-key slot the
//! holder stamps just before it sends the release.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use leasehold_client::LockName;
use tokio::time::Instant;

use super::stats::Recorder;
use super::{released, until, Window, Worker};

/// How long one acquire waits in the queue.
const WAIT: Duration = Duration::from_secs(30);

/// The shared locks and, per lock, when its last holder sent its release.
#[derive(Clone)]
pub(super) struct Keys(Arc<KeysInner>);

struct KeysInner {
    /// Release instants are stored as nanoseconds since `base`, plus one
    /// (0: no release pending hand-off).
    base: Instant,
    keys: Vec<Key>,
}

struct Key {
    name: LockName,
    released_at: AtomicU64,
}

impl Keys {
    pub(super) fn new(n: u32, base: Instant) -> Keys {
        Keys(Arc::new(KeysInner {
            base,
            keys: (0..n)
                .map(|k| Key {
                    name: LockName::parse(&format!("{}c/{k}", super::run_prefix()))
                        .expect("a valid lock name"),
                    released_at: AtomicU64::new(0),
                })
                .collect(),
        }))
    }

    /// Stamps "release being sent now" on key `k`.
    fn stamp_release(&self, k: usize) {
        let ns = Instant::now()
            .saturating_duration_since(self.0.base)
            .as_nanos() as u64;
        self.0.keys[k].released_at.store(ns + 1, Ordering::Release);
    }

    /// Forgets a stamp (the release failed: no hand-off follows it).
    fn clear(&self, k: usize) {
        self.0.keys[k].released_at.store(0, Ordering::Release);
    }

    /// Takes the pending release stamp of key `k`; the hand-off ends at
    /// `granted`.
    fn take_handoff(&self, k: usize, granted: Instant) -> Option<Duration> {
        match self.0.keys[k].released_at.swap(0, Ordering::AcqRel) {
            0 => None,
            ns => {
                let released = self.0.base + Duration::from_nanos(ns - 1);
                Some(granted.saturating_duration_since(released))
            }
        }
    }
}

pub(super) async fn client(w: Worker, win: Window, keys: Keys) -> Recorder {
    let mut rec = Recorder::new(true);
    // One timer for the whole run: the call in flight at the end is dropped
    // (a queued acquire leaves the queue).
    until(win.end, cycles(&w, win, &keys, &mut rec)).await;
    rec
}

async fn cycles(w: &Worker, win: Window, keys: &Keys, rec: &mut Recorder) {
    let k = w.index as usize % keys.0.keys.len();
    let name = keys.0.keys[k].name.clone();
    loop {
        let t0 = Instant::now();
        let acquired = w.lease.lock(&name).wait(WAIT).acquire().await;
        let t1 = Instant::now();
        let guard = match acquired {
            Ok(guard) => guard,
            Err(e) => {
                win.failed(rec, t1, &e).await;
                continue;
            }
        };
        let handoff = keys.take_handoff(k, t1);
        if win.measures(t0, t1) {
            rec.latency(t1 - t0);
            if let Some(h) = handoff {
                rec.handoff(h);
            }
        }
        keys.stamp_release(k);
        if let Err((reason, transient)) = released(guard.release().await) {
            keys.clear(k);
            win.failure(rec, Instant::now(), reason, transient).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handoff_is_taken_once() {
        let keys = Keys::new(2, Instant::now());
        assert_eq!(keys.take_handoff(0, Instant::now()), None);
        keys.stamp_release(0);
        let later = Instant::now() + Duration::from_millis(2);
        let h = keys.take_handoff(0, later).unwrap();
        assert!(
            h >= Duration::from_millis(2) && h < Duration::from_secs(1),
            "{h:?}"
        );
        assert_eq!(keys.take_handoff(0, later), None);
        assert_eq!(keys.take_handoff(1, later), None);
        keys.stamp_release(1);
        keys.clear(1);
        assert_eq!(keys.take_handoff(1, later), None);
        let name = keys.0.keys[1].name.as_str();
        assert!(
            name.starts_with(leasehold_core::BENCH_PREFIX) && name.ends_with("/c/1"),
            "{name}"
        );
    }
}
