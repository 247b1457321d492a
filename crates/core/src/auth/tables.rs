//! Applying an [`AuthChange`] to the tables: every check that depends on the
//! state (a role or user exists, a table is full, an admin remains) is made
//! here, identically on every replica.

use super::{Auth, AuthChange, NewToken, Principal, Role, RoleName, StoredToken, User, Verb};
use crate::limits::Limit;
use crate::LockError;
use std::collections::BTreeSet;

impl Auth {
    /// Applies `change` at the proposer's wall time `at_unix_ms`; a refused
    /// change leaves the tables as they were.
    pub fn apply_change(&mut self, change: AuthChange, at_unix_ms: u64) -> Result<(), LockError> {
        change.validate()?;
        // Auth changes are rare and the role and user tables bounded: a
        // copy is the simplest way to undo a change refused half-way.
        let before = (self.roles.clone(), self.users.clone(), self.enabled);
        let applied = self.apply_checked(change, at_unix_ms);
        if applied.is_err() {
            (self.roles, self.users, self.enabled) = before;
        }
        applied
    }

    fn apply_checked(&mut self, change: AuthChange, at_unix_ms: u64) -> Result<(), LockError> {
        match change {
            AuthChange::Enable => {
                if !self.has_admin() {
                    return Err(LockError::invalid(
                        "enable",
                        "refused: no principal holds admin on \"\", so nobody could change auth again; run leasehold auth bootstrap (or leasehold role grant ROLE \"\" admin and leasehold user add PRINCIPAL --role ROLE) first",
                    ));
                }
                self.enabled = true;
            }
            AuthChange::Disable => self.enabled = false,
            AuthChange::AddRole { role } => self.add_role(role)?,
            AuthChange::Grant {
                role,
                prefix,
                verb,
                deny,
            } => self.grant(role, prefix, verb, deny)?,
            AuthChange::Revoke { role, prefix, verb } => self.revoke(&role, &prefix, verb)?,
            AuthChange::AddUser { principal, roles } => {
                if self.users.contains_key(&principal) {
                    return Err(LockError::invalid(
                        "principal",
                        format!(
                            "user {principal} exists; change its roles with leasehold user role"
                        ),
                    ));
                }
                self.check_table("users", self.users.len(), Limit::UsersMax)?;
                self.check_roles_exist(&roles)?;
                let user = User {
                    roles,
                    ..User::default()
                };
                self.users.insert(principal, user);
            }
            AuthChange::SetRoles { principal, roles } => {
                self.check_roles_exist(&roles)?;
                self.user_mut(&principal)?.roles = roles;
                self.check_admin_remains()?;
            }
            AuthChange::SetQuota { principal, quota } => self.user_mut(&principal)?.quota = quota,
            AuthChange::CreateToken { principal, token } => {
                self.user_mut(&principal)?;
                self.store_token(principal, token, at_unix_ms)?;
            }
            AuthChange::RevokeToken { id } => {
                if self.tokens.remove(&id).is_none() {
                    return Err(LockError::invalid(
                        "token_id",
                        format!("no token {id}; list them with leasehold token ls"),
                    ));
                }
            }
            AuthChange::Bootstrap { principal, token } => {
                self.bootstrap(principal, token, at_unix_ms)?
            }
        }
        Ok(())
    }

    fn add_role(&mut self, role: RoleName) -> Result<(), LockError> {
        if !self.roles.contains_key(&role) {
            self.check_table("roles", self.roles.len(), Limit::RolesMax)?;
            self.roles.insert(role, Role::default());
        }
        Ok(())
    }

