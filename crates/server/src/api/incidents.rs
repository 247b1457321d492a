//! `Lock.Incidents`: the server's bounded memories of refused releases and
//! force releases, for `diagnose` (a release sent to the wrong key shows up
//! here with the held names that look like it) and for the incident record.
//! Answered from this node's applied state: both memories are replicated,
//! so every node has them.

use super::{ApiError, Node};
use crate::auth::Caller;
use leasehold_core::auth::Verb;
use leasehold_proto::v1 as pb;

/// Every remembered failed and force release, oldest first (they span
/// every name: reading them needs observe on everything).
pub fn incidents(node: &Node, caller: &Caller) -> Result<pb::IncidentsResponse, ApiError> {
    caller.check(node, Verb::Observe, "")?;
    Ok(node.state.read(|state| pb::IncidentsResponse {
        header: node.header(state.revision()),
        failed_releases: failed_releases(state),
        force_releases: state
            .force_releases()
            .map(|record| pb::ForceReleaseRecord {
                name: record.name.to_string(),
                token: record.token.0,
                lease: record.lease.0,
                owner: record.owner.clone(),
                reason: record.reason.clone(),
                caller: record.caller.clone(),
                lease_revoked: record.lease_revoked,
                at_unix_ms: record.at_unix_ms as i64,
            })
            .collect(),
    }))
}

/// The state's memory of failed releases, oldest first, as the wire shows
/// them (also the live page's input to `diagnose`'s verdicts).
pub fn failed_releases(state: &leasehold_core::State) -> Vec<pb::FailedRelease> {
    state
        .failed_releases()
        .map(|failed| pb::FailedRelease {
            name: failed.name.to_string(),
            lease: failed.lease.0,
            token: failed.token.0,
            owner: failed.owner.clone(),
            nearby: failed.nearby.clone(),
            at_unix_ms: failed.at_unix_ms as i64,
            error: failed.error.clone(),
        })
        .collect()
}
