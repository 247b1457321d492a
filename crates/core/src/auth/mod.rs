//! Who may do what: principals, roles (rules on name prefixes), users,
//! bearer tokens (stored hashed), per-principal quotas and usage, and the
//! audit trail. [`Auth`] is part of [`crate::State`], so it is replicated
//! through the log, identical on every node and in every snapshot; it
//! changes only by [`AuthChange`]s applied in log order.
//!
//! Auth starts disabled: nothing is refused, as before it existed. Enabling
//! is refused unless some principal holds `admin` on the empty prefix, so
//! nobody can lock everyone out. The decision rule lives in [`role`].

mod audit;
mod change;
mod principal;
mod quota;
mod role;
mod tables;
#[cfg(test)]
mod tests;
mod token;

pub use audit::{AuditEntry, AuditKind, AuditLog, AuditRecord};
pub use change::{AuthChange, NewToken};
pub use principal::{check_prefix, Principal, RoleName, Verb};
pub use quota::{Quota, QuotaKind, Usage};
pub use role::{decide, Decision, Role, Rule};
pub use token::{digests_equal, StoredToken, TokenId, TokenRefusal, SECRET_PREFIX};

use crate::{LockError, LockName};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A principal's roles and quota.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// Roles held; their rules decide.
    pub roles: BTreeSet<RoleName>,
    /// Bounds on what the principal's leases may use.
    pub quota: Quota,
}

/// The auth tables (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Auth {
    /// Whether requests are checked at all.
    enabled: bool,
    /// Roles by name.
    roles: BTreeMap<RoleName, Role>,
    /// Users by principal.
    users: BTreeMap<Principal, User>,
    /// Tokens by id (never the secrets).
    tokens: BTreeMap<TokenId, StoredToken>,
    /// What each principal's live leases use; a row leaves when it is zero.
    usage: BTreeMap<Principal, Usage>,
    /// The audit trail.
    audit: AuditLog,
}

impl Auth {
    /// Whether requests are checked.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Roles, by name.
    pub fn roles(&self) -> &BTreeMap<RoleName, Role> {
        &self.roles
    }

    /// Users, by principal.
    pub fn users(&self) -> &BTreeMap<Principal, User> {
        &self.users
    }

    /// Stored tokens, by id.
    pub fn tokens(&self) -> &BTreeMap<TokenId, StoredToken> {
        &self.tokens
    }

    /// What `principal`'s live leases use.
    pub fn usage(&self, principal: &Principal) -> Usage {
        self.usage.get(principal).copied().unwrap_or_default()
    }

    /// Every principal's usage (principals with nothing live are absent).
    pub fn usages(&self) -> &BTreeMap<Principal, Usage> {
        &self.usage
    }

    /// The audit trail.
    pub fn audit(&self) -> &AuditLog {
        &self.audit
    }

    /// Decides `verb` on `name` for `principal` by [`decide`] over the rules
    /// of its roles, whether or not auth is enabled.
    pub fn decide(&self, principal: &Principal, verb: Verb, name: &str) -> Decision {
        let Some(user) = self.users.get(principal) else {
            return Decision::NoRule;
        };
        let roles = user.roles.iter().filter_map(|r| self.roles.get(r));
        let rules = roles.flat_map(|role| role.rules.iter().map(|(p, r)| (p.as_str(), r)));
        decide(rules, verb, name)
    }

    /// Whether `principal` holds `admin` on the empty prefix.
    pub fn is_admin(&self, principal: &Principal) -> bool {
        self.decide(principal, Verb::Admin, "").is_allowed()
    }

    /// Whether any principal holds `admin` on the empty prefix.
    pub fn has_admin(&self) -> bool {
        self.users.keys().any(|p| self.is_admin(p))
    }

