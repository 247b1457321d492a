//! Property test of the lessor against a naive model: a flat list of
//! deadlines that every query scans, with the failover-margin rule applied
//! per item. Random arms, disarms, leadership changes, clock steps and
//! bounded takes in a small universe (4 leases, 2 locks, 2 tokens), so
//! equal deadlines, inherited leases and re-armed items are common. The
//! indexed lessor must hand out exactly the model's items, in its order.

use leasehold_core::lessor::{Due, Lessor, RenewalMark, RETRY_AFTER_MS};
use leasehold_core::{LeaseId, LockName, Token};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// A deadline's identity in the model; the order breaks ties as the lessor
/// does (leases first, then delays, holds and waits, each by key).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Lease(LeaseId),
    Delay(LockName, Token),
    Hold(LockName, Token),
    Wait(LockName, LeaseId),
}

#[derive(Clone, Copy, Debug)]
struct Item {
    deadline_ms: u64,
    renewals: u64,
    taken: bool,
}

#[derive(Default)]
struct Model {
    items: BTreeMap<Key, Item>,
    since_ms: Option<u64>,
    margin_ms: u64,
}

impl Model {
    fn arm(&mut self, key: Key, deadline_ms: u64, renewals: u64) {
        let item = Item {
            deadline_ms,
            renewals,
            taken: false,
        };
        self.items.insert(key, item);
    }

    fn effective_ms(&self, key: &Key, item: &Item) -> u64 {
        match (key, self.since_ms) {
            (Key::Lease(_), Some(since)) if item.deadline_ms < since + self.margin_ms => {
                item.deadline_ms + self.margin_ms
            }
            _ => item.deadline_ms,
        }
    }

    fn next_deadline_ms(&self) -> Option<u64> {
        self.items
            .iter()
            .map(|(key, item)| self.effective_ms(key, item))
            .min()
    }

    fn take_due(&mut self, now_ms: u64, max: usize) -> Vec<Due> {
        let mut due: Vec<(u64, Key)> = self
            .items
            .iter()
            .map(|(key, item)| (self.effective_ms(key, item), key.clone()))
            .filter(|(at, _)| *at <= now_ms)
            .collect();
        due.sort();
        due.truncate(max);
        due.into_iter()
            .map(|(_, key)| {
                let item = self.items.get_mut(&key).unwrap();
                item.deadline_ms = now_ms + RETRY_AFTER_MS;
                item.taken = true;
                match key {
                    Key::Lease(lease) => Due::ExpireLease {
                        lease,
                        mark: RenewalMark::of(item.renewals),
                    },
                    Key::Delay(name, token) => Due::EndLockDelay { name, token },
                    Key::Hold(name, token) => Due::EndHold { name, token },
                    Key::Wait(name, lease) => Due::CancelWait { name, lease },
                }
            })
            .collect()
    }

