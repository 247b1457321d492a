//! The election half of `apply`: a leader's `Proclaim`. Campaigning,
//! resigning and losing the lead are a lock's acquire, release and expiry
//! (see [`crate::election`]).

use super::State;
use crate::command::check_map;
use crate::election::VALUE_KEY;
use crate::{Effect, LockError, Outcome, Proclaim, Reply};
use std::collections::BTreeMap;

impl State {
    /// Sets the election value of `p.name` for its leader (`p.lease`
    /// holding it under `p.token`).
    pub(super) fn proclaim(&mut self, p: Proclaim, effects: &mut Vec<Effect>) -> Outcome {
        p.validate()?;
        let (lease, request_id) = (p.lease, p.request_id.clone());
        self.once(lease, request_id, |state| state.proclaim_fresh(p, effects))
    }

    /// `proclaim` for a live lease and a request not seen before.
    fn proclaim_fresh(&mut self, p: Proclaim, effects: &mut Vec<Effect>) -> Outcome {
        // A semaphore or a read-write lock has holders, not a leader.
        self.check_kind(&p.name, None)?;
        let Some(lock) = self.locks.get(&p.name) else {
            return Err(self.no_such_lock(&p.name));
        };
        let holder = lock.holder.as_ref();
        if holder.map(|h| (h.lease, h.token)) != Some((p.lease, p.token)) {
            return Err(LockError::NotHolder {
                name: p.name,
                lease: Some(p.lease),
                token: p.token,
                holder_token: holder.map(|h| h.token),
            });
        }
        let mut pairs: BTreeMap<String, String> =
            holder.map(|h| (*h.metadata).clone()).unwrap_or_default();
        pairs.insert(VALUE_KEY.to_owned(), p.value.clone());
        check_map("metadata", &pairs)?;
        self.bump();
        let lock = self.locks.get_mut(&p.name).expect("proclaimed lock");
        let holder = lock.holder.as_mut().expect("proclaimed holder");
        holder.metadata = pairs.into();
        let owner = self.leases[&p.lease].owner.owner().to_owned();
        effects.push(Effect::Proclaimed {
            name: p.name,
            lease: p.lease,
            token: p.token,
            value: p.value,
            owner,
        });
        Ok(Reply::Proclaimed { token: p.token })
    }
}
