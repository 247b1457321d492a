//! The break-glass half of `apply`: an operator frees a lock from a holder
//! that will not let go (hung, partitioned but renewing, or an orphan whose
//! lease a supervisor keeps alive).
//!
//! Two checks guard it. The operator names the holder token they looked at,
//! so a lock that changed hands since is not freed from its new holder. And
//! a holder that did not declare `fenced` is refused unless the operator
//! says `allow_unfenced`: nothing rejects that holder's late writes, so a
//! force release would let two writers overlap.
//!
//! The lock is then freed through the same paths as a release (or, with
//! `revoke_lease`, a revoke), so the next waiter is granted exactly as it
//! would be then, with a higher token. Every accepted force release is
//! remembered, bounded by `FORCE_RELEASES_REMEMBERED`.

use super::State;
use crate::outcome::{ForcedBy, FreeCause};
use crate::{command, limits, nearby, Effect, LeaseId, LockError, LockName, Outcome, Reply, Token};
use serde::{Deserialize, Serialize};

/// The arguments of [`crate::Command::ForceRelease`], gathered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForceRelease {
    /// The lock.
    pub name: LockName,
    /// The token the operator saw holding it: a newer holder is left alone.
    pub expected_token: Token,
    /// Why, in the operator's words (kept in the incident record).
    pub reason: String,
    /// Who, as `user@host`.
    pub caller: String,
    /// Free a holder that did not declare fencing.
    pub allow_unfenced: bool,
    /// Revoke the holder's whole lease.
    pub revoke_lease: bool,
}

impl From<ForceRelease> for crate::Command {
    fn from(f: ForceRelease) -> crate::Command {
        crate::Command::ForceRelease {
            name: f.name,
            expected_token: f.expected_token,
            reason: f.reason,
            caller: f.caller,
            allow_unfenced: f.allow_unfenced,
            revoke_lease: f.revoke_lease,
        }
    }
}

impl TryFrom<crate::Command> for ForceRelease {
    type Error = crate::Command;

    /// The arguments of a `Command::ForceRelease`; any other command back.
    fn try_from(command: crate::Command) -> Result<ForceRelease, crate::Command> {
        match command {
            crate::Command::ForceRelease {
                name,
                expected_token,
                reason,
                caller,
                allow_unfenced,
                revoke_lease,
            } => Ok(ForceRelease {
                name,
                expected_token,
                reason,
                caller,
                allow_unfenced,
                revoke_lease,
            }),
            other => Err(other),
        }
    }
}

/// One accepted force release, kept for the incident record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForceReleaseRecord {
    /// The lock named by the operator.
    pub name: LockName,
    /// The token its holder had (the one the operator named).
    pub token: Token,
    /// The holder's lease.
    pub lease: LeaseId,
    /// The holder lease's owner name, as it was (the lease may be gone).
    pub owner: String,
    /// Why, in the operator's words.
    pub reason: String,
    /// Who, as `user@host`.
    pub caller: String,
    /// Whether the holder's whole lease was revoked.
    pub lease_revoked: bool,
    /// Proposer's wall time of the force release (display only).
    pub at_unix_ms: u64,
}

impl State {
    /// Frees `f.name` from its holder if `f.expected_token` is the holder's
    /// token and the holder is fenced (or `f.allow_unfenced`).
    pub(super) fn force_release(
        &mut self,
        f: ForceRelease,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Outcome {
        // The server validates before proposing; checking again keeps a
        // malformed log entry from ever reaching the tables.
        command::check_force(&f.reason, &f.caller)?;
        let (lease, fenced) = self.forced_holder(&f)?;
        if !fenced && !f.allow_unfenced {
            return Err(LockError::Unfenced { name: f.name });
        }
        let owner = self.leases[&lease].owner.owner().to_owned();
        let first_effect = effects.len();
        let released = if f.revoke_lease {
            match self.end_lease(lease, false, at_unix_ms, effects) {
                Reply::LeaseEnded { released } => released,
                other => unreachable!("end_lease replied {other:?}"),
            }
        } else if self.pools.contains_key(&f.name) {
            self.release_permits(lease, &f.name, f.expected_token, at_unix_ms, effects)?;
            vec![f.name.clone()]
        } else {
            self.bump();
            self.free_holder(&f.name, FreeCause::Released, effects);
            self.grant_next(&f.name, at_unix_ms, effects);
            vec![f.name.clone()]
        };
        assert!(released.contains(&f.name), "the named lock was not freed");
        let by = ForcedBy {
            caller: f.caller.clone(),
            reason: f.reason.clone(),
        };
        for effect in &mut effects[first_effect..] {
            if let Effect::LockFreed { forced, .. } = effect {
                *forced = Some(by.clone());
            }
        }
        self.remember_force_release(ForceReleaseRecord {
            name: f.name,
            token: f.expected_token,
            lease,
            owner,
            reason: f.reason,
            caller: f.caller,
            lease_revoked: f.revoke_lease,
            at_unix_ms,
        });
        Ok(Reply::ForceReleased {
            lease,
            released,
            lease_revoked: f.revoke_lease,
        })
    }

    /// The lease holding `f.name` under `f.expected_token` (a lock's
    /// holder, or a grant of a semaphore or read-write lock) and whether it
    /// declared fencing; a missing name or another token is refused.
    fn forced_holder(&self, f: &ForceRelease) -> Result<(LeaseId, bool), LockError> {
        let not_holder = |holder_token| LockError::NotHolder {
            holder_token,
            name: f.name.clone(),
            lease: None,
            token: f.expected_token,
        };
        if let Some(pool) = self.pools.get(&f.name) {
            let holds = pool.permits.holds();
            return match holds.iter().find(|h| h.token == f.expected_token) {
                Some(hold) => Ok((hold.lease, hold.fenced)),
                None => Err(not_holder(holds.last().map(|h| h.token))),
            };
        }
        let Some(lock) = self.locks.get(&f.name) else {
            return Err(LockError::NoSuchLock {
                nearby: nearby::nearby_names(&self.locks, f.name.as_str()),
                name: f.name.clone(),
            });
        };
        match &lock.holder {
            Some(holder) if holder.token == f.expected_token => Ok((holder.lease, holder.fenced)),
            other => Err(not_holder(other.as_ref().map(|h| h.token))),
        }
    }

    /// Appends `record`, forgetting the oldest beyond the limit.
    fn remember_force_release(&mut self, record: ForceReleaseRecord) {
        if self.force_releases.len() == limits::FORCE_RELEASES_REMEMBERED {
            self.force_releases.pop_front();
        }
        self.force_releases.push_back(record);
        assert!(self.force_releases.len() <= limits::FORCE_RELEASES_REMEMBERED);
    }

    /// Recent force releases, oldest first (at most
    /// [`limits::FORCE_RELEASES_REMEMBERED`]).
    pub fn force_releases(&self) -> impl DoubleEndedIterator<Item = &ForceReleaseRecord> {
        self.force_releases.iter()
    }
}
