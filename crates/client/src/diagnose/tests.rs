//! Each verdict from hand-made observations; the real-process scenarios are
//! in the `leasehold` command's `tests/t140_diagnose.rs`.

use super::*;
use crate::wire::{Holder, LockKind, Waiter};

const NOW: i64 = 1_800_000_000_000;

fn owner(name: &str) -> OwnerInfo {
    OwnerInfo {
        owner: name.into(),
        host: "h".into(),
        pid: 42,
        ..Default::default()
    }
}

fn held(name: &str, token: u64, renewals: u64, remaining_ms: u64) -> LockInfo {
    LockInfo {
        name: name.into(),
        holder: Some(Holder {
            lease: 7,
            token,
            owner: Some(owner("alice")),
            lease_ttl_ms: 9_000,
            lease_remaining_ms: remaining_ms,
            acquired_unix_ms: NOW - 60_000,
            lease_renewed_unix_ms: NOW - 1_000,
            renewals,
            held_ms: 60_000,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn run(
    first: &LockInfo,
    second: &LockInfo,
    elapsed_ms: u64,
    failed: &[FailedRelease],
) -> Diagnosis {
    let seen = Observed {
        first: Some(first),
        second,
        elapsed_ms,
        now_unix_ms: NOW,
    };
    classify(&seen, failed, &Thresholds::default(), &|_| {
        OwnerProcess::Running
    })
}

#[test]
fn a_renewing_holder_is_healthy() {
    let d = run(&held("a", 5, 3, 6_000), &held("a", 5, 4, 8_500), 3_000, &[]);
    assert_eq!(d.verdict, Verdict::Healthy);
    assert!(
        d.evidence
            .iter()
            .any(|e| e.contains("renewed 1 time(s)") && e.contains("deadline moved 5.5s later")),
        "{d:?}"
    );
}

#[test]
fn a_static_countdown_is_an_orphan_and_says_what_comes_next() {
    let mut second = held("a", 5, 3, 3_000);
    second.waiters.push(Waiter {
        lease: 9,
        owner: Some(owner("bob")),
        since_unix_ms: NOW - 2_000,
        ..Default::default()
    });
    let d = run(&held("a", 5, 3, 6_000), &second, 3_000, &[]);
    assert_eq!(d.verdict, Verdict::Orphaned);
    let text = d.evidence.join("\n");
    assert!(
        text.contains("static") && text.contains("will expire in 3.0s"),
        "{text}"
    );
    assert!(text.contains("lease 9 owner bob"), "{text}");
    assert!(d.advice.contains("force-release a --token 5"), "{d:?}");
}

#[test]
fn too_short_a_sample_is_inconclusive_not_orphaned() {
    let d = run(&held("a", 5, 3, 6_000), &held("a", 5, 3, 5_000), 1_000, &[]);
    assert_eq!(d.verdict, Verdict::Healthy);
    assert!(
        d.evidence.iter().any(|e| e.contains("inconclusive")),
        "{d:?}"
    );
}

#[test]
fn a_gone_owner_is_named_first() {
    let first = held("a", 5, 3, 6_000);
    let seen = Observed {
        first: Some(&first),
        second: &held("a", 5, 3, 3_000),
        elapsed_ms: 3_000,
        now_unix_ms: NOW,
    };
    let d = classify(&seen, &[], &Thresholds::default(), &|_| OwnerProcess::Gone);
    assert_eq!(d.verdict, Verdict::OwnerGone);
    assert_eq!(d.findings, vec![Verdict::OwnerGone, Verdict::Orphaned]);
}

#[test]
fn a_release_to_a_near_name_by_the_same_owner_is_a_wrong_key_release() {
    let lock = held("prod/reports/nightly", 5, 3, 8_000);
    let miss = FailedRelease {
        name: "reports/nightly".into(),
        lease: 7,
        token: 5,
        owner: "alice".into(),
        at_unix_ms: NOW - 5_000,
        error: "no such lock".into(),
        ..Default::default()
    };
    let d = run(
        &held("prod/reports/nightly", 5, 2, 6_000),
        &lock,
        3_000,
        std::slice::from_ref(&miss),
    );
    assert_eq!(d.verdict, Verdict::WrongKeyRelease);
    assert!(
        d.evidence.join("\n").contains("\"reports/nightly\""),
        "{d:?}"
    );
    // Before this holder got the lock, or by someone else: not this holder's.
    let earlier = FailedRelease {
        at_unix_ms: NOW - 120_000,
        ..miss.clone()
    };
    // Another lease with the same owner name (names are often shared).
    let same_name = FailedRelease {
        lease: 8,
        ..miss.clone()
    };
    // A name merely under the same parent is not a near miss.
    let sibling = FailedRelease {
        name: "prod/reports/weekly-rollup".into(),
        nearby: vec!["prod/reports/nightly".into()],
        ..miss
    };
    let d = run(&lock, &lock, 3_000, &[earlier, same_name, sibling]);
    assert!(!d.findings.contains(&Verdict::WrongKeyRelease), "{d:?}");
}

#[test]
fn renewing_far_past_the_prefix_p99_is_past_work() {
    let mut lock = held("jobs/a", 5, 30, 8_000);
    lock.prefix_hold_p99_ms = 2_000;
    lock.prefix_holds = 20;
    let d = run(&held("jobs/a", 5, 29, 6_000), &lock, 3_000, &[]);
    assert_eq!(d.verdict, Verdict::RenewingPastWork);
    assert!(d.evidence.join("\n").contains("\"jobs/\""), "{d:?}");
    lock.prefix_holds = 2;
    let d = run(&held("jobs/a", 5, 29, 6_000), &lock, 3_000, &[]);
    assert_eq!(d.verdict, Verdict::Healthy, "too few holds to judge");
}

#[test]
fn waiters_queued_for_several_ttls_are_starving() {
    let mut lock = held("a", 5, 4, 8_000);
    lock.waiters.push(Waiter {
        lease: 9,
        owner: Some(owner("bob")),
        since_unix_ms: NOW - 28_000,
        ..Default::default()
    });
    let d = run(&held("a", 5, 3, 6_000), &lock, 3_000, &[]);
    assert_eq!(d.verdict, Verdict::StarvingWaiters);
    lock.waiters[0].since_unix_ms = NOW - 20_000;
    let d = run(&held("a", 5, 3, 6_000), &lock, 3_000, &[]);
    assert_eq!(d.verdict, Verdict::Healthy);
}

#[test]
fn clock_skew_beyond_the_round_trip_and_threshold_is_reported() {
    let limits = Thresholds::default();
    assert!(clock_skew(900, 5, 1, &limits).is_none());
    assert!(clock_skew(1_500, 600, 1, &limits).is_none());
    let d = clock_skew(-5_000, 2, 3, &limits).unwrap();
    assert_eq!(d.verdict, Verdict::ClockSkew);
    assert!(
        d.evidence[0].contains("node 3") && d.evidence[0].contains("behind"),
        "{d:?}"
    );
}

#[test]
fn each_grant_of_a_semaphore_is_judged_and_an_orphan_is_freed_by_its_lease() {
    let semaphore = |renewals_of_8: u64, remaining_of_8: u64| {
        let mut lock = held("db/slots", 5, 3, 6_000);
        let grant = lock.holder.take().expect("held");
        lock.kind = LockKind::Semaphore.into();
        lock.holders = vec![
            Holder {
                permits: 2,
                ..grant.clone()
            },
            Holder {
                lease: 8,
                token: 6,
                permits: 1,
                renewals: renewals_of_8,
                lease_remaining_ms: remaining_of_8,
                ..grant
            },
        ];
        lock
    };
    let (first, mut second) = (semaphore(2, 8_000), semaphore(2, 5_000));
    second.holders[0].renewals = 4;
    second.holders[0].lease_remaining_ms = 8_500;
    let d = run(&first, &second, 3_000, &[]);
    assert_eq!(d.verdict, Verdict::Orphaned, "{:?}", d.evidence);
    assert!(!d.evidence.iter().any(|e| e == "free"), "{:?}", d.evidence);
    for shown in [
        "held by lease 7 token 5 (2 permit(s))",
        "held by lease 8 token 6 (1 permit(s))",
        "a live renewer",
        "a static countdown",
    ] {
        assert!(
            d.evidence.iter().any(|e| e.contains(shown)),
            "{shown:?} missing from {:?}",
            d.evidence
        );
    }
    assert!(
        d.advice.contains("`leasehold lease revoke 8`"),
        "{}",
        d.advice
    );
}

#[test]
fn a_queue_starving_behind_a_semaphore_is_named() {
    let mut semaphore = held("db/slots", 5, 4, 8_500);
    let grant = semaphore.holder.take().expect("held");
    semaphore.kind = LockKind::Semaphore.into();
    semaphore.holders = vec![Holder {
        permits: 1,
        ..grant
    }];
    semaphore.waiters = vec![Waiter {
        lease: 9,
        permits: 1,
        since_unix_ms: NOW - 60_000,
        ..Default::default()
    }];
    let mut before = semaphore.clone();
    before.holders[0].renewals = 3;
    before.holders[0].lease_remaining_ms = 6_000;
    let d = run(&before, &semaphore, 3_000, &[]);
    assert_eq!(d.verdict, Verdict::StarvingWaiters, "{:?}", d.evidence);
}

#[test]
fn a_free_lock_kept_for_a_set_says_for_whom() {
    let kept = LockInfo {
        name: "accounts/bob".into(),
        waiters: vec![Waiter {
            lease: 12,
            owner: Some(owner("carol")),
            since_unix_ms: NOW - 1_000,
            ..Default::default()
        }],
        ..Default::default()
    };
    let d = run(&kept, &kept, 3_000, &[]);
    assert_eq!(d.verdict, Verdict::Healthy);
    assert!(
        d.evidence
            .iter()
            .any(|e| e.contains("kept for lease 12") && e.contains("several locks at once")),
        "{:?}",
        d.evidence
    );
}
