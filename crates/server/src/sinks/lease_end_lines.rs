//! How many "lock freed" log lines one lease's end writes. A lease that
//! ends (expires, or is revoked) frees up to `LOCKS_PER_LEASE_MAX` locks in
//! one apply, and every line is written under the state's write lock: a
//! line per lock made a mass expiry of a million locks stall every client
//! for seconds. So the first [`LOCK_LINES_PER_LEASE_END`] frees of a
//! lease's end get their own line and the lease's line counts the rest.
//! The events stream and the metrics still see every free.

use leasehold_core::LeaseId;
use std::sync::Mutex;

/// "lock freed" lines one lease's end writes, at most.
pub const LOCK_LINES_PER_LEASE_END: u64 = 8;

/// The tally of the lease whose end is being applied (its frees come
/// together, then its own effect).
#[derive(Debug, Default)]
pub struct LeaseEndLines {
    ending: Mutex<Option<(LeaseId, u64)>>,
}

/// What a lease's end freed, for its own log line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EndTally {
    /// Locks freed.
    pub freed: u64,
    /// Of those, freed without a line of their own.
    pub unlogged: u64,
}

impl LeaseEndLines {
    /// A lock of `lease` was freed by the lease's end: whether its line is
    /// written.
    pub fn freed(&self, lease: LeaseId) -> bool {
        let mut ending = self.ending.lock().expect("lease-end tally poisoned");
        let count = match &mut *ending {
            Some((ending, count)) if *ending == lease => {
                *count += 1;
                *count
            }
            other => {
                *other = Some((lease, 1));
                1
            }
        };
        count <= LOCK_LINES_PER_LEASE_END
    }

    /// `lease` ended: what it freed (and the tally starts afresh).
    pub fn ended(&self, lease: LeaseId) -> EndTally {
        let mut ending = self.ending.lock().expect("lease-end tally poisoned");
        match ending.take() {
            Some((ended, freed)) if ended == lease => EndTally {
                freed,
                unlogged: freed.saturating_sub(LOCK_LINES_PER_LEASE_END),
            },
            _ => EndTally::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_frees_of_an_end_get_lines_and_the_rest_are_counted() {
        let lines = LeaseEndLines::default();
        let big = LeaseId(7);
        let logged = (0..20).filter(|_| lines.freed(big)).count() as u64;
        assert_eq!(logged, LOCK_LINES_PER_LEASE_END);
        assert_eq!(
            lines.ended(big),
            EndTally {
                freed: 20,
                unlogged: 20 - LOCK_LINES_PER_LEASE_END
            }
        );
        assert!(lines.freed(LeaseId(8)), "the next lease starts afresh");
        assert_eq!(
            lines.ended(LeaseId(8)),
            EndTally {
                freed: 1,
                unlogged: 0
            }
        );
        assert_eq!(
            lines.ended(LeaseId(9)),
            EndTally::default(),
            "freed nothing"
        );
    }
}
