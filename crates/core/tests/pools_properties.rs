//! Property test of semaphores and read-write locks in the state, over
//! random command sequences in a small universe: 4 lease slots; a
//! semaphore of 3 permits (`s`), a read-write lock (`rw`), and a name
//! (`x`) used as a lock, a semaphore of 2 or a read-write lock by turns, so
//! that contention, queues, timeouts, lease ends and name conflicts are
//! common. After every command the state's invariants hold (members filed,
//! usage counted, nothing idle kept), and, from the replies and effects:
//!
//! - at most a pool's permits are held, and a writer holds alone;
//! - waiters are granted in the order they queued (FIFO, no starvation);
//! - a grant carries its command's revision, above every earlier grant of
//!   the name;
//! - a lease that ends frees exactly the grants it held.

use leasehold_core::{
    AcquirePermits, Applied, Command, Effect, LeaseId, LockName, OwnerInfo, PermitAsk, Reply,
    State, Token,
};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

const SLOTS: usize = 4;
const NAMES: [&str; 3] = ["s", "rw", "x"];

#[derive(Clone, Debug)]
enum Op {
    Grant {
        slot: usize,
    },
    Revoke {
        slot: usize,
    },
    Expire {
        slot: usize,
    },
    Ask {
        slot: usize,
        name: usize,
        ask: u8,
        wait: bool,
    },
    Release {
        slot: usize,
        name: usize,
        right: bool,
    },
    Cancel {
        slot: usize,
        name: usize,
    },
    TimeOut {
        slot: usize,
        name: usize,
    },
    Lock {
        slot: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let slot = 0..SLOTS;
    let name = 0..NAMES.len();
    prop_oneof![
        2 => slot.clone().prop_map(|slot| Op::Grant { slot }),
        1 => slot.clone().prop_map(|slot| Op::Revoke { slot }),
        1 => slot.clone().prop_map(|slot| Op::Expire { slot }),
        6 => (slot.clone(), name.clone(), 0..4u8, any::<bool>())
            .prop_map(|(slot, name, ask, wait)| Op::Ask { slot, name, ask, wait }),
        4 => (slot.clone(), name.clone(), prop::bool::weighted(0.85))
            .prop_map(|(slot, name, right)| Op::Release { slot, name, right }),
        1 => (slot.clone(), name.clone()).prop_map(|(slot, name)| Op::Cancel { slot, name }),
        1 => (slot.clone(), name).prop_map(|(slot, name)| Op::TimeOut { slot, name }),
        1 => slot.prop_map(|slot| Op::Lock { slot }),
    ]
}

fn name(i: usize) -> LockName {
    LockName::parse(NAMES[i]).unwrap()
}

/// What ask number `ask` means on name `i`.
fn permit_ask(i: usize, ask: u8) -> PermitAsk {
    match (NAMES[i], ask) {
        ("s", _) => PermitAsk::Semaphore {
            permits: 3,
            count: 1 + u32::from(ask % 3),
        },
        ("rw", a) | ("x", a) if a % 2 == 0 => PermitAsk::Shared,
        ("rw", _) => PermitAsk::Exclusive,
        _ => PermitAsk::Semaphore {
            permits: 2,
            count: 1,
        },
    }
}

fn to_command(op: &Op, state: &State, slots: &[LeaseId; SLOTS]) -> Command {
    let held = |slot: usize, i: usize| {
        let pool = state.pool(&name(i))?;
        let hold = pool
            .pool
            .permits
            .holds()
            .iter()
            .find(|h| h.lease == slots[slot]);
        hold.map(|h| h.token)
    };
    match *op {
        Op::Grant { .. } => Command::GrantLease {
            ttl_ms: 5_000,
            owner: OwnerInfo::default(),
            request_id: None,
        },
        Op::Revoke { slot } => Command::RevokeLease {
            lease: slots[slot],
            request_id: None,
        },
        Op::Expire { slot } => {
            let renewals = state.lease(slots[slot]).map_or(0, |l| l.renewals());
            Command::ExpireLease {
                lease: slots[slot],
                renewals,
            }
        }
        Op::Ask {
            slot,
            name: i,
            ask,
            wait,
        } => Command::AcquirePermits(AcquirePermits {
            lease: slots[slot],
            name: name(i),
            ask: permit_ask(i, ask),
            wait_ms: if wait { 10_000 } else { 0 },
            request_id: None,
            fenced: false,
        }),
        Op::Release {
            slot,
            name: i,
            right,
        } => Command::Release {
            lease: slots[slot],
            name: name(i),
            token: held(slot, i).map_or(Token(1), |t| if right { t } else { Token(t.0 + 1) }),
            request_id: None,
        },
        Op::Cancel { slot, name: i } => Command::CancelWait {
            lease: slots[slot],
            name: name(i),
            timed_out: false,
        },
        Op::TimeOut { slot, name: i } => Command::TimeOutWaits {
            waits: vec![(slots[slot], name(i))],
        },
        Op::Lock { slot } => Command::Acquire(leasehold_core::Acquire {
            lease: slots[slot],
            name: name(2),
            wait_ms: 0,
            request_id: None,
            fenced: false,
            lock_delay_ms: 0,
            max_hold_ms: 0,
            metadata: Default::default(),
        }),
    }
}

/// What the test tracks, from replies and effects only.
#[derive(Default)]
struct Model {
    queues: BTreeMap<LockName, VecDeque<LeaseId>>,
    last_token: BTreeMap<LockName, Token>,
}

impl Model {
    fn observe(&mut self, command: &Command, applied: &Applied, bumped: bool) {
        let mut granted_now: BTreeSet<LockName> = BTreeSet::new();
        for effect in &applied.effects {
            match effect {
                Effect::LockGranted {
                    name,
                    lease,
                    token,
                    from_queue,
                    ..
                } => {
                    assert_eq!(
                        token.0, applied.revision.0,
                        "a grant carries its command's revision"
                    );
                    let last = self.last_token.insert(name.clone(), *token);
                    let same_command = granted_now.contains(name);
                    assert!(last.is_none_or(|l| l < *token || (same_command && l == *token)));
                    granted_now.insert(name.clone());
                    let queue = self.queues.entry(name.clone()).or_default();
                    if *from_queue {
                        assert_eq!(
                            queue.pop_front(),
                            Some(*lease),
                            "granted out of queue order"
                        );
                    }
                }
                Effect::WaiterRemoved { name, lease, .. } => {
                    let queue = self.queues.entry(name.clone()).or_default();
                    let before = queue.len();
                    queue.retain(|l| l != lease);
                    assert_eq!(queue.len() + 1, before, "removed a waiter not queued");
                }
                _ => {}
            }
        }
        let queued = matches!(applied.outcome, Ok(Reply::Queued { .. }));
        if let (Command::AcquirePermits(a), true, true) = (command, queued, bumped) {
            self.queues
                .entry(a.name.clone())
                .or_default()
                .push_back(a.lease);
        }
        if let (Command::Acquire(a), true, true) = (command, queued, bumped) {
            self.queues
                .entry(a.name.clone())
                .or_default()
                .push_back(a.lease);
        }
    }
}

/// The grants `lease` held before a command, by name.
fn grants_of(state: &State, lease: LeaseId) -> BTreeSet<(LockName, Token)> {
    let pools = state.pools().flat_map(|view| {
        let holds = view
            .pool
            .permits
            .holds()
            .iter()
            .filter(move |h| h.lease == lease);
        holds.map(move |h| (view.name.clone(), h.token))
    });
    pools.collect()
}

fn check_pools(state: &State) {
    for view in state.pools() {
        let permits = &view.pool.permits;
        assert!(
            permits.held() <= permits.permits(),
            "{} over its permits",
            view.name
        );
        let writer = permits.holds().iter().any(|h| h.count == permits.permits());
        if view.pool.kind == leasehold_core::PoolKind::ReadWrite && writer {
            assert_eq!(permits.holds().len(), 1, "a writer shares {}", view.name);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(384))]

    #[test]
    fn pools_keep_their_promises(ops in prop::collection::vec(op(), 1..80)) {
        let mut state = State::default();
        let mut slots = [LeaseId(0); SLOTS];
        let mut model = Model::default();
        for op in &ops {
            let command = to_command(op, &state, &slots);
            let ending = match (op, &command) {
                (Op::Revoke { slot } | Op::Expire { slot }, _) => Some(slots[*slot]),
                _ => None,
            };
            let held_before = ending.map(|lease| grants_of(&state, lease));
            let pools_before: BTreeSet<LockName> = state.pools().map(|v| v.name.clone()).collect();
            let before = state.revision();
            let applied = state.apply(command.clone(), 1);
            if let (Op::Grant { slot }, Ok(Reply::LeaseGranted { lease, .. })) = (op, &applied.outcome) {
                slots[*slot] = *lease;
            }
            model.observe(&command, &applied, applied.revision != before);
            if let (Some(lease), Some(held), Ok(Reply::LeaseEnded { .. })) = (ending, held_before, &applied.outcome) {
                let freed = applied.effects.iter().filter_map(|effect| match effect {
                    Effect::LockFreed { name, lease: by, token, .. }
                        if *by == lease && pools_before.contains(name) => Some((name.clone(), *token)),
                    _ => None,
                });
                let freed: BTreeSet<(LockName, Token)> = freed.collect();
                prop_assert_eq!(freed, held, "a lease that ends frees exactly its grants");
            }
            state.check_invariants().map_err(TestCaseError::fail)?;
            check_pools(&state);
        }
    }
}
