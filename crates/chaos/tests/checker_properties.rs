//! The checker against histories whose truth is known: histories made by a
//! model of a correct lock service pass every rule, and each kind of broken
//! promise, planted in such a history, is found.

use leasehold_chaos::check::{self, Violation};
use leasehold_chaos::history::{History, Hold, Lease, Put, Read};
use proptest::prelude::*;

/// How one hold ends in the model.
#[derive(Clone, Copy, Debug)]
enum End {
    /// Released after holding `held_ms`.
    Released { held_ms: u64 },
    /// Renewed `renewals` times, every `every_ms`, then abandoned: expired.
    Expired { renewals: u8, every_ms: u64 },
}

#[derive(Clone, Debug)]
struct Step {
    lock: usize,
    ttl_ms: u64,
    waited_ms: u64,
    latency_ms: u64,
    end: End,
}

fn step() -> impl Strategy<Value = Step> {
    let end = prop_oneof![
        (1u64..2_000).prop_map(|held_ms| End::Released { held_ms }),
        (0u8..4, 100u64..400).prop_map(|(renewals, every_ms)| End::Expired { renewals, every_ms }),
    ];
    (0usize..3, 1_000u64..5_000, 0u64..500, 1u64..50, end).prop_map(
        |(lock, ttl_ms, waited_ms, latency_ms, end)| Step {
            lock,
            ttl_ms,
            waited_ms,
            latency_ms,
            end,
        },
    )
}

