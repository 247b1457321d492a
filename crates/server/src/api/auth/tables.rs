//! The Auth service's wire conversions: requests to validated
//! [`AuthChange`]s (each field checked at the boundary, its error naming
//! the field), and the auth tables to list replies.

use crate::api::{ApiError, Node};
use leasehold_core::auth::{check_prefix, AuthChange, Principal, Quota, RoleName, TokenId, Verb};
use leasehold_proto::v1 as pb;
use std::collections::BTreeSet;

/// A validated role name.
pub fn role(raw: &str) -> Result<RoleName, ApiError> {
    Ok(RoleName::parse(raw)?)
}

/// A validated principal.
pub fn principal(raw: &str) -> Result<Principal, ApiError> {
    Ok(Principal::parse(raw)?)
}

/// A validated token id.
pub fn token_id(raw: &str) -> Result<TokenId, ApiError> {
    Ok(TokenId::parse(raw)?)
}

/// A user's principal and roles.
pub fn user(raw: &str, roles: &[String]) -> Result<(Principal, BTreeSet<RoleName>), ApiError> {
    let roles = roles.iter().map(|r| role(r)).collect::<Result<_, _>>()?;
    Ok((principal(raw)?, roles))
}

/// `role grant`.
pub fn grant(request: &pb::GrantRoleRequest) -> Result<AuthChange, ApiError> {
    check_prefix(&request.prefix)?;
    Ok(AuthChange::Grant {
        role: role(&request.role)?,
        prefix: request.prefix.clone(),
        verb: Verb::parse(&request.verb)?,
        deny: request.deny,
    })
}

/// `role revoke`.
pub fn revoke(request: &pb::RevokeRoleRequest) -> Result<AuthChange, ApiError> {
    check_prefix(&request.prefix)?;
    Ok(AuthChange::Revoke {
        role: role(&request.role)?,
        prefix: request.prefix.clone(),
        verb: Verb::parse(&request.verb)?,
    })
}

/// `user quota`.
pub fn quota(request: &pb::SetUserQuotaRequest) -> Result<AuthChange, ApiError> {
    Ok(AuthChange::SetQuota {
        principal: principal(&request.principal)?,
        quota: Quota {
            leases: request.leases,
            held: request.held,
            waiters: request.waiters,
        },
    })
}

fn words(verbs: &BTreeSet<Verb>) -> Vec<String> {
    verbs.iter().map(|v| v.as_str().to_owned()).collect()
}

/// Every role and its rules.
pub fn list_roles(node: &Node) -> pb::ListRolesResponse {
    node.state.read(|state| pb::ListRolesResponse {
        header: node.header(state.revision()),
        roles: state
            .auth()
            .roles()
            .iter()
            .map(|(name, role)| pb::RoleInfo {
                name: name.to_string(),
                rules: role
                    .rules
                    .iter()
                    .map(|(prefix, rule)| pb::RoleRule {
                        prefix: prefix.clone(),
                        allow: words(&rule.allow),
                        deny: words(&rule.deny),
                    })
                    .collect(),
            })
            .collect(),
    })
}

/// Every user, its roles, quotas and usage.
pub fn list_users(node: &Node) -> pb::ListUsersResponse {
    node.state.read(|state| {
        let auth = state.auth();
        let users = auth.users().iter().map(|(principal, user)| {
            let usage = auth.usage(principal);
            pb::UserInfo {
                principal: principal.to_string(),
                roles: user.roles.iter().map(|r| r.to_string()).collect(),
                quota_leases: user.quota.leases,
                quota_held: user.quota.held,
                quota_waiters: user.quota.waiters,
                leases: usage.leases,
                held: usage.held,
                waiters: usage.waiters,
            }
        });
        pb::ListUsersResponse {
            header: node.header(state.revision()),
            users: users.collect(),
        }
    })
}

/// Every token, without secrets.
pub fn list_tokens(node: &Node) -> pb::ListTokensResponse {
    node.state.read(|state| pb::ListTokensResponse {
        header: node.header(state.revision()),
        tokens: state
            .auth()
            .tokens()
            .values()
            .map(|token| pb::TokenInfo {
                id: token.id.to_string(),
                principal: token.principal.to_string(),
                created_unix_ms: token.created_unix_ms,
                expires_unix_ms: token.expires_unix_ms.unwrap_or(0),
            })
            .collect(),
    })
}
