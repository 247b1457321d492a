//! [`Caller`]: the principal of one request and the permission check every
//! API operation makes through it (one call per operation file).
//!
//! The principal comes from `authorization: Bearer <secret>` metadata
//! (verified by one SHA-256 and a constant-time compare against the
//! replicated token table), else from the client certificate, else the
//! caller is anonymous. With auth enabled an anonymous caller, or a bad,
//! revoked or expired token, is `Unauthenticated`; with auth disabled a
//! token that verifies still names the caller (leases record it), and one
//! that does not is ignored, as before auth existed.

use super::secret;
use crate::api::propose::Proposal;
use crate::api::{ApiError, Node};
use crate::clock::wall_unix_ms;
use leasehold_core::auth::{AuditEntry, AuditKind, Principal, Verb};
use leasehold_core::LockError;
use tonic::metadata::MetadataMap;
use tonic::transport::server::{TcpConnectInfo, TlsConnectInfo};
use tonic::Extensions;

/// The metadata key of the bearer token.
pub const AUTHORIZATION: &str = "authorization";

/// Who is calling.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Caller {
    /// The authenticated principal; `None`: anonymous (only possible while
    /// auth is disabled, or before [`Caller::identify`] refused it).
    pub principal: Option<Principal>,
    /// The bearer token that named the principal (its secret and digest),
    /// so a long-lived stream can re-check it: a token revoked or expired
    /// while the stream is open stops working at the stream's next message.
    bearer: Option<Bearer>,
}

/// A verified bearer token, as the caller presented it.
#[derive(Clone, PartialEq, Eq)]
struct Bearer {
    secret: String,
    sha256: [u8; 32],
}

impl std::fmt::Debug for Bearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Bearer(..)") // never the secret
    }
}

impl Caller {
    /// Identifies the caller of a request with `metadata` and `extensions`
    /// (where the TLS layer left the client's certificate chain).
    pub fn identify(
        node: &Node,
        metadata: &MetadataMap,
        extensions: &Extensions,
    ) -> Result<Caller, ApiError> {
        let bearer = bearer_secret(metadata.get(AUTHORIZATION).and_then(|v| v.to_str().ok()));
        let presented = bearer.map(|secret| Bearer {
            secret: secret.to_owned(),
            sha256: secret::digest(secret),
        });
        let (enabled, found) = node.state.read(|state| {
            let auth = state.auth();
            let found = presented.as_ref().map(|bearer| {
                auth.authenticate(&bearer.secret, &bearer.sha256, wall_unix_ms())
                    .cloned()
            });
            (auth.enabled(), found)
        });
        let (principal, bearer) = match found {
            Some(Ok(principal)) => (Some(principal), presented),
            Some(Err(refusal)) if enabled => {
                let why = refusal.to_string();
                node.refusals.report(refused_entry("", None, "", &why));
                return Err(LockError::Unauthenticated { why }.into());
            }
            _ => (certificate_principal(extensions), None),
        };
        if enabled && principal.is_none() {
            let error = LockError::anonymous();
            node.refusals
                .report(refused_entry("", None, "", &error.to_string()));
            return Err(error.into());
        }
        Ok(Caller { principal, bearer })
    }

    /// For a stream's later messages: `Unauthenticated` if the bearer token
    /// that opened it has since been revoked or has expired (while auth is
    /// enabled); nothing to re-check for a certificate or anonymous caller.
    pub fn still_authenticated(&self, node: &Node) -> Result<(), ApiError> {
        let Some(bearer) = &self.bearer else {
            return Ok(());
        };
        let checked = node.state.read(|state| {
            let auth = state.auth();
            if !auth.enabled() {
                return Ok(());
            }
            auth.authenticate(&bearer.secret, &bearer.sha256, wall_unix_ms())
                .map(|_| ())
                .map_err(|refusal| refusal.to_string())
        });
        checked.map_err(|why| {
            node.refusals
                .report(refused_entry(self.name(), None, "", &why));
            LockError::Unauthenticated { why }.into()
        })
    }

    /// Checks that the caller may do `verb` on `name` (a read: `observe`;
    /// an admin operation: `admin` on ""), auditing a refusal.
    pub fn check(&self, node: &Node, verb: Verb, name: &str) -> Result<(), ApiError> {
        let checked = node
            .state
            .read(|state| state.auth().check(self.principal.as_ref(), verb, name));
        self.refused_if(node, checked, Some(verb), name)
    }

    /// Checks `proposal` for the caller against the state as this node has
    /// it (the same check apply makes again: the verb on the name, and that
    /// a lease named is the caller's own or the caller an admin), auditing
    /// a refusal, and returns it to be proposed on the caller's behalf.
    pub fn authorize<R>(
        &self,
        node: &Node,
        proposal: Proposal<R>,
    ) -> Result<Proposal<R>, ApiError> {
        let checked = node
            .state
            .read(|state| state.authorize(self.principal.as_ref(), proposal.command()));
        let name = proposal.command().subject();
        self.refused_if(node, checked, None, &name)?;
        Ok(match &self.principal {
            Some(principal) => proposal.on_behalf_of(principal.clone()),
            None => proposal,
        })
    }

    /// The caller's principal as text (`""`: anonymous).
    pub fn name(&self) -> &str {
        self.principal.as_ref().map_or("", Principal::as_str)
    }

    fn refused_if(
        &self,
        node: &Node,
        checked: Result<(), LockError>,
        verb: Option<Verb>,
        name: &str,
    ) -> Result<(), ApiError> {
        let Err(error) = checked else {
            return Ok(());
        };
        let verb = match &error {
            LockError::PermissionDenied { verb, .. } => Some(*verb),
            _ => verb,
        };
        let entry = refused_entry(self.name(), verb, name, &error.to_string());
        node.refusals.report(entry);
        Err(error.into())
    }
}

/// The principal a request names, refusing and auditing nothing: its
/// bearer token's if the token verifies, else its client certificate's.
/// For the bounds counted per principal before a call reaches its handler
/// ([`crate::connections`]); the handler identifies the caller again with
/// [`Caller::identify`], which refuses what this passes over.
pub fn principal_of(
    node: &Node,
    authorization: Option<&str>,
    extensions: &Extensions,
) -> Option<Principal> {
    let by_token = bearer_secret(authorization).and_then(|secret| {
        let sha256 = secret::digest(secret);
        node.state.read(|state| {
            let found = state.auth().authenticate(secret, &sha256, wall_unix_ms());
            found.ok().cloned()
        })
    });
    by_token.or_else(|| certificate_principal(extensions))
}

/// The secret of an `authorization: Bearer <secret>` value.
fn bearer_secret(authorization: Option<&str>) -> Option<&str> {
    authorization?.strip_prefix("Bearer ").map(str::trim)
}

/// The principal of the request's client certificate (SAN URI or DNS name,
/// else CN), if it presented one.
fn certificate_principal(extensions: &Extensions) -> Option<Principal> {
    let info = extensions.get::<TlsConnectInfo<TcpConnectInfo>>()?;
    crate::tls::chain_principal(&info.peer_certs()?)
}

fn refused_entry(principal: &str, verb: Option<Verb>, name: &str, why: &str) -> AuditEntry {
    AuditEntry {
        kind: AuditKind::Refused,
        principal: principal.to_owned(),
        verb,
        name: name.to_owned(),
        detail: why.to_owned(),
    }
}
