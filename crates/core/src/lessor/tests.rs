//! Unit tests of the lessor, on plain millisecond numbers.

use super::*;

fn name(text: &str) -> LockName {
    LockName::parse(text).unwrap()
}

fn expire(lease: u64, renewals: u64) -> Due {
    Due::ExpireLease {
        lease: LeaseId(lease),
        mark: RenewalMark::of(renewals),
    }
}

#[test]
fn a_lease_is_due_at_its_last_renewal_plus_ttl() {
    let mut lessor = Lessor::new(0);
    lessor.lease_renewed(LeaseId(1), 1000, 0, 0);
    lessor.lease_renewed(LeaseId(1), 1000, 1, 600);
    assert!(lessor.take_due(1500, usize::MAX).is_empty());
    assert_eq!(lessor.take_due(1600, usize::MAX), vec![expire(1, 1)]);
    assert!(
        lessor.take_due(1700, usize::MAX).is_empty(),
        "re-armed for a retry later"
    );
    assert_eq!(lessor.take_due(2100, usize::MAX), vec![expire(1, 1)]);
    lessor.lease_ended(LeaseId(1));
    assert!(lessor.next_deadline_ms().is_none());
}

#[test]
fn a_new_leader_adds_the_failover_margin_to_inherited_deadlines() {
    let mut lessor = Lessor::new(300);
    lessor.lease_renewed(LeaseId(1), 1000, 0, 0);
    lessor.set_leader_since(Some(900));
    assert_eq!(lessor.next_deadline_ms(), Some(1300));
    assert!(lessor.take_due(1200, usize::MAX).is_empty());
    assert_eq!(lessor.take_due(1300, usize::MAX).len(), 1);
}

#[test]
fn the_margin_applies_only_while_leading_and_only_near_the_takeover() {
    let mut lessor = Lessor::new(300);
    lessor.lease_renewed(LeaseId(1), 1000, 0, 0);
    lessor.lease_renewed(LeaseId(2), 1000, 0, 300);
    lessor.set_leader_since(Some(900));
    // Lease 1 (1000) falls before 900 + 300: 1300. Lease 2 (1300) does not.
    assert_eq!(
        lessor.remaining_ms(LeaseId(1), 900),
        Some(100),
        "display: raw"
    );
    assert_eq!(
        lessor.take_due(1300, usize::MAX),
        vec![expire(1, 0), expire(2, 0)]
    );
    lessor.lease_ended(LeaseId(1));
    lessor.lease_ended(LeaseId(2));
    lessor.set_leader_since(None);
    lessor.lease_renewed(LeaseId(3), 1000, 0, 1000);
    assert_eq!(lessor.take_due(2000, usize::MAX), vec![expire(3, 0)]);
}

#[test]
fn a_lease_past_the_margin_window_is_not_held_up_by_an_inherited_one() {
    let mut lessor = Lessor::new(500);
    // Raw deadlines 1000 and 1200.
    lessor.lease_renewed(LeaseId(1), 1000, 0, 0);
    lessor.lease_renewed(LeaseId(2), 1000, 0, 200);
    lessor.set_leader_since(Some(500));
    // At 500 + 500: lease 1 raw 1000 is past the window, lease 2 raw 1200 too.
    assert_eq!(lessor.next_deadline_ms(), Some(1000));
    lessor.set_leader_since(Some(700));
    // Window ends at 1200: lease 1 (1000) is inherited, due at 1500; lease 2
    // (1200) is not, due at 1200, though its raw deadline is later.
    assert_eq!(lessor.next_deadline_ms(), Some(1200));
    assert_eq!(lessor.take_due(1200, usize::MAX), vec![expire(2, 0)]);
    assert_eq!(lessor.take_due(1500, usize::MAX), vec![expire(1, 0)]);
}

#[test]
fn lock_timers_fire_in_deadline_order() {
    let mut lessor = Lessor::new(0);
    lessor.hold_started(name("a"), Token(5), 200, 0);
    lessor.delay_started(name("a"), Token(3), 100, 0);
    let due = lessor.take_due(250, usize::MAX);
    assert_eq!(
        due,
        vec![
            Due::EndLockDelay {
                name: name("a"),
                token: Token(3)
            },
            Due::EndHold {
                name: name("a"),
                token: Token(5)
            },
        ]
    );
    for item in &due {
        lessor.done(item);
    }
    assert!(lessor.next_deadline_ms().is_none());
}

#[test]
fn a_wait_is_due_at_its_deadline_and_ends_with_its_wait() {
    let mut lessor = Lessor::new(0);
    lessor.wait_started(name("w"), LeaseId(7), 300, 100);
    lessor.wait_started(name("w"), LeaseId(8), 300, 100);
    lessor.wait_ended(&name("w"), LeaseId(8));
    assert_eq!(lessor.next_deadline_ms(), Some(400));
    let due = lessor.take_due(400, usize::MAX);
    let cancel = Due::CancelWait {
        name: name("w"),
        lease: LeaseId(7),
    };
    assert_eq!(due, vec![cancel.clone()]);
    assert_eq!(
        Due::command_for_all(&[cancel], |_| None),
        Some(crate::Command::CancelWait {
            lease: LeaseId(7),
            name: name("w"),
            timed_out: true
        })
    );
    lessor.wait_ended(&name("w"), LeaseId(7));
    assert!(lessor.next_deadline_ms().is_none());
}

