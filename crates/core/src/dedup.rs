//! Bounded memory of request outcomes, for idempotent retries.
//!
//! An outcome is kept with its error boxed: a refusal's error is the large
//! variant (names, hints), and most remembered outcomes are successes, so
//! an entry takes 64 bytes instead of 104. A lease holding one lock keeps
//! one entry, and keeps it inline in its row (no heap block of its own:
//! with a million such leases that saved 72 MB of heap blocks and their
//! headers for 40 MB more of rows). Boxing changes nothing in the encoding
//! (serde writes a box as its contents), nor does the inline first entry
//! (a sequence either way), so stored snapshots read unchanged.

use crate::{LockError, Outcome, Reply, RequestId};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use smallvec::SmallVec;

/// An outcome as kept: the error out of line.
type Kept = Result<Reply, Box<LockError>>;

/// The last [`crate::limits::DEDUP_PER_LEASE_MAX`] (request id, outcome) pairs
/// of one lease; dropped with the lease.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dedup {
    /// Oldest first; the first entry inline.
    entries: SmallVec<[(RequestId, Kept); 1]>,
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
            // At most 64 entries of 64 bytes move: cheaper than a ring's
            // separate heap block for the leases that keep one entry.
            drop(self.entries.remove(0));
        } else if self.entries.len() == self.entries.capacity() {
            // Double from one slot (1, 2, 4, ... 64), not from four: most
            // leases make a request or two.
            self.entries.reserve_exact(self.entries.len().max(1));
        }
        self.entries.push((id, outcome.map_err(Box::new)));
    }
}

impl Serialize for Dedup {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(&self.entries)
    }
}

impl<'de> Deserialize<'de> for Dedup {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Dedup, D::Error> {
        let entries = Vec::<(RequestId, Kept)>::deserialize(deserializer)?;
        Ok(Dedup {
            entries: entries.into_iter().collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LeaseId, Token};

    #[test]
    fn an_entry_is_small_and_encoded_as_the_outcome_it_keeps() {
        assert_eq!(std::mem::size_of::<(RequestId, Kept)>(), 64);
        assert_eq!(std::mem::size_of::<Dedup>(), 72);
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
