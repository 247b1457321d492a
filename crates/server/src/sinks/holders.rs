//! Since when each current holder holds its lock, on this node's clock,
//! dated back to the grant's proposal time (the wall clock, display and
//! statistics only), so a restart, a replay or a snapshot does not restart
//! anyone's `held for`:
//! the hold-time histogram, the hold statistics by prefix and the `held
//! for` of `get` and `ls` read it. Keyed by token (unique per grant) and
//! bounded by the number of held locks: an entry leaves when its lock is
//! freed.
//!
//! An entry is one number, milliseconds from the sink's own base instant,
//! in an ordered map (tokens arrive in order): a million holders cost
//! about 30 MB, where instants in a hash map cost 52.

use crate::clock::{wall_unix_ms, Clock};
use leasehold_core::{State, Token};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The grant instant of each current holder.
pub struct Holders {
    /// Token → grant instant, as ms after `base` (negative: before it).
    since_ms: Mutex<BTreeMap<Token, i64>>,
    /// The instant offsets count from.
    base: Instant,
    /// The clock grants are dated on.
    clock: Arc<dyn Clock>,
}

impl Holders {
    /// No holders, dated on `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Holders {
        Holders {
            since_ms: Mutex::new(BTreeMap::new()),
            base: clock.now(),
            clock,
        }
    }

    /// The holder with `token` got its lock at wall time `acquired_unix_ms`.
    pub fn granted(&self, token: Token, acquired_unix_ms: u64) {
        let since = self.since_ms(acquired_unix_ms);
        self.since_ms
            .lock()
            .expect("holders poisoned")
            .insert(token, since);
    }

    /// The local instant of wall time `acquired_unix_ms`, as ms after
    /// `base`: now, less the time since then (never later than now: a
    /// grant's proposer may be a node whose clock runs ahead).
    fn since_ms(&self, acquired_unix_ms: u64) -> i64 {
        let age_ms = wall_unix_ms().saturating_sub(acquired_unix_ms);
        let now_ms = self.clock.now().duration_since(self.base).as_millis();
        let now_ms = i64::try_from(now_ms).unwrap_or(i64::MAX);
        now_ms.saturating_sub(i64::try_from(age_ms).unwrap_or(i64::MAX))
    }

    /// How long since the instant `since_ms` after `base`.
    fn age(&self, since_ms: i64) -> Duration {
        let now_ms = self.clock.now().duration_since(self.base).as_millis();
        let now_ms = i64::try_from(now_ms).unwrap_or(i64::MAX);
        Duration::from_millis(now_ms.saturating_sub(since_ms).max(0).unsigned_abs())
    }

    /// The holder with `token` stopped holding: how long it held (`None`
    /// if this node never saw its grant).
    pub fn freed(&self, token: Token) -> Option<Duration> {
        let since = self
            .since_ms
            .lock()
            .expect("holders poisoned")
            .remove(&token)?;
        Some(self.age(since))
    }

    /// How long the holder with `token` has held its lock.
    pub fn held_for(&self, token: Token) -> Option<Duration> {
        let since = *self
            .since_ms
            .lock()
            .expect("holders poisoned")
            .get(&token)?;
        Some(self.age(since))
    }

    /// The state was replaced (snapshot, start-up): its holders count from
    /// their grants.
    pub fn reset(&self, state: &State) {
        let held: BTreeMap<Token, i64> = state
            .locks_with_prefix("")
            .filter_map(|lock| lock.holder.as_ref())
            .map(|holder| (holder.token, self.since_ms(holder.acquired_unix_ms)))
            .collect();
        *self.since_ms.lock().expect("holders poisoned") = held;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn a_hold_lasts_from_its_grant_to_its_free() {
        let clock = Arc::new(ManualClock::starting_now());
        let holders = Holders::new(clock.clone());
        holders.granted(Token(3), wall_unix_ms());
        clock.advance(Duration::from_millis(250));
        assert_eq!(holders.held_for(Token(3)), Some(Duration::from_millis(250)));
        assert_eq!(holders.freed(Token(3)), Some(Duration::from_millis(250)));
        assert_eq!(holders.freed(Token(3)), None, "forgotten once freed");
    }

    #[test]
    fn a_grant_older_than_the_sink_counts_from_its_grant() {
        let clock = Arc::new(ManualClock::starting_now());
        let holders = Holders::new(clock.clone());
        holders.granted(Token(4), wall_unix_ms() - 60_000);
        let held = holders.held_for(Token(4)).expect("held");
        assert!(held >= Duration::from_secs(60), "{held:?}");
        assert!(held < Duration::from_secs(61), "{held:?}");
        clock.advance(Duration::from_millis(500));
        let later = holders.freed(Token(4)).expect("held");
        assert!(later >= held + Duration::from_millis(500), "{later:?}");
    }
}
