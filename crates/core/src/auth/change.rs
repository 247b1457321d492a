//! [`AuthChange`]: every change to roles, users, tokens, quotas and the
//! enabled flag, as data. Each travels through the log inside
//! `Command::Auth`, is applied by [`super::Auth::apply_change`] identically
//! on every replica, and leaves an audit record.

use super::{Principal, Quota, RoleName, TokenId, Verb};
use crate::limits::{self, Limit};
use crate::LockError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A token to store: the secret's id and digest (the secret itself never
/// enters the log).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewToken {
    /// The public id (inside the secret).
    pub id: TokenId,
    /// SHA-256 of the whole secret.
    pub sha256: [u8; 32],
    /// Proposer's wall time after which the token is refused.
    pub expires_unix_ms: Option<u64>,
}

/// One change to the auth tables.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AuthChange {
    /// Start refusing: refused unless some principal holds `admin` on "".
    Enable,
    /// Stop refusing (every request allowed, as before auth existed).
    Disable,
    /// Create an empty role (no-op if it exists).
    AddRole { role: RoleName },
    /// Add `verb` to the allow (or, with `deny`, the deny) set of `role`'s
    /// rule on `prefix`.
    Grant {
        role: RoleName,
        prefix: String,
        verb: Verb,
        deny: bool,
    },
    /// Remove `verb` from both sets of `role`'s rule on `prefix`.
    Revoke {
        role: RoleName,
        prefix: String,
        verb: Verb,
    },
    /// Create a user with these roles.
    AddUser {
        principal: Principal,
        roles: BTreeSet<RoleName>,
    },
    /// Replace a user's roles.
    SetRoles {
        principal: Principal,
        roles: BTreeSet<RoleName>,
    },
    /// Replace a user's quota.
    SetQuota { principal: Principal, quota: Quota },
    /// Store a token for an existing user.
    CreateToken {
        principal: Principal,
        token: NewToken,
    },
    /// Forget a token: its next use is refused.
    RevokeToken { id: TokenId },
    /// Only while nobody holds `admin` on "": make role `admin` (admin on
    /// ""), give it to `principal` (creating the user), and store `token`.
    Bootstrap {
        principal: Principal,
        token: Option<NewToken>,
    },
}

impl AuthChange {
    /// Checks sizes and shapes that do not depend on the state.
    pub fn validate(&self) -> Result<(), LockError> {
        match self {
            AuthChange::Grant { prefix, .. } | AuthChange::Revoke { prefix, .. } => {
                super::check_prefix(prefix)
            }
            AuthChange::AddUser { roles, .. } | AuthChange::SetRoles { roles, .. } => {
                if roles.len() > limits::ROLES_PER_USER_MAX {
                    return Err(LockError::over_limit(
                        "roles",
                        Limit::RolesPerUserMax,
                        format!(
                            "{} roles; the limit ROLES_PER_USER_MAX is {}",
                            roles.len(),
                            limits::ROLES_PER_USER_MAX
                        ),
                    ));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// A one-line description for the audit trail.
    pub fn describe(&self) -> String {
        let roles = |roles: &BTreeSet<RoleName>| {
            let names: Vec<&str> = roles.iter().map(RoleName::as_str).collect();
            names.join(",")
        };
        match self {
            AuthChange::Enable => "auth enabled".into(),
            AuthChange::Disable => "auth disabled".into(),
            AuthChange::AddRole { role } => format!("role {role} added"),
            AuthChange::Grant {
                role,
                prefix,
                verb,
                deny,
            } => {
                let what = if *deny { "denies" } else { "allows" };
                format!("role {role} {what} {verb} on {prefix:?}")
            }
            AuthChange::Revoke { role, prefix, verb } => {
                format!("role {role} no longer mentions {verb} on {prefix:?}")
            }
            AuthChange::AddUser {
                principal,
                roles: r,
            } => {
                format!("user {principal} added with roles [{}]", roles(r))
            }
            AuthChange::SetRoles {
                principal,
                roles: r,
            } => {
                format!("user {principal} now has roles [{}]", roles(r))
            }
            AuthChange::SetQuota { principal, quota } => format!(
                "user {principal} quota: leases {:?}, held {:?}, waiters {:?}",
                quota.leases, quota.held, quota.waiters
            ),
            AuthChange::CreateToken { principal, token } => {
                format!("token {} created for {principal}", token.id)
            }
            AuthChange::RevokeToken { id } => format!("token {id} revoked"),
            AuthChange::Bootstrap { principal, .. } => {
                format!("bootstrap: {principal} is admin")
            }
        }
    }
}