#[test]
fn done_leaves_a_timer_armed_again_under_the_same_key() {
    let mut lessor = Lessor::new(0);
    lessor.wait_started(name("w"), LeaseId(7), 100, 0);
    let due = lessor.take_due(100, usize::MAX);
    // The wait ended, and the same lease queued again before the leader
    // heard that its CancelWait applied.
    lessor.wait_ended(&name("w"), LeaseId(7));
    lessor.wait_started(name("w"), LeaseId(7), 1000, 150);
    lessor.done(&due[0]);
    assert_eq!(lessor.next_deadline_ms(), Some(1150));
    assert_eq!(lessor.timer_count(), 1);
}

#[test]
fn take_due_is_bounded_and_leaves_the_rest_due() {
    let mut lessor = Lessor::new(0);
    for id in 1..=5 {
        lessor.lease_renewed(LeaseId(id), 1000, 0, id);
    }
    let first = lessor.take_due(2000, 2);
    assert_eq!(first, vec![expire(1, 0), expire(2, 0)]);
    assert_eq!(lessor.next_deadline_ms(), Some(1003), "the rest stay due");
    assert_eq!(
        lessor.take_due(2000, 10),
        vec![expire(3, 0), expire(4, 0), expire(5, 0)]
    );
    assert_eq!(lessor.next_deadline_ms(), Some(2000 + RETRY_AFTER_MS));
    assert!(lessor.take_due(2000, 0).is_empty());
}

#[test]
fn ties_go_to_leases_then_to_timers_in_key_order() {
    let mut lessor = Lessor::new(0);
    lessor.wait_started(name("a"), LeaseId(1), 100, 0);
    lessor.hold_started(name("a"), Token(2), 100, 0);
    lessor.lease_renewed(LeaseId(1), 100, 4, 0);
    let due = lessor.take_due(100, usize::MAX);
    assert_eq!(due[0], expire(1, 4));
    assert!(matches!(due[1], Due::EndHold { .. }));
    assert!(matches!(due[2], Due::CancelWait { .. }));
}

#[test]
fn remaining_times_are_for_display() {
    let mut lessor = Lessor::new(0);
    lessor.lease_renewed(LeaseId(1), 1000, 0, 0);
    lessor.delay_started(name("d"), Token(9), 500, 0);
    assert_eq!(lessor.remaining_ms(LeaseId(1), 400), Some(600));
    assert_eq!(lessor.remaining_ms(LeaseId(1), 4000), Some(0));
    assert_eq!(lessor.remaining_ms(LeaseId(2), 0), None);
    assert_eq!(
        lessor.delay_remaining_ms(&name("d"), Token(9), 100),
        Some(400)
    );
    assert_eq!(lessor.delay_remaining_ms(&name("d"), Token(8), 100), None);
    lessor.hold_started(name("h"), Token(4), 10, 0);
    lessor.hold_ended(&name("h"), Token(4));
    assert_eq!((lessor.lease_count(), lessor.timer_count()), (1, 1));
    lessor.clear();
    assert_eq!((lessor.lease_count(), lessor.timer_count()), (0, 0));
}

#[test]
fn wait_timeouts_are_taken_in_a_run_up_to_max_and_up_to_another_timer() {
    let mut lessor = Lessor::new(0);
    for lease in 1..=4 {
        lessor.wait_started(name("w"), LeaseId(lease), 100 + lease, 0);
    }
    lessor.hold_started(name("h"), Token(9), 103, 0);
    let cancel = |lease| Due::CancelWait {
        name: name("w"),
        lease: LeaseId(lease),
    };
    assert_eq!(lessor.take_due_waits(100, 10), vec![], "none due yet");
    assert_eq!(
        lessor.take_due_waits(104, 1),
        vec![cancel(1)],
        "at most max"
    );
    // The hold (due at 103) comes before the wait of lease 3.
    assert_eq!(lessor.take_due_waits(104, 10), vec![cancel(2)]);
    let hold = lessor.take_due(104, 1);
    assert!(matches!(hold[..], [Due::EndHold { .. }]));
    assert_eq!(lessor.take_due_waits(104, 10), vec![cancel(3), cancel(4)]);
    let all = [cancel(1), cancel(2), cancel(3), cancel(4)];
    let no_lease = |_| None;
    assert_eq!(
        Due::command_for_all(&all, no_lease),
        Some(crate::Command::TimeOutWaits {
            waits: (1..=4).map(|l| (LeaseId(l), name("w"))).collect()
        })
    );
    let one = crate::Command::CancelWait {
        lease: LeaseId(1),
        name: name("w"),
        timed_out: true,
    };
    assert_eq!(Due::command_for_all(&all[..1], no_lease), Some(one));
}

#[test]
fn an_expiry_carries_the_states_full_count_only_if_it_ends_in_the_mark() {
    let mut lessor = Lessor::new(0);
    let count = (5 << RenewalMark::BITS) + 7;
    lessor.lease_renewed(LeaseId(1), 100, count, 0);
    let due = lessor.take_due(100, 1);
    assert_eq!(due, vec![expire(1, 7)], "the lessor keeps the low bits");
    let command = |state_count| Due::command_for_all(&due, |_| state_count);
    assert_eq!(
        command(Some(count)),
        Some(crate::Command::ExpireLease {
            lease: LeaseId(1),
            renewals: count,
        })
    );
    assert_eq!(command(Some(count + 1)), None, "a renewal not yet heard of");
    assert_eq!(command(None), None, "the lease is gone");
}

#[test]
fn a_deadline_past_the_latest_kept_is_kept_as_the_latest() {
    let mut lessor = Lessor::new(0);
    lessor.lease_renewed(LeaseId(1), u64::MAX, 0, 5);
    assert_eq!(lessor.next_deadline_ms(), Some(DEADLINE_MS_MAX));
    assert_eq!(
        lessor.remaining_ms(LeaseId(1), 5),
        Some(DEADLINE_MS_MAX - 5)
    );
}
