//! Liveness figures of a window: not promises the checker enforces, but
//! what users feel: the longest stretch with no grant at all, and how long
//! a dead holder's lock took to pass on to a waiter (against the README's
//! bound: ttl + 2 × election timeout + 0.5 s after the last renewal).

use crate::history::History;

/// README: a crashed holder's lock is free within ttl + 2 × election
/// timeout (1 s at most) + 0.5 s of its last renewal.
pub const PASS_ON_SLACK_MS: u64 = 2 * 1_000 + 500;

/// Liveness of one window.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Liveness {
    /// Longest time in the window with no grant completing.
    pub longest_no_grant_ms: u64,
    /// Abandoned holds passed on to a waiter that was already waiting.
    pub passed_on: usize,
    /// The longest of those, from the holder's last acknowledged renewal.
    pub pass_on_max_ms: u64,
    /// The bound it is held against (ttl + [`PASS_ON_SLACK_MS`]).
    pub pass_on_bound_ms: u64,
}

/// The figures of `[from_ms, to_ms)`.
pub fn of_window(history: &History, from_ms: u64, to_ms: u64) -> Liveness {
    let mut grants: Vec<u64> = history
        .holds
        .iter()
        .map(|h| h.acquire_completed_ms)
        .filter(|t| (from_ms..to_ms).contains(t))
        .collect();
    grants.sort_unstable();
    let mut longest = 0;
    let mut previous = from_ms;
    for t in grants.iter().copied().chain([to_ms]) {
        longest = longest.max(t - previous);
        previous = t;
    }
    let mut liveness = Liveness {
        longest_no_grant_ms: longest,
        ..Liveness::default()
    };
    for lease in &history.leases {
        let Some(abandoned) = lease.abandoned_ms.filter(|t| (from_ms..to_ms).contains(t)) else {
            continue;
        };
        let end_ms = lease.last_ack_ms + lease.ttl_ms;
        liveness.pass_on_bound_ms = lease.ttl_ms + PASS_ON_SLACK_MS;
        let held = history
            .holds
            .iter()
            .filter(|h| h.lease == lease.id && h.release_invoked_ms.is_none());
        for hold in held {
            let next = history
                .holds
                .iter()
                .filter(|n| n.lock == hold.lock && n.token > hold.token)
                .min_by_key(|n| n.token)
                .filter(|n| n.acquire_invoked_ms <= end_ms.max(abandoned));
            if let Some(next) = next {
                liveness.passed_on += 1;
                let took = next.acquire_completed_ms.saturating_sub(lease.last_ack_ms);
                liveness.pass_on_max_ms = liveness.pass_on_max_ms.max(took);
            }
        }
    }
    liveness
}
