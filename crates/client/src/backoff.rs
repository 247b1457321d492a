//! Retry delays: exponential backoff with jitter, from one seedable source
//! of randomness (STYLE.md rule 3), so a test or simulation that fixes the
//! seed sees the same delays every run.
//!
//! Jitter matters because the failures that make clients retry (a leader
//! change, a server restart) hit every client at once; without it they all
//! come back in the same millisecond, a retry storm. Each delay is drawn
//! uniformly from [base/2, base] ("equal jitter"): spread out, yet never
//! shorter than half the intended pause.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How retry delays grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackoffPolicy {
    /// The first delay (before jitter).
    pub initial: Duration,
    /// No delay exceeds this.
    pub max: Duration,
}

impl Default for BackoffPolicy {
    fn default() -> Self {
        BackoffPolicy {
            initial: Duration::from_millis(50),
            // Short: a leader election takes 1–3 s, and a client that backed
            // off to several seconds would come back long after it ended.
            max: Duration::from_millis(500),
        }
    }
}

/// The client's one source of randomness, shared by every backoff it makes.
#[derive(Clone, Debug)]
pub struct Jitter {
    rng: Arc<Mutex<StdRng>>,
}

impl Jitter {
    /// A source seeded with `seed` (same seed, same delays).
    pub fn seeded(seed: u64) -> Jitter {
        Jitter {
            rng: Arc::new(Mutex::new(StdRng::seed_from_u64(seed))),
        }
    }

    /// A uniformly drawn duration in `[low, high]`.
    fn between(&self, low: Duration, high: Duration) -> Duration {
        if high <= low {
            return low;
        }
        let nanos = self
            .rng
            .lock()
            .expect("jitter lock")
            .random_range(low.as_nanos() as u64..=high.as_nanos() as u64);
        Duration::from_nanos(nanos)
    }
}

/// One retry sequence: call [`Backoff::next_delay`] before each retry.
#[derive(Debug)]
pub struct Backoff {
    policy: BackoffPolicy,
    jitter: Jitter,
    /// The next delay before jitter.
    base: Duration,
}

impl Backoff {
    /// A fresh sequence under `policy`, drawing from `jitter`.
    pub fn new(policy: BackoffPolicy, jitter: Jitter) -> Backoff {
        Backoff {
            base: policy.initial,
            policy,
            jitter,
        }
    }

    /// The delay before the next retry; each call doubles the base up to
    /// the policy's max.
    pub fn next_delay(&mut self) -> Duration {
        let base = self.base.min(self.policy.max);
        self.base = (base * 2).min(self.policy.max);
        self.jitter.between(base / 2, base)
    }

    /// Back to the first delay (after a success).
    pub fn reset(&mut self) {
        self.base = self.policy.initial;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delays(seed: u64, n: usize) -> Vec<Duration> {
        let mut backoff = Backoff::new(BackoffPolicy::default(), Jitter::seeded(seed));
        (0..n).map(|_| backoff.next_delay()).collect()
    }

    #[test]
    fn same_seed_same_delays_other_seed_other_delays() {
        assert_eq!(delays(7, 10), delays(7, 10));
        assert_ne!(delays(7, 10), delays(8, 10));
    }

    #[test]
    fn delays_grow_within_half_to_full_base_and_stop_at_max() {
        let policy = BackoffPolicy::default();
        let mut base = policy.initial;
        for delay in delays(1, 12) {
            assert!(
                delay >= base / 2 && delay <= base,
                "{delay:?} vs base {base:?}"
            );
            base = (base * 2).min(policy.max);
        }
        assert!(delays(3, 30).iter().all(|d| *d <= policy.max));
    }

    #[test]
    fn reset_starts_over() {
        let mut backoff = Backoff::new(BackoffPolicy::default(), Jitter::seeded(5));
        for _ in 0..8 {
            backoff.next_delay();
        }
        backoff.reset();
        assert!(backoff.next_delay() <= BackoffPolicy::default().initial);
    }
}
