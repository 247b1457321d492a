//! Since when each current holder holds its lock, on this node's clock,
//! dated back to the grant's proposal time (the wall clock, display and
//! statistics only), so a restart, a replay or a snapshot does not restart
//! anyone's `held for`: the hold-time histogram, the hold statistics by
//! prefix and the `held for` of `get` and `ls` read it.
//!
//! Nothing is stored per holder. A grant applied at local instant `now`
//! with proposal time `acquired` is dated `acquired + offset`, where
//! `offset = now - max(wall now, acquired)`: the gap between this node's
//! monotonic and wall clocks (capped so no grant is dated after its apply,
//! when its proposer's clock runs ahead). That gap only moves when the wall
//! clock is stepped or slewed, so it is kept once per *epoch*: a run of
//! tokens over which it stayed within [`EPOCH_TOLERANCE_MS`]. Tokens grow
//! in apply order, so a holder's epoch is the last one starting at or
//! before its token. A million holders cost nothing here, where a map from
//! token to instant cost about 34 MB (heaptrack, 200,000 held locks); the
//! price is an error of at most the tolerance in `held for`.

use crate::clock::{wall_unix_ms, Clock};
use leasehold_core::Token;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// How far the monotonic-to-wall gap may move before a grant starts a new
/// epoch, ms: the most a `held for` can be off by.
const EPOCH_TOLERANCE_MS: i64 = 100;

/// Epochs kept. Each wall-clock step starts one; past this many the oldest
/// is dropped and the holders it dated use the next one (off by that
/// step). 16 bytes each.
const EPOCHS_MAX: usize = 1024;

/// The grant instant of each current holder, as epochs of one offset each.
pub struct Holders {
    /// (first token, offset in ms) per epoch, oldest first. A grant's
    /// local instant is its proposal's wall time plus its epoch's offset,
    /// as ms after `base`.
    epochs: Mutex<VecDeque<(Token, i64)>>,
    /// The instant offsets count from.
    base: Instant,
    /// The clock grants are dated on.
    clock: Arc<dyn Clock>,
}

