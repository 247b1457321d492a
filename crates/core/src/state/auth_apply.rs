//! The auth half of `apply`: unwrapping a principal's command, the
//! permission and lease-ownership checks (made here in apply, against the
//! state every replica shares, so a check can never race a revoke and
//! regrant; the server makes the same check before proposing, through
//! [`State::authorize`]), auth changes, audit records, and the per-principal
//! usage check.
//!
//! A command that arrives without a principal while auth is enabled is
//! refused as unauthenticated, except the server's own (timers, audit
//! entries, a waiter's cancellation when its caller went away).

use super::State;
use crate::auth::{AuditEntry, AuditKind, Auth, AuthChange, Principal, Usage, Verb};
use crate::{Command, Effect, LeaseId, LockError, LockName, Outcome, Reply, Token};
use std::collections::BTreeMap;

impl State {
    /// The auth tables.
    pub fn auth(&self) -> &Auth {
        &self.auth
    }

    /// Unwraps `Command::As`, checks the caller (auth enabled only) and
    /// applies. Refusals are audited; accepted force releases and auth
    /// changes too.
    pub(super) fn apply_authorized(
        &mut self,
        command: Command,
        at_unix_ms: u64,
        effects: &mut Vec<Effect>,
    ) -> Outcome {
        let (principal, command) = match command {
            Command::As { principal, command } => {
                command.check_wrappable()?;
                (Some(principal), *command)
            }
            other => (None, other),
        };
        if let Err(error) = self.authorize(principal.as_ref(), &command) {
            self.audit_refusal(principal.as_ref(), &command, &error, at_unix_ms);
            return Err(error);
        }
        let forced = match &command {
            Command::ForceRelease { name, reason, .. } => Some((name.clone(), reason.clone())),
            _ => None,
        };
        let outcome = self.dispatch(command, principal.as_ref(), at_unix_ms, effects);
        if let (Some((name, reason)), Ok(_)) = (forced, &outcome) {
            let caller = self.force_releases().next_back().map(|r| r.caller.clone());
            let entry = AuditEntry {
                kind: AuditKind::ForceRelease,
                principal: caller.unwrap_or_default(),
                verb: Some(Verb::Force),
                name: name.as_str().to_owned(),
                detail: reason,
            };
            self.auth.record(entry, at_unix_ms);
        }
        outcome
    }

    /// Whether `principal` (`None`: anonymous) may have `command` applied
    /// now: always with auth disabled; otherwise the verb the command needs
    /// on its name (see [`crate::auth::Verb`]) and, for a command that
    /// names a lease (or a lock's holder token), that the lease is the
    /// principal's own or the principal is an admin.
    pub fn authorize(
        &self,
        principal: Option<&Principal>,
        command: &Command,
    ) -> Result<(), LockError> {
        if !self.auth.enabled() {
            return Ok(());
        }
        let auth = &self.auth;
        match command {
            Command::ExpireLease { .. }
            | Command::EndLockDelay { .. }
            | Command::EndHold { .. }
            | Command::Audit(_)
            | Command::CancelWait { .. }
            | Command::TimeOutWaits { .. }
                if principal.is_none() =>
            {
                Ok(())
            }
            Command::GrantLease { .. } => auth.check_may_lock_somewhere(principal),
            Command::KeepAlive { lease }
            | Command::RevokeLease { lease, .. }
            | Command::CancelWait { lease, .. } => self.check_owner(principal, *lease),
            Command::Acquire(a) => {
                auth.check(principal, Verb::Lock, a.name.as_str())?;
                self.check_owner(principal, a.lease)
            }
            Command::Release { lease, name, .. } => {
                auth.check(principal, Verb::Lock, name.as_str())?;
                self.check_owner(principal, *lease)
            }
            Command::AcquirePermits(a) => {
                auth.check(principal, Verb::Lock, a.name.as_str())?;
                self.check_owner(principal, a.lease)
            }
            Command::AcquireAll(a) => {
                for name in &a.names {
                    auth.check(principal, Verb::Lock, name.as_str())?;
                }
                self.check_owner(principal, a.lease)
            }
            Command::Proclaim(p) => {
                auth.check(principal, Verb::Lock, p.name.as_str())?;
                self.check_owner(principal, p.lease)
            }
            Command::FencedPut { lock, token, .. } => {
                auth.check(principal, Verb::Lock, lock.as_str())?;
                match self.holder_lease(lock, *token) {
                    Some(lease) => self.check_owner(principal, lease),
                    None => Ok(()),
                }
            }
            Command::ForceRelease { name, .. } => auth.check(principal, Verb::Force, name.as_str()),
            Command::Auth(AuthChange::Bootstrap { .. }) => {
                // Its own guard: refused once an admin exists (and auth
                // cannot be enabled before one does).
                principal.ok_or_else(LockError::anonymous).map(|_| ())
            }
            // Server-only commands carry no principal (`check_wrappable`);
            // an admin may still propose them.
            Command::Auth(_)
            | Command::Audit(_)
            | Command::ExpireLease { .. }
            | Command::EndLockDelay { .. }
            | Command::EndHold { .. }
            | Command::TimeOutWaits { .. }
            | Command::As { .. } => auth.check(principal, Verb::Admin, ""),
        }
    }

