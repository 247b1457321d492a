//! Holds the server ended while their lease lived: a force release of one
//! lock, or a lock's max hold running out. The lease is still renewed, so
//! nothing on the renewal path fails; the holder learns of the loss from
//! its next keep-alive reply, which lists what the lease still holds and,
//! from here, how the missing ones ended ("force-released by alice@host:
//! INC-123"). Without this a force-released holder renewed its lease for
//! good while another client acquired the lock (seed 001, "the owner must
//! observe the loss and abort within one refresh interval").
//!
//! Filled by the apply hub on every node (each applies the same log), so any
//! leader can answer; kept in memory only, per lease, bounded by
//! [`ENDED_HOLDS_REMEMBERED`], and forgotten when the lease ends. After a
//! restart the reply still lists what is held, so a loss is still seen; only
//! the "how" falls back to a plainer sentence.

use crate::events::freed_kind_and_detail;
use crate::sinks::Freed;
use leasehold_core::limits::ENDED_HOLDS_REMEMBERED;
use leasehold_core::FreeCause;
use leasehold_core::{LeaseId, LockName, Token};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// One ended hold, as keep-alive replies report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndedHold {
    /// The lock.
    pub name: LockName,
    /// The token the holder had.
    pub token: Token,
    /// The event kind: `force-released`, or `expired` for a max hold.
    pub kind: &'static str,
    /// How, in words.
    pub how: String,
}

/// Recent server-side ends of holds, by the lease that held them.
#[derive(Debug, Default)]
pub struct EndedHolds {
    by_lease: Mutex<HashMap<LeaseId, VecDeque<EndedHold>>>,
    /// How many leases have entries: every keep-alive asks, and almost
    /// always nobody has any, so that answer must not take the lock.
    leases: AtomicUsize,
}

impl EndedHolds {
    /// A lock was freed: remembered if the server ended the hold while its
    /// lease lives on (a force release of that one lock, or its max hold),
    /// so the holder hears of it from its next keep-alive reply.
    pub fn lock_freed(&self, freed: &Freed) {
        let lease_lives = matches!(
            freed.cause,
            FreeCause::Released | FreeCause::MaxHoldExceeded
        );
        let server_ended = freed.forced.is_some() || freed.cause == FreeCause::MaxHoldExceeded;
        if !(lease_lives && server_ended) {
            return;
        }
        let (kind, detail) = freed_kind_and_detail(freed);
        let how = match freed.forced {
            Some(_) => format!("force-released {detail}"),
            None => "the server released it when its max hold ran out".to_owned(),
        };
        let ended = EndedHold {
            name: freed.name.clone(),
            token: freed.token,
            kind: kind.as_str(),
            how,
        };
        self.record(freed.lease, ended);
    }

    /// Remembers that the server ended `ended` while `lease` lived.
    pub fn record(&self, lease: LeaseId, ended: EndedHold) {
        let mut by_lease = self.by_lease.lock().expect("ended holds poisoned");
        let recent = by_lease.entry(lease).or_default();
        if recent.is_empty() {
            self.leases.fetch_add(1, Ordering::Release);
        }
        if recent.len() == ENDED_HOLDS_REMEMBERED {
            recent.pop_front();
        }
        recent.push_back(ended);
    }

    /// The remembered ends of `lease`'s holds, oldest first.
    pub fn of(&self, lease: LeaseId) -> Vec<EndedHold> {
        if self.leases.load(Ordering::Acquire) == 0 {
            return Vec::new();
        }
        let by_lease = self.by_lease.lock().expect("ended holds poisoned");
        by_lease
            .get(&lease)
            .map_or_else(Vec::new, |recent| recent.iter().cloned().collect())
    }

    /// `lease` ended: its holder has nothing left to hear about.
    pub fn lease_ended(&self, lease: LeaseId) {
        if self.leases.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut by_lease = self.by_lease.lock().expect("ended holds poisoned");
        if by_lease.remove(&lease).is_some() {
            self.leases.fetch_sub(1, Ordering::Release);
        }
    }

    /// Forgets everything (the state was replaced by a snapshot).
    pub fn clear(&self) {
        let mut by_lease = self.by_lease.lock().expect("ended holds poisoned");
        by_lease.clear();
        self.leases.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(token: u64) -> EndedHold {
        EndedHold {
            name: LockName::parse("a").unwrap(),
            token: Token(token),
            kind: "force-released",
            how: format!("force-released {token}"),
        }
    }

    #[test]
    fn bounded_per_lease_oldest_forgotten_and_gone_with_the_lease() {
        let holds = EndedHolds::default();
        let total = ENDED_HOLDS_REMEMBERED as u64 + 3;
        for token in 1..=total {
            holds.record(LeaseId(7), ended(token));
        }
        holds.record(LeaseId(8), ended(100));
        let kept: Vec<u64> = holds.of(LeaseId(7)).iter().map(|e| e.token.0).collect();
        assert_eq!(kept, (4..=total).collect::<Vec<_>>());
        holds.lease_ended(LeaseId(7));
        assert!(holds.of(LeaseId(7)).is_empty());
        assert_eq!(holds.of(LeaseId(8)).len(), 1);
        holds.clear();
        assert!(holds.of(LeaseId(8)).is_empty());
    }
}
