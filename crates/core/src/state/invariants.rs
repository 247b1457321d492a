//! The state's cross-table invariants, checked with a full scan: what
//! the tests, the simulations and the fuzz targets hold every state to
//! (the apply path asserts only the local, cheap ones).

use super::State;
use std::collections::BTreeSet;

impl State {
    /// Checks every cross-table invariant with a full scan, returning the
    /// first violation. O(state); for tests, simulations and snapshot loads,
    /// not for the apply path (which asserts the local, cheap ones).
    pub fn check_invariants(&self) -> Result<(), String> {
        self.check_lock_sets()?;
        for (name, lock) in &self.locks {
            if lock.holder.is_some() && lock.delay.is_some() {
                return Err(format!("lock {name} is held while delayed"));
            }
            if let Some(holder) = &lock.holder {
                let lease = self.leases.get(&holder.lease);
                if !lease.is_some_and(|l| l.holds.contains(name)) {
                    return Err(format!("holder {} of {name} is not live", holder.lease));
                }
                if holder.token.0 > self.revision.0 {
                    return Err(format!("token of {name} is above the revision"));
                }
            }
            let mut seen = BTreeSet::new();
            for waiter in &lock.waiters {
                let lease = self.leases.get(&waiter.lease);
                if !seen.insert(waiter.lease) || !lease.is_some_and(|l| l.waits.contains(name)) {
                    return Err(format!("waiter {} of {name} is inconsistent", waiter.lease));
                }
            }
        }
        for (id, lease) in self.leases.iter() {
            for name in &lease.holds {
                let holder = self.locks.get(name).and_then(|l| l.holder.as_ref());
                if holder.map(|h| h.lease) != Some(*id) {
                    return Err(format!("lease {id} lists {name} but does not hold it"));
                }
            }
            for name in &lease.waits {
                let lock = self.locks.get(name);
                if !lock.is_some_and(|l| l.waiters.iter().any(|w| w.lease == *id)) {
                    return Err(format!("lease {id} lists a wait on {name} it lacks"));
                }
            }
        }
        self.check_grant_requests()?;
        self.check_fenced()?;
        self.check_pools()?;
        self.check_usage()
    }

    /// Each lease granted with a request id is found by it, and nothing else is filed.
    fn check_grant_requests(&self) -> Result<(), String> {
        let mut granted_with_ids = 0;
        for (lease, row) in self.leases.iter() {
            if let Some(id) = &row.grant_request_id {
                granted_with_ids += 1;
                if self.grant_requests.find(id, &self.leases) != Some(*lease) {
                    return Err(format!("lease {lease} is not found by its grant request"));
                }
            }
        }
        match self.grant_requests.len() == granted_with_ids {
            true => Ok(()),
            false => Err(format!(
                "{} grant requests filed for {granted_with_ids} leases granted with one",
                self.grant_requests.len()
            )),
        }
    }
}
