//! The fenced-store half of `apply`: a put is accepted only from the lock's
//! current holder token, and only if that token is at least the highest
//! token that has written the key (equal is accepted: one holder may write
//! a key many times). Tokens are revisions, so they are comparable across
//! locks: a key written under one lock may later be written by the holder
//! of another lock whose token is higher.
//!
//! Idempotency: a put with a request id is remembered in the holder's
//! lease (like acquire and release), so a retry while the lock is still
//! held returns the first outcome. A retry after the lock passed on hears
//! `NotHolder`, never a second write.

use super::State;
use crate::{
    nearby, Effect, FencedEntry, FencedKey, LeaseId, LockError, LockName, Outcome, Reply,
    RequestId, Token,
};

impl State {
    /// Writes `value` under `key` for the holder of `lock` with `token`.
    /// Every refusal (other than the replay of a remembered one) is also
    /// reported as [`Effect::FencedPutRefused`], so the server keeps a trace
    /// of stale writers.
    pub(super) fn fenced_put(
        &mut self,
        lock: LockName,
        token: Token,
        key: FencedKey,
        value: Vec<u8>,
        request_id: Option<RequestId>,
        effects: &mut Vec<Effect>,
    ) -> Outcome {
        let holder = self
            .locks
            .get(&lock)
            .and_then(|row| row.holder.as_ref())
            .map(|h| (h.lease, h.token));
        let writer_lease = holder.filter(|(_, held)| *held == token).map(|(l, _)| l);
        if let Some(first) = writer_lease.and_then(|lease| self.remembered(lease, &request_id)) {
            return first;
        }
        let outcome = self.fenced_put_checked(&lock, token, &key, value, holder);
        if let Some(lease) = writer_lease {
            self.remember(lease, request_id, &outcome);
        }
        if let Err(error) = &outcome {
            let written = self.fenced.get(&key);
            let owner = writer_lease.and_then(|lease| self.leases.get(&lease));
            effects.push(Effect::FencedPutRefused {
                owner: owner.map_or_else(String::new, |row| row.owner.owner().to_owned()),
                highest: written.map(|entry| entry.token),
                highest_lock: written.map(|entry| entry.lock.clone()),
                key,
                lock,
                lease: writer_lease,
                presented: token,
                error: error.clone(),
            });
        }
        outcome
    }

    /// `fenced_put` for a request not seen before: the checks, then the write.
    /// `holder` is `lock`'s current holder (lease, token), if any.
    fn fenced_put_checked(
        &mut self,
        lock: &LockName,
        token: Token,
        key: &FencedKey,
        value: Vec<u8>,
        holder: Option<(LeaseId, Token)>,
    ) -> Outcome {
        // The server validates before proposing; checking again keeps a
        // malformed log entry from ever reaching the table.
        crate::check_fenced_value(&value)?;
        if !self.locks.contains_key(lock) {
            return Err(LockError::NoSuchLock {
                nearby: nearby::nearby_names(&self.locks, lock.as_str()),
                name: lock.clone(),
            });
        }
        if holder.map(|(_, held)| held) != Some(token) {
            return Err(LockError::NotHolder {
                name: lock.clone(),
                lease: None,
                token,
                holder_token: holder.map(|(_, held)| held),
            });
        }
        if let Some(entry) = self.fenced.get(key) {
            if token < entry.token {
                return Err(LockError::StaleToken {
                    key: key.clone(),
                    lock: lock.clone(),
                    presented: token,
                    highest: entry.token,
                    highest_lock: entry.lock.clone(),
                });
            }
        }
        self.fenced.check_room(key, value.len())?;
        // The holder's token was granted at or before this revision.
        assert!(token.0 <= self.revision.0, "holder token above revision");
        self.bump();
        let entry = FencedEntry {
            value,
            token,
            lock: lock.clone(),
        };
        self.fenced.insert(key.clone(), entry);
        Ok(Reply::FencedStored { token })
    }

    /// The fenced-store entry under `key`: value, token and lock of the
    /// last accepted write.
    pub fn fenced_get(&self, key: &FencedKey) -> Option<&FencedEntry> {
        self.fenced.get(key)
    }

    /// Number of keys in the fenced store.
    pub fn fenced_count(&self) -> usize {
        self.fenced.len()
    }

    /// Every fenced-store entry, in key order.
    pub fn fenced_entries(&self) -> impl Iterator<Item = (&FencedKey, &FencedEntry)> {
        self.fenced.iter()
    }

    /// Checks the fenced store's own invariants (see `check_invariants`).
    pub(super) fn check_fenced(&self) -> Result<(), String> {
        if self.fenced.recount_bytes() != self.fenced.bytes() {
            return Err("fenced store byte total is off".into());
        }
        for (key, entry) in self.fenced.iter() {
            if entry.token.0 > self.revision.0 {
                return Err(format!("fenced key {key} has a token above the revision"));
            }
        }
        Ok(())
    }
}