impl Holders {
    /// No holders, dated on `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Holders {
        Holders {
            epochs: Mutex::new(VecDeque::new()),
            base: clock.now(),
            clock,
        }
    }

    /// The holder with `token` got its lock at wall time `acquired_unix_ms`
    /// (the grant is being applied now).
    pub fn granted(&self, token: Token, acquired_unix_ms: u64) {
        self.granted_on_wall(token, acquired_unix_ms, wall_unix_ms());
    }

    /// [`Holders::granted`] with the wall clock reading `wall_ms`.
    fn granted_on_wall(&self, token: Token, acquired_unix_ms: u64, wall_ms: u64) {
        let offset = self.offset_now(acquired_unix_ms, wall_ms);
        let mut epochs = self.epochs.lock().expect("holders poisoned");
        let same = epochs
            .back()
            .is_some_and(|&(_, last)| (offset - last).abs() <= EPOCH_TOLERANCE_MS);
        if !same {
            if epochs.len() == EPOCHS_MAX {
                epochs.pop_front();
            }
            epochs.push_back((token, offset));
        }
    }

    /// The offset a grant proposed at `acquired_unix_ms` and applied now,
    /// with the wall clock reading `wall_ms`, gets: local now, as ms after
    /// `base`, less the later of the wall clock and the proposal time.
    fn offset_now(&self, acquired_unix_ms: u64, wall_ms: u64) -> i64 {
        let dated_at = wall_ms.max(acquired_unix_ms);
        self.now_ms() - i64::try_from(dated_at).unwrap_or(i64::MAX)
    }

    /// Local now, as ms after `base`.
    fn now_ms(&self) -> i64 {
        let now_ms = self.clock.now().duration_since(self.base).as_millis();
        i64::try_from(now_ms).unwrap_or(i64::MAX)
    }

    /// How long the holder with `token`, granted at wall time
    /// `acquired_unix_ms`, has held its lock (`None` before this node
    /// dated any grant).
    pub fn held_for(&self, token: Token, acquired_unix_ms: u64) -> Option<Duration> {
        let offset = {
            let epochs = self.epochs.lock().expect("holders poisoned");
            let later = epochs.partition_point(|&(first, _)| first <= token);
            epochs.get(later.saturating_sub(1))?.1
        };
        let acquired = i64::try_from(acquired_unix_ms).unwrap_or(i64::MAX);
        let held_ms = self
            .now_ms()
            .saturating_sub(acquired.saturating_add(offset));
        Some(Duration::from_millis(held_ms.max(0).unsigned_abs()))
    }

    /// The state was replaced (snapshot, start-up): its holders count from
    /// their grants, on the offset of now.
    pub fn reset(&self) {
        self.reset_on_wall(wall_unix_ms());
    }

    /// [`Holders::reset`] with the wall clock reading `wall_ms`.
    fn reset_on_wall(&self, wall_ms: u64) {
        let offset = self.offset_now(0, wall_ms);
        *self.epochs.lock().expect("holders poisoned") = VecDeque::from([(Token(0), offset)]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn a_hold_lasts_from_its_grant() {
        let clock = Arc::new(ManualClock::starting_now());
        let holders = Holders::new(clock.clone());
        let acquired = wall_unix_ms();
        assert_eq!(holders.held_for(Token(3), acquired), None, "no grant dated");
        holders.granted(Token(3), acquired);
        clock.advance(Duration::from_millis(250));
        let held = holders.held_for(Token(3), acquired).expect("dated");
        assert!(held >= Duration::from_millis(250), "{held:?}");
        assert!(held < Duration::from_millis(250 + 100), "{held:?}");
    }

    #[test]
    fn a_grant_older_than_the_sink_counts_from_its_grant() {
        let clock = Arc::new(ManualClock::starting_now());
        let holders = Holders::new(clock.clone());
        // One wall reading: a second one could fall a millisecond later.
        let wall = wall_unix_ms();
        holders.reset_on_wall(wall);
        let acquired = wall - 60_000;
        let held = holders.held_for(Token(4), acquired).expect("held");
        assert!(held >= Duration::from_secs(60), "{held:?}");
        assert!(held < Duration::from_secs(61), "{held:?}");
        clock.advance(Duration::from_millis(500));
        let later = holders.held_for(Token(4), acquired).expect("held");
        assert!(later >= held + Duration::from_millis(500), "{later:?}");
    }

    #[test]
    fn a_grant_from_a_clock_ahead_is_held_from_its_apply() {
        let clock = Arc::new(ManualClock::starting_now());
        let holders = Holders::new(clock.clone());
        let ahead = wall_unix_ms() + 3_600_000;
        holders.granted(Token(5), ahead);
        assert!(holders.held_for(Token(5), ahead).expect("dated") < Duration::from_millis(100));
        clock.advance(Duration::from_secs(2));
        let held = holders.held_for(Token(5), ahead).expect("dated");
        assert!(held >= Duration::from_secs(2), "{held:?}");
        assert!(held < Duration::from_millis(2_100), "{held:?}");
    }

    #[test]
    fn a_wall_clock_step_starts_an_epoch_and_keeps_earlier_holds() {
        let clock = Arc::new(ManualClock::starting_now());
        let holders = Holders::new(clock.clone());
        let before = wall_unix_ms();
        holders.granted(Token(6), before);
        holders.granted(Token(7), wall_unix_ms());
        assert_eq!(
            holders.epochs.lock().unwrap().len(),
            1,
            "one gap, one epoch"
        );
        // The wall clock steps back an hour (the monotonic one does not):
        // a grant proposed after the step carries the stepped time.
        let stepped = wall_unix_ms() - 3_600_000;
        holders.granted_on_wall(Token(8), stepped, stepped);
        assert_eq!(
            holders.epochs.lock().unwrap().len(),
            2,
            "the step is an epoch"
        );
        clock.advance(Duration::from_secs(1));
        let early = holders.held_for(Token(6), before).expect("dated");
        let late = holders.held_for(Token(8), stepped).expect("dated");
        for held in [early, late] {
            assert!(held >= Duration::from_secs(1), "{held:?}");
            assert!(held < Duration::from_millis(1_100), "{held:?}");
        }
    }

    #[test]
    fn epochs_are_bounded() {
        let clock = Arc::new(ManualClock::starting_now());
        let holders = Holders::new(clock.clone());
        let now = wall_unix_ms();
        for token in 1..=(EPOCHS_MAX as u64 + 10) {
            // Each grant proposed a second further ahead: a new gap each.
            holders.granted(Token(token), now + token * 1_000);
        }
        assert_eq!(holders.epochs.lock().unwrap().len(), EPOCHS_MAX);
    }
}
