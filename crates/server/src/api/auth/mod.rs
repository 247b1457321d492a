//! `leasehold.v1.Auth`: enabling auth, roles, users, quotas, tokens,
//! bootstrap and the audit trail. Every change is an `AuthChange` proposed
//! on the caller's behalf ([`Caller::authorize`] checks `admin` on "" here,
//! and apply checks it again); the lists are read from this node's applied
//! state after a read barrier.

mod audit;
mod tables;

use super::propose::Proposal;
use super::{ApiError, Node};
use crate::auth::{secret, Caller};
use crate::clock::wall_unix_ms;
use leasehold_core::auth::{AuthChange, Principal, Verb};
use leasehold_core::Command;
use leasehold_proto::v1::auth_server::Auth;
use leasehold_proto::v1::*;
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// The Auth service.
pub struct AuthApi {
    node: Arc<Node>,
}

impl AuthApi {
    /// The service over `node`.
    pub fn new(node: Arc<Node>) -> AuthApi {
        AuthApi { node }
    }

    /// Proposes `change` on behalf of the request's caller.
    async fn change<T>(
        &self,
        request: &Request<T>,
        change: Result<AuthChange, ApiError>,
    ) -> Result<Response<AuthChangeResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        let proposal =
            caller.authorize(&self.node, Proposal::auth(change?).map_err(ApiError::from)?)?;
        let ((), revision) = self.node.propose(proposal).await?;
        Ok(Response::new(AuthChangeResponse {
            header: self.node.header(revision),
        }))
    }

    /// The caller, checked for `admin` on "" (the lists and the audit).
    fn admin<T>(&self, request: &Request<T>) -> Result<Caller, ApiError> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        caller.check(&self.node, Verb::Admin, "")?;
        Ok(caller)
    }

    /// Makes a token for `principal` through `make` (a create or a
    /// bootstrap), proposed on `caller`'s behalf; the secret is only in
    /// the reply.
    async fn token(
        &self,
        caller: &Caller,
        principal: Principal,
        expires_in_ms: u64,
        make: fn(Principal, leasehold_core::auth::NewToken) -> AuthChange,
    ) -> Result<CreateTokenResponse, ApiError> {
        let expires_unix_ms =
            (expires_in_ms > 0).then(|| wall_unix_ms().saturating_add(expires_in_ms));
        let (secret, token) = secret::new_token(expires_unix_ms);
        let id = token.id.to_string();
        let proposal =
            caller.authorize(&self.node, Proposal::auth(make(principal.clone(), token))?)?;
        let ((), revision) = self.node.propose(proposal).await?;
        Ok(CreateTokenResponse {
            header: self.node.header(revision),
            id,
            secret,
            principal: principal.to_string(),
            expires_unix_ms: expires_unix_ms.unwrap_or(0),
        })
    }
}

#[tonic::async_trait]
impl Auth for AuthApi {
    async fn enable(
        &self,
        request: Request<EnableAuthRequest>,
    ) -> Result<Response<AuthChangeResponse>, Status> {
        self.change(&request, Ok(AuthChange::Enable)).await
    }

    async fn disable(
        &self,
        request: Request<DisableAuthRequest>,
    ) -> Result<Response<AuthChangeResponse>, Status> {
        self.change(&request, Ok(AuthChange::Disable)).await
    }

