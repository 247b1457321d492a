//! Bounded memory of request outcomes, for idempotent retries.
//!
//! An outcome is kept in 16 bytes when it is one of the replies nearly
//! every remembered request got (acquired, queued, released), and boxed
//! otherwise (a refusal's error is the large variant: names, hints), so an
//! entry with its request id takes 40 bytes instead of the 104 of an
//! `Outcome` beside its id. A lease holding one lock keeps one entry, and
//! keeps it inline in its row (no heap block of its own: with a million
//! such leases that saved 72 MB of heap blocks and their headers), in the
//! 40 bytes of the entry alone (no count beside it; more entries move to
//! the heap). The
//! encoding is the outcome's, whichever way it is kept, and the inline
//! first entry is a sequence either way, so stored snapshots read
//! unchanged.

use crate::one_or_many::OneOrMany;
use crate::{Outcome, Reply, RequestId, Token};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An outcome as kept: the usual replies inline, anything else boxed.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Kept {
    Acquired { token: Token, already_held: bool },
    Queued { position: u32 },
    Released,
    Other(Box<Outcome>),
}

impl Kept {
    fn new(outcome: Outcome) -> Kept {
        match outcome {
            Ok(Reply::Acquired {
                token,
                already_held,
            }) => Kept::Acquired {
                token,
                already_held,
            },
            Ok(Reply::Queued { position }) => Kept::Queued { position },
            Ok(Reply::Released) => Kept::Released,
            other => Kept::Other(Box::new(other)),
        }
    }

    fn outcome(&self) -> Outcome {
        match self {
            Kept::Acquired {
                token,
                already_held,
            } => Ok(Reply::Acquired {
                token: *token,
                already_held: *already_held,
            }),
            Kept::Queued { position } => Ok(Reply::Queued {
                position: *position,
            }),
            Kept::Released => Ok(Reply::Released),
            Kept::Other(outcome) => (**outcome).clone(),
        }
    }
}

impl Serialize for Kept {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Kept::Other(outcome) => outcome.serialize(serializer),
            // The inline replies own no heap: rebuilt for the encoder.
            inline => inline.outcome().serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Kept {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Kept, D::Error> {
        Outcome::deserialize(deserializer).map(Kept::new)
    }
}

/// The last [`crate::limits::DEDUP_PER_LEASE_MAX`] (request id, outcome) pairs
/// of one lease; dropped with the lease.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dedup {
    /// Oldest first: one inline (40 bytes, the row's whole share), more on
    /// the heap.
    entries: OneOrMany<Entry>,
}

/// A request id with the outcome it got.
type Entry = (RequestId, Kept);

impl Dedup {
    /// The first outcome recorded for `id`, if still remembered.
    pub fn get(&self, id: &RequestId) -> Option<Outcome> {
        let (_, kept) = self.entries.as_slice().iter().find(|(k, _)| k == id)?;
        Some(kept.outcome())
    }

    /// Remembers `outcome` for `id`, forgetting the oldest entry beyond the limit.
    pub fn remember(&mut self, id: RequestId, outcome: Outcome) {
        let len = self.entries.as_slice().len();
        if len == crate::limits::DEDUP_PER_LEASE_MAX {
            // At most 64 entries of 40 bytes move: cheaper than a ring's
            // bookkeeping for the leases that keep a few.
            drop(self.entries.remove(0));
        } else if let Some(heap) = self.entries.heap_mut().filter(|h| h.len() == h.capacity()) {
            // Double (2, 4, ... 64), not by `Vec`'s rule: most leases make
            // a request or two.
            heap.reserve_exact(len);
        }
        let len = self.entries.as_slice().len();
        self.entries.insert(len, (id, Kept::new(outcome)));
    }
}

impl Serialize for Dedup {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.entries.as_slice())
    }
}

impl<'de> Deserialize<'de> for Dedup {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Dedup, D::Error> {
        let entries = Vec::<Entry>::deserialize(deserializer)?;
        Ok(Dedup {
            entries: OneOrMany::from_vec(entries),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LeaseId, LockError, LockName};

    #[test]
    fn an_entry_is_small_and_encoded_as_the_outcome_it_keeps() {
        assert_eq!(std::mem::size_of::<Kept>(), 16);
        assert_eq!(std::mem::size_of::<(RequestId, Kept)>(), 40);
        assert_eq!(std::mem::size_of::<Dedup>(), 40);
        let id = || RequestId::parse("c-1-2-3").unwrap().unwrap();
        let outcomes: [Outcome; 6] = [
            Ok(Reply::Acquired {
                token: Token(7),
                already_held: false,
            }),
            Ok(Reply::Acquired {
                token: Token(u64::MAX),
                already_held: true,
            }),
            Ok(Reply::Queued { position: 3 }),
            Ok(Reply::Released),
            Ok(Reply::LeaseEnded {
                released: vec![LockName::parse("jobs/a").unwrap()],
            }),
            Err(LockError::LeaseExpired { lease: LeaseId(3) }),
        ];
        for outcome in outcomes {
            let mut dedup = Dedup::default();
            dedup.remember(id(), outcome.clone());
            assert_eq!(dedup.get(&id()), Some(outcome.clone()));
            let as_before = postcard::to_allocvec(&vec![(id(), outcome.clone())]).unwrap();
            assert_eq!(postcard::to_allocvec(&dedup).unwrap(), as_before);
            let read: Dedup = postcard::from_bytes(&as_before).unwrap();
            assert_eq!(read.get(&id()), Some(outcome));
        }
    }

    #[test]
    fn keeps_the_latest_entries_up_to_the_limit_oldest_forgotten_first() {
        let id = |n: usize| RequestId::parse(&format!("c.{n}")).unwrap().unwrap();
        let released = || Ok(Reply::Released);
        let mut dedup = Dedup::default();
        assert_eq!(dedup.get(&id(0)), None);
        let over = crate::limits::DEDUP_PER_LEASE_MAX + 6;
        for n in 0..over {
            dedup.remember(id(n), released());
            assert_eq!(dedup.get(&id(n)), Some(released()), "entry {n} kept");
            assert_eq!(dedup.get(&id(0)).is_some(), n < 64, "entry 0 after {n}");
        }
        assert_eq!(dedup.entries.as_slice().len(), 64);
        assert_eq!(dedup.get(&id(over - 64)), Some(released()));
        assert_eq!(dedup.get(&id(over - 65)), None);
        let read: Dedup = postcard::from_bytes(&postcard::to_allocvec(&dedup).unwrap()).unwrap();
        assert_eq!(read, dedup);
    }
}