    fn grant(
        &mut self,
        role: RoleName,
        prefix: String,
        verb: Verb,
        deny: bool,
    ) -> Result<(), LockError> {
        self.add_role(role.clone())?;
        let rules = &self.roles[&role].rules;
        if !rules.contains_key(&prefix) {
            self.check_table("rules", rules.len(), Limit::RulesPerRoleMax)?;
        }
        let rule = self
            .roles
            .get_mut(&role)
            .expect("added above")
            .rules
            .entry(prefix)
            .or_default();
        if deny {
            rule.deny.insert(verb);
        } else {
            rule.allow.insert(verb);
        }
        self.check_admin_remains()
    }

    fn revoke(&mut self, role: &RoleName, prefix: &str, verb: Verb) -> Result<(), LockError> {
        let Some(rules) = self.roles.get_mut(role).map(|r| &mut r.rules) else {
            return Err(no_role(role));
        };
        if let Some(rule) = rules.get_mut(prefix) {
            rule.allow.remove(&verb);
            rule.deny.remove(&verb);
            if rule.is_empty() {
                rules.remove(prefix);
            }
        }
        self.check_admin_remains()
    }

    fn bootstrap(
        &mut self,
        principal: Principal,
        token: Option<NewToken>,
        at_unix_ms: u64,
    ) -> Result<(), LockError> {
        if self.has_admin() {
            return Err(LockError::invalid(
                "bootstrap",
                "refused: an admin exists already; ask them for a token (leasehold token create PRINCIPAL)",
            ));
        }
        let admin = RoleName::parse("admin").expect("a valid role name");
        self.grant(admin.clone(), String::new(), Verb::Admin, false)?;
        if !self.users.contains_key(&principal) {
            self.check_table("users", self.users.len(), Limit::UsersMax)?;
        }
        let user = self.users.entry(principal.clone()).or_default();
        user.roles.insert(admin);
        if let Some(token) = token {
            self.store_token(principal, token, at_unix_ms)?;
        }
        assert!(self.has_admin(), "bootstrap made no admin");
        Ok(())
    }

    fn store_token(
        &mut self,
        principal: Principal,
        token: NewToken,
        at_unix_ms: u64,
    ) -> Result<(), LockError> {
        if self.tokens.contains_key(&token.id) {
            return Err(LockError::invalid(
                "token_id",
                format!("token {} exists; retry (ids are random)", token.id),
            ));
        }
        self.check_table("tokens", self.tokens.len(), Limit::TokensMax)?;
        let stored = StoredToken {
            id: token.id.clone(),
            principal,
            sha256: token.sha256,
            created_unix_ms: at_unix_ms,
            expires_unix_ms: token.expires_unix_ms,
        };
        self.tokens.insert(token.id, stored);
        Ok(())
    }

    fn user_mut(&mut self, principal: &Principal) -> Result<&mut User, LockError> {
        self.users.get_mut(principal).ok_or_else(|| {
            LockError::invalid(
                "principal",
                format!("no user {principal}; add it with leasehold user add {principal}"),
            )
        })
    }

    fn check_roles_exist(&self, roles: &BTreeSet<RoleName>) -> Result<(), LockError> {
        match roles.iter().find(|r| !self.roles.contains_key(*r)) {
            Some(role) => Err(no_role(role)),
            None => Ok(()),
        }
    }

    /// With auth enabled, a change that leaves nobody holding `admin` on ""
    /// is refused (and undone by `apply_change`), so nobody can lock
    /// everyone out.
    fn check_admin_remains(&self) -> Result<(), LockError> {
        if self.enabled && !self.has_admin() {
            return Err(LockError::invalid(
                "auth",
                "refused: after this change nobody would hold admin on \"\" while auth is enabled; grant admin to someone else first",
            ));
        }
        Ok(())
    }

    fn check_table(&self, what: &str, len: usize, limit: Limit) -> Result<(), LockError> {
        if len as u64 >= limit.value() {
            return Err(LockError::exhausted(limit, format!("{len} {what} exist")));
        }
        Ok(())
    }
}

fn no_role(role: &RoleName) -> LockError {
    LockError::invalid(
        "role",
        format!("no role {role}; create it with leasehold role add {role}"),
    )
}
