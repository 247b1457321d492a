//! `Lock.ForceRelease`: the break-glass release. Validates at the boundary
//! (request size, name, reason and caller, each error naming its limit),
//! proposes a `ForceRelease`, and maps the reply. The core decides whether
//! the named token still holds the lock and whether an unfenced holder may
//! be freed; the handler only logs what an operator did.

use super::propose::{ForceReleased, Proposal};
use super::{check_request_size, ApiError, Node};
use crate::auth::Caller;
use leasehold_core::{Command, ForceRelease, LockName, Token};
use leasehold_proto::v1::{ForceReleaseRequest, ForceReleaseResponse};

/// Validates a force release and turns it into the proposal.
fn parse(request: ForceReleaseRequest) -> Result<Proposal<ForceReleased>, ApiError> {
    check_request_size(&request)?;
    Ok(Proposal::force_release(ForceRelease {
        name: LockName::parse(&request.name)?,
        expected_token: Token(request.expected_token),
        reason: request.reason,
        caller: request.caller,
        allow_unfenced: request.allow_unfenced,
        revoke_lease: request.revoke_lease,
    })?)
}

/// Validates and performs one force release.
pub async fn force_release(
    node: &Node,
    caller: &Caller,
    request: ForceReleaseRequest,
) -> Result<ForceReleaseResponse, ApiError> {
    let proposal = caller.authorize(node, parse(request)?)?;
    let caller_name = caller.name();
    if let Command::ForceRelease {
        name,
        expected_token,
        reason,
        caller: note,
        ..
    } = proposal.command()
    {
        tracing::warn!(%name, token = expected_token.0, caller = note, principal = caller_name, reason, "force release requested");
    }
    let (forced, revision) = node.propose(proposal).await?;
    let ForceReleased {
        lease,
        released,
        lease_revoked,
    } = forced;
    tracing::warn!(
        lease = lease.0,
        ?released,
        lease_revoked,
        "force release applied"
    );
    Ok(ForceReleaseResponse {
        header: node.header(revision),
        lease: lease.0,
        revoked_lease: lease_revoked,
        released: released.iter().map(|name| name.to_string()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_core::limits;

    fn request(reason: &str) -> ForceReleaseRequest {
        ForceReleaseRequest {
            name: "db".into(),
            expected_token: 7,
            reason: reason.into(),
            allow_unfenced: false,
            revoke_lease: true,
            caller: "ops@bastion".into(),
        }
    }

    fn refusal(request: ForceReleaseRequest) -> String {
        parse(request).unwrap_err().to_string()
    }

    #[test]
    fn force_release_is_validated_at_the_boundary_naming_the_limit() {
        let parsed = parse(request("hung"));
        let Some(Command::ForceRelease {
            expected_token,
            revoke_lease,
            ..
        }) = parsed.as_ref().ok().map(Proposal::command)
        else {
            panic!("a valid request was refused");
        };
        assert_eq!((*expected_token, *revoke_lease), (Token(7), true));
        assert!(refusal(request("")).contains("invalid reason"));
        let long = "r".repeat(limits::FORCE_REASON_BYTES_MAX + 1);
        assert!(refusal(request(&long)).contains("FORCE_REASON_BYTES_MAX"));
        let mut caller = request("hung");
        caller.caller = "c".repeat(limits::FORCE_CALLER_BYTES_MAX + 1);
        assert!(refusal(caller).contains("FORCE_CALLER_BYTES_MAX"));
        let mut name = request("hung");
        name.name = String::new();
        assert!(refusal(name).contains("invalid name"));
    }
}
