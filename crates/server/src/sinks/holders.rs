//! Since when each current holder holds its lock, on this node's clock,
//! dated back to the grant's proposal time (the wall clock, display and
//! statistics only), so a restart, a replay or a snapshot does not restart
//! anyone's `held for`:
//! the hold-time histogram, the hold statistics by prefix and the `held
//! for` of `get` and `ls` read it. Keyed by token (unique per grant) and
//! bounded by the number of held locks: an entry leaves when its lock is
//! freed.

use crate::clock::{wall_unix_ms, Clock};
use leasehold_core::{State, Token};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The grant instant of each current holder.
pub struct Holders {
    since: Mutex<HashMap<Token, Instant>>,
    /// The clock grants are dated on.
    clock: Arc<dyn Clock>,
}

impl Holders {
    /// No holders, dated on `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Holders {
        Holders {
            since: Mutex::new(HashMap::new()),
            clock,
        }
    }

    /// The holder with `token` got its lock at wall time `acquired_unix_ms`.
    pub fn granted(&self, token: Token, acquired_unix_ms: u64) {
        let since = self.since(acquired_unix_ms);
        self.since
            .lock()
            .expect("holders poisoned")
            .insert(token, since);
    }

    /// The local instant of wall time `acquired_unix_ms`: now, less the
    /// time since then (never later than now: a grant's proposer may be
    /// a node whose clock runs ahead).
    fn since(&self, acquired_unix_ms: u64) -> Instant {
        let now = self.clock.now();
        let age = Duration::from_millis(wall_unix_ms().saturating_sub(acquired_unix_ms));
        now.checked_sub(age).unwrap_or(now)
    }

    /// The holder with `token` stopped holding: how long it held (`None`
    /// if this node never saw its grant).
    pub fn freed(&self, token: Token) -> Option<Duration> {
        let since = self
            .since
            .lock()
            .expect("holders poisoned")
            .remove(&token)?;
        Some(self.clock.now().saturating_duration_since(since))
    }

    /// How long the holder with `token` has held its lock.
    pub fn held_for(&self, token: Token) -> Option<Duration> {
        let since = *self.since.lock().expect("holders poisoned").get(&token)?;
        Some(self.clock.now().saturating_duration_since(since))
    }

    /// The state was replaced (snapshot, start-up): its holders count from
    /// their grants.
    pub fn reset(&self, state: &State) {
        let held: HashMap<Token, Instant> = state
            .locks_with_prefix("")
            .filter_map(|lock| lock.holder.as_ref())
            .map(|holder| (holder.token, self.since(holder.acquired_unix_ms)))
            .collect();
        *self.since.lock().expect("holders poisoned") = held;
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
}