/// The history a correct service gives `steps`: per lock, each grant comes
/// after the previous holder released or its lease expired, with a token
/// above every earlier one.
fn correct(steps: &[Step]) -> History {
    let mut free_at = [0u64; 3];
    let mut last_token: [Option<u64>; 3] = [None; 3];
    let mut history = History::default();
    for (i, s) in steps.iter().enumerate() {
        let (id, token) = (i as u64 + 1, i as u64 + 1);
        let invoked = (free_at[s.lock] + 1_000).saturating_sub(s.waited_ms);
        let completed = free_at[s.lock] + 1_000 + s.latency_ms;
        let mut lease = Lease {
            id,
            ttl_ms: s.ttl_ms,
            granted_invoked_ms: invoked.saturating_sub(5),
            renewals_sent_ms: Vec::new(),
            revoke_invoked_ms: None,
            last_ack_ms: invoked,
            abandoned_ms: None,
        };
        let mut hold = Hold {
            lock: format!("lock/{}", s.lock),
            token,
            lease: id,
            acquire_invoked_ms: invoked,
            acquire_completed_ms: completed,
            release_invoked_ms: None,
            release_completed_ms: None,
        };
        free_at[s.lock] = match s.end {
            End::Released { held_ms } => {
                hold.release_invoked_ms = Some(completed + held_ms);
                completed + held_ms + s.latency_ms
            }
            End::Expired { renewals, every_ms } => {
                lease.renewals_sent_ms = (1..=u64::from(renewals))
                    .map(|r| completed + r * every_ms)
                    .collect();
                let last = lease
                    .renewals_sent_ms
                    .last()
                    .copied()
                    .unwrap_or(lease.granted_invoked_ms);
                last + s.ttl_ms + s.latency_ms
            }
        };
        // The holder writes its lock's key under its token, and reads it
        // back; the previous holder's late write (if any) is refused.
        let key = format!("key/{}", s.lock);
        let value = format!("v{token}");
        history.puts.push(Put {
            key: key.clone(),
            token,
            value: value.clone(),
            invoked_ms: completed + 1,
            completed_ms: completed + 2,
            accepted: true,
        });
        history.reads.push(Read {
            key: key.clone(),
            invoked_ms: completed + 3,
            completed_ms: completed + 4,
            observed: Some((token, value)),
        });
        if let Some(stale) = last_token[s.lock] {
            history.puts.push(Put {
                key,
                token: stale,
                value: "late".into(),
                invoked_ms: completed + 5,
                completed_ms: completed + 6,
                accepted: false,
            });
        }
        last_token[s.lock] = Some(token);
        history.leases.push(lease);
        history.holds.push(hold);
    }
    history
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_correct_service_keeps_every_rule(steps in prop::collection::vec(step(), 1..40)) {
        let history = correct(&steps);
        prop_assert_eq!(check::all(&history, 1.0), Vec::<Violation>::new());
    }

    #[test]
    fn a_repeated_token_is_found(steps in prop::collection::vec(step(), 2..40), pick in any::<prop::sample::Index>()) {
        let mut history = correct(&steps);
        let i = pick.index(history.holds.len() - 1) + 1;
        // Hold i takes the token of the hold before it on the same lock, if any.
        let lock = history.holds[i].lock.clone();
        let Some(before) = history.holds[..i].iter().rposition(|h| h.lock == lock) else {
            return Ok(());
        };
        let repeated = history.holds[before].token;
        history.holds[i].token = repeated;
        let found = check::tokens(&history);
        let named = |v: &Violation| matches!(v, Violation::DuplicateToken { lock: l, token, .. } if *l == lock && *token == repeated);
        prop_assert!(found.iter().any(named), "{found:?}");
    }

    #[test]
    fn a_grant_before_the_holder_could_end_is_found(steps in prop::collection::vec(step(), 2..40), pick in any::<prop::sample::Index>()) {
        let mut history = correct(&steps);
        let i = pick.index(history.holds.len() - 1) + 1;
        let lock = history.holds[i].lock.clone();
        let Some(before) = history.holds[..i].iter().rposition(|h| h.lock == lock) else {
            return Ok(());
        };
        // The next grant comes back with the previous one, while its holder
        // certainly still holds (a hold may be released 1 ms after its grant,
        // so 1 ms later would not be early).
        let early = history.holds[before].acquire_completed_ms;
        history.holds[i].acquire_invoked_ms = early - 1;
        history.holds[i].acquire_completed_ms = early;
        let found = check::no_early_grant(&history, 1.0);
        prop_assert!(
            found.iter().any(|v| matches!(v, Violation::EarlyGrant { token, .. } if *token == history.holds[i].token)),
            "{found:?}"
        );
    }

    #[test]
    fn tokens_out_of_real_time_order_are_found(steps in prop::collection::vec(step(), 2..40)) {
        let mut history = correct(&steps);
        // Swap the tokens of the first two holds of a lock that has two.
        let Some((a, b)) = first_pair(&history) else { return Ok(()) };
        if history.holds[a].acquire_completed_ms >= history.holds[b].acquire_invoked_ms {
            return Ok(()); // concurrent: either order is allowed
        }
        let (ta, tb) = (history.holds[a].token, history.holds[b].token);
        history.holds[a].token = tb;
        history.holds[b].token = ta;
        let found = check::tokens(&history);
        let lock = history.holds[a].lock.clone();
        prop_assert!(found.contains(&Violation::TokenOrder { lock, earlier: tb, later: ta }), "{found:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn register_violations_are_found(steps in prop::collection::vec(step(), 2..30)) {
        let mut history = correct(&steps);
        // A lower token accepted after a higher one completed.
        let last = history.puts.iter().rfind(|p| p.accepted).cloned().unwrap();
        history.puts.push(Put { token: 0, value: "regressed".into(), invoked_ms: last.completed_ms + 10, completed_ms: last.completed_ms + 11, ..last.clone() });
        // A refusal with no higher token accepted before it.
        history.puts.push(Put { key: "fresh".into(), token: 9, invoked_ms: 1, completed_ms: 2, accepted: false, ..last.clone() });
        // A read of a value nobody wrote.
        history.reads.push(Read { key: last.key.clone(), invoked_ms: 0, completed_ms: 1, observed: Some((last.token, "never".into())) });
        let found = check::fenced_register(&history);
        prop_assert!(found.iter().any(|v| matches!(v, Violation::VersionRegressed { later: 0, .. })), "{found:?}");
        prop_assert!(found.contains(&Violation::FalseRefusal { key: "fresh".into(), token: 9 }), "{found:?}");
        prop_assert!(found.iter().any(|v| matches!(v, Violation::PhantomRead { value, .. } if value == "never")), "{found:?}");
    }
}

fn first_pair(history: &History) -> Option<(usize, usize)> {
    for (a, hold) in history.holds.iter().enumerate() {
        if let Some(b) = history.holds[a + 1..]
            .iter()
            .position(|h| h.lock == hold.lock)
        {
            return Some((a, a + 1 + b));
        }
    }
    None
}

#[test]
fn clock_drift_within_the_bound_is_allowed_and_beyond_it_is_not() {
    // A lease renewed last at 1_000 with ttl 10_000: a server clock 10 %
    // fast may expire it from 10_090 on.
    let history = History {
        leases: vec![Lease {
            id: 1,
            ttl_ms: 10_000,
            granted_invoked_ms: 0,
            renewals_sent_ms: vec![1_000],
            revoke_invoked_ms: None,
            last_ack_ms: 1_010,
            abandoned_ms: None,
        }],
        holds: vec![
            Hold {
                lock: "a".into(),
                token: 1,
                lease: 1,
                acquire_invoked_ms: 0,
                acquire_completed_ms: 5,
                release_invoked_ms: None,
                release_completed_ms: None,
            },
            Hold {
                lock: "a".into(),
                token: 2,
                lease: 2,
                acquire_invoked_ms: 9_000,
                acquire_completed_ms: 10_100,
                release_invoked_ms: None,
                release_completed_ms: None,
            },
        ],
        ..History::default()
    };
    assert!(check::no_early_grant(&history, 1.1).is_empty());
    let found = check::no_early_grant(&history, 1.0);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0]
            .to_string()
            .contains("could not have ended before 11000 ms"),
        "{}",
        found[0]
    );
}
