//! Bounded memory of request outcomes, for idempotent retries.

use crate::{Outcome, RequestId};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The last [`crate::limits::DEDUP_PER_LEASE_MAX`] (request id, outcome) pairs
/// of one lease; dropped with the lease.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dedup {
    entries: VecDeque<(RequestId, Outcome)>,
}

impl Dedup {
    /// The first outcome recorded for `id`, if still remembered.
    pub fn get(&self, id: &RequestId) -> Option<&Outcome> {
        self.entries.iter().find(|(k, _)| k == id).map(|(_, v)| v)
    }

    /// Remembers `outcome` for `id`, forgetting the oldest entry beyond the limit.
    pub fn remember(&mut self, id: RequestId, outcome: Outcome) {
        if self.entries.len() == crate::limits::DEDUP_PER_LEASE_MAX {
            self.entries.pop_front();
        } else if self.entries.len() == self.entries.capacity() {
            // Double from one slot (1, 2, 4, ... 64), not from four: most
            // leases make a request or two, and an entry is ~100 bytes.
            self.entries.reserve_exact(self.entries.len().max(1));
        }
        self.entries.push_back((id, outcome));
    }
}
