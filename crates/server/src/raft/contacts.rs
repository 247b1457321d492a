//! When this node last heard from each other member. openraft 0.9 publishes
//! no per-peer heartbeat time, and only a leader ever hears from every
//! member, so the Raft traffic itself is the record: the sending side
//! ([`super::network`]) notes every reply a peer sends back, the receiving
//! side ([`super::transport`]) every message a peer sends (AppendEntries and
//! InstallSnapshot name their leader, Vote its candidate). Status, metrics
//! and the no-quorum sentence ([`super::quorum`]) read it.
//!
//! A reply is dated when its request was sent, as openraft dates the
//! acknowledgements behind a leader's quorum: the peer was alive at some
//! point after that, no sooner is certain. So when openraft says no quorum
//! acknowledged the leader within its lease, these times agree that no
//! majority was heard from within it either.
//!
//! Times come from a [`Clock`], so tests drive them.

use crate::clock::Clock;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

/// Members remembered at most. The receiving side records whatever id a
/// message names, so a stray sender cannot grow the map without bound:
/// past this, the member heard from longest ago is forgotten.
pub const MEMBERS_TRACKED_MAX: usize = 64;

/// Last time heard from, per member id.
pub struct Contacts {
    /// The clock that stamps each contact.
    clock: Arc<dyn Clock>,
    /// Member id → when it last answered us or sent us a Raft message.
    heard: Mutex<BTreeMap<u64, Instant>>,
}

impl Contacts {
    /// No contact yet, stamped by `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Contacts {
        Contacts {
            clock,
            heard: Mutex::new(BTreeMap::new()),
        }
    }

    /// Now, on the clock that stamps contacts.
    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// Records that `member` was heard from now (it sent us a message).
    pub fn heard(&self, member: u64) {
        self.heard_at(member, self.clock.now());
    }

    /// Records that `member` answered a request sent at `asked_at` (a
    /// slow answer to an older request does not move the contact back).
    pub fn answered(&self, member: u64, asked_at: Instant) {
        self.heard_at(member, asked_at);
    }

    fn heard_at(&self, member: u64, at: Instant) {
        let mut heard = self.heard.lock().expect("contacts poisoned");
        let latest = heard.get(&member).map_or(at, |last| at.max(*last));
        heard.insert(member, latest);
        if heard.len() > MEMBERS_TRACKED_MAX {
            let oldest = heard.iter().min_by_key(|(_, at)| **at).map(|(id, _)| *id);
            if let Some(oldest) = oldest {
                heard.remove(&oldest);
            }
        }
    }

    /// Every member heard from, with when it was last heard.
    pub fn last_heard(&self) -> BTreeMap<u64, Instant> {
        self.heard.lock().expect("contacts poisoned").clone()
    }
}

impl std::fmt::Debug for Contacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Contacts")
            .field("heard", &self.last_heard())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use std::time::Duration;

    #[test]
    fn remembers_the_latest_contact_per_member() {
        let clock = Arc::new(ManualClock::starting_now());
        let contacts = Contacts::new(clock.clone());
        let start = contacts.now();
        contacts.heard(2);
        clock.advance(Duration::from_millis(300));
        contacts.heard(3);
        clock.advance(Duration::from_millis(200));
        contacts.heard(2);
        let heard = contacts.last_heard();
        assert_eq!(heard[&2] - start, Duration::from_millis(500));
        assert_eq!(heard[&3] - start, Duration::from_millis(300));
        assert_eq!(heard.len(), 2);
    }

    #[test]
    fn an_answer_is_dated_by_its_request_and_never_moves_back() {
        let clock = Arc::new(ManualClock::starting_now());
        let contacts = Contacts::new(clock.clone());
        let asked = contacts.now();
        clock.advance(Duration::from_millis(400));
        contacts.answered(2, asked);
        assert_eq!(contacts.last_heard()[&2], asked, "dated by the request");
        let asked_later = contacts.now();
        clock.advance(Duration::from_millis(100));
        contacts.answered(2, asked_later);
        // A slow answer to the first request arrives last.
        contacts.answered(2, asked);
        assert_eq!(contacts.last_heard()[&2], asked_later);
    }

    #[test]
    fn forgets_the_stalest_member_past_the_bound() {
        let clock = Arc::new(ManualClock::starting_now());
        let contacts = Contacts::new(clock.clone());
        for id in 0..=MEMBERS_TRACKED_MAX as u64 {
            contacts.heard(id);
            clock.advance(Duration::from_millis(1));
        }
        let heard = contacts.last_heard();
        assert_eq!(heard.len(), MEMBERS_TRACKED_MAX);
        assert!(!heard.contains_key(&0), "the stalest member stays");
        assert!(heard.contains_key(&(MEMBERS_TRACKED_MAX as u64)));
    }
}
