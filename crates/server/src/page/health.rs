//! Each lock's health on the live page, as `leasehold diagnose` judges it:
//! the verdicts are [`leasehold_client::diagnose::classify`], called here
//! with the inputs the command line gathers, so the page and the command
//! line cannot disagree about what "orphaned" means.
//!
//! `diagnose` compares two samples of a lock taken an interval apart. The
//! page has one poll, but the server keeps what a first sample would have
//! shown: the lease's renewal count and the time of its last renewal. The
//! earlier sample is rebuilt as of [`lookback_ms`] ago (half the ttl:
//! longer than a keeper's renewal interval, ttl/3, so a live renewer always
//! shows a renewal; shorter than the ttl, so an orphan is named while it
//! still holds): the same holder with one renewal fewer if the lease was
//! renewed since then, else with the same count and the countdown that
//! much higher (a static countdown); no holder if the lock was granted
//! since. Owners' processes are looked for on the server's host, as the
//! command line looks on its own.

use leasehold_client::diagnose::{self, Observed, Thresholds};
use leasehold_client::owner_process;
use leasehold_proto::v1 as pb;
use serde_json::{json, Value};

/// How far back the rebuilt first sample is, for a lease of `ttl_ms`.
fn lookback_ms(ttl_ms: u64) -> u64 {
    ttl_ms / 2
}

/// `lock`'s health as `diagnose` judges it at `now_unix_ms` (server wall
/// time), given the server's memory of `failed` releases: the verdict, every
/// finding, the evidence and the advice.
pub fn health(lock: &pb::LockInfo, failed: &[pb::FailedRelease], now_unix_ms: i64) -> Value {
    // A semaphore's or read-write lock's grants share one lookback: the
    // shortest lease's, so none of them expires within it.
    let ttl_ms = diagnose::shortest_ttl_ms(lock).unwrap_or(0);
    let elapsed_ms = lookback_ms(ttl_ms);
    let first = earlier(lock, elapsed_ms, now_unix_ms);
    let seen = Observed {
        first: first.as_ref(),
        second: lock,
        elapsed_ms,
        now_unix_ms,
    };
    let found = diagnose::classify(&seen, failed, &Thresholds::default(), &owner_process);
    let findings: Vec<&str> = found.findings.iter().map(|v| v.as_str()).collect();
    json!({
        "verdict": found.verdict.as_str(),
        "findings": findings,
        "evidence": found.evidence,
        "advice": found.advice,
    })
}

/// The lock as a sample taken `elapsed_ms` before `now_unix_ms` would have
/// shown it (see the module doc); `None` if it was not held by this holder.
/// A semaphore's or read-write lock's grants are each rebuilt so; one
/// granted since is left out of the earlier sample.
fn earlier(lock: &pb::LockInfo, elapsed_ms: u64, now_unix_ms: i64) -> Option<pb::LockInfo> {
    let then_unix_ms = now_unix_ms.saturating_sub(elapsed_ms as i64);
    if !lock.holders.is_empty() {
        let before = lock.holders.iter();
        let before = before.filter_map(|h| holder_then(h, elapsed_ms, then_unix_ms));
        return Some(pb::LockInfo {
            holders: before.collect(),
            ..lock.clone()
        });
    }
    let before = holder_then(lock.holder.as_ref()?, elapsed_ms, then_unix_ms)?;
    Some(pb::LockInfo {
        holder: Some(before),
        ..lock.clone()
    })
}

/// `holder` as it was at `then_unix_ms`, `elapsed_ms` ago; `None` if it
/// was granted since.
fn holder_then(holder: &pb::Holder, elapsed_ms: u64, then_unix_ms: i64) -> Option<pb::Holder> {
    if holder.acquired_unix_ms > then_unix_ms {
        return None;
    }
    let mut before = holder.clone();
    if holder.lease_renewed_unix_ms > then_unix_ms && holder.renewals > 0 {
        before.renewals = holder.renewals - 1;
    } else {
        before.lease_remaining_ms = holder.lease_remaining_ms.saturating_add(elapsed_ms);
    }
    before.held_ms = holder.held_ms.saturating_sub(elapsed_ms);
    Some(before)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_000_000;

    /// A lock held for `held_ms` on a 30 s lease last renewed `renewed_ago_ms`
    /// ago (`renewals` times), owned by a process on another host.
    fn held(held_ms: u64, renewed_ago_ms: i64, renewals: u64) -> pb::LockInfo {
        pb::LockInfo {
            name: "jobs/a".into(),
            holder: Some(pb::Holder {
                lease: 7,
                token: 3,
                owner: Some(pb::OwnerInfo {
                    owner: "worker".into(),
                    host: "elsewhere.invalid".into(),
                    pid: 42,
                    ..Default::default()
                }),
                lease_ttl_ms: 30_000,
                lease_remaining_ms: 30_000 - renewed_ago_ms as u64,
                acquired_unix_ms: NOW - held_ms as i64,
                lease_renewed_unix_ms: NOW - renewed_ago_ms,
                renewals,
                held_ms,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn verdict(lock: &pb::LockInfo) -> Value {
        health(lock, &[], NOW)["verdict"].clone()
    }

    #[test]
    fn a_renewer_is_healthy_and_a_static_countdown_is_orphaned() {
        assert_eq!(verdict(&held(120_000, 5_000, 12)), "healthy");
        assert_eq!(verdict(&held(120_000, 20_000, 12)), "orphaned");
        // Never renewed, but granted less than half a ttl ago: too soon to say.
        assert_eq!(verdict(&held(10_000, 10_000, 0)), "healthy");
        assert_eq!(verdict(&held(16_000, 16_000, 0)), "orphaned");
    }

    #[test]
    fn each_grant_of_a_semaphore_is_judged_on_its_own_lease() {
        let grant = |lease, renewed_ago_ms| {
            let mut grant = held(120_000, renewed_ago_ms, 12).holder.unwrap();
            (grant.lease, grant.token, grant.permits) = (lease, lease + 10, 1);
            grant
        };
        let semaphore = |holders| pb::LockInfo {
            name: "jobs/slots".into(),
            kind: pb::LockKind::Semaphore.into(),
            permits: 2,
            holders,
            ..Default::default()
        };
        assert_eq!(
            verdict(&semaphore(vec![grant(1, 5_000), grant(2, 4_000)])),
            "healthy"
        );
        let found = health(
            &semaphore(vec![grant(1, 5_000), grant(2, 20_000)]),
            &[],
            NOW,
        );
        assert_eq!(found["verdict"], "orphaned", "{found}");
        assert!(
            found["advice"]
                .as_str()
                .unwrap()
                .contains("leasehold lease revoke 2"),
            "{found}"
        );
    }

    #[test]
    fn a_free_lock_is_healthy_and_a_starving_queue_is_named() {
        let free = pb::LockInfo {
            name: "jobs/free".into(),
            ..Default::default()
        };
        assert_eq!(verdict(&free), "healthy");
        let mut starving = held(400_000, 5_000, 40);
        starving.waiters.push(pb::Waiter {
            lease: 8,
            since_unix_ms: NOW - 100_000,
            ..Default::default()
        });
        let found = health(&starving, &[], NOW);
        assert_eq!(found["verdict"], "starving-waiters", "{found}");
        assert!(found["advice"].as_str().unwrap().contains("--max-hold"));
    }
}