    /// The lease holding `lock` under `token`, if that is its holder now.
    fn holder_lease(&self, lock: &LockName, token: Token) -> Option<LeaseId> {
        let holder = self.locks.get(lock)?.holder.as_ref()?;
        (holder.token == token).then_some(holder.lease)
    }

    /// With auth enabled: `lease` (if live) must be `principal`'s or
    /// `principal` an admin.
    fn check_owner(&self, principal: Option<&Principal>, lease: LeaseId) -> Result<(), LockError> {
        let principal = principal.ok_or_else(LockError::anonymous)?;
        let Some(row) = self.leases.get(&lease) else {
            return Ok(()); // The command itself says "not found" or "expired".
        };
        if row.principal.as_ref() == Some(principal) || self.auth.is_admin(principal) {
            return Ok(());
        }
        Err(LockError::NotLeaseOwner {
            lease,
            principal: principal.to_string(),
            owner: row
                .principal
                .as_ref()
                .map_or_else(|| "anonymous".to_owned(), Principal::to_string),
        })
    }

    /// Who a force release records: the authenticated principal while auth
    /// is enabled; otherwise the client's own note (`user@host`).
    pub(super) fn recorded_caller(&self, principal: Option<&Principal>, note: String) -> String {
        match principal {
            Some(principal) if self.auth.enabled() => principal.to_string(),
            _ => note,
        }
    }

    /// Applies an auth change on `principal`'s behalf and audits it.
    pub(super) fn apply_auth(
        &mut self,
        change: AuthChange,
        principal: Option<&Principal>,
        at_unix_ms: u64,
    ) -> Outcome {
        let detail = change.describe();
        self.auth.apply_change(change, at_unix_ms)?;
        let entry = AuditEntry {
            kind: AuditKind::AuthChange,
            principal: principal.map(Principal::to_string).unwrap_or_default(),
            verb: Some(Verb::Admin),
            name: String::new(),
            detail,
        };
        self.auth.record(entry, at_unix_ms);
        Ok(Reply::AuthChanged)
    }

    /// Appends a server-proposed audit entry.
    pub(super) fn audit(&mut self, entry: AuditEntry, at_unix_ms: u64) -> Reply {
        let seq = self.auth.audit().next_seq();
        self.auth.record(entry, at_unix_ms);
        Reply::Audited { seq }
    }

    /// Records a refusal made in apply.
    fn audit_refusal(
        &mut self,
        principal: Option<&Principal>,
        command: &Command,
        error: &LockError,
        at_unix_ms: u64,
    ) {
        let (verb, name) = match error {
            LockError::PermissionDenied { verb, name, .. } => (Some(*verb), name.clone()),
            _ => (None, command.subject()),
        };
        let entry = AuditEntry {
            kind: AuditKind::Refused,
            principal: principal.map(Principal::to_string).unwrap_or_default(),
            verb,
            name,
            detail: error.to_string(),
        };
        self.auth.record(entry, at_unix_ms);
    }

    /// Checks the per-principal usage counters against a full recount.
    pub(super) fn check_usage(&self) -> Result<(), String> {
        let mut counted: BTreeMap<Principal, Usage> = BTreeMap::new();
        for (id, lease) in self.leases.iter() {
            if let Some(principal) = &lease.principal {
                let usage = counted.entry(principal.clone()).or_default();
                let (pool_held, pool_waiting) = self.pool_usage(*id);
                usage.leases += 1;
                usage.held += lease.holds.len() as u64 + pool_held;
                usage.waiters += lease.waits.len() as u64 + pool_waiting;
            }
        }
        if &counted != self.auth.usages() {
            return Err(format!(
                "usage counters {:?} differ from a recount {counted:?}",
                self.auth.usages()
            ));
        }
        Ok(())
    }
}