    async fn status(
        &self,
        request: Request<AuthStatusRequest>,
    ) -> Result<Response<AuthStatusResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        Ok(Response::new(self.node.state.read(|state| {
            AuthStatusResponse {
                header: self.node.header(state.revision()),
                enabled: state.auth().enabled(),
                admin_exists: state.auth().has_admin(),
                principal: caller.name().to_owned(),
            }
        })))
    }

    async fn add_role(
        &self,
        request: Request<AddRoleRequest>,
    ) -> Result<Response<AuthChangeResponse>, Status> {
        let change = tables::role(&request.get_ref().role).map(|role| AuthChange::AddRole { role });
        self.change(&request, change).await
    }

    async fn grant_role(
        &self,
        request: Request<GrantRoleRequest>,
    ) -> Result<Response<AuthChangeResponse>, Status> {
        let change = tables::grant(request.get_ref());
        self.change(&request, change).await
    }

    async fn revoke_role(
        &self,
        request: Request<RevokeRoleRequest>,
    ) -> Result<Response<AuthChangeResponse>, Status> {
        let change = tables::revoke(request.get_ref());
        self.change(&request, change).await
    }

    async fn list_roles(
        &self,
        request: Request<ListRolesRequest>,
    ) -> Result<Response<ListRolesResponse>, Status> {
        self.admin(&request)?;
        self.node.read_barrier().await?;
        Ok(Response::new(tables::list_roles(&self.node)))
    }

    async fn add_user(
        &self,
        request: Request<AddUserRequest>,
    ) -> Result<Response<AuthChangeResponse>, Status> {
        let r = request.get_ref();
        let change = tables::user(&r.principal, &r.roles)
            .map(|(principal, roles)| AuthChange::AddUser { principal, roles });
        self.change(&request, change).await
    }

    async fn set_user_roles(
        &self,
        request: Request<SetUserRolesRequest>,
    ) -> Result<Response<AuthChangeResponse>, Status> {
        let r = request.get_ref();
        let change = tables::user(&r.principal, &r.roles)
            .map(|(principal, roles)| AuthChange::SetRoles { principal, roles });
        self.change(&request, change).await
    }

    async fn set_user_quota(
        &self,
        request: Request<SetUserQuotaRequest>,
    ) -> Result<Response<AuthChangeResponse>, Status> {
        let change = tables::quota(request.get_ref());
        self.change(&request, change).await
    }

    async fn list_users(
        &self,
        request: Request<ListUsersRequest>,
    ) -> Result<Response<ListUsersResponse>, Status> {
        self.admin(&request)?;
        self.node.read_barrier().await?;
        Ok(Response::new(tables::list_users(&self.node)))
    }

    async fn create_token(
        &self,
        request: Request<CreateTokenRequest>,
    ) -> Result<Response<CreateTokenResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        let principal = tables::principal(&request.get_ref().principal)?;
        let make = |principal, token| AuthChange::CreateToken { principal, token };
        let created = self
            .token(&caller, principal, request.get_ref().expires_in_ms, make)
            .await?;
        Ok(Response::new(created))
    }

    async fn revoke_token(
        &self,
        request: Request<RevokeTokenRequest>,
    ) -> Result<Response<AuthChangeResponse>, Status> {
        let change =
            tables::token_id(&request.get_ref().id).map(|id| AuthChange::RevokeToken { id });
        self.change(&request, change).await
    }

    async fn list_tokens(
        &self,
        request: Request<ListTokensRequest>,
    ) -> Result<Response<ListTokensResponse>, Status> {
        self.admin(&request)?;
        self.node.read_barrier().await?;
        Ok(Response::new(tables::list_tokens(&self.node)))
    }

    async fn bootstrap(
        &self,
        request: Request<BootstrapRequest>,
    ) -> Result<Response<CreateTokenResponse>, Status> {
        let loopback = request
            .remote_addr()
            .is_some_and(|addr| addr.ip().is_loopback());
        if !loopback {
            return Err(ApiError::from(leasehold_core::LockError::Unauthenticated {
                why: "auth bootstrap is only accepted from a loopback address: run it on a server's own host".into(),
            })
            .into());
        }
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        let principal = tables::principal(&request.get_ref().principal)?;
        let make = |principal, token| AuthChange::Bootstrap {
            principal,
            token: Some(token),
        };
        let created = self.token(&caller, principal, 0, make).await?;
        Ok(Response::new(created))
    }

    type AuditStream = audit::AuditStream;

    async fn audit(
        &self,
        request: Request<AuditRequest>,
    ) -> Result<Response<Self::AuditStream>, Status> {
        self.admin(&request)?;
        Ok(Response::new(audit::spawn(
            self.node.clone(),
            request.into_inner(),
        )))
    }
}

/// `serve --bootstrap-admin`: once a leader is known, and if it is this
/// node, makes `principal` an admin (unless one exists) and prints its
/// one-time token on stderr.
pub async fn bootstrap_when_leading(node: Arc<Node>, principal: Principal) {
    let mut metrics = node.raft.metrics();
    let leader = loop {
        if let Some(leader) = metrics.borrow().current_leader {
            break leader;
        }
        if metrics.changed().await.is_err() {
            return;
        }
    };
    if leader != node.node_id || node.state.read(|state| state.auth().has_admin()) {
        return;
    }
    let (secret, token) = secret::new_token(None);
    let change = AuthChange::Bootstrap {
        principal: principal.clone(),
        token: Some(token),
    };
    match node
        .proposer
        .propose(Command::Auth(change))
        .await
        .map(|a| a.outcome)
    {
        Ok(Ok(_)) => eprintln!("bootstrap: {principal} is admin; its one-time token: {secret}"),
        Ok(Err(error)) => tracing::warn!(%error, "--bootstrap-admin refused"),
        Err(error) => tracing::warn!(%error, "--bootstrap-admin not applied"),
    }
}
