//! Bounded memory of request outcomes, for idempotent retries.
//!
//! An outcome is kept with its error boxed: a refusal's error is the large
//! variant (names, hints), and most remembered outcomes are successes, so
//! an entry takes 56 bytes instead of 96. A lease holding one lock keeps
//! one entry, so with a million such leases that is 40 MB. Boxing changes
//! nothing in the encoding (serde writes a box as its contents), so stored
//! snapshots read unchanged.

use crate::{LockError, Outcome, Reply, RequestId};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// An outcome as kept: the error out of line.
type Kept = Result<Reply, Box<LockError>>;

/// The last [`crate::limits::DEDUP_PER_LEASE_MAX`] (request id, outcome) pairs
/// of one lease; dropped with the lease.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dedup {
    entries: VecDeque<(RequestId, Kept)>,
}

impl Dedup {
    /// The first outcome recorded for `id`, if still remembered.
    pub fn get(&self, id: &RequestId) -> Option<Outcome> {
        let (_, kept) = self.entries.iter().find(|(k, _)| k == id)?;
        Some(kept.clone().map_err(|error| *error))
    }

    /// Remembers `outcome` for `id`, forgetting the oldest entry beyond the limit.
    pub fn remember(&mut self, id: RequestId, outcome: Outcome) {
        if self.entries.len() == crate::limits::DEDUP_PER_LEASE_MAX {
            self.entries.pop_front();
        } else if self.entries.len() == self.entries.capacity() {
            // Double from one slot (1, 2, 4, ... 64), not from four: most
            // leases make a request or two.
            self.entries.reserve_exact(self.entries.len().max(1));
        }
        self.entries.push_back((id, outcome.map_err(Box::new)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LeaseId, Token};

    #[test]
    fn an_entry_is_small_and_encoded_as_the_outcome_it_keeps() {
        assert_eq!(std::mem::size_of::<(RequestId, Kept)>(), 56);
        let id = || RequestId::parse("c-1-2-3").unwrap().unwrap();
        let outcomes: [Outcome; 2] = [
            Ok(Reply::Acquired {
                token: Token(7),
                already_held: false,
            }),
            Err(LockError::LeaseExpired { lease: LeaseId(3) }),
        ];
        for outcome in outcomes {
            let mut dedup = Dedup::default();
            dedup.remember(id(), outcome.clone());
            assert_eq!(dedup.get(&id()), Some(outcome.clone()));
            let as_before = postcard::to_allocvec(&vec![(id(), outcome)]).unwrap();
            assert_eq!(postcard::to_allocvec(&dedup).unwrap(), as_before);
        }
    }
}
