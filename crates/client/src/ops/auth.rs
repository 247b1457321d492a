//! Who may do what (needs `admin` on "" while auth is enabled, but
//! [`Client::auth_status`] and [`Client::auth_bootstrap`]): enabling auth,
//! roles and their rules, users and their quotas, tokens (the secret is
//! returned by [`Client::token_create`] only), and the audit trail as a
//! stream. Each is one call of the `leasehold.v1.Auth` service through the
//! client's call path.

use crate::error::Error;
use crate::wire::{
    AuditRecord, AuthStatusResponse, CreateTokenResponse, ListRolesResponse, ListTokensResponse,
    ListUsersResponse,
};
use crate::Client;
use leasehold_proto::v1::auth_client::AuthClient;
use leasehold_proto::v1::*;
use std::time::Duration;
use tonic::Streaming;

/// A user's quotas as `user quota` sets them (`None`: only the global limits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuotaArgs {
    /// Live leases.
    pub leases: Option<u64>,
    /// Locks held (queued waits count too).
    pub held: Option<u64>,
    /// Waits queued.
    pub waiters: Option<u64>,
}

/// An open stream of audit records.
#[derive(Debug)]
pub struct AuditStream {
    inner: Streaming<AuditRecord>,
}

impl AuditStream {
    /// The next record; `Ok(None)` when the server ended the stream.
    pub async fn next(&mut self) -> Result<Option<AuditRecord>, Error> {
        self.inner
            .message()
            .await
            .map_err(|status| Error::from_status(&status).0)
    }
}

/// Declares a one-call method of the Auth service.
macro_rules! auth_call {
    ($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*) -> $out:ty, $rpc:ident, $request:expr) => {
        $(#[$doc])*
        pub async fn $name(&self, $($arg: $ty),*) -> Result<$out, Error> {
            let request = $request;
            self.call(stringify!($rpc), Duration::ZERO, |channel| {
                let request = request.clone();
                async move { AuthClient::new(channel).$rpc(request).await }
            })
            .await
        }
    };
}

impl Client {
    auth_call!(
        /// Starts refusing calls without the verb they need (refused unless
        /// some principal holds `admin` on "").
        auth_enable() -> AuthChangeResponse, enable, EnableAuthRequest {}
    );
    auth_call!(
        /// Stops refusing calls.
        auth_disable() -> AuthChangeResponse, disable, DisableAuthRequest {}
    );
    auth_call!(
        /// Whether auth is enabled, whether an admin exists, and who the
        /// server takes this client for.
        auth_status() -> AuthStatusResponse, status, AuthStatusRequest {}
    );
    auth_call!(
        /// From the server's own host, while nobody is admin: makes
        /// `principal` an admin and returns its one-time token.
        auth_bootstrap(principal: &str) -> CreateTokenResponse, bootstrap,
        BootstrapRequest { principal: principal.to_owned() }
    );
    auth_call!(
        /// Creates an empty role.
        role_add(role: &str) -> AuthChangeResponse, add_role,
        AddRoleRequest { role: role.to_owned() }
    );
    auth_call!(
        /// Allows (or with `deny`, denies) `verb` on `prefix` in `role`.
        role_grant(role: &str, prefix: &str, verb: &str, deny: bool) -> AuthChangeResponse, grant_role,
        GrantRoleRequest { role: role.to_owned(), prefix: prefix.to_owned(), verb: verb.to_owned(), deny }
    );
    auth_call!(
        /// Removes `verb` from `role`'s rule on `prefix`.
        role_revoke(role: &str, prefix: &str, verb: &str) -> AuthChangeResponse, revoke_role,
        RevokeRoleRequest { role: role.to_owned(), prefix: prefix.to_owned(), verb: verb.to_owned() }
    );
    auth_call!(
        /// Every role and its rules.
        roles() -> ListRolesResponse, list_roles, ListRolesRequest {}
    );
    auth_call!(
        /// Creates user `principal` with `roles`.
        user_add(principal: &str, roles: &[String]) -> AuthChangeResponse, add_user,
        AddUserRequest { principal: principal.to_owned(), roles: roles.to_vec() }
    );
    auth_call!(
        /// Replaces the roles of `principal`.
        user_roles(principal: &str, roles: &[String]) -> AuthChangeResponse, set_user_roles,
        SetUserRolesRequest { principal: principal.to_owned(), roles: roles.to_vec() }
    );
    auth_call!(
        /// Replaces the quotas of `principal`.
        user_quota(principal: &str, quota: QuotaArgs) -> AuthChangeResponse, set_user_quota,
        SetUserQuotaRequest { principal: principal.to_owned(), leases: quota.leases, held: quota.held, waiters: quota.waiters }
    );
    auth_call!(
        /// Every user, with roles, quotas and usage.
        users() -> ListUsersResponse, list_users, ListUsersRequest {}
    );
    auth_call!(
        /// Makes a token for `principal`, expiring after `expires_in`
        /// (`None`: never). The secret is in the reply only.
        token_create(principal: &str, expires_in: Option<Duration>) -> CreateTokenResponse, create_token,
        CreateTokenRequest {
            principal: principal.to_owned(),
            expires_in_ms: expires_in.map_or(0, |d| (d.as_millis() as u64).max(1)),
        }
    );
    auth_call!(
        /// Forgets token `id`: its next use is refused.
        token_revoke(id: &str) -> AuthChangeResponse, revoke_token,
        RevokeTokenRequest { id: id.to_owned() }
    );
    auth_call!(
        /// Every token (never a secret).
        tokens() -> ListTokensResponse, list_tokens, ListTokensRequest {}
    );

    /// Opens the audit trail from record `from_seq`; with `follow`, new
    /// records follow as they are applied.
    pub async fn audit(&self, from_seq: u64, follow: bool) -> Result<AuditStream, Error> {
        let request = AuditRequest { from_seq, follow };
        let inner = self
            .call("Audit", Duration::ZERO, |channel| async move {
                AuthClient::new(channel).audit(request).await
            })
            .await?;
        Ok(AuditStream { inner })
    }
}
