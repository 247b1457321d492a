//! Break-glass: freeing a lock from a holder that will not let go, and the
//! server's record of such incidents (force releases, and the releases it
//! refused, which is how `diagnose` spots a release sent to the wrong key).

use super::revision;
use crate::error::Error;
use crate::wire::IncidentsResponse;
use crate::Client;
use leasehold_core::{LeaseId, LockName, Revision, Token};
use leasehold_proto::v1::lock_client::LockClient;
use leasehold_proto::v1::{ForceReleaseRequest, IncidentsRequest};
use std::time::Duration;

/// What a force release asks: whose hold to break, why, and how far to go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForceRelease {
    /// The holder's token as the operator saw it: refused (`NotHolder`) if
    /// the lock changed hands since.
    pub expected_token: Token,
    /// Why (required, at most `FORCE_REASON_BYTES_MAX` bytes); kept in the
    /// incident record.
    pub reason: String,
    /// Who asks, as `user@host` (at most `FORCE_CALLER_BYTES_MAX` bytes).
    pub caller: String,
    /// Also free a holder that did not declare `fenced`: nothing rejects its
    /// late writes, so pass this only once the holder is known stopped.
    /// Without it such a holder is refused (`Unfenced`).
    pub allow_unfenced: bool,
    /// Revoke the holder's whole lease: every lock it holds is freed and its
    /// keep-alives fail, so a library holder sees the loss at its next
    /// renewal.
    pub revoke_lease: bool,
}

/// What a force release did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForceReleased {
    /// The lease that held the lock.
    pub lease: LeaseId,
    /// Whether that lease was revoked.
    pub revoked_lease: bool,
    /// Every lock freed: the named one, or all of the revoked lease's.
    pub released: Vec<String>,
    /// The revision of the release.
    pub revision: Revision,
}

impl Client {
    /// Frees `name` from its current holder on an operator's say-so. The
    /// reason and caller are checked against their limits before sending.
    /// The next waiter is granted as after a release, with a higher token.
    pub async fn force_release(
        &self,
        name: &LockName,
        force: &ForceRelease,
    ) -> Result<ForceReleased, Error> {
        leasehold_core::command::check_force(&force.reason, &force.caller)?;
        let request = ForceReleaseRequest {
            name: name.to_string(),
            expected_token: force.expected_token.0,
            reason: force.reason.clone(),
            allow_unfenced: force.allow_unfenced,
            revoke_lease: force.revoke_lease,
            caller: force.caller.clone(),
        };
        let reply = self
            .call("ForceRelease", Duration::ZERO, |channel| {
                let request = request.clone();
                async move { LockClient::new(channel).force_release(request).await }
            })
            .await
            .map_err(|error| {
                error
                    .about(name.as_str())
                    .presented(None, force.expected_token)
            })?;
        Ok(ForceReleased {
            lease: LeaseId(reply.lease),
            revoked_lease: reply.revoked_lease,
            released: reply.released,
            revision: revision(reply.header.as_ref()),
        })
    }

    /// The answering node's bounded memory of refused releases and of force
    /// releases, oldest first.
    pub async fn incidents(&self) -> Result<IncidentsResponse, Error> {
        self.call("Incidents", Duration::ZERO, |channel| async move {
            LockClient::new(channel)
                .incidents(IncidentsRequest {})
                .await
        })
        .await
    }
}
