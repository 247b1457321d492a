//! Properties 4-6 of the checker, each against a small history that keeps
//! it and the same history with one violation planted.

use leasehold_chaos::check::{self, Violation};
use leasehold_chaos::history::{
    History, Hold, Lease, LeaseListing, LockRead, Pending, Probe, Put, Read,
};

fn lease(id: u64) -> Lease {
    Lease {
        id,
        ttl_ms: 2_000,
        granted_invoked_ms: 0,
        renewals_sent_ms: vec![],
        revoke_invoked_ms: None,
        last_ack_ms: 10,
        abandoned_ms: None,
    }
}

fn hold(
    token: u64,
    lease: u64,
    invoked: u64,
    completed: u64,
    released: Option<(u64, u64)>,
) -> Hold {
    Hold {
        lock: "a".into(),
        token,
        lease,
        acquire_invoked_ms: invoked,
        acquire_completed_ms: completed,
        release_invoked_ms: released.map(|r| r.0),
        release_completed_ms: released.map(|r| r.1),
    }
}

fn put(token: u64, value: &str, invoked: u64, completed: u64, accepted: bool) -> Put {
    Put {
        key: "a".into(),
        token,
        value: value.into(),
        invoked_ms: invoked,
        completed_ms: completed,
        accepted,
    }
}

/// Lease 1 holds `a` (token 5) from 10 to a release at 100-110; lease 2
/// holds it (token 9) from 120 on, until its lease could end at 2_120+.
fn two_holders() -> History {
    let mut second = lease(2);
    second.granted_invoked_ms = 115;
    second.last_ack_ms = 121;
    second.renewals_sent_ms = vec![115];
    History {
        leases: vec![lease(1), second],
        holds: vec![
            hold(5, 1, 5, 10, Some((100, 110))),
            hold(9, 2, 115, 120, None),
        ],
        puts: vec![put(5, "x", 20, 30, true), put(9, "y", 130, 140, true)],
        ..History::default()
    }
}

fn found(history: &History) -> Vec<Violation> {
    check::all(history, 1.0)
}

#[test]
fn the_base_history_keeps_every_property() {
    let mut history = two_holders();
    history.reads.push(Read {
        key: "a".into(),
        invoked_ms: 150,
        completed_ms: 160,
        observed: Some((9, "y".into())),
    });
    history.lock_reads.push(LockRead {
        lock: "a".into(),
        invoked_ms: 150,
        completed_ms: 160,
        holder: Some(9),
    });
    assert_eq!(found(&history), vec![]);
}

#[test]
fn a_read_that_misses_an_acknowledged_put_is_a_lost_put() {
    let mut history = two_holders();
    history.reads.push(Read {
        key: "a".into(),
        invoked_ms: 150,
        completed_ms: 160,
        observed: Some((5, "x".into())),
    });
    let found = found(&history);
    assert!(
        matches!(
            found.as_slice(),
            [Violation::LostPut {
                acknowledged: 9,
                seen: 5,
                ..
            }]
        ),
        "{found:?}"
    );
    assert_eq!(found[0].property(), "durability");
}

#[test]
fn a_put_accepted_after_its_hold_ended_is_found() {
    let mut history = two_holders();
    // Token 5's release was acknowledged at 110; a put sent at 112 is late.
    history.puts.push(put(5, "late", 112, 118, true));
    let found = found(&history);
    assert!(
        found
            .iter()
            .any(|v| matches!(v, Violation::PutByNonHolder { token: 5, .. })),
        "{found:?}"
    );
}

#[test]
fn lock_views_must_show_a_holder_of_some_instant_of_the_call() {
    let view = |holder, invoked_ms| LockRead {
        lock: "a".into(),
        invoked_ms,
        completed_ms: invoked_ms + 5,
        holder,
    };
    for (bad, why) in [
        (view(Some(5), 150), "its release had been acknowledged"),
        (view(None, 150), "could not have ended"),
        (view(Some(7), 150), "no acquire that could have granted it"),
    ] {
        let mut history = two_holders();
        history.lock_reads.push(bad.clone());
        let found = found(&history);
        assert!(
            matches!(found.as_slice(), [Violation::HolderRead { .. }]),
            "{bad:?}: {found:?}"
        );
        assert!(found[0].to_string().contains(why), "{}", found[0]);
        assert_eq!(found[0].property(), "linearizable-reads");
    }
    // A token nobody saw granted is fine if an acquire with no answer was sent.
    let mut history = two_holders();
    history.lock_reads.push(view(Some(7), 150));
    history.pending_acquires.push(Pending {
        lock: "a".into(),
        lease: 1,
        invoked_ms: 140,
    });
    // ...but token 9 is still alive then, so the view missed it.
    let found = found(&history);
    assert!(
        found.iter().all(|v| !v.to_string().contains("no acquire")),
        "{found:?}"
    );
}

#[test]
fn a_cut_off_node_that_acknowledges_a_write_is_found() {
    let probe = |ok, invoked_ms| Probe {
        node: 3,
        op: "grant".into(),
        invoked_ms,
        completed_ms: invoked_ms + 10,
        ok,
        cut_ms: 1_000,
        healed_ms: 5_000,
    };
    // Failed probes, and one that succeeded before the cut: fine.
    let mut history = History {
        probes: vec![probe(false, 2_000), probe(true, 900)],
        ..History::default()
    };
    assert_eq!(found(&history), vec![]);
    history.probes.push(probe(true, 3_000));
    let found = found(&history);
    assert!(
        matches!(
            found.as_slice(),
            [Violation::MinorityWrite {
                node: 3,
                at_ms: 3_000,
                ..
            }]
        ),
        "{found:?}"
    );
}

#[test]
fn leases_nobody_was_granted_beyond_the_unanswered_grants_are_orphans() {
    let mut history = History {
        leases: vec![lease(1)],
        pending_grants_ms: vec![50],
        lease_listings: vec![LeaseListing {
            invoked_ms: 100,
            ids: vec![1, 77],
        }],
        ..History::default()
    };
    assert_eq!(
        found(&history),
        vec![],
        "one unanswered grant explains lease 77"
    );
    history.lease_listings[0].ids.push(78);
    let found = found(&history);
    assert!(
        matches!(
            found.as_slice(),
            [Violation::OrphanLease {
                unknown: 2,
                pending: 1,
                ..
            }]
        ),
        "{found:?}"
    );
}
