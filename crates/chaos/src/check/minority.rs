//! Property 5: a node cut off from the majority grants, renews and
//! acquires nothing; a retried request (one request id) has one effect,
//! seen as no lease the workload was not granted.

use super::Violation;
use crate::history::History;
use std::collections::HashSet;

/// Every write sent to a cut-off node after the cut, and answered before
/// the heal, must have failed.
pub fn minority_writes(history: &History) -> Vec<Violation> {
    let wrong = history
        .probes
        .iter()
        .filter(|p| p.ok && p.invoked_ms > p.cut_ms && p.completed_ms < p.healed_ms);
    wrong
        .map(|p| Violation::MinorityWrite {
            node: p.node,
            op: p.op.clone(),
            at_ms: p.invoked_ms,
        })
        .collect()
}

/// Each lease listing holds no more unknown leases than the grants whose
/// answer never came (sent before the listing) can explain.
pub fn orphan_leases(history: &History) -> Vec<Violation> {
    let known: HashSet<u64> = history.leases.iter().map(|l| l.id).collect();
    let mut found = Vec::new();
    for listing in &history.lease_listings {
        let unknown = listing.ids.iter().filter(|id| !known.contains(id)).count();
        let pending = history
            .pending_grants_ms
            .iter()
            .filter(|t| **t < listing.invoked_ms)
            .count();
        if unknown > pending {
            found.push(Violation::OrphanLease {
                unknown,
                pending,
                at_ms: listing.invoked_ms,
            });
        }
    }
    found
}
