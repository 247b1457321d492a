//! Lease validity, as pure arithmetic on boot-clock instants (docs/DESIGN.md
//! guarantee 6): a lease is ours until
//! `send time of the last acknowledged keep-alive + ttl − margin`.
//!
//! Why the *send* time: the server renews from the moment it applies the
//! keep-alive, which is after we sent it; counting from the send time can
//! only make our deadline earlier than the server's, never later, however
//! long the reply took. Why a margin: it absorbs the difference in clock
//! rates and the time guarded work needs to notice cancellation.
//!
//! Lapsing is sticky: once `now` reaches the deadline, ownership is gone
//! even if an acknowledgement (of a keep-alive sent before the lapse)
//! arrives a moment later.

use crate::clock::BootInstant;
use std::time::Duration;

/// The deadline passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lapsed {
    /// Time from the send time of the last acknowledged keep-alive (or of
    /// the grant) to now.
    pub since_last_ack: Duration,
}

/// When a lease stops being ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Validity {
    /// ttl − margin.
    valid_for: Duration,
    /// Send time of the last acknowledged keep-alive (the grant at first).
    last_ack_sent: BootInstant,
}

impl Validity {
    /// A lease granted by a request sent at `grant_sent`. `margin` must be
    /// less than `ttl` (checked by the lease's timing validation).
    pub fn new(grant_sent: BootInstant, ttl: Duration, margin: Duration) -> Validity {
        assert!(
            margin < ttl,
            "margin {margin:?} must be less than ttl {ttl:?}"
        );
        Validity {
            valid_for: ttl - margin,
            last_ack_sent: grant_sent,
        }
    }

    /// The local deadline.
    pub fn deadline(&self) -> BootInstant {
        self.last_ack_sent + self.valid_for
    }

    /// Time left at `now`, or how it lapsed.
    pub fn check(&self, now: BootInstant) -> Result<Duration, Lapsed> {
        let deadline = self.deadline();
        if now >= deadline {
            return Err(Lapsed {
                since_last_ack: now.saturating_duration_since(self.last_ack_sent),
            });
        }
        Ok(deadline.saturating_duration_since(now))
    }

    /// A keep-alive sent at `sent` was acknowledged at `now`. Returns the
    /// time that was left before this acknowledgement (the margin the
    /// renewal arrived with), or `Lapsed` if it arrived too late.
    pub fn acknowledged(
        &mut self,
        sent: BootInstant,
        now: BootInstant,
    ) -> Result<Duration, Lapsed> {
        let left = self.check(now)?;
        self.last_ack_sent = self.last_ack_sent.max(sent);
        Ok(left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};

    const TTL: Duration = Duration::from_secs(10);
    const MARGIN: Duration = Duration::from_secs(1);

    fn at(secs: u64) -> BootInstant {
        BootInstant::from_since_boot(Duration::from_secs(secs))
    }

    #[test]
    fn valid_until_send_time_plus_ttl_minus_margin() {
        let v = Validity::new(at(100), TTL, MARGIN);
        assert_eq!(v.deadline(), at(109));
        assert_eq!(v.check(at(108)), Ok(Duration::from_secs(1)));
        assert_eq!(
            v.check(at(109)),
            Err(Lapsed {
                since_last_ack: Duration::from_secs(9)
            })
        );
    }

    #[test]
    fn an_acknowledgement_extends_from_its_send_time_not_its_arrival() {
        let mut v = Validity::new(at(100), TTL, MARGIN);
        // Sent at 103, the reply took 5 s.
        assert_eq!(v.acknowledged(at(103), at(108)), Ok(Duration::from_secs(1)));
        assert_eq!(v.deadline(), at(112));
        // An older keep-alive acknowledged late never moves the deadline back.
        v.acknowledged(at(101), at(109)).unwrap();
        assert_eq!(v.deadline(), at(112));
    }

    #[test]
    fn an_acknowledgement_after_the_lapse_does_not_revive() {
        let mut v = Validity::new(at(100), TTL, MARGIN);
        // Sent just before a long pause, acknowledged after it.
        assert!(v.acknowledged(at(108), at(120)).is_err());
        assert!(v.check(at(120)).is_err());
    }

    #[test]
    fn a_wall_clock_jump_changes_nothing_boot_time_past_the_deadline_is_lost() {
        let clock = ManualClock::new(Duration::from_secs(100), 1_700_000_000_000);
        let v = Validity::new(clock.now(), TTL, MARGIN);
        clock.jump_wall_ms(3_600_000);
        assert_eq!(v.check(clock.now()), Ok(Duration::from_secs(9)));
        clock.jump_wall_ms(-7_200_000);
        assert_eq!(v.check(clock.now()), Ok(Duration::from_secs(9)));
        // A suspend: boot time moves on, wall time too; the lease is gone.
        clock.advance(Duration::from_secs(9));
        assert!(v.check(clock.now()).is_err());
    }
}