    fn done(&mut self, due: &Due) {
        let key = match due.clone() {
            Due::ExpireLease { .. } => return,
            Due::EndLockDelay { name, token } => Key::Delay(name, token),
            Due::EndHold { name, token } => Key::Hold(name, token),
            Due::CancelWait { name, lease } => Key::Wait(name, lease),
        };
        if self.items.get(&key).is_some_and(|item| item.taken) {
            self.items.remove(&key);
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Renew { lease: u64, ttl_ms: u64 },
    EndLease { lease: u64 },
    Delay { lock: u8, token: u64, ms: u64 },
    Hold { lock: u8, token: u64, ms: u64 },
    EndHold { lock: u8, token: u64 },
    Wait { lock: u8, lease: u64, ms: u64 },
    EndWait { lock: u8, lease: u64 },
    Lead(bool),
    Advance { ms: u64 },
    Take { max: usize },
    Done { pick: usize },
}

fn op() -> impl Strategy<Value = Op> {
    let lease = 1..=4u64;
    let lock = 0..2u8;
    let token = 1..=2u64;
    prop_oneof![
        3 => (lease.clone(), 0..2_000u64).prop_map(|(lease, ttl_ms)| Op::Renew { lease, ttl_ms }),
        1 => lease.clone().prop_map(|lease| Op::EndLease { lease }),
        1 => (lock.clone(), token.clone(), 0..1_000u64)
            .prop_map(|(lock, token, ms)| Op::Delay { lock, token, ms }),
        1 => (lock.clone(), token.clone(), 0..1_000u64)
            .prop_map(|(lock, token, ms)| Op::Hold { lock, token, ms }),
        1 => (lock.clone(), token).prop_map(|(lock, token)| Op::EndHold { lock, token }),
        2 => (lock.clone(), lease.clone(), 0..1_000u64)
            .prop_map(|(lock, lease, ms)| Op::Wait { lock, lease, ms }),
        1 => (lock, lease).prop_map(|(lock, lease)| Op::EndWait { lock, lease }),
        1 => any::<bool>().prop_map(Op::Lead),
        3 => (0..700u64).prop_map(|ms| Op::Advance { ms }),
        3 => (0..4usize).prop_map(|max| Op::Take { max }),
        2 => (0..4usize).prop_map(|pick| Op::Done { pick }),
    ]
}

fn lock_name(lock: u8) -> LockName {
    LockName::parse(&format!("lock/{lock}")).unwrap()
}

/// Applies `op` to both at `now_ms`; returns what a take handed out.
fn step(lessor: &mut Lessor, model: &mut Model, op: &Op, now_ms: &mut u64, taken: &[Due]) {
    let now = *now_ms;
    match *op {
        Op::Renew { lease, ttl_ms } => {
            // Counts start just below the mark's 24 bits, so they cross them.
            let renewals = model
                .items
                .get(&Key::Lease(LeaseId(lease)))
                .map_or((1 << RenewalMark::BITS) - 2, |i| i.renewals + 1);
            lessor.lease_renewed(LeaseId(lease), ttl_ms, renewals, now);
            model.arm(Key::Lease(LeaseId(lease)), now + ttl_ms, renewals);
        }
        Op::EndLease { lease } => {
            lessor.lease_ended(LeaseId(lease));
            model.items.remove(&Key::Lease(LeaseId(lease)));
        }
        Op::Delay { lock, token, ms } => {
            lessor.delay_started(lock_name(lock), Token(token), ms, now);
            model.arm(Key::Delay(lock_name(lock), Token(token)), now + ms, 0);
        }
        Op::Hold { lock, token, ms } => {
            lessor.hold_started(lock_name(lock), Token(token), ms, now);
            model.arm(Key::Hold(lock_name(lock), Token(token)), now + ms, 0);
        }
        Op::EndHold { lock, token } => {
            lessor.hold_ended(&lock_name(lock), Token(token));
            model
                .items
                .remove(&Key::Hold(lock_name(lock), Token(token)));
        }
        Op::Wait { lock, lease, ms } => {
            lessor.wait_started(lock_name(lock), LeaseId(lease), ms, now);
            model.arm(Key::Wait(lock_name(lock), LeaseId(lease)), now + ms, 0);
        }
        Op::EndWait { lock, lease } => {
            lessor.wait_ended(&lock_name(lock), LeaseId(lease));
            model
                .items
                .remove(&Key::Wait(lock_name(lock), LeaseId(lease)));
        }
        Op::Lead(leads) => {
            lessor.set_leader_since(leads.then_some(now));
            model.since_ms = leads.then_some(now);
        }
        Op::Advance { ms } => *now_ms += ms,
        Op::Take { .. } => unreachable!("takes are compared by the caller"),
        Op::Done { pick } => {
            if let Some(due) = taken.get(pick) {
                lessor.done(due);
                model.done(due);
            }
        }
    }
}

fn check_queries(lessor: &Lessor, model: &Model, now_ms: u64) {
    assert_eq!(lessor.next_deadline_ms(), model.next_deadline_ms());
    for (key, item) in &model.items {
        let left = item.deadline_ms.saturating_sub(now_ms);
        match key {
            Key::Lease(lease) => assert_eq!(lessor.remaining_ms(*lease, now_ms), Some(left)),
            Key::Delay(name, token) => {
                assert_eq!(lessor.delay_remaining_ms(name, *token, now_ms), Some(left))
            }
            _ => {}
        }
    }
    let leases = model.items.keys().filter(|k| matches!(k, Key::Lease(_)));
    assert_eq!(lessor.lease_count(), leases.count());
    assert_eq!(
        lessor.timer_count() + lessor.lease_count(),
        model.items.len()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_lessor_hands_out_what_a_full_scan_finds(
        margin_ms in prop_oneof![Just(0u64), Just(300), Just(500)],
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        let mut lessor = Lessor::new(margin_ms);
        let mut model = Model { margin_ms, ..Model::default() };
        let mut now_ms = 1_000u64;
        let mut taken = Vec::new();
        for op in &ops {
            if let Op::Take { max } = op {
                let got = lessor.take_due(now_ms, *max);
                let expected = model.take_due(now_ms, *max);
                prop_assert_eq!(&got, &expected, "take_due({}, {}) after {:?}", now_ms, max, ops);
                taken = got;
            } else {
                step(&mut lessor, &mut model, op, &mut now_ms, &taken);
            }
            check_queries(&lessor, &model, now_ms);
        }
    }
}