    /// Whether `principal` may do `verb` on `name`: always with auth
    /// disabled; otherwise `Unauthenticated` for an anonymous caller and
    /// `PermissionDenied` (naming principal, verb, name and the deciding
    /// prefix) when [`Auth::decide`] does not allow it.
    pub fn check(
        &self,
        principal: Option<&Principal>,
        verb: Verb,
        name: &str,
    ) -> Result<(), LockError> {
        if !self.enabled {
            return Ok(());
        }
        let principal = principal.ok_or_else(LockError::anonymous)?;
        match self.decide(principal, verb, name) {
            Decision::Allowed { .. } => Ok(()),
            Decision::DeniedBy { prefix } => Err(LockError::PermissionDenied {
                principal: principal.to_string(),
                verb,
                name: name.to_owned(),
                denied_by: Some(prefix),
            }),
            Decision::NoRule => Err(LockError::PermissionDenied {
                principal: principal.to_string(),
                verb,
                name: name.to_owned(),
                denied_by: None,
            }),
        }
    }

    /// Whether `principal` may grant a lease: `lock` allowed on the prefix
    /// of some rule of its roles (a lease is not tied to a name, so any
    /// prefix it may lock under will do).
    pub fn check_may_lock_somewhere(&self, principal: Option<&Principal>) -> Result<(), LockError> {
        if !self.enabled {
            return Ok(());
        }
        let principal = principal.ok_or_else(LockError::anonymous)?;
        let user = self.users.get(principal);
        let roles = user.into_iter().flat_map(|u| u.roles.iter());
        let mut prefixes = roles
            .filter_map(|r| self.roles.get(r))
            .flat_map(|r| r.rules.keys());
        if prefixes.any(|p| self.decide(principal, Verb::Lock, p).is_allowed()) {
            return Ok(());
        }
        self.check(Some(principal), Verb::Lock, "")
    }

    /// The principal a bearer secret authenticates at `now_unix_ms`, given
    /// the secret and its SHA-256 (computed by the caller): one lookup, one
    /// constant-time compare.
    pub fn authenticate(
        &self,
        secret: &str,
        sha256: &[u8; 32],
        now_unix_ms: u64,
    ) -> Result<&Principal, TokenRefusal> {
        let id = TokenId::of_secret(secret).ok_or(TokenRefusal::Malformed)?;
        let Some(stored) = self.tokens.get(&id) else {
            return Err(TokenRefusal::Unknown(id));
        };
        if !digests_equal(&stored.sha256, sha256) {
            return Err(TokenRefusal::Unknown(id));
        }
        if let Some(expires_unix_ms) = stored.expires_unix_ms {
            if now_unix_ms >= expires_unix_ms {
                return Err(TokenRefusal::Expired {
                    id,
                    expires_unix_ms,
                });
            }
        }
        Ok(&stored.principal)
    }

    /// Appends an audit record (see [`AuditLog::push`]).
    pub(crate) fn record(&mut self, entry: AuditEntry, at_unix_ms: u64) {
        self.audit.push(entry, at_unix_ms);
    }

    /// Changes `principal`'s usage by `change` (nothing for a lease without
    /// a principal), dropping the row when it returns to zero.
    pub(crate) fn count(&mut self, principal: Option<&Principal>, change: impl FnOnce(&mut Usage)) {
        let Some(principal) = principal else {
            return;
        };
        let usage = self.usage.entry(principal.clone()).or_default();
        change(usage);
        if usage.is_zero() {
            self.usage.remove(principal);
        }
    }

    /// Refuses one more unit of `kind` for `principal` if its quota is
    /// reached (`extra`: units already counted against the same bound).
    pub(crate) fn check_quota(
        &self,
        principal: Option<&Principal>,
        kind: QuotaKind,
        in_use: impl FnOnce(Usage) -> u64,
    ) -> Result<(), LockError> {
        let Some(principal) = principal else {
            return Ok(());
        };
        let Some(user) = self.users.get(principal) else {
            return Ok(());
        };
        let max = match kind {
            QuotaKind::Leases => user.quota.leases,
            QuotaKind::Held => user.quota.held,
            QuotaKind::Waiters => user.quota.waiters,
        };
        let used = in_use(self.usage(principal));
        match max {
            Some(max) if used >= max => Err(LockError::QuotaExceeded {
                principal: principal.to_string(),
                quota: kind,
                max,
            }),
            _ => Ok(()),
        }
    }
}

/// The prefix a permission error suggests granting: the name up to its last
/// `/` (`jobs/x` → `jobs/`), or the name itself.
pub fn suggested_prefix(name: &str) -> &str {
    if name.is_empty() {
        return "";
    }
    LockName::prefix_of(name)
}
